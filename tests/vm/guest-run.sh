#!/bin/sh
# Runs inside the guest (as cubelet-vm-scenario.service, root), from the run
# directory shared at /vm:
#   /vm/env          variables written by run-vm.sh (VM_REPO, VM_LIB, ...)
#   /vm/scenario.sh  the scenario
# and writes under /vm/out:
#   tap.txt     the scenario's stdout (TAP)      stderr.txt  its stderr
#   rc          its exit status                  timing      guest uptimes
#   journal.txt the boot's journal               failed-units.txt
#   done        written last: the run completed
# The unit powers the guest off when this script ends.
out=/vm/out
mkdir -p "$out"
set -a
# shellcheck disable=SC1091
. /vm/env
set +a
export VM_OUT="$out" PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
up() { cut -d' ' -f1 /proc/uptime; }

echo "scenario_start_uptime=$(up)" >"$out/timing"
echo "# vm: running $VM_SCENARIO (guest uptime $(up) s)"
cd /tmp || exit 1
# TAP to the console as well (the unit's stdout is journal+console).
{
	timeout -k 10 "${VM_SCENARIO_TIMEOUT:-480}" bash /vm/scenario.sh 2>"$out/stderr.txt"
	echo $? >"$out/rc"
} | tee "$out/tap.txt"
echo "scenario_end_uptime=$(up)" >>"$out/timing"
if [ "$(cat "$out/rc")" = 124 ]; then
	echo "# vm: scenario timed out after ${VM_SCENARIO_TIMEOUT:-480} s" | tee -a "$out/tap.txt"
fi

# Diagnostics for whoever reads a failure.
systemctl list-units --failed --no-pager >"$out/failed-units.txt" 2>&1
journalctl -b --no-pager -o short-monotonic >"$out/journal.txt" 2>&1
date -u +%FT%TZ >"$out/done"
sync
exit 0
