#!/bin/bash
# `make bench`, inside the VM (figures printed, nothing asserted):
#   - manifest written -> pod cgroup configured (p50/p99),
#   - manifest written -> the pod's container running (p50/p99),
#   - cubelet's RSS and CPU with BENCH_PODS pause pods (default 110, kubelet's maxPods).
# Pods are added one at a time; each latency is measured from the rename of
# its manifest into the directory.
# vm-timeout: 2400
# vm-mem: 4096M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"
N=${BENCH_PODS:-110}

cubelet_setup
sleep 2
pid=$(systemctl show -p MainPID --value cubelet)
now_ms() { echo $(($(date +%s%N) / 1000000)); }
: >/tmp/cg.txt
: >/tmp/run.txt
for i in $(seq "$N"); do
	f="$M/.b$i.yaml"
	cat >"$f" <<Y
apiVersion: v1
kind: Pod
metadata: {name: b$i, uid: bench-$i}
spec:
  containers:
  - name: p
    image: localhost/cubelet/pause:1
    resources: {requests: {cpu: 10m, memory: 8Mi}}
Y
	cg=/sys/fs/cgroup/kubepods/burstable/podbench-$i
	t0=$(now_ms)
	mv "$f" "$M/b$i.yaml"
	until [ -e "$cg/cpu.weight" ]; do sleep 0.01; done
	t1=$(now_ms)
	# running: the pod cgroup holds the sandbox and the container
	until [ "$(find "$cg" -mindepth 1 -maxdepth 1 -type d | wc -l)" -ge 2 ] &&
		[ -n "$(cat "$cg"/*/cgroup.procs 2>/dev/null | sort -u | sed -n 2p)" ]; do sleep 0.02; done
	t2=$(now_ms)
	echo $((t1 - t0)) >>/tmp/cg.txt
	echo $((t2 - t0)) >>/tmp/run.txt
done
pct() { sort -n "$1" | awk -v p="$2" '{ a[NR] = $1 } END { i = int((NR * p + 99) / 100); if (i < 1) i = 1; print a[i] }'; }
echo "pods: $N (pause image, added one at a time), guest: $(nproc) vCPUs under qemu TCG, $(awk '/MemTotal/ {print $2/1024 " MiB"}' /proc/meminfo)"
echo "manifest -> pod cgroup configured: p50 $(pct /tmp/cg.txt 50) ms, p99 $(pct /tmp/cg.txt 99) ms, max $(pct /tmp/cg.txt 100) ms"
echo "manifest -> container running:     p50 $(pct /tmp/run.txt 50) ms, p99 $(pct /tmp/run.txt 99) ms, max $(pct /tmp/run.txt 100) ms"
sleep 5
ticks=$(getconf CLK_TCK)
c0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
sleep 60
c1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
echo "cubelet with $N pods: VmRSS $(awk '/VmRSS/ {print $2 " kB"}' "/proc/$pid/status"), VmHWM $(awk '/VmHWM/ {print $2 " kB"}' "/proc/$pid/status")," \
	"CPU $(((c1 - c0) * 1000 / ticks)) ms over 60 s idle ($(((c1 - c0) * 100000 / ticks / 60000))% of one CPU, relist every 1 s)"
echo "containerd-shims: $(pgrep -c containerd-shim), tasks running: $(ctr -n k8s.io tasks ls 2>/dev/null | grep -c RUNNING)"
cubelet_teardown
