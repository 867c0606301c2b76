#!/bin/bash
# A kubepods hierarchy written by hand, the way cubelet's cgroupfs driver will
# write it: the limits read back exactly, and the kernel enforces them. With
# CUBELET_DRIVER=systemd, the same through slice properties (systemctl
# set-property) on kubelet's slice names.
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean

CG=/sys/fs/cgroup

# ---- the systemd driver's tree: the same limits as slice properties ----------
# (run-scenarios.sh runs this scenario again as 10-cgroup-kubepods@systemd)
if [ "${CUBELET_DRIVER:-cgroupfs}" = systemd ]; then
	S=kubepods-burstable-podvmtest.slice
	POD=$CG/kubepods.slice/kubepods-burstable.slice/$S
	cleanup() { systemctl stop "$S" kubepods-burstable.slice kubepods.slice 2>/dev/null; }
	trap cleanup EXIT
	# a service in the pod slice pulls in kubepods.slice and kubepods-burstable.slice
	systemd-run -q --unit=vmtest-c1 --slice="$S" -p MemoryMax=33554432 sleep 600
	t_ok "the slices exist as kubelet names them" test -d "$POD/vmtest-c1.service"
	prop() { systemctl set-property --runtime "$S" "$@"; }
	prop CPUWeight=10 CPUQuota=50% CPUQuotaPeriodSec=100ms MemoryMax=268435456 TasksMax=1024
	t_is "$(cat "$POD/cpu.weight")" 10 "CPUWeight=10 is cpu.weight 10"
	t_is "$(cat "$POD/cpu.max")" "50000 100000" "CPUQuota=50%, period 100ms is cpu.max '50000 100000'"
	t_is "$(cat "$POD/memory.max")" 268435456 "MemoryMax=268435456 is memory.max 268435456"
	t_is "$(cat "$POD/pids.max")" 1024 "TasksMax=1024 is pids.max 1024"
	prop MemoryMax=100000000
	t_is "$(cat "$POD/memory.max")" 99999744 "MemoryMax=100000000 reads back rounded down to a page (99999744)"
	prop MemoryMax=infinity TasksMax=infinity CPUQuota=
	t_is "$(cat "$POD/memory.max") $(cat "$POD/pids.max") $(cat "$POD/cpu.max")" "max max max 100000" \
		"infinity is 'max' in memory.max, pids.max and cpu.max"
	prop AllowedCPUs=2-3
	t_is "$(cat "$POD/cpuset.cpus")" 2-3 "AllowedCPUs=2-3 is cpuset.cpus 2-3"
	pid=$(systemctl show -p MainPID --value vmtest-c1)
	t_is "$(awk '$1 == "Cpus_allowed_list:" { print $2 }' "/proc/$pid/status")" 2-3 \
		"the process of a unit in the slice may run on CPUs 2-3 only"
	systemctl stop vmtest-c1
	# memory.max is enforced in a service of the slice
	systemd-run -q --wait --unit=vmtest-oom --slice="$S" -p MemoryMax=33554432 -p MemorySwapMax=0 \
		timeout 120 tail /dev/zero >/dev/null 2>&1
	rc=$?
	t_ok "a 'tail /dev/zero' service limited to 32 MiB fails (systemd-run --wait: $rc)" test "$rc" -ne 0
	t_ok "the slice's memory.events counts the oom_kill" \
		awk '$1 == "oom_kill" && $2 >= 1 { ok = 1 } END { exit !ok }' "$POD/memory.events"
	t_ok "the slice has memory.pressure" grep -q '^some avg10=' "$POD/memory.pressure"
	cleanup
	t_ok "stopping the slices removes the tree" test ! -e "$CG/kubepods.slice"
	trap - EXIT
	t_done
	exit
fi

KP=$CG/kubepods
POD=$KP/burstable/podvmtest

cleanup() {
	for d in "$POD/c1" "$POD" "$KP/burstable" "$KP"; do
		[ -d "$d" ] && rmdir "$d" 2>/dev/null
	done
}
trap cleanup EXIT

# Enable the controllers down the path, as the agent must do.
enable() { echo "+cpuset +cpu +memory +pids +io" >"$1/cgroup.subtree_control"; }
mkdir -p "$POD/c1"
enable "$CG" && enable "$KP" && enable "$KP/burstable" && enable "$POD"
t_is "$(cat "$POD/cgroup.subtree_control")" "cpuset cpu io memory pids" \
	"controllers enabled down to kubepods/burstable/podvmtest"
t_is "$(cat "$POD/cgroup.controllers")" "cpuset cpu io memory pids" \
	"the pod cgroup has cpuset cpu io memory pids"

# Defaults of a fresh cgroup.
t_is "$(cat "$POD/memory.max")" max "fresh memory.max is max"
t_is "$(cat "$POD/cpu.max")" "max 100000" "fresh cpu.max is 'max 100000'"
t_is "$(cat "$POD/cpu.weight")" 100 "fresh cpu.weight is 100"

# Exact read-back of the values cubelet plan writes.
write() { echo "$2" >"$POD/$1"; }
write memory.max 268435456
t_is "$(cat "$POD/memory.max")" 268435456 "memory.max 268435456 reads back"
write memory.max 100000000
t_is "$(cat "$POD/memory.max")" 99999744 "memory.max 100000000 reads back rounded down to a page (99999744)"
write memory.max max
t_is "$(cat "$POD/memory.max")" max "memory.max max reads back"
write cpu.max "50000 100000"
t_is "$(cat "$POD/cpu.max")" "50000 100000" "cpu.max '50000 100000' reads back"
write cpu.max "max 100000"
t_is "$(cat "$POD/cpu.max")" "max 100000" "cpu.max 'max 100000' reads back"
write cpu.weight 10
t_is "$(cat "$POD/cpu.weight")" 10 "cpu.weight 10 reads back"
write pids.max 1024
t_is "$(cat "$POD/pids.max")" 1024 "pids.max 1024 reads back"
write cpuset.cpus 2-3
t_is "$(cat "$POD/cpuset.cpus")" 2-3 "cpuset.cpus 2-3 reads back"
t_is "$(cat "$POD/cpuset.cpus.effective")" 2-3 "cpuset.cpus.effective is 2-3"
t_is "$(cat "$POD/c1/cpuset.cpus.effective")" 2-3 "a child inherits cpuset 2-3"
write memory.min 0
t_is "$(cat "$POD/memory.min")" 0 "memory.min 0 reads back"

# A process moved into the child runs there, on the pod's CPUs.
got=$(sh -c "echo \$\$ >$POD/c1/cgroup.procs && cat /proc/self/cgroup && taskset -pc \$\$ | sed 's/.*: //'")
t_is "$got" "0::/kubepods/burstable/podvmtest/c1
2,3" "a process in c1 sees its cgroup and is bound to CPUs 2,3"

# memory.max is enforced: a process that keeps allocating is OOM-killed.
echo 33554432 >"$POD/c1/memory.max"
[ -f "$POD/c1/memory.swap.max" ] && echo 0 >"$POD/c1/memory.swap.max"
sh -c "echo \$\$ >$POD/c1/cgroup.procs && exec timeout 120 tail /dev/zero" 2>/dev/null
rc=$?
t_is "$rc" 137 "a 'tail /dev/zero' in a 32 MiB cgroup dies by SIGKILL"
t_is "$(awk '$1 == "oom_kill" { print $2 }' "$POD/c1/memory.events")" 1 \
	"memory.events counts one oom_kill"

# cpu.max is enforced: a busy loop under a 10% quota gets throttled.
echo "10000 100000" >"$POD/c1/cpu.max"
sh -c "echo \$\$ >$POD/c1/cgroup.procs && exec timeout 2 sh -c 'while :; do :; done'"
throttled=$(awk '$1 == "nr_throttled" { print $2 }' "$POD/c1/cpu.stat")
if [ "${throttled:-0}" -gt 0 ]; then
	t_pass "cpu.max 10000 100000 throttles a busy loop (nr_throttled=$throttled)"
else
	t_fail "cpu.max 10000 100000 throttles a busy loop" "cpu.stat:" "$(cat "$POD/c1/cpu.stat")"
fi

# PSI per cgroup.
t_ok "the pod cgroup has memory.pressure" grep -q '^some avg10=' "$POD/memory.pressure"

# Empty cgroups go away.
cleanup
t_ok "the kubepods tree is removed once empty" test ! -e "$KP"
trap - EXIT
t_done
