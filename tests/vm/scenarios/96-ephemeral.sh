#!/bin/bash
# Container and pod ephemeral-storage limits (kubelet's localStorageEviction):
# a one-container pod writing 4 MiB to its root filesystem under a 2Mi limit
# is evicted with kubelet's pod message (the pod is checked first and its
# limit is the container's) (a); a container over its own 2Mi limit in a
# pod whose total stays under the sum (2Mi + 64Mi) gets the container's
# message (a2); a pod whose containers each stay under their limits but
# whose writable layers and disk emptyDir pass the sum of them is evicted
# with the pod's message (b); a pod under its limit keeps running (c);
# kubelet_evictions counts both signals (d).
# vm-timeout: 480
# vm-mem: 1024M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

podq() { status_json | jq -r --arg n "$1-$NODE" ".pods[] | select(.name==\$n) | $2"; }

cubelet_setup

cat >"$M/big.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "sleep 2; dd if=/dev/zero of=/big bs=1M count=4; sleep 3600"]
    resources: {limits: {ephemeral-storage: 2Mi}}
Y
cat >"$M/two.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "sleep 2; dd if=/dev/zero of=/big bs=1M count=4; sleep 3600"]
    resources: {limits: {ephemeral-storage: 2Mi}}
  - name: side
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: {limits: {ephemeral-storage: 64Mi}}
Y
cat >"$M/sum.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: sum}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: a
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "sleep 2; dd if=/dev/zero of=/f bs=1M count=2; sleep 3600"]
    resources: {limits: {ephemeral-storage: 3Mi}}
  - name: b
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "sleep 2; dd if=/dev/zero of=/f bs=1M count=2; dd if=/dev/zero of=/scratch/f bs=1M count=3; sleep 3600"]
    resources: {limits: {ephemeral-storage: 3Mi}}
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - name: scratch
    emptyDir: {}
Y
cat >"$M/small.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: small}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "dd if=/dev/zero of=/f bs=1M count=1; sleep 3600"]
    resources: {limits: {ephemeral-storage: 64Mi}}
Y

# ---- a. one container over its limit: the pod's limit is its own -------------------------
t_ok "the pod writing 4 MiB under a 2Mi limit is evicted" wait_phase "big-$NODE" Failed 90
t_is "$(podq big '.reason + "|" + .message')" \
	'Evicted|Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. ' \
	"reason Evicted, kubelet's pod message"

# ---- a2. a container over its own limit, the pod under the sum ----------------------------
t_ok "the pod whose container passes its own 2Mi limit is evicted" wait_phase "two-$NODE" Failed 90
t_is "$(podq two '.reason + "|" + .message')" \
	'Evicted|Container app exceeded its local ephemeral storage limit "2Mi". ' \
	"reason Evicted, kubelet's container message"

# ---- b. the pod over the sum of its containers' limits ------------------------------------
t_ok "the pod over the sum of its containers' limits (3Mi + 3Mi) is evicted" wait_phase "sum-$NODE" Failed 90
t_is "$(podq sum '.reason + "|" + .message')" \
	'Evicted|Pod ephemeral local storage usage exceeds the total limit of containers 6Mi. ' \
	"reason Evicted, kubelet's pod message"

# ---- c. a pod under its limit keeps running ------------------------------------------------
t_ok "the pod under its 64Mi limit is Running" wait_phase "small-$NODE" Running 30
t_is "$(podq small '.containers[0].restarts')" 0 "and was never restarted"
t_is "$(podq small '.reason // ""')" "" "nor evicted"

# ---- d. kubelet_evictions -------------------------------------------------------------------
curl -sf http://127.0.0.1:10255/metrics >/tmp/metrics.txt
t_ok "kubelet_evictions counts ephemeralcontainerfs.limit" \
	grep -Eqx 'kubelet_evictions[{]eviction_signal="ephemeralcontainerfs.limit"[}] 1' /tmp/metrics.txt
t_ok "kubelet_evictions counts ephemeralpodfs.limit" \
	grep -Eqx 'kubelet_evictions[{]eviction_signal="ephemeralpodfs.limit"[}] 2' /tmp/metrics.txt

rm -f "$M/big.yaml" "$M/two.yaml" "$M/sum.yaml" "$M/small.yaml"
cubelet_teardown
t_done
