#!/bin/bash
# Graceful node shutdown on a real `systemctl poweroff` (issue 23 part 4):
# logind's PrepareForShutdown, cubelet's delay lock (lib/poweroff.sh). The
# guest powers off at the end.
# vm-order: last
# vm-timeout: 420
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/poweroff.sh"
poweroff_scenario logind systemctl poweroff
