# shellcheck shell=bash
# The fake-GPU node of the device scenarios (50-devices, 51-gpu-systemd):
# cubelet-gpu-plugin as a systemd unit on the fake NVML, two GPUs as char
# devices (major 195) made with mknod, and the helpers over cubelet status.
# Sourced after cubelet.sh.

DP=/var/lib/kubelet/device-plugins
FAKE=/etc/fake-nvml.conf
G0=GPU-0a1b2c3d-0000-4000-8000-000000000000
G1=GPU-0a1b2c3d-1111-4111-8111-111111111111

# gpu_fake_install [PLUGIN ARGS...]: the plugin, the fake NVML, the unit's
# drop-in with the args, the device nodes (no /dev/char links: the plugin's
# to make) and the fake NVML's two GPUs; nothing started
gpu_fake_install() {
	install -D -m 0755 "$VM_REPO/build/cubelet-gpu-plugin" /usr/local/bin/cubelet-gpu-plugin
	install -D -m 0755 "$VM_REPO/build/tests/fakes/libnvidia-ml.so.1" /usr/local/lib/fake-nvml/libnvidia-ml.so.1
	install -D -m 0644 "$VM_REPO/packaging/systemd/cubelet-gpu-plugin.service" \
		/etc/systemd/system/cubelet-gpu-plugin.service
	mkdir -p /etc/systemd/system/cubelet-gpu-plugin.service.d
	cat >/etc/systemd/system/cubelet-gpu-plugin.service.d/fake.conf <<U
[Service]
Environment=FAKE_NVML_CONFIG=$FAKE
ExecStart=
ExecStart=/usr/local/bin/cubelet-gpu-plugin --nvml-library /usr/local/lib/fake-nvml/libnvidia-ml.so.1 $*
U
	# the guest's fake GPUs: device nodes as the NVIDIA driver makes them
	for n in 0 1; do rm -f /dev/nvidia$n; mknod -m 0666 /dev/nvidia$n c 195 $n; done
	rm -f /dev/nvidiactl /dev/nvidia-uvm /dev/char/195:* /dev/char/235:0
	mknod -m 0666 /dev/nvidiactl c 195 255
	mknod -m 0666 /dev/nvidia-uvm c 235 0
	printf 'gpu %s 0 00000000:3B:00.0 Fake GPU\ngpu %s 1 00000000:86:00.0 Fake GPU\n' "$G0" "$G1" >"$FAKE"
}

jqs() { status_json | jq -r "$@"; }
podq() { status_json | jq -r --arg n "$1-$NODE" ".pods[] | select(.name==\$n) | $2"; }
alloc() { jqs '.devicePlugins.resources[] | select(.name=="nvidia.com/gpu") | .allocatable'; }
wait_alloc() { # wait_alloc N [SECONDS]
	for i in $(seq $((${2:-30} * 2))); do
		[ "$(alloc)" = "$1" ] && return 0
		sleep 0.5
	done
	echo "allocatable nvidia.com/gpu: $(alloc), want $1"
	return 1
}
gpu_pod() { # gpu_pod NAME: a pod of one container asking for one GPU
	cat >"$M/$1.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: cuda
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: {limits: {nvidia.com/gpu: 1, memory: 32Mi}}
Y
}
in_ctr() { # in_ctr POD COMMAND: runs COMMAND in the pod's container
	ctr -n k8s.io tasks exec --exec-id "chk$RANDOM" "$(podq "$1" '.containers[0].id')" sh -c "$2" 2>&1
}
gpu_of() { podq "$1" '.containers[0].devices["nvidia.com/gpu"][0]'; }
