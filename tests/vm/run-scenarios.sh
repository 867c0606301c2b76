#!/bin/bash
# Runs every VM scenario (tests/vm/scenarios/*.sh, in name order), each in a
# fresh VM through run-vm.sh, and prints one TAP stream: each scenario's tests
# renumbered and prefixed with the scenario's name, the plan, and a last line
# "N passed, N failed". Exit status 0 only when nothing failed. A guest that
# freezes (killed at its timeout) is run once more in a fresh VM.
#
#   VM_SCENARIOS="00-boot 10-*"   run only these (shell patterns on the name)
#   VM_DRIVER_MATRIX="20-pods ..." the scenarios run a second time with the
#                                 systemd cgroup driver, as NAME@systemd
#                                 (default: 10-cgroup-kubepods 20-pods
#                                 21-recovery 30-admission 40-eviction;
#                                 empty: none)
#   VM_IMAGES_BUILDER=PATH        the image builder (default
#                                 packaging/images/build-images.sh); when it
#                                 exists it runs once, on the host, into
#                                 VM_DIR/images, and the guests get VM_IMAGES
# Everything else (VM_MEM, VM_TIMEOUT, ...) is run-vm.sh's.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VM_DIR=${VM_DIR:-$REPO/build/vm}
mkdir -p "$VM_DIR"
VM_DIR=$(cd "$VM_DIR" && pwd)
export VM_DIR

VM_DRIVER_MATRIX=${VM_DRIVER_MATRIX-10-cgroup-kubepods 20-pods 21-recovery 30-admission 40-eviction}
pass=0 fail=0 skip=0 n=0
emit() { # emit "ok"|"not ok" DESCRIPTION
	n=$((n + 1))
	echo "$1 $n - $2"
	case $1 in
	ok) case $2 in *"# SKIP"* | *"# skip"*) skip=$((skip + 1)) ;; *) pass=$((pass + 1)) ;; esac ;;
	*) fail=$((fail + 1)) ;;
	esac
}

selected() { # selected NAME: does VM_SCENARIOS pick it?
	[ -z "${VM_SCENARIOS:-}" ] && return 0
	for p in $VM_SCENARIOS; do
		# shellcheck disable=SC2254
		case $1 in $p | $p.sh) return 0 ;; esac
	done
	return 1
}

# The local images, built once on the host for every scenario.
builder=${VM_IMAGES_BUILDER:-$REPO/packaging/images/build-images.sh}
if [ -z "${VM_IMAGES:-}" ] && [ -x "$builder" ]; then
	rm -rf "$VM_DIR/images"
	if "$builder" "$VM_DIR/images" >"$VM_DIR/images.log" 2>&1; then
		export VM_IMAGES=$VM_DIR/images
		echo "# vm: images built by $builder into $VM_IMAGES"
	else
		echo "# vm: $builder failed (log: $VM_DIR/images.log); guests build their own"
		sed 's/^/#   /' "$VM_DIR/images.log" | tail -n 20
	fi
fi
export VM_IMAGES_BUILDER=$builder

# run_one SCRIPT NAME DRIVER: one scenario in a fresh VM (its results in
# VM_DIR/runs/NAME), its tests renumbered and prefixed with NAME.
run_one() {
	s=$1 name=$2
	err=$VM_DIR/run-vm.$name.stderr
	# A guest that froze (killed at its timeout, or no result at all) gets
	# one more fresh VM; the frozen run is kept beside it. A scenario that
	# hangs for a reason of its own hangs again and fails.
	for attempt in 1 2; do
		tap=$(CUBELET_DRIVER=$3 "$HERE/run-vm.sh" -o "$VM_DIR/runs/$name" "$s" 2>"$err")
		rc=$?
		if [ "$attempt" = 2 ] || { [ "$rc" != 124 ] && [ "$rc" != 125 ]; }; then
			break
		fi
		sed 's/^\([^#]\)/# \1/' "$err"
		echo "# vm: $name: the guest froze (exit $rc); once more in a fresh VM, the frozen run kept in" \
			"$VM_DIR/runs/$name.frozen"
		rm -rf "$VM_DIR/runs/$name.frozen"
		mv "$VM_DIR/runs/$name" "$VM_DIR/runs/$name.frozen"
	done
	# run-vm.sh's own lines are TAP comments already; make sure of the rest.
	sed 's/^\([^#]\)/# \1/' "$err"
	rm -f "$err"
	echo "# --- $name (wall $(cat "$VM_DIR/runs/$name/wall_s" 2>/dev/null || echo '?') s," \
		"results in $VM_DIR/runs/$name)"
	planned="" seen=0 nok=0
	while IFS= read -r line; do
		case $line in
		"ok "* | "not ok "*)
			seen=$((seen + 1))
			status=ok
			case $line in "not ok "*) status="not ok" nok=$((nok + 1)) ;; esac
			# Drop the scenario's own number and dash: "ok 3 - x" -> "x".
			# shellcheck disable=SC2001
			desc=$(echo "${line#"$status"}" | sed 's/^ *[0-9]* *-\{0,1\} *//')
			emit "$status" "$name: $desc"
			;;
		1..*) planned=${line#1..} ;;
		*) echo "$line" ;;
		esac
	done <<<"$tap"
	case $rc in
	0 | 1) ;;
	123) emit "not ok" "$name: the scenario ran past its time and was stopped in the guest" ;;
	124) emit "not ok" "$name: the VM ran past its timeout and was killed" ;;
	125) emit "not ok" "$name: the VM ended without a result (see $VM_DIR/runs/$name/console.log)" ;;
	*) [ "$nok" -eq 0 ] && emit "not ok" "$name: the scenario exited with status $rc" ;;
	esac
	if [ "$rc" -le 1 ] && [ -z "$planned" ]; then
		emit "not ok" "$name: printed no TAP plan (it did not finish)"
	elif [ -n "$planned" ] && [ "$planned" != "$seen" ]; then
		emit "not ok" "$name: planned $planned tests, ran $seen"
	fi
	if [ "$rc" = 1 ] && [ "$nok" -eq 0 ]; then
		emit "not ok" "$name: the scenario exited with status 1"
	fi
}

in_matrix() { # in_matrix NAME: is it run a second time with the systemd driver?
	for p in $VM_DRIVER_MATRIX; do
		[ "$1" = "$p" ] && return 0
	done
	return 1
}

total_start=$(date +%s)
# Every scenario with the cgroupfs driver (containerd SystemdCgroup = false),
# then those of the driver matrix again with the systemd driver
# (cgroupDriver: systemd, SystemdCgroup = true), named NAME@systemd.
for s in "$HERE"/scenarios/*.sh; do
	[ -f "$s" ] || continue
	name=$(basename "$s" .sh)
	selected "$name" || continue
	run_one "$s" "$name" cgroupfs
done
for s in "$HERE"/scenarios/*.sh; do
	[ -f "$s" ] || continue
	name=$(basename "$s" .sh)
	if in_matrix "$name" && { selected "$name" || selected "$name@systemd"; }; then
		run_one "$s" "$name@systemd" systemd
	fi
done

echo "1..$n"
echo "# vm: all scenarios took $(($(date +%s) - total_start)) s wall"
[ "$skip" -gt 0 ] && echo "# $skip skipped"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
