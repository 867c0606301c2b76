#!/bin/bash
# tests/hw/run.sh STEP...: the real-hardware run, on a bare machine (a kernel
# with cgroup v2 mounted at /sys/fs/cgroup, glibc, no systemd as PID 1, no
# containerd) from the bundle tests/hw/bundle.sh makes; see tests/hw/README.md.
# Steps, in the order given:
#   gpu          cubelet-gpu-plugin on the machine's real NVML registers with
#                cubelet's device manager; a GPU pod gets the GPU (Allocate)
#                and sees its device nodes; a second one is refused
#   bench N      the VM bench's figures for N pause pods (raw CRI, raw cgroup,
#                cubelet; footprint and idle CPU), as tests/vm/bench/bench.sh
#   density COUNTS  cubelet idle with each count of pause pods (0,110,250,500):
#                its CPU over 30 s and its footprint
#   kubelet-density COUNTS  the same with the real kubelet 1.34 (standalone, static
#                pods; the bundle made with KUBELET=build/cluster/kubelet)
#   scrape N     bench N with the HTTP API scraped once a second meanwhile,
#                then requests/s of each endpoint
#   fault [BIN]  10 pods on the pod network (the bundle's CNI plugins, a
#                bridge without iptables); the plugins go, the manifests go
#                (every StopPodSandbox fails), held FAULT_HOLD s (60); then
#                the plugins come back; then 10 new pods with the plugins
#                gone (RunPodSandbox fails), held, and back: cubelet's CPU
#                beside its idle figure, attempts, log lines per pod, time
#                to converge. BIN: the cubelet binary (cubelet-old: the
#                build before the kill table, FAULT_HOLD 15 advised)
# Figures on stdout and in $OUT/run.log; logs of every daemon in $OUT.
set -u
H=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/hw-out}
mkdir -p "$OUT"
MEASURE_LOG=$OUT/run.log
say() { echo "$*"; echo "$*" >>"$MEASURE_LOG"; }
log() { echo "$*" >>"$MEASURE_LOG"; }
# shellcheck disable=SC1091
. "$H/measure.sh"
# the bundle's binaries find the bundle's libraries; the machine's tools keep theirs
mkdir -p "$H/wbin"
for b in "$H"/bin/*; do
	printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$H/lib" "$b" >"$H/wbin/${b##*/}"
	chmod +x "$H/wbin/${b##*/}"
done
export PATH="$H/wbin:$PATH"
M=/etc/kubernetes/manifests
CONF=/etc/cubelet/config.yaml
CGROOT=/sys/fs/cgroup
NODE=$(hostname)
CUBELET_PID=
cubelet_pid() { echo "$CUBELET_PID"; }
status_json() { cubelet status -o json 2>/dev/null; }
jqs() { status_json | jq -r "$@"; }
podq() { status_json | jq -r --arg n "$1-$NODE" ".pods[] | select(.name==\$n) | $2"; }
wait_for() { # wait_for SECONDS COMMAND...: true once COMMAND is
	local n=$(($1 * 10))
	shift
	for _ in $(seq "$n"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

CNI_BIN=/opt/hw-cni # containerd's CNI bin_dir here: the bundle's plugins, or empty (the fault step)
start_containerd() {
	pgrep -x containerd >/dev/null && return 0
	mkdir -p /etc/containerd /var/lib/containerd /run/containerd "$CNI_BIN" /etc/cni/net.d
	cp "$H/config.toml" /etc/containerd/config.toml
	sed -i "s|bin_dir = \"/usr/lib/cni\"|bin_dir = \"$CNI_BIN\"|" /etc/containerd/config.toml
	cp "$H"/cni/* "$CNI_BIN/"
	# a bridge without iptables (no ipMasq, no portmap): the lent machine has none
	ls /etc/cni/net.d/*.conf* >/dev/null 2>&1 || cp "$H/05-hw.conflist" /etc/cni/net.d/
	# without CAP_SYS_RESOURCE (a sandboxed root, as on the lent GPU machine)
	# runc cannot lower oom_score_adj: packaging/containerd/README.md's override
	if ! (($(awk '/^CapEff/ { print "0x" $2 }' /proc/self/status) & (1 << 24))); then
		sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' /etc/containerd/config.toml
		say "no CAP_SYS_RESOURCE: containerd runs with restrict_oom_score_adj = true"
	fi
	# the shim and runc inherit the bundle's PATH and libraries (runc through
	# a wrapper script fails in its init: "can't get final child's PID from pipe")
	PATH="$H/bin:$PATH" LD_LIBRARY_PATH="$H/lib" "$H/bin/containerd" --config /etc/containerd/config.toml >"$OUT/containerd.log" 2>&1 &
	wait_for 30 ctr version || { say "containerd did not start: $(tail -n 5 "$OUT/containerd.log")"; exit 1; }
	for img in pause busybox; do
		ctr -n k8s.io images import "$H/images/$img.tar" >>"$MEASURE_LOG" 2>&1 || say "import $img failed"
	done
}

start_cubelet() { # start_cubelet [EXTRA CONFIG LINES]
	mkdir -p /etc/cubelet "$M" /var/lib/cubelet /run/cubelet
	grep -v '^ *#' "$H/cubelet.yaml" | grep -v '^$' >"$CONF"
	[ $# -gt 0 ] && printf '%s\n' "$@" >>"$CONF"
	"${CUBELET_BIN:-cubelet}" run --config "$CONF" >>"$OUT/cubelet.log" 2>&1 &
	CUBELET_PID=$!
	wait_for 30 status_json || { say "cubelet did not start: $(tail -n 5 "$OUT/cubelet.log")"; exit 1; }
}

stop_cubelet() { # stop_cubelet: and every pod it ran
	rm -f "$M"/*
	wait_for 300 sh -c "[ \"\$(cubelet status -o json | jq '.pods | length')\" = 0 ]" || say "pods left: $(jqs '.pods | length')"
	kill "$CUBELET_PID" 2>/dev/null
	wait "$CUBELET_PID" 2>/dev/null
	CUBELET_PID=
}

# ---- gpu ------------------------------------------------------------------------------
step_gpu() {
	local t0 uuid g a
	say "== GPU: cubelet-gpu-plugin on real NVML, cubelet's device manager, Allocate into a pod"
	say "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%d MiB", $2/1024}' /proc/meminfo), kernel $(uname -r)"
	nvidia-smi -L 2>&1 | sed 's/^/  nvidia-smi: /' | tee -a "$MEASURE_LOG"
	uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -n 1)
	start_containerd
	start_cubelet
	t0=$(date +%s%N)
	cubelet-gpu-plugin >"$OUT/gpu-plugin.log" 2>&1 &
	local ppid=$!
	if wait_for 30 sh -c "[ \"\$(cubelet status -o json | jq -r '.devicePlugins.resources[]? | select(.name==\"nvidia.com/gpu\") | .allocatable')\" = 1 ]"; then
		say "ok - the plugin registered the real GPU: allocatable nvidia.com/gpu = 1, $(ms_since "$t0") ms after the plugin started"
	else
		say "not ok - allocatable nvidia.com/gpu never reached 1: $(jqs -c '.devicePlugins')"
	fi
	say "  device IDs advertised: $(jqs -c '.devicePlugins.resources[]? | select(.name=="nvidia.com/gpu") | {capacity, allocatable, unhealthy, endpoint}')"
	cat >"$M/gpu-a.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: gpu-a}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: cuda
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: {limits: {nvidia.com/gpu: 1, memory: 32Mi}}
Y
	t0=$(date +%s%N)
	if wait_for 60 sh -c "[ \"\$(cubelet status -o json | jq -r --arg n gpu-a-$NODE '.pods[] | select(.name==\$n) | .phase')\" = Running ]"; then
		say "ok - GPU pod gpu-a Running $(ms_since "$t0") ms after its manifest appeared"
	else
		say "not ok - gpu-a not Running: $(podq gpu-a '{phase, reason, message}' | tr '\n' ' ')"
	fi
	g=$(podq gpu-a '.containers[0].devices["nvidia.com/gpu"][0]')
	[ "$g" = "$uuid" ] && say "ok - Allocate gave gpu-a the machine's GPU $g" || say "not ok - gpu-a holds '$g', the GPU is '$uuid'"
	a=$(podq gpu-a '.containers[0].id')
	say "  in gpu-a: $(ctr -n k8s.io tasks exec --exec-id c1 "$a" sh -c 'ls /dev/nvidia* | tr "\n" " "; echo "NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"; head -c 0 /dev/nvidiactl && head -c 0 /dev/nvidia0 && echo "open /dev/nvidiactl, /dev/nvidia0: ok"' 2>&1 | tr '\n' ' ')"
	say "  its OCI spec's devices: $(ctr -n k8s.io containers info "$a" | jq -c '[.Spec.linux.devices[]? | {path, major, minor}]')"
	cat >"$M/gpu-b.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: gpu-b}
spec:
  containers:
  - name: cuda
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: {limits: {nvidia.com/gpu: 1}}
Y
	wait_for 30 sh -c "[ \"\$(cubelet status -o json | jq -r --arg n gpu-b-$NODE '.pods[] | select(.name==\$n) | .reason')\" = OutOfnvidia.com/gpu ]" &&
		say "ok - a second GPU pod is refused: $(podq gpu-b .message)" ||
		say "not ok - gpu-b: $(podq gpu-b '{phase, reason, message}' | tr '\n' ' ')"
	cubelet status >"$OUT/status-gpu.txt" 2>&1
	sed 's/^/  status: /' "$OUT/status-gpu.txt" | head -n 40 | tee -a "$MEASURE_LOG" >/dev/null
	stop_cubelet
	kill "$ppid" 2>/dev/null
	wait "$ppid"
	say "  cubelet-gpu-plugin exit status after SIGTERM: $?"
}

# ---- bench N ----------------------------------------------------------------------------
step_bench() {
	local n=$1 parent=kubepods/burstable weight
	say "== bench: $n pause pods, one at a time (tests/vm/bench/bench.sh's figures on real hardware)"
	start_containerd
	rm -rf "$M" && mkdir -p "$M"
	cri-baseline -p "base$n" "$n" >"$OUT/cri-$n.txt" 2>>"$MEASURE_LOG" || say "cri-baseline failed: $(tail -n 3 "$MEASURE_LOG")"
	find "$CGROOT/kubepods" -depth -mindepth 1 -type d -name "podbase$n-*" -exec rmdir {} + 2>/dev/null
	mkdir -p /tmp/hw && plan_sample cubelet /tmp/hw/sample.yaml
	mkdir -p "$CGROOT/$parent"
	for c in cpuset cpu io memory hugetlb pids; do echo "+$c" >"$CGROOT/kubepods/cgroup.subtree_control" 2>/dev/null; done
	for c in cpuset cpu io memory hugetlb pids; do echo "+$c" >"$CGROOT/kubepods/burstable/cgroup.subtree_control" 2>/dev/null; done
	cg-baseline "$parent" "cgb$n" "$n" "${files[@]}" >"$OUT/cgb-$n.txt" 2>>"$MEASURE_LOG" || say "cg-baseline failed: $(tail -n 3 "$MEASURE_LOG")"
	rmdir "$CGROOT/kubepods/burstable" "$CGROOT/kubepods/besteffort" "$CGROOT/kubepods" 2>/dev/null
	start_cubelet "maxPods: $((n > 110 ? n : 110))"
	sleep 5
	footprint "0 pods"
	say "cubelet 0 pods idle CPU: $(idle_cpu 10)"
	local scraper=
	if [ "${SCRAPE:-0}" = 1 ]; then
		# a scraper as Prometheus and metrics-server would be: every endpoint once a second
		python3 -c '
import http.client, time
while True:
    for p in ("/metrics", "/pods", "/metrics/resource", "/stats/summary"):
        try:
            c = http.client.HTTPConnection("127.0.0.1", 10255, timeout=5); c.request("GET", p); c.getresponse().read(); c.close()
        except Exception:
            pass
    time.sleep(1)' &
		scraper=$!
		say "(scraped once a second on /metrics, /pods, /metrics/resource, /stats/summary while the pods start)"
	fi
	# like for like: cubelet's pods on the host network, as cri-baseline's
	pod-driver -H "$M" "$CGROOT/$parent" "$weight" 1 "$n" >"$OUT/cub-$n.txt" 2>>"$MEASURE_LOG" || say "pod-driver failed: $(tail -n 3 "$MEASURE_LOG")"
	[ -n "$scraper" ] && kill "$scraper"
	status_json >"$OUT/status-$n.json"
	jq -r '.pods[]? | select(.latency != null) | "\(.latency.eventToCgroupUs // 0) \(.latency.eventToSandboxUs // 0) \(.latency.eventToStartedUs // 0)"' \
		"$OUT/status-$n.json" | awk '$1 > 0 || $3 > 0 { print NR, $0 }' >"$OUT/own-$n.txt"
	local c50 c99 b50 b99 g50 g99 a50 a99
	c50=$(pct "$OUT/cub-$n.txt" 50 3) c99=$(pct "$OUT/cub-$n.txt" 99 3)
	b50=$(pct "$OUT/cri-$n.txt" 50 5) b99=$(pct "$OUT/cri-$n.txt" 99 5)
	g50=$(pct "$OUT/cub-$n.txt" 50 2) g99=$(pct "$OUT/cub-$n.txt" 99 2)
	a50=$(pct "$OUT/cgb-$n.txt" 50 2) a99=$(pct "$OUT/cgb-$n.txt" 99 2)
	say "latencies, $n pods, host network (ms):"
	say "  manifest -> container running (cubelet): p50 $c50, p99 $c99, max $(pct "$OUT/cub-$n.txt" 100 3)"
	say "  raw CRI Run+Create+StartContainer:       p50 $b50, p99 $b99, max $(pct "$OUT/cri-$n.txt" 100 5)"
	say "  ratio cubelet / raw CRI:                 p50 $(ratio "$c50" "$b50"), p99 $(ratio "$c99" "$b99") (goal <= 1.05)"
	say "  manifest -> pod cgroup configured (cubelet): p50 $g50, p99 $g99, max $(pct "$OUT/cub-$n.txt" 100 2) (goal p99 <= 5 ms)"
	say "  raw mkdir + ${#files[@]} writes:                 p50 $a50, p99 $a99, max $(pct "$OUT/cgb-$n.txt" 100 2)"
	say "  ratio cubelet / raw cgroup:                  p50 $(ratio "$g50" "$a50"), p99 $(ratio "$g99" "$a99") (goal <= 2)"
	[ -s "$OUT/own-$n.txt" ] && say "  cubelet's own (from the inotify event): cgroup p50 $(pct "$OUT/own-$n.txt" 50 2) p99 $(pct "$OUT/own-$n.txt" 99 2)," \
		"sandbox p50 $(pct "$OUT/own-$n.txt" 50 3) p99 $(pct "$OUT/own-$n.txt" 99 3), started p50 $(pct "$OUT/own-$n.txt" 50 4) p99 $(pct "$OUT/own-$n.txt" 99 4)"
	if [ "${SCRAPE:-0}" = 1 ]; then
		say "HTTP API with $n pods, one keep-alive client, 3 s an endpoint: $(python3 -c '
import http.client, time
out = []
for p in ("/metrics", "/pods", "/metrics/resource", "/stats/summary"):
    c = http.client.HTTPConnection("127.0.0.1", 10255, timeout=5); n = 0; size = 0; t = time.time()
    while time.time() - t < 3:
        c.request("GET", p); r = c.getresponse(); size = len(r.read()); n += 1
    out.append("%s %.0f req/s (%d bytes)" % (p, n / (time.time() - t), size))
print(", ".join(out))')"
	fi
	sleep 5
	say "cubelet with $n pods, idle CPU: $(idle_cpu 30)"
	footprint "$n pods"
	# the second pair, on the pod network (the bundle's CNI plugins for both)
	local nn=${NET_PODS:-20}
	rm -f "$M"/b*.yaml
	wait_for 300 sh -c "[ \"\$(cubelet status -o json | jq '.pods | length')\" = 0 ]" || say "(pods still there before the pod-network pair)"
	cri-baseline -N -p "net$n" "$nn" >"$OUT/cri-net-$n.txt" 2>>"$MEASURE_LOG" || say "cri-baseline -N failed: $(tail -n 3 "$MEASURE_LOG")"
	find "$CGROOT/kubepods" -depth -mindepth 1 -type d -name "podnet$n-*" -exec rmdir {} + 2>/dev/null
	pod-driver "$M" "$CGROOT/$parent" "$weight" 1 "$nn" >"$OUT/cub-net-$n.txt" 2>>"$MEASURE_LOG" || say "pod-driver (pod network) failed: $(tail -n 3 "$MEASURE_LOG")"
	c50=$(pct "$OUT/cub-net-$n.txt" 50 3) c99=$(pct "$OUT/cub-net-$n.txt" 99 3)
	b50=$(pct "$OUT/cri-net-$n.txt" 50 5) b99=$(pct "$OUT/cri-net-$n.txt" 99 5)
	say "latencies, $nn pods, pod network (ms):"
	say "  manifest -> container running (cubelet): p50 $c50, p99 $c99, max $(pct "$OUT/cub-net-$n.txt" 100 3)"
	say "  raw CRI Run+Create+StartContainer:       p50 $b50, p99 $b99, max $(pct "$OUT/cri-net-$n.txt" 100 5)"
	say "  ratio cubelet / raw CRI:                 p50 $(ratio "$c50" "$b50"), p99 $(ratio "$c99" "$b99") (goal <= 1.05)"
	stop_cubelet
}

# ---- fault [BIN] ----------------------------------------------------------------------
cpu_ms() { awk '{ print $14 + $15 }' "/proc/$CUBELET_PID/stat"; } # ticks
# hold LABEL SECONDS: cubelet's CPU over SECONDS, and its log lines about each pod meanwhile
hold() {
	local l0 c0 c1 ticks per
	ticks=$(getconf CLK_TCK)
	l0=$(wc -l <"$OUT/cubelet.log")
	c0=$(cpu_ms)
	sleep "$2"
	c1=$(cpu_ms)
	per=$(tail -n +$((l0 + 1)) "$OUT/cubelet.log" | grep -oE "flt-[0-9]+-$NODE" | sort | uniq -c | awk '{ print $1 }' | sort -n | tr '\n' ' ')
	say "  $1, held $2 s: cubelet CPU $(awk -v c=$((c1 - c0)) -v t="$ticks" -v s="$2" 'BEGIN { printf "%.2f", c * 100 / t / s }')% of one CPU;" \
		"log lines per pod: ${per:-none}; all log lines: $(($(wc -l <"$OUT/cubelet.log") - l0))"
}
fault_pods() { # fault_pods FIRST: 10 busybox pods on the pod network
	for i in $(seq "$1" $(($1 + 9))); do
		cat >"$M/flt-$i.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: flt-$i}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: localhost/cubelet/busybox:1, command: [sleep, "3600"]}
Y
	done
}
running() { [ "$(jqs '[.pods[] | select(.phase == "Running")] | length')" = "$1" ]; }
sandboxes() { ctr -n k8s.io containers ls -q | wc -l; }
no_sandbox() { [ "$(sandboxes)" = 0 ]; }
step_fault() {
	local hold_s=${FAULT_HOLD:-60} t0 idle
	CUBELET_BIN=${1:-cubelet}
	say "== fault ($CUBELET_BIN): a pod network whose CNI plugins go, 10 pods, held $hold_s s"
	start_containerd
	rm -rf "$M" && mkdir -p "$M"
	start_cubelet
	sleep 3
	idle=$(idle_cpu 10)
	say "  idle, no pods: $idle"
	t0=$(date +%s%N)
	fault_pods 1
	if wait_for 120 running 10; then
		say "ok - 10 pods on the pod network (bridge, host-local, no iptables) Running $(ms_since "$t0") ms after their manifests"
	else
		say "not ok - pods not Running: $(jqs -c '[.pods[] | {name, phase, lastError}] | .[0:2]')"
	fi
	say "  flt-1's pod IP: $(podq flt-1 .podIP)"
	# the CNI plugins go, then the manifests: every StopPodSandbox fails
	mkdir -p /tmp/cni-keep && mv "$CNI_BIN"/* /tmp/cni-keep/
	rm -f "$M"/flt-*.yaml
	sleep 5
	hold "plugins gone, manifests removed (StopPodSandbox fails)" "$hold_s"
	say "  stopping: $(jqs -c '[.stopping[]? | {pod, attempts, nextAttemptInSeconds}] | .[0:3]') ($(jqs '.stopping | length') pods); sandboxes in containerd: $(sandboxes)"
	say "  the journal's lines on flt-1: $(grep -c "flt-1-$NODE" "$OUT/cubelet.log"); the first error: $(grep -m1 "flt-1-$NODE.*failed" "$OUT/cubelet.log" | cut -c1-300)"
	t0=$(date +%s%N)
	mv /tmp/cni-keep/* "$CNI_BIN/"
	if wait_for 600 no_sandbox; then
		say "ok - plugins back: every sandbox removed $(ms_since "$t0") ms later"
	else
		say "not ok - sandboxes left: $(sandboxes)"
	fi
	if [ "$CUBELET_BIN" = cubelet ]; then
		# new pods while the plugins are gone: every RunPodSandbox fails
		mv "$CNI_BIN"/* /tmp/cni-keep/
		fault_pods 11
		sleep 5
		hold "plugins gone, 10 new pods (RunPodSandbox fails)" "$hold_s"
		say "  flt-11: $(podq flt-11 '{phase, lastError}' | tr -d '\n' | cut -c1-300)"
		t0=$(date +%s%N)
		mv /tmp/cni-keep/* "$CNI_BIN/"
		if wait_for 120 running 10; then
			say "ok - plugins back: the 10 pods Running $(ms_since "$t0") ms later"
		else
			say "not ok - pods not Running: $(jqs -c '[.pods[] | {name, phase}] | .[0:3]')"
		fi
	fi
	footprint "after the faults"
	stop_cubelet
	CUBELET_BIN=
}

# ---- density COUNTS --------------------------------------------------------------------
# cubelet idle with each count of pause pods (COUNTS: 0,110,250,500; host network, requests
# 10m/8Mi, maxPods 510), the pods added to reach each count: the time until all run, then
# its CPU over 30 s idle and its footprint (the scale issue's pods per node, real hardware)
density_pods() { # density_pods FROM TO: pause pods dFROM..dTO-1 (host network, 10m/8Mi) in $M
	local i
	for ((i = $1; i < $2; i++)); do
		printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: d%d}\nspec:\n  hostNetwork: true\n  containers:\n  - name: p\n    image: localhost/cubelet/pause:1\n    resources: {requests: {cpu: 10m, memory: 8Mi}}\n' \
			"$i" >"$M/.d$i.yaml"
		mv "$M/.d$i.yaml" "$M/d$i.yaml"
	done
}
step_density() {
	local have=0 n t0
	say "== density: cubelet idle at $1 pause pods"
	start_containerd
	rm -rf "$M" && mkdir -p "$M"
	start_cubelet "maxPods: 510"
	sleep 5
	for n in ${1//,/ }; do
		t0=$(date +%s%N)
		density_pods "$have" "$n"
		have=$n
		wait_for 600 running "$n" || say "(not all $n pods running: $(jqs '[.pods[] | select(.phase == "Running")] | length'))"
		say "density: $n pods running $(ms_since "$t0") ms after the last manifests were written"
		sleep 10
		say "cubelet with $n pods, idle CPU: $(idle_cpu 30)"
		footprint "$n pods"
	done
	stop_cubelet
}

# ---- kubelet-density COUNTS --------------------------------------------------------------
# the same pods and figures with the real kubelet 1.34 beside it (bin/kubelet: the bundle
# made with KUBELET=build/cluster/kubelet): standalone, static pods from the same
# manifests, cgroupfs on the machine's cgroup v2, the same containerd
kubelet_foot() { # kubelet_foot LABEL
	say "kubelet $1: VmRSS $(awk '/VmRSS/ { print $2 }' "/proc/$KUBELET_PID/status") kB," \
		"$(awk '/^(Anonymous|Private_Clean|Private_Dirty):/ { printf "%s %s kB ", $1, $2 }' "/proc/$KUBELET_PID/smaps_rollup")"
}
kubelet_running() { [ "$(ctr -n k8s.io tasks ls 2>/dev/null | grep -c RUNNING)" -ge $((2 * $1)) ]; }
step_kubelet_density() {
	local have=0 n t0 d=/var/lib/hw-kubelet ticks c0
	say "== kubelet density: the real kubelet idle at $1 pause pods"
	command -v kubelet >/dev/null || { say "no bin/kubelet in the bundle (KUBELET=build/cluster/kubelet tests/hw/bundle.sh)"; return; }
	start_containerd
	rm -rf "$M" && mkdir -p "$M" "$d"
	say "kernel tunables kubelet sets: vm.overcommit_memory $(cat /proc/sys/vm/overcommit_memory), kernel.panic $(cat /proc/sys/kernel/panic), kernel.panic_on_oops $(cat /proc/sys/kernel/panic_on_oops)"
	cat >"$d/config.yaml" <<-EOC
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		cgroupDriver: cgroupfs
		staticPodPath: $M
		containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
		maxPods: 510
		address: 127.0.0.1
		readOnlyPort: 0
		authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
		authorization: {mode: AlwaysAllow}
		failSwapOn: false
	EOC
	kubelet --config "$d/config.yaml" --root-dir "$d/root" --node-ip 127.0.0.1 >"$OUT/kubelet.log" 2>&1 &
	KUBELET_PID=$!
	sleep 15
	kill -0 "$KUBELET_PID" 2>/dev/null || { say "kubelet exited: $(tail -n 5 "$OUT/kubelet.log")"; return; }
	ticks=$(getconf CLK_TCK)
	for n in ${1//,/ }; do
		t0=$(date +%s%N)
		density_pods "$have" "$n"
		have=$n
		wait_for 600 kubelet_running "$n" || say "(not all $n pods running: $(ctr -n k8s.io tasks ls | grep -c RUNNING) tasks)"
		say "kubelet density: $n pods running $(ms_since "$t0") ms after the last manifests were written"
		sleep 10
		c0=$(awk '{ print $14 + $15 }' "/proc/$KUBELET_PID/stat")
		sleep 30
		say "kubelet with $n pods, idle CPU: $((($(awk '{ print $14 + $15 }' "/proc/$KUBELET_PID/stat") - c0) * 1000 / ticks)) ms over 30 s idle"
		kubelet_foot "$n pods"
	done
	kill "$KUBELET_PID"
	wait "$KUBELET_PID" 2>/dev/null
}

while [ $# -gt 0 ]; do
	case $1 in
	gpu) step_gpu; shift ;;
	cri) start_containerd; cri-baseline -p probe "${2:-1}" 2>&1 | tail -n 3; shift 2 ;;
	bench) step_bench "${2:-110}"; shift 2 ;;
	density) step_density "${2:-0,110,250,500}"; shift 2 ;;
	kubelet-density) step_kubelet_density "${2:-0,110,250,500}"; shift 2 ;;
	scrape) SCRAPE=1 step_bench "${2:-110}"; shift 2 ;;
	fault) if [ $# -gt 1 ] && [ "${2#cubelet}" != "$2" ]; then step_fault "$2"; shift 2; else step_fault; shift; fi ;;
	*) echo "run.sh: unknown step '$1'" >&2; exit 2 ;;
	esac
done
