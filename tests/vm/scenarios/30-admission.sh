#!/bin/bash
# Admission and the static CPU manager on the VM's 4 CPUs (2 cores x 2
# threads, siblings 0,1 and 2,3): two Guaranteed pods with cpu 1 get
# disjoint exclusive CPUs; a Burstable pod runs on the shared pool, which
# shrinks when an exclusive pod starts and grows back when it leaves; on a
# full node a high-priority pod preempts a low-priority one (Preempted); a
# pod asking for a host port a host process listens on is rejected
# (NodePorts).
# vm-guest: b
# vm-timeout: 1200
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

cubelet_setup
# the static policy needs reserved CPUs: 100m + 100m rounds up to one CPU
cat >/etc/cubelet/config.yaml <<'Y'
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/kubernetes/manifests
cpuManagerPolicy: static
kubeReserved: {cpu: 100m, memory: 128Mi}
systemReserved: {cpu: 100m, memory: 128Mi}
cubelet: {stateDir: /var/lib/cubelet, socket: /run/cubelet/cubelet.sock}
Y
cubelet_config_driver "$CUBELET_DRIVER" # the lib's driver, not the host's default
systemctl restart cubelet
for i in $(seq 60); do status_json >/dev/null && break; sleep 0.5; done

jqs() { status_json | jq -r "$@"; }
podq() { status_json | jq -r --arg n "$1-$NODE" ".pods[] | select(.name==\$n) | $2"; }
# the cpuset the kernel gives a pod's container
effective() { # effective POD CONTAINER
	local path id
	path=$(podq "$1" .cgroup)
	id=$(podq "$1" ".containers[] | select(.name==\"$2\") | .id")
	cat "/sys/fs/cgroup/$(cg_ctr "$path" "$id")/cpuset.cpus.effective" 2>&1
}
wait_effective() { # wait_effective POD CONTAINER WANT [SECONDS]
	for i in $(seq $((${4:-60} * 2))); do
		[ "$(effective "$1" "$2")" = "$3" ] && return 0
		sleep 0.5
	done
	echo "effective cpuset of $1/$2: $(effective "$1" "$2"), want $3"
	return 1
}
pod() { # pod NAME QOS-RESOURCES [PRIORITY] [EXTRA]
	cat >"$M/$1.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  priority: ${3:-0}
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: $2
${4:-}
Y
}

t_is "$(jqs .cpuManager.policy)" static "the CPU manager runs the static policy"
t_is "$(jqs .cpuManager.reserved)" 0 "reserved CPUs: one CPU (200m rounded up), the first of core 0"
t_is "$(jqs .cpuManager.sharedPool)" 0-3 "the shared pool starts with every CPU"

# ---- a Burstable pod on the shared pool, with a sidecar -----------------------------------
# (a restartable init container: kubelet's reconcileState moves it with the
# pool like any running container; cubelet once left it on the old pool)
pod shared '{requests: {cpu: 100m, memory: 16Mi}}' 0 '  initContainers:
  - name: side
    image: localhost/cubelet/busybox:1
    restartPolicy: Always
    command: [sleep, "3600"]
    resources: {requests: {cpu: 50m, memory: 8Mi}}'
t_ok "pod shared reaches Running" wait_phase "shared-$NODE" Running 180
t_ok "shared's container runs on the whole pool 0-3" wait_effective shared app 0-3
t_ok "shared's sidecar runs on the whole pool 0-3" wait_effective shared side 0-3

# ---- two exclusive pods ------------------------------------------------------------------
pod excl-a '{limits: {cpu: "1", memory: 32Mi}}'
t_ok "pod excl-a reaches Running" wait_phase "excl-a-$NODE" Running 180
pod excl-b '{limits: {cpu: "1", memory: 32Mi}}'
t_ok "pod excl-b reaches Running" wait_phase "excl-b-$NODE" Running 180
a=$(podq excl-a '.containers[0].cpuset')
b=$(podq excl-b '.containers[0].cpuset')
t_is "$a" 1 "excl-a holds CPU 1 (packed beside the reserved CPU 0 on core 0)"
t_is "$b" 2 "excl-b holds CPU 2"
t_is "$(effective excl-a app)" 1 "excl-a's cpuset.cpus.effective is 1"
t_is "$(effective excl-b app)" 2 "excl-b's cpuset.cpus.effective is 2"
t_ok "the exclusive sets are disjoint" test "$(effective excl-a app)" != "$(effective excl-b app)"
t_is "$(jqs .cpuManager.sharedPool)" 0,3 "the shared pool shrank to 0,3"
t_ok "shared's running container was moved to 0,3 (UpdateContainerResources)" wait_effective shared app 0,3 60
t_ok "...and its sidecar too" wait_effective shared side 0,3 60
t_is "$(jq -r '.defaultCpuSet' /var/lib/cubelet/cpu_manager_state)" 0,3 "cpu_manager_state: defaultCpuSet 0,3"
t_is "$(jq -r --arg u "$(podq excl-a .uid)" '.entries[$u].app' /var/lib/cubelet/cpu_manager_state)" 1 \
	"cpu_manager_state: excl-a's entry is 1"

# seconds from the shared pool's change (cubelet status) until a
# container's cpuset.cpus.effective follows it; polled every 0.2 s
follow_time() { # follow_time POOL POD CONTAINER
	local t0="" i
	for i in $(seq 900); do
		[ -z "$t0" ] && [ "$(jqs .cpuManager.sharedPool)" = "$1" ] && t0=$(date +%s.%N)
		if [ -n "$t0" ] && [ "$(effective "$2" "$3")" = "$1" ]; then
			awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
			return 0
		fi
		sleep 0.2
	done
	echo never
}
rm -f "$M/excl-a.yaml"
side_s=$(follow_time 0-1,3 shared side)
t_ok "excl-a goes away" wait_gone "excl-a-$NODE" 120
t_ok "shared's container grows back to 0-1,3" wait_effective shared app 0-1,3 60
t_ok "...and its sidecar too" wait_effective shared side 0-1,3 60
t_ok "...within one cpuManagerReconcilePeriod (10 s) of the pool's change: ${side_s} s" \
	awk -v s="$side_s" 'BEGIN { exit !(s != "never" && s + 0 <= 10) }'
t_is "$(jqs .cpuManager.sharedPool)" 0-1,3 "the shared pool is 0-1,3 again"
t_is "$(effective excl-b app)" 2 "excl-b keeps CPU 2"
rm -f "$M/excl-b.yaml" "$M/shared.yaml"
t_ok "excl-b and shared go away" sh -c "for i in \$(seq 240); do [ \"\$($STATUS_JSON | jq '.pods | length')\" = 0 ] && exit 0; sleep 0.5; done; exit 1"
t_is "$(jqs .cpuManager.sharedPool)" 0-3 "the shared pool is whole again"

# (admission decisions: the same under both drivers)
if once_per_matrix "preemption, host ports"; then
# ---- preemption on a full node: allocatable cpu is 4000m - 200m = 3800m -------------------
	pod low '{requests: {cpu: 3, memory: 16Mi}}' 10
	t_ok "pod low (priority 10, cpu 3) reaches Running" wait_phase "low-$NODE" Running 180
	pod high '{requests: {cpu: 1500m, memory: 16Mi}}' 1000
	t_ok "pod high (priority 1000, cpu 1500m) reaches Running" wait_phase "high-$NODE" Running 240
	t_is "$(podq low .phase)" Failed "the victim low is Failed"
	t_is "$(podq low .reason)" Preempted "with reason Preempted"
	t_is "$(podq low .message)" "Preempted in order to admit pod default/high-$NODE" "and the preemptor named"
	t_ok "low: cubelet describe and status have the event Preempting with that message" \
		describe_event low Preempting "Preempted in order to admit pod default/high-$NODE"
	t_ok "low: ... and Killing \"Stopping container\"" describe_event low Killing "Stopping container "
	t_is "$("$CUBELET" describe "low-$NODE" | grep -E '^(Status|Reason):' | tr -s ' ' | tr '\n' ' ')" \
		"Status: Failed Reason: Preempted " "low: cubelet describe's Status and Reason"
	lowuid=$(podq low .uid)
	t_ok "low's sandbox and containers are removed" sh -c "for i in \$(seq 120); do [ \"\$(ctr -n k8s.io containers ls -q 'labels.\"cubelet.io/pod-uid\"==$lowuid' | wc -l)\" = 0 ] && exit 0; sleep 0.5; done; exit 1"
	pod peer '{requests: {cpu: 2500m, memory: 16Mi}}' 1000
	t_ok "pod peer (priority 1000, cpu 2500m) does not fit and cannot preempt its equal" \
		sh -c "for i in \$(seq 60); do [ \"\$($STATUS_JSON | jq -r '.pods[] | select(.name==\"peer-$NODE\") | .reason')\" = OutOfcpu ] && exit 0; sleep 0.5; done; exit 1"
	t_is "$(podq peer .message)" "Pod was rejected: Node didn't have enough resource: cpu, requested: 2500, used: 1500, capacity: 3800" \
		"peer's message is kubelet's"
	t_is "$(podq high .phase)" Running "high keeps running"
	rm -f "$M/low.yaml" "$M/high.yaml" "$M/peer.yaml"

# ---- host ports -------------------------------------------------------------------------------
	busybox nc -l -p 18080 >/dev/null 2>&1 &
	listener=$!
	wait_until 10 sh -c "ss -Hltn 'sport = :18080' | grep -q ."
	cat >"$M/porty.yaml" <<-'Y'
	apiVersion: v1
	kind: Pod
	metadata: {name: porty}
	spec:
	  hostNetwork: true
	  containers:
	  - name: web
	    image: localhost/cubelet/busybox:1
	    command: [sleep, "3600"]
	    ports: [{containerPort: 18080, hostPort: 18080}]
	Y
	t_ok "porty is rejected" sh -c "for i in \$(seq 60); do [ \"\$($STATUS_JSON | jq -r '.pods[] | select(.name==\"porty-$NODE\") | .phase')\" = Failed ] && exit 0; sleep 0.5; done; exit 1"
	t_is "$(podq porty .reason)" NodePorts "with reason NodePorts"
	t_is "$(podq porty .message)" "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" \
		"and kubelet's message"
	t_is "$(sandboxes_of "$(podq porty .uid)")" 0 "no sandbox was made for it"
	kill "$listener" 2>/dev/null
fi
t_diag "$($CUBELET status 2>&1)"
cubelet_teardown
t_done
