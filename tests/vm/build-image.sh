#!/bin/sh
# Builds the VM image into VM_DIR (default build/vm):
#   VM_DIR/kernel/         Debian's kernel package, extracted with dpkg -x
#                          (+ modules.dep from depmod); the guest sees its
#                          modules at /lib/modules/<abi> through a symlink
#   VM_DIR/vmlinuz         the kernel
#   VM_DIR/initrd.img      busybox + the virtio/9p/overlay modules + tests/vm/init
#   VM_DIR/kernel-abi      the ABI name, e.g. 6.1.0-56-amd64
# The kernel is the one `linux-image-amd64` depends on right now; once
# extracted it is kept (delete VM_DIR/kernel, or set VM_KERNEL_REFRESH=1, to
# pick up a newer one). Needs the packages of tests/vm/deps.sh.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
VM_DIR=${VM_DIR:-build/vm}
mkdir -p "$VM_DIR"
VM_DIR=$(cd "$VM_DIR" && pwd)
KDIR=$VM_DIR/kernel

die() {
	echo "vm-image: $*" >&2
	exit 1
}

# ---- kernel ------------------------------------------------------------------
resolve_kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-.*-amd64$/ { print $2; exit }'
}

if [ "${VM_KERNEL_REFRESH:-0}" = 1 ] || [ ! -s "$VM_DIR/kernel-abi" ] || [ ! -f "$KDIR/.complete" ]; then
	pkg=$(resolve_kernel_pkg)
	if [ -z "$pkg" ]; then
		# A fresh machine may have no package lists yet.
		apt-get update -qq >/dev/null 2>&1 || true
		pkg=$(resolve_kernel_pkg)
	fi
	[ -n "$pkg" ] || die "cannot resolve the kernel package (apt-cache depends linux-image-amd64)"
	abi=${pkg#linux-image-}
	echo "vm-image: kernel package $pkg"
	rm -rf "$VM_DIR/dl" "$KDIR"
	mkdir -p "$VM_DIR/dl" "$KDIR"
	# apt-get download drops privileges to _apt where it can; let it write here.
	chmod 0777 "$VM_DIR/dl"
	(cd "$VM_DIR/dl" && apt-get download -q "$pkg") 2>&1 |
		grep -v '^W: Download is performed unsandboxed' || true
	deb=""
	for f in "$VM_DIR/dl/${pkg}_"*.deb; do
		[ -f "$f" ] && deb=$f
	done
	[ -n "$deb" ] || die "apt-get download $pkg produced no .deb"
	dpkg -x "$deb" "$KDIR"
	[ -f "$KDIR/boot/vmlinuz-$abi" ] || die "no boot/vmlinuz-$abi in $deb"
	depmod -b "$KDIR" "$abi"
	rm -f "$deb"
	echo "$abi" >"$VM_DIR/kernel-abi"
	touch "$KDIR/.complete"
fi
abi=$(cat "$VM_DIR/kernel-abi")
MODDIR=$KDIR/lib/modules/$abi
# Replace files by rename: a VM may be starting from them right now.
cp "$KDIR/boot/vmlinuz-$abi" "$VM_DIR/vmlinuz.tmp"
mv "$VM_DIR/vmlinuz.tmp" "$VM_DIR/vmlinuz"

# ---- initramfs ---------------------------------------------------------------
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || die "no $BUSYBOX (package busybox-static)"
file_is_static() { ! ldd "$1" >/dev/null 2>&1; }
file_is_static "$BUSYBOX" || die "$BUSYBOX is dynamically linked (install busybox-static)"

STAGE=$VM_DIR/initramfs.d
rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$STAGE/dev" "$STAGE/proc" "$STAGE/sys" "$STAGE/modules"
cp "$BUSYBOX" "$STAGE/bin/busybox"
cp "$HERE/init" "$STAGE/init"
chmod 0755 "$STAGE/init" "$STAGE/bin/busybox"
# The kernel opens /dev/console before /init runs.
mknod -m 600 "$STAGE/dev/console" c 5 1 2>/dev/null || true

# The modules the initramfs needs, with their dependencies, in load order
# (modprobe --show-depends prints "insmod PATH" lines, dependencies first).
: >"$STAGE/modules/order"
for m in virtio_pci 9pnet_virtio 9p overlay; do
	modprobe -d "$KDIR" -S "$abi" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | while read -r path; do
	name=$(basename "$path")
	grep -qx "$name" "$STAGE/modules/order" && continue
	case $name in
	*.ko) cp "$path" "$STAGE/modules/$name" ;;
	*.ko.xz) xz -dc "$path" >"$STAGE/modules/${name%.xz}"; name=${name%.xz} ;;
	*.ko.zst) zstd -qdc "$path" >"$STAGE/modules/${name%.zst}"; name=${name%.zst} ;;
	*) die "unexpected module file $path" ;;
	esac
	echo "$name" >>"$STAGE/modules/order"
done
[ -s "$STAGE/modules/order" ] || die "no modules found under $MODDIR"
echo "vm-image: initramfs modules: $(tr '\n' ' ' <"$STAGE/modules/order")"

(cd "$STAGE" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$VM_DIR/initrd.img.tmp"
mv "$VM_DIR/initrd.img.tmp" "$VM_DIR/initrd.img"
echo "vm-image: $VM_DIR/vmlinuz ($abi), $VM_DIR/initrd.img ($(wc -c <"$VM_DIR/initrd.img") bytes)"
