#!/bin/sh
# private-containerd.sh start|stop DIR — a throw-away containerd for tests, beside (never instead
# of) the host's own: root, state, socket and config all live under DIR.
#
#   start DIR   derive DIR/config.toml from packaging/containerd/config.toml, start containerd,
#               wait for it to answer; prints the socket path (DIR/containerd.sock)
#   stop DIR    kill every task it runs, stop it, unmount what it left, remove DIR
#
# The derived config differs from the node config only where a test host needs it:
#   - root/state/socket/opt paths under DIR;
#   - restrict_oom_score_adj = true when this process lacks CAP_SYS_RESOURCE (cri-deviceplugin-
#     facts.md 0.4), otherwise runc fails to set the sandbox's oom_score_adj of -998;
#   - netns_mounts_under_state_dir = true: the sandboxes' network namespaces are mounted under
#     DIR/state, not the host's /run/netns, so that stop unmounts them with the rest (a stop
#     with sandboxes still there left their /run/netns/cni-* mounts on the host).
# SystemdCgroup = false is already the node setting, and works on cgroup v1 hosts whose PID 1 is
# not systemd (facts 0.5).
#
# Environment: CONTAINERD (default containerd), CTR (default ctr); CNI_CONF_DIR, when set, the CNI
# configuration directory instead of the node's /etc/cni/net.d (a test with a pod network of its own);
# CONTAINERD_EXTRA, TOML appended to the derived configuration (another runtime handler).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
CONTAINERD=${CONTAINERD:-containerd}
CTR=${CTR:-ctr}

usage() {
        echo "usage: $0 start|stop DIR" >&2
        exit 2
}
[ $# -eq 2 ] || usage
cmd=$1
case $2 in
/*) DIR=$2 ;;
*) DIR=$(pwd)/$2 ;;
esac
SOCK=$DIR/containerd.sock

die() {
        echo "private-containerd: $*" >&2
        exit 1
}

# A pid is alive when it exists and is not a zombie waiting for its parent.
alive() {
        [ -r "/proc/$1/stat" ] && ! sed 's/^.*) //' "/proc/$1/stat" | grep -q '^Z'
}

has_cap_sys_resource() {
        eff=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
        [ $(((0x$eff >> 24) & 1)) -eq 1 ]
}

start() {
        command -v "$CONTAINERD" >/dev/null || die "'$CONTAINERD' not found (apt-get install containerd runc)"
        [ ! -e "$DIR/containerd.pid" ] || die "'$DIR/containerd.pid' exists: already started?"
        # A unix socket path has at most 107 bytes; containerd adds ".ttrpc" for its second socket.
        [ ${#SOCK} -le 100 ] || die "socket path '$SOCK' is too long, use a shorter DIR"
        mkdir -p "$DIR"
        restrict=false
        has_cap_sys_resource || restrict=true
        sed -e "s|^root = .*|root = \"$DIR/root\"|" \
                -e "s|^state = .*|state = \"$DIR/state\"|" \
                -e "s|^  address = .*|  address = \"$SOCK\"|" \
                -e "s|^    path = \"/var/lib/containerd/opt\"|    path = \"$DIR/opt\"|" \
                -e "s|^    restrict_oom_score_adj = .*|    restrict_oom_score_adj = $restrict|" \
                -e 's|^  \[plugins."io.containerd.grpc.v1.cri"\]$|&\n    netns_mounts_under_state_dir = true|' \
                -e "s|^      conf_dir = .*|      conf_dir = \"${CNI_CONF_DIR:-/etc/cni/net.d}\"|" \
                "$HERE/config.toml" >"$DIR/config.toml"
        [ -z "${CONTAINERD_EXTRA:-}" ] || printf '\n%s\n' "$CONTAINERD_EXTRA" >>"$DIR/config.toml"
        "$CONTAINERD" --config "$DIR/config.toml" --address "$SOCK" --root "$DIR/root" \
                --state "$DIR/state" >"$DIR/containerd.log" 2>&1 &
        echo $! >"$DIR/containerd.pid"
        i=0
        until "$CTR" -a "$SOCK" version >/dev/null 2>&1; do
                i=$((i + 1))
                if [ $i -gt 100 ] || ! alive "$(cat "$DIR/containerd.pid")"; then
                        tail -n 20 "$DIR/containerd.log" >&2
                        die "containerd did not come up on '$SOCK'"
                fi
                sleep 0.1
        done
        echo "$SOCK"
}

stop() {
        [ -d "$DIR" ] || return 0
        if [ -S "$SOCK" ]; then
                # Shims outlive containerd, so end every task first.
                for ns in $("$CTR" -a "$SOCK" namespaces ls -q 2>/dev/null); do
                        for c in $("$CTR" -a "$SOCK" -n "$ns" containers ls -q 2>/dev/null); do
                                "$CTR" -a "$SOCK" -n "$ns" tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true
                                "$CTR" -a "$SOCK" -n "$ns" tasks rm -f "$c" >/dev/null 2>&1 || true
                                "$CTR" -a "$SOCK" -n "$ns" containers rm "$c" >/dev/null 2>&1 || true
                        done
                done
        fi
        if [ -f "$DIR/containerd.pid" ]; then
                pid=$(cat "$DIR/containerd.pid")
                if kill -TERM "$pid" 2>/dev/null; then
                        i=0
                        while alive "$pid" && [ $i -lt 100 ]; do
                                i=$((i + 1))
                                sleep 0.1
                        done
                        kill -KILL "$pid" 2>/dev/null || true
                fi
                rm -f "$DIR/containerd.pid"
        fi
        # Snapshot and sandbox mounts left behind, deepest first.
        awk -v d="$DIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
                umount -l "$m" 2>/dev/null || true
        done
        rm -rf "$DIR"
}

case $cmd in
start) start ;;
stop) stop ;;
*) usage ;;
esac
