# shellcheck shell=bash
# What tests/cluster/run-node.sh and run-hostile.sh share: TAP output, waits,
# and cubelets of their own without a runtime. The caller sets T (its
# temporary directory), CGROOT (a cgroup v2 directory for the cubelets'
# roots), CUBELET, n=0 and PIDS="" before calling run.

skip() { echo "1..0 # SKIP $*"; exit 77; }
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
# check NAME CMD...: ok when CMD succeeds
check() { local name=$1; shift; if "$@"; then ok "$name"; else nok "$name"; fi; }
is() { if [ "$1" = "$2" ]; then ok "$3"; else nok "$3" "got:      '$1'" "expected: '$2'"; fi; }
contains() { case $1 in *"$2"*) ok "$3" ;; *) nok "$3" "got: '$1'" "expected to contain: '$2'" ;; esac; }
# wait_until SECONDS CMD...: CMD succeeds within SECONDS (tried every 0.25 s)
wait_until() { local t=$1; shift; for _ in $(seq $((t * 4))); do "$@" && return 0; sleep 0.25; done; return 1; }
status_json() { "$CUBELET" status --socket "$T/$1/cubelet.sock" -o json 2>/dev/null; }

# run NAME ARGS...: a cubelet of its own (state, socket) in the background,
# its log in $T/NAME.log, its PID in PID_NAME; RUN_CONFIG: more lines of its
# configuration (top level, unindented); RUN_CUBELET: one more line of its
# cubelet: section (offlinePods: start); RUN_PORT: the kubelet server's port
# (default 0: off, so that several run at once); RUN_RUNTIME: the CRI endpoint
# (default: none there)
run() {
	local name=$1
	shift
	mkdir -p "$T/$name/manifests" "$T/$name/dp" "$CGROOT/$name"
	cat >"$T/$name/config.yaml" <<-EOC
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		readOnlyPort: 0
		port: ${RUN_PORT:-0}
		podLogsDir: $T/$name/logs
		cubelet:
		  devicePluginDir: $T/$name/dp
		  stateDir: $T/$name/state
		  socket: $T/$name/cubelet.sock
		  cniConfDir: ""
		  ${RUN_CUBELET:-}
		${RUN_CONFIG:-}
	EOC
	"$CUBELET" run --config "$T/$name/config.yaml" --manifest-dir "$T/$name/manifests" \
		--runtime-endpoint "${RUN_RUNTIME:-unix://$T/no-runtime.sock}" --cgroup-root "$CGROOT/$name" "$@" >"$T/$name.log" 2>&1 &
	PIDS="$PIDS $!"
	eval "PID_$name=$!"
}
stop() {
	local pid
	eval "pid=\$PID_$1"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}
