#!/bin/bash
# `make bench`, inside the VM (figures printed, nothing asserted), for
# BENCH_PODS pause pods (default 110, kubelet's maxPods; more raises cubelet's
# maxPods), each added one at a time while the earlier ones keep running:
#   1. raw CRI: cri-baseline starts the pods through cri/ with only
#      RunPodSandbox, CreateContainer, StartContainer (then removes them);
#   2. raw cgroup: cg-baseline does mkdir + the plan's 4 writes per pod cgroup;
#   3. cubelet: pod-driver renames each manifest in and times
#      manifest -> pod cgroup configured and -> container running; cubelet's
#      own latencies from `cubelet status -o json` when it reports them;
#      like for like: 1-3 on the host network (hostNetwork pods, sandboxes
#      without CNI), and at the end a second pair on the pod network
#      (containerd's CNI for both) with BENCH_NET_PODS pods (default 20);
#   4. cubelet's footprint: RSS with 0 and N pods beside the RSS floor of its
#      libraries (rss-floor.c), an RSS breakdown from /proc/PID/smaps,
#      threads, CPU over 60 s idle with the runtime's event stream and
#      without it (a relist every second); glibc's malloc defaults
#      (MALLOC_ARENA_MAX=8 x CPUs, which turns off cubelet's own mallopt)
#      against cubelet's settings, after a restart over the same N pods; what
#      malloc_trim(0) would give back (called through gdb when there is one).
# The binaries come from BENCH_BIN (/etc/cubelet-bench/env, written by
# `make bench-vm`), else $VM_REPO/build.
# vm-timeout: 4800
# vm-mem: 4096M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"
# shellcheck disable=SC1091
[ -f /etc/cubelet-bench/env ] && . /etc/cubelet-bench/env
BIN=${BENCH_BIN:-$VM_REPO/build}
N=${BENCH_PODS:-110}
CGROOT=/sys/fs/cgroup
PARENT=kubepods/burstable
DEFAULT_ARENAS=$((8 * $(nproc)))
say() { echo "$*"; log "$*"; }
MEASURE_LOG=$VM_OUT/scenario.log
# shellcheck disable=SC1091
. "$VM_REPO/tests/vm/bench/measure.sh"

bench_setup() { # cubelet_install with $BIN/cubelet and maxPods N, cubelet not started
	cubelet_install "$BIN/cubelet"
	[ "$N" -gt 110 ] && echo "maxPods: $N" >>/etc/cubelet/config.yaml
	# no watchdog: gdb's malloc_trim(0) call stops cubelet for a while under TCG
	mkdir -p /etc/systemd/system/cubelet.service.d
	printf '[Service]\nWatchdogSec=0\n' >/etc/systemd/system/cubelet.service.d/bench-watchdog.conf
	systemctl daemon-reload
}

# malloc_mode defaults|cubelet: a drop-in with glibc's own arena count, or none
malloc_mode() {
	d=/etc/systemd/system/cubelet.service.d
	if [ "$1" = defaults ]; then
		mkdir -p "$d"
		printf '[Service]\nEnvironment=MALLOC_ARENA_MAX=%s\n' "$DEFAULT_ARENAS" >"$d/bench-malloc.conf"
	else
		rm -f "$d/bench-malloc.conf"
	fi
	systemctl daemon-reload
}

cubelet_pid() { systemctl show -p MainPID --value cubelet; }

running_pods() { status_json | jq '[.pods[]? | select(.phase == "Running")] | length' 2>/dev/null || echo 0; }
wait_running() { # wait_running COUNT SECONDS
	for _ in $(seq "$2"); do
		[ "$(running_pods)" -ge "$1" ] && return 0
		sleep 1
	done
	return 1
}

bench_setup
say "pods: $N (pause image, added one at a time), guest: $(nproc) vCPUs under qemu TCG, $(awk '/MemTotal/ {printf "%d MiB", $2/1024}' /proc/meminfo), cubelet $("$CUBELET" --version 2>/dev/null | jq -r .version)"

# ---- 1. raw CRI baseline -------------------------------------------------------
"$BIN/tests/vm/bench/cri-baseline" -p base "$N" >/tmp/cri.txt 2>>"$VM_OUT/scenario.log" ||
	say "cri-baseline failed: $(tail -n 3 "$VM_OUT/scenario.log")"
cp /tmp/cri.txt "$VM_OUT/cri-baseline.txt"
find "$CGROOT/kubepods" -depth -mindepth 1 -type d -name 'podbase-*' -exec rmdir {} + 2>/dev/null

# ---- 2. raw cgroup baseline ----------------------------------------------------
plan_sample "$CUBELET" /tmp/bench-sample.yaml
log "plan: ${files[*]}"
"$BIN/tests/vm/bench/cg-baseline" "$PARENT" cgb "$N" "${files[@]}" >/tmp/cgb.txt 2>>"$VM_OUT/scenario.log" ||
	say "cg-baseline failed: $(tail -n 3 "$VM_OUT/scenario.log")"
cp /tmp/cgb.txt "$VM_OUT/cg-baseline.txt"
# cubelet starts from no kubepods tree, as on a fresh node
rmdir "$CGROOT/kubepods/burstable" "$CGROOT/kubepods/besteffort" "$CGROOT/kubepods" 2>/dev/null

# ---- 3. footprint with 0 pods: glibc defaults, then cubelet's settings -----------
malloc_mode defaults
systemctl start cubelet
sleep 10
footprint "0 pods, glibc malloc defaults (MALLOC_ARENA_MAX=$DEFAULT_ARENAS)"
malloc_mode cubelet
systemctl restart cubelet
sleep 10
footprint "0 pods, cubelet's mallopt"
say "cubelet 0 pods idle CPU: $(idle_cpu 20)"
# the floor: cubelet's shared objects loaded and gRPC and libcurl started, nothing else
say "RSS floor (tests/vm/bench/rss-floor: linked as cubelet, grpc_init + curl_global_init, idle): $("$BIN/tests/vm/bench/rss-floor")"

# ---- 4. cubelet: N pods one at a time ------------------------------------------
# BENCH_SCRAPE=1: the HTTP API scraped once a second meanwhile, as Prometheus would
if [ "${BENCH_SCRAPE:-0}" = 1 ]; then
	(while :; do
		for p in /metrics /metrics/resource /pods; do curl -s -o /dev/null "http://127.0.0.1:10255$p"; done
		sleep 1
	done) &
	SCRAPER=$!
	say "  (the HTTP API is scraped once a second on /metrics, /metrics/resource and /pods)"
fi
"$BIN/tests/vm/bench/pod-driver" -H "$M" "$CGROOT/$PARENT" "$weight" 1 "$N" >/tmp/cub.txt 2>>"$VM_OUT/scenario.log" ||
	say "pod-driver failed: $(tail -n 3 "$VM_OUT/scenario.log")"
if [ -n "${SCRAPER:-}" ]; then
	kill "$SCRAPER"
	for p in /metrics /pods; do
		say "  $p: $(python3 -c 'import http.client, sys, time
c, n, t0 = http.client.HTTPConnection("127.0.0.1", 10255), 0, time.monotonic()
while time.monotonic() - t0 < 3:
    c.request("GET", sys.argv[1]); c.getresponse().read(); n += 1
print("%.0f requests/s (keep-alive)" % (n / (time.monotonic() - t0)))' "$p")"
	done
fi
cp /tmp/cub.txt "$VM_OUT/cubelet.txt"
status_json >"$VM_OUT/status.json"
jq -r '.pods[]? | select(.latency != null) | "\(.latency.eventToCgroupUs // 0) \(.latency.eventToSandboxUs // 0) \(.latency.eventToStartedUs // 0)"' \
	"$VM_OUT/status.json" 2>/dev/null | awk '$1 > 0 || $3 > 0 { print NR, $0 }' >/tmp/own.txt

say ""
say "latencies, host network, over $(grep -vc '^#' /tmp/cub.txt) cubelet pods, $(grep -vc '^#' /tmp/cri.txt) raw-CRI pods, $(grep -vc '^#' /tmp/cgb.txt) raw cgroups (ms):"
c50=$(pct /tmp/cub.txt 50 3) c99=$(pct /tmp/cub.txt 99 3)
b50=$(pct /tmp/cri.txt 50 5) b99=$(pct /tmp/cri.txt 99 5)
say "  manifest -> container running (cubelet): p50 $c50, p99 $c99, max $(pct /tmp/cub.txt 100 3)"
say "  raw CRI Run+Create+StartContainer:       p50 $b50, p99 $b99, max $(pct /tmp/cri.txt 100 5) (RunPodSandbox p50 $(pct /tmp/cri.txt 50 2))"
say "  ratio cubelet / raw CRI:                 p50 $(ratio "$c50" "$b50"), p99 $(ratio "$c99" "$b99") (goal <= 1.05)"
g50=$(pct /tmp/cub.txt 50 2) g99=$(pct /tmp/cub.txt 99 2)
a50=$(pct /tmp/cgb.txt 50 2) a99=$(pct /tmp/cgb.txt 99 2)
say "  manifest -> pod cgroup configured (cubelet): p50 $g50, p99 $g99, max $(pct /tmp/cub.txt 100 2)"
say "  raw mkdir + ${#files[@]} writes:                 p50 $a50, p99 $a99, max $(pct /tmp/cgb.txt 100 2)"
say "  ratio cubelet / raw cgroup:                  p50 $(ratio "$g50" "$a50"), p99 $(ratio "$g99" "$a99") (goal <= 2)"
if [ -s /tmp/own.txt ]; then
	say "  cubelet's own (status latency, from the inotify event, $(wc -l </tmp/own.txt) pods):" \
		"cgroup p50 $(pct /tmp/own.txt 50 2) p99 $(pct /tmp/own.txt 99 2)," \
		"sandbox p50 $(pct /tmp/own.txt 50 3) p99 $(pct /tmp/own.txt 99 3)," \
		"started p50 $(pct /tmp/own.txt 50 4) p99 $(pct /tmp/own.txt 99 4)"
else
	say "  cubelet's own latencies: not in 'cubelet status -o json' (no pods[].latency)"
fi
say "  (cubelet's side polled every 2 ms from the rename; raw CRI timed to StartContainer's return)"

# ---- 5. footprint with N pods --------------------------------------------------
say ""
sleep 5
say "cubelet with $N pods, idle CPU: $(idle_cpu 60) (relist every $(status_json | jq -r .runtime.relistPeriodSeconds) s, runtime events $(status_json | jq -r .runtime.events.state))"
footprint "$N pods, cubelet's mallopt, after adding them one at a time"
trim_probe
say "containerd-shims: $(pgrep -c containerd-shim), tasks running: $(ctr -n k8s.io tasks ls 2>/dev/null | grep -c RUNNING)"

# the same N pods after a restart: glibc defaults, then cubelet's settings
for mode in defaults cubelet; do
	malloc_mode "$mode"
	systemctl restart cubelet
	wait_running "$N" 600 || say "  (only $(running_pods) pods Running after the restart)"
	sleep 10
	footprint "$N pods, $mode malloc settings, after a restart"
	say "  idle CPU: $(idle_cpu 30)"
	trim_probe
done
# the baseline of the evented relist: no event stream, a relist every second
mkdir -p /etc/systemd/system/cubelet.service.d
printf '[Service]\nExecStart=\nExecStart=%s run --config /etc/cubelet/config.yaml --evented-relist-period 0\n' \
	"$CUBELET" >/etc/systemd/system/cubelet.service.d/bench-relist.conf
systemctl daemon-reload
systemctl restart cubelet
wait_running "$N" 600 || say "  (only $(running_pods) pods Running after the restart)"
sleep 10
say "cubelet with $N pods, no event stream (--evented-relist-period 0, relist every $(status_json | jq -r .runtime.relistPeriodSeconds) s): idle CPU $(idle_cpu 60)"
rm -f /etc/systemd/system/cubelet.service.d/bench-relist.conf
systemctl daemon-reload
systemctl restart cubelet

# ---- 6. the pod network, like for like: raw CRI with CNI, then cubelet ----------
NN=${BENCH_NET_PODS:-20}
rm -f "$M"/b*.yaml
for _ in $(seq 600); do [ "$(status_json | jq '.pods | length')" = 0 ] && break; sleep 1; done
"$BIN/tests/vm/bench/cri-baseline" -N -p net "$NN" >/tmp/cri-net.txt 2>>"$VM_OUT/scenario.log" ||
	say "cri-baseline -N failed: $(tail -n 3 "$VM_OUT/scenario.log")"
find "$CGROOT/kubepods" -depth -mindepth 1 -type d -name 'podnet-*' -exec rmdir {} + 2>/dev/null
"$BIN/tests/vm/bench/pod-driver" "$M" "$CGROOT/$PARENT" "$weight" 1 "$NN" >/tmp/cub-net.txt 2>>"$VM_OUT/scenario.log" ||
	say "pod-driver (pod network) failed: $(tail -n 3 "$VM_OUT/scenario.log")"
cp /tmp/cri-net.txt "$VM_OUT/cri-baseline-net.txt"
cp /tmp/cub-net.txt "$VM_OUT/cubelet-net.txt"
c50=$(pct /tmp/cub-net.txt 50 3) c99=$(pct /tmp/cub-net.txt 99 3)
b50=$(pct /tmp/cri-net.txt 50 5) b99=$(pct /tmp/cri-net.txt 99 5)
say ""
say "latencies, pod network (containerd's CNI for both), over $(grep -vc '^#' /tmp/cub-net.txt) cubelet pods, $(grep -vc '^#' /tmp/cri-net.txt) raw-CRI pods (ms):"
say "  manifest -> container running (cubelet): p50 $c50, p99 $c99, max $(pct /tmp/cub-net.txt 100 3)"
say "  raw CRI Run+Create+StartContainer:       p50 $b50, p99 $b99, max $(pct /tmp/cri-net.txt 100 5) (RunPodSandbox p50 $(pct /tmp/cri-net.txt 50 2))"
say "  ratio cubelet / raw CRI:                 p50 $(ratio "$c50" "$b50"), p99 $(ratio "$c99" "$b99") (goal <= 1.05)"
cubelet_teardown
