#!/bin/bash
# Runs every VM scenario (tests/vm/scenarios/*.sh, in name order) through
# run-vm.sh and prints one TAP stream: each scenario's tests renumbered and
# prefixed with the scenario's name, the plan, and a last line
# "N passed, N failed". Exit status 0 only when nothing failed.
#
# Scenarios share guests: those of the same guest (header "# vm-guest: G",
# default "main"; "# vm-guest-systemd: G" for its NAME@systemd run) and the
# same memory ("# vm-mem:") run one after the other in one VM, in name order
# ("# vm-order: last": after the others), the node reset between them to the
# state recorded at boot (lib/node-state.sh), which each scenario checks first
# (t_node_clean). "# vm-guest: own" gives a scenario a fresh VM of its own.
# The driver is set per scenario (cubelet_install writes containerd's
# SystemdCgroup), so the systemd-driver runs share guests too.
# A guest that freezes (killed by run-vm.sh's watchdog, or no result) gets
# its scenarios that did not finish run once more in a fresh VM.
#
# `make test` runs every scenario (tests/vm/scenarios and tests/vm/extra)
# and the systemd-driver matrix (22-cgroup-driver also runs pods under both
# drivers): there is no tier left out of CI.
#   VM_SCENARIOS="00-boot 10-*"   run only these (shell patterns on the name;
#                                 NAME@systemd whatever the matrix)
#   VM_DRIVER_MATRIX="20-pods ..." the scenarios run a second time with the
#                                 systemd cgroup driver, as NAME@systemd
#                                 (default: 10-cgroup-kubepods 20-pods
#                                 21-recovery 30-admission 40-eviction;
#                                 empty: none)
#   VM_JOBS=N                     guests run at once (default 2)
#   VM_PLAN_ONLY=1                print each guest's scenarios and stop
#   VM_TIMINGS=FILE               "WHAT<TAB>SECONDS" lines appended: each
#                                 guest's boot and wall, each scenario
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
VM_JOBS=${VM_JOBS:-2}

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
timing() { [ -n "${VM_TIMINGS:-}" ] && printf '%s\t%s\n' "$1" "$2" >>"$VM_TIMINGS"; }

selected() { # selected NAME: does VM_SCENARIOS (all when unset) pick it?
	[ -z "${VM_SCENARIOS:-}" ] && return 0
	for p in $VM_SCENARIOS; do
		# shellcheck disable=SC2254
		case $1 in $p | $p.sh) return 0 ;; esac
	done
	return 1
}
in_matrix() { # in_matrix NAME: is it run a second time with the systemd driver?
	for p in $VM_DRIVER_MATRIX; do
		[ "$1" = "$p" ] && return 0
	done
	return 1
}
header() { head -n 30 "$1" | sed -n "s/^# vm-$2: *\([^ ]*\).*/\1/p" | head -n 1; }

# The local images, built once on the host for every scenario.
builder=${VM_IMAGES_BUILDER:-$REPO/packaging/images/build-images.sh}
if [ -z "${VM_IMAGES:-}" ] && [ -z "${VM_PLAN_ONLY:-}" ] && [ -x "$builder" ]; then
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

# ---- the guests: "NAME PATH DRIVER TIMEOUT" lines in VM_DIR/plans/GUEST.plan ----
plans=$VM_DIR/plans
mkdir -p "$VM_DIR/runs"
rm -rf "$plans"
mkdir -p "$plans"
guests=()
add() { # add NAME PATH DRIVER
	mem=$(header "$2" mem)
	mem=${mem:-${VM_MEM:-2048M}}
	t=$(header "$2" timeout)
	t=${t:-${VM_TIMEOUT:-600}}
	g=
	[ "$3" = systemd ] && g=$(header "$2" guest-systemd)
	g=${g:-$(header "$2" guest)}
	g=${g:-main}
	[ "$g" = own ] && g=${1//@/-}
	g=$g-$mem
	[ "$(header "$2" order)" = last ] && g=$g.last
	[ -f "$plans/$g.plan" ] || guests+=("$g")
	echo "$1 $2 $3 $t" >>"$plans/$g.plan"
}
scenario_files=("$HERE"/scenarios/*.sh "$HERE"/extra/*.sh)
for s in "${scenario_files[@]}"; do
	[ -f "$s" ] || continue
	name=$(basename "$s" .sh)
	selected "$name" && add "$name" "$s" cgroupfs
done
for s in "${scenario_files[@]}"; do
	[ -f "$s" ] || continue
	name=$(basename "$s" .sh)
	# the matrix's second runs, or a NAME@systemd named in VM_SCENARIOS
	if { in_matrix "$name" && selected "$name"; } ||
		{ [ -n "${VM_SCENARIOS:-}" ] && selected "$name@systemd"; }; then
		add "$name@systemd" "$s" systemd
	fi
done
# "last" scenarios join the end of their guest's plan
order=()
for g in "${guests[@]}"; do
	case $g in
	*.last)
		if [ -f "$plans/${g%.last}.plan" ]; then
			cat "$plans/$g.plan" >>"$plans/${g%.last}.plan"
			rm "$plans/$g.plan"
		else
			mv "$plans/$g.plan" "$plans/${g%.last}.plan"
			order+=("${g%.last}")
		fi
		;;
	*) order+=("$g") ;;
	esac
done
# the longest plans (by their timeouts) first
mapfile -t order < <(for g in "${order[@]}"; do
	echo "$(awk '{ s += $4 } END { print s + 0 }' "$plans/$g.plan") $g"
done | sort -rn | cut -d' ' -f2)

# run_guest GUEST: its plan in a fresh VM (VM_DIR/runs/GUEST); what did not
# finish there (a frozen guest) once more in another (VM_DIR/runs/GUEST.retry)
run_guest() {
	local g=$1 rc name rest
	rm -rf "$VM_DIR/runs/$g".*
	"$HERE/run-vm.sh" -p "$plans/$g.plan" -o "$VM_DIR/runs/$g" >/dev/null 2>"$VM_DIR/runs/$g.stderr"
	echo $? >"$VM_DIR/runs/$g.rc"
	rm -rf "$VM_DIR/runs/$g.retry" "$VM_DIR/plans/$g.retry.plan"
	while read -r name rest; do
		[ -f "$VM_DIR/runs/$g/out/$name/done" ] || echo "$name $rest" >>"$plans/$g.retry.plan"
	done <"$plans/$g.plan"
	rc=$(cat "$VM_DIR/runs/$g.rc")
	if [ -f "$plans/$g.retry.plan" ] && { [ "$rc" = 124 ] || [ "$rc" = 125 ]; }; then
		echo "# vm: $g: the guest froze (exit $rc) before $(cut -d' ' -f1 "$plans/$g.retry.plan" | tr '\n' ' ');" \
			"those once more in a fresh VM" >>"$VM_DIR/runs/$g.stderr"
		"$HERE/run-vm.sh" -p "$plans/$g.retry.plan" -o "$VM_DIR/runs/$g.retry" >/dev/null \
			2>>"$VM_DIR/runs/$g.stderr"
		echo $? >"$VM_DIR/runs/$g.retry.rc"
	fi
}

# report_scenario NAME DIR RC: one scenario's TAP renumbered and prefixed
report_scenario() {
	local name=$1 o=$2 vmrc=$3 rc="" t r planned seen nok status desc line
	[ -f "$o/done" ] && rc=$(cat "$o/rc" 2>/dev/null)
	t=$(awk -F= '$1 == "scenario_start_uptime" { s = $2 } $1 == "scenario_end_uptime" { e = $2 }
		END { if (e != "") printf "%.1f", e - s }' "$o/timing" 2>/dev/null)
	r=$(awk -F= '$1 == "reset_start_uptime" { s = $2 } $1 == "scenario_start_uptime" { e = $2 }
		END { if (s != "") printf "%.1f", e - s }' "$o/timing" 2>/dev/null)
	echo "# --- $name (${t:-?} s${r:+, after a ${r} s reset}; results in $o)"
	timing "vm scenario $name" "${t:-?}"
	[ -n "$r" ] && timing "vm reset before $name" "$r"
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
	done < <(cat "$o/tap.txt" 2>/dev/null)
	if [ -z "$rc" ]; then
		case $vmrc in
		124) emit "not ok" "$name: the VM ran past its time and was killed" ;;
		*) emit "not ok" "$name: the VM ended without its result (see $o/../../console.log)" ;;
		esac
		return
	fi
	case $rc in
	0 | 1) ;;
	124 | 137) emit "not ok" "$name: the scenario ran past its time and was stopped in the guest" ;;
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

# report_guest GUEST: the TAP of each of its scenarios, from the run that
# finished it (the first VM or the retry)
report_guest() {
	local g=$1 run d boot name
	sed 's/^\([^#]\)/# \1/' "$VM_DIR/runs/$g.stderr"
	for run in "$g" "$g.retry"; do
		d=$VM_DIR/runs/$run
		[ -d "$d" ] || continue
		boot=$(awk -F= '$1 == "baseline_uptime" { print $2 }' "$d/out/timing" 2>/dev/null)
		echo "# === guest $run: $(cat "$d/wall_s" 2>/dev/null || echo '?') s wall, node ready and recorded" \
			"at ${boot:-?} s of uptime"
		timing "vm guest $run (wall)" "$(cat "$d/wall_s" 2>/dev/null || echo '?')"
		timing "vm guest $run (boot to baseline)" "${boot:-?}"
		timing "vm guest $run (host CPU)" "$(cat "$d/cpu_s" 2>/dev/null || echo '?')"
	done
	while read -r name _; do
		if [ -f "$VM_DIR/runs/$g/out/$name/done" ] || [ ! -d "$VM_DIR/runs/$g.retry" ]; then
			report_scenario "$name" "$VM_DIR/runs/$g/out/$name" "$(cat "$VM_DIR/runs/$g.rc")"
		else
			report_scenario "$name" "$VM_DIR/runs/$g.retry/out/$name" \
				"$(cat "$VM_DIR/runs/$g.retry.rc" 2>/dev/null || echo 125)"
		fi
	done <"$plans/$g.plan"
}

if [ -n "${VM_PLAN_ONLY:-}" ]; then # the guests' plans, nothing booted
	for g in "${order[@]}"; do echo "$g: $(cut -d' ' -f1 "$plans/$g.plan" | tr '\n' ' ')"; done
	exit 0
fi
total_start=$(date +%s)
echo "# vm: driver matrix: ${VM_DRIVER_MATRIX:-none}"
for g in "${order[@]}"; do
	echo "# vm: guest $g: $(cut -d' ' -f1 "$plans/$g.plan" | tr '\n' ' ')"
done
# At most VM_JOBS guests at once; each reported once it is done.
declare -A pid_guest=()
running=0
for g in "${order[@]}"; do
	if [ "$running" -ge "$VM_JOBS" ]; then
		wait -n -p done_pid
		report_guest "${pid_guest[$done_pid]}"
		running=$((running - 1))
	fi
	run_guest "$g" &
	pid_guest[$!]=$g
	running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
	wait -n -p done_pid
	report_guest "${pid_guest[$done_pid]}"
	running=$((running - 1))
done

echo "1..$n"
wall=$(($(date +%s) - total_start))
echo "# vm: all scenarios took $wall s wall"
timing "vm scenarios (all guests, wall)" "$wall"
[ "$skip" -gt 0 ] && echo "# $skip skipped"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
