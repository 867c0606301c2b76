#!/bin/bash
# The security context through containerd (issue 11 point 4): runAsUser and
# runAsGroup, supplementalGroups, allowPrivilegeEscalation false (NoNewPrivs),
# readOnlyRootFilesystem, a safe sysctl in the pod and hostPID (a), a dropped
# and an added capability in CapEff (b), privileged with the host's devices
# (c), procMount Default and Unmasked (c), runAsNonRoot with the root busybox image refused as kubelet does
# (CreateContainerConfigError, the pod stays, its other container runs) (d),
# and an unsafe sysctl refused at admission (SysctlForbidden) (e). Each
# container prints what it sees to its log (the CRI log under the sandbox's
# log directory) and sleeps.
# vm-guest: main
# vm-timeout: 600
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

cubelet_setup
t_is "$(systemctl is-active cubelet)" active "cubelet.service is active"

podq() { status_json | jq -r --arg n "$1-$NODE" ".pods[] | select(.name==\$n) | $2"; }
# log POD CONTAINER: the container's first run's output, without the CRI prefix
ctr_log() { cat /var/log/pods/default_"$1-$NODE"_*/"$2"/0.log 2>/dev/null | cut -d' ' -f4-; }
wait_log() { # wait_log POD CONTAINER NEEDLE
	for i in $(seq 240); do
		ctr_log "$1" "$2" | grep -q "$3" && return 0
		sleep 0.5
	done
	return 1
}

# ---- a. user, groups, no_new_privs, read-only rootfs, safe sysctl, hostPID ----------------
cat >"$M/a.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: seca}
spec:
  terminationGracePeriodSeconds: 2
  hostPID: true
  securityContext:
    runAsUser: 1000
    runAsGroup: 3000
    supplementalGroups: [4000]
    sysctls: [{name: kernel.shm_rmid_forced, value: "1"}]
  containers:
  - name: who
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"; echo "shm=$(cat /proc/sys/kernel/shm_rmid_forced)"; grep NoNewPrivs /proc/self/status; if touch /probe 2>/dev/null; then echo rootfs=writable; else echo rootfs=readonly; fi; echo "pid1=$(cat /proc/1/comm)"; echo done; sleep 3600']
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
  - name: caps
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'grep -E "^(CapEff|NoNewPrivs)" /proc/self/status; echo "uid=$(id -u)"; if touch /probe 2>/dev/null; then echo rootfs=writable; else echo rootfs=readonly; fi; echo done; sleep 3600']
    securityContext:
      runAsUser: 0
      capabilities: {add: [NET_ADMIN], drop: [NET_RAW]}
Y
# ---- c. privileged ---------------------------------------------------------------------
cat >"$M/c.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: secc}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: priv
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'if [ -e /dev/kmsg ]; then echo kmsg=yes; else echo kmsg=no; fi; grep CapEff /proc/self/status; echo done; sleep 3600']
    securityContext: {privileged: true}
  - name: plain
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'if [ -e /dev/kmsg ]; then echo kmsg=yes; else echo kmsg=no; fi; echo "pid1=$(cat /proc/1/comm)"; if [ -c /proc/kcore ]; then echo kcore=masked; else echo kcore=visible; fi; echo done; sleep 3600']
  - name: unmasked
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'if [ -c /proc/kcore ]; then echo kcore=masked; else echo kcore=visible; fi; echo done; sleep 3600']
    securityContext: {procMount: Unmasked}
Y
# ---- d. runAsNonRoot with a root image --------------------------------------------------
cat >"$M/d.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: secd}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: nonroot
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    securityContext: {runAsNonRoot: true}
  - name: other
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
Y
# ---- e. an unsafe sysctl ----------------------------------------------------------------
cat >"$M/e.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: sece}
spec:
  terminationGracePeriodSeconds: 2
  securityContext:
    sysctls: [{name: kernel.msgmax, value: "65536"}]
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
Y

t_ok "seca reaches Running" wait_phase "seca-$NODE" Running 180
t_ok "seca/who printed its view" wait_log seca who done
t_ok "seca/caps printed its view" wait_log seca caps done
who=$(ctr_log seca who)
t_diag "seca/who: $(echo "$who" | tr '\n' ' ')"
t_contains "$who" "uid=1000 gid=3000 " "runAsUser 1000 / runAsGroup 3000: id -u is 1000, id -g 3000"
t_contains "$who" " 4000" "supplementalGroups: 4000 among id -G"
t_contains "$who" "shm=1" "the safe sysctl kernel.shm_rmid_forced=1 is set in the pod"
t_contains "$who" "NoNewPrivs:	1" "allowPrivilegeEscalation false: NoNewPrivs 1 in /proc/self/status"
t_contains "$who" "rootfs=readonly" "readOnlyRootFilesystem: a write to / fails"
t_contains "$who" "pid1=systemd" "hostPID: PID 1 is the host's systemd"
caps=$(ctr_log seca caps)
t_diag "seca/caps: $(echo "$caps" | tr '\n' ' ')"
eff=$(echo "$caps" | awk '/^CapEff/ { print $2 }')
if [ -n "$eff" ]; then
	t_is "$(( 0x$eff >> 13 & 1 ))" 0 "capabilities drop NET_RAW: bit 13 absent from CapEff ($eff)"
	t_is "$(( 0x$eff >> 12 & 1 ))" 1 "capabilities add NET_ADMIN: bit 12 present in CapEff ($eff)"
	t_is "$(( 0x$eff & 1 ))" 1 "the runtime's default CAP_CHOWN stays"
else
	t_fail "CapEff read" "$caps"
fi
t_contains "$caps" "NoNewPrivs:	0" "allowPrivilegeEscalation unset: NoNewPrivs 0"
t_contains "$caps" "uid=0" "the container's runAsUser 0 overrides the pod's 1000"
t_contains "$caps" "rootfs=writable" "without readOnlyRootFilesystem / is writable"

t_ok "secc reaches Running" wait_phase "secc-$NODE" Running 180
t_ok "secc/priv printed its view" wait_log secc priv done
t_ok "secc/plain printed its view" wait_log secc plain done
priv=$(ctr_log secc priv)
t_diag "secc/priv: $(echo "$priv" | tr '\n' ' ')"
if [ -e /dev/kmsg ]; then
	t_contains "$priv" "kmsg=yes" "privileged: the host's /dev/kmsg is there"
	t_contains "$(ctr_log secc plain)" "kmsg=no" "not privileged: no /dev/kmsg"
else
	t_skip "privileged sees /dev/kmsg" "the guest has no /dev/kmsg"
	t_skip "plain lacks /dev/kmsg" "the guest has no /dev/kmsg"
fi
peff=$(echo "$priv" | awk '/^CapEff/ { print $2 }')
t_is "${peff:-none}" "$(awk '/^CapEff/ { print $2 }' /proc/self/status)" "privileged: every capability of the host's root"
t_contains "$(ctr_log secc plain)" "pid1=sh" "without hostPID the container is PID 1 of its own namespace"
t_contains "$(ctr_log secc plain)" "kcore=masked" "procMount Default: /proc/kcore is masked"
t_ok "secc/unmasked printed its view" wait_log secc unmasked done
t_contains "$(ctr_log secc unmasked)" "kcore=visible" "procMount Unmasked: /proc/kcore is not masked"

# d: the container that may not run waits with kubelet's reason; the other runs
for i in $(seq 240); do
	[ "$(podq secd '.containers[] | select(.name=="nonroot") | .waitingReason')" = CreateContainerConfigError ] && break
	sleep 0.5
done
t_is "$(podq secd '.containers[] | select(.name=="nonroot") | .waitingReason')" CreateContainerConfigError \
	"runAsNonRoot with the root busybox image: waiting CreateContainerConfigError"
t_is "$(podq secd '.containers[] | select(.name=="nonroot") | .waitingMessage')" \
	"container has runAsNonRoot and image will run as root (pod: \"secd-${NODE}_default($(podq secd .uid))\", container: nonroot)" \
	"with kubelet's message"
for i in $(seq 120); do
	[ "$(podq secd '.containers[] | select(.name=="other") | .state')" = Running ] && break
	sleep 0.5
done
t_is "$(podq secd '.containers[] | select(.name=="other") | .state')" Running "the pod's other container runs"
t_is "$(podq secd .phase)" Running "the pod stays (Running with one container waiting)"
t_is "$(podq seca .phase)" Running "other pods are unaffected"
t_contains "$("$CUBELET" status 2>&1)" "(CreateContainerConfigError)" "cubelet status shows the reason"

# e: admission refuses the unsafe sysctl
t_ok "sece is Failed" wait_phase "sece-$NODE" Failed 60
t_is "$(podq sece .reason)" SysctlForbidden "with reason SysctlForbidden"
t_is "$(podq sece .message)" 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted' \
	"and kubelet's message"
t_is "$(ctr -n k8s.io containers ls -q "labels.\"cubelet.io/pod-name\"==sece-$NODE" | wc -l)" 0 \
	"nothing of it reached containerd"

cubelet_teardown
t_done
