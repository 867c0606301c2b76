#!/bin/bash
# Pods from a manifest URL (staticPodURL) in the native lane: a real nginx over
# mutual TLS (a CA, server and client certificates made by openssl) on the
# loopback of a network namespace of the run's own, checked every 2 s: a pod
# appears within one check period (a), a 304 is counted (b), an edit recreates
# the pod (c), nginx stopped for three periods changes nothing (d), a broken
# body changes nothing and is reported with the URL, line and field (e), a
# removed pod goes (f), the directory and the URL may define the same name,
# both run (g), a restart with the wrong client certificate is refused and
# reported, and stops nothing: the URL's pod is known from the answer kept on
# disk (h), a start with nginx down and the pod's processes killed (a reboot's
# state) runs it again from that answer, and nginx back with an empty PodList
# removes it (i). A private containerd, cgroupsPerQOS: false, host-network
# pods. Until 2026-12-05 the VM's 70-http-source (148 s of guest b).
# TAP; 77 without root, containerd, nginx or the images.
#
#   tests/native/http-source.sh BUILD_DIR IMAGES_DIR
set -u
B=${1:?usage: http-source.sh BUILD_DIR IMAGES_DIR}
IMAGES=${2:?usage: http-source.sh BUILD_DIR IMAGES_DIR}
# shellcheck disable=SC1091
. "$(dirname "$0")/lib.sh"
command -v nginx >/dev/null || skip "no nginx (make deps)"
native_netns "$0" "$@"
native_init "$B" "$IMAGES"
M=$T/manifests
D=$T/http
PORT=18080
TLS=18443
URL=https://127.0.0.1:$TLS/pods.yaml
sh "$ROOT/tests/unit/agent/config/http-nginx.sh" "$D" "$PORT" "$TLS"
NGINX=""
nginx_start() {
	setsid nginx -p "$D" -c "$D/nginx.conf" >>"$T/nginx.log" 2>&1 &
	NGINX=$!
	# nginx answers (its plain server's / is a 403: any answer will do)
	wait_until 30 curl -s -o /dev/null "http://127.0.0.1:$PORT/"
}
nginx_stop() { [ -n "$NGINX" ] && kill "$NGINX" 2>/dev/null && wait "$NGINX" 2>/dev/null; NGINX=""; }
trap 'nginx_stop; native_cleanup' EXIT

pod() { # pod NAME BUSYBOX-COMMAND: one list item
	printf -- '- metadata: {name: %s}\n  spec:\n    hostNetwork: true\n    terminationGracePeriodSeconds: 2\n    containers:\n    - name: app\n' "$1"
	printf '      image: localhost/cubelet/busybox:1\n      command: [sh, -c, "%s"]\n' "$2"
}
serve() { # serve ITEMS...: the PodList nginx serves (written whole, then renamed)
	{
		printf 'apiVersion: v1\nkind: PodList\nitems:\n'
		for i in "$@"; do printf '%s\n' "$i"; done
	} >"$D/root/.pods.tmp"
	mv "$D/root/.pods.tmp" "$D/root/pods.yaml"
}
# status_py EXPR: a Python expression over s (the status document)
status_py() { status_json | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)" 2>/dev/null; }
url_pod() { # url_pod NAME FIELD: a field of the URL's pod NAME-node
	status_py "next((p['$2'] for p in s['pods'] if p['name']=='$1-$NODE' and p['source']=='$URL'), '')"
}
fetches() { status_py "s['manifestURL']['fetches']['$1']"; }
is_() { [ "$(eval "$1")" = "$2" ]; }
# sandboxes_of UID: the containers (sandbox and app) containerd holds for a pod UID
sandboxes_of() { ctr -a "$SOCK" -n k8s.io containers ls -q "labels.\"cubelet.io/pod-uid\"==$1" 2>/dev/null | wc -l; }
running_tasks() { ctr -a "$SOCK" -n k8s.io tasks ls 2>/dev/null | grep -c RUNNING; }
pods_now() { status_py "sorted((p['uid'], p['restarts'], [c['id'] for c in p['containers']]) for p in s['pods'])"; }

# staticPodURLTimeout 5 s, as the VM's (a first fetch after a restart is a TLS handshake)
cubelet_config() { # cubelet_config CLIENT (client or wrong): the configuration file
	CUBELET_EXTRA="staticPodURLCAFile: $D/pki/ca.crt
staticPodURLClientCert: $D/pki/$1.crt
staticPodURLClientKey: $D/pki/$1.key
staticPodURLTimeout: 5s" READ_ONLY_PORT=10255 config "cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupRoot: /$CGNAME
staticPodURL: $URL
staticPodURLHeader: {X-Node: [$NODE]}
httpCheckFrequency: 2s" >"$T/config.yaml"
}
WEB1=$(pod web "sleep 3600")
serve "$WEB1"
nginx_start
cubelet_config client
LOG_TIMES=1 start_cubelet "$T/config.yaml"
check "the URL's pod web-$NODE reaches Running" wait_until 60 is_ "url_pod web phase" Running
is "$(status_py "s['manifestURL']['lastError']")" "" "no fetch error"

# ---- a. a new pod within one check period (2 s, plus a little for the loop)
start=$EPOCHREALTIME
serve "$WEB1" "$(pod api "sleep 3600")"
# when the agent took the pod in (its log line, timed), from when the list was written
api_seen() { grep -F "pod default/api-$NODE (uid" "$T/cubelet.log" | grep -F "from '$URL'" | head -n 1; }
seen_api() { [ -n "$(api_seen)" ]; }
wait_until 10 seen_api
seen=$(api_seen | cut -d' ' -f1)
ms=$(awk -v s="$start" -v e="${seen:--1}" 'BEGIN { printf "%d", e < 0 ? -1 : (e - s) * 1000 }')
check "a. pod api-$NODE is taken in within one period of 2 s, plus the fetch (${ms} ms)" \
	test "$ms" -ge 0 -a "$ms" -le 2500
check "a. api-$NODE reaches Running" wait_until 60 is_ "url_pod api phase" Running
API_UID=$(url_pod api uid)
is "$(url_pod api source)" "$URL" "a. its source is the URL"

# ---- b. unchanged: 304s
n304=$(fetches notModified)
more_304() { [ "$(fetches notModified)" -ge $((n304 + 2)) ]; }
check "b. 304s are counted ($n304 -> at least $((n304 + 2)))" wait_until 30 more_304
is "$(status_py "s['manifestURL']['lastStatus']")" 304 "b. the last answer is a 304"
check "b. /metrics counts them: cubelet_http_source_fetches_total{result=\"notModified\"} >= 2" sh -c \
	"curl -sf http://127.0.0.1:10255/metrics | grep -Eq '^cubelet_http_source_fetches_total[{]result=\"notModified\"[}] ([2-9]|[1-9][0-9]+)\$'"
echo "# figure: a 304 over mutual TLS (kept-alive connection) took $(status_py "s['manifestURL']['lastDurationUs']") us"

# ---- c. an edit recreates web
WEB_UID=$(url_pod web uid)
WEB2=$(pod web "sleep 3601")
serve "$WEB2" "$(pod api "sleep 3600")"
new_web() { [ -n "$(url_pod web uid)" ] && [ "$(url_pod web uid)" != "$WEB_UID" ]; }
check "c. the edited web has a new UID" wait_until 10 new_web
check "c. the new web reaches Running" wait_until 60 is_ "url_pod web phase" Running
check "c. the old web's sandbox is gone" wait_until 60 is_ "sandboxes_of $WEB_UID" 0
is "$(url_pod api uid)" "$API_UID" "c. api is untouched"

# ---- d. nginx stopped for three periods
before=$(pods_now)
errs=$(fetches error)
nginx_stop
three_errors() { [ "$(fetches error)" -ge $((errs + 3)) ]; }
check "d. at least three failed fetches" wait_until 40 three_errors
contains "$(status_py "s['manifestURL']['lastError']")" "$URL: Failed to connect to 127.0.0.1 port $TLS" \
	"d. status names the URL and the error"
contains "$(status_py "[e['message'] for e in s['errors']]")" "Failed to connect" "d. ... in the errors too"
is "$(pods_now)" "$before" "d. the same pods, containers and restarts"
is "$(grep -c "$URL: Failed to connect" "$T/cubelet.log")" 1 "d. the log has it, once"
nginx_start
check "d. nginx back: a 304 again" wait_until 10 is_ "status_py \"s['manifestURL']['lastStatus']\"" 304
is "$(status_py "s['manifestURL']['lastError']")" "" "d. the error is cleared"

# ---- e. a broken body
printf 'apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: web}\n  spec:\n    containers:\n    - name: app\n      resources: {limits: {cpu: 1.5.5}}\n      image: x\n' >"$D/root/pods.yaml"
broken() { status_py "s['manifestURL']['lastError']" | grep -q 'invalid quantity'; }
check "e. the broken body is reported" wait_until 10 broken
contains "$(status_py "s['manifestURL']['lastError']")" \
	"$URL:8: items[0].spec.containers[0].resources.limits[cpu]: invalid quantity \"1.5.5\"" "e. with URL, line and field"
is "$(pods_now)" "$before" "e. nothing changed"
contains "$(cat "$T/cubelet.log")" "$URL:8: items[0].spec" "e. the log has it"

# ---- f. a removed pod goes
serve "$WEB2"
check "f. api-$NODE leaves" wait_until 20 is_ "url_pod api uid" ""
check "f. its sandbox is removed" wait_until 60 is_ "sandboxes_of $API_UID" 0
is "$(url_pod web phase)" Running "f. web keeps running"

# ---- g. the same name in the directory and the URL: both run (names are unique per source)
cat >"$M/web.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3602"]
Y
check "g. the directory's web-$NODE reaches Running" wait_until 60 is_ \
	"status_py \"[p['phase'] for p in s['pods'] if p['name']=='web-$NODE' and p['source']=='$M/web.yaml']\"" "['Running']"
is "$(status_py "len([p for p in s['pods'] if p['name']=='web-$NODE'])")" 2 "g. two pods named web-$NODE"
is "$(url_pod web phase)" Running "g. the URL's web keeps running"

# ---- h. restart with a client certificate of another CA
WEB_UID=$(url_pod web uid)
ctrs=$(sandboxes_of "$WEB_UID")
tasks=$(running_tasks)
stop_cubelet
cubelet_config wrong
LOG_TIMES=1 start_cubelet "$T/config.yaml"
refused() { status_py "s['manifestURL']['lastError']" | grep -q '400 Bad Request'; }
check "h. the wrong client certificate is refused and reported" wait_until 20 refused
contains "$(status_py "s['manifestURL']['lastError']")" "$URL: 400 Bad Request" "h. with the URL"
sleep 3
check "h. the URL's pod has its sandbox and container ($ctrs)" test "$ctrs" -ge 2
is "$(sandboxes_of "$WEB_UID")" "$ctrs" "h. ... and keeps them while the URL has not answered"
is "$(url_pod web uid)" "$WEB_UID" "h. the URL's web is known from the answer kept on disk"
is "$(status_py "s['manifestURL']['cache']['inUse']")" True "h. status: the kept answer is in use"
is "$(running_tasks)" "$tasks" "h. all $tasks tasks still run: the directory's pod's and the URL's"
contains "$(cat "$T/cubelet.log")" "$URL: 400 Bad Request; the pods of the answer kept on disk keep running" \
	"h. the log"

# ---- i. a start with nginx down and web's processes killed (what a reboot
# leaves), the right certificate again; then nginx back with an empty PodList
WEB_CTRS=$(url_pod web containers)
stop_cubelet
nginx_stop
for c in $(ctr -a "$SOCK" -n k8s.io containers ls -q "labels.\"cubelet.io/pod-uid\"==$WEB_UID" 2>/dev/null); do
	ctr -a "$SOCK" -n k8s.io tasks kill -s SIGKILL "$c" >/dev/null 2>&1
done
cubelet_config client
LOG_TIMES=1 start_cubelet "$T/config.yaml"
again() { [ "$(url_pod web phase)" = Running ] && [ "$(url_pod web containers)" != "$WEB_CTRS" ]; }
check "i. nginx down: web runs again from the answer kept on disk" wait_until 60 again
is "$(url_pod web uid)" "$WEB_UID" "i. with its UID"
contains "$(cat "$T/cubelet.log")" "$URL: 1 pods from the answer kept in '$T/state/manifest_url_cache'" \
	"i. the log says where its pods come from"
failing() { status_py "s['manifestURL']['lastError']" | grep -q 'Failed to connect'; }
check "i. the fetch fails and is retried" wait_until 20 failing
serve
nginx_start
check "i. nginx back with an empty PodList: web goes" wait_until 30 is_ "url_pod web uid" ""
check "i. its sandbox is removed" wait_until 60 is_ "sandboxes_of $WEB_UID" 0
is "$(status_py "[p['source'] for p in s['pods']]")" "['$M/web.yaml']" "i. the directory's pod stays"

"$CUBELET" status --socket "$T/cubelet.sock" >"$T/status.txt" 2>&1
check "the status table shows the URL" grep -Eq \
	"^manifest URL $URL: (ok \\(HTTP 200\\)|notModified \\(HTTP 304\\)) at [0-9T:Z-]+, 0 pods; fetches [0-9]+ ok, [0-9]+ not modified, [0-9]+ errors$" \
	"$T/status.txt"
check "cubelet is still running" kill -0 "$PID_CUBELET"
echo "1..$n"
