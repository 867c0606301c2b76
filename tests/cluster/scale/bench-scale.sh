#!/bin/bash
# make bench-scale: hollow cubelets and kubemark's hollow kubelets, N at a
# time, each kind alone against a fresh control plane (bench-scale.py), in a
# network namespace of the run's own (every address loopback), then
# docs/scale.md's tables and plot from the results (render.py).
#
#   tests/cluster/scale/bench-scale.sh BUILD_DIR OUT
#   env: SCALE_NODES (10,100,500,1000; "": none), SCALE_COUNTS (0,110,250,500
#        pods on one node; "": none), SCALE_KINDS (cubelet,kubelet),
#        SCALE_WINDOW (60 s; SCALE_DENSITY_WINDOW for the pods per node), SCALE_PODS
#        (10 per node), SCALE_POD_TIMEOUT (900 s for each Deployment), SCALE_DOC (docs/scale.md
#        rewritten; empty: OUT/scale.md)
set -u
B=${1:?usage: bench-scale.sh BUILD_DIR OUT}
OUT=${2:?usage: bench-scale.sh BUILD_DIR OUT}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
if [ -z "${CUBELET_TEST_NETNS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "bench-scale: needs root (a network namespace, cgroups)" >&2; exit 1; }
	exec unshare --net env CUBELET_TEST_NETNS=1 "$0" "$@"
fi
ip link set lo up
command -v etcd >/dev/null || { echo "bench-scale: etcd (etcd-server) is missing: make deps" >&2; exit 1; }
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG" ] || { echo "bench-scale: no cgroup2 mount" >&2; exit 1; }
mkdir -p "$OUT"
# every cubelet (sd-event's inotify) and every kubemark node (fsnotify) holds
# an inotify instance: the kernel's default of 128 per user stops the 129th
# ("event sources: Too many open files"). Raised for the run, put back after.
inst=$(cat /proc/sys/fs/inotify/max_user_instances)
if [ "$inst" -lt 8192 ]; then
	echo 8192 >/proc/sys/fs/inotify/max_user_instances
	trap 'echo "$inst" >/proc/sys/fs/inotify/max_user_instances' EXIT
fi
# each hollow node holds a few dozen descriptors: a thousand of them and the
# API server's connections outgrow a login shell's 1,024
ulimit -n "$(ulimit -Hn)"
[ -z "${SCALE_NODES-x}" ] || /usr/bin/python3 "$ROOT/tests/cluster/scale/bench-scale.py" run --build "$B" --out "$OUT" --cgroup "$CG" \
	--nodes "${SCALE_NODES:-10,100,500,1000}" --kinds "${SCALE_KINDS:-cubelet,kubelet}" \
	--window "${SCALE_WINDOW:-60}" --pods "${SCALE_PODS:-10}" --pod-timeout "${SCALE_POD_TIMEOUT:-900}" || exit 1
# pods per node: one node of each kind, idle at each count
[ -z "${SCALE_COUNTS-x}" ] || /usr/bin/python3 "$ROOT/tests/cluster/scale/bench-scale.py" run --build "$B" --out "$OUT" --cgroup "$CG" \
	--nodes 1 --kinds "${SCALE_KINDS:-cubelet,kubelet}" --counts "${SCALE_COUNTS:-0,110,250,500}" --max-pods 510 \
	--window "${SCALE_DENSITY_WINDOW:-${SCALE_WINDOW:-60}}" --pods 0 || exit 1
DOC=${SCALE_DOC-$ROOT/docs/scale.md}
[ -n "$DOC" ] || DOC=$OUT/scale.md
/usr/bin/python3 "$ROOT/tests/cluster/scale/bench-scale.py" render "$OUT/results.json" "$DOC" \
	"$(dirname "$DOC")/scale-apiserver-cpu.png"
