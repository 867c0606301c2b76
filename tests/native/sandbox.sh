# shellcheck shell=bash
# The native lane's sandbox for agents that must not touch the host (tests/native/oracle.sh,
# tests/conformance/run.sh): source it, then
#   sandbox_enter VAR "$0" "$@"   re-executes the script in new PID, network, mount and UTS
#                                 namespaces (unshare --kill-child: whatever it starts dies with it)
#                                 unless VAR is set (it is, inside)
#   sandbox_mounts T NODE         inside: every mount private to the run; the hostname NODE;
#                                 loopback up; files of T's own over the three kernel tunables
#                                 kubelet sets (vm.overcommit_memory, kernel.panic,
#                                 kernel.panic_on_oops); T/srv over /srv, T/varlib over /var/lib
#                                 (the agents' state at their default places) and T/varlog over
#                                 /var/log (kubelet's /var/log/containers links); T/cni/conf (the
#                                 pod network's conflist, IPAM state in T/cni/data) for
#                                 CNI_CONF_DIR. Fails unless every one is in place: callers remove
#                                 /var/lib/kubelet afterwards.
#   sandbox_umount DIR            inside: every mount below DIR and below the private /var/lib and
#                                 /var/log (volumes, secrets, the runtime's), deepest first
#   sandbox_clean_groups          the runtime's default groups of pods (/k8s.io/ID in each cgroup
#                                 hierarchy: kubelet's cgroupsPerQOS: false gives no parent), the
#                                 empty ones removed; at the start and at the end
sandbox_enter() {
	local var=$1
	shift
	[ -n "${!var:-}" ] && return 0
	sandbox_clean_groups
	exec env "$var=1" unshare --pid --fork --kill-child --mount-proc --net --mount --uts "$@"
}

sandbox_mounts() {
	local t=$1 node=$2 f
	mount --make-rprivate / && hostname "$node" && ip link set lo up &&
		mkdir -p "$t/sys" "$t/cni/conf" "$t/cni/data" "$t/srv" "$t/varlib" "$t/varlog" || return 1
	for f in vm/overcommit_memory kernel/panic kernel/panic_on_oops; do
		cat "/proc/sys/$f" >"$t/sys/${f##*/}" && mount --bind "$t/sys/${f##*/}" "/proc/sys/$f" || return 1
	done
	mount --bind "$t/srv" /srv && mount --bind "$t/varlib" /var/lib && mount --bind "$t/varlog" /var/log &&
		[ "$(stat -c %i /var/lib)" = "$(stat -c %i "$t/varlib")" ] &&
		[ "$(stat -c %i /var/log)" = "$(stat -c %i "$t/varlog")" ] || return 1
	jq --arg d "$t/cni/data" '.plugins[0].ipam.dataDir = $d' "$(dirname "${BASH_SOURCE[0]}")/../../packaging/cni/10-cubelet.conflist" \
		>"$t/cni/conf/10-cubelet.conflist"
}

sandbox_umount() {
	awk -v d="${1%/}/" 'index($2, d) == 1 || index($2, "/var/lib/") == 1 || index($2, "/var/log/") == 1 { print $2 }' \
		/proc/mounts | sort -r | xargs -r umount -l 2>/dev/null
	return 0
}

sandbox_clean_groups() {
	find /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io -mindepth 1 -maxdepth 1 -type d \
		-regex '.*/[0-9a-f]\{64\}' -exec rmdir {} + 2>/dev/null
	rmdir /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io 2>/dev/null
	return 0
}
