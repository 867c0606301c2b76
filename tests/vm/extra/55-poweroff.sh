#!/bin/bash
# Graceful node shutdown on a real `systemctl poweroff` (issue 23 part 4):
# logind's PrepareForShutdown, cubelet's delay lock (lib/poweroff.sh). The
# guest powers off at the end. On Debian 12's systemd `shutdown -h now`
# takes the same path (56-shutdown-now, last in guest main); this one is
# last in guest b.
# vm-guest: b
# vm-order: last
# vm-timeout: 420
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/poweroff.sh"
poweroff_scenario logind systemctl poweroff
