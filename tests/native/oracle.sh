#!/bin/bash
# The kubelet oracle on the native lane: the real kubelet 1.34 (`build/cluster/
# kube kubelet`, make cluster-peers) and cubelet, one after the other, each from a clean node (a fresh
# private containerd, empty state), each with the same KubeletConfiguration
# (cgroupsPerQOS: false, enforceNodeAllocatable: [], reserved resources, the
# static CPU manager) and the same corpus (CORPUS_DIR: its *.yaml at once,
# then late/*.yaml one at a time once the first have settled). What each made of it is
# collected (tests/vm/tools/oracle.py collect: /pods, each container's CRI
# config and OCI spec, the order containers were created in) and compared
# (oracle.py diff): every difference a row of tests/data/oracle/accepted.tsv.
# The cgroup files of cubelet's own tree are the VM's (98-oracle): here the
# pods' groups are the runtime's.
#
# The run owns what it starts: it re-executes itself in new PID, network,
# mount and UTS namespaces (unshare --kill-child), so that everything it
# started dies with it; in its mount namespace the CNI configuration and
# IPAM state, /srv (hostPath), /var/lib (the agents' state directories at
# their default places, kubelet's seccomp root), and the three kernel tunables kubelet sets
# (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops: files of its
# own over /proc/sys) are private; pod addresses live only in its network
# namespace. The pods' groups are the runtime's default (/k8s.io/ID in each
# cgroup hierarchy, as kubelet's cgroupsPerQOS: false gives no parent):
# emptied by the kill, their empty directories removed at the end and at the
# next run's start. TAP; 77 without root, containerd, the kubelet or images.
#
#   tests/native/oracle.sh BUILD_DIR IMAGES_DIR [CORPUS_DIR [ACCEPTED.tsv]]
# ORACLE_OUT: keep the collected files there. ORACLE_WAIT: seconds after an
# agent's start before late/ (default 60: crash loops in back-off).
set -u
B=${1:?usage: oracle.sh BUILD_DIR IMAGES_DIR [CORPUS_DIR [ACCEPTED.tsv]]}
IMAGES=${2:?usage: oracle.sh BUILD_DIR IMAGES_DIR [CORPUS_DIR [ACCEPTED.tsv]]}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CORPUS=$(cd "${3:-$ROOT/tests/data/oracle}" && pwd)
ACCEPTED=${4:-$ROOT/tests/data/oracle/accepted.tsv}
KUBE=$ROOT/build/cluster/kube
ORACLE="/usr/bin/python3 $ROOT/tests/vm/tools/oracle.py"
NODE=oracle-node
n=0
# shellcheck disable=SC1091
. "$ROOT/tests/cluster/lib.sh"

# shellcheck disable=SC1091
. "$ROOT/tests/native/sandbox.sh"

if [ -z "${ORACLE_SANDBOX:-}" ]; then
	[ "$(id -u)" = 0 ] || skip "not root"
	command -v containerd >/dev/null && command -v runc >/dev/null || skip "containerd and runc (make deps)"
	[ -x "$KUBE" ] || skip "no $KUBE (make cluster-peers)"
	[ -x /usr/bin/python3 ] && command -v jq >/dev/null || skip "python3 and jq"
	[ -s "$IMAGES/pause.tar" ] || skip "no images in $IMAGES (make images)"
fi
sandbox_enter ORACLE_SANDBOX "$0" "$@"

T=$(mktemp -d /tmp/cubelet-oracle-XXXXXX)
OUT=${ORACLE_OUT:-$T/out}
mkdir -p "$OUT"
cleanup() {
	# every process of the run is in its PID namespace and dies with it;
	# the containerd stops first so that it removes its tasks' groups
	for a in kubelet cubelet; do
		[ -d "$T/$a/ctd" ] && "$ROOT/packaging/containerd/private-containerd.sh" stop "$T/$a/ctd" >/dev/null 2>&1
	done
	sandbox_umount "$T"
	sandbox_clean_groups
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

# ---- the sandbox: nothing of the host's changes ----------------------------------------------------
# (nothing below runs unless every private mount is in place: it removes /var/lib/kubelet)
if ! err=$(sandbox_mounts "$T" "$NODE" 2>&1); then
	nok "the sandbox's private mounts" "$err"
	echo "1..$n"
	exit 1
fi
sandbox_image=$(sed -n 's/^ *sandbox_image = "\(.*\)"/\1/p' "$ROOT/packaging/containerd/config.toml")
if ! archives=$($ORACLE images "$CORPUS" "$IMAGES" "$sandbox_image" 2>&1); then
	nok "the corpus's images are in $IMAGES" "$archives"
	echo "1..$n"
	exit 1
fi
ok "a sandbox of its own (PID, network, mount, UTS namespaces; private /proc/sys tunables, CNI, /srv, /var/lib, /var/log); $(echo "$archives" | wc -l) image archives for $CORPUS"

# the configuration both agents are given (kubelet's field names)
base_config() { # base_config AGENT
	cat <<-EOC
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		cgroupDriver: cgroupfs
		cgroupsPerQOS: false
		enforceNodeAllocatable: []
		cpuCFSQuota: true
		staticPodPath: $T/$1/manifests
		containerRuntimeEndpoint: unix://$T/$1/ctd/containerd.sock
		podLogsDir: $T/$1/logs
		kubeReserved: {cpu: 100m, memory: 256Mi}
		systemReserved: {memory: 256Mi}
		cpuManagerPolicy: static
		maxPods: 110
		address: 127.0.0.1
		readOnlyPort: 10255
	EOC
}

run_agent() { # run_agent kubelet|cubelet: the corpus through it, collected into $OUT/AGENT.json
	local a=$1 d=$T/$1 t0 pid sock out rc
	mkdir -p "$d/manifests" "$d/logs" /var/lib/kubelet/seccomp
	if ! sock=$(CNI_CONF_DIR=$T/cni/conf "$ROOT/packaging/containerd/private-containerd.sh" start "$d/ctd" 2>"$d/ctd.err"); then
		nok "$a: a private containerd starts" "$(cat "$d/ctd.err")"
		return 1
	fi
	for tar in $archives; do
		ctr -a "$sock" -n k8s.io images import "$tar" >/dev/null 2>>"$d/ctd.err" ||
			{ nok "$a: import $tar" "$(tail -n 3 "$d/ctd.err")"; return 1; }
	done
	[ -d "$CORPUS/seccomp" ] && cp -r "$CORPUS/seccomp/." /var/lib/kubelet/seccomp/
	base_config "$a" >"$d/config.yaml"
	if [ "$a" = kubelet ]; then
		cat >>"$d/config.yaml" <<-EOC
			authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
			authorization: {mode: AlwaysAllow}
			failSwapOn: false
		EOC
		"$KUBE" kubelet --config "$d/config.yaml" --node-ip 127.0.0.1 >"$d/agent.log" 2>&1 &
	else
		cat >>"$d/config.yaml" <<-EOC
			cubelet: {socket: $d/cubelet.sock, devicePluginDir: "", cniConfDir: $T/cni/conf}
		EOC
		"$ROOT/$B/cubelet" run --config "$d/config.yaml" --node-name "$NODE" --node-ip 127.0.0.1 \
			--cgroup-root /sys/fs/cgroup >"$d/agent.log" 2>&1 &
	fi
	pid=$!
	cp "$CORPUS"/*.yaml "$d/manifests/"
	t0=$(date +%s)
	check "$a: /pods answers" wait_until 60 curl -sf -o /dev/null http://127.0.0.1:10255/pods
	out=$($ORACLE settle 300 10255 40)
	rc=$?
	check "$a: the corpus's pods settle ($out, $(($(date +%s) - t0)) s)" test "$rc" = 0
	while [ $(($(date +%s) - t0)) -lt "${ORACLE_WAIT:-60}" ]; do sleep 1; done
	if [ -d "$CORPUS/late" ]; then
		# one at a time, in name order: both agents admit them in one order
		for f in "$CORPUS"/late/*.yaml; do
			cp "$f" "$d/manifests/"
			sleep 2
		done
		out=$($ORACLE settle 300 10255 40)
		rc=$?
		check "$a: the late pods settle ($out)" test "$rc" = 0
	fi
	sleep 3
	ORACLE_ROOT=$d $ORACLE collect "$OUT/$a.json" "$KUBE" "unix://$sock" 2>"$OUT/$a.collect.err"
	check "$a: collected ($(jq '.pods | length' "$OUT/$a.json" 2>/dev/null) pods)" test -s "$OUT/$a.json"
	curl -s http://127.0.0.1:10255/pods >"$OUT/$a.pods.json"
	check "$a: still running" kill -0 "$pid"
	kill "$pid"
	wait "$pid" 2>/dev/null
	cp "$d/agent.log" "$OUT/$a.log"
	"$ROOT/packaging/containerd/private-containerd.sh" stop "$d/ctd" >/dev/null 2>&1
	sandbox_umount "$d"
	rm -rf /var/lib/kubelet /var/lib/cubelet /var/log/containers /var/log/pods
	sandbox_clean_groups
}

run_agent kubelet
run_agent cubelet
$ORACLE diff "$OUT/kubelet.json" "$OUT/cubelet.json" "$ACCEPTED" "$ROOT/docs/differences-from-kubelet.md" \
	>"$OUT/diff.txt" 2>&1
rc=$?
# each rule used: how many items, and the first
awk '$1 == "accepted" || $1 == "todo" { k = $1 " " $2; if (!(k in n)) { first[k] = $3; order[++m] = k } n[k]++ }
	$1 == "unstable" { print "# " $0 }
	END { for (i = 1; i <= m; i++) printf "# %s: %d items (%s ...)\n", order[i], n[order[i]], first[order[i]] }' "$OUT/diff.txt"
is "$(grep -c '^\(unexplained\|undocumented\) ' "$OUT/diff.txt")" 0 \
	"kubelet and cubelet on $CORPUS: $(tail -n 1 "$OUT/diff.txt")"
[ "$rc" = 0 ] || grep '^\(unexplained\|undocumented\) ' "$OUT/diff.txt" | head -n 100 | sed 's/^/# /' | cut -c1-400

# the VM's half (98-oracle: cubelet's own cgroup tree) runs only the manifests whose pod and QoS
# cgroups can differ from a BestEffort pod's (oracle.py cgroup-corpus): every other pod kubelet ran
# here is BestEffort, with no resources and no overhead, so its cgroups are the control's (o01)
sel=$($ORACLE cgroup-corpus "$CORPUS" | sed 's|.*/||; s/\.yaml$//' | jq -R . | jq -sc .)
out=$(jq -r --argjson sel "$sel" --arg sfx "-$NODE" '[.items[] | (.metadata.name | rtrimstr($sfx)) as $m
	| select(($sel | index($m)) | not)] as $rest
	| ($rest | map(select(.status.qosClass != "BestEffort" or .spec.overhead != null
		or ([(.spec.containers + (.spec.initContainers // []))[] | .resources // {} | select(. != {})] | length > 0)
		or .spec.resources != null) | .metadata.name)) as $bad
	| "\($rest | length) \($bad | join(","))"' "$OUT/kubelet.pods.json" 2>&1)
is "${out#* }" "" "the VM's cgroup corpus ($(echo "$sel" | jq length) manifests): the ${out%% *} other pods are BestEffort, no resources, no overhead"

# the oracle itself: one value of cubelet's output doctored (the image of a container running under
# both), and, where a
# container holds exclusive CPUs, its set widened into the shared pool: each is reported unexplained
jq --slurpfile k "$OUT/kubelet.json" '(.pods | to_entries | map(select(.value.status.phase == "Running"
	and $k[0].pods[.key].status.phase == "Running")) | .[0].key) as $p
	| .pods[$p].status.containerStatuses[0].image = "doctored:1"
	| (.pods[] | .containers[]? | .oci.linux.resources.cpu | select(.cpus? and (.cpus | test("^[0-9]+$"))
		and ((.cpus | tonumber) > 0)) | .cpus) |= "0-\(.)"' "$OUT/cubelet.json" >"$OUT/doctored.json"
$ORACLE diff "$OUT/kubelet.json" "$OUT/doctored.json" "$ACCEPTED" "$ROOT/docs/differences-from-kubelet.md" \
	>"$OUT/doctored.txt" 2>&1
got=$(grep '^unexplained ' "$OUT/doctored.txt" | sed -E 's/^unexplained pods\.[^.]+\.//; s/^unexplained //; s/:.*//' | sort -u | tr '\n' ' ')
if grep -q '"oci"' "$OUT/cubelet.json" && [ "$(jq '[.pods[] | .containers[]? | .oci.linux.resources.cpu.cpus? // empty
	| select(test("^[1-9][0-9]*$"))] | length' "$OUT/cubelet.json")" -gt 0 ]; then
	contains "$got" "cpu_shape.problems" "the oracle reports an exclusive cpuset doctored into the shared pool ($got)"
fi
contains "$got" "status.containerStatuses[" "...and a container's image doctored in cubelet's status"
echo "1..$n"
