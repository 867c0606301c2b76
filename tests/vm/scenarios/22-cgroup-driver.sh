#!/bin/bash
# The cgroup driver against containerd's: cubelet with cgroupDriver systemd
# and containerd's runc with SystemdCgroup = false (and the reverse) refuses
# to start with one error naming both settings, and creates no group and no
# sandbox (a). Without cgroupDriver, on this systemd host, cubelet takes the
# systemd driver (b). With it, pod slices outlive cubelet and are adopted:
# a restart never stops a slice, and a deleted pod's slice is stopped (c).
# vm-guest: b
# vm-timeout: 900
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

# shellcheck disable=SC2034 # read by the lib
CUBELET_DRIVER=systemd
cubelet_install
systemctl daemon-reload
cat >"$M/one.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: one}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: {requests: {cpu: 100m, memory: 16Mi}, limits: {cpu: 300m, memory: 64Mi}}
Y

# refused PREFIX: cubelet does not come up, and its journal (since PREFIX
# was logged) has the mismatch error
refused() {
	systemctl start cubelet >/dev/null 2>&1
	for _ in $(seq 40); do
		journalctl -u cubelet --no-pager -o cat --since "@$1" | grep -q 'cgroup driver mismatch' && break
		sleep 0.5
	done
	systemctl stop cubelet >/dev/null 2>&1
	systemctl reset-failed cubelet >/dev/null 2>&1
	journalctl -u cubelet --no-pager -o cat --since "@$1" | grep 'cgroup driver mismatch' | head -n 1
}

# ---- a. mismatches ---------------------------------------------------------------------------
containerd_systemd_cgroup false
t0=$(date +%s)
got=$(refused "$t0")
t_is "$got" "cannot start: cgroup driver mismatch: cubelet cgroupDriver=systemd, containerd runc SystemdCgroup=false (/etc/containerd/config.toml: [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options] SystemdCgroup = true, or cgroupDriver: cgroupfs)" \
	"cgroupDriver systemd, SystemdCgroup false: one error naming both"
t_ok "no kubepods.slice was made" test ! -e /sys/fs/cgroup/kubepods.slice
t_is "$(ctr -n k8s.io containers ls -q | wc -l)" 0 "and no sandbox"

containerd_systemd_cgroup true
cubelet_config_driver cgroupfs
sleep 1
t1=$(date +%s)
got=$(refused "$t1")
t_contains "$got" "cgroup driver mismatch: cubelet cgroupDriver=cgroupfs, containerd runc SystemdCgroup=true" \
	"cgroupDriver cgroupfs, SystemdCgroup true: one error naming both"
t_ok "no kubepods group was made" test ! -e /sys/fs/cgroup/kubepods
t_is "$(ctr -n k8s.io containers ls -q | wc -l)" 0 "and no sandbox"

# ---- b. the default on a systemd host ---------------------------------------------------------
sed -i '/^cgroupDriver:/d' /etc/cubelet/config.yaml
t2=$(date +%s)
systemctl start cubelet
t_is "$(systemctl is-active cubelet)" active "without cgroupDriver cubelet starts beside SystemdCgroup = true"
t_contains "$(journalctl -u cubelet --no-pager -o cat --since "@$t2")" "cgroup driver: systemd (default)" \
	"and says it took the systemd driver by default"
t_ok "pod one reaches Running" wait_phase "one-$NODE" Running 180
path=$(pod_field "one-$NODE" cgroup)
uid=$(pod_field "one-$NODE" uid)
t_is "$path" "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid//-/_}.slice" \
	"its cgroup is kubelet's slice path"
unit=$(basename "$path")
for f in cpu.weight cpu.max memory.max pids.max; do
	t_is "$(cat "/sys/fs/cgroup/$path/$f" 2>&1)" "$(plan_value "$M/one.yaml" "$f")" "$unit: $f as planned"
done
t_is "$(systemctl show -p CPUQuotaPerSecUSec -p MemoryMax -p CPUWeight "$unit" | sort | tr '\n' ' ')" \
	"CPUQuotaPerSecUSec=300ms CPUWeight=4 MemoryMax=67108864 " "systemctl show $unit: the same values"

# ---- c. restarts keep the slice; deletion stops it ---------------------------------------------
started=$(systemctl show -p ActiveEnterTimestampMonotonic --value "$unit")
id=$(ctr_field "one-$NODE" app id)
systemctl restart cubelet
kill -9 "$(systemctl show -p MainPID --value cubelet)"
for _ in $(seq 120); do
	[ "$(systemctl is-active cubelet)" = active ] && status_json >/dev/null && break
	sleep 0.5
done
t_ok "pod one is Running after a restart and a kill -9 of cubelet" wait_phase "one-$NODE" Running 60
t_is "$(systemctl show -p ActiveEnterTimestampMonotonic --value "$unit")/$(ctr_field "one-$NODE" app id)" \
	"$started/$id" "the slice was never stopped and the container is the same"
rm -f "$M/one.yaml"
t_ok "deleting the manifest removes pod one" wait_gone "one-$NODE" 120
# (a slice needs no unit file: systemctl show loads an inactive one by name)
t_ok "and StopUnit stopped $unit and removed its cgroup" sh -c "for i in \$(seq 60); do [ \"\$(systemctl show -p ActiveState --value $unit)\" = inactive ] && [ ! -e /sys/fs/cgroup/$path ] && exit 0; sleep 0.5; done; exit 1"
t_contains "$(journalctl -b --no-pager -o cat _PID=1 | grep "$unit")" "Removed slice $unit" "systemd logged 'Removed slice $unit'"
t_is "$(systemctl is-active kubepods-burstable.slice)" active "the QoS slice stays"
cubelet_teardown
t_done
