#!/bin/sh
# cubelet-gpu-plugin against Python's grpcio (Debian's python3-grpcio): a
# registration server in Python checks what the plugin registers, dials it
# back and drives ListAndWatch, Allocate and GetPreferredAllocation over
# the fake NVML ($B/tests/fakes/libnvidia-ml.so.1). TAP on stdout; 77: skip.
# Usage: tests/interop/run-gpu-plugin.sh BUILD_DIR [--bench]
set -u
B=${1:?usage: run-gpu-plugin.sh BUILD_DIR [--bench]}
shift
PY=/usr/bin/python3
if ! "$PY" -c 'import grpc, google.protobuf' 2>/dev/null; then
        echo "1..0 # SKIP python3-grpcio or python3-protobuf is not installed"
        exit 77
fi
if ! command -v protoc >/dev/null; then
        echo "1..0 # SKIP protoc (protobuf-compiler) is not installed"
        exit 77
fi
for f in "$B/cubelet-gpu-plugin" "$B/tests/fakes/libnvidia-ml.so.1"; do
        if [ ! -e "$f" ]; then
                echo "1..0 # SKIP '$f' is not built"
                exit 77
        fi
done
tmp=$(mktemp -d /tmp/gpu-interop-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
protoc --python_out="$tmp" -I. proto/deviceplugin/api.proto || exit 1
"$PY" tests/interop/gpu_plugin.py --plugin "$B/cubelet-gpu-plugin" \
        --nvml "$B/tests/fakes/libnvidia-ml.so.1" --pb "$tmp" --tmp "$tmp" "$@"
