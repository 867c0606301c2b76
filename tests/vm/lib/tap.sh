# TAP helpers for VM scenarios (bash or POSIX sh). In a scenario:
#   . "$VM_LIB/tap.sh"
#   t_is "$(nproc)" 4 "nproc"                  # exact string comparison
#   t_contains "$text" "needle" "description"  # substring
#   t_ok "description" test -e /proc/pressure/memory   # a command's success
#   t_skip "description" "reason"
#   t_diag "free text"                         # "# " comment lines
#   t_node_clean                               # the node is as booted (first check)
#   wait_until 30 test -e /run/x               # a condition, polled, with a deadline
#   t_done                                     # prints the plan, sets exit status
# Test numbers are the scenario's own; the harness renumbers them.
_t_n=0
_t_failed=0

_t_result() { # _t_result PASSED(0|1) DESCRIPTION
	_t_n=$((_t_n + 1))
	# when each check ended (guest uptime), for finding where a scenario's time goes
	# (read by bash itself: a `cut` per check cost a fork and an exec, a
	# tenth of a second or more under emulation, thousands of times a run)
	if [ -n "${VM_OUT:-}" ]; then
		read -r _t_up _ </proc/uptime
		echo "$_t_up $_t_n $2" >>"$VM_OUT/check-times.txt"
	fi
	if [ "$1" = 0 ]; then
		echo "ok $_t_n - $2"
	else
		echo "not ok $_t_n - $2"
		_t_failed=$((_t_failed + 1))
	fi
}

t_diag() {
	printf '%s\n' "$*" | sed 's/^/# /'
}

t_ok() { # t_ok DESCRIPTION COMMAND [ARGS...]
	_t_d=$1
	shift
	if _t_out=$("$@" 2>&1); then
		_t_result 0 "$_t_d"
	else
		_t_result 1 "$_t_d"
		t_diag "command failed: $*"
		[ -n "$_t_out" ] && t_diag "$_t_out"
	fi
	return 0
}

t_is() { # t_is GOT WANT DESCRIPTION
	if [ "$1" = "$2" ]; then
		_t_result 0 "$3"
	else
		_t_result 1 "$3"
		t_diag "  got: '$1'"
		t_diag " want: '$2'"
	fi
}

t_contains() { # t_contains TEXT NEEDLE DESCRIPTION
	case $1 in
	*"$2"*) _t_result 0 "$3" ;;
	*)
		_t_result 1 "$3"
		t_diag "    in: '$1'"
		t_diag "  want: '$2' (substring)"
		;;
	esac
}

t_skip() { # t_skip DESCRIPTION REASON
	_t_n=$((_t_n + 1))
	echo "ok $_t_n - $1 # SKIP $2"
}

t_fail() { # t_fail DESCRIPTION [DIAGNOSTIC...]
	_t_d=$1
	shift
	_t_result 1 "$_t_d"
	[ $# -gt 0 ] && t_diag "$@"
	return 0
}

t_pass() { # t_pass DESCRIPTION
	_t_result 0 "$1"
}

t_done() {
	echo "1..$_t_n"
	[ "$_t_failed" -eq 0 ]
}

# t_node_clean: the node is in the state recorded when the guest booted
# (lib/node-state.sh check), one check for each part of it, so that a scenario
# that runs after another in the same guest starts from a state it verified.
# Each scenario's first checks.
t_node_clean() {
	_t_out=$(bash "$VM_LIB/node-state.sh" check 2>&1)
	_t_rc=$?
	if [ "$_t_rc" -gt 1 ]; then
		t_fail "the node starts clean: its state was recorded at boot" "$_t_out"
		return 0
	fi
	while IFS='|' read -r _t_k _t_d; do
		_t_bad=""
		# (a clean node's empty answer needs no grep: ten execs saved)
		[ -n "$_t_out" ] && _t_bad=$(printf '%s\n' "$_t_out" | grep "^$_t_k[ :]")
		if [ -z "$_t_bad" ]; then
			_t_result 0 "the node starts clean: $_t_d"
		else
			_t_result 1 "the node starts clean: $_t_d"
			t_diag "$_t_bad"
		fi
	done <<'EOF_CLEAN'
unit|no unit the boot did not run is active or failed (cubelet, the GPU plugin, servers, transient units)
cgroup|the cgroup tree is the boot's (no kubepods, pod, container or k8s.io group)
mount|no mount beyond the boot's (container root filesystems, volumes, network namespaces)
link|no network link beyond the boot's (the pod bridge, veths)
filter|no packet-filter rule or chain beyond the boot's
file|/etc, /usr/local/bin and /usr/local/sbin are the boot's
state|nothing new under cubelet's, the CNI's and etcd's state trees and /var/log/pods
containerd|containerd answers and holds no container, image, task or snapshot
kernel|the kernel's ring buffer has no OOM kill
journal|the journal has no line of cubelet or of its GPU plugin
EOF_CLEAN
}

# wait_until SECONDS CMD...: CMD (its output dropped) run every 0.2 s until it
# succeeds (status 0) or SECONDS have passed (status 1). Scenarios wait on the
# condition they need, never a fixed time. With WAIT_PACE set, the pause
# after a failed try is at least as long as the try took: a scenario whose
# checks are expensive (97-cluster: curl to the API server and jq, ~2.7 s in
# a busy guest) spends at most half the guest on polling.
wait_until() {
	local _w_t0 _w_took
	_w_rc=1
	_w_end=$(($(date +%s) + $1))
	shift
	while :; do
		_w_t0=${EPOCHREALTIME/./}
		"$@" >/dev/null 2>&1 && { _w_rc=0; return 0; }
		[ "$(date +%s)" -ge "$_w_end" ] && return 1
		_w_took=$((${EPOCHREALTIME/./} - _w_t0))
		if [ -n "${WAIT_PACE:-}" ] && [ "$_w_took" -gt 200000 ]; then
			sleep "$((_w_took / 1000000)).$(printf %06d $((_w_took % 1000000)))"
		else
			sleep 0.2
		fi
	done
}

# waited: the last wait_until's result, for the check that reports it (a
# second evaluation of an API read can fail on its own in a loaded guest:
# 97-cluster's "Ready" did in a CI run right after its wait had seen it)
waited() { return "${_w_rc:-1}"; }
