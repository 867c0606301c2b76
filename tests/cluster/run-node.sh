#!/bin/bash
# cubelet as a node of the real control plane, in a network namespace of its own: the
# Node it registers (labels, taints, capacity, conditions, nodeInfo), its
# Lease renewed every 10 s, the API requests of an idle node, NodeRestriction's
# 403 named, service-account token volumes (the token bound to the pod, the
# cluster CA, a ConfigMap created later and changed), configMap and secret
# volumes (a Secret on tmpfs) and the Node authorizer's limit on Secrets, an
# API server that stops answering and comes back, a restart that keeps the
# Node, the last list's pods started while the API server refuses
# (cubelet.offlinePods: start; keep starts nothing), image pull secrets from a
# registry on loopback, kubectl logs/attach/exec/port-forward through the kubelet
# server and client-go's in-cluster configuration in a pod (with-runtime.sh), a
# broken kubeconfig. Most parts run
# cubelet without a container runtime (the node NotReady, as kubelet's is
# without one); the Services' variables and the pull secrets run real
# containers in a private containerd (cgroupsPerQOS: false, host network).
# TAP; 77 without root, a cgroup2 mount, etcd or Go.
#
#   tests/cluster/run-node.sh BUILD_DIR    (its cubelet; the control plane from
#                                           build/cluster/kube, built here)
set -u
B=${1:?usage: run-node.sh BUILD_DIR}
CUBELET=$(cd "$B" && pwd)/cubelet
# The whole run in a network namespace of its own (the control plane, the
# kubelet server on 0.0.0.0, the pods' host network): its loopback, and a
# node address that is not loopback, 192.0.2.2 (TEST-NET-1) on a veth
# link with the default route, for docs/cluster.md's quick start
# (the Node advertises the default route's address). Gone when it ends.
NODE_IP=192.0.2.2
if [ -z "${CUBELET_TEST_NETNS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP not root"; exit 77; }
	exec unshare --net env CUBELET_TEST_NETNS=1 "$0" "$@"
fi
if ! { ip link set lo up && ip link add node0 type veth peer name node0p && ip link set node0p up &&
	ip addr add "$NODE_IP/24" dev node0 &&
	ip link set node0 up && ip route add default via 192.0.2.1; } 2>/dev/null; then
	echo "not ok 1 - a network namespace of the run's own with $NODE_IP"
	exit 1
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KUBE=$ROOT/build/cluster/kube
NODE=cubelet-node
n=0

# shellcheck disable=SC1091
. "$ROOT/tests/cluster/lib.sh"
[ "$(id -u)" = 0 ] || skip "not root"
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG" ] || skip "no cgroup2 mount"
command -v etcd >/dev/null || skip "etcd (etcd-server) is missing"
PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || skip "no Go toolchain for the control plane"
# a warm build takes seconds; a cold one (no module or build cache) half an
# hour on 2 cores, more than make test's budget: skipped, said
if ! timeout 600 make -C "$ROOT" --no-print-directory cluster-peers >/dev/null 2>&1; then
	skip "build/cluster/kube did not build within 10 min (make cluster-peers; a cold Go cache)"
fi
for port in 2379 2380 6443; do
	if ss -Hltn "sport = :$port" | grep -q .; then
		skip "127.0.0.1:$port is in use (another control plane?)"
	fi
done

T=$(mktemp -d /tmp/cubelet-cluster-XXXXXX)
CGROOT=$CG/cubelet-cluster-$$ # one below it per cubelet
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	# a Secret's tmpfs left by a failed check
	awk -v t="$T/" 'index($2, t) == 1 { print $2 }' /proc/mounts | xargs -r -n1 umount -l 2>/dev/null
	"$ROOT/tests/cluster/control-plane.sh" stop -d "$T/cp" >/dev/null 2>&1
	"$ROOT/packaging/containerd/private-containerd.sh" stop "$T/ctd" >/dev/null 2>&1
	for g in /sys/fs/cgroup/*/"cubelet-cluster-$$" /sys/fs/cgroup/"cubelet-cluster-$$"; do
		[ -d "$g" ] && find "$g" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	find "$CGROOT" -depth -type d -exec rmdir {} + 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

kc() { "$KUBE" kubectl --kubeconfig "$T/cp/pki/admin.kubeconfig" "$@"; }
node() { kc get node "$NODE" -o json 2>/dev/null; }
jqn() { node | jq -r "$1"; }
lease() { kc -n kube-node-lease get lease "$NODE" -o json 2>/dev/null; }

export NODE_IP # the kubelet's serving certificate names it (certs.sh)
if ! out=$("$ROOT/tests/cluster/control-plane.sh" start -b "$KUBE" -d "$T/cp" -n "$NODE" 2>&1); then
	nok "the control plane starts" "$out"
	echo "1..$n"
	exit 1
fi
ok "the control plane starts: $out"

# ---- registration ------------------------------------------------------------------------
# the kubelet server on :10250 too: the node's serving certificate
# from the cluster's CA, its address 127.0.0.1 for the API server
RUN_CONFIG="tlsCertFile: $T/cp/pki/kubelet.crt
tlsPrivateKeyFile: $T/cp/pki/kubelet.key
authentication: {x509: {clientCAFile: $T/cp/pki/ca.crt}}"
RUN_PORT=10250 run a --node-name "$NODE" --kubeconfig "$T/cp/pki/node.kubeconfig" --node-ip 127.0.0.1 \
	--node-labels "node.kubernetes.io/pool=edge,topology.kubernetes.io/zone=z1" \
	--register-with-taints "example.com/dedicated=gpu:NoSchedule"
RUN_CONFIG=""
registered() { [ "$(jqn .metadata.uid)" != "" ] && [ "$(jqn .metadata.uid)" != null ]; }
check "the node registers (POST /api/v1/nodes with the node's certificate)" wait_until 30 registered
contains "$(cat "$T/a.log")" "API server https://127.0.0.1:6443: node '$NODE' registered (uid $(jqn .metadata.uid))" \
	"the journal names the server, the node and its UID"
# kubelet's address: every interface, so that the API server reaches the address the Node advertises
contains "$(cat "$T/a.log")" "kubelet server on 0.0.0.0:10250 (TLS" "the kubelet server's default address: 0.0.0.0 (kubelet's)"
is "$(jqn '.metadata.labels | to_entries | map("\(.key)=\(.value)") | sort | join(",")')" \
	"beta.kubernetes.io/arch=amd64,beta.kubernetes.io/os=linux,kubernetes.io/arch=amd64,kubernetes.io/hostname=$NODE,kubernetes.io/os=linux,node.kubernetes.io/pool=edge,topology.kubernetes.io/zone=z1" \
	"kubelet's labels and --node-labels"
is "$(jqn '.metadata.annotations["volumes.kubernetes.io/controller-managed-attach-detach"]')" true \
	"the attach-detach annotation"
is "$(jqn '[.spec.taints[] | select(.key == "example.com/dedicated") | "\(.value):\(.effect)"] | join(",")')" \
	"gpu:NoSchedule" "--register-with-taints"
cpus=$(nproc --all)
mem_ki=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
# a Quantity's canonical text: the largest binary suffix that divides it
canon() { python3 -c "
n = $1
for s, f in (('Ei', 1 << 60), ('Pi', 1 << 50), ('Ti', 1 << 40), ('Gi', 1 << 30), ('Mi', 1 << 20), ('Ki', 1 << 10)):
    if n % f == 0:
        print('%d%s' % (n // f, s)); break
else:
    print(n)"; }
is "$(jqn '.status.capacity | "\(.cpu) \(.memory) \(.pods)"')" "$cpus $(canon $((mem_ki * 1024))) 110" \
	"capacity: the machine's CPUs and memory, maxPods"
is "$(jqn '.status.allocatable | [.cpu, .pods] | join(" ")')" "$cpus 110" "allocatable cpu and pods (nothing reserved)"
is "$(jqn '.status.allocatable.memory')" "$(canon $(((mem_ki - 102400) * 1024)))" \
	"allocatable memory: capacity − the hard eviction threshold (100Mi)"
cap=$(jqn '.status.capacity | [.["ephemeral-storage"], .["hugepages-2Mi"], .["hugepages-1Gi"]] | map(. // "none") | join(" ")')
alloc=$(jqn '.status.allocatable | [.["ephemeral-storage"], .["hugepages-2Mi"], .["hugepages-1Gi"]] | map(. // "none") | join(" ")')
check "ephemeral-storage and hugepages in capacity ($cap) and allocatable ($alloc)" \
	sh -c "! echo '$cap $alloc' | grep -q none"
is "$(jqn '[.status.conditions[] | "\(.type)=\(.status)/\(.reason)"] | join(" ")')" \
	"MemoryPressure=False/KubeletHasSufficientMemory DiskPressure=False/KubeletHasNoDiskPressure PIDPressure=False/KubeletHasSufficientPID Ready=False/KubeletNotReady" \
	"conditions with kubelet's reasons (no runtime: not Ready)"
# "starting" until the first runtime call has failed (kubelet's "container
# runtime status check may not have completed yet"); the change goes out with
# the next status update (10 s): a clean-clone CI under load registered first
ready_msg() { [ "$(jqn '.status.conditions[] | select(.type == "Ready") | .message')" = "container runtime is down" ]; }
check "Ready's message names the cause" wait_until 25 ready_msg
is "$(jqn '.status.nodeInfo | "\(.kubeletVersion) \(.operatingSystem) \(.architecture) \(.bootID) \(.kernelVersion)"')" \
	"v1.34.0-cubelet linux amd64 $(cat /proc/sys/kernel/random/boot_id) $(uname -r)" "nodeInfo"
is "$(jqn '[.status.addresses[] | .type] | join(",")')" "InternalIP,Hostname" "addresses"

# ---- a device plugin's resource: cubelet-gpu-plugin on the fake NVML -----------------------
PLUGIN=$(cd "$B" && pwd)/cubelet-gpu-plugin
NVML=$(cd "$B" && pwd)/tests/fakes/libnvidia-ml.so.1
if [ -x "$PLUGIN" ] && [ -e "$NVML" ]; then
	mkdir -p "$T/gpu/dev" "$T/gpu/sys/bus/pci/devices/0000:3b:00.0" "$T/gpu/sys/bus/pci/devices/0000:af:00.0"
	echo 0 >"$T/gpu/sys/bus/pci/devices/0000:3b:00.0/numa_node"
	echo 1 >"$T/gpu/sys/bus/pci/devices/0000:af:00.0/numa_node"
	for d in nvidia0:0 nvidia1:1 nvidiactl:255; do mknod "$T/gpu/dev/${d%:*}" c 195 "${d#*:}"; done
	mknod "$T/gpu/dev/nvidia-uvm" c 510 0
	printf 'gpu GPU-9e8d7c6b-aaaa-bbbb-cccc-ddddeeeeffff 1 0000:AF:00.0 NVIDIA Fake H100\ngpu GPU-0fa1c2d3-1111-2222-3333-444455556666 0 0000:3b:00.0 NVIDIA Fake H100\n' >"$T/gpu/nvml.conf"
	FAKE_NVML_CONFIG=$T/gpu/nvml.conf CUBELET_GPU_SYS_ROOT=$T/gpu/sys "$PLUGIN" --device-plugin-dir "$T/a/dp" \
		--nvml-library "$NVML" --dev-root "$T/gpu/dev" >"$T/gpu.log" 2>&1 &
	GPU_PID=$!
	PIDS="$PIDS $GPU_PID"
	gpus() { [ "$(jqn '"\(.status.capacity["nvidia.com/gpu"]) \(.status.allocatable["nvidia.com/gpu"])"')" = "2 2" ]; }
	check "nvidia.com/gpu: 2 in capacity and allocatable (cubelet-gpu-plugin, fake NVML) within a status period" \
		wait_until 25 gpus
	kill "$GPU_PID"
	wait "$GPU_PID" 2>/dev/null
	gone() { [ "$(jqn '"\(.status.capacity["nvidia.com/gpu"]) \(.status.allocatable["nvidia.com/gpu"])"')" = "2 0" ]; }
	check "the plugin gone: nvidia.com/gpu stays in capacity, allocatable 0 (as kubelet)" wait_until 25 gone
else
	nok "cubelet-gpu-plugin and the fake NVML are built ($PLUGIN, $NVML)"
fi

# ---- the Lease ---------------------------------------------------------------------------
renew() { lease | jq -r .spec.renewTime; }
has_lease() { [ -n "$(renew)" ]; }
check "the Lease exists in kube-node-lease" wait_until 20 has_lease
is "$(lease | jq -r '"\(.spec.holderIdentity) \(.spec.leaseDurationSeconds) \(.metadata.ownerReferences[0].kind)/\(.metadata.ownerReferences[0].uid)"')" \
	"$NODE 40 Node/$(jqn .metadata.uid)" "holder, duration 40 s, owned by the Node"
# two renewals, timed on the API server's own renewTime
changed() { [ "$(renew)" != "$1" ]; }
r0=$(renew)
wait_until 15 changed "$r0"
r1=$(renew)
wait_until 15 changed "$r1"
r2=$(renew)
gap=$(python3 -c "
from datetime import datetime as d
f = lambda s: d.strptime(s, '%Y-%m-%dT%H:%M:%S.%fZ')
print('%.1f' % (f('$r2') - f('$r1')).total_seconds())")
check "the Lease is renewed every 10 s ± 2 s ($r1 → $r2: $gap s)" \
	python3 -c "import sys; sys.exit(not 8 <= $gap <= 12)"

# ---- an idle node's requests ---------------------------------------------------------------
q0=$(status_json a | jq .apiServer.requests)
sleep 20
q1=$(status_json a | jq .apiServer.requests)
check "an idle node makes 2 requests in 20 s, the Lease's ($((q1 - q0)); nothing changed: no status PATCH)" \
	test "$((q1 - q0))" -le 3
is "$(status_json a | jq -r '.apiServer | "\(.registered) \(.node) \(.error)"')" "true $NODE " \
	"cubelet status: registered, no error"

node_events() { kc get events -n default --field-selector "involvedObject.kind=Node,involvedObject.name=$NODE" -o json | jq -r '[.items[] | select(.source.component == "kubelet") | .reason] | sort | unique | join(",")'; }
has_node_events() { [ "$(node_events)" = NodeHasNoDiskPressure,NodeHasSufficientMemory,NodeHasSufficientPID,Starting ]; }
check "the node's own events (kubelet's): Starting and the pressure conditions' (Unknown → False)" wait_until 20 has_node_events
is "$(node_events)" NodeHasNoDiskPressure,NodeHasSufficientMemory,NodeHasSufficientPID,Starting \
	"...and no NodeNotReady: kubelet sends it only when an existing Ready condition changes"
event_count() { kc get events -n default --field-selector "involvedObject.kind=Node,involvedObject.name=$NODE,reason=$1" -o json | jq '[.items[].count] | add // 0'; }

# ---- pods from the API server -----------------------------------------------------------------
# bound with spec.nodeName (the node is NotReady without a runtime: the
# scheduler would not place them); no runtime, so they wait in ContainerCreating
pod() {
	cat <<-EOF
		{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$1", "namespace": "default"},
		 "spec": {"nodeName": "$NODE", $2 "containers": [{"name": "app", "image": "localhost/cubelet/busybox:1",
		  "command": ["sleep", "3600"] $3}]}}
	EOF
}
pod plain '"automountServiceAccountToken": false,' '' | kc create -f - >/dev/null
pod big '"automountServiceAccountToken": false,' ', "resources": {"requests": {"cpu": "1000"}}' | kc create -f - >/dev/null
pod sa '' '' | kc create -f - >/dev/null
pod mirror '"automountServiceAccountToken": false,' '' |
	jq '.metadata.annotations = {"kubernetes.io/config.mirror": "x"}' | kc create -f - >/dev/null
pj() { kc get pod "$1" -o json | jq -r "$2"; }
waiting() { [ "$(pj plain '.status.containerStatuses[0].state.waiting.reason')" = ContainerCreating ]; }
check "a pod bound to the node: its status in the API within seconds (Pending, ContainerCreating: no runtime)" \
	wait_until 20 waiting
is "$(pj plain '"\(.status.phase) \(.status.qosClass) \(.status.hostIP) \([.status.conditions[] | "\(.type)=\(.status)"] | join(","))"')" \
	"Pending BestEffort $(jqn '.status.addresses[0].address') PodReadyToStartContainers=False,Initialized=True,Ready=False,ContainersReady=False,PodScheduled=True" \
	"its phase, QoS class, hostIP and conditions"
is "$(status_json a | jq -r --arg u "$(pj plain .metadata.uid)" '.pods[] | select(.uid == $u) | .name')" plain \
	"cubelet status has it under the API's UID"

# ---- the kubelet server (port 10250) -------------------------------------------------------------
K10250=https://127.0.0.1:10250
k10250() { # k10250 PATH [CURL OPTIONS]: "CODE BODY" (the body on one line; whole in $T/k.out)
	local path=$1 code
	shift
	code=$(curl -s --max-time 20 --cacert "$T/cp/pki/ca.crt" -o "$T/k.out" -w '%{http_code}' "$@" "$K10250$path")
	echo "$code $(tr '\n' ' ' <"$T/k.out" | sed 's/ *$//')"
}
as_admin=(--cert "$T/cp/pki/admin.crt" --key "$T/cp/pki/admin.key")
as_nobody=(--cert "$T/cp/pki/nobody.crt" --key "$T/cp/pki/nobody.key")
is "$(jqn '"\(.status.daemonEndpoints.kubeletEndpoint.Port) \(.status.addresses[0].address)"')" "10250 127.0.0.1" \
	"daemonEndpoints: the kubelet server's port; InternalIP from --node-ip"
is "$(k10250 /healthz)" "401 Unauthorized" "the kubelet server: no credentials: 401 Unauthorized"
is "$(k10250 /pods "${as_admin[@]}" | cut -d' ' -f1) $(jq -r .kind "$T/k.out")" "200 PodList" \
	"a client certificate of the cluster's CA (system:masters): 200, the PodList"
is "$(k10250 /pods "${as_nobody[@]}")" \
	"403 Forbidden (user=cubelet-test-nobody, verb=get, resource=nodes, subresource(s)=[pods proxy])" \
	"a certificate the API server allows nothing: 403, kubelet's text (pods, then proxy)"
is "$(k10250 /pods -H 'Authorization: Bearer not-a-token')" "401 Unauthorized" "a token the API server refuses: 401"
kc create serviceaccount reader >/dev/null
kc create clusterrole node-stats --verb=get --resource=nodes/stats,nodes/metrics >/dev/null
kc create clusterrolebinding reader-stats --clusterrole=node-stats --serviceaccount=default:reader >/dev/null
tok=$(kc create token reader)
is "$(k10250 /pods -H "Authorization: Bearer $tok")" \
	"403 Forbidden (user=system:serviceaccount:default:reader, verb=get, resource=nodes, subresource(s)=[pods proxy])" \
	"a ServiceAccount's token (TokenReview): its user, and 403 for what its role does not grant"
code=$(k10250 /stats/summary -H "Authorization: Bearer $tok" | cut -d' ' -f1)
is "$code $(jq -r .node.nodeName "$T/k.out")" "200 $NODE" \
	"...and 200 for nodes/stats, which it grants (SubjectAccessReview)"
is "$(k10250 /metrics/resource -H "Authorization: Bearer $tok" | head -c 3)" "200" "nodes/metrics: /metrics/resource"
is "$(k10250 /containerLogs/default/nosuch/app "${as_admin[@]}")" '404 pod "nosuch" does not exist' \
	"/containerLogs of a pod the node does not run: 404, kubelet's text"

# ---- hostile clients of the kubelet server: each refused, /healthz answering throughout ---------------
# (a table of request, status and the next /healthz's latency, as TAP comments)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/other.key" -out "$T/other.crt" \
	-days 1 -subj "/CN=system:node:$NODE/O=system:nodes" 2>/dev/null
healthz_ms() { curl -s --max-time 5 --cacert "$T/cp/pki/ca.crt" "${as_admin[@]}" -o "$T/h.out" \
	-w '%{http_code} %{time_total}' "$K10250/healthz" | awk '{ printf "%s %d", $1, $2 * 1000 }'; }
# /healthz is 500 here (no runtime: kubelet's too fails its check, once the
# runtime has been away 60 s); it must answer as it did before, at once,
# after each hostile request. Taken once the 60 s are past: a run that got
# here sooner saw 200 first, then 500 in the middle of the trickle below
h500() { [ "$(healthz_ms | cut -d' ' -f1)" = 500 ]; }
wait_until 75 h500
h0=$(healthz_ms)
hostile() { # hostile WHAT WANT CURL-ARGS...: the status (000: the connection refused or closed), then /healthz
	local what=$1 want=$2 code h
	shift 2
	code=$(curl -s --max-time 20 --cacert "$T/cp/pki/ca.crt" -o "$T/hk.out" -w '%{http_code}' "$@" 2>/dev/null)
	h=$(healthz_ms)
	echo "# | $what | $code | /healthz ${h%% *} in ${h#* } ms |"
	fast=$([ "${h#* }" -lt 1000 ] && echo "<1s" || echo "${h#* } ms")
	is "$code ${h%% *} $fast" "$want ${h0%% *} <1s" \
		"hostile: $what: $want, and /healthz answers as before within a second (${h#* } ms)"
}
echo "# | request | status | /healthz after |"
hostile "no client certificate, no token" 401 "$K10250/pods"
hostile "a certificate of another CA (CN system:node:$NODE)" 401 --cert "$T/other.crt" --key "$T/other.key" \
	"$K10250/pods"
hostile "a user the CA signed who may do nothing (CN cubelet-test-nobody)" 403 "${as_nobody[@]}" "$K10250/pods"
# another node's client certificate, signed by the cluster's CA: the Node
# authorizer gives a node nothing of another node's (SubjectAccessReview)
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/node2.key" -out "$T/node2.csr" \
	-subj "/O=system:nodes/CN=system:node:other-node" 2>/dev/null
openssl x509 -req -in "$T/node2.csr" -CA "$T/cp/pki/ca.crt" -CAkey "$T/cp/pki/ca.key" -CAcreateserial \
	-out "$T/node2.crt" -days 1 2>/dev/null
hostile "another node's certificate, the CA's (CN system:node:other-node)" 403 --cert "$T/node2.crt" \
	--key "$T/node2.key" "$K10250/pods"
hostile "a token the API server refuses" 401 -H 'Authorization: Bearer forged.token.value' "$K10250/pods"
hostile "path traversal in /containerLogs (..%2F, as is)" 404 "${as_admin[@]}" --path-as-is \
	"$K10250/containerLogs/default/..%2F..%2F..%2Fetc%2Fpasswd/app"
check "...and no file of the host in the answer" sh -c "! grep -q 'root:' '$T/hk.out'"
hostile "path traversal with plain ../ (as is)" 404 "${as_admin[@]}" --path-as-is \
	"$K10250/containerLogs/default/../../../etc/passwd"
hostile "a 64 KiB header" 431 "${as_admin[@]}" -H "X-Big: $(head -c 65536 /dev/zero | tr '\0' a)" "$K10250/pods"
hostile "an unknown path" 404 "${as_admin[@]}" "$K10250/../../etc/shadow" --path-as-is
hostile "an upgrade to SPDY on a path that takes none" 404 "${as_admin[@]}" -H 'Connection: Upgrade' \
	-H 'Upgrade: SPDY/3.1' "$K10250/healthz/nothing"
# 1,000 connections at once that send nothing, half a ClientHello, or the
# ClientHello a byte every 2-3 s (tests/unit/agent/api/http-hostile.py):
# each closed by the 10 s header deadline, while a fresh client's
# /healthz is asked every 0.5 s and answers as before: its median within
# 1 s and each one within 8 s. A server starved by the trickling clients
# answers only once the deadline has closed them (10 s); a busy machine
# only delays some answers (the kubelet server starts a thread per
# connection: the burst's first second cost the ASan build up to 1.3 s
# beside make test's two VM guests, 0.2 s on an idle machine, and one
# answer of 20 took 3.95 s in a clean-clone CI whose host was saturated
# by its two guests and a Go build; the median stays ~12 ms)
trickle=$(/usr/bin/python3 "$ROOT/tests/unit/agent/api/http-hostile.py" --tls "${K10250##*:}" \
	--ca "$T/cp/pki/ca.crt" --cert "$T/cp/pki/admin.crt" --key "$T/cp/pki/admin.key" --conns 1000 \
	--paths /healthz --status "${h0%% *}" --slow 8 --median 1 2>&1)
rc=$?
echo "$trickle" | sed 's/^#* */# /'
h=$(healthz_ms)
echo "# | 1,000 trickling TLS connections | $([ $rc = 0 ] && echo closed by the deadline || echo "exit $rc") | /healthz ${h%% *} in ${h#* } ms |"
is "$rc ${h%% *}" "0 ${h0%% *}" \
	"hostile: 1,000 trickling TLS connections: each closed by the header deadline, /healthz answering throughout (median under 1 s, each under 8 s)"
is "$(kc logs plain 2>&1)" \
	'Error from server (BadRequest): container "app" in pod "plain" is waiting to start: ContainerCreating' \
	"kubectl logs of a bound pod not started: the API server asked cubelet (TLS verified, its client certificate), kubelet's message"
contains "$(kc exec plain -- true 2>&1)" 'container not found ("app")' \
	"kubectl exec into it: cubelet's answer through the API server"
failed_big() { [ "$(pj big .status.phase)" = Failed ]; }
check "a bound pod that does not fit: Failed in the API" wait_until 20 failed_big
is "$(pj big .status.reason)" OutOfcpu "reason OutOfcpu (kubelet's)"
contains "$(pj big .status.message)" "Pod was rejected: Node didn't have enough resource: cpu" "kubelet's message"
ev_big() { kc get events --field-selector involvedObject.name=big -o json | jq -r '.items[] | "\(.reason) \(.type) \(.source.component)/\(.source.host) \(.involvedObject.uid)"'; }
has_ev_big() { [ -n "$(ev_big)" ]; }
check "its rejection is an Event in the API" wait_until 20 has_ev_big
is "$(ev_big | head -n 1)" "OutOfcpu Warning kubelet/$NODE $(pj big .metadata.uid)" \
	"reason, type, source {kubelet, the node} and the pod's UID, as kubelet's recorder"
# the ServiceAccount admission plugin gave pod sa the kube-api-access-* volume
SA_UID=$(pj sa .metadata.uid)
SA_VOL=$(pj sa '.spec.volumes[] | select(.name | startswith("kube-api-access-")) | .name')
SA_DIR=$T/a/state/pods/$SA_UID/volumes/kubernetes.io~projected/$SA_VOL
has_token() { [ -s "$SA_DIR/token" ] && [ -s "$SA_DIR/ca.crt" ] && [ -s "$SA_DIR/namespace" ]; }
check "a pod with the kube-api-access volume (ServiceAccount admission): token, ca.crt, namespace written" \
	wait_until 30 has_token
claims=$(cut -d. -f2 "$SA_DIR/token" | tr '_-' '/+' | awk '{ while (length($0) % 4) $0 = $0 "="; print }' | base64 -d 2>/dev/null)
is "$(echo "$claims" | jq -r '"\(.sub) \(.["kubernetes.io"].pod.name) \(.["kubernetes.io"].pod.uid) \(.["kubernetes.io"].node.name)"')" \
	"system:serviceaccount:default:default sa $SA_UID $NODE" \
	"the token: TokenRequest for the pod's service account, bound to the pod and the node"
is "$(cmp -s "$SA_DIR/ca.crt" "$T/cp/pki/ca.crt" && echo same)" same "ca.crt: the kube-root-ca.crt ConfigMap's, the cluster's CA"
is "$(cat "$SA_DIR/namespace") $(stat -c %a "$SA_DIR/..data/token")" "default 644" "namespace from the downward API; mode defaultMode 420"
sa_waiting() { [ "$(pj sa '.status.containerStatuses[0].state.waiting.reason')" = ContainerCreating ]; }
check "...and it goes on as any pod (ContainerCreating: no runtime here)" wait_until 20 sa_waiting
pod cmwait '' ', "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}]' |
	jq '.spec.volumes = [{"name": "cfg", "projected": {"sources": [{"configMap": {"name": "later", "items": [{"key": "k", "path": "k.txt"}]}}]}}]' |
	kc create -f - >/dev/null
CM_UID=$(pj cmwait .metadata.uid)
cm_failing() { [ "$(status_json a | jq -r .apiServer.waitingForVolumes)" -ge 1 ]; }
check "a projected ConfigMap that does not exist yet: the pod waits (not Failed), cubelet status counts it" wait_until 15 cm_failing
is "$(pj cmwait '.status.phase // "none"')" Pending "...its phase stays Pending"
ev_cm() { kc get events --field-selector involvedObject.name=cmwait -o json | jq -r '.items[] | "\(.reason): \(.message)"'; }
has_ev_cm() { [ -n "$(ev_cm)" ]; }
check "...with kubelet's FailedMount event" wait_until 20 has_ev_cm
is "$(ev_cm | head -n 1)" 'FailedMount: MountVolume.SetUp failed for volume "cfg" : configmap "later" not found' "its message"
kc create configmap later --from-literal=k=v1 >/dev/null
cm_file() { [ "$(cat "$T/a/state/pods/$CM_UID/volumes/kubernetes.io~projected/cfg/k.txt" 2>/dev/null)" = v1 ]; }
check "the ConfigMap created: the pod goes on (its watch sees it created), the key written" wait_until 20 cm_file
# configMap and secret volumes: keys to paths and modes, a Secret's bytes
# (base64 in the API, a NUL kept) on a tmpfs, never on disk
kc create configmap web-config --from-literal=mode=fast --from-literal=host=db >/dev/null
printf 'a\0b' >"$T/blob"
kc create secret generic creds --from-literal=password=s3cr3t --from-file=blob="$T/blob" >/dev/null
kc create secret generic other --from-literal=x=y >/dev/null
pod cfgvol '"automountServiceAccountToken": false,' \
	', "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}, {"name": "creds", "mountPath": "/etc/creds"}]' |
	jq '.spec.volumes = [{"name": "config", "configMap": {"name": "web-config", "items": [{"key": "mode", "path": "conf/mode", "mode": 384}]}},
		{"name": "creds", "secret": {"secretName": "creds", "defaultMode": 256}}]' | kc create -f - >/dev/null
CV=$T/a/state/pods/$(pj cfgvol .metadata.uid)/volumes
cv_files() { [ -s "$CV/kubernetes.io~configmap/config/conf/mode" ] && [ -s "$CV/kubernetes.io~secret/creds/password" ]; }
check "configMap and secret volumes: their files written (kubernetes.io~configmap, kubernetes.io~secret)" wait_until 30 cv_files
cv_files || { ls -laR "$CV" 2>&1 | head -40; status_json a | jq -c .apiServer.volumes; } | sed "s/^/# /"
is "$(cat "$CV/kubernetes.io~configmap/config/conf/mode") $(stat -c %a "$CV/kubernetes.io~configmap/config/..data/conf/mode")" \
	"fast 600" "configMap: the item's key at its path, with its mode"
is "$(cat "$CV/kubernetes.io~secret/creds/password") $(od -An -tx1 "$CV/kubernetes.io~secret/creds/blob" | tr -d ' \n') $(stat -c %a "$CV/kubernetes.io~secret/creds/..data/password")" \
	"s3cr3t 610062 400" "secret: every key, base64-decoded (a NUL byte kept), defaultMode 0400"
is "$(stat -f -c %T "$CV/kubernetes.io~secret/creds")" tmpfs "the Secret's volume is a tmpfs"
ncurl() { curl -s -o /dev/null -w '%{http_code}' --cacert "$T/cp/pki/ca.crt" --cert "$T/cp/pki/node.crt" \
	--key "$T/cp/pki/node.key" "https://127.0.0.1:6443/api/v1/namespaces/default/secrets/$1"; }
is "$(ncurl creds) $(ncurl other)" "200 403" "the node's credentials read the Secret its pod names, not another (Node authorizer)"
kc delete pod cfgvol --wait=false >/dev/null
cv_gone() { [ ! -e "$CV" ] && ! grep -q " $CV/" /proc/mounts; }
check "the pod deleted: its volumes removed, the Secret's tmpfs unmounted" wait_until 40 cv_gone
kc create configmap later --from-literal=k=v2 --dry-run=client -o yaml | kc replace -f - >/dev/null
cm_file2() { [ "$(cat "$T/a/state/pods/$CM_UID/volumes/kubernetes.io~projected/cfg/k.txt" 2>/dev/null)" = v2 ]; }
check "the ConfigMap changed: the volume written again within 15 s (its watch; kubelet's default Watch)" \
	wait_until 15 cm_file2
is "$(status_json a | jq '[.pods[] | select(.name == "mirror")] | length')" 0 "a mirror pod is never run"
orphan_gone() { ! kc get pod mirror >/dev/null 2>&1; }
check "...and, without its static pod, deleted (kubelet's orphaned mirror pods)" wait_until 20 orphan_gone
pod late '"automountServiceAccountToken": false,' '' | kc create -f - >/dev/null
late() { [ "$(pj late '.status.containerStatuses[0].state.waiting.reason')" = ContainerCreating ]; }
check "a pod created later comes through the watch" wait_until 10 late
kc patch pod plain --subresource=status --type=merge -p '{"status": {"phase": "Running"}}' >/dev/null
put_back() { [ "$(pj plain .status.phase)" = Pending ]; }
check "someone else writes a pod's status: cubelet's 10 s resync puts its own back (kubelet's status manager)" \
	wait_until 25 put_back
r1=$(status_json a | jq .apiServer.podStatus.resyncs)
p1=$(status_json a | jq .apiServer.podStatus.patches)
n1=$(status_json a | jq .apiServer.podStatus.renders)
sleep 12
is "$(($(status_json a | jq .apiServer.podStatus.resyncs) - r1))" 0 "...and a status the API server holds as sent is not sent again"
# the status tick renders a pod's status only when what it depends on changed
is "$(($(status_json a | jq .apiServer.podStatus.renders) - n1))" 0 "steady pods: no status rendered again in 12 s"
# startTime and PodScheduled's time are monotonic times made wall times: an
# offset read afresh each second flipped them between two seconds, and each
# flip was a PATCH (30 steady pods: 19 a second)
is "$(($(status_json a | jq .apiServer.podStatus.patches) - p1))" 0 "steady pods: no status PATCH in 12 s (their times do not move)"

# ---- mirror pods ------------------------------------------------------------------------------
cat >"$T/a/manifests/static.yaml" <<-EOF
	apiVersion: v1
	kind: Pod
	metadata: {name: static, labels: {app: static}}
	spec:
	  containers: [{name: app, image: localhost/cubelet/busybox:1, command: [sleep, "3600"]}]
EOF
SP=static-$NODE
mirror_uid() { kc get pod "$SP" -o json 2>/dev/null | jq -r 'select(.metadata.deletionTimestamp == null) | .metadata.uid // empty'; }
has_mirror() { [ -n "$(mirror_uid)" ]; }
check "a static pod gets its mirror pod" wait_until 20 has_mirror
is "$(pj "$SP" '"\(.metadata.annotations["kubernetes.io/config.mirror"] != null) \(.metadata.ownerReferences[0].kind)/\(.metadata.ownerReferences[0].name) \(.metadata.labels.app) \(.spec.nodeName)"')" \
	"true Node/$NODE static $NODE" "annotated kubernetes.io/config.mirror, owned by the Node, the static pod's labels"
seen=$(pj "$SP" '.metadata.annotations["kubernetes.io/config.seen"]')
check "and kubernetes.io/config.seen, when cubelet first saw it (RFC 3339, UTC: $seen)" \
	sh -c "echo '$seen' | grep -Eq '^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9](\.[0-9]*[1-9])?Z\$' &&
		[ \$(( \$(date +%s) - \$(date -d '$seen' +%s) )) -lt 60 ]"
mirror_waiting() { [ "$(pj "$SP" '.status.containerStatuses[0].state.waiting.reason')" = ContainerCreating ]; }
check "the mirror pod carries the static pod's status" wait_until 20 mirror_waiting
m1=$(mirror_uid)
kc delete pod "$SP" --wait=false >/dev/null
recreated() { [ -n "$(mirror_uid)" ] && [ "$(mirror_uid)" != "$m1" ]; }
check "kubectl delete of the mirror pod: made again (a new UID)" wait_until 40 recreated
cat >"$T/a/manifests/hugestatic.yaml" <<-EOF
	apiVersion: v1
	kind: Pod
	metadata: {name: hugestatic}
	spec:
	  containers: [{name: app, image: localhost/cubelet/busybox:1, resources: {requests: {cpu: "1000"}}}]
EOF
ev_static() { kc get events --field-selector "involvedObject.name=hugestatic-$NODE" -o json | jq -r '.items[] | "\(.reason) \(.source.component)/\(.source.host)"'; }
has_ev_static() { [ -n "$(ev_static)" ]; }
check "a static pod's events in the API too (kubelet's): its rejection" wait_until 20 has_ev_static
is "$(ev_static | head -n 1)" "OutOfcpu kubelet/$NODE" "reason and source"
rm "$T/a/manifests/hugestatic.yaml" "$T/a/manifests/static.yaml"
no_mirror() { ! kc get pod "$SP" >/dev/null 2>&1; }
check "the manifest removed: the mirror pod is deleted" wait_until 30 no_mirror

# ---- NodeRestriction ---------------------------------------------------------------------
run other --node-name other --kubeconfig "$T/cp/pki/node.kubeconfig"
forbidden() { grep -q 'API server: node registration: POST /api/v1/nodes: 403: nodes "other" is forbidden: node "'"$NODE"'" is not allowed to modify node "other"; retrying' "$T/other.log"; }
check "another node's name: the 403 is named (NodeRestriction)" wait_until 30 forbidden
sleep 5
is "$(grep -c 'node registration' "$T/other.log")" 1 "one journal line for the repeated 403, not one per retry"
contains "$(status_json other | jq -r .apiServer.error)" "403: nodes \"other\" is forbidden" \
	"cubelet status shows the error"
check "the other node was not created" sh -c "! '$KUBE' kubectl --kubeconfig '$T/cp/pki/admin.kubeconfig' get node other >/dev/null 2>&1"
stop other

# ---- the API server stops answering, and comes back ------------------------------------------
api=$(cat "$T/cp/apiserver.pid")
kill -STOP "$api"
sleep 25
kill -CONT "$api"
check "cubelet keeps running while the API server does not answer" kill -0 "$PID_a"
lost=$(grep -c 'API server: node lease' "$T/a.log")
check "the journal has the lease's failure once ($lost lines)" test "$lost" -ge 1 -a "$lost" -le 2
r3=$(renew)
check "the Lease is renewed again once the API server answers" wait_until 20 changed "$r3"
back() { grep -q 'API server: node lease: working again' "$T/a.log"; }
check "the journal says it works again" wait_until 5 back

# ---- a restart keeps the Node ------------------------------------------------------------
uid=$(jqn .metadata.uid)
stop a
t_away=$(date +%s)
unknown() { [ "$(jqn '.status.conditions[] | select(.type == "Ready") | .status')" = Unknown ]; }
check "cubelet stopped: the node controller marks the node Ready=Unknown" wait_until 100 unknown
away=$(($(date +%s) - t_away))
# 1.34's node-monitor-grace-period is 50 s from the last renewal (the Lease,
# every 10 s), seen by the controller's 5 s monitor period
check "...after its grace period, 1.34's 50 s: $away s after cubelet stopped (40 to 70)" \
	test "$away" -ge 40 -a "$away" -le 70
is "$(jqn '[.spec.taints[]? | select(.key == "node.kubernetes.io/unreachable")] | length > 0')" true \
	"...and taints it unreachable"
# without tlsCertFile this time: the kubelet server on a self-signed pair of its own
RUN_PORT=10251 run a --node-name "$NODE" --kubeconfig "$T/cp/pki/node.kubeconfig" --node-ip 127.0.0.1
exists() { grep -q "node '$NODE' exists (uid $uid); keeping it" "$T/a.log"; }
check "restarted: the existing Node is kept (409, then its UID)" wait_until 30 exists
is "$(jqn .metadata.uid)" "$uid" "the Node's UID is the same"
posted() { [ "$(jqn '.status.conditions[] | select(.type == "Ready") | .reason')" = KubeletNotReady ]; }
check "...and its Ready condition is cubelet's again (KubeletNotReady: no runtime here)" wait_until 30 posted
check "...its labels and annotations not PATCHed: none differs" \
	sh -c "! grep -q \"node '$NODE': .* labels and .* annotations differ\" '$T/a.log'"
# a quick restart (within the grace period): kubelet computes the status on
# the Node the API server has, so nothing changed sends no event and keeps
# each condition's lastTransitionTime
sufficient_memory() { [ "$(jqn '.status.conditions[] | select(.type == "MemoryPressure") | .status')" = False ]; }
wait_until 30 sufficient_memory
sleep 3 # the status tick sends the events of the restart above
ready_since=$(jqn '.status.conditions[] | select(.type == "Ready") | .lastTransitionTime')
mem_events=$(event_count NodeHasSufficientMemory)
stop a
RUN_PORT=10251 run a --node-name "$NODE" --kubeconfig "$T/cp/pki/node.kubeconfig" --node-ip 127.0.0.1
check "a quick restart: the existing Node is kept" wait_until 30 exists
sleep 12 # a status update (10 s) and the events' tick
is "$(jqn '.status.conditions[] | select(.type == "Ready") | .lastTransitionTime')" "$ready_since" \
	"...Ready's lastTransitionTime is kept (its status did not change: kubelet's)"
is "$(event_count NodeHasSufficientMemory)" "$mem_events" \
	"...and no condition event is sent again (NodeHasSufficientMemory: $mem_events)"
self_signed() { [ -s "$T/a/state/pki/kubelet.crt" ] && [ -s "$T/a/state/pki/kubelet.key" ]; }
check "no tlsCertFile: a self-signed serving certificate in the state directory (kubelet's)" wait_until 10 self_signed
is "$(openssl x509 -in "$T/a/state/pki/kubelet.crt" -noout -ext subjectAltName 2>/dev/null | tail -n 1 | tr -d ' ')" \
	"DNS:$NODE,IPAddress:127.0.0.1" "...for the node's name and address"
is "$(stat -c %a "$T/a/state/pki/kubelet.key")" 600 "...its key readable by root alone"
is "$(curl -s --max-time 20 --cacert "$T/a/state/pki/kubelet.crt" -H "Authorization: Bearer $tok" \
	-o /dev/null -w '%{http_code}' https://127.0.0.1:10251/stats/summary)" 200 \
	"...which serves (a client that trusts it, with the reader's token: 200)"
stop a

# ---- offlinePods: the last list's pods when the API server is unreachable at the start ------
# a kept the API's pods in its state directory (keep, the default, writes the
# file too): plain among them, the mirror pod not
plain_uid=$(pj plain .metadata.uid)
check "the pods file holds the API's pod plain (offlinePods: keep writes it too)" \
	grep -q "\"$plain_uid\"" "$T/a/state/api_pods"
check "...and no mirror pod" sh -c "! grep -q 'kubernetes.io/config.mirror' '$T/a/state/api_pods'"
sed 's|server: https://127.0.0.1:6443|server: https://127.0.0.1:6449|' "$T/cp/pki/node.kubeconfig" >"$T/dead.kubeconfig"
has_plain() { [ "$(status_json a | jq -r --arg u "$plain_uid" '[.pods[] | select(.uid == $u)] | length')" = 1 ]; }
RUN_CUBELET="offlinePods: start" run a --node-name "$NODE" --kubeconfig "$T/dead.kubeconfig" --node-ip 127.0.0.1
check "offlinePods: start, the API server unreachable (connection refused): the pod plain of the last list" \
	wait_until 20 has_plain
contains "$(cat "$T/a.log")" "API server: unreachable at the start: the" "the journal says so..."
contains "$(cat "$T/a.log")" "from '$T/a/state/api_pods' (offlinePods: start) until a list answers" \
	"...naming the file"
stop a
run a --node-name "$NODE" --kubeconfig "$T/dead.kubeconfig" --node-ip 127.0.0.1
list_failed() { grep -q 'API server: pods: list: ' "$T/a.log"; }
check "offlinePods: keep (the default, kubelet's): the list fails..." wait_until 20 list_failed
no_plain() { status_json a | jq -e --arg u "$plain_uid" '.pods and ([.pods[] | select(.uid == $u)] | length) == 0' >/dev/null; }
check "...and nothing starts from the file" no_plain
stop a

# ---- a pod that has ended in the API server is not run again --------------------------------
# (kubelet's pod workers after a restart: a terminal phase in the API and
# nothing running: terminated, never started; issue 105523)
pod ended '"automountServiceAccountToken": false,' '' | kc create -f - >/dev/null
kc patch pod ended --subresource=status --type=merge \
	-p '{"status": {"phase": "Failed", "reason": "Ended", "message": "ended before the start"}}' >/dev/null
ended_uid=$(pj ended .metadata.uid)
run a --node-name "$NODE" --kubeconfig "$T/cp/pki/node.kubeconfig" --node-ip 127.0.0.1
ended_seen() {
	[ "$(status_json a | jq -r --arg u "$ended_uid" '.pods[] | select(.uid == $u) | "\(.phase) \(.reason) \(.admitted)"')" = \
		"Failed Ended false" ]
}
check "a pod Failed in the API server before cubelet started: Failed with its reason, never admitted nor run" \
	wait_until 30 ended_seen
contains "$(cat "$T/a.log")" "pod default/ended (uid $ended_uid) is Failed in the API server: not run again" \
	"...the journal says so"
is "$(pj ended '"\(.status.phase) \(.status.reason) \(.status.message)"')" "Failed Ended ended before the start" \
	"...its status in the API is left as it was"
check "...and the pods file (offlinePods) leaves it out" sh -c "! grep -q '$ended_uid' '$T/a/state/api_pods'"

# ---- a deleted Node: no Lease owned by a UID that is gone (kubelet's SetNodeOwnerFunc) ---------
# the garbage collector deletes the Lease with its Node; kubelet GETs the Node
# for a new Lease's owner and creates none while the Node is missing (it
# churned: POST, GC, 404, POST ... every 10 s)
has_lease() { lease >/dev/null; }
check "the node's Lease before the Node is deleted" has_lease
kc delete node "$NODE" --wait=false >/dev/null
missing_seen() { grep -q "API server: node '$NODE' not found: no node lease until it is back" "$T/a.log"; }
check "the Node deleted: cubelet finds it missing at the next renewal (the journal says so)" wait_until 60 missing_seen
no_lease() { ! has_lease; }
check "...and its Lease is gone (the garbage collector)" wait_until 30 no_lease
sleep 25
check "...and not created again 25 s later (two renewals; kubelet makes none while the Node is missing)" no_lease
is "$(grep -c "node '$NODE' not found: no node lease" "$T/a.log")" 1 "...said once"
stop a
kc delete pod ended --wait=false >/dev/null

# ---- the Services' environment variables in real containers ----------------------------------------
# (the native lane's runtime: a private containerd, cgroupsPerQOS: false,
# host-network pods; kubelet's getServiceEnvVarMap: the master service's
# always, the namespace's with enableServiceLinks)
IMG=${IMAGES_DIR:-$ROOT/build/images}
SOCK=""
if [ -s "$IMG/busybox.tar" ] && command -v containerd >/dev/null &&
	SOCK=$("$ROOT/packaging/containerd/private-containerd.sh" start "$T/ctd" 2>"$T/ctd.log") &&
	ctr -a "$SOCK" -n k8s.io images import "$IMG/pause.tar" >/dev/null 2>&1 &&
	ctr -a "$SOCK" -n k8s.io images import "$IMG/busybox.tar" >/dev/null 2>&1; then
	echo '{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-svc", "namespace": "default"},
	       "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}' |
		kc create -f - >/dev/null
	mkdir -p "$T/out"
	envpod() { # envpod NAME LINKS
		cat <<-EOF
			{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$1", "namespace": "default"},
			 "spec": {"nodeName": "$NODE", "hostNetwork": true, "automountServiceAccountToken": false,
			  "enableServiceLinks": $2,
			  "volumes": [{"name": "out", "hostPath": {"path": "$T/out"}}],
			  "containers": [{"name": "app", "image": "localhost/cubelet/busybox:1",
			   "command": ["sh", "-c", "echo started \$0; env > /out/\$0.tmp && mv /out/\$0.tmp /out/\$0; exec sleep 3600", "$1"],
			   "env": [{"name": "API", "value": "https://\$(KUBERNETES_SERVICE_HOST):\$(KUBERNETES_SERVICE_PORT)"}],
			   "volumeMounts": [{"name": "out", "mountPath": "/out"}]}]}}
		EOF
	}
	envpod links true | kc create -f - >/dev/null
	envpod nolinks false | kc create -f - >/dev/null
	# docs/cluster.md's quick start: no --node-ip, the kubelet server on its
	# default address; the node's address is the default route's, not loopback
	RUN_PORT=10250 RUN_RUNTIME="unix://$SOCK" RUN_CONFIG="cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupRoot: /cubelet-cluster-$$
tlsCertFile: $T/cp/pki/kubelet.crt
tlsPrivateKeyFile: $T/cp/pki/kubelet.key
authentication: {x509: {clientCAFile: $T/cp/pki/ca.crt}}" run a --node-name "$NODE" \
		--kubeconfig "$T/cp/pki/node.kubeconfig"
	RUN_CONFIG=""
	wrote() { [ -s "$T/out/links" ] && [ -s "$T/out/nolinks" ]; }
	check "two API pods run in a real container (cgroupsPerQOS: false, host network)" wait_until 90 wrote
	advertised() { [ "$(jqn '.status.addresses[] | select(.type == "InternalIP") | .address')" = "$NODE_IP" ]; }
	check "the quick start: without --node-ip the Node advertises the default route's address ($NODE_IP, not loopback)" \
		wait_until 30 advertised
	is "$(kc logs links 2>&1)" "started links" \
		"...kubectl logs through the API server reaches the kubelet server at $NODE_IP:10250 (TLS verified both ways)"
	is "$(kc exec links -- echo exec-ok 2>&1)" "exec-ok" "...kubectl exec too (the runtime's stream proxied)"
	# the pod's Ready condition: no reason left from its False (a strategic
	# merge keeps what a patch leaves out; kubelet's patch nulls it), and
	# Ready=False set by another (the node lifecycle controller's
	# MarkPodsNotReady when a node misses its Lease) sent again by the
	# status resync every 10 s, as kubelet's status manager does
	ready_of() { kc get pod links -o json | jq -r '.status.conditions[] | select(.type == "Ready") | "\(.status) \(.reason // "-")"'; }
	ready_true() { [ "$(ready_of)" = "True -" ]; }
	check "...its Ready=True carries no reason (the ContainersNotReady of its False is nulled in the patch)" \
		wait_until 20 ready_true
	kc patch pod links --subresource=status --type=strategic \
		-p '{"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "NodeNotReady"}]}}' >/dev/null
	check "...Ready=False set by another (the node lifecycle controller's, a node that missed its Lease) is sent again by the 10 s status resync" \
		wait_until 25 ready_true
	# Ready waits for the runtime's network (no CNI configuration here), as kubelet's does
	contains "$(jqn '.status.conditions[] | select(.type == "Ready") | "\(.status) \(.message)"')" \
		"False container runtime network not ready: NetworkReady=false" \
		"...the node NotReady until containerd's network is (no CNI configuration here), kubelet's message"
	master=$(kc get svc kubernetes -o jsonpath='{.spec.clusterIP}')
	web=$(kc get svc web-svc -o jsonpath='{.spec.clusterIP}')
	is "$(grep -E '^(KUBERNETES_SERVICE_HOST|KUBERNETES_SERVICE_PORT|KUBERNETES_SERVICE_PORT_HTTPS|KUBERNETES_PORT|KUBERNETES_PORT_443_TCP_ADDR|API)=' "$T/out/links" | sort | tr '\n' ' ')" \
		"API=https://$master:443 KUBERNETES_PORT=tcp://$master:443 KUBERNETES_PORT_443_TCP_ADDR=$master KUBERNETES_SERVICE_HOST=$master KUBERNETES_SERVICE_PORT=443 KUBERNETES_SERVICE_PORT_HTTPS=443 " \
		"the master service's variables (client-go's in-cluster config reads them) and \$(VAR) over them"
	is "$(grep -E '^WEB_SVC_' "$T/out/links" | sort | tr '\n' ' ')" \
		"WEB_SVC_PORT=tcp://$web:80 WEB_SVC_PORT_80_TCP=tcp://$web:80 WEB_SVC_PORT_80_TCP_ADDR=$web WEB_SVC_PORT_80_TCP_PORT=80 WEB_SVC_PORT_80_TCP_PROTO=tcp WEB_SVC_SERVICE_HOST=$web WEB_SVC_SERVICE_PORT=80 WEB_SVC_SERVICE_PORT_HTTP=80 " \
		"the namespace's Service web-svc: kubelet's eight variables"
	is "$(grep -c '^KUBERNETES_SERVICE_HOST=' "$T/out/nolinks") $(grep -c '^WEB_SVC_' "$T/out/nolinks")" "1 0" \
		"enableServiceLinks: false: the master service's alone"
	is "$(status_json a | jq -r '.apiServer.services | "\(.synced) \(.error)"')" "true " \
		"cubelet status: the Services listed and watched"
	# shellcheck disable=SC1091
	. "$ROOT/tests/cluster/with-runtime.sh"
	pull_secrets
	static_beside_api
	streams
	# a Service made after the pods started changes nothing that runs (as kubelet:
	# the variables are a container's at its start)
	lid0=$(status_json a | jq -r '.pods[] | select(.name == "links") | .containers[0].id')
	echo '{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "late-svc", "namespace": "default"},
	       "spec": {"ports": [{"port": 81}]}}' | kc create -f - >/dev/null
	seen_late() { status_json a | jq -e '.apiServer.services.services >= 3' >/dev/null 2>&1; }
	check "a Service created after the pods started reaches cubelet (the watch)" wait_until 10 seen_late
	sleep 2
	is "$(status_json a | jq -r '.pods[] | select(.name == "links") | "\(.containers[0].id) \(.containers[0].restarts)"')" \
		"$lid0 0" "a Service created after the pod started: its container is the same, not restarted"
	# a restart without the API server (offlinePods: start): the container
	# made again gets the Services of the last list, kept in the state directory
	lid=$(status_json a | jq -r '.pods[] | select(.name == "links") | .containers[0].id')
	stop a
	check "the Services of the last list are kept in the state directory (api_services)" \
		grep -q '"web-svc"' "$T/a/state/api_services"
	ctr -a "$SOCK" -n k8s.io tasks kill -s SIGKILL "$lid" >/dev/null 2>&1
	rm -f "$T/out/links"
	RUN_RUNTIME="unix://$SOCK" RUN_CUBELET="offlinePods: start" RUN_CONFIG="cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupRoot: /cubelet-cluster-$$" run a --node-name "$NODE" --kubeconfig "$T/dead.kubeconfig" --node-ip 127.0.0.1
	RUN_CONFIG=""
	relinked() { [ -s "$T/out/links" ]; }
	check "offline (the API server unreachable, offlinePods: start): the killed container runs again" wait_until 60 relinked
	is "$(grep -E '^(KUBERNETES_SERVICE_HOST|WEB_SVC_SERVICE_PORT_HTTP)=' "$T/out/links" 2>/dev/null | sort | tr '\n' ' ')" \
		"KUBERNETES_SERVICE_HOST=$master WEB_SVC_SERVICE_PORT_HTTP=80 " "...with the Services' variables of the last list"
	stop a
	kc delete pod links nolinks --wait=false >/dev/null
	kc delete svc web-svc late-svc >/dev/null
	"$ROOT/packaging/containerd/private-containerd.sh" stop "$T/ctd" >/dev/null 2>&1
else
	nok "a private containerd with the images for the Service env check" "$(cat "$T/ctd.log" 2>/dev/null)" \
		"images: $IMG"
fi

# ---- a broken kubeconfig -------------------------------------------------------------------
sed 's/^current-context: .*/current-context: nowhere/' "$T/cp/pki/node.kubeconfig" >"$T/bad.kubeconfig"
out=$(timeout 20 "$CUBELET" run --config "$T/a/config.yaml" --manifest-dir "$T/a/manifests" \
	--runtime-endpoint "unix://$T/no-runtime.sock" --cgroup-root "$CGROOT/a" --node-name "$NODE" \
	--kubeconfig "$T/bad.kubeconfig" 2>&1)
contains "$out" "$T/bad.kubeconfig: contexts: no entry named 'nowhere'" "a kubeconfig without its context: named"

# ---- --node-labels that NodeRestriction refuses: kubelet's refusal at the start ---------------
out=$(timeout 20 "$CUBELET" run --config "$T/a/config.yaml" --manifest-dir "$T/a/manifests" \
	--runtime-endpoint "unix://$T/no-runtime.sock" --cgroup-root "$CGROOT/a" --node-name "$NODE" \
	--kubeconfig "$T/cp/pki/node.kubeconfig" --node-labels "node-role.kubernetes.io/worker=,team=a" 2>&1)
rc=$?
is "$rc $(echo "$out" | grep -c "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: \[node-role.kubernetes.io/worker\]")" \
	"2 1" "--node-labels node-role.kubernetes.io/worker=: refused at the start with kubelet's message (exit 2)"
echo "1..$n"
