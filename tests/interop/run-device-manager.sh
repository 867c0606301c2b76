#!/bin/sh
# `cubelet devices` (the device manager of deviceplugin/) against a grpcio
# device plugin: registration, ListAndWatch, GetPreferredAllocation, Allocate,
# refused registrations, a live kubelet.sock. TAP; 77 without python3-grpcio.
set -u
B=${1:?usage: run-device-manager.sh BUILD_DIR}
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import grpc, google.protobuf' 2>/dev/null; then
        echo "1..0 # SKIP python3-grpcio or python3-protobuf is missing"
        exit 77
fi
if ! command -v protoc >/dev/null; then
        echo "1..0 # SKIP protoc is missing"
        exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if ! protoc --python_out="$TMP" -I. proto/deviceplugin/api.proto; then
        echo "not ok 1 - protoc --python_out proto/deviceplugin/api.proto"
        echo "1..1"
        exit 1
fi
"$PY" tests/interop/dm-device-manager.py --cubelet "$B/cubelet" --pb "$TMP" --tmp "$TMP"
