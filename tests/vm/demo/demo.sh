#!/bin/bash
# `make demo`, inside the VM: cubelet and containerd as systemd units on a
# cgroup v2 kernel run the example pods of packaging/examples; the demo shows
# `cubelet status` and what each pod's cgroup holds.
# vm-timeout: 900
set -u
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

say() { printf '\n== %s\n' "$*"; }

say "setting up: local images into containerd, cubelet.service started"
cubelet_setup
say "systemctl status cubelet"
systemctl --no-pager --lines=0 status cubelet | sed -n '1,4p'
say "copying packaging/examples/*.yaml *.json into $M"
cp "$VM_REPO"/packaging/examples/*.yaml "$VM_REPO"/packaging/examples/besteffort.json "$M/"
for n in db web batch; do
	wait_phase "$n-$NODE" Running 240 || echo "(pod $n-$NODE is not Running yet)"
done
say "cgroup values of each pod (read back from /sys/fs/cgroup)"
for n in db web batch; do
	path=$(pod_field "$n-$NODE" cgroup)
	printf '%s  (%s)\n' "$n-$NODE" "$path"
	for f in cpu.weight cpu.max memory.max pids.max; do
		printf '    %-11s %s\n' "$f" "$(cat "/sys/fs/cgroup/$path/$f")"
	done
done
printf 'kubepods/burstable cpu.weight %s, kubepods/besteffort cpu.weight %s\n' \
	"$(cat /sys/fs/cgroup/kubepods/burstable/cpu.weight)" "$(cat /sys/fs/cgroup/kubepods/besteffort/cpu.weight)"
say "a broken manifest beside them is reported and costs no other pod"
sed 's/cpu: "1"/cpu: "1.5.5"/' "$M/guaranteed.yaml" >"$M/broken.yaml"
sleep 2
cubelet_teardown_quiet() { cubelet_teardown >/dev/null 2>&1; }
say "cubelet status"
"$CUBELET" status
cubelet_teardown_quiet
