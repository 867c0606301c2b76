#!/bin/sh
# `cubelet run` against a grpcio device plugin whose Allocate hangs: the
# loop, /healthz, /pods and other pods go on; the pod is rejected at the
# deadline with kubelet's message; the next pod gets the devices. TAP; 77
# without python3-grpcio, root or a cgroup2 mount.
set -u
B=${1:?usage: run-device-agent.sh BUILD_DIR}
# shellcheck disable=SC1091
. tests/interop/lib.sh
"$PY" tests/interop/dm-agent-hang.py --cubelet "$B/cubelet" --pb "$TMP" --tmp "$TMP"
