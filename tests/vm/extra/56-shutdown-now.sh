#!/bin/bash
# Graceful node shutdown on root's `shutdown -h now` (issue 23 part 4), the
# command of kubelet's "does not work" reports: with Debian 12's systemd it
# goes through logind as `systemctl poweroff` does (lib/poweroff.sh). The
# guest powers off at the end.
# vm-order: last
# vm-timeout: 420
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/poweroff.sh"
poweroff_scenario logind shutdown -h now
