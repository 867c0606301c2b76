#!/bin/bash
# Probes and lifecycle hooks with busybox: a failing exec liveness probe
# restarts its container (restart count rising, kubelet's message in the
# journal) (a); a readiness probe on a file that the test makes (cubelet exec)
# once it has looked flips the container's ready and the pod's Ready condition
# (ContainersNotReady before) (b); httpGet (busybox httpd) and tcpSocket
# probes pass (c); a startupProbe holds the liveness probe back until it
# succeeds (d); postStart writes a marker, preStop runs before SIGTERM (the
# order of the lines in the container's log) (e); a failing postStart kills
# the container (PostStartHookError) (f).
# vm-guest: b
# vm-timeout: 600
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

IMG=localhost/cubelet/busybox:1
cubelet_setup

# pod_json NAME: the pod's object of `cubelet status -o json`
pod_json() { status_json | jq -c --arg n "$1" '.pods[] | select(.name == $n)'; }
# ctr_json NAME CONTAINER JQ: a jq expression on one container of the pod
ctr_jq() { pod_json "$1" | jq -r --arg c "$2" ".containers[] | select(.name == \$c) | $3"; }
# api_cond NAME TYPE FIELD: a field of a condition of the pod in the HTTP API
api_cond() {
	curl -s "http://127.0.0.1:10255/pods" |
		jq -r --arg n "$1" --arg t "$2" ".items[] | select(.metadata.name == \$n) | .status.conditions[] | select(.type == \$t) | .$3"
}
# ctr_is POD CONTAINER FIELD WANT / ctr_ge POD CONTAINER FIELD N: for wait_for (asked again each time)
ctr_is() { [ "$(ctr_jq "$1" "$2" ".$3")" = "$4" ]; }
ctr_ge() { [ "$(ctr_jq "$1" "$2" ".$3")" -ge "$4" ] 2>/dev/null; }
cond_is() { [ "$(api_cond "$1" "$2" status)" = "$3" ]; }
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds
	local s=$1
	shift
	for _ in $(seq $((s * 2))); do
		"$@" && return 0
		sleep 0.5
	done
	return 1
}

cat >"$M/live.yaml" <<Y
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
cat >"$M/ready.yaml" <<Y
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
cat >"$M/web.yaml" <<Y
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
cat >"$M/gate.yaml" <<Y
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
cat >"$M/hooks.yaml" <<Y
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
cat >"$M/poststart-fails.yaml" <<Y
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
	t_ok "pod $p-$NODE reaches Running" wait_phase "$p-$NODE" Running 120
done

# ---- d. startupProbe gates liveness (the test creates the file once it has looked) ------------
t_is "$(ctr_jq "gate-$NODE" app .started)/$(ctr_jq "gate-$NODE" app .restarts)" false/0 \
	"gate: not started, and the failing liveness probe has not run"
t_ok "gate: cubelet exec creates the startup probe's file" "$CUBELET" exec "gate-$NODE" -- touch /tmp/started

# ---- b. readiness: not ready until /tmp/ready exists ---------------------------------------
t_is "$(ctr_jq "ready-$NODE" app .ready)" false "ready: the container is not ready before its probe passes"
t_is "$(api_cond "ready-$NODE" Ready status)/$(api_cond "ready-$NODE" Ready reason)" False/ContainersNotReady \
	"ready: the pod's Ready condition is False, ContainersNotReady"
t_is "$(api_cond "ready-$NODE" ContainersReady message)" "containers with unready status: [app]" \
	"ready: ContainersReady names the unready container"
t_is "$(ctr_jq "ready-$NODE" app .started)" true "ready: started (no startup probe) once running"
# the test creates the file once it has looked (a file the container made after
# 45 s was there already when two guests shared the host's cores)
t_ok "ready: cubelet exec creates the readiness probe's file" "$CUBELET" exec "ready-$NODE" -- touch /tmp/ready
t_ok "ready: the container becomes ready once the file exists" wait_for 90 ctr_is "ready-$NODE" app ready true
t_ok "ready: the pod's Ready condition becomes True" wait_for 10 cond_is "ready-$NODE" Ready True
t_is "$(pod_json "ready-$NODE" | jq -r .ready)" true "ready: cubelet status shows the pod ready"
t_contains "$(api_cond "ready-$NODE" Ready lastTransitionTime)" "T" "ready: the Ready condition has a lastTransitionTime"

# ---- a. liveness: exec false restarts the container ----------------------------------------
t_ok "live: the container is restarted at least twice" wait_for 120 ctr_ge "live-$NODE" app restarts 2
t_contains "$(journalctl -u cubelet --no-pager | grep 'live-')" \
	"Container app failed liveness probe, will be restarted" "live: kubelet's message in the journal"
t_ok "live: cubelet describe and status have the event Unhealthy \"Liveness probe failed: ...\"" \
	describe_event live Unhealthy "Liveness probe failed: "
t_ok "live: ... and Killing \"Container app failed liveness probe, will be restarted\"" \
	describe_event live Killing "Container app failed liveness probe, will be restarted"
t_is "$(curl -s http://127.0.0.1:10255/pods | jq -r '.items[] | select(.metadata.name == "live-'"$NODE"'") | .status.containerStatuses[0].restartCount >= 2')" \
	true "live: restartCount >= 2 in the HTTP API"

# ---- c. httpGet and tcpSocket ----------------------------------------------------------------
t_ok "web: httpd becomes ready through its httpGet probe (named port)" wait_for 60 ctr_is "web-$NODE" httpd ready true
t_is "$(ctr_jq "web-$NODE" httpd .restarts)" 0 "web: the tcpSocket liveness probe passes (no restart)"
t_is "$(ctr_jq "web-$NODE" bad .ready)" false "web: a 404 keeps the other container unready"
t_is "$(api_cond "web-$NODE" Ready message)" "containers with unready status: [bad]" "web: the pod names it"

# ---- d. (cont.) once started, liveness runs ----------------------------------------------------
t_ok "gate: once started, the liveness probe restarts it" wait_for 120 ctr_ge "gate-$NODE" app restarts 1

# ---- e. postStart and preStop -----------------------------------------------------------------
hooks_log() { find /var/log/pods -path "*hooks-${NODE}_*" -name 0.log 2>/dev/null | head -n 1; }
for _ in $(seq 60); do [ -n "$(hooks_log)" ] && break; sleep 0.5; done
log=$(hooks_log)
t_ok "hooks: the container's log exists" test -n "$log"
t_ok "hooks: postStart wrote its marker" wait_for 30 grep -q poststart "$log"
rm -f "$M/hooks.yaml"
t_ok "hooks: the pod goes away" wait_gone "hooks-$NODE" 90
# the pod leaves the table at once; its kill job runs preStop, then StopContainer
t_ok "hooks: the container got SIGTERM" wait_for 60 grep -q sigterm "$log"
lines=$(sed 's/^[^ ]* [^ ]* [^ ]* //' "$log" | grep -E '^(started|poststart|prestop|prestop-done|sigterm)$' | tr '\n' ' ')
t_contains "$lines" "prestop prestop-done sigterm" "hooks: preStop ran (to its end) before SIGTERM ($lines)"

# ---- f. a failing postStart -------------------------------------------------------------------
t_ok "psfail: the container is killed and restarted" wait_for 90 ctr_ge "psfail-$NODE" app restarts 1
t_contains "$(pod_json "psfail-$NODE" | jq -r .lastError)$(journalctl -u cubelet --no-pager | grep psfail)" \
	"PostStartHookError" "psfail: PostStartHookError"

cubelet_teardown
t_done
