# shellcheck shell=bash
# The parts of tests/cluster/run-node.sh that run real containers, sourced by
# it while cubelet "a" runs as the node with a private containerd ($SOCK,
# cgroupsPerQOS: false, host-network pods). Moved here from the VM's
# 97-cluster: nothing of them needs cubelet's cgroup tree.

# pull_secrets: image pull secrets. Debian's
# docker-registry on this run's own loopback (127.0.0.1:5000, in the run's
# network namespace) wants a password (htpasswd, bcrypt); busybox is pushed
# to it with ctr and its name removed from containerd. A pod whose
# imagePullSecrets hold the password pulls it and runs; one without
# (imagePullPolicy Always: with IfNotPresent it ran on the image the other had
# pulled whenever that pull came first, as kubelet's would) waits in
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
		  containers: [{name: app, image: "localhost:5000/private/busybox:1", imagePullPolicy: Always, command: [sleep, "3600"]}]
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

# streams: through the kubelet server (the API server → cubelet's 10250, TLS
# and a SubjectAccessReview → containerd's streaming server or the pod's log
# files): kubectl logs (--previous, --tail, --timestamps, -f), attach, exec
# (stdout, stderr, the exit code, stdin, a terminal), port-forward, the
# kubelet server's 401/403/200 on /containerLogs and a WebSocket client of
# /exec; and client-go's in-cluster configuration in a pod (kubectl with no
# kubeconfig: the master Service's variables, the ServiceAccount's token and
# CA, its address as kube-proxy would give it: here the run's own loopback
# and packet filter, to the API server on 127.0.0.1:6443). chatty's first
# run exits 3; its second serves HTTP on 8080 and ticks. 97-cluster's
# section k in the VM until 2026-12-05.
streams() {
	local K=$T/streams master rc tty_out ws pf lf att
	mkdir -p "$K"
	master=$(kc get svc kubernetes -o jsonpath='{.spec.clusterIP}')
	ip addr add "$master/32" dev lo
	sysctl -qw net.ipv4.conf.all.route_localnet=1
	iptables -t nat -I OUTPUT -d "$master/32" -p tcp --dport 443 -j DNAT --to-destination 127.0.0.1:6443
	kc create role pod-lister --verb=list --resource=pods -n default >/dev/null
	kc create rolebinding incluster-list --role=pod-lister --serviceaccount=default:default -n default >/dev/null
	kc create -f - >/dev/null <<-EOF
		apiVersion: v1
		kind: Pod
		metadata: {name: incluster, namespace: default}
		spec:
		  nodeName: $NODE
		  hostNetwork: true
		  restartPolicy: OnFailure
		  terminationGracePeriodSeconds: 1
		  volumes: [{name: kube, hostPath: {path: $(dirname "$KUBE")}}]
		  containers:
		  - name: app
		    image: localhost/cubelet/busybox:1
		    volumeMounts: [{name: kube, mountPath: /kube, readOnly: true}]
		    command: [/kube/kube, kubectl, get, pods, -n, default, -o, name]
		---
		apiVersion: v1
		kind: Pod
		metadata: {name: chatty, namespace: default}
		spec:
		  nodeName: $NODE
		  hostNetwork: true
		  automountServiceAccountToken: false
		  terminationGracePeriodSeconds: 1
		  volumes: [{name: st, emptyDir: {}}]
		  containers:
		  - name: app
		    image: localhost/cubelet/busybox:1
		    volumeMounts: [{name: st, mountPath: /st}]
		    command: [sh, -c, 'n=\$((\$(cat /st/n 2>/dev/null || echo 0) + 1)); echo \$n > /st/n; for i in 1 2 3; do echo "run \$n line \$i"; done; sleep 1; echo "run \$n to stderr" >&2; [ \$n = 1 ] && exit 3; mkdir -p /st/www; echo "served by chatty" > /st/www/index.html; httpd -p 8080 -h /st/www; i=0; while true; do i=\$((i + 1)); echo "tick \$i"; sleep 1; done']
	EOF
	chatty_again() { [ "$(kc get pod chatty -o json 2>/dev/null | jq -r '"\(.status.phase) \(.status.containerStatuses[0].restartCount) \(.status.containerStatuses[0].ready)"')" = "Running 1 true" ]; }
	check "streams: chatty's first run exited, the second runs" wait_until 90 chatty_again
	# (its stderr line comes a second after the stdout lines, and the
	# runtime reads the two pipes apart: the stderr line and the first tick
	# may land in either order)
	run2_logged() { [ "$(kc logs chatty 2>/dev/null | grep -vc '^tick ')" -ge 4 ]; }
	wait_until 20 run2_logged
	kc logs chatty >"$K/out" 2>&1
	is "$(grep -v '^tick ' "$K/out" | head -n 4 | sort | tr '\n' '|')" "run 2 line 1|run 2 line 2|run 2 line 3|run 2 to stderr|" \
		"kubectl logs: the running container's log, stdout and stderr"
	is "$(kc logs chatty --previous 2>&1 | tr '\n' '|')" "run 1 line 1|run 1 line 2|run 1 line 3|run 1 to stderr|" \
		"kubectl logs --previous: the run that exited"
	is "$(kc logs chatty --previous --tail 2 --timestamps 2>&1 | awk '{ print ($1 ~ /^20[0-9][0-9]-.*Z$/), $2, $3, $4, $5 }' | tr '\n' '|')" \
		"1 run 1 line 3|1 run 1 to stderr|" "kubectl logs --previous --tail 2 --timestamps"
	timeout 30 "$KUBE" kubectl --kubeconfig "$T/cp/pki/admin.kubeconfig" logs -f chatty --tail 1 >"$K/f" 2>&1 &
	lf=$!
	ticks() { [ "$(grep -c '^tick ' "$K/$1")" -ge "$2" ]; }
	check "kubectl logs -f: new lines arrive" wait_until 25 ticks f 3
	kill "$lf" 2>/dev/null
	wait "$lf" 2>/dev/null
	timeout 30 "$KUBE" kubectl --kubeconfig "$T/cp/pki/admin.kubeconfig" attach chatty -c app >"$K/att" 2>&1 &
	att=$!
	check "kubectl attach: the running container's output, live" wait_until 25 ticks att 2
	kill "$att" 2>/dev/null
	wait "$att" 2>/dev/null
	kc exec chatty -- sh -c 'echo to-out; echo to-err >&2; exit 7' >"$K/x" 2>"$K/x.err"
	rc=$?
	is "$rc $(cat "$K/x") $(grep -c to-err "$K/x.err")" "7 to-out 1" "kubectl exec: the command's stdout, stderr and exit code (7)"
	is "$(echo hello | kc exec -i chatty -- tr a-z A-Z 2>&1)" HELLO "kubectl exec -i: stdin reaches the command"
	tty_out=$(script -qec "$KUBE kubectl --kubeconfig $T/cp/pki/admin.kubeconfig exec -it chatty -- tty" /dev/null 2>&1 | tr -d '\r')
	contains "$tty_out" "/dev/pts/" "kubectl exec -it: a terminal in the container ($tty_out)"
	"$KUBE" kubectl --kubeconfig "$T/cp/pki/admin.kubeconfig" port-forward pod/chatty 18080:8080 >"$K/pf" 2>&1 &
	pf=$!
	served() { [ "$(curl -s --max-time 5 http://127.0.0.1:18080/index.html)" = "served by chatty" ]; }
	check "kubectl port-forward: a request through it is answered by the pod's server" wait_until 30 served
	kill "$pf" 2>/dev/null
	wait "$pf" 2>/dev/null
	logs10250() { curl -s --max-time 20 --cacert "$T/cp/pki/ca.crt" -o /dev/null -w '%{http_code}' "$@" \
		"https://127.0.0.1:10250/containerLogs/default/chatty/app"; }
	is "$(logs10250) $(logs10250 "${as_nobody[@]}") $(logs10250 "${as_admin[@]}")" "401 403 200" \
		"the kubelet server's /containerLogs: no credentials 401, a certificate the API server allows nothing 403, the admin's 200"
	# a client that speaks WebSocket to the kubelet server directly (the API
	# server speaks SPDY to it): the channel protocol passes through
	ws=$(/usr/bin/python3 "$ROOT/tests/cluster/ws-exec.py" \
		"https://127.0.0.1:10250/exec/default/chatty/app?command=sh&command=-c&command=echo%20ws-out%3Becho%20ws-err%20%3E%262&output=1&error=1" \
		"$T/cp/pki/ca.crt" "$T/cp/pki/admin.crt" "$T/cp/pki/admin.key" 2>&1 | tr '\n' '|')
	contains "$ws" "status 101 protocol v4.channel.k8s.io|channel 1 ws-out|channel 2 ws-err|channel 3 " \
		"a WebSocket client of /exec (channel protocol v4, containerd's): 101, stdout and stderr on their channels ($ws)"
	contains "$ws" '"status":"Success"' "...and the status channel's Success"
	incluster_done() { [ "$(kc get pod incluster -o jsonpath='{.status.phase}' 2>/dev/null)" = Succeeded ]; }
	wait_until 90 incluster_done
	is "$(kc get pod incluster -o jsonpath='{.status.phase}' 2>&1)" Succeeded \
		"client-go's in-cluster configuration in a pod: kubectl with no kubeconfig ran to its end"
	contains "$(kc logs incluster 2>&1)" "pod/chatty" \
		"...and listed the namespace's pods through the master Service's address and its ServiceAccount"
	kc delete pod incluster chatty --grace-period=1 --wait=false >/dev/null 2>&1
	kc delete rolebinding incluster-list -n default >/dev/null 2>&1
	kc delete role pod-lister -n default >/dev/null 2>&1
	iptables -t nat -D OUTPUT -d "$master/32" -p tcp --dport 443 -j DNAT --to-destination 127.0.0.1:6443
	ip addr del "$master/32" dev lo
	streams_gone() { [ -z "$(kc get pods incluster chatty -o name --ignore-not-found 2>/dev/null)" ]; }
	check "...chatty and incluster stopped and gone" wait_until 60 streams_gone
}
