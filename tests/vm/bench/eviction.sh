#!/bin/bash
# `make bench`, inside a 1 GiB VM (figures printed, nothing asserted): time
# from memory pressure onset to cubelet's eviction decision and to the
# victim's containers stopped, over BENCH_EVICTIONS runs (default 10), for
# the default sampling period (1 s, plus PSI triggers) and for 250 ms.
# Each run starts a BestEffort pod that reads 300 MiB from /dev/zero into one
# buffer (dd bs=300M); the threshold sits 150 MiB below the baseline, so
# the crossing happens during that burst. Onset is taken as the burst's
# start (/proc/uptime printed by the pod just before it), which makes the
# figures upper bounds; cubelet's own view (decision − the first sample
# that met the threshold) is printed beside them.
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
	systemctl restart cubelet
	for i in $(seq 60); do status_json >/dev/null && break; sleep 0.5; done
	: >/tmp/dec.txt; : >/tmp/stop.txt; : >/tmp/own.txt
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
    command: [sh, -c, "sleep 2; cat /proc/uptime; dd if=/dev/zero bs=300M count=1 2>/dev/null | sleep 3600"]
Y
		uid=burst-$1-$r
		for i in $(seq 240); do
			d=$(status_json | jq -c --arg u "$uid" '.eviction.decisions[] | select(.uid==$u)')
			[ -n "$d" ] && [ "$(echo "$d" | jq .stoppedBootMs)" != 0 ] && break
			sleep 0.5
		done
		# CRI log lines: <time> <stream> <tag> <text>; the text is /proc/uptime
		start=$(awk '{printf "%d\n", $4 * 1000}' /var/lib/cubelet/pods/*"$uid"/app/0.log 2>/dev/null | head -n 1)
		if [ -z "$d" ] || [ -z "$start" ]; then
			echo "  run $r: no eviction seen (decision '$d', start '$start')"
		else
			dec=$(echo "$d" | jq .decidedBootMs); stop=$(echo "$d" | jq .stoppedBootMs); on=$(echo "$d" | jq .onsetBootMs)
			echo $((dec - start)) >>/tmp/dec.txt
			echo $((stop - start)) >>/tmp/stop.txt
			echo $((dec - on)) >>/tmp/own.txt
		fi
		rm -f "$M/burst.yaml"
		for i in $(seq 120); do
			[ "$(status_json | jq -r '.conditions[] | select(.type=="MemoryPressure") | .status')" = False ] &&
				[ "$(status_json | jq '.pods | length')" = 0 ] && break
			sleep 0.5
		done
	done
	n=$(wc -l </tmp/dec.txt)
	echo "evictionSamplePeriod $1 (+ PSI trigger 'some 150000 1000000'), $n of $N runs evicted:"
	echo "  burst start -> eviction decision:      p50 $(pct /tmp/dec.txt 50) ms, max $(pct /tmp/dec.txt 100) ms"
	echo "  burst start -> victim's containers stopped: p50 $(pct /tmp/stop.txt 50) ms, max $(pct /tmp/stop.txt 100) ms"
	echo "  cubelet's view, first sample over the threshold -> decision: p50 $(pct /tmp/own.txt 50) ms, max $(pct /tmp/own.txt 100) ms"
}

echo "eviction bench: guest $(nproc) vCPUs under qemu TCG, $(awk '/MemTotal/ {print $2/1024 " MiB"}' /proc/meminfo), baseline memory.available $((base / MiB))Mi, threshold memory.available<${T}Mi"
run_series 1s
run_series 250ms
ooms=$(find /sys/fs/cgroup -name memory.events -exec awk '/^oom_kill /{s+=$2} END{print s+0}' {} + | awk '{s+=$1} END{print s+0}')
echo "oom_kill events in any memory.events: $ooms; dmesg OOM lines: $(dmesg | grep -ciE 'out of memory|oom-kill|invoked oom-killer')"
cubelet_teardown
