#!/bin/bash
# vm-guest: main
# vm-timeout: 3000
# vm-mem: 2048M
# cubelet as a node of the real control plane, all on the guest's loopback:
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler
# (tests/cluster/control-plane.sh, build/cluster/kube) and cubelet with
# --kubeconfig, cubelet-gpu-plugin on the fake NVML beside it. The node
# registers and turns Ready with nvidia.com/gpu 2 (a); a Deployment's 3
# replicas are placed by the real scheduler and Running with pod IPs and the
# ServiceAccount admission's token volume, a ConfigMap and a Secret mounted
# and in the env (an edited ConfigMap reaches the file, not the env; env
# from a Secret not yet created: CreateContainerConfigError until it is),
# timed (b); `kubectl delete pod`
# stops one gracefully (SIGTERM seen, the object gone through cubelet's
# final DELETE) and the replacement
# runs, a shorter --grace-period wins (c); two GPU pods get their own GPU
# through the scheduler, the third is Unschedulable; cubelet stopped: the
# pods run on; cubelet back while the API server is frozen: nothing stopped;
# then Ready, no container restarted, a pod deleted meanwhile cleaned up (e);
# a pod resized in place through the resize subresource (b);
# kubectl top of the node and the pods, through the kubelet server (k); a
# bound pod that does not fit is Failed/OutOfmemory with kubelet's message (d); memory pressure
# evicts the lowest-ranked pod: Failed/Evicted in the API (f); LimitedSwap
# on a zram swap: a Burstable API pod swaps at most its share, a Guaranteed
# one is OOM-killed (h); a start with the API server unreachable runs the
# last list's pods (offlinePods: start), which stay once it answers (i); the same
# under the systemd cgroup driver: pods in slices, graceful deletion (g).
# (The Node's fields, the Lease, NodeRestriction, mirror pods, token volumes,
# kubectl logs, attach, exec and port-forward, the in-cluster configuration,
# image pull secrets, static pods beside API pods and the API server's
# faults: tests/cluster/run-node.sh and run-hostile.sh, on the host, in make
# test.)
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

kube_or_skip "cubelet as a cluster node"
D=/srv/cubelet-cluster-vm
kc() { "$KUBE" kubectl --kubeconfig "$D/pki/admin.kubeconfig" "$@"; }
# reads: a request of the admin's to the API server through kubectl proxy
# on 127.0.0.1:8001, with curl (kubectl, the whole control plane in one Go
# binary, takes ~3 s to start under emulation; what it would print is the
# same object). The proxy holds its TLS connection: a poll (curl and jq) is
# a plain HTTP request, 2.1 s of a busy guest where one with its own
# handshake took 2.9 s (jq alone 1.2 s, kubectl get 6.3 s).
# kubectl for what it does: apply, create, delete with its grace period.
api() { # api PATH [CURL OPTIONS]
	local path=$1
	shift
	curl -s --max-time 30 "$@" "http://127.0.0.1:8001$path"
}
pod() { api "/api/v1/namespaces/default/pods/$1"; }
create_pod() { # create_pod <YAML: one pod POSTed in default (a kubectl start saved)
	local code
	code=$(api /api/v1/namespaces/default/pods -X POST -H 'Content-Type: application/yaml' --data-binary @- \
		-o "$D/create.out" -w '%{http_code}')
	[ "$code" = 201 ] || t_diag "POST pods: $code $(head -c 300 "$D/create.out")"
}
pods() { api "/api/v1/namespaces/default/pods${1:+?labelSelector=$1}"; }
absent() { [ "$(api "/api/v1/namespaces/default/pods/$1" -o /dev/null -w '%{http_code}')" = 404 ]; }
events() { api "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D$1"; }
jqn() { api "/api/v1/nodes/$NODE_LC" 2>/dev/null | jq -r "$1"; }
since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }

t0=$(date +%s.%N)
# the lean control plane (no APF, the controllers this uses, no HTTPS of
# the controller manager and the scheduler), polls paced by their cost
WAIT_PACE=1
# (metrics-server only for kubectl top, in k: its scrapes every 15 s, each
# with a SubjectAccessReview, and the aggregated API's OpenAPI cost the
# guest's API server)
out=$(LEAN=1 TIMEOUT=600 "$VM_REPO/tests/cluster/control-plane.sh" start -b "$KUBE" -d "$D" -n "$NODE_LC" 2>&1)
t_ok "the control plane starts in the guest ($(since "$t0") s)" test $? = 0
t_diag "$out"
kc proxy --address=127.0.0.1 --port=8001 >"$D/proxy.log" 2>&1 &
proxy_pid=$!
proxy_up() { [ "$(api /readyz)" = ok ]; }
wait_until 60 proxy_up || t_diag "kubectl proxy: $(tail -n 3 "$D/proxy.log")"

cubelet_install
mkdir -p /etc/systemd/system/cubelet.service.d
cat >/etc/systemd/system/cubelet.service.d/cluster.conf <<EOF
[Service]
ExecStart=
ExecStart=/usr/local/bin/cubelet run --config /etc/cubelet/config.yaml --node-name $NODE_LC --kubeconfig $D/pki/node.kubeconfig --node-ip 127.0.0.1
EOF
# the kubelet server (10250): the node's serving certificate from the
# cluster's CA (the API server verifies it), client certificates from it
cat >>/etc/cubelet/config.yaml <<EOF
tlsCertFile: $D/pki/kubelet.crt
tlsPrivateKeyFile: $D/pki/kubelet.key
authentication: {x509: {clientCAFile: $D/pki/ca.crt}}
EOF
# cubelet-gpu-plugin on the fake NVML: two GPUs (as 50-devices)
install -D -m 0755 "$VM_REPO/build/cubelet-gpu-plugin" /usr/local/bin/cubelet-gpu-plugin
install -D -m 0755 "$VM_REPO/build/tests/fakes/libnvidia-ml.so.1" /usr/local/lib/fake-nvml/libnvidia-ml.so.1
install -D -m 0644 "$VM_REPO/packaging/systemd/cubelet-gpu-plugin.service" /etc/systemd/system/cubelet-gpu-plugin.service
mkdir -p /etc/systemd/system/cubelet-gpu-plugin.service.d
printf '[Service]\nEnvironment=FAKE_NVML_CONFIG=/etc/fake-nvml.conf\nExecStart=\nExecStart=/usr/local/bin/cubelet-gpu-plugin --nvml-library /usr/local/lib/fake-nvml/libnvidia-ml.so.1\n' \
	>/etc/systemd/system/cubelet-gpu-plugin.service.d/fake.conf
for i in 0 1; do rm -f /dev/nvidia$i; mknod -m 0666 /dev/nvidia$i c 195 $i; done
rm -f /dev/nvidiactl /dev/nvidia-uvm
mknod -m 0666 /dev/nvidiactl c 195 255
mknod -m 0666 /dev/nvidia-uvm c 235 0
printf 'gpu GPU-0a1b2c3d-0000-4000-8000-000000000000 0 00000000:3B:00.0 Fake GPU\ngpu GPU-0a1b2c3d-1111-4111-8111-111111111111 1 00000000:86:00.0 Fake GPU\n' >/etc/fake-nvml.conf
systemctl daemon-reload
systemctl start cubelet
for _ in $(seq 60); do status_json >/dev/null && break; sleep 0.5; done
systemctl start cubelet-gpu-plugin

# ---- a. the node registers and turns Ready -----------------------------------------------
ready() { [ "$(jqn '.status.conditions[] | select(.type == "Ready") | .status')" = True ]; }
t1=$(date +%s.%N)
wait_until 180 ready
t_ok "the node registers and is Ready ($(since "$t1") s after cubelet's start)" waited
t_is "$(jqn '.status.nodeInfo.containerRuntimeVersion' | cut -d/ -f1-2)" "containerd:/" \
	"nodeInfo: containerRuntimeVersion containerd://..."
untainted() { [ "$(jqn '[.spec.taints[]? | select(.key == "node.kubernetes.io/not-ready")] | length')" = 0 ]; }
t_ok "the node lifecycle controller removes the not-ready taint" wait_until 120 untainted

gpus() { jqn '.status.capacity["nvidia.com/gpu"] + "/" + .status.allocatable["nvidia.com/gpu"]'; }
gpus2() { [ "$(gpus)" = 2/2 ]; }
t_ok "kubectl get node: nvidia.com/gpu 2 in capacity and allocatable (cubelet-gpu-plugin, fake NVML)" wait_until 60 gpus2

# ---- b. a Deployment, placed by the scheduler ------------------------------------------------
# its pods mount a ConfigMap and a Secret and take env from both (once, at
# the container's start); every 5 s they read the mounted file (a shell
# builtin) and, when it changed, write when and what the env and the file
# say. (Their loop of cat, mv and sleep each second showed ~110m a pod in
# `kubectl top` for the whole scenario. With it gone, reads through kubectl
# proxy, metrics-server stopped after k and the lean control plane's etcd
# and identity Lease, two guests side by side took 1,199 s from the control
# plane's start to check 72 instead of 1,695 s.)
cat >"$D/web.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: default}
data: {mode: fast, host: db}
---
apiVersion: v1
kind: Secret
metadata: {name: web-creds, namespace: default}
stringData: {password: s3cr3t}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 20
      volumes:
      - {name: out, hostPath: {path: /srv/cubelet-cluster-vm/out, type: DirectoryOrCreate}}
      - {name: config, configMap: {name: web-config}}
      - {name: creds, secret: {secretName: web-creds, defaultMode: 0400}}
      containers:
      - name: app
        image: localhost/cubelet/busybox:1
        env:
        - {name: MODE, valueFrom: {configMapKeyRef: {name: web-config, key: mode}}}
        - {name: PW, valueFrom: {secretKeyRef: {name: web-creds, key: password}}}
        envFrom: [{prefix: CFG_, configMapRef: {name: web-config}}]
        command: [sh, -c, 'S=/var/run/secrets/kubernetes.io/serviceaccount; H=\$(hostname); echo "\$(cat \$S/namespace) \$(wc -c < \$S/token) \$(head -n 1 \$S/ca.crt)" > /out/\$H.sa; echo "\$MODE \$PW \$CFG_host \$(cat /etc/creds/password) \$(stat -c %a /etc/creds/..data/password)" > /out/\$H.env; trap "echo TERM > /out/\$H; exit 0" TERM; while true; do read -r m < /etc/web/mode; if [ "\$m" != "\$l" ]; then date +%s > /out/\$H.at; l=\$m; echo "\$MODE \$m" > /out/\$H.t; mv /out/\$H.t /out/\$H.cm; fi; sleep 5 & wait \$!; done']
        volumeMounts: [{name: out, mountPath: /out}, {name: config, mountPath: /etc/web}, {name: creds, mountPath: /etc/creds}]
---
apiVersion: v1
kind: Pod
metadata: {name: rs, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: {requests: {cpu: 100m, memory: 16Mi}, limits: {cpu: 200m, memory: 64Mi}}
EOF
running() { [ "$(pods app%3Dweb | jq '[.items[] | select(.status.phase == "Running" and .status.podIP != null and .metadata.deletionTimestamp == null)] | length')" = "$1" ]; }
t2=$(date +%s.%N)
kc apply -f "$D/web.yaml" >/dev/null
wait_until 600 running 3
api_s=$(since "$t2")
t_ok "3 replicas scheduled onto the node and Running with pod IPs ($api_s s)" waited
t_is "$(pods app%3Dweb | jq -r '[.items[].spec.nodeName] | unique | join(",")')" "$NODE_LC" \
	"the scheduler placed them on this node"
t_is "$(pods app%3Dweb | jq -r '[.items[].status.containerStatuses[0].containerID | split("://")[0]] | unique | join(",")')" \
	containerd "containerStatuses carry containerd:// IDs"
first=$(pods app%3Dweb | jq -r '.items[0].metadata.name')
sa_line=$(cat "/srv/cubelet-cluster-vm/out/$first.sa" 2>/dev/null)
t_is "$(echo "$sa_line" | awk '{ print $1, ($2 > 100), $3 }')" "default 1 -----BEGIN" \
	"the ServiceAccount admission's kube-api-access volume in the container: namespace, a token, ca.crt ($sa_line)" 
t_is "$(cat "/srv/cubelet-cluster-vm/out/$first.env" 2>/dev/null)" "fast s3cr3t db s3cr3t 400" \
	"env from the ConfigMap and the Secret (configMapKeyRef, secretKeyRef, envFrom with a prefix); the Secret's file, mode 0400"
reasons() { events "$first" | jq -r '[.items[] | select(.source.component == "kubelet") | .reason] | sort | unique | join(",")'; }
started_ev() { case $(reasons) in *Created*Started*) return 0 ;; *) return 1 ;; esac; }
wait_until 30 started_ev
t_ok "the pod's Events from kubelet (cubelet) in the API: $(reasons)" waited
# the ConfigMap edited: the mounted file follows within 90 s, the env does not
# (checked below, after the deletions; a pod that is not the next victim)

# in-place resize through the API server's resize subresource (issue 23
# part 2; started with the Deployment): the running container's cgroup
# changes, its container and restart count stay; the status says so
rs_running() { [ "$(pod rs | jq -r '.status.containerStatuses[0].state.running != null')" = true ]; }
wait_until 300 rs_running
t_ok "pod rs (Burstable, cpu 100m/200m) Running" waited
rs=$(pod rs)
rs_cid=$(echo "$rs" | jq -r '.status.containerStatuses[0].containerID')
rs_cg=/sys/fs/cgroup/$(cg_ctr "kubepods/burstable/pod$(echo "$rs" | jq -r .metadata.uid)" "${rs_cid#containerd://}")
t_is "$(echo "$rs" | jq -c '.status.containerStatuses[0].resources.limits')" '{"cpu":"200m","memory":"64Mi"}' \
	"its container status carries resources (what lets the API server accept a resize)"
t_is "$(api /api/v1/namespaces/default/pods/rs/resize -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' \
	-d '{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"400m"}}}]}}' \
	-o /dev/null -w '%{http_code}')" 200 "PATCH pods/rs/resize: cpu 150m/400m accepted"
resized() { [ "$(pod rs | jq -c '.status.containerStatuses[0] | [.allocatedResources.cpu, .resources.limits.cpu, .restartCount]')" = '["150m","400m",0]' ]; }
wait_until 120 resized
t_ok "the status: allocatedResources cpu 150m, resources limits cpu 400m, no restart" waited
t_is "$(cat "$rs_cg/cpu.max" 2>/dev/null)" "40000 100000" "the running container's cpu.max is 400m"
t_is "$(pod rs | jq -r '.status.containerStatuses[0].containerID')" "$rs_cid" "the same container"
rs_done() { events rs | jq -e '[.items[] | select(.reason == "ResizeCompleted")] | length > 0' >/dev/null; }
wait_until 60 rs_done
t_ok "a ResizeCompleted event" waited
kc delete pod rs --wait=false >/dev/null 2>&1
watcher=$(pods app%3Dweb | jq -r '.items[1].metadata.name')
api /api/v1/namespaces/default/configmaps/web-config -X PATCH -H 'Content-Type: application/merge-patch+json' \
	-d '{"data": {"mode": "slow"}}' >/dev/null
t_cm=$(date +%s.%N)
# ---- c. graceful deletion ----------------------------------------------------------------
victim=$(pods app%3Dweb | jq -r '.items[0].metadata.name')
t4=$(date +%s.%N)
kc delete pod "$victim" --wait=false >/dev/null
gone() { absent "$victim"; }
wait_until 120 gone
t_ok "kubectl delete pod: the pod object goes once cubelet stopped it ($(since "$t4") s)" waited
t_is "$(cat "/srv/cubelet-cluster-vm/out/$victim" 2>/dev/null)" TERM "the container saw SIGTERM"
t_ok "the ReplicaSet's replacement runs" wait_until 300 running 3
t_is "$(journalctl -u cubelet -o cat | grep -c "pod default/$victim .*no longer wanted")" 1 \
	"the journal has the deleted pod's stop once"

# kubectl delete --grace-period=2 of a pod whose own grace is 60 s and that
# ignores SIGTERM: killed after 2 s (kubelet takes the smaller); GPUs through
# the scheduler: two pods get one each, the third waits (all started at once)
{
	cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: stubborn, namespace: default}
spec:
  nodeName: $NODE_LC
  terminationGracePeriodSeconds: 60
  containers:
  - {name: app, image: localhost/cubelet/busybox:1, command: [sh, -c, 'trap "" TERM; while true; do sleep 1; done']}
EOF
	# env from a Secret that does not exist yet
	cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: needsecret, namespace: default}
spec:
  nodeName: $NODE_LC
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: late-secret, key: token}}}]
EOF
	for g in 1 2 3; do
		cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: gpu-$g, namespace: default}
spec:
  containers:
  - {name: app, image: localhost/cubelet/busybox:1, command: [sleep, "3600"], resources: {limits: {nvidia.com/gpu: 1}}}
EOF
	done
} | kc apply -f - >/dev/null
stubborn_running() { [ "$(pod stubborn | jq -r .status.phase)" = Running ]; }
wait_until 120 stubborn_running
t5=$(date +%s.%N)
kc delete pod stubborn --grace-period=2 --wait=false >/dev/null
stubborn_gone() { absent stubborn; }
# (the grace cubelet used is read from its journal: on a 2.45 GHz host the API
# server's watch and status alone took ~90 s, past the 60 s a wall-clock bound
# would have to stay under)
wait_until 180 stubborn_gone
t5_s=$(since "$t5")
t_ok "kubectl delete --grace-period=2 of a pod with 60 s of its own that ignores SIGTERM: gone ($t5_s s after the delete)" \
	stubborn_gone
t_is "$(journalctl -u cubelet -o cat | grep -c 'stopping pod default/stubborn (uid [^)]*), grace period 2s$')" 1 \
	"cubelet stopped it once, with the delete's 2 s, not its own 60"
gpu_pods() { pods | jq '{items: [.items[] | select(.metadata.name | test("^gpu-[123]$"))]}'; }
gpu_running() { [ "$(gpu_pods | jq '[.items[] | select(.status.phase == "Running")] | length')" = 2 ]; }
t_ok "two GPU pods placed by the scheduler and Running" wait_until 120 gpu_running
pending=$(gpu_pods | jq -r '.items[] | select(.status.phase == "Pending") | "\(.metadata.name) \(.status.conditions[]? | select(.type == "PodScheduled") | .reason)"')
t_is "$(echo "$pending" | awk '{ print $2 }')" Unschedulable "the third is Pending/Unschedulable: the node's 2 GPUs are taken ($pending)"
vis=$(for g in 1 2 3; do
	id=$(status_json | jq -r --arg n "gpu-$g" '.pods[] | select(.name == $n) | .containers[0].id // empty')
	[ -n "$id" ] && ctr -n k8s.io tasks exec --exec-id "gpu$RANDOM" "$id" sh -c 'echo $NVIDIA_VISIBLE_DEVICES' 2>&1
done | sort | tr '\n' ' ')
t_is "$vis" "GPU-0a1b2c3d-0000-4000-8000-000000000000 GPU-0a1b2c3d-1111-4111-8111-111111111111 " \
	"each Running one sees its own GPU (the plugin's Allocate)"
# a Secret the env names that does not exist: CreateContainerConfigError
# with kubelet's message; created: the container starts
waiting_for() { pod needsecret | jq -r '.status.containerStatuses[0].state.waiting | "\(.reason): \(.message)"'; }
config_error() { [ "$(waiting_for)" = 'CreateContainerConfigError: secret "late-secret" not found' ]; }
t_ok "a Secret the env names does not exist: the container waits in CreateContainerConfigError, kubelet's message" \
	wait_until 60 config_error
t_diag "needsecret: $(waiting_for)"
api /api/v1/namespaces/default/secrets -X POST -H 'Content-Type: application/json' \
	-d '{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "late-secret"}, "stringData": {"token": "t1"}}' >/dev/null
t6=$(date +%s.%N)
needsecret_running() { [ "$(pod needsecret | jq -r .status.phase)" = Running ]; }
wait_until 90 needsecret_running
t_ok "...created: the container starts ($(since "$t6") s)" waited
followed() { [ "$(cat "/srv/cubelet-cluster-vm/out/$watcher.cm" 2>/dev/null)" = "fast slow" ]; }
wait_until $((90 - $(date +%s) + ${t_cm%.*})) followed
at=$(($(cat "/srv/cubelet-cluster-vm/out/$watcher.at" 2>/dev/null || echo 0) - ${t_cm%.*}))
t_ok "the ConfigMap edited: the mounted file changed within 90 s (in the container $at s after the edit), the env did not" \
	sh -c "[ \"\$(cat /srv/cubelet-cluster-vm/out/$watcher.cm)\" = 'fast slow' ] && [ $at -le 90 ]"
# ---- k. kubectl top through the kubelet server ----------------------------------------------------
# (kubectl logs, attach, exec, port-forward, the kubelet server's answers and
# client-go's in-cluster configuration: tests/cluster/with-runtime.sh's
# streams, on the host, in make test; top needs the pods' cgroup v2 stats)
# kubectl top: metrics-server (started now) scrapes the kubelet server's
# /metrics/resource every 15 s
out=$("$VM_REPO/tests/cluster/control-plane.sh" metrics -b "$KUBE" -d "$D" 2>&1)
t_ok "metrics-server starts beside the control plane" test $? = 0
t_diag "$out"
top_node() { kc top node "$NODE_LC" --no-headers 2>/dev/null | awk '$2 ~ /^[0-9]+m$/ && $4 ~ /^[0-9]+Mi$/' | grep -q .; }
t_ok "kubectl top node: the node's CPU and memory through metrics-server" wait_until 240 top_node
top_pods() { [ "$(kc top pod -l app=web --no-headers 2>/dev/null | awk '$2 ~ /^[0-9]+m$/ && $3 ~ /^[0-9]+Mi$/' | wc -l)" = 3 ]; }
t_ok "kubectl top pod: the Deployment's 3 pods, CPU and memory each" wait_until 120 top_pods
t_diag "$(kc top node 2>&1 | tr -s ' ' | tr '\n' '|') $(kc top pod 2>&1 | tr -s ' ' | tr '\n' '|')"
"$VM_REPO/tests/cluster/control-plane.sh" metrics-stop -b "$KUBE" -d "$D" >/dev/null 2>&1 ||
	t_diag "metrics-server: not stopped"
kc delete pod gpu-1 gpu-2 gpu-3 needsecret private nocreds --grace-period=1 --wait=false --ignore-not-found >/dev/null
gpu_gone() { [ "$(gpu_pods | jq '.items | length')" = 0 ] && absent needsecret && absent private && absent nocreds; }
wait_until 60 gpu_gone
[ -n "${reg_pid:-}" ] && kill "$reg_pid" 2>/dev/null

# ---- e. cubelet away: the pods keep running; back: nothing restarted --------------------------
# (the node controller's NotReady/unreachable while cubelet is away: run-node.sh, on the host)
web() { pods app%3Dweb | jq -c '[.items[] | select(.metadata.deletionTimestamp == null) | "\(.metadata.name) \(.status.containerStatuses[0].containerID) \(.status.containerStatuses[0].restartCount)"] | sort'; }
before=$(web)
systemctl stop cubelet
gone_while_down=$(pods app%3Dweb | jq -r '.items[0].metadata.name')
kc delete pod "$gone_while_down" --wait=false >/dev/null
t_is "$(ctr -n k8s.io tasks ls 2>/dev/null | awk '$3 == "RUNNING"' | wc -l | awk '{ print ($1 >= 6) }')" 1 \
	"cubelet stopped: the pods keep running (their sandboxes and containers)"
# cubelet starts again while the API server does not answer (SIGSTOP): no
# API pod's container is stopped before the API source has synced
running_tasks() { ctr -n k8s.io tasks ls 2>/dev/null | awk '$3 == "RUNNING"' | wc -l; }
n_tasks=$(running_tasks)
kill -STOP "$(cat "$D/apiserver.pid")"
systemctl start cubelet
sleep 8
t_is "$(running_tasks)" "$n_tasks" "cubelet back while the API server does not answer: no container stopped (sources not synced)"
kill -CONT "$(cat "$D/apiserver.pid")"
wait_until 120 ready
t_ok "the API server back: the node Ready" waited
gone_down() { absent "$gone_while_down"; }
t_ok "a pod deleted while cubelet was away: stopped and its object gone once it is back" wait_until 120 gone_down
# (the statuses in the API converge: in a CI guest whose API server let
# cubelet's PATCHes time out for half a minute after the restart, one read
# found neither pod as before; the check waits for them and shows both reads)
same_two() {
	after=$(web)
	[ "$(jq -n --argjson a "$before" --argjson b "$after" '[$a[] | select(. as $x | $b | index($x))] | length')" = 2 ]
}
wait_until 90 same_two
t_ok "the two others: the same containers, no restart (restartCount unchanged)" waited
waited || t_diag "before: $before; after: $after"

# ---- d. a bound pod that does not fit ----------------------------------------------------------
create_pod <<EOF
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: default}
spec:
  nodeName: $NODE_LC
  automountServiceAccountToken: false
  containers:
  - {name: app, image: localhost/cubelet/busybox:1, command: [sleep, "3600"], resources: {requests: {memory: 100Gi}}}
EOF
failed() { [ "$(pod huge | jq -r .status.phase)" = Failed ]; }
t_ok "a bound pod that does not fit: Failed" wait_until 60 failed
t_is "$(pod huge | jq -r .status.reason)" OutOfmemory "reason OutOfmemory"
t_contains "$(pod huge | jq -r .status.message)" "Pod was rejected: Node didn't have enough resource: memory" \
	"kubelet's message"

# ---- f. memory pressure evicts an API pod ---------------------------------------------------------
# cubelet restarted with a hard threshold 250Mi under what is available now;
# a BestEffort pod bound to the node grows until it crosses it. The lowest
# ranked pod (BestEffort, furthest over its requests) goes: Failed/Evicted in
# the API with kubelet's message, the DisruptionTarget condition and an
# Evicted event; the Deployment's pods (BestEffort, idle) stay.
base=$(available)
T=$(((base - 250 * MiB) / MiB))
t_diag "memory.available ${base} bytes; threshold memory.available<${T}Mi"
sed -i '/^eviction/d' /etc/cubelet/config.yaml
printf 'evictionHard: {memory.available: "%sMi"}\nevictionPressureTransitionPeriod: 5s\n' "$T" >>/etc/cubelet/config.yaml
systemctl restart cubelet
for _ in $(seq 60); do status_json >/dev/null && break; sleep 0.5; done
create_pod <<EOF
apiVersion: v1
kind: Pod
metadata: {name: hog, namespace: default}
spec:
  nodeName: $NODE_LC
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command:
    - sh
    - -c
    - |
      $(hold_cmd 900 0.05)
EOF
evicted() { [ "$(pod hog | jq -r '"\(.status.phase)/\(.status.reason)"')" = Failed/Evicted ]; }
t_ok "memory pressure (threshold ${T}Mi): the BestEffort hog is Failed/Evicted in the API" wait_until 240 evicted
t_contains "$(pod hog | jq -r .status.message)" "The node was low on resource: memory. Threshold quantity: ${T}Mi, available: " \
	"its message is kubelet's"
t_is "$(pod hog | jq -r '.status.conditions[] | select(.type == "DisruptionTarget") | "\(.status) \(.reason)"')" \
	"True TerminationByKubelet" "the DisruptionTarget condition, reason TerminationByKubelet"
evicted_ev() { [ "$(events hog | jq -r '[.items[] | select(.source.component == "kubelet" and .reason == "Evicted")] | length')" -ge 1 ]; }
t_ok "an Evicted event from kubelet (cubelet) for it" wait_until 30 evicted_ev
t_ok "the Deployment's 3 pods are untouched" running 3

# ---- h. swap: LimitedSwap (KEP-2400) on a zram device --------------------------------------------
# cubelet restarted with memorySwap.swapBehavior LimitedSwap over 1 GiB of
# zram swap: the Node reports SwapTotal; an API pod (static pods are
# critical and never swap) that is Burstable gets memory.swap.max = request
# / MemTotal × SwapTotal (kubelet's calcSwapForBurstablePods) and, writing
# 20Mi past its memory limit into its root filesystem (tmpfs pages in the
# guest), swaps them and runs on; a Guaranteed one (memory.swap.max 0)
# writing past its limit is OOM-killed. Each writes once the test has read
# its cgroup (a file in a hostPath). (docs/swap.md)
SW=/run/cubelet-swap-test
mkdir -p $SW
swap_on() {
	modprobe zram && echo 1G >/sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null && swapon /dev/zram0
}
if swap_on; then
	swap_total=$(awk '$1 == "SwapTotal:" { print $2 * 1024 }' /proc/meminfo)
	mem_total=$(awk '$1 == "MemTotal:" { print $2 * 1024 }' /proc/meminfo)
	sed -i '/^eviction/d' /etc/cubelet/config.yaml
	printf 'memorySwap: {swapBehavior: LimitedSwap}\n' >>/etc/cubelet/config.yaml
	systemctl restart cubelet
	for _ in $(seq 60); do status_json >/dev/null && break; sleep 0.5; done
	swap_cap() { [ "$(jqn '.status.nodeInfo.swap.capacity')" = "$swap_total" ]; }
	t_ok "swap: the Node's status.nodeInfo.swap.capacity is SwapTotal ($swap_total)" wait_until 60 swap_cap
	swap_pod() { # swap_pod NAME REQUEST LIMIT WRITE_MIB
		create_pod <<Y
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  nodeName: $NODE_LC
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  volumes: [{name: x, hostPath: {path: $SW}}]
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    resources: {requests: {cpu: 100m, memory: $2}, limits: {cpu: 100m, memory: $3}}
    volumeMounts: [{name: x, mountPath: /x}]
    command: [sh, -c, "while [ ! -e /x/$1.go ]; do sleep 0.5; done; dd if=/dev/zero of=/big bs=1M count=$4 2>/x/$1.dd && echo written >/x/$1.done; exec sleep 3600"]
Y
	}
	swap_pod swapb 64Mi 80Mi 100
	swap_pod swapg 80Mi 80Mi 100
	swap_running() { [ "$(pod "$1" | jq -r .status.phase)" = Running ]; }
	for p in swapb swapg; do
		t_ok "swap: pod $p Running" wait_until 240 swap_running $p
	done
	swap_max() { # swap_max POD: the container's memory.swap.max
		cat "/sys/fs/cgroup/$(cg_ctr "$(pod_field "$1" cgroup)" "$(ctr_field "$1" app id)")/memory.swap.max" 2>/dev/null
	}
	want=$(awk -v r=$((64 * MiB)) -v m="$mem_total" -v s="$swap_total" 'BEGIN { printf "%d", r / m * s }')
	# (the kernel keeps the value cubelet sends rounded down to a page)
	t_is "$(swap_max swapb)" "$((want / 4096 * 4096))" \
		"swap: Burstable swapb: memory.swap.max = 64Mi / MemTotal × SwapTotal ($want), to a page"
	t_is "$(swap_max swapg)" 0 "swap: Guaranteed swapg: memory.swap.max 0"
	b_cg=/sys/fs/cgroup/$(cg_ctr "$(pod_field swapb cgroup)" "$(ctr_field swapb app id)")
	touch $SW/swapb.go $SW/swapg.go
	t_ok "swap: swapb wrote 100Mi past its 80Mi limit" wait_until 120 test -e $SW/swapb.done
	sc=$(cat "$b_cg/memory.swap.current" 2>/dev/null)
	t_diag "swapb: memory.swap.current $sc, memory.swap.max $want, memory.current $(cat "$b_cg/memory.current" 2>/dev/null)"
	t_ok "swap: swapb swapped at least the 20Mi over its limit, at most its share" \
		awk -v c="${sc:-0}" -v m="$want" -v o=$((20 * MiB)) 'BEGIN { exit !(c >= o && c <= m) }'
	t_is "$(awk '$1 == "oom_kill" { print $2 }' "$b_cg/memory.events" 2>/dev/null)" 0 "swap: swapb had no OOM kill"
	g_oom() { [ "$(pod swapg | jq -r '.status.containerStatuses[0].state.terminated.reason')" = OOMKilled ]; }
	t_ok "swap: swapg, which may not swap, is OOMKilled" wait_until 120 g_oom
	t_is "$(pod swapb | jq -r '"\(.status.phase) \(.status.containerStatuses[0].restartCount)"')" "Running 0" \
		"swap: swapb runs on, not restarted"
	swap_ok=1 # swapb serves i as its pod without API volumes; both go after i
else
	t_fail "swap: a zram device as swap (modprobe zram, mkswap, swapon)"
fi

# ---- i. a node that starts offline (cubelet.offlinePods: start; issue 23 part 6) ---------------
# What a reboot with the API server unreachable leaves: cubelet stopped, the
# processes of every pod killed (cgroup.kill), the API server's port
# refusing connections (a packet-filter rule). cubelet started with
# offlinePods: start: the first list fails and the pods of its last list
# (<stateDir>/api_pods) are started: h's swapb (no API volume) runs again,
# same UID, a new container; the web pods (a token volume, a ConfigMap)
# wait for the API server; swapg, Failed in the API, is not in the file.
# The port open again: the list answers, the web pods run again, swapb
# stays as it is, and swapg is not run again (it has ended).
of() { status_json | jq -r --arg n "$1" ".pods[] | select(.name == \$n) | $2"; }
OFF=swapb
if [ "${swap_ok:-0}" != 1 ]; then # (h could not run: a pod of its own)
	OFF=offline
	create_pod <<EOF
apiVersion: v1
kind: Pod
metadata: {name: offline, namespace: default}
spec:
  nodeName: $NODE_LC
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
EOF
	off_running() { [ "$(of offline .phase)" = Running ]; }
	t_ok "offline: pod offline (no API volume) Running" wait_until 240 off_running
fi
uid=$(of $OFF .uid) ctr=$(of $OFF '.containers[0].id')
web_uids=$(status_json | jq -r '[.pods[] | select(.name | startswith("web-")) | .uid] | sort | join(" ")')
systemctl stop cubelet
for u in $uid $web_uids; do
	for cg in $(find /sys/fs/cgroup/kubepods -maxdepth 2 -type d -name "pod$u" 2>/dev/null); do
		echo 1 >"$cg/cgroup.kill"
	done
done
iptables -I INPUT -p tcp --dport 6443 -j REJECT --reject-with tcp-reset
sed -i 's|^  socket: /run/cubelet/cubelet.sock$|&\n  offlinePods: start|' /etc/cubelet/config.yaml
off_start=$(date +%s)
systemctl start cubelet
off_again() { [ "$(of $OFF .phase)" = Running ] && [ "$(of $OFF '.containers[0].id')" != "$ctr" ]; }
t_ok "offline: the API server unreachable, offlinePods: start: pod $OFF runs again from the last list ($(since "$off_start") s)" \
	wait_until 300 off_again
t_is "$(of $OFF .uid)" "$uid" "offline: with its UID"
off_journal() { journalctl -u cubelet --no-pager -q -S "@$off_start" 2>/dev/null; }
t_contains "$(off_journal)" "API server: unreachable at the start: the 4 pods of its last list from '/var/lib/cubelet/api_pods'" \
	"offline: the journal says where they come from (the web pods and $OFF; not an ended pod)"
t_is "$(status_json | jq '[.pods[] | select((.name | startswith("web-")) and .phase == "Running")] | length')" 0 \
	"offline: the web pods, whose volumes need the API server, wait for it"
ctr=$(of $OFF '.containers[0].id')
iptables -D INPUT -p tcp --dport 6443 -j REJECT --reject-with tcp-reset
list_back() { off_journal | grep -q 'API server: pods: working again'; }
t_ok "offline: the port open again: the list answers" wait_until 180 list_back
t_ok "offline: the Deployment's 3 pods Running again" wait_until 300 running 3
t_is "$(of $OFF .uid) $(of $OFF '.containers[0].id') $(of $OFF .phase)" "$uid $ctr Running" \
	"offline: pod $OFF stays as it was started offline (same UID, same container)"
if [ "$OFF" = swapb ]; then
	t_contains "$(off_journal)" "pod default/swapg (uid $(pod swapg | jq -r .metadata.uid)) is Failed in the API server: not run again" \
		"offline: swapg, OOMKilled before the restart, is not run again"
	t_is "$(of swapg .phase) $(pod swapg | jq -r '.status.containerStatuses[0].state.terminated.reason')" "Failed OOMKilled" \
		"offline: ...Failed in cubelet's status, its status in the API as it was"
fi
kc delete pod $OFF swapg --wait=false --ignore-not-found >/dev/null
off_gone() { absent $OFF && absent swapg; }
t_ok "offline: its pods go" wait_until 120 off_gone
sed -i '/^  offlinePods: start$/d; /^memorySwap/d' /etc/cubelet/config.yaml
if [ "${swap_ok:-0}" = 1 ]; then
	# swapoff reads the swapped pages back, charged to the memory cgroup that
	# swapped them while it lives: with swapb's pod cgroup still at its 80Mi
	# limit it fails (ENOMEM, the kernel's OOM report; a CI run's reset then
	# found dev-zram0.swap active). cubelet removes that cgroup once the pod
	# has gone; then the pages are charged above it.
	b_pod_gone() { [ -z "$(find /sys/fs/cgroup/kubepods -maxdepth 2 -type d -name "pod$uid" 2>/dev/null)" ]; }
	t_ok "swap: swapb's pod cgroup removed" wait_until 120 b_pod_gone
	t_ok "swap: the zram swap turned off (swapoff)" wait_until 60 swapoff /dev/zram0
	echo 1 >/sys/block/zram0/reset
fi
rm -rf "$SW"

# ---- g. the systemd cgroup driver -------------------------------------------------------------
# The same node under cgroupDriver: systemd (containerd's runc with
# SystemdCgroup = true): the Deployment again, its pods in systemd slices,
# a graceful deletion and the replacement. (The driver matrix runs the
# single-node scenarios twice; here the control plane is started once.)
# (22-cgroup-driver runs static pods under both drivers; this is the API's
# pods, whose dashed UIDs the slice names escape)
kc delete deployment web --wait=false >/dev/null
no_web() { [ "$(pods app%3Dweb | jq '.items | length')" = 0 ]; }
t_ok "the Deployment deleted: its pods stopped and gone" wait_until 120 no_web
systemctl stop cubelet
sed -i '/^eviction/d' /etc/cubelet/config.yaml
CUBELET_DRIVER=systemd
cubelet_config_driver systemd
containerd_systemd_cgroup true
systemctl start cubelet
t_ok "systemd driver: cubelet back, the node Ready" wait_until 120 ready
kc apply -f "$D/web.yaml" >/dev/null
t_ok "systemd driver: the Deployment's 3 replicas Running" wait_until 300 running 3
slices=$(for u in $(pods app%3Dweb | jq -r '.items[].metadata.uid'); do
	[ -d "/sys/fs/cgroup/$(cg_qos besteffort)/kubepods-besteffort-pod${u//-/_}.slice" ] && echo "$u"
done | wc -l)
t_is "$slices" 3 "their pod cgroups are systemd slices ($(cg_qos besteffort)/kubepods-besteffort-pod<uid>.slice)"
victim=$(pods app%3Dweb | jq -r '.items[0].metadata.name')
kc delete pod "$victim" --wait=false >/dev/null
t_ok "systemd driver: kubectl delete pod: the object goes once cubelet stopped it" wait_until 120 gone
t_is "$(cat "/srv/cubelet-cluster-vm/out/$victim" 2>/dev/null)" TERM "the container saw SIGTERM"
t_ok "systemd driver: the ReplicaSet's replacement runs" wait_until 300 running 3

cubelet_teardown
systemctl stop cubelet-gpu-plugin
rm -f /dev/nvidia0 /dev/nvidia1 /dev/nvidiactl /dev/nvidia-uvm /etc/fake-nvml.conf
rm -rf /etc/systemd/system/cubelet.service.d /etc/systemd/system/cubelet-gpu-plugin.service.d
systemctl daemon-reload
kill "$proxy_pid" 2>/dev/null
"$VM_REPO/tests/cluster/control-plane.sh" stop -d "$D" >/dev/null 2>&1
rm -rf "$D"
t_done
