#!/bin/bash
# The real kubelet as a differential oracle: kubelet 1.34 (build/cluster/kube,
# standalone: staticPodPath, its read-only port) and cubelet, one after the
# other on this guest, each from a clean node (node-state.sh reset between
# them), each with the same KubeletConfiguration (cgroupfs, reserved
# resources, the static CPU manager) and the same corpus (tests/data/oracle/:
# the *.yaml at once, then late/*.yaml once the first are settled: a hostPort
# clash and admission decisions that depend on what runs). What each agent
# made of it is collected (tests/vm/tools/oracle.py collect: /pods, every
# cgroup file under kubepods, each container's CRI config and OCI spec, the
# order containers were created in) and compared: every difference must be a
# row of tests/data/oracle/accepted.tsv, "deliberate" ones also in
# docs/differences-from-kubelet.md's oracle table; "todo" rows are printed.
# vm-guest: own
# vm-tier: full
# vm-timeout: 3700
# vm-mem: 3072M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

kube_or_skip "the kubelet oracle"
# shellcheck disable=SC1091
. "$VM_LIB/agents.sh"
CORPUS=$VM_REPO/tests/data/oracle
ORACLE="/usr/bin/python3 $VM_REPO/tests/vm/tools/oracle.py"
n_first=$(find "$CORPUS" -maxdepth 1 -name '*.yaml' | wc -l)
n_late=$(find "$CORPUS/late" -maxdepth 1 -name '*.yaml' | wc -l)

# settled N [POD...]: N pods listed, none being created (Pending without
# container statuses, or a container waiting in ContainerCreating or
# PodInitializing) but the PODs named (those the agent cannot start), and
# their phases and container states the same for 20 s (a container that
# restarted counts as one state)
settled() {
	local n=$1 now doc digest creating
	shift
	now=$(date +%s)
	doc=$(podlist | jq -c --argjson n "$n" --arg skip " $* " 'if (.items | length) < $n then null else
		{digest: ([.items[] | [.metadata.name, .status.phase,
			[.status.containerStatuses[]? | if .restartCount > 0 then "restarted" else (.state | keys[0]) end]]] | sort),
		 creating: ([.items[] | select(.status.phase == "Pending" or .status.phase == "Running")
			| select(. as $p | $skip | contains(" " + $p.metadata.name + " ") | not)
			| select((.status.phase == "Pending" and ([.status.containerStatuses[]?] | length) == 0) or
				([.status.containerStatuses[]?, .status.initContainerStatuses[]?
				  | select(.state.waiting.reason == "ContainerCreating" or .state.waiting.reason == "PodInitializing")]
				 | length) > 0)] | length)} end')
	digest=$(jq -c '.digest' <<<"$doc" 2>/dev/null)
	creating=$(jq -r '.creating' <<<"$doc" 2>/dev/null)
	if [ -z "$digest" ] || [ "$digest" = null ] || [ "$digest" != "${_digest:-}" ]; then
		_digest=$digest _since=$now
		return 1
	fi
	[ "${creating:-1}" = 0 ] && [ $((now - _since)) -ge 20 ]
}

# run_agent kubelet|cubelet: the corpus through it, collected into $VM_OUT/AGENT.json
run_agent() {
	local agent=$1 t0 stuck=""
	# standalone, kubelet cannot mount a projected volume: that pod stays
	# ContainerCreating (accepted: oracle-standalone-api)
	[ "$agent" = kubelet ] && stuck=o28-projected-$NODE_LC
	agent_configure "$agent" "cpuManagerPolicy: static"
	mkdir -p /var/lib/kubelet/seccomp /srv/oracle
	cp -r "$CORPUS/seccomp/." /var/lib/kubelet/seccomp/
	cp "$CORPUS"/*.yaml "$M"/
	t0=$(date +%s.%N)
	agent_start "$agent"
	_digest=""
	# (kubelet takes ~270 s alone on a guest and ~490 s in make test,
	# beside another guest, on a 2.6 GHz host; on a 2.45 GHz one with two
	# more guests beside it, 900 s were not enough: the deadline leaves room)
	# shellcheck disable=SC2086
	until settled "$n_first" $stuck || [ "$(since "$t0")" -ge 1500 ]; do sleep 2; done
	# shellcheck disable=SC2086
	t_ok "$agent: the $n_first pods of the corpus settle: none being created, phases and container states the same for 20 s ($(since "$t0") s)" settled "$n_first" $stuck
	# crash loops and activeDeadlineSeconds: 120 s after the start
	while [ "$(since "$t0")" -lt 120 ]; do sleep 2; done
	cp "$CORPUS"/late/*.yaml "$M"/
	t1=$(date +%s.%N)
	_digest=""
	# shellcheck disable=SC2086
	until settled $((n_first + n_late)) $stuck || [ "$(since "$t1")" -ge 600 ]; do sleep 2; done
	# shellcheck disable=SC2086
	t_ok "$agent: the $n_late late pods settle ($(since "$t1") s)" settled $((n_first + n_late)) $stuck
	sleep 5
	$ORACLE collect "$VM_OUT/$agent.json" "$KUBE" 2>"$VM_OUT/$agent.collect.err"
	t_ok "$agent: collected ($(jq '.pods | length' "$VM_OUT/$agent.json") pods)" test -s "$VM_OUT/$agent.json"
	podlist >"$VM_OUT/$agent.pods.json"
	[ "$agent" = kubelet ] && ps -o rss= -C kube >"$VM_OUT/kubelet.rss"
	agent_stop "$agent" "$VM_OUT/$agent.log"
}

# (for working on cubelet: /tmp/oracle-agents on the host, "cubelet", runs
# only cubelet's half; the comparison is then left to oracle.py diff)
agents=$(cat /tmp/oracle-agents 2>/dev/null || echo kubelet cubelet)
for agent in $agents; do
	if [ "$agent" != "${agents%% *}" ]; then
		bash "$VM_LIB/node-state.sh" reset >"$VM_OUT/reset.txt" 2>&1
		rm -rf /srv/oracle
		t_node_clean
	fi
	run_agent "$agent"
done
if [ "$agents" != "kubelet cubelet" ]; then
	t_done
	exit 0
fi

$ORACLE diff "$VM_OUT/kubelet.json" "$VM_OUT/cubelet.json" "$CORPUS/accepted.tsv" \
	"$VM_REPO/docs/differences-from-kubelet.md" >"$VM_OUT/diff.txt" 2>&1
rc=$?
summary=$(tail -n 1 "$VM_OUT/diff.txt")
t_diag "$(grep '^\(accepted\|todo\) ' "$VM_OUT/diff.txt")"
t_is "$(grep -c '^\(unexplained\|undocumented\) ' "$VM_OUT/diff.txt")" 0 \
	"kubelet and cubelet on $((n_first + n_late)) manifests: $summary" 
[ "$rc" = 0 ] || t_diag "$(grep '^\(unexplained\|undocumented\) ' "$VM_OUT/diff.txt" | head -n 200)"
t_done
