#!/bin/bash
# Graceful node shutdown when logind is not asked (issue 23 part 4):
# `systemctl start poweroff.target` has systemd stop everything at once, no
# PrepareForShutdown comes (kubelet's pods are killed with the rest).
# systemd stops cubelet's unit; cubelet sees the system stopping and stops
# the pods first, its stop timeout extended (lib/poweroff.sh). The guest
# powers off at the end.
# vm-order: last
# vm-timeout: 420
# vm-mem: 1024M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/poweroff.sh"
poweroff_scenario direct systemctl start poweroff.target --no-block
