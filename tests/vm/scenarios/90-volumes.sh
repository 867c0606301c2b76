#!/bin/bash
# Pod volumes as kubelet sets them up: a hostPath file is readable in the
# container and a write through a readOnly mount fails (a); fsGroup and
# subPath on an emptyDir, the downwardAPI labels file (b); a Memory emptyDir
# is a tmpfs of the pod's size (c); an emptyDir survives a container restart
# (d); a cubelet restart neither duplicates the tmpfs nor loses the volume
# (e); a pod gone while cubelet was down has its volumes removed, tmpfs
# unmounted (f); a hostPath type mismatch fails the pod with kubelet's text
# (g); an emptyDir over its sizeLimit gets the pod evicted with kubelet's
# message and its volumes removed (h).
# vm-guest: b
# vm-timeout: 600
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

PODS=/var/lib/cubelet/pods
podq() { status_json | jq -r --arg n "$1-$NODE" ".pods[] | select(.name==\$n) | $2"; }
in_ctr() { # in_ctr POD COMMAND
	ctr -n k8s.io tasks exec --exec-id "chk$RANDOM" "$(podq "$1" '.containers[0].id')" sh -c "$2" 2>&1
}
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds
	local s=$1
	shift
	for i in $(seq $((s * 2))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	return 1
}

mkdir -p /srv/vol-data
echo "hi from the host" >/srv/vol-data/hello.txt

cubelet_setup

cat >"$M/vols.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata:
  name: vols
  labels: {app: web, tier: front}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {fsGroup: 2000}
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    env: [{name: SUB, value: from-env}]
    resources: {limits: {cpu: 200m, memory: 64Mi}}
    volumeMounts:
    - {name: data, mountPath: /data, readOnly: true}
    - {name: cache, mountPath: /cache}
    - {name: cache, mountPath: /sub, subPath: part}
    - {name: cache, mountPath: /expr, subPathExpr: "$(SUB)"}
    - {name: mem, mountPath: /mem}
    - {name: info, mountPath: /info}
  volumes:
  - name: data
    hostPath: {path: /srv/vol-data, type: Directory}
  - name: cache
    emptyDir: {}
  - name: mem
    emptyDir: {medium: Memory}
  - name: info
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: mem_limit, resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}}
Y
t_ok "pod vols reaches Running" wait_phase "vols-$NODE" Running 150 || t_diag "vols: $(podq vols .reason): $(podq vols .message)"
uid=$(podq vols .uid)
ED=$PODS/$uid/volumes/kubernetes.io~empty-dir

# ---- a. hostPath, read-only ---------------------------------------------------------
t_is "$(in_ctr vols 'cat /data/hello.txt')" "hi from the host" "the hostPath file is readable in the container"
t_contains "$(in_ctr vols 'echo x > /data/new; echo rc=$?')" "Read-only file system" \
	"a write through the readOnly mount fails (Read-only file system)"
t_ok "and nothing was written on the host" test ! -e /srv/vol-data/new

# ---- b. emptyDir with fsGroup and subPath; downwardAPI ----------------------------------
t_ok "the emptyDir is $ED/cache on the host" test -d "$ED/cache"
t_is "$(stat -c '%g %a' "$ED/cache")" "2000 2777" "fsGroup: group 2000, setgid and rwx (kubelet's 0777 + setgid)"
in_ctr vols 'echo part > /sub/f; echo expr > /expr/g' >/dev/null
t_is "$(cat "$ED/cache/part/f" 2>&1)" part "subPath: /sub is <emptyDir>/part"
t_is "$(cat "$ED/cache/from-env/g" 2>&1)" expr "subPathExpr: \$(SUB) expanded from the container's env"
t_is "$(in_ctr vols 'cat /info/labels')" "$(printf 'app="web"\ntier="front"')" \
	"downwardAPI: /info/labels in kubelet's format (sorted k=\"v\" lines)"
t_is "$(in_ctr vols 'cat /info/mem_limit')" 64 "downwardAPI: limits.memory with divisor 1Mi is 64"
t_is "$(readlink "$PODS/$uid/volumes/kubernetes.io~downward-api/info/labels")" "..data/labels" \
	"downwardAPI files are links into ..data (AtomicWriter)"
t_contains "$(in_ctr vols 'grep " /info " /proc/mounts')" " ro," "the downwardAPI volume is mounted read-only"

# ---- c. Memory emptyDir: a tmpfs of the pod's memory limit -------------------------------
t_contains "$(in_ctr vols 'grep " /mem " /proc/mounts')" "tmpfs /mem tmpfs rw" "/mem is a tmpfs in the container"
t_contains "$(in_ctr vols 'grep " /mem " /proc/mounts')" "size=65536k" \
	"its size is the pod's memory limit (64Mi: no sizeLimit, kubelet's rule)"
t_is "$(grep -c " $ED/mem tmpfs" /proc/mounts)" 1 "one tmpfs mounted at $ED/mem on the host"

# ---- d. the emptyDir survives a container restart -----------------------------------------
in_ctr vols 'echo kept > /cache/marker' >/dev/null
id=$(podq vols '.containers[0].id')
ctr -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1
restarted() { [ "$(podq vols '.containers[0].restarts')" -ge 1 ] && [ "$(podq vols '.containers[0].state')" = Running ]; }
t_ok "the container is restarted" wait_for 90 restarted
t_is "$(in_ctr vols 'cat /cache/marker')" kept "the emptyDir's file is still there after the restart"

# ---- e. cubelet restart: nothing duplicated, nothing lost -----------------------------------
in_ctr vols 'echo tmp > /mem/m' >/dev/null
systemctl restart cubelet
wait_until 30 status_json
t_ok "after a cubelet restart the pod is Running" wait_phase "vols-$NODE" Running 60
sleep 3
t_is "$(grep -c " $ED/mem tmpfs" /proc/mounts)" 1 "the tmpfs is not mounted twice after the restart"
t_is "$(in_ctr vols 'cat /mem/m /cache/marker' | tr '\n' ' ')" "tmp kept " "and the volumes kept their files"

# ---- f. a pod gone while cubelet was down: its volumes are removed ------------------------
systemctl stop cubelet
rm -f "$M/vols.yaml"
systemctl start cubelet
t_ok "the pod's volumes directory is removed after the restart" wait_for 60 test ! -e "$PODS/$uid"
t_is "$(grep -c " $ED/mem tmpfs" /proc/mounts)" 0 "and its tmpfs is unmounted"
t_ok "the pod goes away" wait_gone "vols-$NODE" 60

# ---- g. hostPath type mismatch ------------------------------------------------------------------
cat >"$M/badtype.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: badtype}
spec:
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    hostPath: {path: /srv/vol-data/hello.txt, type: Directory}
Y
t_ok "a hostPath type mismatch fails the pod" wait_phase "badtype-$NODE" Failed 60
t_is "$(podq badtype .reason)" FailedMount "reason FailedMount"
t_contains "$(podq badtype .message)" \
	'MountVolume.SetUp failed for volume "data" : hostPath type check failed: /srv/vol-data/hello.txt is not a directory' \
	"kubelet's text, naming the volume and the path"
t_is "$(podq badtype '.containers[0].id // ""')" "" "no container was created"
rm -f "$M/badtype.yaml"

# ---- h. emptyDir over its sizeLimit: evicted ----------------------------------------------------
cat >"$M/fill.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: fill}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "sleep 2; dd if=/dev/zero of=/scratch/f bs=1024 count=2048; sleep 3600"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - name: scratch
    emptyDir: {sizeLimit: 1Mi}
Y
t_ok "the pod whose emptyDir passes its 1Mi sizeLimit is evicted" wait_phase "fill-$NODE" Failed 120
t_is "$(podq fill .reason)" Evicted "reason Evicted"
t_is "$(podq fill .message)" 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ' "kubelet's message"
fuid=$(podq fill .uid)
t_ok "its volumes are removed once it has stopped" wait_for 60 test ! -e "$PODS/$fuid"
rm -f "$M/fill.yaml"

cubelet_teardown
t_done
