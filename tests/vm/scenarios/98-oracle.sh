#!/bin/bash
# The real kubelet as a differential oracle for what only cubelet's own
# cgroup v2 tree shows: kubelet 1.34 (build/cluster/kube, standalone:
# staticPodPath, its read-only port) and cubelet, one after the other on this
# guest, each from a clean node (node-state.sh reset between them), each with
# the same KubeletConfiguration (cgroupfs, reserved resources, the static CPU
# manager) and the corpus's cgroup manifests (oracle.py cgroup-corpus
# tests/data/oracle: those with resources or overhead and the BestEffort
# control o01, at once, then late/'s one at a time once the first are
# settled: the second exclusive CPU, the pods that do not fit). What each
# agent made of it is collected (tests/vm/tools/oracle.py collect: /pods,
# every cgroup file under kubepods, each container's CRI config and OCI spec,
# the order containers were created in) and compared: every difference must
# be a row of tests/data/oracle/accepted.tsv, "deliberate" ones also in
# docs/differences-from-kubelet.md's oracle table; "todo" rows are printed.
# The whole corpus, cgroup files aside, is the native lane's
# (tests/native/oracle.sh), which also checks that every pod left out here
# is BestEffort without resources or overhead: its cgroups are o01's.
# vm-guest: own
# vm-timeout: 2400
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
SELECTED=$($ORACLE cgroup-corpus "$CORPUS")
FIRST=$(echo "$SELECTED" | grep -v '/late/')
LATE=$(echo "$SELECTED" | grep '/late/')
t_diag "the cgroup corpus: $(echo "$FIRST" | wc -l) manifests, then $(echo "$LATE" | wc -l) late: $(echo "$SELECTED" | sed 's|.*/||; s/\.yaml$//' | tr '\n' ' ')"

# run_agent kubelet|cubelet: the corpus through it, collected into $VM_OUT/AGENT.json
run_agent() {
	local agent=$1 t0 t1 out rc tar f
	agent_configure "$agent" "cpuManagerPolicy: static"
	# the images the corpus names, found by name in the image archives
	for tar in $($ORACLE images "$CORPUS" "$images"); do
		ctr -n k8s.io images import "$tar" >>"$VM_OUT/scenario.log" 2>&1
	done
	mkdir -p /var/lib/kubelet/seccomp /srv/oracle
	cp -r "$CORPUS/seccomp/." /var/lib/kubelet/seccomp/
	for f in $FIRST; do cp "$f" "$M"/; done
	t0=$(date +%s.%N)
	agent_start "$agent"
	# settled: phases and container states the same for 20 s, none being
	# created unless nothing changed for 120 s (oracle.py settle; no count: a manifest an
	# agent refuses never becomes a pod). (kubelet takes ~270 s alone on a
	# guest and ~490 s in make test, beside another guest, on a 2.6 GHz
	# host; on a 2.45 GHz one with two more guests beside it, 900 s were not
	# enough: the deadline leaves room)
	out=$($ORACLE settle 1500)
	rc=$?
	t_ok "$agent: the corpus's pods settle ($out)" test "$rc" = 0
	# one at a time, in name order: both agents admit them in one order
	for f in $LATE; do
		cp "$f" "$M"/
		sleep 10
	done
	t1=$(date +%s.%N)
	out=$($ORACLE settle 600)
	rc=$?
	t_ok "$agent: the late pods settle ($out, $(since "$t1") s)" test "$rc" = 0
	sleep 5
	$ORACLE collect "$VM_OUT/$agent.json" "$KUBE" 2>"$VM_OUT/$agent.collect.err"
	t_ok "$agent: collected ($(jq '.pods | length' "$VM_OUT/$agent.json") pods)" test -s "$VM_OUT/$agent.json"
	podlist >"$VM_OUT/$agent.pods.json"
	[ "$agent" = kubelet ] && ps -o rss= -C kube >"$VM_OUT/kubelet.rss"
	agent_stop "$agent" "$VM_OUT/$agent.log"
}

run_agent kubelet
bash "$VM_LIB/node-state.sh" reset >"$VM_OUT/reset.txt" 2>&1
rm -rf /srv/oracle
t_node_clean
run_agent cubelet

$ORACLE diff "$VM_OUT/kubelet.json" "$VM_OUT/cubelet.json" "$CORPUS/accepted.tsv" \
	"$VM_REPO/docs/differences-from-kubelet.md" >"$VM_OUT/diff.txt" 2>&1
rc=$?
summary=$(tail -n 1 "$VM_OUT/diff.txt")
# each rule used: how many items, and the first (every line in diff.txt)
t_diag "$(awk '$1 == "accepted" || $1 == "todo" { k = $1 " " $2; if (!(k in n)) { first[k] = $3; order[++m] = k } n[k]++ }
	END { for (i = 1; i <= m; i++) printf "%s: %d items (%s ...)\n", order[i], n[order[i]], first[order[i]] }' "$VM_OUT/diff.txt")"
t_is "$(grep -c '^\(unexplained\|undocumented\) ' "$VM_OUT/diff.txt")" 0 \
	"kubelet and cubelet on the corpus: $summary"
[ "$rc" = 0 ] || t_diag "$(grep '^\(unexplained\|undocumented\) ' "$VM_OUT/diff.txt" | head -n 200)"
# cubelet's pods stopped (agent_stop leaves them running): the guest's
# poweroff would wait 90 s for their processes
bash "$VM_LIB/node-state.sh" reset >"$VM_OUT/reset-end.txt" 2>&1
t_done
