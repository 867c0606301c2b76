# Helpers for scenarios that run cubelet as a real systemd unit beside
# containerd in the guest. Source after tap.sh:
#   . "$VM_LIB/cubelet.sh"
#   cubelet_install [BIN]    images, containerd config, cubelet unit and config
#   cubelet_setup            cubelet_install, then starts cubelet
#   status_json              the status document (`cubelet status -o json`)
#   pod_field NAME FIELD     a field of pod NAME in it
#   wait_phase NAME PHASE [SECONDS]
#   plan_value MANIFEST FILE the value `cubelet plan` gives for a pod cgroup file
#   ctr_field NAME CONTAINER FIELD
#   cg_kubepods / cg_qos QOS / cg_ctr POD_PATH ID   cgroup paths of the driver
#   containerd_systemd_cgroup true|false             switch runc's SystemdCgroup
#   once_per_matrix SECTION  false in the systemd run for a driver-independent section
#   cubelet_cpu              the unit's CPU time so far (µs); unit_cpu UNIT any unit's
#   available                memory.available (bytes) as kubelet and cubelet compute it
#   hold_cmd MiB [STEP_SLEEP]  a shell command that allocates MiB, then sleeps
#   kube_or_skip WHAT        KUBE (build/cluster/kube), or WHAT skipped and the scenario ended
#
# CUBELET_DRIVER (cgroupfs, the default, or systemd; run-scenarios.sh sets it
# for the driver matrix) is written into cubelet's config as cgroupDriver, and
# containerd's runc gets the matching SystemdCgroup.
CUBELET_DRIVER=${CUBELET_DRIVER:-cgroupfs}
M=/etc/kubernetes/manifests
NODE=$(hostname)
NODE_LC=$(echo "$NODE" | tr '[:upper:]' '[:lower:]') # as an object name
CUBELET=/usr/local/bin/cubelet

log() { printf '%s\n' "$*" >>"$VM_OUT/scenario.log"; }

# cubelet_install [BINARY]: images, containerd config, the cubelet unit and
# its config (BINARY defaults to the repo's build/cubelet); nothing started
cubelet_install() {
	images=${VM_IMAGES:-}
	if [ -z "$images" ] || [ ! -f "$images/pause.tar" ]; then
		images=/tmp/images
		"$VM_REPO/packaging/images/build-images.sh" "$images" >>"$VM_OUT/scenario.log" 2>&1
	fi
	# containerd's configuration for the driver; restarted only when it
	# changes it (the guest's record has the cgroupfs driver's, guest-run.sh)
	cfg=$(mktemp)
	cp "$VM_REPO/packaging/containerd/config.toml" "$cfg"
	if [ "$CUBELET_DRIVER" = systemd ]; then
		sed -i 's/^\( *SystemdCgroup = \)false/\1true/' "$cfg"
	fi
	# the pod network's conflist, as `make install` puts it (docs/pod-fields.md "Pod network")
	cmp -s "$VM_REPO/packaging/cni/10-cubelet.conflist" /etc/cni/net.d/10-cubelet.conflist ||
		install -D -m 0644 "$VM_REPO/packaging/cni/10-cubelet.conflist" /etc/cni/net.d/10-cubelet.conflist
	if ! cmp -s "$cfg" /etc/containerd/config.toml; then
		install -D -m 0644 "$cfg" /etc/containerd/config.toml
		log "cubelet_install: $(cut -d' ' -f1 /proc/uptime) restarting containerd"
		containerd_restart
	fi
	rm -f "$cfg"
	log "cubelet_install: $(cut -d' ' -f1 /proc/uptime) importing images"
	for img in pause busybox; do
		ctr -n k8s.io images import "$images/$img.tar" >>"$VM_OUT/scenario.log" 2>&1
	done
	log "cubelet_install: $(cut -d' ' -f1 /proc/uptime) images imported"
	install -D -m 0755 "${1:-$VM_REPO/build/cubelet}" "$CUBELET"
	install -D -m 0644 "$VM_REPO/packaging/systemd/cubelet.service" /etc/systemd/system/cubelet.service
	install -D -m 0644 "$VM_REPO/packaging/cubelet.yaml" /etc/cubelet/config.yaml
	cubelet_config_driver "$CUBELET_DRIVER"
	log "cgroup driver: $CUBELET_DRIVER; containerd: $(grep 'SystemdCgroup =' /etc/containerd/config.toml)"
	mkdir -p "$M"
}

# cubelet_config_driver DRIVER: cgroupDriver in /etc/cubelet/config.yaml
cubelet_config_driver() {
	sed -i '/^cgroupDriver:/d' /etc/cubelet/config.yaml
	echo "cgroupDriver: $1" >>/etc/cubelet/config.yaml
}

# containerd_restart: containerd restarted, back once it answers (10 s at most)
containerd_restart() {
	systemctl restart containerd
	for i in $(seq 50); do ctr version >/dev/null 2>&1 && break; sleep 0.2; done
}

# containerd_systemd_cgroup true|false: runc's SystemdCgroup, containerd restarted
containerd_systemd_cgroup() {
	sed -i "s/^\( *SystemdCgroup = \).*/\1$1/" /etc/containerd/config.toml
	containerd_restart
}

# The driver's cgroup paths (relative to /sys/fs/cgroup).
cg_kubepods() { if [ "$CUBELET_DRIVER" = systemd ]; then echo kubepods.slice; else echo kubepods; fi; }
cg_qos() { # cg_qos burstable|besteffort
	if [ "$CUBELET_DRIVER" = systemd ]; then echo "kubepods.slice/kubepods-$1.slice"; else echo "kubepods/$1"; fi
}
cg_ctr() { # cg_ctr POD_PATH CONTAINER_ID
	if [ "$CUBELET_DRIVER" = systemd ]; then echo "$1/cri-containerd-$2.scope"; else echo "$1/$2"; fi
}

# once_per_matrix SECTION: whether this run checks SECTION, whose results
# cannot differ by cgroup driver: the cgroupfs run does; the systemd run of
# the driver matrix (run-scenarios.sh) says so and leaves it out. Sections
# whose results can differ (cgroup paths and values, slice properties,
# recovery of what runs) run under both drivers.
once_per_matrix() {
	[ "$CUBELET_DRIVER" = systemd ] || return 0
	t_diag "$1: the same under both cgroup drivers: checked in the cgroupfs run"
	return 1
}

cubelet_setup() {
	cubelet_install
	log "cubelet_setup: $(cut -d' ' -f1 /proc/uptime) daemon-reload"
	systemctl daemon-reload
	log "cubelet_setup: $(cut -d' ' -f1 /proc/uptime) starting cubelet"
	systemctl start cubelet
	log "cubelet_setup: $(cut -d' ' -f1 /proc/uptime) started"
}

# status_json: the status socket's document, what `cubelet status -o json`
# prints (the CLI writes the socket's reply as it is), fetched by the static
# tools/status-fetch when it is built: the scenarios poll it every 0.5 s, and
# under qemu's emulation `cubelet status` spends ~0.4 s linking its ~90
# libraries. STATUS_JSON is the same as a command line, for `sh -c` polls.
# The scenarios run `cubelet status` itself for what they check of the CLI.
STATUS_FETCH=$VM_REPO/build/tests/vm/status-fetch
if [ -x "$STATUS_FETCH" ]; then
	STATUS_JSON=$STATUS_FETCH
else
	STATUS_JSON="$CUBELET status -o json"
fi
status_json() {
	if [ -x "$STATUS_FETCH" ]; then "$STATUS_FETCH"; else "$CUBELET" status -o json; fi 2>/dev/null
}

# pod_field POD FIELD: the first "FIELD": value after the pod's "name" line
pod_field() {
	status_json | awk -v n="\"name\": \"$1\"," -v f="\"$2\": " '
		index($0, n) { on = 1; next }
		on && index($0, f) { sub(/^[^:]*: /, ""); sub(/,$/, ""); gsub(/"/, ""); print; exit }'
}

# ctr_field POD CONTAINER FIELD: a field of one container of the pod
ctr_field() {
	status_json | awk -v p="\"name\": \"$1\"," -v c="\"name\": \"$2\"," -v f="\"$3\": " '
		index($0, p) { pod = 1; next }
		pod && index($0, c) { on = 1; next }
		on && index($0, f) { sub(/^[^:]*: /, ""); sub(/,$/, ""); gsub(/"/, ""); print; exit }'
}

# reasons_agree POD CONTAINER REASON: the container's waiting reason is REASON
# in cubelet status -o json, the status table, /pods and cubelet describe
# (one mapping, agent/lifecycle/reasons.c, behind the four); /pods serves a
# snapshot up to 2 s old (API_HTTP_STALE_USEC), so the four are read again
# for up to 4 s until they agree
reasons_agree() {
	local got i
	for i in 1 2 3 4 5; do
		got=$(reasons_of "$1" "$2")
		[ "$got" = "$3 $3 $3 $3" ] && break
		sleep 1
	done
	t_is "$got" "$3 $3 $3 $3" "$1/$2: waiting reason $3 in cubelet status -o json, the status table, /pods and cubelet describe"
}
reasons_of() {
	local j t p d
	j=$(status_json | jq -r --arg n "$1-$NODE" --arg c "$2" \
		'.pods[] | select(.name == $n) | .containers[] | select(.name == $c) | .waitingReason // "-"')
	t=$("$CUBELET" status 2>/dev/null | awk -v n="$1-$NODE" -v c="$2" '
		$2 == n { on = 1; next }
		on && /^[^ ]/ { exit }
		on && ($1 == c || ($1 == "init" && $2 == c)) { if (match($0, /\([A-Za-z]+\)/)) print substr($0, RSTART + 1, RLENGTH - 2); else print "-"; exit }')
	p=$(curl -s -m 5 http://127.0.0.1:10255/pods | jq -r --arg n "$1-$NODE" --arg c "$2" \
		'.items[] | select(.metadata.name == $n) | ((.status.containerStatuses // []) + (.status.initContainerStatuses // []))[] | select(.name == $c) | .state.waiting.reason // "-"')
	d=$("$CUBELET" describe "$1-$NODE" 2>/dev/null | awk -v c="  $2:" '
		$0 == c { on = 1; next }
		on && /^      Reason:/ { print $2; found = 1; exit }
		on && /^    Ready:/ { exit }
		END { if (!found) print "-" }')
	echo "$j $t $p $d"
}

# describe_event POD REASON TEXT: cubelet describe's Events has REASON with TEXT
# in its message, and cubelet status -o json has the same event
describe_event() {
	local d j
	d=$("$CUBELET" describe "$1-$NODE" 2>/dev/null | awk '/^Events:/ { on = 1; next } on')
	j=$(status_json | jq -r --arg n "$1-$NODE" --arg r "$2" '.pods[] | select(.name == $n) | .events[] | select(.reason == $r) | .message')
	case "$d" in *" $2 "*"$3"*) ;; *) return 1 ;; esac
	case "$j" in *"$3"*) ;; *) return 1 ;; esac
}

# shutdown_pod NAME GRACE [PRIORITY_CLASS [AFTER_TERM]]: a static pod for
# the graceful node shutdown scenarios (53, lib/poweroff.sh): its preStop
# hook and its SIGTERM write the guest's uptime to $X/NAME-prestop and
# $X/NAME-term (X: a host directory, a hostPath at /x); AFTER_TERM is shell
# the SIGTERM's handler runs after that mark, before it exits
shutdown_pod() {
	cat >"$M/$1.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: $2
  ${3:+priorityClassName: $3}
  volumes: [{name: x, hostPath: {path: $X}}]
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sh, -c, "trap 'read u _ </proc/uptime; echo \$u >/x/$1-term; ${4:+$4; }exit 0' TERM; while true; do sleep 1; done"]
    volumeMounts: [{name: x, mountPath: /x}]
    lifecycle: {preStop: {exec: {command: [sh, -c, "read u _ </proc/uptime; echo \$u >/x/$1-prestop"]}}}
Y
}

# manifest_put FILE: stdin becomes $M/FILE at once (written beside it as a
# dot file, which the source ignores, then renamed: one complete event)
manifest_put() {
	cat >"$M/.$1" && mv "$M/.$1" "$M/$1"
}

wait_phase() { # wait_phase POD PHASE [SECONDS]
	for i in $(seq $((${3:-90} * 2))); do
		[ "$(pod_field "$1" phase)" = "$2" ] && return 0
		sleep 0.5
	done
	return 1
}

wait_gone() { # wait_gone POD [SECONDS]
	for i in $(seq $((${2:-90} * 2))); do
		[ -z "$(pod_field "$1" phase)" ] && return 0
		sleep 0.5
	done
	return 1
}

# plan_value MANIFEST KEY: the first "KEY": "value" of the plan (the pod's own)
plan_value() {
	"$CUBELET" plan --cgroup-driver "$CUBELET_DRIVER" "$1" 2>/dev/null | awk -v k="\"$2\": " 'index($0, k) { sub(/^[^:]*: /, ""); sub(/,$/, ""); gsub(/"/, ""); print; exit }'
}

# plan_ctr MANIFEST CONTAINER KEY: a CRI resource value of one container
plan_ctr() {
	"$CUBELET" plan --cgroup-driver "$CUBELET_DRIVER" "$1" 2>/dev/null | awk -v c="\"name\": \"$2\"," -v k="\"$3\": " '
		index($0, c) { on = 1; next }
		on && index($0, k) { sub(/^[^:]*: /, ""); sub(/,$/, ""); print; exit }'
}

weight_of_shares() { echo $((1 + (($1 - 2) * 9999) / 262142)); }

# cubelet_cpu: the unit's CPU time so far (µs, its cgroup's cpu.stat)
# unit_cpu UNIT: a system.slice unit's CPU time so far (µs)
unit_cpu() { awk '$1 == "usage_usec" { print $2 }' "/sys/fs/cgroup/system.slice/$1.service/cpu.stat"; }
cubelet_cpu() { unit_cpu cubelet; }

sandboxes_of() { # number of sandboxes containerd holds for a pod UID
	ctr -n k8s.io containers ls -q "labels.\"cubelet.io/pod-uid\"==$1" 2>/dev/null | wc -l
}

# cubelet_teardown: stop the agent and kill every container (one write to
# cgroup.kill of the pods' tree and of ctr's k8s.io group, not one ctr call a
# task), so that the guest powers off, or the next scenario's reset runs,
# without waiting for processes that ignore SIGTERM
cubelet_teardown() {
	systemctl stop cubelet
	for cg in /sys/fs/cgroup/kubepods /sys/fs/cgroup/kubepods.slice /sys/fs/cgroup/k8s.io; do
		[ -e "$cg/cgroup.kill" ] && echo 1 >"$cg/cgroup.kill"
	done
	return 0
}

MiB=1048576
# memory.available as kubelet (and cubelet) compute it
available() {
	awk -v inact="$(awk '/^inactive_file /{print $2}' /sys/fs/cgroup/memory.stat)" '
		/^MemTotal:/ { t = $2 * 1024 } /^MemFree:/ { f = $2 * 1024 }
		END { ws = t - f - inact; if (ws < 0) ws = 0; printf "%d\n", t - ws }' /proc/meminfo
}
# hold_cmd MiB [STEP_SLEEP]: a container command that allocates MiB (1 MiB strings), then sleeps
hold_cmd() {
	printf '%s' "exec awk 'BEGIN{for(i=0;i<$1;i++){a[i]=sprintf(\"%1048576s\",\"x\"); if(i%8==0){system(\"cat /proc/uptime\"); system(\"sleep ${2:-0.05}\")}} print \"held\"; while(1) system(\"sleep 60\")}'"
}

# kube_or_skip WHAT: KUBE, the control plane and kubelet in one binary
# (make cluster-peers); without it the scenario skips WHAT and ends
kube_or_skip() {
	KUBE=$VM_REPO/build/cluster/kube
	[ -x "$KUBE" ] && return 0
	t_skip "$1" "build/cluster/kube is not built (make cluster-peers)"
	t_done
	exit 0
}
