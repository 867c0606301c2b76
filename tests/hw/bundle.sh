#!/bin/bash
# tests/hw/bundle.sh BUILD OUT: everything the real-hardware run (tests/hw/run.sh)
# needs on a bare machine that has only a kernel, cgroup v2 and glibc: cubelet,
# cubelet-gpu-plugin, the bench helpers, containerd, containerd-shim-runc-v2,
# runc, ctr, the test images, and the shared libraries they link (their ldd
# closure without glibc itself, which the target's newer one replaces), packed
# as OUT/hw.tar.xz (xz keeps it under the device tool's 64 MiB carry limit).
set -euo pipefail
B=${1:?usage: bundle.sh BUILD OUT}
OUT=${2:?usage: bundle.sh BUILD OUT}
stage=$(mktemp -d /tmp/cubelet-hw-XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/images" "$stage/cni" "$OUT"
bins=("$B/cubelet" "$B/cubelet-gpu-plugin" "$B/tests/vm/bench/cri-baseline" "$B/tests/vm/bench/cg-baseline"
	"$B/tests/vm/bench/pod-driver" "$(command -v containerd)" "$(command -v containerd-shim-runc-v2)"
	"$(command -v runc)" "$(command -v ctr)" "$(command -v jq)")
cp -L "${bins[@]}" "$stage/bin/"
# OLD_CUBELET=PATH: a second cubelet as bin/cubelet-old, for before/after figures in one run
if [ -n "${OLD_CUBELET:-}" ]; then
	cp -L "$OLD_CUBELET" "$stage/bin/cubelet-old"
	bins+=("$OLD_CUBELET")
fi
# KUBELET=PATH: the real kubelet as bin/kubelet (a static Go binary), for run.sh kubelet-density
[ -n "${KUBELET:-}" ] && cp -L "$KUBELET" "$stage/bin/kubelet"
# the pod network: Debian's containernetworking-plugins (static Go binaries)
cp -L /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback "$stage/cni/"
cp tests/hw/05-hw.conflist "$stage/"
# glibc's own objects stay the target's
skip='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64)\.so'
for f in "${bins[@]}"; do
	ldd "$f" | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
	basename "$lib" | grep -Eq "$skip" || cp -L "$lib" "$stage/lib/"
done
cp "$B/images/pause.tar" "$B/images/busybox.tar" "$stage/images/"
cp packaging/containerd/config.toml "$stage/"
cp tests/hw/run.sh tests/vm/bench/measure.sh packaging/cubelet.yaml "$stage/"
tar -C "$stage" -cJf "$OUT/hw.tar.xz" .
du -h "$OUT/hw.tar.xz"
