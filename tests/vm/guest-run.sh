#!/bin/bash
# Runs inside the guest (as cubelet-vm-scenario.service, root), from the run
# directory shared at /vm:
#   /vm/env              variables written by run-vm.sh (VM_REPO, VM_LIB, ...)
#   /vm/plan             the scenarios of this guest, in order, one a line:
#                        "NAME DRIVER TIMEOUT" (scenario /vm/scenarios/NAME.sh,
#                        CUBELET_DRIVER, seconds before it is stopped)
# Before the first scenario the node's booted state is recorded
# (lib/node-state.sh baseline); before each later one the node is reset to it
# (node-state.sh reset), and the scenario checks it (t_node_clean). Each
# scenario writes under /vm/out/NAME:
#   tap.txt     its stdout (TAP)      stderr.txt  its stderr
#   rc          its exit status       timing      guest uptimes (reset, start, end)
#   journal/    the journal's files of its part of the boot (run-vm.sh
#               makes journal.txt of them on the host)
#   reset.txt   what the reset before it said
#   done        written last: the scenario completed
# and /vm/out/done is written once the plan has run. The unit powers the guest
# off when this script ends.
out=/vm/out
mkdir -p "$out"
set -a
# shellcheck disable=SC1091
. /vm/env
set +a
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
up() { cut -d' ' -f1 /proc/uptime; }
cd /tmp || exit 1
# A scenario may shut the guest down (55-poweroff, 56-shutdown-now): the
# unit's stop sends SIGTERM to this script alone (KillMode=mixed), which
# carries on so that the scenario's results, journal and "done" are written
# (a trap, not an ignored signal: the scenarios' children keep SIGTERM's
# default action)
trap 'echo "# vm: SIGTERM: the guest shuts down; the plan goes on until then"' TERM

# The boot settles (no start-up job running but this unit's own) before the
# node's state is recorded: at most 30 s.
end=$(($(date +%s) + 30))
while [ "$(date +%s)" -lt "$end" ]; do
	systemctl list-jobs --no-legend 2>/dev/null | awk '$4 == "running" && $2 != "cubelet-vm-scenario.service" { f = 1 } END { exit f }' && break
	sleep 0.5
done
echo "boot_settled_uptime=$(up)" >"$out/timing"
# systemd's generators (fstab, getty, sysv, the host's postgresql, ...) make
# units for the host's disks, consoles and services, none of them the
# guest's; each daemon-reload ran all 13 of them again. Masked before the
# record (so that the resets keep them masked): a reload takes 1.2 s instead
# of 2.4 s alone in a guest, and a scenario makes one or two
mkdir -p /etc/systemd/system-generators
for g in /lib/systemd/system-generators/*; do
	[ -e "$g" ] && ln -sf /dev/null "/etc/systemd/system-generators/${g##*/}"
done
systemctl daemon-reload
# containerd as cubelet_install configures it for the cgroupfs driver (the
# packaged config.toml, the pod network's conflist), part of the record: a
# scenario's install restarts containerd only where it changes them (the
# systemd driver); the reset starts it afresh before each scenario anyway
install -D -m 0644 "$VM_REPO/packaging/containerd/config.toml" /etc/containerd/config.toml
install -D -m 0644 "$VM_REPO/packaging/cni/10-cubelet.conflist" /etc/cni/net.d/10-cubelet.conflist
systemctl restart containerd
for _ in $(seq 100); do ctr version >/dev/null 2>&1 && break; sleep 0.1; done
bash "$VM_LIB/node-state.sh" baseline >"$out/baseline.txt" 2>&1
echo "baseline_uptime=$(up)" >>"$out/timing"

first=1
while read -r name driver tmo <&3; do
	[ -n "$name" ] || continue
	o=$out/$name
	rm -rf "$o"
	mkdir -p "$o"
	if [ "$first" = 0 ]; then
		echo "reset_start_uptime=$(up)" >"$o/timing"
		bash "$VM_LIB/node-state.sh" reset </dev/null >"$o/reset.txt" 2>&1
		# what the last scenario left in its own unit's cgroup (background
		# servers, sleeps): killed, this script excepted
		for p in $(cat /sys/fs/cgroup/system.slice/cubelet-vm-scenario.service/cgroup.procs); do
			[ "$p" = $$ ] || kill -9 "$p" 2>/dev/null
		done
	fi
	first=0
	echo "scenario_start_uptime=$(up)" >>"$o/timing"
	echo "# vm: running $name (driver ${driver}, guest uptime $(up) s)"
	{
		VM_SCENARIO=$name VM_OUT=$o CUBELET_DRIVER=$driver VM_SCENARIO_TIMEOUT=$tmo \
			timeout -k 10 "$tmo" bash "/vm/scenarios/$name.sh" </dev/null 2>"$o/stderr.txt"
		echo $? >"$o/rc"
	} | tee "$o/tap.txt"
	echo "scenario_end_uptime=$(up)" >>"$o/timing"
	if [ "$(cat "$o/rc")" = 124 ]; then
		echo "# vm: scenario timed out after $tmo s" | tee -a "$o/tap.txt"
	fi
	systemctl list-units --failed --no-pager >"$o/failed-units.txt" 2>&1
	# the journal's files as they are: the host formats them into
	# journal.txt once the guest is off (run-vm.sh); formatting them here
	# took seconds of emulated CPU after every scenario
	journalctl --sync 2>/dev/null
	mkdir -p "$o/journal"
	find /var/log/journal /run/log/journal -name '*.journal' -exec cp -t "$o/journal/" {} + 2>/dev/null
	date -u +%FT%TZ >"$o/done"
	sync
done 3</vm/plan

date -u +%FT%TZ >"$out/done"
sync
exit 0
