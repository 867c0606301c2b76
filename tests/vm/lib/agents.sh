# kubelet and cubelet as peers on one guest: the kubelet oracle
# (scenarios/98-oracle.sh) and the benchmark peer (bench/peer.sh) run each of
# them the same way, from the same KubeletConfiguration. Source after
# cubelet.sh and kube_or_skip (KUBE):
#   agent_configure AGENT [YAML...]  cubelet_install, the common configuration
#                                plus the YAML lines given; nothing started
#   agent_start AGENT            AGENT started (kubelet: the transient unit
#                                kubelet-peer; cubelet: its service), back
#                                once /pods answers
#   agent_stop AGENT [LOG]       stopped; its journal into LOG first
#   agent_pid AGENT              the running agent's PID
#   podlist                      /pods on the read-only port (10255)
#   since T0 [DECIMALS]          seconds since T0 (date +%s.%N)
#   peer_table_head, peer_row WHAT KEY GOAL
#                                the benchmarks' table of ratios cubelet/kubelet
#                                (R[kubelet.KEY], R[cubelet.KEY]), through say
# KUBELET_BIN, when set, is the kubelet binary (build/cluster/kubelet, kubelet
# alone); else `$KUBE kubelet`. AGENT_KUBECONFIG and AGENT_NODE, when set:
# the agent joins that API server as node AGENT_NODE (kubelet:
# --hostname-override, cubelet: --node-name).
AGENT_CONFIG_KUBELET=/etc/kubelet-peer/config.yaml

# the configuration both agents are given (kubelet's field names)
agent_base_config() {
	cat <<'YAML'
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cpuCFSQuota: true
podPidsLimit: -1
staticPodPath: /etc/kubernetes/manifests
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
kubeReserved: {cpu: 100m, memory: 256Mi}
systemReserved: {cpu: 100m, memory: 256Mi}
maxPods: 110
address: 127.0.0.1
readOnlyPort: 10255
YAML
}

since() { awk -v s="$1" -v e="$(date +%s.%N)" -v d="${2:-0}" 'BEGIN { printf "%.*f", d, e - s }'; }
podlist() { curl -s --max-time 20 http://127.0.0.1:10255/pods; }

peer_table_head() {
	say ""
	say "| $(printf '%-44s' measure) |    kubelet |    cubelet | cub/kl | goal     |"
	say "|----------------------------------------------|-----------:|-----------:|-------:|----------|"
}
peer_row() { # peer_row WHAT KEY GOAL: n/a where either figure is not a number, or kubelet's is 0
	local k=${R[kubelet.$2]} c=${R[cubelet.$2]}
	say "$(printf '| %-44s | %10s | %10s | %6s | %-8s |' "$1" "$k" "$c" \
		"$(awk -v a="$c" -v b="$k" 'BEGIN { if (a ~ /^[0-9.]+$/ && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }')" "$3")"
}

# agent_api_flags AGENT: the flags that join AGENT_KUBECONFIG's API server
agent_api_flags() {
	[ -n "${AGENT_KUBECONFIG:-}" ] || return 0
	if [ "$1" = kubelet ]; then
		echo "--kubeconfig $AGENT_KUBECONFIG --hostname-override $AGENT_NODE"
	else
		echo "--kubeconfig $AGENT_KUBECONFIG --node-name $AGENT_NODE"
	fi
}

agent_configure() {
	local agent=$1 line
	shift
	cubelet_install
	if [ "$agent" = kubelet ]; then
		mkdir -p "$(dirname "$AGENT_CONFIG_KUBELET")"
		{
			agent_base_config
			for line in "$@"; do echo "$line"; done
			echo "authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}"
			echo "authorization: {mode: AlwaysAllow}"
			echo "failSwapOn: false"
		} >"$AGENT_CONFIG_KUBELET"
	else
		{
			agent_base_config
			for line in "$@"; do echo "$line"; done
			echo "cubelet: {stateDir: /var/lib/cubelet, socket: /run/cubelet/cubelet.sock}"
		} >/etc/cubelet/config.yaml
		mkdir -p /etc/systemd/system/cubelet.service.d
		printf '[Service]\nExecStart=\nExecStart=%s run --config /etc/cubelet/config.yaml --node-ip 127.0.0.1 %s\n' \
			"$CUBELET" "$(agent_api_flags cubelet)" >/etc/systemd/system/cubelet.service.d/peer.conf
		systemctl daemon-reload
	fi
}

agent_start() {
	if [ "$1" = kubelet ]; then
		# shellcheck disable=SC2086
		systemd-run --unit kubelet-peer ${KUBELET_BIN:-$KUBE kubelet} --config "$AGENT_CONFIG_KUBELET" --node-ip 127.0.0.1 \
			$(agent_api_flags kubelet) >/dev/null
	else
		systemctl start cubelet
	fi
	for _ in $(seq 120); do podlist >/dev/null 2>&1 && return 0; sleep 0.5; done
	log "agent_start $1: /pods did not answer in 60 s"
	return 1
}

agent_unit() { if [ "$1" = kubelet ]; then echo kubelet-peer; else echo cubelet; fi; }
agent_pid() { systemctl show -p MainPID --value "$(agent_unit "$1")"; }

agent_stop() {
	[ -n "${2:-}" ] && journalctl -u "$(agent_unit "$1")" --no-pager >"$2"
	systemctl stop "$(agent_unit "$1")"
}
