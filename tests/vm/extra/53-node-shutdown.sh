#!/bin/bash
# Graceful node shutdown through logind (issue 23 part 4; kubelet's
# nodeshutdown manager): with shutdownGracePeriod 40s and
# shutdownGracePeriodCriticalPods 20s cubelet raises logind's
# InhibitDelayMaxSec with its drop-in zzz-cubelet.conf, which sorts after
# another program's zz-other.conf of 3 s (a), holds a delay inhibitor lock
# (systemd-inhibit --list) (b); on PrepareForShutdown(true) (sent with
# dbus-send as kubelet's node e2e tests do: the guest cannot power off
# under the harness) the regular pods stop first with their preStop hooks
# and min(their grace, 20 s), then the critical one (system-node-critical),
# each Failed with kubelet's reason, message and DisruptionTarget, a pod's
# app containers stopped together and its sidecar after them; a pod that
# arrives meanwhile is rejected (NodeShutdown); then the lock is released
# (c); PrepareForShutdown(false) takes it again (d).
# vm-timeout: 480
# vm-mem: 1024M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

podq() { status_json | jq -r --arg n "$1-$NODE" ".pods[] | select(.name==\$n) | $2"; }
lock_held() { systemd-inhibit --list --no-pager 2>/dev/null | grep -q '^ *cubelet .* shutdown .* delay'; }
delay_usec() { busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager \
	InhibitDelayMaxUSec | awk '{ print $2 }'; }
X=/var/lib/cubelet-shutdown-test
mkdir -p $X
cleanup() {
	systemctl stop cubelet 2>/dev/null
	rm -rf /etc/systemd/logind.conf.d/zz-other.conf /etc/systemd/logind.conf.d/zzz-cubelet.conf $X
	rmdir /etc/systemd/logind.conf.d 2>/dev/null
	systemctl kill -s HUP systemd-logind 2>/dev/null
}
trap cleanup EXIT

# ---- a. another program's smaller InhibitDelayMaxSec ---------------------------------------
mkdir -p /etc/systemd/logind.conf.d
printf '[Login]\nInhibitDelayMaxSec=3\n' >/etc/systemd/logind.conf.d/zz-other.conf
systemctl kill -s HUP systemd-logind
delay_is() { [ "$(delay_usec)" = "$1" ]; }
wait_until 10 delay_is 3000000
t_is "$(delay_usec)" 3000000 "a: zz-other.conf sets logind's InhibitDelayMaxUSec to 3 s"

cubelet_install
printf 'shutdownGracePeriod: 40s\nshutdownGracePeriodCriticalPods: 20s\n' >>/etc/cubelet/config.yaml
shutdown_pod regular 30
shutdown_pod quick 2
shutdown_pod critical 30 system-node-critical
# multi: two app containers that take 5 s to exit after SIGTERM, and a
# sidecar; each marks its SIGTERM (and the apps their exit) in $X
mark() { echo "read u _ </proc/uptime; echo \$u >/x/multi-$1"; }
loop='while true; do sleep 1 & wait $!; done'
cat >"$M/multi.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: multi}
spec:
  terminationGracePeriodSeconds: 30
  volumes: [{name: x, hostPath: {path: $X}}]
  initContainers:
  - name: side
    image: localhost/cubelet/busybox:1
    restartPolicy: Always
    command: [sh, -c, "trap '$(mark side-term); exit 0' TERM; $loop"]
    volumeMounts: [{name: x, mountPath: /x}]
  containers:
  - name: a
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "trap '$(mark a-term); sleep 5; $(mark a-exit); exit 0' TERM; $loop"]
    volumeMounts: [{name: x, mountPath: /x}]
  - name: b
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "trap '$(mark b-term); sleep 5; $(mark b-exit); exit 0' TERM; $loop"]
    volumeMounts: [{name: x, mountPath: /x}]
Y
systemctl start cubelet
for p in regular quick critical multi; do
	t_ok "pod $p reaches Running" wait_phase "$p-$NODE" Running 180
done
t_is "$(delay_usec)" 40000000 "a: cubelet's drop-in wins: InhibitDelayMaxUSec is the 40 s grace period"
t_is "$(cat /etc/systemd/logind.conf.d/zzz-cubelet.conf 2>/dev/null | grep -v '^#')" "$(printf '[Login]\nInhibitDelayMaxSec=40')" \
	"a: zzz-cubelet.conf holds InhibitDelayMaxSec=40"
t_ok "b: systemd-inhibit --list shows cubelet's delay lock on shutdown" wait_until 20 lock_held
t_is "$(status_json | jq -c '.gracefulShutdown | [.periodSeconds, .groups, .inhibitorLock, .shuttingDown]')" \
	'[40,[{"priority":0,"shutdownGracePeriodSeconds":20},{"priority":2000000000,"shutdownGracePeriodSeconds":20}],true,false]' \
	"b: cubelet status: 40 s, groups 0 (20 s) and 2000000000 (20 s), the lock held"

# ---- c. the shutdown -----------------------------------------------------------------------
read -r t0 _ </proc/uptime
dbus-send --system --type=signal /org/freedesktop/login1 org.freedesktop.login1.Manager.PrepareForShutdown boolean:true
t_ok "c: the pods are Failed" wait_until 60 sh -c "[ \"\$($STATUS_JSON | jq -r '[.pods[] | select(.phase == \"Failed\")] | length')\" = 4 ]"
shutdown_pod late 30
t_ok "c: a pod that arrives while the node shuts down is Failed" wait_phase "late-$NODE" Failed 60
t_is "$(podq late '.reason + ": " + .message')" \
	"NodeShutdown: Pod was rejected: Pod was rejected as the node is shutting down." \
	"c: with kubelet's reason and message (NodeShutdown, with rejectPod's prefix)"
for p in regular quick critical; do
	t_is "$(podq $p '.reason + ": " + .message')" \
		"Terminated: Pod was terminated in response to imminent node shutdown." "c: $p: kubelet's reason and message"
	t_ok "c: $p: its container had SIGTERM" wait_until 60 test -s "$X/$p-term"
done
# (quick's own 2 s grace is shorter than a container exec takes under emulation: its preStop
# may not finish in it, as with kubelet)
for p in regular critical; do
	t_ok "c: $p: its preStop hook ran" test -s "$X/$p-prestop"
done
t_is "$(curl -s http://127.0.0.1:10255/pods | jq -r --arg n "regular-$NODE" '.items[] | select(.metadata.name == $n) | .status.conditions[] | select(.type == "DisruptionTarget") | "\(.status) \(.reason) \(.message)"')" \
	"True TerminationByKubelet Pod was terminated in response to imminent node shutdown." \
	"c: /pods: regular has the DisruptionTarget condition"
rt=$(cat $X/regular-term) qt=$(cat $X/quick-term) cp=$(cat $X/critical-prestop)
since_t0() { awk -v a="$t0" -v b="$1" 'BEGIN { printf "%.1f", b - a }'; }
t_diag "since PrepareForShutdown (guest uptime $t0): quick SIGTERM $(since_t0 "$qt") s," \
	"regular SIGTERM $(since_t0 "$rt") s," \
	"critical preStop $(since_t0 "$cp") s"
# kubelet's killContainersWithSyncResult: every container at once, sidecars
# after the app containers (kuberuntime_termination_order.go). One after the
# other, the second SIGTERM would come once StopContainer of the first had
# returned, after its 5 s exit: together, they come within 5 s of each other.
t_ok "c: multi: its sidecar had SIGTERM" wait_until 30 test -s "$X/multi-side-term"
read -r at _ <"$X/multi-a-term"; read -r bt _ <"$X/multi-b-term"; read -r st _ <"$X/multi-side-term"
read -r ae _ <"$X/multi-a-exit"; read -r be _ <"$X/multi-b-exit"
t_diag "multi, since PrepareForShutdown: SIGTERM a $(since_t0 "$at") s," \
	"b $(since_t0 "$bt") s; a exited $(since_t0 "$ae") s," \
	"b $(since_t0 "$be") s; SIGTERM side $(since_t0 "$st") s"
t_ok "c: multi: its two app containers had SIGTERM together (not one after the other's 5 s exit)" \
	awk -v a="$at" -v b="$bt" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 5) }'
t_ok "c: multi: its sidecar had SIGTERM once both app containers had exited" \
	awk -v s="$st" -v a="$ae" -v b="$be" 'BEGIN { exit !(s >= a && s >= b) }'
t_ok "c: the critical pod's preStop ran after the regular pods had stopped" \
	awk -v r="$rt" -v q="$qt" -v c="$cp" 'BEGIN { exit !(c >= r && c >= q) }'
t_ok "c: then the lock is released" wait_until 30 sh -c "! systemd-inhibit --list --no-pager | grep -q '^ *cubelet '"
t_is "$(status_json | jq -c '.gracefulShutdown | [.inhibitorLock, .shuttingDown, (.endedUnixMicros > .startedUnixMicros)]')" \
	'[false,true,true]' "c: cubelet status: no lock, shutting down, ended after it started"
took=$(status_json | jq '(.gracefulShutdown.endedUnixMicros - .gracefulShutdown.startedUnixMicros) / 1000000')
t_diag "cubelet released the lock $took s after PrepareForShutdown"
t_ok "c: within the 40 s grace period (+1 s): each group ends when its pods have stopped or its period has passed" \
	awk -v t="$took" 'BEGIN { exit !(t > 0 && t <= 41) }'

# ---- d. cancelled ------------------------------------------------------------------------
dbus-send --system --type=signal /org/freedesktop/login1 org.freedesktop.login1.Manager.PrepareForShutdown boolean:false
t_ok "d: PrepareForShutdown(false): cubelet takes the lock again" wait_until 30 lock_held
t_is "$(status_json | jq -c '.gracefulShutdown | [.inhibitorLock, .shuttingDown]')" '[true,false]' \
	"d: cubelet status: the lock held, not shutting down"
t_is "$(journalctl -u cubelet --no-pager -q | grep -c 'graceful node shutdown: logind says')" 2 \
	"d: the journal has both of logind's signals once"

rm -f "$M"/*.yaml
t_ok "the pods go" wait_until 120 sh -c "[ \"\$($STATUS_JSON | jq '.pods | length')\" = 0 ]"
cleanup
trap - EXIT
t_done
