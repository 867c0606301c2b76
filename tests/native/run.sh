#!/bin/bash
# The native lane (tests/vm/README.md, "Two lanes"): cubelet and a private
# containerd on this host at native speed, with kubelet's cgroupsPerQOS:
# false and enforceNodeAllocatable: [] (no cgroup of cubelet's: the host's
# cgroups may be v1), for what a pod does rather than what the kernel's
# cgroup v2 tree holds: the mode itself (its refusals, cubelet status, the
# runtime's groups below the run's own cgroupRoot, the containers' limits
# through CRI), env (downward API, resources, $(VAR)), an exec readiness
# probe, restarts with back-off, the logs and `cubelet logs`, a manifest
# removed. Host-network pods (no CNI: nothing of the host's network is
# touched). TAP; 77 without root, containerd or the images.
#
# The run owns what it starts: its containerd (root, state, socket under
# its directory), cubelet (killed by PID), its cgroups (below
# /cubelet-native-PID in every hierarchy), its files; a run that died
# leaves nothing that breaks the next: its groups are emptied and removed
# at the next run's start.
#
#   tests/native/run.sh BUILD_DIR IMAGES_DIR
set -u
B=${1:?usage: run.sh BUILD_DIR IMAGES_DIR}
IMAGES=${2:?usage: run.sh BUILD_DIR IMAGES_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck disable=SC1091
. "$ROOT/tests/native/lib.sh"
native_init "$B" "$IMAGES"

run_cubelet() { # run_cubelet CONFIG-FILE (foreground, for the refusals)
	timeout 20 "$CUBELET" run --config "$1" --manifest-dir "$T/manifests" --runtime-endpoint "unix://$SOCK" \
		--cgroup-root /sys/fs/cgroup --node-name native-node 2>&1
}

# ---- the mode's refusals (kubelet's validation messages) -----------------------------------------
config "cgroupsPerQOS: false" >"$T/bad1.yaml"
out=$(run_cubelet "$T/bad1.yaml")
rc=$?
contains "$out" "invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when \"pods\" contained in enforceNodeAllocatable" \
	"cgroupsPerQOS: false with the default enforceNodeAllocatable: refused with kubelet's message"
is "$rc" 2 "...exit 2"
printf '%s\n' "cgroupsPerQOS: false" "enforceNodeAllocatable: []" "podPidsLimit: 100" >"$T/extra"
config "$(cat "$T/extra")" >"$T/bad2.yaml"
contains "$(run_cubelet "$T/bad2.yaml")" "podPidsLimit 100 needs cgroupsPerQOS: true (pids.max of the pod cgroup)" \
	"...and with a setting that needs cubelet's pod cgroups: named"

# ---- cubelet in the mode ----------------------------------------------------------------------------
printf '%s\n' "cgroupsPerQOS: false" "enforceNodeAllocatable: []" "cgroupRoot: /$CGNAME" >"$T/extra"
config "$(cat "$T/extra")" >"$T/config.yaml"
start_cubelet "$T/config.yaml"
check "cubelet runs against the private containerd" wait_until 20 up
is "$(status_json | jq -c '.cgroups | [.perQOS, .podsParent]')" "[false,\"/$CGNAME\"]" \
	"cubelet status: cgroupsPerQOS false, pods below the run's cgroupRoot"
contains "$("$CUBELET" status --socket "$T/cubelet.sock")" "cgroups: none of cubelet's (cgroupsPerQOS: false); pods below '/$CGNAME'" \
	"...in its table too"

cat >"$T/manifests/env.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: env, labels: {app: native}}
spec:
  hostNetwork: true
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'env > /out/env.tmp && mv /out/env.tmp /out/env; cat /proc/self/cgroup > /out/cgroup; echo started; exec sleep 3600']
    env:
    - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: GREETING, value: "\$(POD) is \$(APP)"}
    resources: {limits: {cpu: 500m, memory: 64Mi}}
    volumeMounts: [{name: out, mountPath: /out}]
  volumes: [{name: out, hostPath: {path: $T/out}}]
EOF
check "a pod from the manifest directory reaches Running" wait_until 60 phase env Running
have_env() { [ -s "$T/out/env" ]; }
wait_until 20 have_env
is "$(grep -E '^(POD|APP|MEM|GREETING)=' "$T/out/env" | sort | tr '\n' ' ')" \
	"APP=native GREETING=env-native-node is native MEM=64 POD=env-native-node " \
	"env: fieldRef, resourceFieldRef (divisor 1Mi) and \$(VAR) expansion"
id=$(podq env '.containers[0].id')
grp=$(awk -F: '$2 == "memory" { print $3 }' "$T/out/cgroup")
is "${grp%/*}" "/$CGNAME" "the container's group is the runtime's, below the run's cgroupRoot (no pod cgroup of cubelet's)"
is "$(cat "/sys/fs/cgroup/memory$grp/memory.limit_in_bytes" 2>&1)" 67108864 \
	"its memory limit reached the runtime through CRI (64Mi)"
q=$(cat /sys/fs/cgroup/cpu,cpuacct"$grp"/cpu.cfs_quota_us 2>/dev/null || cat /sys/fs/cgroup/cpu"$grp"/cpu.cfs_quota_us 2>&1)
is "$q" 50000 "...and its cpu limit (500m: a 50000 µs quota)"
is "$(ctr -a "$SOCK" -n k8s.io containers info "$id" 2>/dev/null | jq -r '.Labels["io.kubernetes.pod.name"]')" \
	env-native-node "the runtime's container carries kubelet's labels (io.kubernetes.pod.name)"

# ---- an exec readiness probe ----------------------------------------------------------------------
cat >"$T/manifests/probe.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: probe}
spec:
  hostNetwork: true
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'while true; do [ -e /out/go ] && touch /tmp/ready; sleep 0.2; done']
    readinessProbe: {exec: {command: [test, -e, /tmp/ready]}, periodSeconds: 1}
    volumeMounts: [{name: out, mountPath: /out}]
  volumes: [{name: out, hostPath: {path: $T/out}}]
EOF
check "pod probe reaches Running" wait_until 60 phase probe Running
ready() { [ "$(podq probe '.containers[0].ready')" = "$1" ]; }
sleep 2
check "an exec readiness probe that fails: the container is not ready" ready false
touch "$T/out/go"
check "...and once it succeeds, ready (within a few periods)" wait_until 10 ready true

# ---- restarts with back-off, and the logs ---------------------------------------------------------
cat >"$T/manifests/crash.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  hostNetwork: true
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'echo "run at $(date +%s)"; echo "to stderr" >&2; exit 3']
EOF
restarted() { [ "$(podq crash .restarts)" -ge 1 ] 2>/dev/null; }
check "a container that exits 3 is restarted (restartPolicy Always)" wait_until 60 restarted
is "$(podq crash '.containers[0].lastTermination.exitCode')" 3 "...its last termination's exit code"
logs=$("$CUBELET" logs --pod-logs-dir "$T/logs" crash-native-node 2>&1)
contains "$logs" "to stderr" "cubelet logs: the container's stdout and stderr, from the CRI-format file"
f=$(find "$T/logs" -path '*crash*' -name '*.log' | head -n 1)
check "the log file is CRI's format (time, stream, tag, line)" \
	grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+) (stdout|stderr) F ' "$f"
sleep 12
r=$(podq crash .restarts)
check "...back-off between restarts: $r restarts in about 20 s (kubelet's 10 s, doubling)" test "$r" -le 3

# ---- activeDeadlineSeconds; termination messages (a file of each container's own, the log's tail) ----
cat >"$T/manifests/deadline.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  hostNetwork: true
  activeDeadlineSeconds: 3
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'trap "exit 0" TERM; while true; do sleep 0.2; done']
EOF
cat >"$T/manifests/lastwords.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: lastwords}
spec:
  hostNetwork: true
  restartPolicy: Never
  containers:
  - name: file
    image: localhost/cubelet/busybox:1
    securityContext: {runAsUser: 1000}
    command: [sh, -c, 'printf "written by uid %s" "$(id -u)" > /dev/termination-log']
  - name: logs
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'echo starting >&2; echo "fatal: no config" >&2; exit 4']
    terminationMessagePolicy: FallbackToLogsOnError
EOF
check "activeDeadlineSeconds: 3: the pod is Failed" wait_until 30 phase deadline Failed
is "$(podq deadline '[.reason, .message] | join(": ")')" \
	"DeadlineExceeded: Pod was active on the node longer than the specified deadline" "...DeadlineExceeded, kubelet's message"
stopped() { [ "$(podq deadline '.containers[0] | [.state, .lastTermination.exitCode] | join(" ")')" = "Terminated 0" ]; }
check "...its container Terminated, exit 0 (its TERM trap): the last state the stop left, as kubelet's" \
	wait_until 20 stopped
check "pod lastwords ends (Failed: one container exited 4)" wait_until 60 phase lastwords Failed
is "$(podq lastwords '.containers[0].lastTermination.message')" "written by uid 1000" \
	"a container's /dev/termination-log (mode 0666: written by uid 1000) is its termination message"
is "$(podq lastwords '.containers[1].lastTermination.message')" "$(printf 'starting\nfatal: no config')" \
	"FallbackToLogsOnError: a failed container's log tail is its message"
files=$(find "$T/state" -path '*/containers/file/*' -o -path '*/containers/logs/*' -type f | wc -l)
is "$files" 2 "...each container a file of its own under <stateDir>/pods/<uid>/containers/<name>/"

# ---- a manifest removed: its pod stops ----------------------------------------------------------------
rm -f "$T/manifests/crash.yaml" "$T/manifests/probe.yaml" "$T/manifests/deadline.yaml" "$T/manifests/lastwords.yaml"
gone() { [ -z "$(podq crash .uid)$(podq probe .uid)$(podq deadline .uid)$(podq lastwords .uid)" ]; }

check "manifests removed: their pods leave" wait_until 60 gone
no_containers() { [ "$(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null | wc -l)" = 2 ]; }
check "...and their containers are gone from the runtime (env's two tasks remain)" wait_until 60 no_containers
no_files() { [ -z "$(find "$T/state" -path '*/containers/file*' -o -path '*/containers/logs*')" ]; }
check "...and their termination message files" wait_until 20 no_files
# ---- an idle node samples its pressure signals once a period ----------------------------------------
# (evictionSamplePeriod 1s; a tenth of it only while a signal falls towards its
# threshold: eviction/pace.c), so the pacing costs an idle node nothing
rounds() { status_json | jq -r '.eviction.rounds'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$PID_CUBELET/stat"; }
r0=$(rounds) c0=$(cpu_ticks)
sleep 10
r1=$(rounds) c1=$(cpu_ticks)
check "an idle node's pressure sampling: $((r1 - r0)) rounds in 10 s (one a second; the fast pace would be ten)" \
	test "$((r1 - r0))" -ge 5 -a "$((r1 - r0))" -le 20
echo "# figure: cubelet's CPU over those 10 s idle (one pod): $(((c1 - c0) * 1000 / $(getconf CLK_TCK))) ms"
check "cubelet is still running" kill -0 "$PID_CUBELET"
echo "1..$n"
