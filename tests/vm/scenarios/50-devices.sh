#!/bin/bash
# GPUs through the device-plugin API: cubelet-gpu-plugin runs as a systemd
# unit with the fake NVML (two GPUs, char devices made with mknod, major 195)
# and registers with cubelet's device manager. A pod asking for one GPU sees
# exactly its /dev/nvidiaN and its NVIDIA_VISIBLE_DEVICES; a second pod gets
# the other GPU; a third is rejected OutOfnvidia.com/gpu; an XID on a free
# GPU lowers allocatable; kill -9 of cubelet: the pods keep their GPUs and a
# new GPU pod is still rejected; the plugin restarted: it re-registers and
# allocatable comes back; a deleted pod's GPU goes to the next pod.
# vm-guest: b
# vm-timeout: 900
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

# shellcheck disable=SC1091
. "$VM_LIB/gpu.sh"

cubelet_install
gpu_fake_install
systemctl daemon-reload
systemctl start cubelet
for i in $(seq 60); do status_json >/dev/null && break; sleep 0.5; done
t_ok "the device manager serves $DP/kubelet.sock" test -S "$DP/kubelet.sock"
systemctl start cubelet-gpu-plugin

wait_reason() { # wait_reason POD REASON
	for i in $(seq 60); do
		[ "$(podq "$1" .reason)" = "$2" ] && return 0
		sleep 0.5
	done
	echo "reason of $1: $(podq "$1" .reason), want $2"
	return 1
}
dev_of() { [ "$1" = "$G0" ] && echo /dev/nvidia0 || echo /dev/nvidia1; }

t_ok "the plugin registers: allocatable nvidia.com/gpu is 2" wait_alloc 2 60
t_is "$(jqs '.devicePlugins.resources[] | select(.name=="nvidia.com/gpu") | .endpoint')" cubelet-gpu.sock \
	"its endpoint is cubelet-gpu.sock"

# ---- one GPU each ------------------------------------------------------------------------
gpu_pod a
t_ok "pod a reaches Running" wait_phase "a-$NODE" Running 180
ga=$(gpu_of a)
t_ok "pod a holds one of the two GPUs ($ga)" test "$ga" = "$G0" -o "$ga" = "$G1"
t_is "$(in_ctr a 'ls /dev/nvidia* | tr "\n" " "')" "/dev/nvidia-uvm $(dev_of "$ga") /dev/nvidiactl " \
	"a's container sees exactly its GPU node, nvidiactl and nvidia-uvm"
t_is "$(in_ctr a 'echo $NVIDIA_VISIBLE_DEVICES')" "$ga" "a's NVIDIA_VISIBLE_DEVICES is its GPU"
gpu_pod b
t_ok "pod b reaches Running" wait_phase "b-$NODE" Running 180
gb=$(gpu_of b)
t_ok "pod b holds the other GPU ($gb)" test -n "$gb" -a "$gb" != "$ga" -a "$gb" != null
t_is "$(in_ctr b 'ls /dev/nvidia[0-9]*')" "$(dev_of "$gb")" "b's container sees only its own GPU node"
t_is "$(in_ctr b 'echo $NVIDIA_VISIBLE_DEVICES')" "$gb" "b's NVIDIA_VISIBLE_DEVICES is its GPU"
gpu_pod c
t_ok "pod c is rejected OutOfnvidia.com/gpu" wait_reason c OutOfnvidia.com/gpu
t_is "$(podq c .message)" \
	"Pod was rejected: Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: 2, capacity: 2" \
	"with kubelet's message"
rm -f "$M/c.yaml"
t_ok "the checkpoint names both pods' GPUs" \
	sh -c "jq -e '[.Data.PodDeviceEntries[].DeviceIDs[][]] | sort == ([\"$ga\",\"$gb\"] | sort)' $DP/kubelet_internal_checkpoint"

# ---- an XID on a free GPU ----------------------------------------------------------------
rm -f "$M/b.yaml"
t_ok "pod b goes" wait_gone "b-$NODE" 90
echo "xid $gb 43" >>"$FAKE"
sleep 3
t_is "$(alloc)" 2 "an application XID (43) changes nothing"
# lost: the fake NVML keeps failing it, so it stays unhealthy past the plugin's rechecks
printf 'xid %s 79\nlost %s\n' "$gb" "$gb" >>"$FAKE"
t_ok "XID 79 on b's freed GPU lowers allocatable to 1" wait_alloc 1 20
t_is "$(jqs '.devicePlugins.resources[] | select(.name=="nvidia.com/gpu") | .unhealthy[0]')" "$gb" \
	"status lists that GPU as unhealthy"
gpu_pod d
t_ok "pod d is rejected OutOfnvidia.com/gpu (one healthy GPU, held by a)" wait_reason d OutOfnvidia.com/gpu
rm -f "$M/d.yaml"

# ---- kill -9 of cubelet ------------------------------------------------------------------
aid=$(podq a '.containers[0].id')
pid=$(systemctl show -p MainPID --value cubelet)
kill -9 "$pid"
# and its device checkpoint is broken meanwhile: the running containers' labels rebuild it
echo '{"Data": {"PodDeviceEntries": [' >"$DP/kubelet_internal_checkpoint"
ok=0
for i in $(seq 120); do
	npid=$(systemctl show -p MainPID --value cubelet)
	if [ -n "$npid" ] && [ "$npid" != 0 ] && [ "$npid" != "$pid" ] && status_json >/dev/null; then ok=1; break; fi
	sleep 0.5
done
t_is "$ok" 1 "systemd restarted cubelet after kill -9"
t_ok "pod a is Running after the restart" wait_phase "a-$NODE" Running 60
t_is "$(podq a '.containers[0].id')" "$aid" "a's container was not restarted"
t_is "$(gpu_of a)" "$ga" "a keeps its GPU (the corrupt checkpoint rebuilt from its container's label)"
t_ok "status notes the corrupt checkpoint" \
	sh -c "$CUBELET status -o json | jq -e '.devicePlugins.checkpointNote | test(\"corrupt|parse|invalid|checksum\"; \"i\")'"
t_ok "the corrupt file was kept aside" test -f "$DP/kubelet_internal_checkpoint.corrupt"
t_ok "the plugin registers again with the new cubelet (allocatable 1)" wait_alloc 1 30
gpu_pod e
t_ok "a new GPU pod is still rejected" wait_reason e OutOfnvidia.com/gpu
rm -f "$M/e.yaml"
t_ok "the checkpoint is whole again and names a's GPU" \
	sh -c "jq -e '[.Data.PodDeviceEntries[].DeviceIDs[][]] == [\"$ga\"]' $DP/kubelet_internal_checkpoint"

# ---- the plugin restarted ----------------------------------------------------------------
printf 'gpu %s 0 00000000:3B:00.0 Fake GPU\ngpu %s 1 00000000:86:00.0 Fake GPU\n' "$G0" "$G1" >"$FAKE"
systemctl restart cubelet-gpu-plugin
t_ok "the restarted plugin re-registers: allocatable is 2 again" wait_alloc 2 30
gpu_pod f
t_ok "pod f reaches Running" wait_phase "f-$NODE" Running 180
t_is "$(gpu_of f)" "$gb" "f gets the GPU a does not hold"

# ---- a deleted pod's GPU goes to the next pod --------------------------------------------
rm -f "$M/a.yaml"
t_ok "pod a goes" wait_gone "a-$NODE" 90
gpu_pod g
t_ok "pod g reaches Running" wait_phase "g-$NODE" Running 180
t_is "$(gpu_of g)" "$ga" "g gets a's GPU"
t_is "$(in_ctr g 'echo $NVIDIA_VISIBLE_DEVICES')" "$ga" "and sees it"

# ---- two GPU pods removed at once (found on the real-hardware run: the pod
# table still held the first freed pod while the second one's hooks walked it)
pid=$(systemctl show -p MainPID --value cubelet)
rm -f "$M/f.yaml" "$M/g.yaml"
t_ok "pods f and g go together" sh -c "for i in \$(seq 180); do [ \"\$($STATUS_JSON | jq '[.pods[] | select(.name == \"f-$NODE\" or .name == \"g-$NODE\")] | length')\" = 0 ] && exit 0; sleep 0.5; done; exit 1"
t_is "$(systemctl show -p MainPID --value cubelet)" "$pid" "cubelet survived it (same PID)"
t_ok "both GPUs are free again" wait_alloc 2 30

# ---- kubelet's device-plugin metrics on the HTTP API ----------------------------------------
curl -sf http://127.0.0.1:10255/metrics >/tmp/metrics.txt
t_ok "/metrics: kubelet_device_plugin_registration_total counts the plugin's registrations" \
	grep -Eqx 'kubelet_device_plugin_registration_total[{]resource_name="nvidia.com/gpu"[}] [1-9][0-9]*' /tmp/metrics.txt
t_ok "/metrics: kubelet_device_plugin_alloc_duration_seconds observed the GPU pods' allocations" \
	grep -Eqx 'kubelet_device_plugin_alloc_duration_seconds_count[{]resource_name="nvidia.com/gpu"[}] [1-9][0-9]*' /tmp/metrics.txt
t_ok "promtool check metrics accepts them" sh -c 'promtool check metrics </tmp/metrics.txt'
log "$(grep kubelet_device_plugin /tmp/metrics.txt)"

log "$(status_json)"
log "$(cat $DP/kubelet_internal_checkpoint)"
journalctl -u cubelet -u cubelet-gpu-plugin --no-pager >>"$VM_OUT/scenario.log" 2>&1
cubelet_teardown
t_done
