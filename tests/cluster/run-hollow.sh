#!/bin/bash
# make bench-scale's harness, small: 3 hollow cubelets (the real cubelet on
# one fake-CRI process's sockets) and 3 of kubemark's hollow kubelets, each
# kind alone against a fresh control plane (tests/cluster/scale/bench-scale.py
# with 3 nodes, 3 pods each, a 10 s window), in a network namespace of its
# own. Checks what the scale figures rest on: every node registers and is
# Ready, holds its Lease, runs its pods and lets them go, and is measured.
# TAP; 77 without root, a cgroup2 mount, etcd or Go.
#
#   tests/cluster/run-hollow.sh BUILD_DIR
set -u
B=${1:?usage: run-hollow.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${CUBELET_TEST_NETNS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP not root"; exit 77; }
	exec unshare --net env CUBELET_TEST_NETNS=1 "$0" "$@"
fi
ip link set lo up
n=0
# shellcheck disable=SC1091
. "$ROOT/tests/cluster/lib.sh"
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG" ] || skip "no cgroup2 mount"
command -v etcd >/dev/null || skip "etcd (etcd-server) is missing"
PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || skip "no Go toolchain for the control plane"
if ! timeout 600 make -C "$ROOT" --no-print-directory cluster-peers >/dev/null 2>&1; then
	skip "build/cluster/kube or hollow did not build within 10 min (make cluster-peers; a cold Go cache)"
fi
T=$(mktemp -d /tmp/cubelet-hollow-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
ulimit -n "$(ulimit -Hn)"
out=$(/usr/bin/python3 "$ROOT/tests/cluster/scale/bench-scale.py" run --build "$B" --out "$T" --cgroup "$CG" \
	--nodes 3 --kinds cubelet,kubelet --window 10 --settle 5 --baseline 6 --pods 3 --pod-timeout 120 2>&1)
rc=$?
is "$rc" 0 "bench-scale.py ran both kinds"
[ "$rc" = 0 ] || echo "$out" | sed 's/^/# /'
R=$T/results.json
q() { jq -r "$1" "$R" 2>/dev/null; }
for kind in cubelet kubelet; do
	r=".results[] | select(.kind == \"$kind\")"
	is "$(q "$r | .error // \"none\"")" none "$kind: no error"
	is "$(q "$r | \"\(.started) \(.ready) \(.alive)\"")" "3 3 3" "$kind: 3 hollow nodes started, Ready, alive through the window"
	is "$(q "$r | \"\(.lease_late) \(.lease_missed)\"")" "0 0" "$kind: every Lease renewed in time (sampled every 5 s)"
	is "$(q "$r | \"\(.pods_ready)/\(.pods) \(.pods_left)\"")" "9/9 0" "$kind: 9 pods ready, then none left after the Deployment's deletion"
	check "$kind: the nodes' CPU and memory measured" test "$(q "$r | (.node_private_mb > 0 and .cpu_nodes > 0)")" = true
	check "$kind: the API server's requests measured" test "$(q "$r | (.req_s > 0 and .node_req_s > 0)")" = true
done
# the figures themselves are make bench-scale's (a release build; make test's
# cubelet is ASan's, its memory several times larger; status writes per pod
# depend on how the pods' starts fall between status ticks): said, not asserted
c='.results[] | select(.kind == "cubelet")'
k='.results[] | select(.kind == "kubelet")'
echo "# private memory per node: cubelet $(q "$c | .node_private_mb") MiB, kubelet $(q "$k | .node_private_mb") MiB"
echo "# status writes per pod: cubelet $(q "$c | .status_writes_per_pod"), kubelet $(q "$k | .status_writes_per_pod")"
echo "1..$n"
