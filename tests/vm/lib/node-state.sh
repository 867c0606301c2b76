#!/bin/bash
# The node's state between the scenarios of a shared guest (tests/vm/README.md,
# "Shared guests"). Run as root in the guest:
#
#   node-state.sh baseline   record the node as booted (before the first
#                            scenario): units, cgroups, mounts, links, the
#                            packet filter, every file under /etc (and a tar
#                            of it), /usr/local/bin and /usr/local/sbin, and
#                            what exists under the state trees (WIPED)
#   node-state.sh reset      bring the node back to that record: stop every unit
#                            the baseline did not run (cubelet, the GPU plugin,
#                            nginx, prometheus, transient units), kill what
#                            runs in containerd's and the pods' cgroups, empty
#                            containerd (its state wiped, restarted: no
#                            namespace, container, image or snapshot left),
#                            unmount and remove what is new, delete new links
#                            and packet-filter rules, restore /etc (from the
#                            tar) and /usr/local (from the host's /host),
#                            empty the state trees of what is new, empty the
#                            journal and the kernel's ring buffer
#   node-state.sh check      compare the node with the record: prints one line
#                            per difference and exits 1 if there is any
#
# The scenarios assert the check themselves (t_node_clean in tap.sh), so a
# scenario that runs after another in the same guest starts from a state it has
# verified.
set -u
B=/run/cubelet-vm-baseline
# the trees restored file by file: /etc from a tar made at boot (the harness
# and the boot wrote some of it), the others from the host's own copy (/host)
RESTORED="/etc /usr/local/bin /usr/local/sbin"
ARCHIVED="/etc"
# state the agent, the runtime and the scenarios write, emptied by the reset
# (kept as they were at boot: most do not exist then)
WIPED="/var/lib/cubelet /var/lib/kubelet /var/log/pods /var/log/containers /var/lib/cni /var/lib/etcd
/run/netns /run/cubelet /var/lib/prometheus"
export SYSTEMD_PAGER= SYSTEMD_COLORS=0 LC_ALL=C

# units that are active (or failed) now; the harness's own unit stays out
units() {
	systemctl list-units --all --no-legend --plain --full \
		--state=active,activating,deactivating,reloading,failed 2>/dev/null |
		awk '{ print $1 }' | grep -v -E '\.device$|^cubelet-vm-scenario\.service$|^init\.scope$' | sort
}
# every cgroup below the root, the harness's own unit's subtree left out
cgroups() {
	(cd /sys/fs/cgroup && find . -mindepth 1 -type d) | sed 's|^\./||' |
		grep -v '^system.slice/cubelet-vm-scenario.service' | sort
}
mounts() { awk '{ print $5 }' /proc/self/mountinfo | sort; }
links() { ip -o link show 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort; }
# the packet filter's rules and user chains (the built-in chains' policies
# stay ACCEPT; nf_tables keeps an emptied table)
filter_rules() {
	for f in iptables-save ip6tables-save; do
		command -v "$f" >/dev/null || continue
		"$f" 2>/dev/null | awk -v f="$f" '
			/^\*/ { t = $1 }
			/^-A / { print f, t, $0 }
			/^:/ && $1 !~ /^:(INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING)$/ { print f, t, $1 }'
	done | sort
}
# path, type, mode and owner; for a link its target, for a file its size and mtime
files() {
	for d in "$@"; do
		[ -e "$d" ] || continue
		find "$d" -xdev \( -type d -printf '%p d %m %U:%G\n' \) -o \
			\( -type l -printf '%p l %l\n' \) -o -printf '%p %y %s %m %U:%G %T@\n'
	done | sort
}
# path and type only: the wiped trees' files may change in place (a database)
names() {
	for d in "$@"; do
		[ -e "$d" ] || continue
		find "$d" -xdev -printf '%p %y\n'
	done | sort
}
# topmost FILE1 FILE2: the paths of FILE2 not in FILE1 whose parent is in
# FILE1 (or that have none): the roots of what is new
topmost() {
	comm -13 "$1" "$2" | awk -v base="$1" '
		BEGIN { while ((getline l <base) > 0) b[l] = 1 }
		{ top = $0; p = $0
		  while ((i = match(p, /\/[^\/]*$/)) > 1) { p = substr(p, 1, i - 1); if (p in b) break; top = p }
		  print top }' | sort -u
}
# diff_set KIND FILE: FILE (the record) against stdin (now), one line per difference
diff_set() {
	comm -3 "$2" - | awk -v k="$1" '/^\t/ { sub(/^\t/, ""); print k " new: " $0; next } { print k " gone: " $0 }'
}

baseline() {
	rm -rf "$B" && mkdir -p "$B"
	# the image's timers (systemd-tmpfiles-clean 15 min after boot, ...) would
	# start units in the middle of a scenario: a test guest has none running
	systemctl stop --no-block '*.timer' 2>/dev/null
	systemctl stop '*.timer' 2>/dev/null
	units >"$B/units"
	cgroups >"$B/cgroups"
	mounts >"$B/mounts"
	links >"$B/links"
	filter_rules >"$B/filter"
	# shellcheck disable=SC2086
	files $RESTORED >"$B/restored"
	# shellcheck disable=SC2086
	names $WIPED >"$B/wiped"
	# (pax: the mtimes to the nanosecond, as `files` records them; the old
	# format's whole seconds made a file restored from it differ)
	# shellcheck disable=SC2046,SC2086
	tar -C / --format=posix --numeric-owner -cpf "$B/restored.tar" $(for d in $ARCHIVED; do echo "${d#/}"; done) 2>/dev/null
}

say() { echo "node-state: $*"; }

# stop_units: every unit the baseline did not have, stopped; failed ones reset
stop_units() {
	extra=$(comm -13 "$B/units" <(units) | grep -v -E '^-\.slice$|\.(mount|swap|target)$')
	# the agent first (it would restart what the rest of the reset removes)
	for u in cubelet.service cubelet-gpu-plugin.service; do
		case " $(echo $extra) " in *" $u "*) systemctl stop "$u" 2>/dev/null ;; esac
	done
	for u in $extra; do
		case $u in *.slice) continue ;; esac
		systemctl stop "$u" 2>/dev/null || systemctl kill -s KILL "$u" 2>/dev/null
	done
	# slices last: kubepods.slice and its children, emptied by now
	for u in $(echo "$extra" | grep '\.slice$' | awk '{ print length($0), $0 }' | sort -rn | cut -d' ' -f2); do
		systemctl stop "$u" 2>/dev/null
	done
	systemctl reset-failed 2>/dev/null
}

# kill_cgroup DIR: every process below DIR killed (cgroup.kill, or one by one)
kill_cgroup() {
	[ -d "$1" ] || return 0
	if [ -e "$1/cgroup.kill" ]; then
		echo 1 >"$1/cgroup.kill" 2>/dev/null
	else
		find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null
	fi
}

# rm_cgroup DIR: DIR and its children removed, deepest first
rm_cgroup() {
	[ -d "$1" ] || return 0
	kill_cgroup "$1"
	for _ in $(seq 50); do
		find "$1" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$1" ] || return 0
		sleep 0.1
	done
	say "cannot remove the cgroup $1"
}

reset_containerd() {
	systemctl stop containerd 2>/dev/null
	# the shims outlive containerd by design: kill them and their containers
	pkill -9 -f containerd-shim 2>/dev/null
	for cg in /sys/fs/cgroup/k8s.io /sys/fs/cgroup/kubepods /sys/fs/cgroup/kubepods.slice \
		/sys/fs/cgroup/system.slice/containerd.service; do
		kill_cgroup "$cg"
	done
}

umount_new() {
	for pass in 1 2 3; do
		new=$(comm -13 "$B/mounts" <(mounts))
		[ -z "$new" ] && return 0
		# deepest first, all in one umount (lazily, on the last pass);
		# mountinfo's octal escapes (\040) decoded
		echo "$new" | awk '{ print length($0), $0 }' | sort -rn | cut -d' ' -f2- |
			while read -r m; do printf '%b\n' "$m"; done |
			xargs -r -d '\n' umount $([ "$pass" = 3 ] && echo -l) 2>/dev/null
	done
}

# restore_files: the restored trees as recorded; SYSTEMD_CHANGED=1 when a
# file under /etc/systemd that the boot had was changed or removed (systemd
# must read its units again). Files a scenario added (cubelet.service, its
# drop-ins) are only removed: systemd keeps their stopped units in memory
# until the next scenario's own daemon-reload, which each scenario that
# installs a unit makes (a reload costs 3 s, 6 to 10 s in make test's
# parallel guests, and two per scenario added minutes)
SYSTEMD_CHANGED=0
restore_files() {
	# shellcheck disable=SC2086
	now=$(files $RESTORED)
	if comm -23 "$B/restored" <(echo "$now") | grep -q '^/etc/systemd/'; then
		SYSTEMD_CHANGED=1
	fi
	# new paths (not in the record) removed, deepest first
	comm -13 <(cut -d' ' -f1 "$B/restored") <(echo "$now" | cut -d' ' -f1) | xargs -r -d '\n' rm -rf
	# changed or missing ones extracted again from the record
	changed=$(comm -23 "$B/restored" <(echo "$now") | cut -d' ' -f1 | sed 's|^/||')
	[ -n "$changed" ] || return 0
	from_tar="" p=""
	for p in $changed; do
		in_tar=0
		for d in $ARCHIVED; do
			case /$p in "$d" | "$d"/*) in_tar=1 ;; esac
		done
		if [ "$in_tar" = 1 ]; then
			from_tar="$from_tar$p
"
		else
			cp -a --remove-destination "/host/$p" "/$p"
		fi
	done
	if [ -n "$from_tar" ]; then
		printf '%s' "$from_tar" | tar -C / --numeric-owner -xpf "$B/restored.tar" --no-recursion -T - 2>/dev/null
	fi
}

wipe_state() {
	# what is new under the state trees (a tree that was not there at boot is
	# new as a whole), removed in one go
	# shellcheck disable=SC2086
	comm -13 <(cut -d' ' -f1 "$B/wiped") <(names $WIPED | cut -d' ' -f1) | xargs -r -d '\n' rm -rf
	rm -rf /var/lib/containerd/* /run/containerd/* 2>/dev/null
}

reset_network() {
	for l in $(comm -13 "$B/links" <(links)); do
		ip link del "$l" 2>/dev/null
	done
	# only the tables with new rules or chains are flushed (an iptables call
	# costs a quarter of a second under emulation; flushing every table of
	# both families took seconds); rules the boot had in such a table would
	# go too: say so, they are not put back
	comm -13 "$B/filter" <(filter_rules) | awk '{ print $1, $2 }' | sort -u | while read -r f t; do
		"${f%-save}" -t "${t#\*}" -F 2>/dev/null
		"${f%-save}" -t "${t#\*}" -X 2>/dev/null
		if grep -q "^$f \\$t " "$B/filter"; then
			say "the baseline had packet-filter rules in $f $t; they are not restored"
		fi
	done
}

# ts WHAT: a line with the uptime, for the reset's own timing
ts() { echo "node-state: $(cut -d' ' -f1 /proc/uptime) $*"; }

reset() {
	[ -d "$B" ] || { say "no baseline (run 'node-state.sh baseline' first)"; exit 2; }
	ts start
	stop_units
	ts units stopped
	reset_containerd
	# the pods' and containerd's cgroup trees, and any other new group
	for cg in $(topmost "$B/cgroups" <(cgroups)); do
		rm_cgroup "/sys/fs/cgroup/$cg"
	done
	ts containerd stopped, cgroups removed
	umount_new
	wipe_state
	ts unmounted, wiped
	restore_files
	ts files restored
	reset_network
	ts network reset
	[ "$SYSTEMD_CHANGED" = 1 ] && systemctl daemon-reload
	ts "systemd reloaded ($SYSTEMD_CHANGED)"
	stop_units
	for cg in $(topmost "$B/cgroups" <(cgroups)); do
		rm_cgroup "/sys/fs/cgroup/$cg"
	done
	ts network, units again
	journalctl --rotate >/dev/null 2>&1
	journalctl --vacuum-time=1s >/dev/null 2>&1
	# the kernel's ring buffer (OOM kills of the last scenario), cleared
	dmesg -C 2>/dev/null
	ts journal and ring buffer emptied
	systemctl start containerd
	for _ in $(seq 100); do
		ctr version >/dev/null 2>&1 && break
		sleep 0.1
	done
	ts containerd started
}

# check: one line per difference with the record; status 1 if any
check() {
	[ -d "$B" ] || { say "no baseline"; return 2; }
	diffs=$(
		units | diff_set unit "$B/units"
		cgroups | diff_set cgroup "$B/cgroups"
		mounts | diff_set mount "$B/mounts"
		links | diff_set link "$B/links"
		filter_rules | diff_set filter "$B/filter"
		# shellcheck disable=SC2086
		files $RESTORED | diff_set file "$B/restored"
		# shellcheck disable=SC2086
		names $WIPED | diff_set state "$B/wiped"
		nss=$(ctr namespaces ls -q 2>/dev/null) || echo "containerd: not answering"
		for ns in $nss; do
			for what in containers images tasks snapshots; do
				n=$(ctr -n "$ns" "$what" ls -q 2>/dev/null | grep -c .)
				[ "$n" = 0 ] || echo "containerd: namespace $ns has $n $what"
			done
		done
		n=$(dmesg 2>/dev/null | grep -ciE 'out of memory|oom-kill|invoked oom-killer')
		[ "$n" = 0 ] || echo "kernel: $n OOM lines in the ring buffer"
		for u in cubelet cubelet-gpu-plugin; do
			n=$(journalctl -q --no-pager -u "$u" -o cat 2>/dev/null | grep -c .)
			[ "$n" = 0 ] || echo "journal: $n lines of $u.service"
		done
	)
	[ -z "$diffs" ] && return 0
	echo "$diffs"
	return 1
}

case ${1:-} in
baseline) baseline ;;
reset) reset ;;
check) check ;;
*)
	echo "usage: node-state.sh baseline|reset|check" >&2
	exit 2
	;;
esac
