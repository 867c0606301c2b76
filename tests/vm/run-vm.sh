#!/bin/bash
# Boots Debian's kernel under qemu (TCG) with systemd as PID 1 over the host's
# root filesystem, runs one scenario script in it once containerd.service is
# up, powers off, and prints the scenario's TAP on stdout.
#
#   tests/vm/run-vm.sh [-m MEM] [-t SECONDS] [-f DIR]... [-o RUNDIR] SCENARIO.sh
#   tests/vm/run-vm.sh -s [-m MEM] [-f DIR]...        # interactive shell
#
# The guest: 4 vCPUs as 1 socket x 2 cores x 2 threads, cgroup v2 only
# (systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all), root = overlay of the
# host's / (9p, read-only) and a tmpfs, containerd/runc from the host.
# Needs `make vm-image` first (tests/vm/build-image.sh).
#
# Settings, strongest first: options, then the scenario's own header lines
# ("# vm-mem: 1024M", "# vm-timeout: 900"), then the environment, then the
# defaults:
#   VM_MEM      guest memory (2048M)         VM_TIMEOUT  seconds before the VM is
#   VM_SMP      -smp value                                killed (600)
#               (4,sockets=1,cores=2,threads=2)
#   VM_FILES    colon-separated directories copied into the guest's / before
#               boot (as -f); SCENARIO's sibling directory NAME.files/ always is
#   VM_DIR      image and run directory (build/vm)
#   VM_IMAGES   host directory with pause.tar/busybox.tar, passed to the guest
#   VM_DEBS     host directory with the package builds 1/ and 2/ (make vm-debs; default VM_DIR/debs)
#   VM_APPEND   extra kernel command line   VM_QEMU_ARGS  extra qemu arguments
#
# Results land in RUNDIR (default VM_DIR/runs/NAME): console.log (serial
# console), out/ (tap.txt, stderr.txt, rc, journal.txt, timing, ...), wall_s.
# Exit status: the scenario's (1 also when it printed "not ok"), 123 when the
# guest stopped the scenario for time (VM_TIMEOUT - 120 s), 124 when the host
# killed the VM for time, 125 when the VM ended without a result, 2 on usage.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VM_DIR=${VM_DIR:-$REPO/build/vm}
mkdir -p "$VM_DIR" && VM_DIR=$(cd "$VM_DIR" && pwd) # the guest needs absolute paths

usage() {
	sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

mem="" timeout_s="" rundir="" shell=0
files=()
while getopts "m:t:f:o:sh" opt; do
	case $opt in
	m) mem=$OPTARG ;;
	t) timeout_s=$OPTARG ;;
	f) files+=("$OPTARG") ;;
	o) rundir=$OPTARG ;;
	s) shell=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
scenario=${1:-}
if [ "$shell" = 0 ] && { [ -z "$scenario" ] || [ ! -f "$scenario" ]; }; then
	echo "run-vm: no scenario file given (or -s for a shell)" >&2
	usage
fi

# A scenario's header: "# vm-KEY: VALUE" lines in its first 30 lines.
header() {
	[ -n "$scenario" ] || return 0
	head -n 30 "$scenario" | sed -n "s/^# vm-$1: *\([^ ]*\).*/\1/p" | head -n 1
}
mem=${mem:-$(header mem)}
mem=${mem:-${VM_MEM:-2048M}}
timeout_s=${timeout_s:-$(header timeout)}
timeout_s=${timeout_s:-${VM_TIMEOUT:-600}}
smp=${VM_SMP:-4,sockets=1,cores=2,threads=2}

if [ -n "$scenario" ]; then
	name=$(basename "$scenario" .sh)
	scenario=$(cd "$(dirname "$scenario")" && pwd)/$(basename "$scenario")
	[ -d "${scenario%.sh}.files" ] && files=("${scenario%.sh}.files" "${files[@]}")
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
	cp "$scenario" "$rundir/scenario.sh"
	cp "$HERE/guest-run.sh" "$rundir/run.sh"
fi
for d in "${files[@]}"; do
	[ -n "$d" ] || continue
	[ -d "$d" ] || { echo "run-vm: extra files directory $d does not exist" >&2; exit 2; }
	# --remove-destination: never write through a mask link to /dev/null.
	cp -a --remove-destination "$d/." "$root/"
done

# The guest leaves itself some time for diagnostics before the host kills it.
scenario_timeout=$((timeout_s - 120))
[ "$scenario_timeout" -lt 60 ] && scenario_timeout=60
{
	echo "VM_SCENARIO=$name"
	echo "VM_REPO=$REPO"
	echo "VM_LIB=$HERE/lib"
	echo "VM_MEM=$mem"
	echo "VM_IMAGES=${VM_IMAGES:-}"
	echo "VM_IMAGES_BUILDER=${VM_IMAGES_BUILDER:-}"
	echo "VM_DEBS=${VM_DEBS:-$VM_DIR/debs}"
	echo "VM_SCENARIO_TIMEOUT=$scenario_timeout"
	echo "BENCH_PODS=${BENCH_PODS:-}"
	echo "CUBELET_DRIVER=${CUBELET_DRIVER:-}"
} >"$rundir/env"

# ---- qemu ----------------------------------------------------------------------
append="console=ttyS0,115200 panic=-1 rdinit=/init mitigations=off SYSTEMD_COLORS=0"
append+=" systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all"
append+=" systemd.unit=multi-user.target systemd.journald.forward_to_console=0"
append+=" cubeletvm.modules=$VM_DIR/kernel/lib/modules/$abi"
append+=" cubeletvm.tmpfs=/var/lib/containerd,/var/lib/containers,/var/lib/cubelet"
append+=" ${VM_APPEND:-}"

# shellcheck disable=SC2054 # commas inside qemu's option values
qemu=(qemu-system-x86_64
	-nodefaults -no-user-config -display none -no-reboot
	-machine pc -accel tcg,thread=multi
	# TCG's "max" CPU says AuthenticAMD, and AMD CPUs without topoext (which
	# TCG lacks) show no SMT: as GenuineIntel the guest sees 2 threads a core.
	-cpu max,vendor=GenuineIntel
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

echo "# vm: $name: booting ($mem, -smp $smp, timeout ${timeout_s}s, console $rundir/console.log)" >&2
start=$(date +%s.%N)
timeout -k 10 "$timeout_s" "${qemu[@]}" -serial "file:$rundir/console.log" \
	</dev/null >"$rundir/qemu.log" 2>&1
qrc=$?
end=$(date +%s.%N)
wall=$(echo "$start $end" | awk '{ printf "%.1f", $2 - $1 }')
echo "$wall" >"$rundir/wall_s"

out=$rundir/out
guest_times=""
if [ -f "$out/timing" ]; then
	guest_times=$(tr '\n' ' ' <"$out/timing")
fi
echo "# vm: $name: qemu exit $qrc after ${wall}s wall; guest: ${guest_times:-no timing}" >&2

[ -f "$out/tap.txt" ] && cat "$out/tap.txt"
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "# vm: $name: VM killed after ${timeout_s}s; console tail:" >&2
	tail -n 20 "$rundir/console.log" | sed 's/^/#   /' >&2
	exit 124
fi
if [ ! -f "$out/done" ] || [ ! -f "$out/rc" ]; then
	echo "# vm: $name: VM ended (qemu exit $qrc) without a result; console tail:" >&2
	[ -f "$out/init-error" ] && sed 's/^/#   init: /' "$out/init-error" >&2
	tail -n 20 "$rundir/console.log" | sed 's/^/#   /' >&2
	sed 's/^/#   qemu: /' "$rundir/qemu.log" >&2
	exit 125
fi
rc=$(cat "$out/rc")
# The guest's own timeout (timeout(1) in guest-run.sh) stopped the scenario.
[ "$rc" = 124 ] || [ "$rc" = 137 ] && exit 123
if [ "$rc" = 0 ] && grep -q '^not ok' "$out/tap.txt"; then
	rc=1
fi
exit "$rc"
