#!/bin/bash
# `make bench`, inside a 1 GiB VM (figures printed, nothing asserted): time
# from memory pressure onset to cubelet's eviction decision and to the
# victim's containers stopped, over BENCH_EVICTIONS runs (default 10), for
# the default sampling period (1 s, plus PSI triggers) and for 250 ms.
# Each run starts a BestEffort pod that allocates 1 MiB strings in a tight
# awk loop and prints, every 2 MiB, its count and /proc/uptime (the guest's
# boot clock, which cubelet's decision times use too). The threshold sits
# 150 MiB below the baseline; the onset is bracketed by the two lines around
# the count at which memory.available crossed the threshold: the count the
# pod had printed at the decision, less the MiB by which cubelet then saw
# memory.available below the threshold. Decision − the later line is a
# lower bound, decision − the earlier line an upper bound.
# cubelet's own view (decision − the first sample that met the threshold) is
# printed beside them.
# vm-timeout: 1800
# vm-mem: 1024M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"
N=${BENCH_EVICTIONS:-10}
MiB=1048576

cubelet_setup
sleep 3
available() {
	awk -v inact="$(awk '/^inactive_file /{print $2}' /sys/fs/cgroup/memory.stat)" '
		/^MemTotal:/ { t = $2 * 1024 } /^MemFree:/ { f = $2 * 1024 }
		END { ws = t - f - inact; if (ws < 0) ws = 0; printf "%d\n", t - ws }' /proc/meminfo
}
base=$(available)
T=$(( (base - 150 * MiB) / MiB ))
pct() { sort -n "$1" | awk -v p="$2" '{a[NR]=$1} END {i=int((NR*p+99)/100); if (i<1) i=1; print a[i]}'; }

run_series() { # run_series SAMPLE_PERIOD
	cat >/etc/cubelet/config.yaml <<Y
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/kubernetes/manifests
evictionHard: {memory.available: "${T}Mi"}
evictionPressureTransitionPeriod: 2s
cubelet: {stateDir: /var/lib/cubelet, socket: /run/cubelet/cubelet.sock, evictionSamplePeriod: $1}
Y
	cubelet_config_driver "$CUBELET_DRIVER"
	systemctl restart cubelet
	for i in $(seq 60); do status_json >/dev/null && break; sleep 0.5; done
	: >/tmp/dec_lo.txt; : >/tmp/dec_hi.txt; : >/tmp/stop.txt; : >/tmp/own.txt
	for r in $(seq "$N"); do
		cat >"$M/burst.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: burst, uid: burst-$1-$r}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command:
    - sh
    - -c
    - |
      sleep 2; exec awk 'BEGIN{s=sprintf("%1048576s","x"); for(i=1;i<=400;i++){a[i]=s i; if(i%2==0) system("echo " i " \$(cat /proc/uptime)")}; while(1) system("sleep 60")}'
Y
		uid=burst-$1-$r
		for i in $(seq 240); do
			d=$(status_json | jq -c --arg u "$uid" 'first(.eviction.decisions[] | select(.uid==$u))')
			[ -n "$d" ] && [ "$(echo "$d" | jq .stoppedBootMs)" != 0 ] && break
			sleep 0.5
		done
		# CRI log lines: <time> <stream> <tag> <count> <uptime> <idle>. At the decision
		# cubelet saw `available` below the threshold by some KiB: the crossing was that
		# many MiB of the pod's count earlier than the count it had printed by then.
		log=$(ls /var/log/pods/*"$uid"/app/0.log 2>/dev/null | head -n 1)
		dec=$(echo "$d" | jq -r '.decidedBootMs // empty')
		avail=$(echo "$d" | jq -r .message | sed -n 's/.*available: \([0-9]*\)Ki\..*/\1/p')
		late="" early=""
		if [ -n "$dec" ] && [ -n "$avail" ] && [ -n "$log" ]; then
			at=$(awk -v t="$dec" '$5 * 1000 <= t { c = $4 } END { print c + 0 }' "$log")
			n=$((at - (T * 1024 - avail) / 1024))
			late=$(awk -v n="$n" '$4 >= n { printf "%d\n", $5 * 1000; exit }' "$log")
			early=$(awk -v n="$n" '$4 >= n { print p; exit } { p = sprintf("%d", $5 * 1000) }' "$log")
		fi
		if [ -z "$d" ] || [ -z "$late" ] || [ -z "$early" ]; then
			echo "  run $r: no eviction seen (decision '$d', onset '$early'..'$late')"
		else
			stop=$(echo "$d" | jq .stoppedBootMs); on=$(echo "$d" | jq .onsetBootMs)
			echo $((dec - late)) >>/tmp/dec_lo.txt
			echo $((dec - early)) >>/tmp/dec_hi.txt
			echo $((stop - early)) >>/tmp/stop.txt
			echo $((dec - on)) >>/tmp/own.txt
		fi
		rm -f "$M/burst.yaml"
		for i in $(seq 120); do
			[ "$(status_json | jq -r '.conditions[] | select(.type=="MemoryPressure") | .status')" = False ] &&
				[ "$(status_json | jq '.pods | length')" = 0 ] && break
			sleep 0.5
		done
	done
	n=$(wc -l </tmp/dec_hi.txt)
	echo "evictionSamplePeriod $1 (+ PSI trigger 'some 150000 1000000'), $n of $N runs evicted:"
	echo "  pressure onset -> eviction decision:          p50 $(pct /tmp/dec_lo.txt 50)..$(pct /tmp/dec_hi.txt 50) ms, max $(pct /tmp/dec_lo.txt 100)..$(pct /tmp/dec_hi.txt 100) ms"
	echo "  pressure onset -> victim's containers stopped: p50 <= $(pct /tmp/stop.txt 50) ms, max <= $(pct /tmp/stop.txt 100) ms"
	echo "  cubelet's view, first sample over the threshold -> decision: p50 $(pct /tmp/own.txt 50) ms, max $(pct /tmp/own.txt 100) ms"
}

echo "eviction bench: guest $(nproc) vCPUs under qemu TCG, $(awk '/MemTotal/ {print $2/1024 " MiB"}' /proc/meminfo), baseline memory.available $((base / MiB))Mi, threshold memory.available<${T}Mi"
run_series 1s
run_series 250ms
ooms=$(find /sys/fs/cgroup -name memory.events -exec awk '/^oom_kill /{s+=$2} END{print s+0}' {} + | awk '{s+=$1} END{print s+0}')
echo "oom_kill events in any memory.events: $ooms; dmesg OOM lines: $(dmesg | grep -ciE 'out of memory|oom-kill|invoked oom-killer')"
cubelet_teardown
