#!/bin/sh
# Installs the Debian packages the VM harness needs; idempotent (does nothing,
# and needs no network, when every package is already installed).
#   qemu-system-x86  the emulator (TCG: these machines have no KVM)
#   kmod             depmod/modprobe, to order the initramfs modules
#   cpio             to pack the initramfs
#   busybox-static   the initramfs userland
#   containerd runc  the runtime under test (the guest runs the host's copies)
#   containernetworking-plugins
#                    the pod network's CNI plugins (bridge, host-local,
#                    portmap, loopback in /usr/lib/cni), which containerd
#                    runs for every pod without hostNetwork
#   jq gdb           `make bench` reads `cubelet status -o json`, `cubelet plan`
#                    with jq, and calls malloc_trim(0) in cubelet through gdb
set -eu
PKGS="qemu-system-x86 kmod cpio busybox-static containerd runc containernetworking-plugins jq gdb"

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=""
for p in $PKGS; do
	installed "$p" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "vm-deps: missing packages:$missing (run 'make vm-deps' as root)" >&2
	exit 1
fi

# Another apt/dpkg run (an engineer's, or unattended upgrades) may hold the
# lock: wait for it instead of failing.
apt_retry() {
	n=0
	until "$@"; do
		n=$((n + 1))
		if [ "$n" -ge 30 ]; then
			echo "vm-deps: '$*' kept failing" >&2
			return 1
		fi
		echo "vm-deps: '$1' failed (dpkg lock held?); retrying in 10 s" >&2
		sleep 10
	done
}

echo "vm-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt_retry apt-get update -qq
# shellcheck disable=SC2086
apt_retry apt-get install -y -qq --no-install-recommends $missing >/dev/null
