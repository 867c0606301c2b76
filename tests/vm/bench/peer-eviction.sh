#!/bin/bash
# `make bench-peer-eviction` (part of `make bench-peer`), inside the VM
# (figures printed, nothing asserted): memory-pressure onset -> eviction
# decision -> victim stopped, the real kubelet 1.34 (build/cluster/kubelet)
# against cubelet. kubelet evicts no static pod (static pods are critical),
# so each agent in turn joins the real control plane as the node
# (tests/cluster/control-plane.sh in the guest, loopback only) and the ramp
# is an API pod bound to it. Both get the configuration of
# tests/vm/lib/agents.sh plus evictionHard memory.available<T (T: 250 MiB
# below memory.available with the control plane up and no agent) and
# evictionPressureTransitionPeriod 2s; otherwise each agent's defaults
# (kubelet: its fixed 10 s eviction monitoring period, kernelMemcgNotification
# off; cubelet: 1 s sampling plus PSI triggers).
# Each of BENCH_PEER_EVICTIONS runs (default 10) binds a Burstable pod
# (requests 10Mi) whose awk loop allocates 1 MiB strings and prints its count
# and /proc/uptime every 2 MiB (into a hostPath file: the log outlives the
# container). Its memory limit sits HEADROOM MiB (default
# 400) past the threshold: an agent that has not evicted it by then loses it
# to the kernel's OOM killer (counted). Onset: the first line whose count
# reached the MiB that cross T (memory.available measured just before the
# pod); decision: the journal's monotonic time of the agent's eviction line
# (kubelet "must evict pod(s) to reclaim", cubelet "evicting pod"); stopped:
# the awk process gone (polled every 50 ms without a fork).
# vm-timeout: 3600
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh" # wait_until
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"
# shellcheck disable=SC1091
[ -f /etc/cubelet-bench/env ] && . /etc/cubelet-bench/env
N=${BENCH_PEER_EVICTIONS:-10}
HEADROOM=${BENCH_PEER_HEADROOM:-400}
KUBE=$VM_REPO/build/cluster/kube
KUBELET_BIN=$VM_REPO/build/cluster/kubelet
D=/srv/cubelet-peer-eviction
OUT=$VM_OUT/peer-eviction.txt
MiB=1048576
say() { printf '%s\n' "$*" | tee -a "$OUT"; }
if [ ! -x "$KUBE" ] || [ ! -x "$KUBELET_BIN" ]; then
	say "peer eviction bench: build/cluster/kube or build/cluster/kubelet is not built (make cluster-peers build/cluster/kubelet)"
	exit 0
fi
# shellcheck disable=SC1091
. "$VM_LIB/agents.sh"
kc() { "$KUBE" kubectl --kubeconfig "$D/pki/admin.kubeconfig" "$@"; }
pct() { sort -n "$1" | awk -v p="$2" '{ a[NR] = $1 } END { i = int((NR * p + 99) / 100); if (i < 1) i = 1; if (NR) print a[i]; else print "n/a" }'; }
uptime_ms() { local up _; read -r up _ </proc/uptime; echo "${up%.*}${up#*.}0"; }
exec {NAP}<> <(:) # read -t on it: a sleep without a fork
nap() { read -r -t "$1" -u "$NAP" _ || true; }
node_cond() { kc get node "$NODE_LC" -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}" 2>/dev/null; }
ready() { [ "$(node_cond Ready)" = True ]; }
no_pressure() { [ "$(node_cond MemoryPressure)" = False ]; }
phase() { kc get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
finished() { case $(phase "$1") in Failed | Succeeded) return 0 ;; *) return 1 ;; esac; }
gone() { ! kc get pod "$1" >/dev/null 2>&1; }
has_sa() { kc get serviceaccount default >/dev/null 2>&1; }

say "# memory-pressure onset -> eviction, kubelet $("$KUBELET_BIN" --version 2>/dev/null | awk '{ print $2 }') and cubelet, $(date -u +%F), $N runs each, guest $(nproc) vCPUs under qemu TCG, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"
t0=$(date +%s.%N)
out=$(TIMEOUT=600 "$VM_REPO/tests/cluster/control-plane.sh" start -b "$KUBE" -d "$D" -n "$NODE_LC" 2>&1) ||
	{ say "the control plane did not start: $out"; exit 1; }
say "control plane up in $(since "$t0") s"
wait_until 120 has_sa || say "no ServiceAccount default/default after 120 s"
export AGENT_KUBECONFIG=$D/pki/node.kubeconfig AGENT_NODE=$NODE_LC
sleep 5
T=$((($(available) - 250 * MiB) / MiB))
say "threshold memory.available<${T}Mi (250 MiB below memory.available with the control plane up, no agent); headroom ${HEADROOM} MiB"

# one_run AGENT R: one ramp; appends to $VM_OUT/AGENT.{dec,stop}, counts OOM kills
one_run() {
	local a=$1 r=$2 pod=burst-$2 avail cross limit uid log pid oom0 oom1 t_start dec on stop line
	# the limit: from memory.available now (the pod's own sandbox and shell
	# are not running yet: a few MiB of slack)
	avail=$(available)
	limit=$(((avail - T * MiB) / MiB + HEADROOM + 16))
	oom0=$(dmesg | grep -c 'oom-kill:')
	t_start=$(date +%s)
	kc apply -f - >/dev/null <<Y
apiVersion: v1
kind: Pod
metadata: {name: $pod, namespace: default}
spec:
  nodeName: $NODE_LC
  hostNetwork: true
  automountServiceAccountToken: false
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    imagePullPolicy: Never
    resources: {requests: {memory: 10Mi}, limits: {memory: ${limit}Mi}}
    volumeMounts: [{name: ramp, mountPath: /ramp}]
    command:
    - sh
    - -c
    - |
      touch /ramp/$pod.ready; while [ ! -e /ramp/$pod.go ]; do sleep 0.1; done
      exec awk 'BEGIN{s=sprintf("%1048576s","x"); for(i=1;i<=$((limit + 64));i++){a[i]=s i; if(i%2==0) system("echo " i " \$(cat /proc/uptime) >>/ramp/$pod")}; while(1) system("sleep 60")}'
  volumes: [{name: ramp, hostPath: {path: /run/peer-ramp/$a, type: DirectoryOrCreate}}]
Y
	# the pod up (sandbox, container, shell), memory.available taken, the
	# shell's PID (it execs the awk: the same process), then the ramp let go
	# and the process's end polled. Found before the ramp: an agent that
	# evicts within a second left no awk to find after it (once, a search
	# after the ramp cost 240 kubectl calls a run and found nothing)
	wait_until 240 test -e "/run/peer-ramp/$a/$pod.ready" || say "  $a run $r: $pod did not start in 240 s"
	uid="" pid=""
	for _ in $(seq 120); do
		uid=$(kc get pod "$pod" -o jsonpath='{.metadata.uid}' 2>/dev/null)
		if [ -n "$uid" ]; then
			pid=$(for f in /sys/fs/cgroup/kubepods/burstable/pod"$uid"/*/cgroup.procs; do cat "$f"; done 2>/dev/null |
				while read -r p; do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sh ] && echo "$p"; done | head -n 1)
			[ -n "$pid" ] && break
		fi
		nap 0.25
	done
	avail=$(available)
	cross=$(((avail - T * MiB) / MiB))
	touch "/run/peer-ramp/$a/$pod.go"
	stop=""
	log "$a run $r: ramp pid '${pid}' (uid $uid), crossing at $cross MiB, limit $limit MiB"
	if [ -n "$pid" ]; then
		for _ in $(seq 6000); do # 300 s
			[ -d "/proc/$pid" ] || break
			nap 0.05
		done
		[ -d "/proc/$pid" ] || stop=$(uptime_ms)
	fi
	log "$a run $r: ramp ended (${stop:-still running after 300 s}), $(tail -n 1 "/run/peer-ramp/$a/$pod" 2>/dev/null)"
	wait_until 180 finished "$pod" || say "  $a run $r: $pod did not finish in 180 s (phase $(phase "$pod"))"
	reason=$(kc get pod "$pod" -o jsonpath='{.status.reason}/{.status.containerStatuses[0].state.terminated.reason}' 2>/dev/null)
	oom1=$(dmesg | grep -c 'oom-kill:')
	log=/run/peer-ramp/$a/$pod
	if [ "$a" = kubelet ]; then line="must evict pod(s) to reclaim"; else line="evicting pod default/$pod "; fi
	dec=$(journalctl -u "$(agent_unit "$a")" -o json --since "@$t_start" --no-pager 2>/dev/null |
		jq -r --arg l "$line" 'select((.MESSAGE | type) == "string" and (.MESSAGE | contains($l))) | .__MONOTONIC_TIMESTAMP' |
		head -n 1)
	on=""
	# the first line at the crossing; an agent that evicted before the ramp
	# printed it (its reading of memory.available a few MiB off the bench's):
	# the last line, the latency then an upper bound
	early=""
	[ -f "$log" ] && on=$(awk -v c="$cross" '$1 + 0 >= c { printf "%d\n", $2 * 1000; f = 1; exit } { l = $2 } END { if (!f && l != "") printf "%d\n", l * 1000 }' "$log")
	[ -f "$log" ] && [ "$(awk 'END { print $1 + 0 }' "$log")" -lt "$cross" ] && early=" (evicted before the ramp printed the crossing: an upper bound)"
	if [ $((oom1 - oom0)) -gt 0 ]; then
		echo $((oom1 - oom0)) >>"$VM_OUT/$a.oom"
	fi
	if [ -n "$dec" ] && [ -n "$on" ]; then
		dec=$((dec / 1000 - on))
		[ "$dec" -lt 0 ] && dec=0
		echo "$dec" >>"$VM_OUT/$a.dec"
		[ -n "$stop" ] && stop=$((stop - on)) && echo "$stop" >>"$VM_OUT/$a.stop"
		say "  $a run $r: crossing at $cross MiB, decision $dec ms, stopped $stop ms after the onset ($reason)$early"
	else
		say "  $a run $r: crossing at $cross MiB, no onset or no eviction decision (onset '$on', decision '$dec', $reason, OOM kills $((oom1 - oom0)))"
	fi
	kc delete pod "$pod" --wait=false >/dev/null 2>&1
	wait_until 120 gone "$pod" || say "  $a run $r: $pod still there after 120 s"
	wait_until 120 no_pressure || say "  $a run $r: MemoryPressure still $(node_cond MemoryPressure) after 120 s"
	sleep 3
}

declare -A R
# BENCH_PEER_AGENTS: the agents to run (default both); the other's figures
# from /etc/cubelet-bench/AGENT.{dec,stop,oom} (an earlier run's files, -f)
AGENTS=${BENCH_PEER_AGENTS:-kubelet cubelet}
for a in $AGENTS; do
	: >"$VM_OUT/$a.dec"
	: >"$VM_OUT/$a.stop"
	: >"$VM_OUT/$a.oom"
	agent_configure "$a" "evictionHard: {memory.available: \"${T}Mi\"}" "evictionPressureTransitionPeriod: 2s"
	agent_start "$a" || say "$a: /pods did not answer"
	wait_until 240 ready || say "$a: the node is not Ready after 240 s"
	sleep 10
	for r in $(seq "$N"); do one_run "$a" "$r"; done
	agent_stop "$a" "$VM_OUT/$a.log"
	kc delete node "$NODE_LC" --wait=false >/dev/null 2>&1
	sleep 5
done
for a in kubelet cubelet; do
	case " $AGENTS " in *" $a "*) ;; *)
		[ -f "/etc/cubelet-bench/$a.dec" ] || continue
		say "($a: the figures of an earlier run, /etc/cubelet-bench/$a.*)"
		for k in dec stop oom; do cp "/etc/cubelet-bench/$a.$k" "$VM_OUT/$a.$k" 2>/dev/null || : >"$VM_OUT/$a.$k"; done
		;;
	esac
	R[$a.n]=$(wc -l <"$VM_OUT/$a.dec")
	R[$a.dec50]=$(pct "$VM_OUT/$a.dec" 50) R[$a.decmax]=$(pct "$VM_OUT/$a.dec" 100)
	R[$a.stop50]=$(pct "$VM_OUT/$a.stop" 50) R[$a.stopmax]=$(pct "$VM_OUT/$a.stop" 100)
	R[$a.oom]=$(awk '{ s += $1 } END { print s + 0 }' "$VM_OUT/$a.oom")
	say "$a: ${R[$a.n]} runs evicted; onset -> decision p50 ${R[$a.dec50]} ms, max ${R[$a.decmax]} ms; onset -> stopped p50 ${R[$a.stop50]} ms, max ${R[$a.stopmax]} ms; OOM kills ${R[$a.oom]}"
done

peer_table_head
peer_row "runs evicted (of $N)" n ""
peer_row "onset -> eviction decision, p50 (ms)" dec50 "<= 0.10"
peer_row "onset -> eviction decision, max (ms)" decmax ""
peer_row "onset -> victim stopped, p50 (ms)" stop50 ""
peer_row "onset -> victim stopped, max (ms)" stopmax ""
peer_row "OOM kills" oom "0 if kl>0"
"$VM_REPO/tests/cluster/control-plane.sh" stop -d "$D" >/dev/null 2>&1
exit 0
