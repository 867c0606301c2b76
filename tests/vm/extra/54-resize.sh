#!/bin/bash
# In-place resize (KEP-1287, issue 23 part 2) of a static pod on a real
# cgroup v2 kernel and containerd: an edit of the manifest that changes only
# cpu/memory keeps the pod (its UID, its sandbox, its containers and restart
# counts) and changes the pod's and the containers' cgroups; a container
# whose resizePolicy says RestartContainer for what changed restarts, alone;
# a resize beyond the node is Infeasible, one the other pods leave no room
# for is Deferred until they go (a restart meanwhile keeps the allocation:
# the checkpoint); a memory limit below what a container uses
# waits (PodResizeInProgress, reason Error) and never OOM-kills it; under the
# static CPU manager a Guaranteed container's exclusive CPUs grow and shrink
# in place. Prints the edit → cpu.max latency beside a raw
# write of cpu.max.
# vm-timeout: 900
# vm-mem: 1024M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

cubelet_install
API=http://127.0.0.1:10255
P="r-$NODE"

# r: app (cpu NotRequired, memory NotRequired by default) and rc (memory:
# RestartContainer); both sleep
manifest() { # manifest APP_CPU_REQ APP_CPU_LIM APP_MEM_LIM RC_MEM_LIM [APP_MEM_REQ]
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
    resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]
    resources: {requests: {cpu: $1, memory: ${5:-16Mi}}, limits: {cpu: $2, memory: $3}}
  - name: rc
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resizePolicy: [{resourceName: memory, restartPolicy: RestartContainer}]
    resources: {requests: {cpu: 50m, memory: 16Mi}, limits: {cpu: 100m, memory: $4}}
Y
}
pj() { status_json | jq -c --arg n "$P" ".pods[] | select(.name == \$n) | $1"; }
ctr_id() { pj ".containers[] | select(.name == \"$1\") | .id" | tr -d '"'; }
restarts_of() { pj ".containers[] | select(.name == \"$1\") | .restarts"; }
cgdir() { echo "/sys/fs/cgroup/$(cg_ctr "$(pj .cgroup | tr -d '"')" "$(ctr_id "$1")")"; }
pods_cond() { # pods_cond TYPE: "reason|message" of the pod's condition TYPE in /pods
	curl -s -m 5 "$API/pods" | jq -r --arg n "$P" --arg t "$1" \
		'.items[] | select(.metadata.name == $n) | .status.conditions[] | select(.type == $t) | "\(.reason // "")|\(.message // "")"'
}

manifest 100m 200m 64Mi 64Mi
systemctl start cubelet
t_ok "pod r reaches Running" wait_phase "$P" Running 180
uid=$(pj .uid)
app=$(ctr_id app)
rc=$(ctr_id rc)
pod_cg=/sys/fs/cgroup/$(pj .cgroup | tr -d '"')
app_cg=$(cgdir app)
t_is "$(cat "$app_cg/cpu.max")" "20000 100000" "app's cpu.max is its 200m limit"

# 1. cpu of app (NotRequired) and memory of rc (RestartContainer)
t0=${EPOCHREALTIME/./}
manifest 100m 400m 64Mi 96Mi
wait_until 60 sh -c "read -r v <$app_cg/cpu.max; [ \"\$v\" = '40000 100000' ]"
t1=${EPOCHREALTIME/./}
t_ok "app's cpu.max becomes 40000 100000 in place ($(((t1 - t0) / 1000)) ms after the edit)" waited
t_is "$(pj .uid)" "$uid" "the pod keeps its UID"
t_is "$(ctr_id app)" "$app" "app keeps its container"
t_is "$(restarts_of app)" 0 "app did not restart"
t_is "$(cat "$pod_cg/cpu.max")" "50000 100000" "the pod cgroup's cpu.max is the new sum of limits (400m + 100m)"
t_ok "rc restarts for its memory resize (RestartContainer)" wait_until 60 sh -c \
	"[ \"\$($STATUS_JSON | jq --arg n $P '.pods[] | select(.name == \$n) | .containers[] | select(.name == \"rc\") | .restarts')\" = 1 ]"
wait_until 30 sh -c "[ \"\$($STATUS_JSON | jq -r --arg n $P '.pods[] | select(.name == \$n) | .containers[] | select(.name == \"rc\") | .state')\" = running ]"
t_is "$(cat "$(cgdir rc)/memory.max")" $((96 * MiB)) "the new rc container has the 96Mi limit"
t_ok "the resize is over (not in progress, nothing pending)" wait_until 30 sh -c \
	"[ \"\$($STATUS_JSON | jq -c --arg n $P '.pods[] | select(.name == \$n) | .resize | [.pending, .inProgress]')\" = '[\"\",false]' ]"
t_ok "ResizeCompleted names the new resources" describe_event r ResizeCompleted '"name":"app","resources":{"limits":{"cpu":"400m","memory":"64Mi"}'
t_is "$(curl -s -m 5 "$API/pods" | jq -c --arg n "$P" '.items[] | select(.metadata.name == $n) | .status.containerStatuses[] | select(.name == "app") | [.allocatedResources, .resources.limits]')" \
	'[{"cpu":"100m","memory":"16Mi"},{"cpu":"400m","memory":"64Mi"}]' "/pods: app's allocatedResources and resources"

# 2. beyond the node: Infeasible, nothing changes
manifest 1000 1000 64Mi 96Mi
t_ok "a 1000-cpu request is Infeasible" wait_until 30 sh -c \
	"[ \"\$($STATUS_JSON | jq -r --arg n $P '.pods[] | select(.name == \$n) | .resize.pending')\" = Infeasible ]"
msg=$(pj .resize.message | tr -d '"')
t_contains "$msg" "Node didn't have enough capacity: cpu, requested: 1000050, capacity: " "with kubelet's message"
cap=${msg##*capacity: }
t_ok "/pods has PodResizePending (Infeasible)" wait_until 10 sh -c "curl -s -m 5 $API/pods | grep -q PodResizePending"
t_is "$(cat "$(cgdir app)/cpu.max")" "40000 100000" "app's cpu.max is unchanged"

# 3. room taken by another pod: Deferred, then admitted once it goes
big=$((cap - 100 - 50 - 200))
cat >"$M/big.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: localhost/cubelet/busybox:1, command: [sleep, "3600"], resources: {requests: {cpu: ${big}m}}}
Y
t_ok "pod big (${big}m of ${cap}m) reaches Running" wait_phase "big-$NODE" Running 120
manifest 500m 500m 64Mi 96Mi
t_ok "app's 500m request is Deferred while big runs" wait_until 30 sh -c \
	"[ \"\$($STATUS_JSON | jq -r --arg n $P '.pods[] | select(.name == \$n) | .resize.pending')\" = Deferred ]"
t_contains "$(pods_cond PodResizePending)" "Deferred|" "/pods: PodResizePending, reason Deferred"
log "deferred: $(pj .resize.message)"
# a restart while it waits: the pod keeps its allocation (the checkpoint),
# the manifest's resize waits again once the rescan reads the file
systemctl restart cubelet
t_ok "after a restart: Deferred again (the allocation from <stateDir>/pod_resources)" wait_until 90 sh -c \
	"[ \"\$($STATUS_JSON | jq -r --arg n $P '.pods[] | select(.name == \$n) | .resize.pending')\" = Deferred ]"
t_is "$(cat "$app_cg/cpu.max")" "40000 100000" "app's cpu.max is still the allocated 400m"
t_is "$(ctr_id app)" "$app" "app kept its container through the restart"
rm -f "$M/big.yaml"
t_ok "pod big goes" wait_gone "big-$NODE" 90
t_ok "then the deferred resize is allocated and app's cpu.max is 50000 100000" wait_until 60 sh -c \
	"[ \"\$(cat $(cgdir app)/cpu.max)\" = '50000 100000' ]"
t_is "$(ctr_id app)" "$app" "app still has its container"

# 4. a memory limit below what app uses: waits, no OOM kill
# awk holds a 40 MB string until it is killed
ctr -n k8s.io tasks exec --exec-id hog "$app" awk 'BEGIN { s = sprintf("%40000000s", "x"); while (1) system("sleep 60") }' &
hog=$!
wait_until 30 sh -c "[ \$(cat $(cgdir app)/memory.current) -gt $((36 * MiB)) ]"
manifest 500m 500m 24Mi 96Mi 16Mi
t_ok "a 24Mi limit below app's usage is in progress with kubelet's error" wait_until 30 sh -c \
	"$STATUS_JSON | jq -r --arg n $P '.pods[] | select(.name == \$n) | .resize.error' | grep -q 'cannot decrease memory limits: attempting to set container \"app\" memory limit (25165824) below current usage'"
t_contains "$(pods_cond PodResizeInProgress)" "Error|cannot decrease memory limits" "/pods: PodResizeInProgress, reason Error"
t_is "$(cat "$(cgdir app)/memory.max")" $((64 * MiB)) "app's memory.max stays 64Mi"
t_is "$(awk '$1 == "oom_kill" { print $2 }' "$(cgdir app)/memory.events")" 0 "and nothing is OOM-killed"
ctr -n k8s.io tasks exec --exec-id unhog "$app" killall awk >/dev/null 2>&1
wait "$hog" 2>/dev/null
t_ok "once the usage is gone the limit is set (retried with back-off)" wait_until 120 sh -c \
	"[ \"\$(cat $(cgdir app)/memory.max 2>/dev/null)\" = $((24 * MiB)) ]"
t_is "$(ctr_id app)" "$app" "app kept its container through it"
t_is "$(restarts_of app)" 0 "and never restarted"

# 5. edit → cpu.max, against a raw write of cpu.max (make bench's tests/vm/bench/resize.sh does 20)
lat=()
d=$(cgdir app)
for i in $(seq 5); do
	lim=$((300 + (i % 2) * 100))
	want="$((lim * 100)) 100000"
	t0=${EPOCHREALTIME/./}
	manifest 100m "${lim}m" 24Mi 96Mi
	while read -r v <"$d/cpu.max" && [ "$v" != "$want" ]; do
		[ $((${EPOCHREALTIME/./} - t0)) -gt 30000000 ] && break
		sleep 0.01
	done
	lat+=($(((${EPOCHREALTIME/./} - t0) / 1000)))
done
raw=()
for i in $(seq 5); do
	t0=${EPOCHREALTIME/./}
	echo "$(((300 + (i % 2) * 100) * 100)) 100000" >"$d/cpu.max"
	raw+=($(((${EPOCHREALTIME/./} - t0))))
done
sorted=$(printf '%s\n' "${lat[@]}" | sort -n | tr '\n' ' ')
rawsorted=$(printf '%s\n' "${raw[@]}" | sort -n | tr '\n' ' ')
p50=$(echo "$sorted" | awk '{ print $3 }')
p99=$(echo "$sorted" | awk '{ print $5 }')
t_diag "resize bench: edit -> cpu.max ms p50 $p50 p99 $p99 (all: $sorted); raw cpu.max write us: $rawsorted"
log "resize bench: edit -> cpu.max ms p50 $p50 p99 $p99; raw write us: $rawsorted"
t_ok "each of 5 edits reached cpu.max within 30 s" sh -c "[ $p99 -lt 30000 ]"

rm -f "$M/r.yaml"
t_ok "pod r goes" wait_gone "$P" 90

# 6. the static CPU manager: a Guaranteed container's whole CPUs grow and
# shrink in place, the CPUs it held kept (kubelet 1.34: Infeasible unless
# its alpha InPlacePodVerticalScalingExclusiveCPUs)
systemctl stop cubelet
rm -f /var/lib/cubelet/cpu_manager_state
sed -i '/^cgroupDriver:/a cpuManagerPolicy: static' /etc/cubelet/config.yaml
gman() { # gman CPUS
	manifest_put g.yaml <<Y
apiVersion: v1
kind: Pod
metadata: {name: g}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: {requests: {cpu: "$1", memory: 32Mi}, limits: {cpu: "$1", memory: 32Mi}}
Y
}
gman 1
systemctl start cubelet
P=g-$NODE
t_ok "pod g (Guaranteed, 1 CPU) reaches Running under the static policy" wait_phase "$P" Running 180
g_app=$(ctr_id app)
g_cg=$(cgdir app)
one=$(cat "$g_cg/cpuset.cpus")
t_ok "app holds one exclusive CPU ($one)" sh -c "echo '$one' | grep -Eq '^[0-9]+\$'"
gman 2
ncpus() { tr ',' '\n' <"$g_cg/cpuset.cpus" | awk -F- '{ n += (NF == 2 ? $2 - $1 + 1 : 1) } END { print n + 0 }'; }
has_one() { tr ',' '\n' <"$g_cg/cpuset.cpus" | awk -F- -v c="$one" '{ lo = $1; hi = (NF == 2 ? $2 : $1); if (c >= lo && c <= hi) f = 1 } END { exit !f }'; }
two_with_one() { [ "$(ncpus)" = 2 ] && has_one; }
t_ok "resized to 2 CPUs: its cpuset is 2 CPUs with $one among them" wait_until 60 two_with_one
log "g: $one -> $(cat "$g_cg/cpuset.cpus"); cpu_manager_state $(cat /var/lib/cubelet/cpu_manager_state)"
t_is "$(ctr_id app)" "$g_app" "app keeps its container"
gman 1
one_cpu() { [ "$(ncpus)" = 1 ]; }
t_ok "resized back to 1 CPU: its cpuset is one CPU again" wait_until 60 one_cpu
rm -f "$M/g.yaml"
t_ok "pod g goes" wait_gone "$P" 90
cubelet_teardown
t_done
