#!/bin/bash
# The node's HTTP API (127.0.0.1:10255) of cubelet running as a unit: /healthz,
# /readyz, /livez; /pods is a v1 PodList whose items decode as v1 Pods; /metrics
# and /metrics/resource pass `promtool check metrics`; a real Prometheus
# (Debian's) scraping every second records kubelet_running_pods equal to the
# running pods; /stats/summary has every pod; bad clients (half-open,
# garbage) do not stop it; a stopped containerd fails /readyz at once and
# /healthz after a minute; a non-loopback address without TLS is refused.
# Figures (in $VM_OUT/http-figures.txt and as diagnostics): requests/s on
# /metrics, /pods and /metrics/resource, and manifest → cgroup latency of
# HTTP_PODS pods created while scraped once a second.
# vm-guest: main
# vm-timeout: 1500
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

N=${HTTP_PODS:-20}
API=http://127.0.0.1:10255
W=$(mktemp -d)
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
wait_code() { # wait_code URL CODE SECONDS
	for i in $(seq $(($3 * 2))); do
		[ "$(code "$1")" = "$2" ] && return 0
		sleep 0.5
	done
	return 1
}

cubelet_setup
t_ok "/readyz answers 200 once the runtime was listed" wait_code "$API/readyz" 200 60
t_is "$(curl -s "$API/healthz")" ok "/healthz says ok"
t_is "$(curl -s "$API/livez")" ok "/livez says ok"
t_is "$(code "$API/nope")" 404 "an unknown path is 404"
t_is "$(code -X POST "$API/pods")" 405 "POST is 405"

# ---- manifest -> cgroup latency: N/2 pods unscraped, then N/2 scraped once a second --------
pod_yaml() {
	cat >"$M/web$1.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: web$1, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
    resources: {requests: {cpu: 10m, memory: 8Mi}, limits: {memory: 32Mi}}
Y
}
latencies() { # latencies FIRST LAST: "p50 X us, max Y us" of eventToCgroupUs of pods webFIRST..webLAST
	status_json | jq -r --argjson a "$1" --argjson b "$2" '.pods[] | select((.name | ltrimstr("web") |
		split("-")[0] | tonumber) as $i | $i >= $a and $i <= $b) | .latency.eventToCgroupUs' | sort -n |
		awk '{v[NR]=$1} END {printf "p50 %d us, max %d us (%d pods)", v[int((NR+1)/2)], v[NR], NR}'
}
H=$((N / 2))
for i in $(seq 1 "$H"); do pod_yaml "$i"; sleep 1; done
sleep 2
quiet=$(latencies 1 "$H")

# a real Prometheus, scraping both endpoints every second, and a scraper of our own
cat >"$W/prometheus.yml" <<'Y'
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
- job_name: cubelet
  static_configs: [{targets: ['127.0.0.1:10255']}]
- job_name: cubelet-resource
  metrics_path: /metrics/resource
  static_configs: [{targets: ['127.0.0.1:10255']}]
Y
prometheus --config.file="$W/prometheus.yml" --storage.tsdb.path="$W/tsdb" \
	--web.listen-address=127.0.0.1:9090 >"$VM_OUT/prometheus.log" 2>&1 &
PROM=$!
(while :; do
	for p in /metrics /metrics/resource /pods /stats/summary; do curl -s -o /dev/null "$API$p"; done
	sleep 1
done) &
SCRAPER=$!
for i in $(seq $((H + 1)) "$N"); do pod_yaml "$i"; sleep 1; done
all_running() {
	[ "$(status_json | jq '[.pods[] | select(.phase=="Running")] | length')" = "$N" ]
}
for i in $(seq 600); do all_running && break; sleep 1; done
t_ok "$N pods reach Running while scraped" all_running
scraped=$(latencies $((H + 1)) "$N")
kill "$SCRAPER"
status_json >"$VM_OUT/status.json"
{
	echo "manifest -> pod cgroup, one pod a second, not scraped: $quiet"
	echo "manifest -> pod cgroup, one pod a second, scraped once a second (curl on 4 endpoints + prometheus): $scraped"
} | tee -a "$VM_OUT/http-figures.txt" | while read -r l; do t_diag "$l"; done

# ---- /pods ---------------------------------------------------------------------------
curl -s "$API/pods" >"$W/pods.json"
t_ok "/pods is JSON (python3 json.load)" python3 -c "import json,sys; json.load(open('$W/pods.json'))"
t_is "$(jq -r '.kind + " " + .apiVersion' "$W/pods.json")" "PodList v1" "/pods is a v1 PodList"
t_is "$(jq '[.items[] | select(.status.phase=="Running")] | length' "$W/pods.json")" "$N" "$N items are Running"
t_is "$(jq -r '[.items[].status.qosClass] | unique | join(",")' "$W/pods.json")" Burstable "qosClass Burstable"
t_is "$(jq -r '.items[0].status.conditions | map(.type + "=" + .status) | join(" ")' "$W/pods.json")" \
	"PodReadyToStartContainers=True Initialized=True Ready=True ContainersReady=True PodScheduled=True" \
	"conditions of a running pod"
t_contains "$(jq -r '.items[0].status.containerStatuses[0].containerID' "$W/pods.json")" "containerd://" \
	"containerStatuses carry the containerID"
t_is "$(jq -r '.items[0].status.containerStatuses[0].state | keys[0]' "$W/pods.json")" running "state running"
for i in $(seq 0 $((N - 1))); do jq ".items[$i]" "$W/pods.json" >"$W/item$i.json"; done
t_ok "every item decodes as a v1 Pod (cubelet plan)" "$CUBELET" plan "$W"/item*.json

# ---- /metrics, /metrics/resource, /stats/summary -------------------------------------
curl -s "$API/metrics" >"$W/metrics.txt"
curl -s "$API/metrics/resource" >"$W/resource.txt"
t_ok "promtool check metrics accepts /metrics" sh -c "promtool check metrics <'$W/metrics.txt'"
t_ok "promtool check metrics accepts /metrics/resource" sh -c "promtool check metrics <'$W/resource.txt'"
t_is "$(awk '$1=="kubelet_running_pods" {print $2}' "$W/metrics.txt")" "$N" "kubelet_running_pods $N"
t_is "$(awk '$1=="kubelet_running_containers{container_state=\"running\"}" {print $2}' "$W/metrics.txt")" "$N" \
	"kubelet_running_containers{running} $N"
t_is "$(awk '$1=="kubelet_pod_start_duration_seconds_count" {print $2}' "$W/metrics.txt")" "$N" \
	"kubelet_pod_start_duration_seconds counts $N starts"
t_is "$(grep -c '^pod_cpu_usage_seconds_total{' "$W/resource.txt")" "$N" "pod_cpu_usage_seconds_total for $N pods"
t_is "$(grep -c '^container_memory_working_set_bytes{container="app"' "$W/resource.txt")" "$N" \
	"container_memory_working_set_bytes for $N containers (their cgroups found)"
t_is "$(awk '$1=="scrape_error" {print $2}' "$W/resource.txt")" 0 "scrape_error 0"
curl -s "$API/stats/summary" >"$W/summary.json"
t_is "$(jq '.pods | length' "$W/summary.json")" "$N" "/stats/summary has $N pods"
t_ok "/stats/summary: node and pod working sets" jq -e \
	'.node.memory.workingSetBytes > 0 and ([.pods[] | select(.memory.workingSetBytes > 0)] | length) > 0' \
	"$W/summary.json"

# ---- Prometheus --------------------------------------------------------------------
q() { curl -s "http://127.0.0.1:9090/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'; }
prom_has() { [ "$(q "$1")" = "$2" ]; }
for i in $(seq 300); do prom_has kubelet_running_pods "$N" && break; sleep 1; done
t_is "$(q kubelet_running_pods)" "$N" "Prometheus recorded kubelet_running_pods = $N"
for i in $(seq 30); do prom_has 'count(pod_memory_working_set_bytes)' "$N" && break; sleep 1; done
t_is "$(q 'count(pod_memory_working_set_bytes)')" "$N" "Prometheus recorded the resource metrics of $N pods"
t_is "$(q 'min(up)')" 1 "both targets are up"
rm -f "$M/web1.yaml"
for i in $(seq 120); do prom_has kubelet_running_pods $((N - 1)) && break; sleep 1; done
t_is "$(q kubelet_running_pods)" $((N - 1)) "a removed pod: Prometheus records $((N - 1))"
kill "$PROM"

# ---- load: keep-alive GETs for 5 s each ----------------------------------------------
python3 - "$VM_OUT/http-figures.txt" "$((N - 1))" <<'PY' >"$W/load.txt"
import http.client, sys, time
out, pods = sys.argv[1], sys.argv[2]
lines = []
for path in ("/metrics", "/pods", "/metrics/resource", "/stats/summary"):
    c = http.client.HTTPConnection("127.0.0.1", 10255)
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < 5:
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        assert r.status == 200, r.status
        n += 1
    lines.append("%s: %.0f requests/s (keep-alive, one client, %s pods)" % (path, n / (time.monotonic() - t0), pods))
open(out, "a").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
t_ok "load loop on 127.0.0.1 ran" test -s "$W/load.txt"
t_diag "$(cat "$W/load.txt")"

# ---- bad clients ------------------------------------------------------------------------
python3 - "$W/bad-ready" <<'PY' >"$W/bad.txt" 2>&1 &
import socket, sys, time
half = []
t_open = time.monotonic()
for i in range(20):
    s = socket.create_connection(("127.0.0.1", 10255))
    s.sendall(b"GET /pods HTTP/1.1\r\nHost: lo")
    half.append(s)
g = socket.create_connection(("127.0.0.1", 10255)); g.sendall(b"\x00\x01garbage\r\n\r\n")
print("garbage:", g.recv(100)[:12])
b = socket.create_connection(("127.0.0.1", 10255))
b.sendall(b"GET /pods HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n")
print("big:", b.recv(100).split(b"\r\n")[0].decode(), flush=True)
open(sys.argv[1], "w").close()
for s in half:  # the server drops them after its 10 s connection timeout
    s.settimeout(60)
    s.recv(100)
print("half-open dropped %.0f s after they were opened" % (time.monotonic() - t_open))
PY
BAD=$!
for i in $(seq 120); do [ -e "$W/bad-ready" ] && break; sleep 0.5; done
t_is "$(code "$API/healthz")" 200 "/healthz answers while 20 half-open connections hang"
wait "$BAD"
t_contains "$(cat "$W/bad.txt")" "half-open dropped" "the half-open connections are dropped"
t_diag "$(cat "$W/bad.txt")"
t_contains "$(cat "$W/bad.txt")" "big: HTTP/1.1 431" "a 64 KiB header is refused (431)"
t_is "$(curl -s "$API/pods" | jq '.items | length')" $((N - 1)) "/pods still answers after the bad clients"

# ---- health when the runtime goes ------------------------------------------------------
# (the fault matrix's short form, `make bench-faults` holds each fault a
# minute: cubelet's CPU while containerd is away, beside its idle figure, the
# journal, and afterwards every pod as it was)
ids() { status_json | jq -r '.pods[] | .containers[] | "\(.id) \(.restarts)"' | sort; }
ids0=$(ids)
c0=$(cubelet_cpu)
sleep 10
c1=$(cubelet_cpu)
idle=$(((c1 - c0) / 10000))
t0=$(date +%s)
systemctl stop containerd
t_ok "/readyz fails at once when containerd stops" wait_code "$API/readyz" 500 30
t_contains "$(curl -s "$API/readyz")" "[-]runtime failed: the container runtime has been unreachable" \
	"/readyz names the runtime"
t_is "$(code "$API/healthz")" 200 "/healthz still passes within the first minute"
# the outage alone, nothing polled, until 50 s after the stop
t1=$(date +%s)
c2=$(cubelet_cpu)
sleep $((t0 + 50 - t1))
c3=$(cubelet_cpu)
fault=$(((c3 - c2) / (t0 + 50 - t1) / 1000))
lines=$(journalctl -u cubelet --since "@$t0" -o cat | wc -l)
t_diag "containerd away: cubelet CPU $fault per mille of a CPU (idle $idle), $lines journal lines in 50 s"
t_ok "containerd away: cubelet's CPU within 1 % of a CPU of its idle figure ($fault vs $idle per mille)" \
	test "$fault" -le $((idle + 10))
t_ok "containerd away: a few journal lines, not one per retry ($lines in 50 s)" test "$lines" -le 10
t_ok "/healthz fails after a minute without the runtime" wait_code "$API/healthz" 500 90
t_contains "$(curl -s "$API/healthz")" "[-]runtime failed" "/healthz names the runtime check"
t_is "$(code "$API/livez")" 200 "/livez passes: the loop runs"
systemctl start containerd
t_ok "/healthz recovers with containerd" wait_code "$API/healthz" 200 60
same_ids() { [ "$(ids)" = "$ids0" ]; }
t_ok "containerd back: every pod keeps its containers, none restarted" wait_until 30 same_ids

# ---- off, and the loopback rule --------------------------------------------------------
cubelet_teardown
out=$(timeout 20 "$CUBELET" run --config /etc/cubelet/config.yaml --http-address 0.0.0.0 2>&1)
t_contains "$out" "HTTP API on '0.0.0.0' (not loopback): refusing to serve without TLS and client certificates" \
	"0.0.0.0 without TLS is refused"
# (without the pods: a cubelet started with their manifests would start
# them all again, minutes under emulation, for a check of its HTTP API)
rm -f "$M"/web*.yaml
sed -i '1i readOnlyPort: 0' /etc/cubelet/config.yaml
systemctl start cubelet
for i in $(seq 60); do status_json >/dev/null && break; sleep 0.5; done
t_is "$(code "$API/healthz")" 000 "readOnlyPort: 0 turns the HTTP API off"
cubelet_teardown
cp "$W"/*.txt "$VM_OUT/" 2>/dev/null
t_done
