#!/bin/bash
# The status publisher's cost (issue 42): N API pods (default 30) running in
# real containers (a private containerd, cgroupsPerQOS: false, host network)
# on a node of the real control plane, then cubelet's CPU (utime + stime of
# its process) over W seconds (default 60) of steady pods, with the status
# PATCHes and renders of that window (`cubelet status`: apiServer.podStatus).
# Each binary given runs in turn, ROUNDS times (default 2: A B A B), on the
# same control plane and containerd: a fresh state directory, the same pods
# made again. Figures printed, nothing asserted (a tool for closing notes:
# `git worktree add` the old commit, `make build/cubelet` there, pass both).
#
#   tests/cluster/bench-status.sh CUBELET_A [CUBELET_B ...]
set -u
[ $# -ge 1 ] || { echo "usage: bench-status.sh CUBELET [CUBELET ...]" >&2; exit 2; }
if [ -z "${CUBELET_TEST_NETNS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "bench-status: not root" >&2; exit 77; }
	exec unshare --net env CUBELET_TEST_NETNS=1 "$0" "$@"
fi
ip link set lo up
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KUBE=$ROOT/build/cluster/kube
IMG=${IMAGES_DIR:-$ROOT/build/images}
NODE=cubelet-node
N=${BENCH_PODS:-30}
W=${BENCH_WINDOW_S:-60}
ROUNDS=${BENCH_ROUNDS:-2}
BINS=()
for b in "$@"; do BINS+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")"); done
[ -x "$KUBE" ] || { echo "bench-status: build/cluster/kube is not built (make cluster-peers)" >&2; exit 77; }
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
T=$(mktemp -d /tmp/cubelet-bench-status-XXXXXX)
CGROOT=$CG/cubelet-bench-status-$$
PIDS=""
n=0
CUBELET=${BINS[0]}
# shellcheck disable=SC1091
. "$ROOT/tests/cluster/lib.sh"
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	"$ROOT/tests/cluster/control-plane.sh" stop -d "$T/cp" >/dev/null 2>&1
	"$ROOT/packaging/containerd/private-containerd.sh" stop "$T/ctd" >/dev/null 2>&1
	for g in /sys/fs/cgroup/*/"cubelet-bench-status-$$" /sys/fs/cgroup/"cubelet-bench-status-$$"; do
		[ -d "$g" ] && find "$g" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	find "$CGROOT" -depth -type d -exec rmdir {} + 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
kc() { "$KUBE" kubectl --kubeconfig "$T/cp/pki/admin.kubeconfig" "$@"; }

out=$("$ROOT/tests/cluster/control-plane.sh" start -b "$KUBE" -d "$T/cp" -n "$NODE" 2>&1) ||
	{ echo "the control plane did not start: $out" >&2; exit 1; }
SOCK=$("$ROOT/packaging/containerd/private-containerd.sh" start "$T/ctd" 2>"$T/ctd.log") &&
	ctr -a "$SOCK" -n k8s.io images import "$IMG/pause.tar" >/dev/null 2>&1 &&
	ctr -a "$SOCK" -n k8s.io images import "$IMG/busybox.tar" >/dev/null 2>&1 ||
	{ echo "the private containerd did not start: $(cat "$T/ctd.log")" >&2; exit 1; }
# a pod needs its namespace's service account (the controller manager makes it)
sa() { kc get serviceaccount default >/dev/null 2>&1; }
wait_until 60 sa || { echo "no service account default/default in 60 s" >&2; exit 1; }

pods() {
	for i in $(seq "$N"); do
		printf '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bench-%s", "namespace": "default"},
		 "spec": {"nodeName": "%s", "hostNetwork": true, "automountServiceAccountToken": false,
		  "enableServiceLinks": false, "terminationGracePeriodSeconds": 1,
		  "containers": [{"name": "app", "image": "localhost/cubelet/busybox:1", "command": ["sleep", "3600"]}]}}\n' \
			"$i" "$NODE"
	done
}
running() { [ "$(kc get pods -o json | jq '[.items[] | select(.status.phase == "Running")] | length')" = "$N" ]; }
none_left() { [ "$(kc get pods -o json | jq '.items | length')" = 0 ]; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
podstatus() { status_json "$1" | jq -r '.apiServer | "\(.podStatus.patches) \(.podStatus.renders) \(.statusTickCpuUsec)"'; }

printf '# cubelet status publisher bench, %s, %s API pods, %s s of steady pods, %s round(s)\n' \
	"$(date -u +%F)" "$N" "$W" "$ROUNDS"
for r in $(seq "$ROUNDS"); do
	for i in "${!BINS[@]}"; do
		CUBELET=${BINS[$i]}
		name=r${r}b$i
		RUN_RUNTIME="unix://$SOCK" RUN_CONFIG="cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupRoot: /cubelet-bench-status-$$" run "$name" --node-name "$NODE" \
			--kubeconfig "$T/cp/pki/node.kubeconfig" --node-ip 127.0.0.1
		pid=$(eval "echo \$PID_$name")
		pods | kc create -f - >/dev/null
		if ! wait_until 180 running; then
			echo "round $r, ${BINS[$i]}: the pods did not all run in 180 s" >&2
			exit 1
		fi
		sleep 15 # their last PATCHes out, the conditions' transitions past
		read -r p0 r0 t0 <<<"$(podstatus "$name")"
		c0=$(cpu_ticks "$pid")
		sleep "$W"
		c1=$(cpu_ticks "$pid")
		read -r p1 r1 t1 <<<"$(podstatus "$name")"
		hz=$(getconf CLK_TCK)
		printf '%-44s CPU %5d ms (%4.2f %% of a core)   status tick %8s   PATCHes %3d   renders %s\n' \
			"round $r: $(basename "$(dirname "${BINS[$i]}")")/$(basename "${BINS[$i]}")" \
			$(((c1 - c0) * 1000 / hz)) "$(awk -v c=$((c1 - c0)) -v hz="$hz" -v w="$W" 'BEGIN { print c * 100 / hz / w }')" \
			"$([ "$t0" = null ] && echo "n/a" || echo "$(((t1 - t0) / 1000)) ms")" \
			$((p1 - p0)) "$([ "$r0" = null ] && echo "n/a" || echo $((r1 - r0)))"
		kc delete pods --all --wait=false >/dev/null
		wait_until 120 none_left || echo "round $r: pods left after 120 s" >&2
		stop "$name"
	done
done
