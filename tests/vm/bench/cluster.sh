#!/bin/bash
# `make bench-cluster` (part of `make bench`), inside the VM (figures printed,
# nothing asserted): cubelet as a node of the real control plane
# (tests/cluster/control-plane.sh in the guest, loopback only).
#  1. idle: cubelet's CPU (its unit's cpu.stat) and memory (private: smaps
#     Anonymous; VmRSS) over IDLE_S seconds without --kubeconfig, then with it
#     (registered, Lease renewed), and the API requests of the idle node per
#     minute (`cubelet status`: apiServer.requests; goal: the Lease's 6);
#  2. BENCH_CLUSTER_PODS pods (default 30) created at once through the API
#     server (a Deployment: the ReplicaSet controller, the scheduler, then
#     cubelet) → Running in the API, per pod from the create to the watch
#     event that shows it Running (kubectl get -w, stamped on arrival); beside
#     the same pods as static manifests → Running in `cubelet status`;
#     p50/p99 and their ratio;
#  3. the status publisher's cost with those N API pods steady: each binary of
#     BENCH_STATUS_BINS (colon-separated host paths; default the build's) in
#     turn, BENCH_STATUS_ROUNDS times (default 1; 2 with two binaries: A B A
#     B), cubelet restarted on the same state directory (the pods kept):
#     the status tick's own CPU (`cubelet status`: apiServer.statusTickCpuUsec),
#     the unit's, and the status PATCHes and renders over BENCH_STATUS_WINDOW_S
#     (60). Before and after of a change: `git worktree add` the old commit,
#     build it there, pass both.
# vm-timeout: 2400
# vm-mem: 3072M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"
N=${BENCH_CLUSTER_PODS:-30}
IDLE_S=${BENCH_IDLE_S:-60}
KUBE=$VM_REPO/build/cluster/kube
D=/srv/cubelet-cluster-bench
OUT=$VM_OUT/cluster-bench.txt
say() { printf '%s\n' "$*" | tee -a "$OUT"; }
kc() { "$KUBE" kubectl --kubeconfig "$D/pki/admin.kubeconfig" "$@"; }
now() { date +%s.%N; }
pctl() { sort -n "$1" | awk -v p="$2" '{ a[NR] = $1 } END { i = int((NR * p + 99) / 100); if (i < 1) i = 1; printf "%.2f", a[i] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

if [ ! -x "$KUBE" ]; then
	say "cluster bench: build/cluster/kube is not built (make cluster-peers)"
	exit 0
fi
say "# cubelet cluster bench, $(date -u +%F), $N pods, idle window ${IDLE_S}s (qemu TCG: absolute times mean little)"
out=$(TIMEOUT=600 "$VM_REPO/tests/cluster/control-plane.sh" start -b "$KUBE" -d "$D" -n "$NODE_LC" 2>&1) ||
	{ say "the control plane did not start: $out"; exit 1; }

cubelet_install
unit_cpu() { awk '$1 == "usage_usec" { print $2 }' /sys/fs/cgroup/system.slice/cubelet.service/cpu.stat; }
cubelet_pid() { systemctl show -p MainPID --value cubelet; }
private_kb() { awk '/^Anonymous:/ { s += $2 } END { print s }' "/proc/$(cubelet_pid)/smaps_rollup"; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$(cubelet_pid)/status"; }
start_cubelet() { # [BIN=PATH] start_cubelet [EXTRA FLAGS]
	mkdir -p /etc/systemd/system/cubelet.service.d
	printf '[Service]\nExecStart=\nExecStart=%s run --config /etc/cubelet/config.yaml --node-name %s %s\n' \
		"${BIN:-$CUBELET}" "$NODE_LC" "$*" >/etc/systemd/system/cubelet.service.d/bench.conf
	systemctl daemon-reload
	systemctl restart cubelet
	for _ in $(seq 120); do status_json >/dev/null && break; sleep 0.5; done
}
idle() { # idle LABEL: CPU, memory and API requests over IDLE_S
	local c0 c1 q0 q1
	sleep 10 # settle
	c0=$(unit_cpu)
	q0=$(status_json | jq -r '.apiServer.requests // 0')
	sleep "$IDLE_S"
	c1=$(unit_cpu)
	q1=$(status_json | jq -r '.apiServer.requests // 0')
	say "$(printf '%-34s CPU %5.2f %% of a core   private %6s kB   VmRSS %6s kB   API requests/min %s' "$1" \
		"$(awk -v a="$c0" -v b="$c1" -v s="$IDLE_S" 'BEGIN { print (b - a) / (s * 10000) }')" \
		"$(private_kb)" "$(rss_kb)" "$(awk -v a="$q0" -v b="$q1" -v s="$IDLE_S" 'BEGIN { printf "%.1f", (b - a) * 60 / s }')")"
}

# ---- 1. idle, without and with the API server ------------------------------------------------
start_cubelet
idle "idle, no API server"
start_cubelet --kubeconfig "$D/pki/node.kubeconfig"
ready() { [ "$(kc get node "$NODE_LC" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; }
for _ in $(seq 240); do ready && break; sleep 0.5; done
idle "idle, a node of the API server"

# ---- 2. N pods through the API server, and as static manifests -------------------------------
W=/tmp/cluster-bench-watch.txt
: >"$W"
kc get pods -l app=bench -w --no-headers -o custom-columns=N:.metadata.name,P:.status.phase,IP:.status.podIP 2>/dev/null |
	while read -r name phase ip; do printf '%s %s %s %s\n' "$(now)" "$name" "$phase" "$ip"; done >>"$W" &
WATCH=$!
sleep 3
t0=$(now)
kc create -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: bench, namespace: default}
spec:
  replicas: $N
  selector: {matchLabels: {app: bench}}
  template:
    metadata: {labels: {app: bench}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: app, image: localhost/cubelet/busybox:1, command: [sleep, "3600"]}
EOF
running_api() { awk '$3 == "Running" && $4 != "" && $4 != "<none>" { print $2 }' "$W" | sort -u | wc -l; }
for i in $(seq 1200); do
	[ "$(running_api)" -ge "$N" ] && break
	if [ $((i % 60)) = 0 ]; then
		sj=$(status_json)
		say "# $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }') s: $(running_api) of $N Running in the API's watch ($(wc -l <"$W") events), $(kc get pods -l app=bench -o json | jq '[.items[] | select(.status.phase == "Running" and .status.podIP != null)] | length') in a list; API client: $(jq -c '.apiServer | {requests, failures, retryAfterHolds, podStatus}' <<<"$sj"); cubelet has $(jq '[.pods[] | select(.name | startswith("bench-"))] | group_by(.phase) | map("\(.[0].phase) \(length)") | join(", ")' <<<"$sj"); $(awk '/MemAvailable/ { printf "%d MiB available", $2 / 1024 }' /proc/meminfo)"
	fi
	sleep 0.5
done
kill "$WATCH" 2>/dev/null
awk -v t0="$t0" '$3 == "Running" && $4 != "" && $4 != "<none>" && !seen[$2]++ { print $1 - t0 }' "$W" >/tmp/api.txt

# ---- 3. the status publisher with N steady API pods, each binary in turn ---------------------
IFS=: read -r -a SBINS <<<"${BENCH_STATUS_BINS:-$CUBELET}"
SROUNDS=${BENCH_STATUS_ROUNDS:-$([ "${#SBINS[@]}" -gt 1 ] && echo 2 || echo 1)}
SW=${BENCH_STATUS_WINDOW_S:-60}
steady() { [ "$(status_json | jq '[.pods[] | select((.name | startswith("bench-")) and .phase == "Running")] | length')" -ge "$N" ]; }
pub() { status_json | jq -r '.apiServer | "\(.podStatus.patches) \(.podStatus.renders // "n/a") \(.statusTickCpuUsec // "n/a")"'; }
say "# the status publisher, $N API pods steady, ${SW} s windows, $SROUNDS round(s) of: ${SBINS[*]}"
for r in $(seq "$SROUNDS"); do
	for b in "${SBINS[@]}"; do
		BIN=$b start_cubelet --kubeconfig "$D/pki/node.kubeconfig"
		ok=0
		for _ in $(seq 360); do steady && ok=1 && break; sleep 0.5; done
		if [ "$ok" = 0 ]; then
			say "round $r, $b: the $N pods not Running in cubelet status within 180 s of its start"
			continue
		fi
		sleep 30 # the start's resync PATCHes out, the conditions' transitions past
		read -r p0 r0 t0s <<<"$(pub)"
		c0=$(unit_cpu)
		sleep "$SW"
		c1=$(unit_cpu)
		read -r p1 r1 t1s <<<"$(pub)"
		say "$(printf '%-44s unit CPU %6d ms   status tick %8s   PATCHes %3d   renders %s' "round $r: $b" \
			$(((c1 - c0) / 1000)) "$([ "$t0s" = n/a ] && echo n/a || echo "$(((t1s - t0s) / 1000)) ms")" \
			$((p1 - p0)) "$([ "$r0" = n/a ] && echo n/a || echo $((r1 - r0)))")"
	done
done
BIN=$CUBELET start_cubelet --kubeconfig "$D/pki/node.kubeconfig"
kc delete deployment bench --wait=false >/dev/null
for _ in $(seq 600); do [ "$(status_json | jq '[.pods[] | select(.name | startswith("bench-"))] | length')" = 0 ] && break; sleep 0.5; done

t1=$(now)
for i in $(seq "$N"); do
	printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: static-%s}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: localhost/cubelet/busybox:1, command: [sleep, "3600"]}\n' "$i" >"$M/static-$i.yaml"
done
: >/tmp/static.txt
declare -A seen
for i in $(seq 1200); do
	[ $((i % 120)) = 0 ] && say "# static: $(wc -l </tmp/static.txt) of $N Running after $(awk -v a="$t1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }') s"
	ts=$(now)
	for p in $(status_json | jq -r '.pods[] | select((.name | startswith("static-")) and .phase == "Running") | .name'); do
		[ -n "${seen[$p]:-}" ] && continue
		seen[$p]=1
		awk -v a="$ts" -v b="$t1" 'BEGIN { print a - b }' >>/tmp/static.txt
	done
	[ "$(wc -l </tmp/static.txt)" -ge "$N" ] && break
	sleep 0.25
done
rm -f "$M"/static-*.yaml
a50=$(pctl /tmp/api.txt 50) a99=$(pctl /tmp/api.txt 99) s50=$(pctl /tmp/static.txt 50) s99=$(pctl /tmp/static.txt 99)
say "$(printf '%-34s p50 %7s s   p99 %7s s   (%s of %s Running)' "$N pods through the API server" "$a50" "$a99" "$(wc -l </tmp/api.txt)" "$N")"
say "$(printf '%-34s p50 %7s s   p99 %7s s   (%s of %s Running)' "$N pods as static manifests" "$s50" "$s99" "$(wc -l </tmp/static.txt)" "$N")"
say "ratio API/static: p50 $(ratio "$a50" "$s50"), p99 $(ratio "$a99" "$s99") (the API path adds the ReplicaSet controller, the scheduler and the watch)"
cp "$OUT" "$VM_OUT/../cluster-bench.txt" 2>/dev/null
cubelet_teardown
"$VM_REPO/tests/cluster/control-plane.sh" stop -d "$D" >/dev/null 2>&1
