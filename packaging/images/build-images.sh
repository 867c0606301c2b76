#!/bin/sh
# build-images.sh OUTDIR — the node's local images, built without a registry or docker.
#
# Writes:
#   OUTDIR/pause        the static pause program (packaging/images/pause.c, compiled with $CC)
#   OUTDIR/pause.tar    OCI image archive, ref localhost/cubelet/pause:1
#                       one layer: /pause; config Entrypoint ["/pause"]
#   OUTDIR/busybox.tar  OCI image archive, ref localhost/cubelet/busybox:1
#                       one layer: /bin/busybox (Debian busybox-static) + /bin/<applet> -> busybox
#                       symlinks + /tmp; config Cmd ["sh"], Env PATH
#   OUTDIR/etcd.tar     OCI image archive, ref localhost/cubelet/etcd:1 (only where Debian's
#                       etcd-server is installed: $ETCD, default /usr/bin/etcd)
#                       one layer: /usr/local/bin/etcd and etcdctl (etcd-client, when installed)
#                       as upstream's registry.k8s.io/etcd has them, their ldd closure (the
#                       dynamic loader and libc) at the same paths, /tmp, /var/lib/etcd;
#                       config Cmd ["etcd"], Env PATH
#
# Import on a node (names must be fully qualified, see cri-deviceplugin-facts.md 0.6):
#   ctr -n k8s.io images import OUTDIR/pause.tar
#   ctr -n k8s.io images import OUTDIR/busybox.tar
# Each archive's index.json names its manifest with both org.opencontainers.image.ref.name and
# io.containerd.image.name set to the full reference, so a plain `ctr images import` stores it
# under that name; `--index-name localhost/cubelet/pause:1` works as well.
#
# Reproducible: every tar entry has mtime $SOURCE_DATE_EPOCH (default 0), owner 0:0, sorted names
# and explicit modes, and the JSON documents are fixed text, so the same inputs ($CC, busybox-static
# version) give byte-identical archives and digests.
#
# Environment: CC (default cc), BUSYBOX (default /bin/busybox), ETCD, ETCDCTL (default
#              /usr/bin/etcd, /usr/bin/etcdctl), SOURCE_DATE_EPOCH (default 0),
#              PAUSE_REF, BUSYBOX_REF, ETCD_REF (image names, defaults above).
set -eu

usage() {
        echo "usage: $0 OUTDIR" >&2
        exit 2
}
[ $# -eq 1 ] || usage
OUT=$1

HERE=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-cc}
BUSYBOX=${BUSYBOX:-/bin/busybox}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0}
PAUSE_REF=${PAUSE_REF:-localhost/cubelet/pause:1}
BUSYBOX_REF=${BUSYBOX_REF:-localhost/cubelet/busybox:1}
ETCD=${ETCD:-/usr/bin/etcd}
ETCDCTL=${ETCDCTL:-/usr/bin/etcdctl}
ETCD_REF=${ETCD_REF:-localhost/cubelet/etcd:1}
DEFAULT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

export LC_ALL=C TZ=UTC
umask 022

die() {
        echo "build-images: $*" >&2
        exit 1
}

case $SOURCE_DATE_EPOCH in
'' | *[!0-9]*) die "SOURCE_DATE_EPOCH '$SOURCE_DATE_EPOCH' is not a number of seconds" ;;
esac
[ -x "$BUSYBOX" ] || die "'$BUSYBOX' not found or not executable (apt-get install busybox-static)"
command -v sha256sum >/dev/null || die "sha256sum not found"
tar --version 2>/dev/null | grep -q 'GNU tar' || die "GNU tar is needed (--sort, --mtime, --owner)"

# OCI platform of this host (busybox is the host's binary, so the image is the host's too).
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
variant=
case $arch in
amd64 | x86_64) arch=amd64 ;;
arm64 | aarch64) arch=arm64 ;;
armhf | armv7l) arch=arm variant=v7 ;;
i386 | i686) arch=386 ;;
ppc64el | ppc64le) arch=ppc64le ;;
s390x | riscv64 | mips64el) ;;
*) die "unknown architecture '$arch'" ;;
esac
platform="\"architecture\":\"$arch\",\"os\":\"linux\""
[ -n "$variant" ] && platform="$platform,\"variant\":\"$variant\""
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

mkdir -p "$OUT"
WORK=$(mktemp -d "$OUT/.build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 1' HUP INT TERM

# rtar, sha256, size, oci_archive (OUT, WORK, platform, created set above)
# shellcheck disable=SC1091
. "$HERE/oci-lib.sh"

# ---- pause ------------------------------------------------------------------------------------
# Its own flags, not the project's CFLAGS: the binary must be static, stripped and independent of
# the build variant (an ASan pause could not run in an empty image).
"$CC" -std=c17 -D_GNU_SOURCE -Os -Wall -Wextra -Werror -static -s \
        -o "$WORK/pause" "$HERE/pause.c" || die "compiling '$HERE/pause.c' with '$CC' failed"
if readelf -l "$WORK/pause" 2>/dev/null | grep -q INTERP; then
        die "'$CC' did not link pause statically (is libc6-dev's libc.a installed?)"
fi
mkdir -p "$WORK/pause.root"
cp "$WORK/pause" "$WORK/pause.root/pause"
chmod 0755 "$WORK/pause.root/pause"
rtar "$WORK/pause.root" "$WORK/pause.layer.tar" pause
pause_digest=$(oci_archive pause "$PAUSE_REF" "$WORK/pause.layer.tar" \
        "\"Env\":[\"PATH=$DEFAULT_PATH\"],\"Entrypoint\":[\"/pause\"],\"WorkingDir\":\"/\"")
cp "$WORK/pause" "$OUT/pause.tmp"
mv "$OUT/pause.tmp" "$OUT/pause"

# ---- busybox ----------------------------------------------------------------------------------
bb=$WORK/busybox.root
mkdir -p "$bb/bin" "$bb/tmp"
chmod 1777 "$bb/tmp"
cp "$BUSYBOX" "$bb/bin/busybox"
chmod 0755 "$bb/bin/busybox"
applets=$("$BUSYBOX" --list) || die "'$BUSYBOX --list' failed"
set -f # applet names such as '[' and '[[' are not patterns
for a in $applets; do
        case $a in
        busybox | */* | '') continue ;;
        esac
        ln -s busybox "$bb/bin/$a"
done
set +f
rtar "$bb" "$WORK/busybox.layer.tar" bin tmp
busybox_digest=$(oci_archive busybox "$BUSYBOX_REF" "$WORK/busybox.layer.tar" \
        "\"Env\":[\"PATH=$DEFAULT_PATH\"],\"Cmd\":[\"sh\"],\"WorkingDir\":\"/\"")

# ---- etcd -------------------------------------------------------------------------------------
# Debian's etcd-server binary (and etcd-client's etcdctl) with the shared libraries ldd names, at
# their own paths, so the dynamic loader finds them in the image as on the host.
etcd_digest=
if [ -x "$ETCD" ]; then
        command -v ldd >/dev/null || die "ldd not found (libc-bin)"
        er=$WORK/etcd.root
        mkdir -p "$er/usr/local/bin" "$er/tmp" "$er/var/lib/etcd"
        chmod 1777 "$er/tmp"
        chmod 0700 "$er/var/lib/etcd"
        bins=$ETCD
        cp "$ETCD" "$er/usr/local/bin/etcd"
        if [ -x "$ETCDCTL" ]; then
                cp "$ETCDCTL" "$er/usr/local/bin/etcdctl"
                bins="$bins $ETCDCTL"
        fi
        chmod 0755 "$er"/usr/local/bin/*
        # shellcheck disable=SC2086 # bins is a list
        copy_libs "$er" $bins
        # shellcheck disable=SC2046 # top-level entries, sorted by rtar
        rtar "$er" "$WORK/etcd.layer.tar" $(cd "$er" && ls -A)
        etcd_digest=$(oci_archive etcd "$ETCD_REF" "$WORK/etcd.layer.tar" \
                "\"Env\":[\"PATH=$DEFAULT_PATH\"],\"Cmd\":[\"etcd\"],\"WorkingDir\":\"/\"")
fi

echo "$PAUSE_REF $pause_digest $OUT/pause.tar"
echo "$BUSYBOX_REF $busybox_digest $OUT/busybox.tar"
if [ -n "$etcd_digest" ]; then
        echo "$ETCD_REF $etcd_digest $OUT/etcd.tar"
else
        echo "build-images: '$ETCD' not found: no etcd image (apt-get install etcd-server)" >&2
fi
