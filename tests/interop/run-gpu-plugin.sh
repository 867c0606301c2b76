#!/bin/sh
# cubelet-gpu-plugin against Python's grpcio (Debian's python3-grpcio): a
# registration server in Python checks what the plugin registers, dials it
# back and drives ListAndWatch, Allocate and GetPreferredAllocation over
# the fake NVML ($B/tests/fakes/libnvidia-ml.so.1). TAP on stdout; 77: skip.
# Usage: tests/interop/run-gpu-plugin.sh BUILD_DIR [--bench]
set -u
B=${1:?usage: run-gpu-plugin.sh BUILD_DIR [--bench]}
shift
for f in "$B/cubelet-gpu-plugin" "$B/tests/fakes/libnvidia-ml.so.1"; do
        if [ ! -e "$f" ]; then
                echo "1..0 # SKIP '$f' is not built"
                exit 77
        fi
done
# shellcheck disable=SC1091
. tests/interop/lib.sh
"$PY" tests/interop/gpu_plugin.py --plugin "$B/cubelet-gpu-plugin" \
        --nvml "$B/tests/fakes/libnvidia-ml.so.1" --pb "$TMP" --tmp "$TMP" "$@"
