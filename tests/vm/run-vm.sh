#!/bin/bash
# Boots Debian's kernel under qemu (TCG) with systemd as PID 1 over the host's
# root filesystem, runs scenario scripts in it once containerd.service is up,
# one after the other (the node reset between them, lib/node-state.sh), powers
# off, and prints the scenarios' TAP on stdout.
#
#   tests/vm/run-vm.sh [-m MEM] [-t SECONDS] [-f DIR]... [-o RUNDIR] SCENARIO.sh [SCENARIO.sh]...
#   tests/vm/run-vm.sh [-m MEM] [-f DIR]... [-o RUNDIR] -p PLAN       # a shared guest's plan
#   tests/vm/run-vm.sh -s [-m MEM] [-f DIR]...        # interactive shell
#
# PLAN has one scenario a line: "NAME PATH DRIVER TIMEOUT" (the name its
# results take, the script, CUBELET_DRIVER, the seconds it may take).
#
# The guest: 4 vCPUs as 1 socket x 2 cores x 2 threads, cgroup v2 only
# (systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all), root = overlay of the
# host's / (9p, read-only) and a tmpfs, containerd/runc from the host.
# Needs `make vm-image` first (tests/vm/build-image.sh).
#
# Settings, strongest first: options, then the scenario's own header lines
# ("# vm-mem: 1024M", "# vm-timeout: 900"), then the environment, then the
# defaults:
#   VM_MEM      guest memory (2048M)         VM_TIMEOUT  seconds a scenario may
#   VM_SMP      -smp value                                take before the VM is
#               (4,sockets=1,cores=2,threads=2)           killed (600)
#   VM_FILES    colon-separated directories copied into the guest's / before
#               boot (as -f); SCENARIO's sibling directory NAME.files/ always is
#   VM_DIR      image and run directory (build/vm)
#   VM_IMAGES   host directory with pause.tar/busybox.tar, passed to the guest
#   VM_DEBS     host directory with the package builds 1/ and 2/ (make vm-debs; default VM_DIR/debs)
#   VM_APPEND   extra kernel command line   VM_QEMU_ARGS  extra qemu arguments
#   VM_TCG_THREAD  single (default: one host thread for all vCPUs) or multi (one each)
#   VM_CPU      the -cpu model (qemu64; vendor=GenuineIntel is added)
#   CUBELET_DRIVER  the cgroup driver of scenarios given as files (cgroupfs)
#
# Results land in RUNDIR (default VM_DIR/runs/NAME of the first scenario):
# console.log (serial console), out/ (timing, baseline.txt, done) and out/NAME/
# for each scenario (tap.txt, stderr.txt, rc, journal.txt, timing, reset.txt,
# check-times.txt, done), wall_s, cpu_s (qemu's host CPU seconds). The host watches the guest: a scenario still running its
# TIMEOUT + 60 s after it started, or a guest that starts none within 600 s
# of boot, gets the VM killed.
# Exit status: the scenarios' (1 also when one printed "not ok"), 123 when the
# guest stopped a scenario for time (VM_TIMEOUT - 120 s), 124 when the host
# killed the VM for time, 125 when the VM ended without a result, 2 on usage.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VM_DIR=${VM_DIR:-$REPO/build/vm}
mkdir -p "$VM_DIR" && VM_DIR=$(cd "$VM_DIR" && pwd) # the guest needs absolute paths

usage() {
	sed -n '2,45p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

mem="" timeout_s="" rundir="" shell=0 planfile=""
files=()
while getopts "m:t:f:o:p:sh" opt; do
	case $opt in
	m) mem=$OPTARG ;;
	t) timeout_s=$OPTARG ;;
	f) files+=("$OPTARG") ;;
	o) rundir=$OPTARG ;;
	p) planfile=$OPTARG ;;
	s) shell=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))

# header FILE KEY: a scenario's "# vm-KEY: VALUE" line (its first 30 lines)
header() {
	head -n 30 "$1" | sed -n "s/^# vm-$2: *\([^ ]*\).*/\1/p" | head -n 1
}

# The plan: "NAME PATH DRIVER TIMEOUT" a line, from -p or from the files given.
plan=()
if [ -n "$planfile" ]; then
	[ -f "$planfile" ] || { echo "run-vm: no plan file $planfile" >&2; usage; }
	while read -r n p d t; do
		[ -n "$n" ] && plan+=("$n $p $d $t")
	done <"$planfile"
elif [ "$shell" = 0 ]; then
	[ $# -gt 0 ] || { echo "run-vm: no scenario file given (or -s for a shell)" >&2; usage; }
	for f in "$@"; do
		[ -f "$f" ] || { echo "run-vm: no scenario file $f" >&2; usage; }
		t=${timeout_s:-$(header "$f" timeout)}
		plan+=("$(basename "$f" .sh) $f ${CUBELET_DRIVER:-cgroupfs} ${t:-${VM_TIMEOUT:-600}}")
	done
fi
if [ "$shell" = 0 ] && [ ${#plan[@]} = 0 ]; then
	echo "run-vm: an empty plan" >&2
	usage
fi
first=${plan[0]:-}
first_path=$(echo "$first" | cut -d' ' -f2)
mem=${mem:-$([ -n "$first_path" ] && header "$first_path" mem)}
mem=${mem:-${VM_MEM:-2048M}}
smp=${VM_SMP:-4,sockets=1,cores=2,threads=2}

if [ -n "$first" ]; then
	name=${first%% *}
	for e in "${plan[@]}"; do
		p=$(echo "$e" | cut -d' ' -f2)
		[ -d "${p%.sh}.files" ] && files=("$(cd "${p%.sh}.files" && pwd)" "${files[@]}")
	done
else
	name=shell
fi
IFS=: read -r -a env_files <<<"${VM_FILES:-}"
files+=("${env_files[@]}")

for f in "$VM_DIR/vmlinuz" "$VM_DIR/initrd.img" "$VM_DIR/kernel-abi"; do
	[ -f "$f" ] || { echo "run-vm: $f missing: run 'make vm-image'" >&2; exit 125; }
done
abi=$(cat "$VM_DIR/kernel-abi")

# ---- the run directory, shared with the guest at /vm --------------------------
rundir=${rundir:-$VM_DIR/runs/$name}
rm -rf "$rundir"
mkdir -p "$rundir/out" "$rundir/rootfs"
rundir=$(cd "$rundir" && pwd)
root=$rundir/rootfs

# Units the host enables that have no business in a test VM (database servers,
# timers, gettys) are masked, so boots are fast and alike; containerd stays.
keep=" containerd.service remote-fs.target ${VM_KEEP_UNITS:-} "
mkdir -p "$root/etc/systemd/system"
for link in /etc/systemd/system/*.target.wants/*; do
	[ -e "$link" ] || [ -L "$link" ] || continue
	unit=$(basename "$link")
	case $keep in *" $unit "*) continue ;; esac
	ln -sfn /dev/null "$root/etc/systemd/system/$unit"
done
for unit in getty@tty1.service console-getty.service; do
	ln -sfn /dev/null "$root/etc/systemd/system/$unit"
done

cp -a "$HERE/guest/." "$root/"
# the helpers (VM_LIB) as they are now: a run reads its own copy, whatever
# the checkout becomes meanwhile
cp -a "$HERE/lib" "$rundir/lib"
# The guest's /tmp is the host's /tmp under the overlay (a checkout or images
# under /tmp on the host stay visible); this replaces Debian's "D /tmp", which
# would empty it at boot by whiting out every host entry, slowly, over 9p.
# (Written here: the repo's .gitignore ignores "*.d" folders.)
mkdir -p "$root/etc/tmpfiles.d"
echo "d /tmp 1777 root root -" >"$root/etc/tmpfiles.d/tmp.conf"
if [ "$shell" = 1 ]; then
	# Root shell on the serial console (this terminal). The guest has no udev,
	# so serial-getty@ttyS0 (bound to dev-ttyS0.device) would never start:
	# a getty of our own, without the device dependency.
	rm -f "$root/etc/systemd/system/cubelet-vm-scenario.service"
	ln -sfn /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
	cat >"$root/etc/systemd/system/cubelet-vm-shell.service" <<'UNIT'
[Unit]
Description=cubelet VM harness root shell on ttyS0
After=containerd.service systemd-user-sessions.service

[Service]
ExecStart=-/sbin/agetty --autologin root --noclear --keep-baud ttyS0 115200 vt220
Type=idle
Restart=always
UtmpIdentifier=ttyS0
TTYPath=/dev/ttyS0
TTYReset=yes
TTYVHangup=yes
KillMode=process
IgnoreSIGPIPE=no
SendSIGHUP=yes
UNIT
	mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
	ln -sfn ../cubelet-vm-shell.service \
		"$root/etc/systemd/system/multi-user.target.wants/cubelet-vm-shell.service"
else
	ln -sfn /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
	mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
	ln -sfn ../cubelet-vm-scenario.service \
		"$root/etc/systemd/system/multi-user.target.wants/cubelet-vm-scenario.service"
	mkdir -p "$rundir/scenarios"
	: >"$rundir/plan"
	for e in "${plan[@]}"; do
		read -r n p d t <<<"$e"
		cp "$p" "$rundir/scenarios/$n.sh"
		# the guest stops a scenario 120 s before the host would kill the VM,
		# so that its diagnostics still get written
		st=$((t - 120))
		[ "$st" -lt 60 ] && st=60
		echo "$n $d $st" >>"$rundir/plan"
	done
	cp "$HERE/guest-run.sh" "$rundir/run.sh"
fi
for d in "${files[@]}"; do
	[ -n "$d" ] || continue
	[ -d "$d" ] || { echo "run-vm: extra files directory $d does not exist" >&2; exit 2; }
	# --remove-destination: never write through a mask link to /dev/null.
	cp -a --remove-destination "$d/." "$root/"
done

{
	echo "VM_SCENARIO=$name"
	echo "VM_REPO=$REPO"
	echo "VM_LIB=/vm/lib"
	echo "VM_MEM=$mem"
	echo "VM_IMAGES=${VM_IMAGES:-}"
	echo "VM_IMAGES_BUILDER=${VM_IMAGES_BUILDER:-}"
	echo "VM_DEBS=${VM_DEBS:-$VM_DIR/debs}"
	echo "BENCH_PODS=${BENCH_PODS:-}"
	# every other BENCH_* setting the benches read (BENCH_IDLE_S,
	# BENCH_CLUSTER_PODS, BENCH_PEER_AGENTS, BENCH_PEER_EVICTIONS, ...), quoted
	while IFS= read -r v; do
		[ "$v" = BENCH_PODS ] || printf '%s=%q\n' "$v" "${!v}"
	done < <(compgen -e | grep '^BENCH_')
} >"$rundir/env"

# ---- qemu ----------------------------------------------------------------------
# host_tsc_khz: the host's TSC frequency in kHz from its kernel's log (the
# refined calibration, else the detected one), or nothing
host_tsc_khz() {
	{ dmesg; journalctl -k -b -q --no-pager; } 2>/dev/null | sed -n \
		-e 's/.*tsc: Refined TSC clocksource calibration: \([0-9]*\)\.\([0-9][0-9][0-9]\) MHz.*/\1\2 refined/p' \
		-e 's/.*tsc: Detected \([0-9]*\)\.\([0-9][0-9][0-9]\) MHz processor.*/\1\2 detected/p' |
		sort -k2,2r | head -n 1 | cut -d' ' -f1
}
# tsc=reliable: no clocksource watchdog, so that a guest slowed by a loaded host
# never falls back to the HPET, whose every read is emulated
append="console=ttyS0,115200 panic=-1 rdinit=/init mitigations=off tsc=reliable SYSTEMD_COLORS=0"
append+=" systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all"
append+=" systemd.unit=multi-user.target systemd.journald.forward_to_console=0"
append+=" cubeletvm.modules=$VM_DIR/kernel/lib/modules/$abi"
append+=" cubeletvm.tmpfs=/var/lib/containerd,/var/lib/containers,/var/lib/cubelet"
# tsc_early_khz: the guest's TSC counts at the host's rate (TCG reads the
# host's), and the host's kernel has measured it. Left to calibrate, a guest
# booting beside a busy one once timed its TSC against the PIT at 350 MHz
# instead of 2596 (the kernel prefers the PIT when the PIT and the HPET
# disagree, and its later refinement gives up beyond 1 %): that guest's clock
# ran 7.4 times fast, and every sleep and timeout in its scenarios was short.
tsc_khz=$(host_tsc_khz)
[ -n "$tsc_khz" ] && append+=" tsc_early_khz=$tsc_khz"
append+=" ${VM_APPEND:-}"

# shellcheck disable=SC2054 # commas inside qemu's option values
qemu=(qemu-system-x86_64
	-nodefaults -no-user-config -display none -no-reboot
	# TCG's one host thread for all 4 vCPUs: two guests at once on 2 cores,
	# each with a thread per vCPU (multi), wait on each other's descheduled
	# vCPU threads; a pair of guests (51-gpu-systemd, 52-memory-qos) took 960 s
	# with multi and 500 s with single, every check passing (VM_TCG_THREAD)
	-machine pc -accel "tcg,thread=${VM_TCG_THREAD:-single}"
	# qemu64 (x86-64's baseline, SSE2): with "max" the guest's kernel, glibc
	# and Go runtime take AVX paths and save AVX state at every context
	# switch, all of it emulated; side by side on one host, qemu64 booted in
	# 56 s against 68, ran `ctr version` in 0.31 s against 0.48 and started
	# 6 pods in 94 s against 104 (VM_CPU). As GenuineIntel the guest sees 2
	# threads a core (TCG's AMD CPUs lack topoext, so no SMT).
	-cpu "${VM_CPU:-qemu64},vendor=GenuineIntel"
	-smp "$smp" -m "$mem"
	-kernel "$VM_DIR/vmlinuz" -initrd "$VM_DIR/initrd.img" -append "$append"
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
	-virtfs "local,path=$rundir,mount_tag=vmshare,security_model=none,multidevs=remap"
	-device virtio-rng-pci)
# shellcheck disable=SC2206
qemu+=(${VM_QEMU_ARGS:-})

if [ "$shell" = 1 ]; then
	echo "run-vm: shell VM ($mem); leave with 'poweroff' (or Ctrl-A X)" >&2
	exec "${qemu[@]}" -serial mon:stdio
fi

echo "# vm: $name: booting ($mem, -smp $smp, ${#plan[@]} scenario(s), console $rundir/console.log)" >&2
out=$rundir/out
start=$(date +%s.%N)
"${qemu[@]}" -serial "file:$rundir/console.log" </dev/null >"$rundir/qemu.log" 2>&1 &
qpid=$!
# The watchdog: each scenario gets its TIMEOUT (+ 60 s) from the moment its
# results directory appears, the boot 600 s until the first one does.
killed=0 cur="" since=$(date +%s)
while kill -0 "$qpid" 2>/dev/null; do
	sleep 2
	now=$(date +%s)
	running="" limit=600
	for e in "${plan[@]}"; do
		read -r n _ _ t <<<"$e"
		if [ -d "$out/$n" ] && [ ! -f "$out/$n/done" ]; then
			running=$n limit=$((t + 60))
		fi
	done
	if [ "$running" != "$cur" ]; then
		cur=$running since=$now
	fi
	# between two scenarios (the reset) and after the last: the boot's limit
	if [ $((now - since)) -gt "$limit" ] && [ ! -f "$out/done" ]; then
		echo "# vm: $name: ${cur:-the boot} passed its ${limit} s: killing the VM" >&2
		kill "$qpid" 2>/dev/null
		sleep 10
		kill -9 "$qpid" 2>/dev/null
		killed=1
		break
	fi
done
wait "$qpid"
qrc=$?
end=$(date +%s.%N)
wall=$(echo "$start $end" | awk '{ printf "%.1f", $2 - $1 }')
echo "$wall" >"$rundir/wall_s"
# the CPU the guest took from the host (qemu and this script's other
# children): beside the wall, how much of it the guest waited
times >"$rundir/times" # (a builtin redirected: this shell's own children)
cpu=$(tail -n 1 "$rundir/times" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] }
	printf "%.1f", s }')
echo "$cpu" >"$rundir/cpu_s"

# each scenario's journal, copied by the guest as files: formatted here
for j in "$out"/*/journal; do
	[ -d "$j" ] || continue
	journalctl --no-pager -o short-monotonic --directory "$j" >"${j%/journal}/journal.txt" 2>&1 && rm -rf "$j"
done

guest_times=""
if [ -f "$out/timing" ]; then
	guest_times=$(tr '\n' ' ' <"$out/timing")
fi
echo "# vm: $name: qemu exit $qrc after ${wall}s wall, ${cpu}s of host CPU; guest: ${guest_times:-no timing}" >&2
# the guest's clock against the host's: its last uptime cannot exceed the wall
fast=$(echo "$guest_times" | tr ' ' '\n' | sed -n 's/^[a-z_]*_uptime=//p' | sort -n | tail -n 1 |
	awk -v w="$wall" '$1 > w * 1.2 + 10 { printf "%.1f", $1 / w }')
[ -n "$fast" ] && echo "# vm: $name: the guest's clock ran ${fast} times the host's: its sleeps, timeouts and timings were short" >&2

rc=0
for e in "${plan[@]}"; do
	read -r n _ _ _ <<<"$e"
	o=$out/$n
	[ "${#plan[@]}" -gt 1 ] && [ -d "$o" ] && echo "# --- $n"
	[ -f "$o/tap.txt" ] && cat "$o/tap.txt"
	[ -f "$o/done" ] && [ -f "$o/rc" ] || continue
	r=$(cat "$o/rc")
	# The guest's own timeout (timeout(1) in guest-run.sh) stopped the scenario.
	if [ "$r" = 124 ] || [ "$r" = 137 ]; then
		r=123
	elif [ "$r" = 0 ] && grep -q '^not ok' "$o/tap.txt"; then
		r=1
	fi
	[ "$r" != 0 ] && [ "$rc" = 0 ] && rc=$r
done
if [ "$killed" = 1 ]; then
	echo "# vm: $name: VM killed; console tail:" >&2
	tail -n 20 "$rundir/console.log" | sed 's/^/#   /' >&2
	exit 124
fi
if [ ! -f "$out/done" ]; then
	echo "# vm: $name: VM ended (qemu exit $qrc) without a result; console tail:" >&2
	[ -f "$out/init-error" ] && sed 's/^/#   init: /' "$out/init-error" >&2
	tail -n 20 "$rundir/console.log" | sed 's/^/#   /' >&2
	sed 's/^/#   qemu: /' "$rundir/qemu.log" >&2
	exit 125
fi
exit "$rc"
