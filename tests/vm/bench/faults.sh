#!/bin/bash
# `make bench` (and `make bench-faults` alone): the fault matrix, in a 2 GiB
# guest with cubelet and containerd as systemd units. FAULT_PODS pods (10)
# run on the pod network, 8 from the manifest directory and 2 from the
# manifest URL (a Python server on 127.0.0.1 whose answer each fault sets).
# Each fault is held FAULT_HOLD seconds (60), then cleared. For each:
# cubelet's CPU during the fault (per mille of one CPU, from the unit's
# cpu.stat) beside its idle figure of the same run, the journal lines it
# wrote per pod, and after the fault: every pod Running, none duplicated
# (one ready sandbox and one running container each), the stuck sandboxes
# removed, the checkpoints intact (cubelet restarted at the end adopts every
# container: same IDs, no restart). Checks are TAP lines; figures are
# diagnostics and go to $VM_OUT/faults.txt.
#   cni-at-start   the CNI plugins missing while the pods come
#   cni-teardown   the plugins taken away, then every manifest removed
#   containerd     containerd stopped
#   state-full     the state directory (a tmpfs) full, cubelet restarted in it,
#                  a pod removed and another added (no nodefs eviction threshold:
#                  the write paths are tested, not DiskPressure)
#   dir-gone       the manifest directory deleted, then made again
#   url-500 / url-garbage / url-stall   the manifest URL answering 500,
#                  a body that is not a PodList, nothing for 30 s
# vm-timeout: 3600
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"
[ -f /etc/cubelet-faults/env ] && . /etc/cubelet-faults/env
HOLD=${FAULT_HOLD:-60}
N=${FAULT_PODS:-10}
NURL=2
FIG=$VM_OUT/faults.txt
W=/run/faults
mkdir -p "$W/url"
say() { t_diag "$*"; echo "$*" >>"$FIG"; }

now_s() { date +%s; }

pod_yaml() { # pod_yaml NAME UID
	cat <<Y
apiVersion: v1
kind: Pod
metadata: {name: $1, uid: $2}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: localhost/cubelet/busybox:1
    command: [sleep, "36000"]
    resources: {requests: {cpu: 10m, memory: 8Mi}, limits: {memory: 32Mi}}
Y
}
dir_pods() { seq 1 $((N - NURL)); }
write_dir_pods() { for i in $(dir_pods); do pod_yaml "f$i" "fault-$i" >"$M/f$i.yaml"; done; }
url_list() { # the URL's PodList: the pods u1..u$NURL
	{
		echo '{"apiVersion": "v1", "kind": "PodList", "items": ['
		for i in $(seq 1 "$NURL"); do
			[ "$i" -gt 1 ] && echo ','
			echo "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"u$i\", \"uid\": \"fault-u$i\"},"
			echo " \"spec\": {\"terminationGracePeriodSeconds\": 2, \"containers\": [{\"name\": \"c\", \"image\": \"localhost/cubelet/busybox:1\","
			echo "  \"command\": [\"sleep\", \"36000\"], \"resources\": {\"requests\": {\"cpu\": \"10m\", \"memory\": \"8Mi\"}}}]}}"
		done
		echo ']}'
	} >"$W/url/list.json"
}
url_mode() { echo "$1" >"$W/url/mode"; }
all_uids() { for i in $(dir_pods); do echo "fault-$i"; done; for i in $(seq 1 "$NURL"); do echo "fault-u$i"; done; }

# the manifest URL: ok (the list), 500, garbage, stall (30 s, then the list), empty
cat >"$W/url-server.py" <<'P'
import http.server, os, sys, time
D = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        mode = open(os.path.join(D, "mode")).read().strip()
        if mode == "500":
            self.send_response(500); self.send_header("Content-Length", "5"); self.end_headers(); self.wfile.write(b"oops\n"); return
        if mode == "stall":
            time.sleep(30)
        body = b"\x00{not a pod list" if mode == "garbage" else open(os.path.join(D, "list.json"), "rb").read()
        if mode == "empty":
            body = b'{"apiVersion": "v1", "kind": "PodList", "items": []}'
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer(("127.0.0.1", 18089), H).serve_forever()
P
url_list
url_mode empty
systemd-run --unit=fault-url --collect /usr/bin/python3 "$W/url-server.py" "$W/url" >/dev/null 2>&1

# the state directory on its own 64 MiB tmpfs, so that it can be filled
mkdir -p /var/lib/cubelet
mount -t tmpfs -o size=64M tmpfs /var/lib/cubelet
cubelet_install
# evictionHard without nodefs: the full state directory is a fault of the
# write paths here (with kubelet's default nodefs.available<10% it is
# DiskPressure, and cubelet evicts its manifest pods: docs/eviction.md)
cat >>/etc/cubelet/config.yaml <<Y
staticPodURL: http://127.0.0.1:18089/pods
httpCheckFrequency: 5s
evictionHard: {memory.available: 100Mi}
Y
systemctl daemon-reload

running() { # the number of our pods Running
	status_json | jq -r '.pods[] | select(.phase == "Running") | .uid' | grep -c '^fault-'
}
all_running() { [ "$(running)" = "$N" ]; }
sandboxes() { # ready sandboxes of a pod UID
	ctr -n k8s.io containers ls -q "labels.\"io.cri-containerd.kind\"==sandbox,labels.\"cubelet.io/pod-uid\"==$1" 2>/dev/null | wc -l
}
all_sandboxes() { ctr -n k8s.io containers ls -q 'labels."io.cri-containerd.kind"==sandbox' 2>/dev/null | wc -l; }
ctr_ids() { # every container of ours: pod uid and ID, sorted
	status_json | jq -r '.pods[] | select(.uid | startswith("fault-")) | .uid as $u | .containers[] | "\($u) \(.id // "-") \(.restarts // 0)"' | sort
}
no_duplicates() {
	local u
	for u in $(all_uids); do [ "$(sandboxes "$u")" = 1 ] || return 1; done
	[ "$(all_sandboxes)" = "$N" ]
}
journal_since() { journalctl -u cubelet --since "@$1" -o cat 2>/dev/null | wc -l; }

# hold NAME: the fault held HOLD s; prints CPU and journal figures
# hold NAME [ATTEMPTS]: ATTEMPTS prints the pods' retries so far (a sync's
# or a stop's): a fault that each pod retries is held to kubelet's cadence
# (one attempt per pod per 10 s at most, the stops' back-off doubling), its
# CPU printed per attempt; under qemu's emulation one attempt (the sandbox's
# CRI calls and cgroup writes) costs tens of ms, so the CPU bound for those is
# a tenth of a CPU, the hot loop this matrix guards against took 59 %
hold() {
	local c0 c1 t0 lines a0=0 a1=0 att="" max
	t0=$(now_s)
	[ -n "${2:-}" ] && a0=$($2)
	c0=$(cubelet_cpu)
	sleep "$HOLD"
	c1=$(cubelet_cpu)
	[ -n "${2:-}" ] && a1=$($2)
	lines=$(journal_since "$t0")
	FAULT_CPU=$(((c1 - c0) / HOLD / 1000))
	if [ -n "${2:-}" ]; then
		att=$(printf ', %d attempts (%s ms of CPU each)' $((a1 - a0)) "$(awk -v c=$((c1 - c0)) -v i=$((IDLE * HOLD * 1000)) -v a=$((a1 - a0)) 'BEGIN { printf "%.0f", (a > 0 ? (c - i) / a / 1000 : 0) }')")
	fi
	say "$(printf '%-13s cubelet CPU %3d per mille of a CPU over %d s (idle %d), journal %d lines (%s per pod)%s' "$1" "$FAULT_CPU" "$HOLD" "$IDLE" "$lines" "$(awk -v l="$lines" -v n="$N" 'BEGIN { printf "%.1f", l / n }')" "$att")"
	if [ -n "${2:-}" ]; then
		max=$((N * (HOLD / 10 + 1)))
		t_ok "$1: at most one attempt per pod per 10 s ($((a1 - a0)) in $HOLD s, $N pods)" test $((a1 - a0)) -le "$max"
		t_ok "$1: no hot loop: cubelet's CPU under a tenth of a CPU above idle ($FAULT_CPU vs $IDLE per mille)" \
			test "$FAULT_CPU" -le $((IDLE + 100))
	else
		t_ok "$1: cubelet's CPU during the fault is within 1 % of a CPU of its idle figure ($FAULT_CPU vs $IDLE per mille)" \
			test "$FAULT_CPU" -le $((IDLE + 10))
	fi
	# one line per back-off step at most: steps of 10 s doubling, a line per
	# pod per distinct error, a few for the fault itself
	t_ok "$1: at most a few journal lines per pod ($lines for $N pods in $HOLD s)" test "$lines" -le $((N * 4 + 10))
}
# recovered NAME: after the fault cleared
recovered() {
	local t0 t
	t0=$(now_s)
	if wait_until 240 all_running; then
		t_pass "$1: every pod Running again"
	else
		t_fail "$1: every pod Running again" "not Running: $(status_json | jq -c '[.pods[] | select(.uid | startswith("fault-")) | select(.phase != "Running") | {name, phase, reason, lastError, events: [.events[] | "\(.reason): \(.message)"]}]')"
		journalctl -u cubelet -o short-monotonic >"$VM_OUT/journal-$1.txt" 2>&1
	fi
	t=$(($(now_s) - t0))
	t_ok "$1: none duplicated, no stuck sandbox (one sandbox per pod, $N in all)" wait_until 120 no_duplicates
	say "$(printf '%-13s recovered: %d pods Running %d s after the fault cleared; sandboxes %d' "$1" "$(running)" "$t" "$(all_sandboxes)")"
}

systemctl start cubelet
for i in $(seq 60); do status_json >/dev/null && break; sleep 0.5; done

# ---- idle: the figure each fault is printed beside ---------------------------------------
c0=$(cubelet_cpu)
sleep 30
c1=$(cubelet_cpu)
IDLE=$(((c1 - c0) / 30000))
say "idle (no pods) cubelet CPU $IDLE per mille of a CPU over 30 s"

# ---- cni-at-start ------------------------------------------------------------------------
mkdir -p "$W/empty"
mount --bind "$W/empty" /usr/lib/cni
write_dir_pods
url_mode ok
# the fault is held from the first failure of every pod on (their admission,
# cgroups and first sync are not the fault's)
all_failing() {
	[ "$(status_json | jq '[.pods[] | select(.uid | startswith("fault-")) | select(any(.events[]; .reason == "FailedCreatePodSandBox"))] | length')" = "$N" ]
}
t_ok "cni-at-start: every pod says FailedCreatePodSandBox" wait_until 120 all_failing
sandbox_attempts() { # the pods' failed syncs in a row
	status_json | jq '[.pods[] | select(.uid | startswith("fault-")) | .syncFailures // 0] | add // 0'
}
hold cni-at-start sandbox_attempts
t_is "$(running)" 0 "cni-at-start: no pod runs without the plugins"
umount /usr/lib/cni
recovered cni-at-start
# the idle figure with the pods running
c0=$(cubelet_cpu)
sleep 30
c1=$(cubelet_cpu)
IDLE=$(((c1 - c0) / 30000))
say "idle ($N pods Running) cubelet CPU $IDLE per mille of a CPU over 30 s"
ids0=$(ctr_ids)

# ---- containerd stopped ------------------------------------------------------------------
systemctl stop containerd
hold containerd
systemctl start containerd
recovered containerd
t_is "$(ctr_ids)" "$ids0" "containerd: the same containers, none restarted"

# ---- url-500 / url-garbage / url-stall: the URL's pods stay -------------------------------
for mode in 500 garbage stall; do
	url_mode "$mode"
	hold "url-$mode"
	t_is "$(running)" "$N" "url-$mode: every pod still Running (the URL's last good set is kept)"
	err=$(status_json | jq -r '.manifestURL.lastError // empty' 2>/dev/null)
	t_diag "url-$mode: status says: ${err:-(nothing)}"
	url_mode ok
	recovered "url-$mode"
done
t_is "$(ctr_ids)" "$ids0" "url faults: the same containers, none restarted"

# ---- the state directory full -------------------------------------------------------------
fill=/var/lib/cubelet/fill
dd if=/dev/zero of="$fill" bs=1M count=64 2>/dev/null
t_diag "state-full: $(df -h /var/lib/cubelet | tail -n 1)"
# cubelet restarted in the full directory: it reads its checkpoints, adopts
systemctl restart cubelet
t_ok "state-full: a restart in the full directory adopts every pod" wait_until 120 all_running
t_is "$(ctr_ids)" "$ids0" "state-full: ... the same containers, none restarted"
# and a pod removed and another added while full
rm -f "$M/f1.yaml"
pod_yaml fx fault-x >"$M/fx.yaml"
fx_settled() {
	[ "$(sandboxes fault-1)" = 0 ] &&
		status_json | jq -e '[.pods[] | select(.uid == "fault-1")] | length == 0' >/dev/null &&
		status_json | jq -e '.pods[] | select(.uid == "fault-x") | .phase == "Running" or (.events | length > 0)' >/dev/null
}
t_ok "state-full: f1 goes, fx comes (Running or with its error)" wait_until 120 fx_settled
t_diag "state-full: fx: $(status_json | jq -c '.pods[] | select(.uid == "fault-x") | {phase, reason, lastError, events: [.events[] | .reason]}')"
hold state-full sandbox_attempts
rm -f "$fill"
rm -f "$M/fx.yaml"
pod_yaml f1 fault-1 >"$M/f1.yaml"
recovered state-full
for f in /var/lib/cubelet/cpu_manager_state /var/lib/cubelet/admission_ledger; do
	[ -e "$f" ] || continue
	t_ok "state-full: $(basename "$f") is whole JSON" jq -e . "$f"
done
ids0=$(ctr_ids)

# ---- the manifest directory deleted and made again ---------------------------------------
mv "$M" "$M.away"
t_ok "dir-gone: its pods stop (kubelet: a missing directory is an empty set)" \
	wait_until 120 sh -c "[ \"\$($STATUS_JSON | jq -r '.pods[] | select(.phase == \"Running\") | .uid' | grep -c '^fault-u')\" = $NURL ] && [ \"\$($STATUS_JSON | jq '[.pods[] | select(.uid | test(\"^fault-[0-9]\"))] | length')\" = 0 ]"
t_ok "dir-gone: ... and their sandboxes are removed" wait_until 120 sh -c "[ \$(ctr -n k8s.io containers ls -q 'labels.\"io.cri-containerd.kind\"==sandbox' | wc -l) = $NURL ]"
hold dir-gone
mkdir -p "$M"
t0=$(now_s)
mv "$M.away"/*.yaml "$M/"
rmdir "$M.away"
recovered dir-gone
say "dir-gone: the directory's pods back $(($(now_s) - t0)) s after it was made again"

# ---- the CNI plugins taken away, every manifest removed: the stops fail --------------------
mount --bind "$W/empty" /usr/lib/cni
mkdir -p "$W/away"
mv "$M"/*.yaml "$W/away/"
url_mode empty
stuck() { [ "$(status_json | jq '.stopping | length')" -ge 1 ]; }
t_ok "cni-teardown: the stops fail and wait (status lists them under stopping)" wait_until 60 stuck
stop_attempts() { status_json | jq '[.stopping[] | .attempts] | add // 0'; }
hold cni-teardown stop_attempts
umount /usr/lib/cni
t0=$(now_s)
t_ok "cni-teardown: once the plugins are back every stuck sandbox is removed" \
	wait_until 400 sh -c "[ \$(ctr -n k8s.io containers ls -q 'labels.\"io.cri-containerd.kind\"==sandbox' | wc -l) = 0 ]"
say "cni-teardown  stuck sandboxes removed $(($(now_s) - t0)) s after the plugins came back"
mv "$W/away"/*.yaml "$M/"
url_mode ok
recovered cni-teardown

# ---- checkpoints: a restart adopts everything ----------------------------------------------
ids0=$(ctr_ids)
systemctl restart cubelet
for i in $(seq 60); do status_json >/dev/null && break; sleep 0.5; done
sleep 10
t_is "$(ctr_ids)" "$ids0" "after the faults a restart adopts every container (same IDs, no restart)"
t_is "$(journalctl -u cubelet -o cat | grep -ci 'checkpoint.*\(corrupt\|checksum\)')" 0 "no checkpoint was found corrupt"

say "RSS $(awk '/VmRSS/ { print $2 }' "/proc/$(systemctl show -p MainPID --value cubelet)/status") kB at the end"
cp /etc/cubelet/config.yaml "$VM_OUT/config.yaml"
journalctl -u cubelet -o short-monotonic >"$VM_OUT/cubelet-journal.txt" 2>&1
cubelet_teardown
systemctl stop fault-url 2>/dev/null
umount /var/lib/cubelet 2>/dev/null
t_done
