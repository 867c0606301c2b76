#!/bin/bash
# One real control-plane workload (issue 11 point 13): kubeadm 1.28's etcd
# static pod (tests/vm/data/etcd.yaml: hostPath /var/lib/etcd, hostNetwork,
# system-node-critical, startupProbe and livenessProbe httpGet on
# 127.0.0.1:2381) with Debian's etcd in localhost/cubelet/etcd:1. It becomes
# Running and Ready, its data lands in the hostPath, it survives a cubelet
# restart with the same container ID, and `etcdctl endpoint health` from the
# node answers.
# Where this cubelet still refuses the manifest (`cubelet plan` exit 2: no
# hostPath volumes or probes yet), the full checks are skipped with the
# reason, and a copy without the volume and the probes proves the image and
# kubeadm's command line instead.
# vm-guest: main
# vm-timeout: 420
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

ETCDCTL="etcdctl --endpoints=http://127.0.0.1:2379"
MANIFEST=$VM_REPO/tests/vm/data/etcd.yaml
export ETCDCTL_API=3

cubelet_install
images=${VM_IMAGES:-/tmp/images}
if [ ! -f "$images/etcd.tar" ]; then
	t_skip "etcd image" "no $images/etcd.tar (etcd-server not installed where the images were built)"
	t_done
	exit 0
fi
t_ok "the etcd image imports" sh -c "ctr -n k8s.io images import '$images/etcd.tar' >>'$VM_OUT/scenario.log' 2>&1"
command -v etcdctl >/dev/null || t_fail "etcdctl is on the node (etcd-client)"
systemctl daemon-reload
systemctl start cubelet
t_is "$(systemctl is-active cubelet)" active "cubelet.service is active"

# drops the blocks of livenessProbe, startupProbe, volumeMounts and volumes
strip() {
	awk 'function indent(s) { match(s, /^ */); return RLENGTH }
	BEGIN { skip = -1 }
	{
		if (skip >= 0) {
			i = indent($0)
			if (i > skip || (i == skip && substr($0, i + 1, 2) == "- ")) next
			skip = -1
		}
		if ($0 ~ /^ *(livenessProbe|startupProbe|volumeMounts|volumes):/) { skip = indent($0); next }
		print
	}' "$1"
}

ctr_id() { ctr_field "etcd-$NODE" etcd id; }
healthy() { # healthy SECONDS: etcdctl endpoint health answers
	for i in $(seq $(($1 * 2))); do
		$ETCDCTL endpoint health >"$VM_OUT/health.out" 2>&1 && return 0
		sleep 0.5
	done
	return 1
}

# the common part: Running, healthy, a key written, a cubelet restart keeps the container
run_checks() { # run_checks WHAT
	t_ok "$1: etcd-$NODE reaches Running" wait_phase "etcd-$NODE" Running 180
	t_ok "$1: etcdctl endpoint health answers from the node" healthy 90
	t_contains "$(cat "$VM_OUT/health.out")" "127.0.0.1:2379 is healthy" "$1: etcd says it is healthy"
	t_contains "$(curl -s 'http://127.0.0.1:2381/health?exclude=NOSPACE&serializable=true')" '"health":"true"' \
		"$1: the metrics listener answers /health on 127.0.0.1:2381 (the probes' URL)"
	t_is "$($ETCDCTL put cubelet/probe ok 2>&1)" OK "$1: etcdctl put"
	id=$(ctr_id)
	t_ok "$1: the container has an ID ($id)" test -n "$id"
	systemctl restart cubelet
	t_is "$(systemctl is-active cubelet)" active "$1: cubelet restarted"
	sleep 3
	t_is "$(ctr_id)" "$id" "$1: after the restart, the same container ID (adopted, not recreated)"
	t_is "$($ETCDCTL get --print-value-only cubelet/probe 2>&1)" ok "$1: the key is still there"
	t_contains "$("$CUBELET" logs -n kube-system "etcd-$NODE")" 'etcd Version: ' "$1: cubelet logs shows etcd's log"
}

plan_out=$("$CUBELET" plan "$MANIFEST" 2>&1)
plan_rc=$?
if [ "$plan_rc" -ne 0 ]; then
	reason=$(printf '%s\n' "$plan_out" | grep -o 'spec[^;"]*not supported by cubelet' | head -n 3 | tr '\n' ';')
	log "cubelet plan refuses the kubeadm manifest: $plan_out"
	t_pass "cubelet plan refuses the full manifest loudly (exit $plan_rc): $reason"
	# the image and kubeadm's command line, without the volume and the probes
	strip "$MANIFEST" >"$M/etcd.yaml"
	t_ok "the copy without volume and probes is accepted by cubelet plan" "$CUBELET" plan "$M/etcd.yaml"
	run_checks "bare copy"
	t_skip "the full manifest: Ready through the startup and liveness probes" "cubelet plan refuses it: $reason"
	t_skip "the full manifest: data in the hostPath /var/lib/etcd" "cubelet plan refuses it: $reason"
	rm -f "$M/etcd.yaml"
	t_ok "the pod goes" wait_gone "etcd-$NODE" 120
	cubelet_teardown
	t_done
	exit 0
fi

# ---- the full kubeadm manifest ------------------------------------------------------------------
rm -rf /var/lib/etcd
cp "$MANIFEST" "$M/etcd.yaml"
run_checks "kubeadm manifest"
t_ok "the data lands in the hostPath: /var/lib/etcd/member/snap/db" test -s /var/lib/etcd/member/snap/db
t_ok "etcd-$NODE becomes Ready (startup then liveness probes pass)" \
	sh -c "for i in \$(seq 240); do [ \"\$($STATUS_JSON | jq -r '.pods[] | select(.name == \"etcd-$NODE\") | .containers[0].ready')\" = true ] && exit 0; sleep 0.5; done; exit 1"
t_is "$(ctr_field "etcd-$NODE" etcd restarts)" 0 "no restart: the liveness probe passes"
rm -f "$M/etcd.yaml"
t_ok "the pod goes" wait_gone "etcd-$NODE" 120
t_ok "its data stays in the hostPath after the pod" test -s /var/lib/etcd/member/snap/db
cubelet_teardown
t_done
