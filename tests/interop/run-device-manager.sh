#!/bin/sh
# `cubelet devices` (the device manager of deviceplugin/) against a grpcio
# device plugin: registration, ListAndWatch, GetPreferredAllocation, Allocate,
# refused registrations, a live kubelet.sock. TAP; 77 without python3-grpcio.
set -u
B=${1:?usage: run-device-manager.sh BUILD_DIR}
# shellcheck disable=SC1091
. tests/interop/lib.sh
"$PY" tests/interop/dm-device-manager.py --cubelet "$B/cubelet" --pb "$TMP" --tmp "$TMP"
