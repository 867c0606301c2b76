# shellcheck shell=bash
# The parts of tests/cluster/run-node.sh that run real containers, sourced by
# it while cubelet "a" runs as the node with a private containerd ($SOCK,
# cgroupsPerQOS: false, host-network pods). Moved here from the VM's
# 97-cluster: nothing of them needs cubelet's cgroup tree.

# pull_secrets: image pull secrets. Debian's
# docker-registry on this run's own loopback (127.0.0.1:5000, in the run's
# network namespace) wants a password (htpasswd, bcrypt); busybox is pushed
# to it with ctr and its name removed from containerd. A pod whose
# imagePullSecrets hold the password pulls it and runs; one without waits in
# ErrImagePull/ImagePullBackOff with the registry's 401 in its message, as
# kubelet's does.
pull_secrets() {
	local R=$T/registry reg_pid pushed=""
	if ! command -v docker-registry >/dev/null || ! command -v htpasswd >/dev/null; then
		nok "image pull secrets: docker-registry and htpasswd (apache2-utils; tests/install-deps.sh)"
		return
	fi
	mkdir -p "$R/data"
	htpasswd -Bbn puller s3cr3t >"$R/htpasswd"
	printf 'version: 0.1\nstorage: {filesystem: {rootdirectory: %s/data}}\nhttp: {addr: "127.0.0.1:5000"}\nauth: {htpasswd: {realm: cubelet, path: %s/htpasswd}}\n' \
		"$R" "$R" >"$R/config.yml"
	docker-registry serve "$R/config.yml" >"$R/log" 2>&1 &
	reg_pid=$!
	PIDS="$PIDS $reg_pid"
	reg_up() { [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:5000/v2/)" = 401 ]; }
	wait_until 30 reg_up
	ctr -a "$SOCK" -n k8s.io images tag localhost/cubelet/busybox:1 localhost:5000/private/busybox:1 >/dev/null 2>&1
	ctr -a "$SOCK" -n k8s.io images push --plain-http -u puller:s3cr3t localhost:5000/private/busybox:1 \
		>"$R/push.log" 2>&1 && pushed=1
	ctr -a "$SOCK" -n k8s.io images rm localhost:5000/private/busybox:1 >/dev/null 2>&1
	check "a registry on 127.0.0.1:5000 that answers 401 without a password; busybox pushed to it, its name removed from containerd" \
		test -n "$pushed"
	[ -n "$pushed" ] || { echo "# $(tail -n 3 "$R/push.log")"; }
	kc apply -f - >/dev/null <<-EOF
		apiVersion: v1
		kind: Secret
		metadata: {name: regcred, namespace: default}
		type: kubernetes.io/dockerconfigjson
		stringData: {.dockerconfigjson: '{"auths": {"localhost:5000": {"username": "puller", "password": "s3cr3t"}}}'}
		---
		apiVersion: v1
		kind: Pod
		metadata: {name: private, namespace: default}
		spec:
		  nodeName: $NODE
		  hostNetwork: true
		  automountServiceAccountToken: false
		  terminationGracePeriodSeconds: 1
		  imagePullSecrets: [{name: regcred}]
		  containers: [{name: app, image: "localhost:5000/private/busybox:1", command: [sleep, "3600"]}]
		---
		apiVersion: v1
		kind: Pod
		metadata: {name: nocreds, namespace: default}
		spec:
		  nodeName: $NODE
		  hostNetwork: true
		  automountServiceAccountToken: false
		  terminationGracePeriodSeconds: 1
		  containers: [{name: app, image: "localhost:5000/private/busybox:1", command: [sleep, "3600"]}]
	EOF
	private_running() { [ "$(kc get pod private -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; }
	check "imagePullSecrets: the pod pulls from the registry with the secret's password and runs" \
		wait_until 120 private_running
	pull_failed() {
		kc get pod nocreds -o json 2>/dev/null | jq -r '.status.containerStatuses[0].state.waiting | "\(.reason) \(.message)"' |
			grep -qE '^(ErrImagePull|ImagePullBackOff) .*401 Unauthorized'
	}
	check "without: ErrImagePull/ImagePullBackOff, the registry's 401 in the message" wait_until 60 pull_failed
	echo "# nocreds: $(kc get pod nocreds -o json 2>/dev/null | jq -r '.status.containerStatuses[0].state.waiting | "\(.reason): \(.message)"')"
	kc delete pod private nocreds --wait=false >/dev/null 2>&1
	kc delete secret regcred >/dev/null 2>&1
	gone() { [ -z "$(kc get pods private nocreds -o name --ignore-not-found 2>/dev/null)" ]; }
	check "...both pods stopped and gone" wait_until 60 gone
	kill "$reg_pid" 2>/dev/null
	wait "$reg_pid" 2>/dev/null
}

# static_beside_api: a node of a cluster runs its static manifests too (their
# mirror pods in the API): 3 pods through the API server, then the same 3 as
# static manifests, each set timed from its creation to Running (make
# bench-cluster times 30 pods both ways)
static_beside_api() {
	local i t0 api_s static_s
	t0=$(date +%s%N)
	for i in 1 2 3; do
		printf '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "api-%s", "namespace": "default"},
		 "spec": {"nodeName": "%s", "hostNetwork": true, "automountServiceAccountToken": false, "terminationGracePeriodSeconds": 1,
		  "containers": [{"name": "app", "image": "localhost/cubelet/busybox:1", "command": ["sleep", "3600"]}]}}' \
			"$i" "$NODE" | kc create -f - >/dev/null
	done
	api_running() { [ "$(status_json a | jq '[.pods[] | select((.name | startswith("api-")) and .phase == "Running")] | length')" = 3 ]; }
	check "3 pods through the API server Running" wait_until 60 api_running
	api_s=$((($(date +%s%N) - t0) / 1000000))
	t0=$(date +%s%N)
	for i in 1 2 3; do
		printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: static-%s}\nspec:\n  hostNetwork: true\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: localhost/cubelet/busybox:1, command: [sleep, "3600"]}\n' \
			"$i" >"$T/a/manifests/static-$i.yaml"
	done
	static_running() { [ "$(status_json a | jq '[.pods[] | select((.name | startswith("static-")) and .phase == "Running")] | length')" = 3 ]; }
	check "the same 3 pods as static manifests Running beside them" wait_until 60 static_running
	static_s=$((($(date +%s%N) - t0) / 1000000))
	mirrors() { [ "$(kc get pods -n default -o name 2>/dev/null | grep -c "^pod/static-[123]-$NODE\$")" = 3 ]; }
	check "...their mirror pods in the API server (static-N-$NODE)" wait_until 30 mirrors
	echo "# create → Running: 3 pods through the API server ${api_s} ms, as static manifests ${static_s} ms (ratio $(awk -v a="$api_s" -v s="$static_s" 'BEGIN { printf "%.2f", a / s }'))"
	rm -f "$T"/a/manifests/static-*.yaml
	kc delete pod api-1 api-2 api-3 --wait=false >/dev/null 2>&1
	none_left() { [ "$(status_json a | jq '[.pods[] | select(.name | test("^(api|static)-"))] | length')" = 0 ]; }
	check "...all six stopped and gone" wait_until 60 none_left
}
