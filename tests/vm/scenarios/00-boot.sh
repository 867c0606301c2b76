#!/bin/bash
# The guest is what the harness promises: systemd as PID 1, cgroup v2 alone
# with every controller, 4 CPUs as 2 cores x 2 threads, PSI, containerd as a
# unit; and (once packaging/images/build-images.sh exists) the local images
# import and a container runs with its limits in cgroup v2.
# vm-timeout: 600
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean

# ---- systemd and cgroup v2 -------------------------------------------------------
t_is "$(cat /proc/1/comm)" systemd "PID 1 is systemd"
t_is "$(readlink /proc/1/exe)" /usr/lib/systemd/systemd "PID 1 runs /usr/lib/systemd/systemd"
t_is "$(stat -fc %T /sys/fs/cgroup)" cgroup2fs "/sys/fs/cgroup is cgroup2"
t_is "$(awk '$3 == "cgroup"' /proc/mounts | wc -l)" 0 "no cgroup v1 hierarchy is mounted"
t_contains "$(cat /sys/fs/cgroup/cgroup.controllers)" "cpuset cpu io memory hugetlb pids" \
	"cgroup.controllers has cpuset cpu io memory hugetlb pids"
t_is "$(cat /sys/fs/cgroup/cgroup.subtree_control)" "cpuset cpu io memory pids" \
	"systemd enabled cpuset cpu io memory pids in the root's subtree_control"
t_is "$(cat /proc/self/cgroup)" "0::/system.slice/cubelet-vm-scenario.service" \
	"the scenario runs in its own unit's cgroup"

# ---- CPUs and memory -------------------------------------------------------------
t_is "$(nproc)" 4 "nproc is 4"
t_is "$(lscpu | sed -n 's/^Thread(s) per core: *//p')" 2 "lscpu: 2 threads per core"
t_is "$(lscpu | sed -n 's/^Core(s) per socket: *//p')" 2 "lscpu: 2 cores per socket"
t_is "$(lscpu | sed -n 's/^Socket(s): *//p')" 1 "lscpu: 1 socket"
siblings=$(cat /sys/devices/system/cpu/cpu{0,1,2,3}/topology/thread_siblings_list | tr '\n' ' ')
t_is "$siblings" "0-1 0-1 2-3 2-3 " "sysfs: CPUs 0-1 and 2-3 are thread siblings"
t_is "$(cat /sys/devices/system/cpu/online)" 0-3 "sysfs: CPUs 0-3 online"
# MemTotal is the VM's memory less what the kernel keeps: within 15% below it.
want_kib=$(($(numfmt --from=iec "${VM_MEM:-2048M}") / 1024))
got_kib=$(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo)
if [ "$got_kib" -le "$want_kib" ] && [ "$got_kib" -ge $((want_kib * 85 / 100)) ]; then
	t_pass "MemTotal ${got_kib} kB fits the VM's ${VM_MEM:-2048M}"
else
	t_fail "MemTotal ${got_kib} kB fits the VM's ${VM_MEM:-2048M}" "want 85-100% of $want_kib kB"
fi
for r in cpu memory io; do
	t_ok "/proc/pressure/$r reads with some/full lines" grep -q '^some avg10=' "/proc/pressure/$r"
done
t_ok "memory PSI has a 'full' line" grep -q '^full avg10=' /proc/pressure/memory

# ---- containerd --------------------------------------------------------------------
t_is "$(systemctl is-active containerd)" active "systemctl is-active containerd"
pid=$(systemctl show -p MainPID --value containerd)
t_is "$(cat "/proc/$pid/cgroup" 2>/dev/null)" "0::/system.slice/containerd.service" \
	"containerd runs in /system.slice/containerd.service"
t_ok "containerd's socket is there" test -S /run/containerd/containerd.sock
server=$(ctr version 2>&1 | sed -n '/^Server:/,$ s/^ *Version: *//p')
client=$(containerd --version | awk '{ print $3 }')
t_is "$server" "$client" "ctr version: the server answers with containerd's version"
t_ok "the CRI plugin is loaded" sh -c "ctr plugins ls | grep -E 'io.containerd.grpc.v1 +cri +.* ok'"

# ---- local images and a container in cgroup v2 ------------------------------------
builder=${VM_IMAGES_BUILDER:-$VM_REPO/packaging/images/build-images.sh}
images=${VM_IMAGES:-}
if [ ! -x "$builder" ] && [ -z "$images" ]; then
	for t in "import the local pause and busybox images" \
		"a busybox container runs with --memory-limit in cgroup v2"; do
		t_skip "$t" "packaging/images/build-images.sh does not exist yet"
	done
	t_done
	exit
fi
if [ -z "$images" ]; then
	# Run directly (not through make vm-test): build the images in the guest.
	images=/tmp/images
	"$builder" "$images" >"$VM_OUT/build-images.log" 2>&1 ||
		t_diag "build-images.sh failed: see $VM_OUT/build-images.log"
fi

imported=1
for img in pause busybox; do
	if ! out=$(ctr -n k8s.io images import "$images/$img.tar" 2>&1); then
		imported=0
		t_diag "ctr images import $images/$img.tar: $out"
	fi
done
list=$(ctr -n k8s.io images ls -q 2>&1)
case $list in
*localhost/cubelet/pause:1*localhost/cubelet/busybox:1* | *localhost/cubelet/busybox:1*localhost/cubelet/pause:1*)
	if [ "$imported" = 1 ]; then
		t_pass "import the local pause and busybox images"
	else
		t_fail "import the local pause and busybox images"
	fi
	;;
*) t_fail "import the local pause and busybox images" "images ls -q:" "$list" ;;
esac

# A detached container with a memory and a CPU limit: the limits read back
# from the container's own cgroup, seen from outside and from inside.
id=vm-boot-mem
ctr -n k8s.io run -d --memory-limit 67108864 --cpu-quota 50000 --cpu-period 100000 \
	localhost/cubelet/busybox:1 "$id" sleep 300 >"$VM_OUT/ctr-run.log" 2>&1
cpid=$(ctr -n k8s.io task ls 2>/dev/null | awk -v id="$id" '$1 == id { print $2 }')
t_is "$(cat "/proc/${cpid:-0}/cgroup" 2>/dev/null)" "0::/k8s.io/$id" \
	"a busybox container runs with --memory-limit in cgroup v2"
t_is "$(cat "/sys/fs/cgroup/k8s.io/$id/memory.max" 2>/dev/null)" 67108864 \
	"its memory.max reads back 67108864"
t_is "$(cat "/sys/fs/cgroup/k8s.io/$id/cpu.max" 2>/dev/null)" "50000 100000" \
	"its cpu.max reads back '50000 100000'"
# ctr's spec has no cgroup namespace and mounts no cgroupfs (the CRI plugin
# does both): inside, /proc/self/cgroup names the host-side path.
t_is "$(ctr -n k8s.io task exec --exec-id probe "$id" cat /proc/self/cgroup 2>&1)" "0::/k8s.io/$id" \
	"inside the container, /proc/self/cgroup is 0::/k8s.io/$id"
ctr -n k8s.io task kill -s SIGKILL "$id" >/dev/null 2>&1
ctr -n k8s.io task rm -f "$id" >/dev/null 2>&1
ctr -n k8s.io containers rm "$id" >/dev/null 2>&1

# The pause image starts and keeps running.
ctr -n k8s.io run -d localhost/cubelet/pause:1 vm-boot-pause >>"$VM_OUT/ctr-run.log" 2>&1
sleep 1
t_is "$(ctr -n k8s.io task ls 2>/dev/null | awk '$1 == "vm-boot-pause" { print $3 }')" RUNNING \
	"a pause container keeps running"
ctr -n k8s.io task kill -s SIGKILL vm-boot-pause >/dev/null 2>&1
t_done
