#!/bin/sh
# tests/conformance/images.sh PEERS_DIR OUTDIR — the images Kubernetes' node conformance tests
# run, built here without a registry or docker, under the names tests/conformance/repo-list.yaml
# maps the suite's registries to (localhost/e2e/NAME:VERSION, the versions of e2e.test 1.34's
# test/utils/image/manifest.go):
#   pause:3.10.1        the project's static pause (packaging/images/pause.c)
#   busybox:1.37.0-1    Debian's busybox-static, as packaging/images/build-images.sh builds it
#   agnhost:2.56        busybox's root + /agnhost (PEERS_DIR/agnhost, make conformance-peers)
#                       + the host's curl and its libraries (the hooks of the lifecycle tests)
#                       + /localhost.crt and /localhost.key (PEERS_DIR, upstream's, netexec's TLS);
#                       Entrypoint ["/agnhost"], Cmd ["pause"], as upstream's
#   httpd:2.4.38-4      busybox's root + /usr/local/bin/httpd-foreground (busybox httpd -f on
#                       port 80 over /usr/local/apache2/htdocs, "It works!"), Cmd ["httpd-foreground"]
#   nonewprivs:1.3      busybox's root + /usr/local/bin/nnp (PEERS_DIR/nonewprivs, setuid root),
#                       Cmd ["nnp"], as upstream's
# Prints "REF DIGEST ARCHIVE" per image. Environment: BUSYBOX, CC, SOURCE_DATE_EPOCH as
# build-images.sh.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 PEERS_DIR OUTDIR" >&2; exit 2; }
PEERS=$1
OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$HERE/../..
REG=localhost/e2e
BUSYBOX=${BUSYBOX:-/bin/busybox}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0}
DEFAULT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C TZ=UTC
umask 022
for b in agnhost nonewprivs localhost.crt localhost.key; do
	[ -r "$PEERS/$b" ] || { echo "images.sh: no $PEERS/$b (make conformance-peers)" >&2; exit 1; }
done

mkdir -p "$OUT"
# pause and busybox under the suite's names
PAUSE_REF=$REG/pause:3.10.1 BUSYBOX_REF=$REG/busybox:1.37.0-1 ETCD=/nonexistent \
	"$REPO/packaging/images/build-images.sh" "$OUT/base" 2>/dev/null | grep -v '^$'
mv "$OUT/base/pause.tar" "$OUT/e2e-pause.tar"
mv "$OUT/base/busybox.tar" "$OUT/e2e-busybox.tar"
rm -rf "$OUT/base"

platform='"architecture":"amd64","os":"linux"'
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
WORK=$(mktemp -d "$OUT/.build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# shellcheck disable=SC1091
. "$REPO/packaging/images/oci-lib.sh"

# busybox_root DIR: /bin/busybox and its applets, /tmp, /etc/passwd and /etc/group with root
busybox_root() {
	mkdir -p "$1/bin" "$1/tmp" "$1/etc" "$1/usr/local/bin"
	chmod 1777 "$1/tmp"
	cp "$BUSYBOX" "$1/bin/busybox"
	chmod 0755 "$1/bin/busybox"
	set -f
	for a in $("$BUSYBOX" --list); do
		case $a in busybox | */* | '') continue ;; esac
		ln -s busybox "$1/bin/$a"
	done
	set +f
	printf 'root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$1/etc/passwd"
	printf 'root:x:0:\ngroup-defined-in-image:x:50000:user-defined-in-image\nnobody:x:65534:\n' >"$1/etc/group"
}
# image NAME REF ROOT CONFIG_BODY
image() {
	# shellcheck disable=SC2046
	rtar "$3" "$WORK/$1.layer.tar" $(cd "$3" && ls -A)
	d=$(oci_archive "e2e-$1" "$2" "$WORK/$1.layer.tar" "$4")
	echo "$2 $d $OUT/e2e-$1.tar"
}

r=$WORK/agnhost.root
busybox_root "$r"
cp "$PEERS/agnhost" "$r/agnhost"
chmod 0755 "$r/agnhost"
ln -s agnhost "$r/agnhost-2"
cp "$PEERS/localhost.crt" "$PEERS/localhost.key" "$r/"
# upstream's agnhost image (alpine) has curl: the lifecycle-hook tests' hooks run it
curl=$(command -v curl)
mkdir -p "$r/usr/bin"
cp "$curl" "$r/usr/bin/curl"
copy_libs "$r" "$curl"
mkdir -p "$r/uploads"
image agnhost "$REG/agnhost:2.56" "$r" \
	"\"Env\":[\"PATH=$DEFAULT_PATH\"],\"Entrypoint\":[\"/agnhost\"],\"Cmd\":[\"pause\"],\"WorkingDir\":\"/\""

r=$WORK/httpd.root
busybox_root "$r"
mkdir -p "$r/usr/local/apache2/htdocs"
echo '<html><body><h1>It works!</h1></body></html>' >"$r/usr/local/apache2/htdocs/index.html"
printf '#!/bin/sh\nexec httpd -f -p 80 -h /usr/local/apache2/htdocs\n' >"$r/usr/local/bin/httpd-foreground"
chmod 0755 "$r/usr/local/bin/httpd-foreground"
image httpd "$REG/httpd:2.4.38-4" "$r" \
	"\"Env\":[\"PATH=$DEFAULT_PATH\"],\"Cmd\":[\"httpd-foreground\"],\"ExposedPorts\":{\"80/tcp\":{}},\"WorkingDir\":\"/usr/local/apache2\""

r=$WORK/nonewprivs.root
busybox_root "$r"
cp "$PEERS/nonewprivs" "$r/usr/local/bin/nnp"
chmod 4755 "$r/usr/local/bin/nnp"
image nonewprivs "$REG/nonewprivs:1.3" "$r" \
	"\"Env\":[\"PATH=$DEFAULT_PATH\"],\"Cmd\":[\"nnp\"],\"WorkingDir\":\"/\""
