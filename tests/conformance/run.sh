#!/bin/bash
# Kubernetes' own conformance tests (e2e.test 1.34.4, make conformance-peers) against one node
# agent, cubelet or the real kubelet 1.34.4, on the native lane: the real control plane
# (tests/cluster/control-plane.sh, every controller), a private containerd with the suite's images
# (tests/conformance/images.sh) and a runtime handler named test-handler, the pod network, and the
# agent as the cluster's one node conformance-node at 192.0.2.2 (a veth of the run's network
# namespace: TEST-NET-1, nothing outside the run), with cgroupsPerQOS: false. Everything runs in
# the sandbox of tests/native/sandbox.sh (its own PID, network, mount and UTS namespaces).
#
#   tests/conformance/run.sh BUILD_DIR cubelet|kubelet OUT_DIR
# CONFORMANCE_FOCUS: a ginkgo focus regex; CONFORMANCE_LABELS: a label filter (default the node
# conformance set: Conformance && (sig-node || sig-storage) && !Serial && !Disruptive && !Slow);
# CONFORMANCE_LIST: a file of test names (tests/conformance/fast.txt), the focus instead;
# CONFORMANCE_SHARD=i/n: the i-th of n parts of the selected tests (1-based); CONFORMANCE_TIMEOUT:
# ginkgo's timeout (default 3h); CONFORMANCE_ARGS: more e2e.test arguments (--ginkgo.seed N, the
# seed a run prints, repeats its order). Writes OUT_DIR/junit.xml, OUT_DIR/results.tsv (test, passed|
# failed|skipped, seconds), the e2e log and the agent's; prints TAP, a line per test.
set -u
B=${1:?usage: run.sh BUILD_DIR cubelet|kubelet OUT_DIR}
AGENT=${2:?usage: run.sh BUILD_DIR cubelet|kubelet OUT_DIR}
OUT=${3:?usage: run.sh BUILD_DIR cubelet|kubelet OUT_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KUBE=$ROOT/build/cluster/kube
PEERS=$ROOT/build/conformance
NODE=conformance-node
NODE_IP=192.0.2.2
n=0
# shellcheck disable=SC1091
. "$ROOT/tests/cluster/lib.sh"
# shellcheck disable=SC1091
. "$ROOT/tests/native/sandbox.sh"

if [ -z "${CONFORMANCE_SANDBOX:-}" ]; then
	[ "$(id -u)" = 0 ] || skip "not root"
	command -v containerd >/dev/null && command -v etcd >/dev/null || skip "containerd and etcd (make deps)"
	[ -x "$KUBE" ] || skip "no $KUBE (make cluster-peers)"
	[ -x "$PEERS/e2e.test" ] || skip "no $PEERS/e2e.test (make conformance-peers)"
	case $AGENT in cubelet | kubelet) ;; *) skip "agent '$AGENT': cubelet or kubelet" ;; esac
	mkdir -p "$OUT"
	OUT=$(cd "$OUT" && pwd)
fi
sandbox_enter CONFORMANCE_SANDBOX "$0" "$B" "$AGENT" "$OUT"

T=$(mktemp -d /tmp/cubelet-conformance-XXXXXX)
cleanup() {
	[ -n "${PID_AGENT:-}" ] && kill "$PID_AGENT" 2>/dev/null && wait "$PID_AGENT" 2>/dev/null
	"$ROOT/tests/cluster/control-plane.sh" stop -d "$T/cp" >/dev/null 2>&1
	"$ROOT/packaging/containerd/private-containerd.sh" stop "$T/ctd" >/dev/null 2>&1
	sandbox_umount "$T"
	sandbox_clean_groups
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
fail() { nok "$1" "${@:2}"; echo "1..$n"; exit 1; }

if ! err=$(sandbox_mounts "$T" "$NODE" 2>&1); then
	fail "the sandbox's private mounts" "$err"
fi
ip link add node0 type veth peer name node0p && ip link set node0p up && ip addr add "$NODE_IP/24" dev node0 &&
	ip link set node0 up && ip route add default via 192.0.2.1 || fail "the node's address $NODE_IP"

# the images: the project's (the sandbox image) and the suite's
if ! err=$("$ROOT/tests/conformance/images.sh" "$PEERS" "$T/images" 2>&1); then
	fail "the suite's images build" "$err"
fi
export CNI_CONF_DIR=$T/cni/conf
export CONTAINERD_EXTRA='[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.test-handler]
  runtime_type = "io.containerd.runc.v2"'
SOCK=$("$ROOT/packaging/containerd/private-containerd.sh" start "$T/ctd" 2>"$T/ctd.err") ||
	fail "a private containerd starts" "$(cat "$T/ctd.err")"
for tar in "$ROOT/build/images/pause.tar" "$T"/images/e2e-*.tar; do
	ctr -a "$SOCK" -n k8s.io images import "$tar" >/dev/null 2>>"$T/ctd.err" || fail "import $tar" "$(tail -n 3 "$T/ctd.err")"
done
ok "the sandbox, a private containerd with the suite's images ($(ls "$T"/images/e2e-*.tar | wc -l)) and test-handler"

export NODE_IP
out=$("$ROOT/tests/cluster/control-plane.sh" start -b "$KUBE" -d "$T/cp" -n "$NODE" 2>&1) ||
	fail "the control plane starts" "$out"
ok "the control plane: $out"
P=$T/cp/pki
kc() { "$KUBE" kubectl --kubeconfig "$P/admin.kubeconfig" "$@"; }

mkdir -p "$T/logs"
cat >"$T/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://$SOCK
podLogsDir: $T/logs
tlsCertFile: $P/kubelet.crt
tlsPrivateKeyFile: $P/kubelet.key
authentication: {x509: {clientCAFile: $P/ca.crt}, webhook: {enabled: true}, anonymous: {enabled: false}}
authorization: {mode: Webhook}
clusterDomain: cluster.local
failSwapOn: false
EOF
if [ "$AGENT" = kubelet ]; then
	"$KUBE" kubelet --config "$T/config.yaml" --kubeconfig "$P/node.kubeconfig" --hostname-override "$NODE" \
		--node-ip "$NODE_IP" >"$OUT/agent.log" 2>&1 &
else
	echo "cubelet: {devicePluginDir: \"\", socket: $T/cubelet.sock, cniConfDir: $CNI_CONF_DIR}" >>"$T/config.yaml"
	"$ROOT/$B/cubelet" run --config "$T/config.yaml" --kubeconfig "$P/node.kubeconfig" --node-name "$NODE" \
		--node-ip "$NODE_IP" --cgroup-root /sys/fs/cgroup >"$OUT/agent.log" 2>&1 &
fi
PID_AGENT=$!
ready() { [ "$(kc get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; }
check "$AGENT registers $NODE and it turns Ready" wait_until 120 ready
ready || fail "$NODE is not Ready" "$(tail -n 20 "$OUT/agent.log")"

labels=${CONFORMANCE_LABELS:-Conformance && (sig-node || sig-storage) && !Serial && !Disruptive && !Slow}
e2e() {
	KUBE_TEST_REPO_LIST=$ROOT/tests/conformance/repo-list.yaml "$PEERS/e2e.test" \
		--kubeconfig "$P/admin.kubeconfig" --provider skeleton --report-dir "$OUT" \
		--ginkgo.label-filter "$labels" --ginkgo.no-color --disable-log-dump --allowed-not-ready-nodes 0 "$@"
}
focus=${CONFORMANCE_FOCUS:-}
if [ -n "${CONFORMANCE_LIST:-}" ]; then
	focus=$(/usr/bin/python3 "$ROOT/tests/conformance/junit.py" --list "$CONFORMANCE_LIST") ||
		fail "the test names of $CONFORMANCE_LIST"
fi
if [ -n "${CONFORMANCE_SHARD:-}" ]; then
	# the selected tests' names (a dry run), every n-th from the i-th: one focus of their names
	e2e ${focus:+--ginkgo.focus "$focus"} --ginkgo.dry-run --ginkgo.junit-report "$T/all.xml" >/dev/null 2>&1
	focus=$(/usr/bin/python3 "$ROOT/tests/conformance/junit.py" --shard "$CONFORMANCE_SHARD" "$T/all.xml") ||
		fail "shard $CONFORMANCE_SHARD of the selected tests"
fi
t0=$(date +%s)
e2e ${focus:+--ginkgo.focus "$focus"} --ginkgo.junit-report "$OUT/junit.xml" \
	--ginkgo.timeout "${CONFORMANCE_TIMEOUT:-3h}" --ginkgo.flake-attempts 1 ${CONFORMANCE_ARGS:-} >"$OUT/e2e.log" 2>&1
rc=$?
# the order of the tests (ginkgo randomises it): CONFORMANCE_ARGS="--ginkgo.seed N" repeats it
echo "# $(grep -m1 '^Random Seed' "$OUT/e2e.log")"
wall=$(($(date +%s) - t0))
/usr/bin/python3 "$ROOT/tests/conformance/junit.py" "$OUT/junit.xml" >"$OUT/results.tsv" ||
	fail "the suite wrote $OUT/junit.xml (e2e.test exit $rc)" "$(tail -n 20 "$OUT/e2e.log")"
while IFS=$'\t' read -r name result secs; do
	case $result in
	passed) ok "$name (${secs} s)" ;;
	skipped) ;; # (not selected: thousands)
	*)
		# why: the failure, the events and restart counts of its namespace, and the agent's
		# lines about that namespace (its pods' IPs, hooks, probes, kills)
		mapfile -t why < <(/usr/bin/python3 "$ROOT/tests/conformance/junit.py" --why "$OUT/junit.xml" "$name" 2>&1 | head -n 40)
		ns=$(printf '%s\n' "${why[@]}" | sed -n 's/^namespace: //p')
		[ -n "$ns" ] && mapfile -t -O "${#why[@]}" why < <(grep -F "$ns/" "$OUT/agent.log" | tail -n 20)
		nok "$name (${secs} s)" "${why[@]}"
		;;
	esac
done <"$OUT/results.tsv"
echo "# $AGENT: $(grep -c $'\tpassed\t' "$OUT/results.tsv") passed, $(grep -c $'\tfailed\t' "$OUT/results.tsv") failed in $wall s (e2e.test exit $rc)"
check "$AGENT is still running" kill -0 "$PID_AGENT"
echo "1..$n"
