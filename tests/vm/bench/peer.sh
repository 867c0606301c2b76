#!/bin/bash
# `make bench-peer` (part of `make bench`), inside the VM (figures printed,
# nothing asserted): the real kubelet 1.34 (build/cluster/kubelet, kubelet
# alone) and cubelet, one after the other on this guest, each from a clean
# node, with the same KubeletConfiguration (tests/vm/lib/agents.sh: cgroupfs,
# reserved resources, maxPods 110, static pods, the read-only port) and the
# same BENCH_PEER_PODS pause pods (default 110; hostNetwork, requests
# 10m/8Mi: Burstable), timed by the same tool (pod-driver: from the
# manifest's rename to the pod cgroup's sandbox and container both
# populated; the pod cgroup is pod<uid> under both agents):
#   1. memory idle with no pod: VmRSS and smaps Anonymous (the private heap);
#   2. the pods added one at a time: manifest -> container running p50/p99;
#   3. with the pods running: CPU over BENCH_IDLE_S seconds (default 60, the
#      agent's unit cgroup, so every thread and child counts), then memory;
#   4. the pods removed, then dropped in all at once: the same latency per pod;
# then one table, cubelet / kubelet, with the issue's goals beside it.
# Not here: eviction onset. kubelet never evicts a static pod (static pods
# are critical, IsCriticalPod): tests/vm/bench/peer-eviction.sh registers
# each agent with the real control plane and ramps an API pod.
# vm-timeout: 5400
# vm-mem: 4096M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"
# shellcheck disable=SC1091
[ -f /etc/cubelet-bench/env ] && . /etc/cubelet-bench/env
N=${BENCH_PEER_PODS:-110}
IDLE_S=${BENCH_IDLE_S:-60}
BIN=${BENCH_BIN:-$VM_REPO/build}
OUT=$VM_OUT/peer-bench.txt
say() { printf '%s\n' "$*" | tee -a "$OUT"; }
KUBE=$VM_REPO/build/cluster/kube
KUBELET_BIN=$VM_REPO/build/cluster/kubelet
if [ ! -x "$KUBELET_BIN" ]; then
	say "peer bench: build/cluster/kubelet is not built (make build/cluster/kubelet)"
	exit 0
fi
# shellcheck disable=SC1091
. "$VM_LIB/agents.sh"
MEASURE_LOG=$VM_OUT/scenario.log
# shellcheck disable=SC1091
. "$VM_REPO/tests/vm/bench/measure.sh"
PARENT=/sys/fs/cgroup/kubepods/burstable
DRIVER=$BIN/tests/vm/bench/pod-driver

# mem PID: "VmRSS Anonymous" in kB
mem() {
	echo "$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status") $(awk '/^Anonymous:/ { s += $2 } END { print s + 0 }' "/proc/$1/smaps_rollup")"
}
# no_pods SECONDS: no bench pod cgroup left
no_pods() {
	for _ in $(seq "$1"); do
		compgen -G "$PARENT/podbench-*" >/dev/null || return 0
		sleep 1
	done
	return 1
}

declare -A R
run_agent() {
	local a=$1 pid c0 c1 t0
	agent_configure "$a"
	plan_sample "$CUBELET" /tmp/peer-sample.yaml # sets weight: the pod cgroup's cpu.weight, kubelet's formula
	t0=$(date +%s.%N)
	agent_start "$a" || say "$a: /pods did not answer"
	R[$a.ready]=$(since "$t0" 1)
	sleep 20
	pid=$(agent_pid "$a")
	read -r R[$a.rss0] R[$a.anon0] <<<"$(mem "$pid")"
	say "$a: /pods answered $((${R[$a.ready]%.*})) s after the start; idle, no pod: VmRSS ${R[$a.rss0]} kB, Anonymous ${R[$a.anon0]} kB"

	"$DRIVER" -H "$M" "$PARENT" "$weight" 1 "$N" >"$VM_OUT/$a.one.txt" 2>>"$VM_OUT/scenario.log" ||
		say "$a: pod-driver (one at a time) failed: $(tail -n 2 "$VM_OUT/scenario.log")"
	R[$a.one50]=$(pct "$VM_OUT/$a.one.txt" 50 3) R[$a.one99]=$(pct "$VM_OUT/$a.one.txt" 99 3)
	say "$a: $N pods one at a time, manifest -> running: p50 ${R[$a.one50]} ms, p99 ${R[$a.one99]} ms, max $(pct "$VM_OUT/$a.one.txt" 100 3) ms"

	sleep 10
	c0=$(unit_cpu "$(agent_unit "$a")")
	sleep "$IDLE_S"
	c1=$(unit_cpu "$(agent_unit "$a")")
	R[$a.cpu]=$(((c1 - c0) / 1000))
	read -r R[$a.rssN] R[$a.anonN] <<<"$(mem "$pid")"
	say "$a: $N pods running: CPU ${R[$a.cpu]} ms over $IDLE_S s; VmRSS ${R[$a.rssN]} kB, Anonymous ${R[$a.anonN]} kB"

	t0=$(date +%s.%N)
	rm -f "$M"/b*.yaml
	no_pods 900 || say "$a: pods still there after 900 s"
	say "$a: $N pods removed in $(since "$t0") s"
	sleep 10
	"$DRIVER" -B -p 20000 -t 1200 -H "$M" "$PARENT" "$weight" 1 "$N" >"$VM_OUT/$a.once.txt" 2>>"$VM_OUT/scenario.log" ||
		say "$a: pod-driver (at once) failed: $(tail -n 2 "$VM_OUT/scenario.log")"
	R[$a.once50]=$(pct "$VM_OUT/$a.once.txt" 50 3) R[$a.once99]=$(pct "$VM_OUT/$a.once.txt" 99 3)
	say "$a: $N pods at once, manifest -> running: p50 ${R[$a.once50]} ms, p99 ${R[$a.once99]} ms, max $(pct "$VM_OUT/$a.once.txt" 100 3) ms"
	rm -f "$M"/b*.yaml
	no_pods 900 || say "$a: pods still there after 900 s"
	agent_stop "$a" "$VM_OUT/$a.log"
	for k in ready rss0 anon0 one50 one99 cpu rssN anonN once50 once99; do echo "$k ${R[$a.$k]}"; done >"$VM_OUT/$a.vals"
}

say "# kubelet $("$KUBELET_BIN" --version 2>/dev/null | awk '{ print $2 }') and cubelet $("$BIN/cubelet" --version 2>/dev/null | jq -r .version 2>/dev/null), $(date -u +%F), $N pause pods, guest $(nproc) vCPUs under qemu TCG, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"
# (for working on one agent: /tmp/peer-agents on the host names the one to
# run; the other's figures come from /tmp/peer-vals/AGENT.vals, a file an
# earlier run left in its output, when there is one)
agents=$(cat /tmp/peer-agents 2>/dev/null || echo kubelet cubelet)
for a in $agents; do
	if [ "$a" != "${agents%% *}" ]; then
		bash "$VM_LIB/node-state.sh" reset >"$VM_OUT/reset.txt" 2>&1
		bash "$VM_LIB/node-state.sh" check >>"$VM_OUT/reset.txt" 2>&1 || say "(the node was not clean after kubelet: $VM_OUT/reset.txt)"
	fi
	run_agent "$a"
done
for a in kubelet cubelet; do
	case " $agents " in *" $a "*) continue ;; esac
	[ -f "/tmp/peer-vals/$a.vals" ] || continue
	say "($a: the figures of an earlier run, /tmp/peer-vals/$a.vals)"
	while read -r k v; do R[$a.$k]=$v; done <"/tmp/peer-vals/$a.vals"
done

peer_table_head
peer_row "VmRSS, no pod (kB)" rss0 "<= 0.20"
peer_row "smaps Anonymous, no pod (kB)" anon0 "<= 0.20"
peer_row "VmRSS, $N pods (kB)" rssN "<= 0.20"
peer_row "smaps Anonymous, $N pods (kB)" anonN "<= 0.20"
peer_row "CPU over $IDLE_S s idle, $N pods (ms)" cpu "<= 0.10"
peer_row "start one at a time, p50 (ms)" one50 "<= 1.0"
peer_row "start one at a time, p99 (ms)" one99 "<= 1.0"
peer_row "start $N at once, p50 (ms)" once50 "<= 1.0"
peer_row "start $N at once, p99 (ms)" once99 "<= 1.0"
peer_row "start to /pods answering (s)" ready ""
