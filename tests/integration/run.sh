#!/bin/sh
# Integration suites against real peers on this host: a private containerd
# (packaging/containerd/private-containerd.sh) with the local images
# imported. Prints the suites' TAP. Usage: tests/integration/run.sh BUILD_DIR IMAGES_DIR
set -u
B=${1:?usage: run.sh BUILD_DIR IMAGES_DIR}
IMAGES=${2:?usage: run.sh BUILD_DIR IMAGES_DIR}
dir=/tmp/cubelet-it-$$
if ! command -v containerd >/dev/null || [ "$(id -u)" -ne 0 ]; then
        echo "1..0 # SKIP needs root and containerd (make deps installs it)"
        exit 77
fi
sock=$(packaging/containerd/private-containerd.sh start "$dir" 2>"$dir.log") || {
        echo "not ok 1 - private containerd starts"
        sed 's/^/# /' "$dir.log"
        exit 1
}
# test-cri's sandboxes are below /cubelet-it/poduid-test-1 (cgroup_parent): the runtime removes
# each container's group, not these parents, once they are empty
rm_groups() {
        for g in /sys/fs/cgroup/*/cubelet-it /sys/fs/cgroup/cubelet-it; do
                [ -d "$g" ] && rmdir "$g"/poduid-test-1 "$g" 2>/dev/null
        done
        return 0
}
trap 'packaging/containerd/private-containerd.sh stop "$dir" >/dev/null 2>&1; rm -f "$dir.log"; rm_groups' EXIT
for img in pause busybox; do
        ctr -a "$sock" -n k8s.io images import "$IMAGES/$img.tar" >/dev/null 2>>"$dir.log" || {
                echo "not ok 1 - import $img image"
                exit 1
        }
done
CUBELET_TEST_CRI="unix://$sock" "$B/tests/integration/cri/test-cri"
