#!/bin/bash
# `make bench`, inside a 1 GiB VM (figures printed, nothing asserted): in-place
# resize (issue 23 part 2), the time from a static pod's manifest edit (the
# rename that puts it in place) to the container's new cpu.max, over
# BENCH_RESIZES edits (default 20, the cpu limit alternating 300m/400m), beside
# the same value written to cpu.max directly (the raw write: what the kernel
# costs, the floor). Polled with bash's own read (no fork) every 2 ms.
# vm-timeout: 900
# vm-mem: 1024M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"
N=${BENCH_RESIZES:-20}

manifest() { # manifest CPU_LIMIT
	manifest_put r.yaml <<Y
apiVersion: v1
kind: Pod
metadata: {name: r}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: {requests: {cpu: 100m, memory: 16Mi}, limits: {cpu: $1, memory: 64Mi}}
Y
}
pct() { sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END { i = int((NR * p + 99) / 100); if (i < 1) i = 1; print v[i] }'; }

cubelet_install
manifest 200m
systemctl start cubelet
wait_phase "r-$NODE" Running 180 || { echo "resize bench: pod r did not start"; exit 1; }
pod=$(status_json | jq -r --arg n "r-$NODE" '.pods[] | select(.name == $n) | .cgroup')
cid=$(status_json | jq -r --arg n "r-$NODE" '.pods[] | select(.name == $n) | .containers[0].id')
f=/sys/fs/cgroup/$(cg_ctr "$pod" "$cid")/cpu.max
rm -f /tmp/edit.txt /tmp/raw.txt
sleep 2
for i in $(seq "$N"); do
	lim=$((300 + (i % 2) * 100))
	want="$((lim * 100)) 100000"
	t0=${EPOCHREALTIME/./}
	manifest "${lim}m"
	while :; do
		read -r v <"$f"
		[ "$v" = "$want" ] && break
		[ $((${EPOCHREALTIME/./} - t0)) -gt 30000000 ] && { echo "resize bench: edit $i: cpu.max still '$v' after 30 s"; break; }
		sleep 0.002
	done
	echo $(((${EPOCHREALTIME/./} - t0) / 1000)) >>/tmp/edit.txt
	sleep 0.5
done
new=$(status_json | jq -r --arg n "r-$NODE" '.pods[] | select(.name == $n) | .containers[0].id')
for i in $(seq "$N"); do
	t0=${EPOCHREALTIME/./}
	echo "$(((300 + (i % 2) * 100) * 100)) 100000" >"$f"
	echo $((${EPOCHREALTIME/./} - t0)) >>/tmp/raw.txt
done
e50=$(pct /tmp/edit.txt 50) e99=$(pct /tmp/edit.txt 99) r50=$(pct /tmp/raw.txt 50) r99=$(pct /tmp/raw.txt 99)
echo "resize bench: guest $(nproc) vCPUs under qemu TCG, $N edits of a static pod's cpu limit"
echo "  manifest edit -> container cpu.max: p50 $e50 ms, p99 $e99 ms"
echo "  raw write of cpu.max (baseline):   p50 $r50 us, p99 $r99 us"
awk -v a="$e50" -v b="$r50" -v c="$e99" -v d="$r99" 'BEGIN { printf "  ratio edit/raw: p50 %.0f, p99 %.0f\n", a * 1000 / (b > 0 ? b : 1), c * 1000 / (d > 0 ? d : 1) }'
echo "  the container: $([ "$new" = "$cid" ] && echo "the same through all $N resizes" || echo "CHANGED ($cid -> $new)")"
rm -f "$M/r.yaml"
wait_gone "r-$NODE" 90
cubelet_teardown
