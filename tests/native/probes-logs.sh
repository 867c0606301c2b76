#!/bin/bash
# Probes, lifecycle hooks, env sources, container logs and exec in the native
# lane (a private containerd, cgroupsPerQOS: false, host-network pods, in a
# network namespace of the run's own with the node address 192.0.2.2):
#   probes: a failing exec liveness probe restarts its container (kubelet's
#   message and events) (a); a readiness probe on a file that the test makes
#   once it has looked flips the container's ready and the pod's Ready
#   condition (ContainersNotReady before) (b); httpGet (busybox httpd, a named
#   port) and tcpSocket probes pass, a 404 keeps a container unready (c); a
#   startupProbe holds the liveness probe back until it succeeds (d);
#   postStart writes a marker, preStop runs to its end before SIGTERM (e); a
#   failing postStart kills the container (PostStartHookError) (f);
#   env and logs: fieldRef (metadata.name/namespace/labels, spec.nodeName,
#   status.hostIP, status.podIP) and resourceFieldRef with a divisor (node
#   allocatable for a container without a limit); $(VAR) expanded in env,
#   command and args as kubelet does; the logs in kubelet's layout
#   <podLogsDir>/<ns>_<name>_<uid>/<container>/<restart>.log; `cubelet logs`
#   as kubectl logs (--tail, --timestamps, --previous after a restart, -f
#   ending with the container, -c required with two containers); a log over
#   containerLogMaxSize rotated (renamed, reopened, gzipped, at most
#   containerLogMaxFiles files); `cubelet exec` passes output and exit code.
# Nothing here needs cubelet's cgroup tree: the VM scenarios did this at
# emulation speed (93-probes, 94-logs) until the native lane could.
# TAP; 77 without root, containerd or the images.
#
#   tests/native/probes-logs.sh BUILD_DIR IMAGES_DIR
set -u
B=${1:?usage: probes-logs.sh BUILD_DIR IMAGES_DIR}
IMAGES=${2:?usage: probes-logs.sh BUILD_DIR IMAGES_DIR}
# shellcheck disable=SC1091
. "$(dirname "$0")/lib.sh"
native_netns "$0" "$@"
native_init "$B" "$IMAGES"
IMG=localhost/cubelet/busybox:1
M=$T/manifests
READ_ONLY_PORT=10255 config "cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupRoot: /$CGNAME
containerLogMaxSize: 2Ki
containerLogMaxFiles: 3
kubeReserved: {cpu: 100m}
systemReserved: {cpu: 100m}" >"$T/config.yaml"
start_cubelet "$T/config.yaml"
check "cubelet runs with containerLogMaxSize 2Ki, containerLogMaxFiles 3 and its HTTP API on 10255" wait_until 20 up

cl() { local sub=$1; shift; "$CUBELET" "$sub" --runtime-endpoint "unix://$SOCK" "$@"; } # cubelet exec
logs() { "$CUBELET" logs --pod-logs-dir "$T/logs" --runtime-endpoint "unix://$SOCK" "$@"; }
pod_json() { status_json | jq -c --arg n "$1-$NODE" '.pods[] | select(.name == $n)'; }
# ctr_jq NAME CONTAINER JQ: a jq expression on one container of the pod
ctr_jq() { pod_json "$1" | jq -r --arg c "$2" ".containers[] | select(.name == \$c) | $3"; }
# api_cond NAME TYPE FIELD: a field of a condition of the pod in the HTTP API
api_cond() {
	curl -s "http://127.0.0.1:10255/pods" |
		jq -r --arg n "$1-$NODE" --arg t "$2" ".items[] | select(.metadata.name == \$n) | .status.conditions[] | select(.type == \$t) | .$3"
}
ctr_is() { [ "$(ctr_jq "$1" "$2" ".$3")" = "$4" ]; }
ctr_ge() { [ "$(ctr_jq "$1" "$2" ".$3")" -ge "$4" ] 2>/dev/null; }
cond_is() { [ "$(api_cond "$1" "$2" status)" = "$3" ]; }
gone() { [ -z "$(podq "$1" .uid)" ]; }
# describe_event POD REASON MESSAGE-PART: in `cubelet describe` and cubelet status
describe_event() {
	local d j
	d=$("$CUBELET" describe --socket "$T/cubelet.sock" "$1-$NODE" 2>/dev/null | awk '/^Events:/ { on = 1; next } on')
	j=$(podq "$1" ".events[] | select(.reason == \"$2\") | .message")
	case "$d" in *" $2 "*"$3"*) ;; *) return 1 ;; esac
	case "$j" in *"$3"*) ;; *) return 1 ;; esac
}
hostnet() { sed 's/^spec:$/spec:\n  hostNetwork: true/'; }

# ================================ probes and hooks =================================================
hostnet >"$M/live.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: live}
spec:
  containers:
  - name: app
    image: $IMG
    command: [sleep, "3600"]
    livenessProbe:
      exec: {command: ["false"]}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
Y
hostnet >"$M/ready.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: ready}
spec:
  containers:
  - name: app
    image: $IMG
    command: [sh, -c, "exec sleep 3600"]
    readinessProbe:
      exec: {command: [cat, /tmp/ready]}
      periodSeconds: 1
      timeoutSeconds: 5
Y
hostnet >"$M/web.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: httpd
    image: $IMG
    command: [sh, -c, "mkdir -p /www && echo ok >/www/index.html && exec httpd -f -p 18080 -h /www"]
    ports: [{name: http, containerPort: 18080}]
    readinessProbe:
      httpGet: {path: /index.html, port: http}
      periodSeconds: 1
    livenessProbe:
      tcpSocket: {port: 18080}
      periodSeconds: 1
  - name: bad
    image: $IMG
    command: [sleep, "3600"]
    readinessProbe:
      httpGet: {path: /missing, port: 18080}
      periodSeconds: 1
Y
hostnet >"$M/gate.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: gate}
spec:
  containers:
  - name: app
    image: $IMG
    command: [sleep, "3600"]
    startupProbe:
      exec: {command: [cat, /tmp/started]}
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 120
    livenessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 1
Y
hostnet >"$M/hooks.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: hooks}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: app
    image: $IMG
    command: [sh, -c, "trap 'echo sigterm; exit 0' TERM; echo started; while true; do sleep 1; done"]
    lifecycle:
      postStart:
        exec: {command: [sh, -c, "echo poststart >/proc/1/fd/1"]}
      preStop:
        exec: {command: [sh, -c, "echo prestop >/proc/1/fd/1; sleep 2; echo prestop-done >/proc/1/fd/1"]}
Y
hostnet >"$M/poststart-fails.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: psfail}
spec:
  containers:
  - name: app
    image: $IMG
    command: [sleep, "3600"]
    lifecycle:
      postStart:
        exec: {command: ["false"]}
Y

for p in gate live ready web hooks; do
	check "pod $p-$NODE reaches Running" wait_until 60 phase "$p" Running
done

# ---- d. startupProbe gates liveness (the test creates the file once it has looked) ------------
is "$(ctr_jq gate app .started)/$(ctr_jq gate app .restarts)" false/0 \
	"gate: not started, and the failing liveness probe has not run"
check "gate: cubelet exec creates the startup probe's file" cl exec "gate-$NODE" -- touch /tmp/started

# ---- b. readiness: not ready until /tmp/ready exists ---------------------------------------
is "$(ctr_jq ready app .ready)" false "ready: the container is not ready before its probe passes"
is "$(api_cond ready Ready status)/$(api_cond ready Ready reason)" False/ContainersNotReady \
	"ready: the pod's Ready condition is False, ContainersNotReady"
is "$(api_cond ready ContainersReady message)" "containers with unready status: [app]" \
	"ready: ContainersReady names the unready container"
is "$(ctr_jq ready app .started)" true "ready: started (no startup probe) once running"
check "ready: cubelet exec creates the readiness probe's file" cl exec "ready-$NODE" -- touch /tmp/ready
check "ready: the container becomes ready once the file exists" wait_until 30 ctr_is ready app ready true
check "ready: the pod's Ready condition becomes True" wait_until 10 cond_is ready Ready True
is "$(pod_json ready | jq -r .ready)" true "ready: cubelet status shows the pod ready"
contains "$(api_cond ready Ready lastTransitionTime)" "T" "ready: the Ready condition has a lastTransitionTime"

# ---- a. liveness: exec false restarts the container ----------------------------------------
check "live: the container is restarted at least twice" wait_until 90 ctr_ge live app restarts 2
contains "$(grep "live-$NODE" "$T/cubelet.log")" \
	"Container app failed liveness probe, will be restarted" "live: kubelet's message in cubelet's log"
check "live: cubelet describe and status have the event Unhealthy \"Liveness probe failed: ...\"" \
	describe_event live Unhealthy "Liveness probe failed: "
check "live: ... and Killing \"Container app failed liveness probe, will be restarted\"" \
	describe_event live Killing "Container app failed liveness probe, will be restarted"
is "$(curl -s http://127.0.0.1:10255/pods | jq -r '.items[] | select(.metadata.name == "live-'"$NODE"'") | .status.containerStatuses[0].restartCount >= 2')" \
	true "live: restartCount >= 2 in the HTTP API"

# ---- c. httpGet and tcpSocket ----------------------------------------------------------------
check "web: httpd becomes ready through its httpGet probe (named port, the pod's address $NODE_IP)" \
	wait_until 30 ctr_is web httpd ready true
is "$(ctr_jq web httpd .restarts)" 0 "web: the tcpSocket liveness probe passes (no restart)"
is "$(ctr_jq web bad .ready)" false "web: a 404 keeps the other container unready"
is "$(api_cond web Ready message)" "containers with unready status: [bad]" "web: the pod names it"

# ---- d. (cont.) once started, liveness runs ----------------------------------------------------
check "gate: once started, the liveness probe restarts it" wait_until 60 ctr_ge gate app restarts 1

# ---- e. postStart and preStop -----------------------------------------------------------------
hooks_log() { find "$T/logs" -path "*hooks-${NODE}_*" -name 0.log 2>/dev/null | head -n 1; }
has_hooks_log() { [ -n "$(hooks_log)" ]; }
wait_until 30 has_hooks_log
log=$(hooks_log)
check "hooks: the container's log exists" test -n "$log"
check "hooks: postStart wrote its marker" wait_until 30 grep -q poststart "$log"
rm -f "$M/hooks.yaml"
check "hooks: the pod goes away" wait_until 60 gone hooks
# the pod leaves the table at once; its kill job runs preStop, then StopContainer
check "hooks: the container got SIGTERM" wait_until 30 grep -q sigterm "$log"
lines=$(sed 's/^[^ ]* [^ ]* [^ ]* //' "$log" | grep -E '^(started|poststart|prestop|prestop-done|sigterm)$' | tr '\n' ' ')
contains "$lines" "prestop prestop-done sigterm" "hooks: preStop ran (to its end) before SIGTERM ($lines)"

# ---- f. a failing postStart -------------------------------------------------------------------
check "psfail: the container is killed and restarted" wait_until 60 ctr_ge psfail app restarts 1
contains "$(pod_json psfail | jq -r .lastError)$(grep psfail "$T/cubelet.log")" \
	"PostStartHookError" "psfail: PostStartHookError"
rm -f "$M/live.yaml" "$M/ready.yaml" "$M/web.yaml" "$M/gate.yaml" "$M/poststart-fails.yaml"
probes_gone() { gone live && gone ready && gone web && gone gate && gone psfail; }
check "the probes' pods go" wait_until 60 probes_gone

# ================================ env sources and logs ============================================
hostnet >"$M/envpod.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: envpod, labels: {app: demo}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "echo 'cmd=$(MY_NAME) esc=$$(MY_NAME) unknown=$(NOPE)'; echo arg=$0; env | sort; exec sleep 3600", "$(MY_APP)"]
    resources: {limits: {cpu: 250m, memory: 64Mi}}
    env:
    - {name: MY_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: MY_NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: MY_APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: MY_NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: MY_HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: MY_POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: CPU_M, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}
    - {name: CPU_CORES, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: GREETING, value: "hello $(MY_NAME) in $(MY_NS), $$(MY_NS) stays"}
  - name: side
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "echo side-started; exec sleep 3600"]
    env:
    - {name: CPU_ALLOC, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}
    - {name: MAIN_MEM, valueFrom: {resourceFieldRef: {containerName: main, resource: limits.memory}}}
Y
check "envpod reaches Running" wait_until 60 phase envpod Running
uid=$(podq envpod .uid)
dir=$T/logs/default_envpod-${NODE}_$uid
check "the log is in kubelet's layout: <podLogsDir>/default_envpod-${NODE}_<uid>/main/0.log" test -s "$dir/main/0.log"
wait_until 20 grep -q 'GREETING=' "$dir/main/0.log"
out=$(logs "envpod-$NODE" -c main 2>&1)
contains "$out" "cmd=envpod-$NODE esc=\$(MY_NAME) unknown=\$(NOPE)" "command: \$(VAR) expanded, \$\$ escaped, an unknown reference left as written"
contains "$out" "arg=demo" "args: \$(MY_APP) from metadata.labels['app']"
contains "$out" "MY_NAME=envpod-$NODE" "fieldRef metadata.name"
contains "$out" "MY_NS=default" "fieldRef metadata.namespace"
contains "$out" "MY_NODE=$NODE" "fieldRef spec.nodeName"
contains "$out" "MY_HOST_IP=$NODE_IP
" "fieldRef status.hostIP is the node's address ($NODE_IP, the default route's)"
is "$(podq envpod .podIP)" "$NODE_IP" "a hostNetwork pod's status.podIP is the node's address"
contains "$out" "MY_POD_IP=$NODE_IP
" "fieldRef status.podIP is the pod's address"
contains "$out" "MEM_MI=64" "resourceFieldRef limits.memory, divisor 1Mi: 64"
contains "$out" "CPU_M=250" "resourceFieldRef limits.cpu, divisor 1m: 250"
contains "$out" "CPU_CORES=1" "resourceFieldRef limits.cpu, divisor 1: 250m rounds up to 1"
contains "$out" "GREETING=hello envpod-$NODE in default, \$(MY_NS) stays" "\$(VAR) in an env value, from the env before it"
alloc=$(($(nproc) * 1000 - 200))
is "$(cl exec "envpod-$NODE" -c side -- sh -c 'echo $CPU_ALLOC')" "$alloc" \
	"a container without a cpu limit: limits.cpu is node allocatable ($(nproc) CPUs - 200m reserved = ${alloc}m)"
is "$(cl exec "envpod-$NODE" -c side -- sh -c 'echo $MAIN_MEM')" 67108864 "resourceFieldRef containerName: main"

# ---- cubelet logs: -c required, errors ---------------------------------------------------------
out=$(logs "envpod-$NODE" 2>&1)
rc=$?
is "$rc:$out" "1:error: a container name must be specified for pod envpod-$NODE, choose one of: [main side]" \
	"logs without -c on a pod of two containers: kubectl's message, exit 1"
is "$(logs "envpod-$NODE" side)" side-started "logs POD CONTAINER (kubectl's positional form)"
out=$(logs nosuch 2>&1)
is "$?:$out" '1:Error from server (NotFound): pods "nosuch" not found' "logs of an unknown pod"
out=$(logs -n kube-system "envpod-$NODE" -c main 2>&1)
is "$?:$out" "1:Error from server (NotFound): pods \"envpod-$NODE\" not found" "-n names the namespace"

# ---- cubelet exec --------------------------------------------------------------------------------
out=$(cl exec "envpod-$NODE" -c main -- sh -c 'echo hi; echo oops >&2; exit 3' 2>"$T/exec.err")
rc=$?
is "$rc:$out" "3:hi" "exec -- sh -c 'echo hi; exit 3': stdout passed through, exit code 3"
is "$(cat "$T/exec.err")" "oops
command terminated with exit code 3" "exec: stderr passed through, then kubectl's 'command terminated' line"
is "$(cl exec "envpod-$NODE" -c main -- sh -c 'echo $MY_NAME')" "envpod-$NODE" "exec sees the container's env"
out=$(cl exec "envpod-$NODE" -- true 2>&1)
is "$?:$out" "1:error: a container name must be specified for pod envpod-$NODE, choose one of: [main side]" \
	"exec without -c on a pod of two containers"

# ---- --tail, --timestamps, --previous, -f ----------------------------------------------------------
hostnet >"$M/counter.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: counter}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "echo start-$(cat /proc/sys/kernel/random/uuid); for i in 1 2 3 4 5; do echo line$i; done; sleep 0.3; echo err >&2; sleep 0.3; printf partial-; sleep 0.2; echo line; sleep 15; exit 1"]
Y
check "counter reaches Running" wait_until 60 phase counter Running
cdir=$T/logs/default_counter-${NODE}_$(podq counter .uid)/app
wait_until 20 grep -q 'F line$' "$cdir/0.log"
is "$(logs "counter-$NODE" --tail 2)" "err
partial-line" "--tail 2: the last two lines, stdout and stderr as written"
check "--timestamps: each line starts with an RFC 3339 timestamp" \
	sh -c "'$CUBELET' logs --pod-logs-dir '$T/logs' counter-$NODE --timestamps | grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+) line1\$'"
first=$(logs "counter-$NODE" | grep -m 1 start-)
contains "$first" "start-" "logs shows the run's output ($first)"
# -f on the running attempt ends by itself once the container exits
start=$(date +%s)
out=$(timeout 60 "$CUBELET" logs --pod-logs-dir "$T/logs" --runtime-endpoint "unix://$SOCK" -f "counter-$NODE")
rc=$?
is "$rc" 0 "logs -f ends when the container ends (after $(($(date +%s) - start)) s)"
contains "$out" "partial-line" "logs -f printed the run's output"
check "the container restarts (1.log appears)" wait_until 60 test -s "$cdir/1.log"
wait_until 10 grep -q start- "$cdir/1.log"
# the attempt now current, and the one before it, from the files themselves,
# beside what cubelet logs says of them (read again if the container restarts
# in between)
runs_match() {
	k=$(ls "$cdir" | sed -n 's/^\([0-9]*\)\.log$/\1/p' | sort -n | tail -n 1)
	want_prev=$(grep -o 'start-.*' "$cdir/$((k - 1)).log" | head -n 1)
	want_cur=$(grep -o 'start-.*' "$cdir/$k.log" | head -n 1)
	got_prev=$(logs "counter-$NODE" --previous | grep -m 1 start-)
	got_cur=$(logs "counter-$NODE" | grep -m 1 start-)
	[ -n "$want_cur" ] && [ "$got_prev" = "$want_prev" ] && [ "$got_cur" = "$want_cur" ]
}
wait_until 10 runs_match
is "$got_prev" "$want_prev" "--previous shows the last terminated run's output ($((k - 1)).log)"
is "$got_cur" "$want_cur" "logs shows the current run's output ($k.log)"
check "the two runs differ ($want_prev, $want_cur)" test "$want_prev" != "$want_cur" -a -n "$want_prev"
out=$(logs "envpod-$NODE" -c main --previous 2>&1)
is "$?:$out" "1:Error from server (BadRequest): previous terminated container \"main\" in pod \"envpod-$NODE\" not found" \
	"--previous without a previous run"

# ---- rotation -----------------------------------------------------------------------------------
hostnet >"$M/chatty.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: chatty}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "i=0; while :; do echo \"chatty line $i 0123456789012345678901234567890123456789012345678901234567890123456789\"; i=$((i+1)); sleep 0.05; done"]
Y
check "chatty reaches Running" wait_until 60 phase chatty Running
hdir=$T/logs/default_chatty-${NODE}_$(podq chatty .uid)/app
rotated() { ls "$hdir" | grep -qE "^0\\.log\\.[0-9]{8}-[0-9]{6}$1\$"; }
# kubelet's monitor period is 10 s: three rounds rotate three times
check "a rotated log appears (0.log.YYYYMMDD-hhmmss)" wait_until 45 rotated '(\.gz)?'
check "an older rotated log is gzipped (0.log.*.gz)" wait_until 45 rotated '\.gz'
sleep 12
files=$(ls "$hdir")
check "at most containerLogMaxFiles (3) files: $(echo "$files" | tr '\n' ' ')" test "$(echo "$files" | grep -c '^0\.log')" -le 3
gz=$(ls "$hdir"/0.log.*.gz | head -n 1)
check "the .gz is gzip of CRI lines" sh -c "gzip -dc '$gz' | head -n 1 | grep -qE '^[0-9T:.Z+-]+ stdout F chatty line [0-9]+ '"
sleep 1
check "the runtime writes the reopened 0.log (ReopenContainerLog): modified in the last 3 s" \
	test $(($(date +%s) - $(stat -c %Y "$hdir/0.log"))) -le 3
contains "$(logs "chatty-$NODE" --tail 1)" "chatty line" "logs reads the live file after rotation"

# ---- removed pods --------------------------------------------------------------------------------
rm -f "$M/chatty.yaml" "$M/counter.yaml" "$M/envpod.yaml"
all_gone() { gone envpod && gone counter && gone chatty; }
check "the pods go" wait_until 60 all_gone
no_tasks() { [ "$(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null | wc -l)" = 0 ]; }
check "...and their containers are gone from the runtime" wait_until 60 no_tasks
check "cubelet is still running" kill -0 "$PID_CUBELET"
echo "1..$n"
