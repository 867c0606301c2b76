# shellcheck shell=bash
# What the native lane's suites share (tests/native/run.sh, probes-logs.sh):
# the checks for root, containerd and the images; the groups of runs that
# died, removed; a private containerd with the local images; cubelet's
# configuration and its status. The run owns what it starts: its containerd
# (root, state, socket under T), cubelet (killed by PID), its cgroups (below
# /cubelet-native-PID in every hierarchy), its files.
#
#   . tests/native/lib.sh; native_init BUILD_DIR IMAGES_DIR
# sets ROOT, CUBELET, T, CGNAME, SOCK, PID_CUBELET, n and the TAP helpers
# (tests/cluster/lib.sh: ok, nok, check, is, contains, wait_until).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
n=0
# shellcheck disable=SC1091
. "$ROOT/tests/cluster/lib.sh"
NODE=${NODE:-native-node}

native_cleanup() {
	[ -n "${PID_CUBELET:-}" ] && kill "$PID_CUBELET" 2>/dev/null && wait "$PID_CUBELET" 2>/dev/null
	"$ROOT/packaging/containerd/private-containerd.sh" stop "$T/ctd" >/dev/null 2>&1
	for g in /sys/fs/cgroup/*/"$CGNAME" /sys/fs/cgroup/"$CGNAME"; do
		[ -d "$g" ] && find "$g" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}

native_init() { # native_init BUILD_DIR IMAGES_DIR
	local B=$1 IMAGES=$2 g pid img
	CUBELET=$(cd "$B" && pwd)/cubelet
	[ "$(id -u)" = 0 ] || skip "not root"
	command -v containerd >/dev/null && command -v runc >/dev/null || skip "containerd and runc (make deps)"
	[ -s "$IMAGES/busybox.tar" ] && [ -s "$IMAGES/pause.tar" ] || skip "no images in $IMAGES (make images)"
	# the groups of runs that died (their PID gone): emptied and removed
	for g in /sys/fs/cgroup/*/cubelet-native-* /sys/fs/cgroup/cubelet-native-*; do
		[ -d "$g" ] || continue
		pid=${g##*cubelet-native-}
		kill -0 "$pid" 2>/dev/null && continue
		find "$g" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null
		sleep 0.2
		find "$g" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	T=$(mktemp -d /tmp/cubelet-native-XXXXXX)
	CGNAME=cubelet-native-$$
	PID_CUBELET=""
	trap native_cleanup EXIT
	if ! SOCK=$("$ROOT/packaging/containerd/private-containerd.sh" start "$T/ctd" 2>"$T/ctd.log"); then
		nok "a private containerd starts" "$(cat "$T/ctd.log")"
		echo "1..$n"
		exit 1
	fi
	for img in pause busybox; do
		ctr -a "$SOCK" -n k8s.io images import "$IMAGES/$img.tar" >/dev/null 2>>"$T/ctd.log" ||
			{ nok "import $img" "$(tail -n 3 "$T/ctd.log")"; echo "1..$n"; exit 1; }
	done
	ok "a private containerd ($SOCK) with the local images"
	mkdir -p "$T/manifests" "$T/out" "$T/logs"
}

# config EXTRA-LINES: cubelet's configuration (READ_ONLY_PORT: the HTTP API's
# port, default 0: off; CUBELET_EXTRA: more lines of its cubelet: section)
config() {
	cat <<-EOC
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		readOnlyPort: ${READ_ONLY_PORT:-0}
		podLogsDir: $T/logs
		cubelet:
		  devicePluginDir: ""
		  stateDir: $T/state
		  socket: $T/cubelet.sock
		  cniConfDir: ""
	EOC
	[ -n "${CUBELET_EXTRA:-}" ] && printf '%s\n' "$CUBELET_EXTRA" | sed 's/^/  /'
	printf '%s\n' "$1"
}
# start_cubelet CONFIG-FILE: cubelet in the background (its log appended to
# $T/cubelet.log; LOG_TIMES=1: each line after its time, seconds since the
# epoch to the microsecond, as journalctl -o short-unix); stop_cubelet:
# SIGTERM, and wait for it
start_cubelet() {
	local cmd=("$CUBELET" run --config "$1" --manifest-dir "$T/manifests" --runtime-endpoint "unix://$SOCK"
		--cgroup-root /sys/fs/cgroup --node-name "$NODE")
	if [ -n "${LOG_TIMES:-}" ]; then
		"${cmd[@]}" > >(while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done >>"$T/cubelet.log") 2>&1 &
	else
		"${cmd[@]}" >>"$T/cubelet.log" 2>&1 &
	fi
	PID_CUBELET=$!
}
stop_cubelet() {
	[ -n "$PID_CUBELET" ] && kill "$PID_CUBELET" 2>/dev/null && wait "$PID_CUBELET" 2>/dev/null
	PID_CUBELET=""
}

# native_netns SCRIPT ARGS...: SCRIPT run again in a network namespace of its
# own (unshare --net), with loopback and the node address NODE_IP (192.0.2.2,
# TEST-NET-1) on a veth link with the default route; once inside, sets it up
NODE_IP=192.0.2.2
native_netns() {
	if [ -z "${CUBELET_TEST_NETNS:-}" ]; then
		[ "$(id -u)" = 0 ] || skip "not root"
		exec unshare --net env CUBELET_TEST_NETNS=1 "$@"
	fi
	if ! { ip link set lo up && ip link add node0 type veth peer name node0p && ip link set node0p up &&
		ip addr add "$NODE_IP/24" dev node0 && ip link set node0 up && ip route add default via 192.0.2.1; } 2>/dev/null; then
		echo "not ok 1 - a network namespace of the run's own with $NODE_IP"
		exit 1
	fi
}
status_json() { "$CUBELET" status --socket "$T/cubelet.sock" -o json 2>/dev/null; }
up() { status_json | jq -e '.runtime.ready' >/dev/null; }
# podq NAME JQ: a jq expression on the static pod NAME-$NODE of cubelet status
podq() { status_json | jq -r --arg n "$1-$NODE" ".pods[] | select(.name == \$n) | $2"; }
phase() { [ "$(podq "$1" .phase)" = "$2" ]; }
