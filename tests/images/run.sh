#!/bin/sh
# tests/images/run.sh — checks packaging/images/build-images.sh and the pause program, without
# containerd. Builds the images twice into a temp dir and checks the OCI layouts, their digests,
# that the two builds are byte-identical, and how pause behaves. Speaks TAP; exit 77 = skipped.
#
# Needs: $CC (default cc) with a static libc, GNU tar, sha256sum, readelf, jq, busybox-static.
# The reaping check runs pause as PID 1 of a new PID namespace (unshare/nsenter, root only) and
# is reported as skipped elsewhere.
# shellcheck disable=SC2016 # $names in single quotes are jq's variables
set -u
export LC_ALL=C TZ=UTC

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILDER=$ROOT/packaging/images/build-images.sh
BUSYBOX=${BUSYBOX:-/bin/busybox}
export BUSYBOX

skip_all() {
        echo "1..0 # SKIP $*"
        echo "$*"
        exit 77
}
for t in jq readelf sha256sum tar; do
        command -v "$t" >/dev/null || skip_all "'$t' not installed (apt-get install jq binutils coreutils tar)"
done
[ -x "$BUSYBOX" ] || skip_all "'$BUSYBOX' not installed (apt-get install busybox-static)"

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
trap 'exit 1' HUP INT TERM

n=0
failed=0
pass() {
        n=$((n + 1))
        echo "ok $n - $1"
}
fail() {
        n=$((n + 1))
        failed=$((failed + 1))
        echo "not ok $n - $1"
        shift
        for line in "$@"; do
                echo "#   $line"
        done
}
skip() {
        n=$((n + 1))
        echo "ok $n - $1 # SKIP $2"
}
# check DESCRIPTION COMMAND... — one test point from a command's status.
check() {
        desc=$1
        shift
        if "$@" >"$T/check.out" 2>&1; then
                pass "$desc"
        else
                fail "$desc" "$(head -c 600 "$T/check.out")"
        fi
}

# ---- build twice ----------------------------------------------------------------------------
check "first build succeeds" "$BUILDER" "$T/b1"
check "second build succeeds" "$BUILDER" "$T/b2"
for f in pause.tar busybox.tar pause; do
        check "both builds produce '$f'" test -s "$T/b1/$f" -a -s "$T/b2/$f"
done
ETCD=${ETCD:-/usr/bin/etcd}
if [ -x "$ETCD" ]; then
        extra=1
        images="pause.tar busybox.tar etcd.tar pause"
else
        extra=0
        images="pause.tar busybox.tar pause"
fi
check "the build leaves no temporary files" sh -c "[ \$(ls -A '$T/b1' | wc -l) -eq $((3 + extra)) ]"
for f in $images; do
        check "'$f' is byte-identical across the two builds" cmp "$T/b1/$f" "$T/b2/$f"
done

# ---- OCI layout -----------------------------------------------------------------------------
sha() {
        sha256sum "$1" | cut -d ' ' -f 1
}
size() {
        wc -c <"$1" | tr -d ' '
}
# blob_ok DIR DIGEST SIZE — the blob exists, its sha256 is its name and its size is SIZE.
blob_ok() {
        b=$1/blobs/sha256/${2#sha256:}
        case $2 in
        sha256:*) ;;
        *)
                echo "digest '$2' is not sha256"
                return 1
                ;;
        esac
        [ -f "$b" ] || {
                echo "'$b' missing"
                return 1
        }
        [ "$(sha "$b")" = "${2#sha256:}" ] || {
                echo "'$b' has sha256 $(sha "$b")"
                return 1
        }
        [ "$(size "$b")" = "$3" ] || {
                echo "'$b' is $(size "$b") bytes, descriptor says $3"
                return 1
        }
}

# layout_checks NAME REF — the archive b1/NAME.tar is an OCI layout for REF.
layout_checks() {
        name=$1
        ref=$2
        L=$T/$name.layout
        mkdir -p "$L"
        if ! tar -xf "$T/b1/$name.tar" -C "$L" 2>"$T/tar.err"; then
                fail "$name: archive unpacks" "$(cat "$T/tar.err")"
                return
        fi
        check "$name: oci-layout is imageLayoutVersion 1.0.0" \
                jq -e '.imageLayoutVersion == "1.0.0"' "$L/oci-layout"
        check "$name: index.json is an OCI index with one manifest" \
                jq -e '.schemaVersion == 2 and .mediaType == "application/vnd.oci.image.index.v1+json"
                        and (.manifests | length) == 1
                        and .manifests[0].mediaType == "application/vnd.oci.image.manifest.v1+json"' \
                "$L/index.json"
        check "$name: index.json names the manifest '$ref' (ref.name annotation)" \
                jq -e --arg r "$ref" '.manifests[0].annotations["org.opencontainers.image.ref.name"] == $r
                        and .manifests[0].annotations["io.containerd.image.name"] == $r' "$L/index.json"
        check "$name: index.json gives the platform linux/<arch>" \
                jq -e '.manifests[0].platform.os == "linux" and (.manifests[0].platform.architecture | length) > 0' \
                "$L/index.json"

        mdig=$(jq -r '.manifests[0].digest' "$L/index.json")
        msize=$(jq -r '.manifests[0].size' "$L/index.json")
        check "$name: manifest blob's sha256 and size match its descriptor" blob_ok "$L" "$mdig" "$msize"
        M=$L/blobs/sha256/${mdig#sha256:}
        [ -f "$M" ] || return
        check "$name: manifest is an OCI image manifest with one uncompressed layer" \
                jq -e '.schemaVersion == 2 and .mediaType == "application/vnd.oci.image.manifest.v1+json"
                        and .config.mediaType == "application/vnd.oci.image.config.v1+json"
                        and (.layers | length) == 1
                        and .layers[0].mediaType == "application/vnd.oci.image.layer.v1.tar"' "$M"
        cdig=$(jq -r '.config.digest' "$M")
        ldig=$(jq -r '.layers[0].digest' "$M")
        check "$name: config blob's sha256 and size match its descriptor" \
                blob_ok "$L" "$cdig" "$(jq -r '.config.size' "$M")"
        check "$name: layer blob's sha256 and size match its descriptor" \
                blob_ok "$L" "$ldig" "$(jq -r '.layers[0].size' "$M")"
        check "$name: the archive holds exactly these three blobs" \
                sh -c "[ \$(ls '$L/blobs/sha256' | wc -l) -eq 3 ]"
        C=$L/blobs/sha256/${cdig#sha256:}
        [ -f "$C" ] || return
        check "$name: config rootfs.diff_ids == [layer digest]" \
                jq -e --arg l "$ldig" '.rootfs.type == "layers" and .rootfs.diff_ids == [$l]' "$C"
        check "$name: config platform matches the index" \
                jq -e --slurpfile i "$L/index.json" \
                '.os == $i[0].manifests[0].platform.os and .architecture == $i[0].manifests[0].platform.architecture' "$C"
        check "$name: config sets PATH" jq -e '.config.Env | any(startswith("PATH=/"))' "$C"
        LAYER=$L/blobs/sha256/${ldig#sha256:}
        tar -tvf "$LAYER" >"$T/$name.list" 2>&1
        check "$name: layer entries are owned by 0/0 with mtime 1970-01-01" \
                sh -c "! grep -v ' 0/0 .* 1970-01-01 00:00 ' '$T/$name.list'"
}

layout_checks pause localhost/cubelet/pause:1
C=$(jq -r '.manifests[0].digest' "$T/pause.layout/index.json" 2>/dev/null)
C=$(jq -r '.config.digest' "$T/pause.layout/blobs/sha256/${C#sha256:}" 2>/dev/null)
check "pause: config Entrypoint is [\"/pause\"]" \
        jq -e '.config.Entrypoint == ["/pause"]' "$T/pause.layout/blobs/sha256/${C#sha256:}"
check "pause: layer holds only /pause, mode 0755, identical to the built binary" \
        sh -c "grep -q '^-rwxr-xr-x 0/0 .* pause\$' '$T/pause.list' && [ \$(wc -l <'$T/pause.list') -eq 1 ] &&
                tar -xOf '$T/pause.layout/blobs/sha256/'\$(jq -r '.rootfs.diff_ids[0]' \
                '$T/pause.layout/blobs/sha256/${C#sha256:}' | cut -d: -f2) pause | cmp - '$T/b1/pause'"

layout_checks busybox localhost/cubelet/busybox:1
C=$(jq -r '.manifests[0].digest' "$T/busybox.layout/index.json" 2>/dev/null)
C=$(jq -r '.config.digest' "$T/busybox.layout/blobs/sha256/${C#sha256:}" 2>/dev/null)
check "busybox: config Cmd is [\"sh\"]" jq -e '.config.Cmd == ["sh"]' "$T/busybox.layout/blobs/sha256/${C#sha256:}"
check "busybox: layer holds bin/busybox and bin/sh -> busybox" \
        sh -c "grep -q '^-rwxr-xr-x .* bin/busybox\$' '$T/busybox.list' && grep -q ' bin/sh -> busybox\$' '$T/busybox.list'"
check "busybox: every applet of '$BUSYBOX --list' has its /bin link" \
        sh -c "for a in \$('$BUSYBOX' --list | grep -vx busybox); do grep -qF \" bin/\$a -> busybox\" '$T/busybox.list' || { echo \"no bin/\$a\"; exit 1; }; done"

# ---- etcd (Debian's etcd-server with its ldd closure) -------------------------------------------
if [ "$extra" = 1 ]; then
        layout_checks etcd localhost/cubelet/etcd:1
        C=$(jq -r '.manifests[0].digest' "$T/etcd.layout/index.json" 2>/dev/null)
        C=$(jq -r '.config.digest' "$T/etcd.layout/blobs/sha256/${C#sha256:}" 2>/dev/null)
        check "etcd: config Cmd is [\"etcd\"]" jq -e '.config.Cmd == ["etcd"]' "$T/etcd.layout/blobs/sha256/${C#sha256:}"
        check "etcd: layer holds usr/local/bin/etcd, mode 0755" \
                grep -q '^-rwxr-xr-x .* usr/local/bin/etcd$' "$T/etcd.list"
        check "etcd: layer holds every library ldd names for etcd, at its own path" \
                sh -c "for l in \$(ldd '$ETCD' | awk '\$2 == \"=>\" && \$3 ~ /^\\// { print \$3 } \$1 ~ /^\\// { print \$1 }'); do
                        grep -q \" \${l#/}\$\" '$T/etcd.list' || { echo \"no \$l\"; exit 1; }; done"
        check "etcd: layer has /tmp (1777) and /var/lib/etcd" \
                sh -c "grep -q '^drwxrwxrwt .* tmp/\$' '$T/etcd.list' && grep -q ' var/lib/etcd/\$' '$T/etcd.list'"
        mkdir -p "$T/etcd.rootfs"
        L=$(jq -r '.rootfs.diff_ids[0]' "$T/etcd.layout/blobs/sha256/${C#sha256:}" | cut -d: -f2)
        tar -xf "$T/etcd.layout/blobs/sha256/$L" -C "$T/etcd.rootfs" 2>/dev/null
        if [ "$(id -u)" = 0 ] && command -v chroot >/dev/null; then
                check "etcd: the image's etcd runs in its own root (chroot): etcd --version" \
                        sh -c "chroot '$T/etcd.rootfs' /usr/local/bin/etcd --version | grep -q '^etcd Version: '"
        else
                skip "etcd: the image's etcd runs in its own root" "chroot needs root"
        fi
else
        skip "etcd image" "'$ETCD' not installed (apt-get install etcd-server)"
fi

# ---- the pause program ----------------------------------------------------------------------
P=$T/b1/pause
check "pause is statically linked (no PT_INTERP)" sh -c "readelf -lW '$P' | grep -q 'LOAD' && ! readelf -lW '$P' | grep -q INTERP"
check "pause has no dynamic section" sh -c "readelf -dW '$P' | grep -q 'no dynamic section'"
check "pause -v exits 0 and prints its version" sh -c "'$P' -v | grep -q '^pause (cubelet) '"

# ready PID — PID runs pause and sleeps in sigwaitinfo(), so SIGTERM/SIGINT are blocked and
# taken synchronously. (SigBlk in /proc/PID/status cannot tell: while a task waits in
# sigwaitinfo() the kernel unblocks the waited set in that mask.) wchan names the wait where
# the kernel shows it; elsewhere the sleeping state after exec is the sign.
ready() {
        [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$P" ] || return 1
        st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c 1)
        [ "$st" = S ] || return 1
        wchan=$(cat "/proc/$1/wchan" 2>/dev/null) || return 0
        case $wchan in
        '' | 0) return 0 ;;
        *sigtimedwait*) return 0 ;;
        *) return 1 ;;
        esac
}
wait_ready() {
        i=0
        until ready "$1"; do
                i=$((i + 1))
                [ $i -gt 200 ] && return 1
                sleep 0.01
        done
}

# term_test SIGNAL — pause exits 0 within 1 s of SIGNAL.
term_test() {
        "$P" 2>"$T/pause.err" &
        pid=$!
        if ! wait_ready "$pid"; then
                kill -KILL "$pid" 2>/dev/null
                wait "$pid" 2>/dev/null
                fail "pause exits 0 within 1 s of SIG$1" "pause never reached sigwaitinfo()"
                return
        fi
        kill -"$1" "$pid"
        (
                sleep 1
                kill -KILL "$pid" 2>/dev/null
        ) &
        dog=$!
        wait "$pid"
        rc=$?
        kill "$dog" 2>/dev/null
        wait "$dog" 2>/dev/null
        if [ "$rc" -eq 0 ]; then
                pass "pause exits 0 within 1 s of SIG$1"
        else
                fail "pause exits 0 within 1 s of SIG$1" "exit status $rc" "$(cat "$T/pause.err")"
        fi
}
term_test TERM
term_test INT

# Reaping: pause as PID 1 of a new PID namespace inherits orphans and must reap them.
reap_test() {
        desc="pause reaps orphans as PID 1 of a PID namespace"
        if [ ! -x "$P" ]; then
                fail "$desc" "'$P' was not built"
                return
        fi
        if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null || ! command -v nsenter >/dev/null; then
                skip "$desc" "needs root, unshare and nsenter"
                return
        fi
        unshare --pid --fork "$P" 2>"$T/pause.err" &
        upid=$!
        i=0
        pp=
        while [ -z "$pp" ] && [ $i -lt 200 ]; do
                pp=$(tr -d ' ' 2>/dev/null <"/proc/$upid/task/$upid/children")
                i=$((i + 1))
                [ -n "$pp" ] || sleep 0.01
        done
        if [ -z "$pp" ] || ! wait_ready "$pp"; then
                kill -KILL "$upid" 2>/dev/null
                wait "$upid" 2>/dev/null
                skip "$desc" "cannot create a PID namespace here"
                return
        fi
        # Two orphans: sh starts them and exits, so they are reparented to pause.
        nsenter --target "$pp" --pid -- /bin/sh -c 'sleep 0.5 & sleep 0.5 & exit 0'
        before=$(wc -w <"/proc/$pp/task/$pp/children")
        sleep 1.2
        after=$(wc -w <"/proc/$pp/task/$pp/children")
        # shellcheck disable=SC2013 # the file is one line of space-separated pids
        zombies=$(for c in $(cat "/proc/$pp/task/$pp/children"); do sed 's/^.*) //' "/proc/$c/stat"; done | grep -c '^Z')
        kill -TERM "$pp"
        wait "$upid"
        rc=$?
        if [ "$before" -eq 2 ] && [ "$after" -eq 0 ] && [ "$zombies" -eq 0 ]; then
                pass "$desc"
        else
                fail "$desc" "children before: $before, after: $after, zombies: $zombies"
        fi
        if [ "$rc" -eq 0 ]; then
                pass "pause as PID 1 exits 0 on SIGTERM from the parent namespace"
        else
                fail "pause as PID 1 exits 0 on SIGTERM from the parent namespace" "exit status $rc"
        fi
}
reap_test

echo "1..$n"
[ "$failed" -eq 0 ]
