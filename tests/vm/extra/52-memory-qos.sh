#!/bin/bash
# Memory QoS (KEP-2570, issue 23 part 3) on a real cgroup v2 kernel, with
# featureGates.MemoryQoS: the values `cubelet plan` computes are the ones the
# kernel holds (memory.min of the pod, the burstable group and kubepods;
# memory.min and memory.high of the container, page-rounded), and a container
# that grows past its memory.high is throttled (memory.events "high" counts)
# and not OOM-killed.
# vm-timeout: 480
# vm-mem: 1024M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

cubelet_install
printf 'featureGates:\n  MemoryQoS: true\nmemoryThrottlingFactor: 0.9\n' >>/etc/cubelet/config.yaml
# b: Burstable, 16Mi of 64Mi: memory.high = floor((16 + 48 * 0.9) Mi / 4096) * 4096
cat >"$M/b.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: b, uid: memqos-b}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: hog
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: {requests: {memory: 16Mi}, limits: {memory: 64Mi}}
Y
systemctl start cubelet
t_ok "pod b reaches Running" wait_phase "b-$NODE" Running 180

pod=$(status_json | jq -r --arg n "b-$NODE" '.pods[] | select(.name==$n) | .cgroup')
cid=$(status_json | jq -r --arg n "b-$NODE" '.pods[] | select(.name==$n) | .containers[0].id')
pdir=/sys/fs/cgroup/$pod
cdir=/sys/fs/cgroup/$(cg_ctr "$pod" "$cid")
want_high=$(awk 'BEGIN { printf "%d", int((16 + 48 * 0.9) * 1048576 / 4096) * 4096 }')
log "pod $pdir container $cdir"
t_is "$(cat "$cdir/memory.min")" $((16 * 1048576)) "the container's memory.min is its request"
t_is "$(cat "$cdir/memory.high")" "$want_high" "its memory.high is request + 0.9 x (limit - request), page-rounded"
t_is "$(cat "$pdir/memory.min")" $((16 * 1048576)) "the pod cgroup's memory.min is the pod's request"
t_is "$(cat "/sys/fs/cgroup/$(cg_qos burstable)/memory.min")" $((16 * 1048576)) \
	"the burstable group's memory.min is the Burstable pods' requests"
t_is "$(cat "/sys/fs/cgroup/$(cg_kubepods)/memory.min")" $((16 * 1048576)) \
	"kubepods' memory.min is the Guaranteed and Burstable pods' requests"
plan=$($CUBELET plan --config /etc/cubelet/config.yaml "$M/b.yaml" 2>/dev/null)
t_is "$(echo "$plan" | jq -r '.. | objects | select(has("memory_high")) | .memory_high' | head -n 1)" "$want_high" \
	"cubelet plan gives the same memory.high"

# past memory.high, below memory.max: throttled, not killed
ctr -n k8s.io tasks exec --exec-id hog "$cid" sh -c 'head -c 62m /dev/zero | tail >/dev/null' &
hog=$!
t_ok "growing to 62Mi past memory.high (~59Mi) counts memory.events high" sh -c \
	"for i in \$(seq 60); do [ \"\$(awk '\$1 == \"high\" { print \$2 }' $cdir/memory.events)\" -gt 0 ] && exit 0; sleep 0.5; done; exit 1"
sleep 3
t_is "$(awk '$1 == "oom_kill" { print $2 }' "$cdir/memory.events")" 0 "and no OOM kill"
log "memory.events: $(tr '\n' ' ' <"$cdir/memory.events"); memory.current $(cat "$cdir/memory.current")"
kill "$hog" 2>/dev/null
wait "$hog" 2>/dev/null

rm -f "$M/b.yaml"
t_ok "pod b goes" wait_gone "b-$NODE" 90
cubelet_teardown
t_done
