#!/bin/bash
# A real Kubernetes control plane on 127.0.0.1 for cubelet's cluster tests:
# Debian's etcd, then kube-apiserver (Node,RBAC authorization, NodeRestriction
# and the default admission plugins, ServiceAccount included),
# kube-controller-manager and kube-scheduler, all from build/cluster/kube
# (tests/cluster/main.go) and the certificates of tests/cluster/certs.sh.
# Loopback only: etcd 127.0.0.1:2379, the API server 127.0.0.1:6443.
#
# With METRICS_SERVER=1, metrics-server too (build/cluster/kube's, for
# kubectl top): on 127.0.0.1:4443, an aggregated API (v1beta1.metrics.k8s.io)
# behind an ExternalName Service "localhost" (an Endpoints object may not name
# a loopback address), scraping each node's kubelet server at its InternalIP
# and daemonEndpoints port with the admin's credentials, verified by the CA.
#
#   tests/cluster/control-plane.sh start [-b KUBE] [-d DIR] [-n NODE]
#   tests/cluster/control-plane.sh metrics [-b KUBE] [-d DIR]   (metrics-server later)
#   tests/cluster/control-plane.sh metrics-stop [-b KUBE] [-d DIR] (and gone again)
#   tests/cluster/control-plane.sh stop [-d DIR]
#
# With LEAN=1 (the VM's scenarios, where every CPU cycle is emulated): no
# API Priority and Fairness, the controller manager's controllers a cluster
# node's tests use (deployments and replica sets, the garbage collector,
# service accounts and their tokens, kube-root-ca.crt, node lifecycle, pod
# GC) and neither it nor the scheduler serving HTTPS (no self-signed key to
# make), etcd's raft ticking every 500 ms instead of 100 and no API server
# identity Lease renewed every 10 s. Side by side in a 2 GiB guest, with
# GOMAXPROCS=1 as the VM sets it (tests/vm/guest/etc/systemd/system.conf.d),
# the control plane was ready in 134 s instead of 304 s; idle, the last two
# took its guest CPU from 1,762 to 1,600 ticks a minute (etcd 530 → 406, the
# API server 1,108 → 940).
#
# CP_API_FLAGS, CP_CM_FLAGS, CP_SCHED_FLAGS: more flags (words) for the API
# server, the controller manager and the scheduler (make bench-scale raises
# the two clients' request rates for its Deployments of thousands of pods).
#
# DIR (default /run/cubelet-cluster) holds pki/, etcd's data, the logs
# (*.log) and the PIDs; start returns once /readyz answers ok (exit 1 with
# the API server's log tail after TIMEOUT seconds, default 300: under
# qemu's emulation the first start takes minutes).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}
shift || true
KUBE=$HERE/../../build/cluster/kube
DIR=/run/cubelet-cluster
NODE=$(hostname | tr '[:upper:]' '[:lower:]')
TIMEOUT=${TIMEOUT:-300}
while getopts b:d:n: o; do
	case $o in
	b) KUBE=$OPTARG ;;
	d) DIR=$OPTARG ;;
	n) NODE=$OPTARG ;;
	*) exit 2 ;;
	esac
done

stop() {
	local p
	for p in metrics-server scheduler controller-manager apiserver etcd; do
		[ -f "$DIR/$p.pid" ] && kill "$(cat "$DIR/$p.pid")" 2>/dev/null
	done
	for p in metrics-server scheduler controller-manager apiserver etcd; do
		if [ -f "$DIR/$p.pid" ]; then
			for _ in $(seq 100); do kill -0 "$(cat "$DIR/$p.pid")" 2>/dev/null || break; sleep 0.1; done
			kill -9 "$(cat "$DIR/$p.pid")" 2>/dev/null
			rm -f "$DIR/$p.pid"
		fi
	done
	return 0
}

# bg NAME COMMAND...: started in the background, its log and PID in DIR
bg() {
	local name=$1
	shift
	"$@" >"$DIR/$name.log" 2>&1 &
	echo $! >"$DIR/$name.pid"
}

LEAN_CONTROLLERS=deployment-controller,replicaset-controller,garbage-collector-controller
LEAN_CONTROLLERS+=,serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller
LEAN_CONTROLLERS+=,node-lifecycle-controller,pod-garbage-collector-controller

start() {
	local P=$DIR/pki t0 lean_etcd=() lean_api=() lean_cm=() lean_sched=()
	if [ -n "${LEAN:-}" ]; then
		lean_etcd=(--heartbeat-interval=500 --election-timeout=5000)
		lean_api=(--enable-priority-and-fairness=false --feature-gates=APIServerIdentity=false)
		lean_cm=(--secure-port=0 "--controllers=$LEAN_CONTROLLERS")
		lean_sched=(--secure-port=0)
	fi
	mkdir -p "$DIR"
	[ -f "$P/ca.crt" ] || "$HERE/certs.sh" -n "$NODE" "$P" >/dev/null
	t0=$(date +%s)
	bg etcd etcd --name cubelet-test --data-dir "$DIR/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster cubelet-test=http://127.0.0.1:2380 "${lean_etcd[@]}"
	bg apiserver "$KUBE" kube-apiserver \
		--etcd-servers=http://127.0.0.1:2379 \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=6443 \
		--tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
		--client-ca-file="$P/ca.crt" \
		--kubelet-client-certificate="$P/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$P/apiserver-kubelet-client.key" --kubelet-certificate-authority="$P/ca.crt" \
		--kubelet-preferred-address-types=InternalIP \
		--requestheader-client-ca-file="$P/ca.crt" --requestheader-allowed-names=front-proxy-client \
		--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
		--requestheader-extra-headers-prefix=X-Remote-Extra- \
		--proxy-client-cert-file="$P/front-proxy-client.crt" --proxy-client-key-file="$P/front-proxy-client.key" \
		--service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
		--endpoint-reconciler-type=none "${lean_api[@]}" ${CP_API_FLAGS:-}
	for _ in $(seq $((TIMEOUT * 2))); do
		# curl, not kubectl: the kube binary takes seconds to start under
		# the VM's emulation, and each poll took them from the API server's start
		if [ "$(curl -s --max-time 5 --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" \
			https://127.0.0.1:6443/readyz 2>/dev/null)" = ok ]; then
			# the controller manager and the scheduler once the API server's
			# RBAC bootstrap (part of /readyz) is there: they read
			# kube-system's extension-apiserver-authentication at start
			bg controller-manager "$KUBE" kube-controller-manager \
				--kubeconfig="$P/controller-manager.kubeconfig" \
				--authentication-kubeconfig="$P/controller-manager.kubeconfig" \
				--authorization-kubeconfig="$P/controller-manager.kubeconfig" \
				--bind-address=127.0.0.1 --leader-elect=false "${lean_cm[@]}" \
				--service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
				--use-service-account-credentials=true --cluster-signing-cert-file="$P/ca.crt" \
				--cluster-signing-key-file="$P/ca.key" --service-cluster-ip-range=10.0.0.0/24 \
				${NODE_MONITOR_GRACE:+--node-monitor-grace-period=$NODE_MONITOR_GRACE} ${CP_CM_FLAGS:-}
			bg scheduler "$KUBE" kube-scheduler \
				--kubeconfig="$P/scheduler.kubeconfig" \
				--authentication-kubeconfig="$P/scheduler.kubeconfig" \
				--authorization-kubeconfig="$P/scheduler.kubeconfig" \
				--bind-address=127.0.0.1 --leader-elect=false "${lean_sched[@]}" ${CP_SCHED_FLAGS:-}
			sleep 2
			for p in controller-manager scheduler; do
				kill -0 "$(cat "$DIR/$p.pid")" 2>/dev/null && continue
				echo "kube-$p exited; its log:" >&2
				tail -n 5 "$DIR/$p.log" >&2
				return 1
			done
			if [ -n "${METRICS_SERVER:-}" ] && ! metrics_server; then
				echo "metrics-server did not start; its log:" >&2
				tail -n 5 "$DIR/metrics-server.log" >&2
				return 1
			fi
			echo "control plane ready on https://127.0.0.1:6443 in $(($(date +%s) - t0)) s ($DIR)"
			return 0
		fi
		kill -0 "$(cat "$DIR/apiserver.pid")" 2>/dev/null || break
		sleep 0.5
	done
	echo "control plane not ready after $(($(date +%s) - t0)) s; kube-apiserver's log:" >&2
	tail -n 20 "$DIR/apiserver.log" >&2
	return 1
}

metrics_server() {
	local P=$DIR/pki
	mkdir -p "$DIR/metrics-server"
	bg metrics-server "$KUBE" metrics-server --secure-port=4443 --bind-address=127.0.0.1 \
		--cert-dir="$DIR/metrics-server" --kubeconfig="$P/admin.kubeconfig" \
		--authentication-kubeconfig="$P/admin.kubeconfig" --authorization-kubeconfig="$P/admin.kubeconfig" \
		--kubelet-preferred-address-types=InternalIP --kubelet-use-node-status-port \
		--kubelet-certificate-authority="$P/ca.crt" --metric-resolution=15s
	"$KUBE" kubectl --kubeconfig "$P/admin.kubeconfig" apply -f - >/dev/null <<-EOF
		apiVersion: v1
		kind: Service
		metadata: {name: metrics-server, namespace: kube-system}
		spec: {type: ExternalName, externalName: localhost, ports: [{port: 4443}]}
		---
		apiVersion: apiregistration.k8s.io/v1
		kind: APIService
		metadata: {name: v1beta1.metrics.k8s.io}
		spec:
		  group: metrics.k8s.io
		  version: v1beta1
		  service: {namespace: kube-system, name: metrics-server, port: 4443}
		  insecureSkipTLSVerify: true
		  groupPriorityMinimum: 100
		  versionPriority: 100
	EOF
	kill -0 "$(cat "$DIR/metrics-server.pid")" 2>/dev/null
}

# metrics_server_stop: its APIService and Service deleted, the process
# stopped. Left running, the API server keeps checking the APIService and
# the garbage collector's discovery reaches it every 30 s: in a guest, CPU
# taken from everything after kubectl top.
metrics_server_stop() {
	"$KUBE" kubectl --kubeconfig "$DIR/pki/admin.kubeconfig" delete --ignore-not-found -n kube-system \
		apiservice/v1beta1.metrics.k8s.io service/metrics-server >/dev/null || return 1
	if [ -f "$DIR/metrics-server.pid" ]; then
		kill "$(cat "$DIR/metrics-server.pid")" 2>/dev/null
		rm -f "$DIR/metrics-server.pid"
	fi
}

case $cmd in
start) start ;;
stop) stop ;;
metrics-stop) metrics_server_stop ;;
metrics)
	# metrics-server alone, beside a control plane started without it
	metrics_server || { echo "metrics-server did not start; its log:" >&2; tail -n 5 "$DIR/metrics-server.log" >&2; exit 1; } ;;
*) echo "usage: $0 start|stop|metrics|metrics-stop [-b KUBE] [-d DIR] [-n NODE]" >&2; exit 2 ;;
esac
