#!/bin/bash
# Env sources, container logs and exec (issue 11 points 8 and 10): env from
# fieldRef (metadata.name/namespace/labels, spec.nodeName, status.hostIP,
# status.podIP) and resourceFieldRef with a divisor (and node allocatable
# for a container without a limit) reach the container; $(VAR) is expanded
# in env, command and args as kubelet does; the logs are in kubelet's layout
# /var/log/pods/<ns>_<name>_<uid>/<container>/<restart>.log; `cubelet logs`
# prints them as kubectl logs (--tail, --previous after a restart, -f ending
# with the container, -c required with two containers); a log over
# containerLogMaxSize is rotated (renamed, reopened, gzipped, at most
# containerLogMaxFiles files); `cubelet exec` passes output and exit code.
# vm-guest: b
# vm-timeout: 420
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

cubelet_install
printf 'containerLogMaxSize: 2Ki\ncontainerLogMaxFiles: 3\n' >>/etc/cubelet/config.yaml
systemctl daemon-reload
systemctl start cubelet
t_is "$(systemctl is-active cubelet)" active "cubelet.service is active with containerLogMaxSize 2Ki, containerLogMaxFiles 3"

# ---- env sources and $(VAR) --------------------------------------------------------------
cat >"$M/envpod.yaml" <<'Y'
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
t_ok "envpod reaches Running" wait_phase "envpod-$NODE" Running 120
uid=$(pod_field "envpod-$NODE" uid)
dir=/var/log/pods/default_envpod-${NODE}_$uid
t_ok "the log is in kubelet's layout: $dir/main/0.log" test -s "$dir/main/0.log"
for i in $(seq 40); do grep -q 'GREETING=' "$dir/main/0.log" 2>/dev/null && break; sleep 0.5; done
out=$("$CUBELET" logs "envpod-$NODE" -c main 2>&1)
log "envpod main: $out"
t_contains "$out" "cmd=envpod-$NODE esc=\$(MY_NAME) unknown=\$(NOPE)" "command: \$(VAR) expanded, \$\$ escaped, an unknown reference left as written"
t_contains "$out" "arg=demo" "args: \$(MY_APP) from metadata.labels['app']"
t_contains "$out" "MY_NAME=envpod-$NODE" "fieldRef metadata.name"
t_contains "$out" "MY_NS=default" "fieldRef metadata.namespace"
t_contains "$out" "MY_NODE=$NODE" "fieldRef spec.nodeName"
hostip=$(ip -4 -o addr show scope global up 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
t_contains "$out" "MY_HOST_IP=$hostip
" "fieldRef status.hostIP is the node's first IPv4 address ('$hostip': the guest may have none)"
# the pod is on the pod network: status.podIP is its sandbox's address, as cubelet status shows it
podip=$(pod_field "envpod-$NODE" podIP)
t_contains "$podip" "10.88." "the pod has an address in the pod CIDR ('$podip')"
t_contains "$out" "MY_POD_IP=$podip
" "fieldRef status.podIP is the sandbox's address"
t_contains "$out" "MEM_MI=64" "resourceFieldRef limits.memory, divisor 1Mi: 64"
t_contains "$out" "CPU_M=250" "resourceFieldRef limits.cpu, divisor 1m: 250"
t_contains "$out" "CPU_CORES=1" "resourceFieldRef limits.cpu, divisor 1: 250m rounds up to 1"
t_contains "$out" "GREETING=hello envpod-$NODE in default, \$(MY_NS) stays" "\$(VAR) in an env value, from the env before it"
alloc=$(($(nproc) * 1000 - 200))
t_is "$("$CUBELET" exec "envpod-$NODE" -c side -- sh -c 'echo $CPU_ALLOC')" "$alloc" \
	"a container without a cpu limit: limits.cpu is node allocatable ($(nproc) CPUs - 200m reserved = ${alloc}m)"
t_is "$("$CUBELET" exec "envpod-$NODE" -c side -- sh -c 'echo $MAIN_MEM')" 67108864 "resourceFieldRef containerName: main"

# ---- cubelet logs: -c required, errors ---------------------------------------------------------
out=$("$CUBELET" logs "envpod-$NODE" 2>&1)
rc=$?
t_is "$rc:$out" "1:error: a container name must be specified for pod envpod-$NODE, choose one of: [main side]" \
	"logs without -c on a pod of two containers: kubectl's message, exit 1"
t_is "$("$CUBELET" logs envpod-$NODE side)" side-started "logs POD CONTAINER (kubectl's positional form)"
out=$("$CUBELET" logs nosuch 2>&1)
t_is "$?:$out" '1:Error from server (NotFound): pods "nosuch" not found' "logs of an unknown pod"
out=$("$CUBELET" logs -n kube-system "envpod-$NODE" -c main 2>&1)
t_is "$?:$out" "1:Error from server (NotFound): pods \"envpod-$NODE\" not found" "-n names the namespace"

# ---- cubelet exec --------------------------------------------------------------------------------
out=$("$CUBELET" exec "envpod-$NODE" -c main -- sh -c 'echo hi; echo oops >&2; exit 3' 2>"$VM_OUT/exec.err")
rc=$?
t_is "$rc:$out" "3:hi" "exec -- sh -c 'echo hi; exit 3': stdout passed through, exit code 3"
t_is "$(cat "$VM_OUT/exec.err")" "oops
command terminated with exit code 3" "exec: stderr passed through, then kubectl's 'command terminated' line"
t_is "$("$CUBELET" exec "envpod-$NODE" -c main -- sh -c 'echo $MY_NAME')" "envpod-$NODE" "exec sees the container's env"
out=$("$CUBELET" exec "envpod-$NODE" -- true 2>&1)
t_is "$?:$out" "1:error: a container name must be specified for pod envpod-$NODE, choose one of: [main side]" \
	"exec without -c on a pod of two containers"

# ---- --tail, --timestamps, --previous, -f ----------------------------------------------------------
cat >"$M/counter.yaml" <<'Y'
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
t_ok "counter reaches Running" wait_phase "counter-$NODE" Running 120
cuid=$(pod_field "counter-$NODE" uid)
cdir=/var/log/pods/default_counter-${NODE}_$cuid/app
for i in $(seq 40); do grep -q 'F line$' "$cdir/0.log" 2>/dev/null && break; sleep 0.5; done
t_is "$("$CUBELET" logs "counter-$NODE" --tail 2)" "err
partial-line" "--tail 2: the last two lines, stdout and stderr as written"
t_ok "--timestamps: each line starts with an RFC 3339 timestamp" \
	sh -c "'$CUBELET' logs counter-$NODE --timestamps | grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+) line1\$'"
first=$("$CUBELET" logs "counter-$NODE" | grep -m 1 start-)
t_contains "$first" "start-" "logs shows the run's output ($first)"
# -f on the running attempt ends by itself once the container exits
start=$(date +%s)
out=$(timeout 60 "$CUBELET" logs -f "counter-$NODE")
rc=$?
t_is "$rc" 0 "logs -f ends when the container ends (after $(($(date +%s) - start)) s)"
t_contains "$out" "partial-line" "logs -f printed the run's output"
t_ok "the container restarts (1.log appears)" sh -c "for i in \$(seq 120); do [ -s '$cdir/1.log' ] && exit 0; sleep 0.5; done; exit 1"
for i in $(seq 20); do grep -q start- "$cdir/1.log" 2>/dev/null && break; sleep 0.5; done
# the attempt now current, and the one before it, from the files themselves,
# beside what cubelet logs says of them; read again while the container
# restarts in between (the counter exits each run: under a loaded emulation
# a new attempt can begin between reading the files and asking cubelet)
runs_match() {
	n=$(ls "$cdir" | sed -n 's/^\([0-9]*\)\.log$/\1/p' | sort -n | tail -n 1)
	want_prev=$(grep -o 'start-.*' "$cdir/$((n - 1)).log" | head -n 1)
	want_cur=$(grep -o 'start-.*' "$cdir/$n.log" | head -n 1)
	got_prev=$("$CUBELET" logs "counter-$NODE" --previous | grep -m 1 start-)
	got_cur=$("$CUBELET" logs "counter-$NODE" | grep -m 1 start-)
	[ -n "$want_cur" ] && [ "$got_prev" = "$want_prev" ] && [ "$got_cur" = "$want_cur" ]
}
for i in $(seq 20); do runs_match && break; sleep 0.5; done
t_is "$got_prev" "$want_prev" "--previous shows the last terminated run's output ($((n - 1)).log)"
t_is "$got_cur" "$want_cur" "logs shows the current run's output ($n.log)"
t_ok "the two runs differ ($want_prev, $want_cur)" test "$want_prev" != "$want_cur" -a -n "$want_prev"
out=$("$CUBELET" logs "envpod-$NODE" -c main --previous 2>&1)
t_is "$?:$out" "1:Error from server (BadRequest): previous terminated container \"main\" in pod \"envpod-$NODE\" not found" \
	"--previous without a previous run"

# ---- rotation -----------------------------------------------------------------------------------
cat >"$M/chatty.yaml" <<'Y'
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
t_ok "chatty reaches Running" wait_phase "chatty-$NODE" Running 120
hdir=/var/log/pods/default_chatty-${NODE}_$(pod_field "chatty-$NODE" uid)/app
# kubelet's monitor period is 10 s: three rounds rotate three times
t_ok "a rotated log appears (0.log.YYYYMMDD-hhmmss)" sh -c "for i in \$(seq 90); do ls '$hdir' | grep -qE '^0\\.log\\.[0-9]{8}-[0-9]{6}(\\.gz)?\$' && exit 0; sleep 0.5; done; exit 1"
t_ok "an older rotated log is gzipped (0.log.*.gz)" sh -c "for i in \$(seq 90); do ls '$hdir' | grep -qE '^0\\.log\\.[0-9]{8}-[0-9]{6}\\.gz\$' && exit 0; sleep 0.5; done; exit 1"
sleep 12
files=$(ls "$hdir")
log "chatty logs: $files"
t_ok "at most containerLogMaxFiles (3) files: $(echo "$files" | tr '\n' ' ')" test "$(echo "$files" | grep -c '^0\.log')" -le 3
gz=$(ls "$hdir"/0.log.*.gz | head -n 1)
t_ok "the .gz is gzip of CRI lines" sh -c "gzip -dc '$gz' | head -n 1 | grep -qE '^[0-9T:.Z+-]+ stdout F chatty line [0-9]+ '"
sleep 1
t_ok "the runtime writes the reopened 0.log (ReopenContainerLog): modified in the last 3 s" \
	test $(($(date +%s) - $(stat -c %Y "$hdir/0.log"))) -le 3
t_contains "$("$CUBELET" logs "chatty-$NODE" --tail 1)" "chatty line" "logs reads the live file after rotation"

# ---- a removed pod --------------------------------------------------------------------------------
rm -f "$M/chatty.yaml" "$M/counter.yaml" "$M/envpod.yaml"
t_ok "the pods go" wait_gone "envpod-$NODE" 120
cubelet_teardown
t_done
