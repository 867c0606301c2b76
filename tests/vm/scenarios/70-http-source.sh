#!/bin/bash
# Pods from a manifest URL (staticPodURL) served by a real nginx over mutual
# TLS (a CA, server and client certificates made by openssl), checked every
# 2 s: a pod appears within one check period (a), a 304 is counted (b), an
# edit recreates the pod (c), nginx stopped for three periods changes nothing
# (d), a broken body changes nothing and is reported with the URL, line and
# field (e), a removed pod goes (f), the directory and the URL may define the
# same name, both run (g), a restart with the wrong client certificate is
# refused and reported, and stops nothing: the URL's pod is known from the
# answer kept on disk (h), a start with nginx down and the pod's processes
# killed (a reboot's state) runs it again from that answer, and nginx back
# with an empty PodList removes it (i).
# vm-guest: b
# vm-timeout: 1200
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

# not under /tmp: cubelet.service has PrivateTmp=yes
D=/srv/cubelet-http-vm
PORT=18080
TLS=18443
URL=https://127.0.0.1:$TLS/pods.yaml
rm -rf "$D"
sh "$VM_REPO/tests/unit/agent/config/http-nginx.sh" "$D" "$PORT" "$TLS"
nginx_start() {
	setsid nginx -p "$D" -c "$D/nginx.conf" >>"$VM_OUT/nginx.log" 2>&1 &
	NGINX=$!
	# nginx answers (its plain server's / is a 403: any answer will do; with -f
	# this waited its whole 10 s, ~100 s under emulation, at each start)
	wait_until 30 curl -s -o /dev/null "http://127.0.0.1:$PORT/"
}
nginx_stop() { kill "$NGINX" 2>/dev/null; wait "$NGINX" 2>/dev/null; }

pod() { # pod NAME BUSYBOX-COMMAND: one list item
	printf -- '- metadata: {name: %s}\n  spec:\n    terminationGracePeriodSeconds: 2\n    containers:\n    - name: app\n' "$1"
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
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds
	t=$1
	shift
	for i in $(seq $((t * 10))); do "$@" && return 0; sleep 0.1; done
	return 1
}
is() { [ "$(eval "$1")" = "$2" ]; }

cubelet_install
# staticPodURLTimeout 5 s: the first fetch after a restart (a TLS handshake
# under emulation, two guests sharing the host's two cores) once took over 1 s
# and counted an error that (i)'s status line does not expect
cat >/etc/cubelet/config.yaml <<Y
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: $M
staticPodURL: $URL
staticPodURLHeader: {X-Node: [$NODE]}
httpCheckFrequency: 2s
cubelet:
  staticPodURLCAFile: $D/pki/ca.crt
  staticPodURLClientCert: $D/pki/client.crt
  staticPodURLClientKey: $D/pki/client.key
  staticPodURLTimeout: 5s
Y
cubelet_config_driver "$CUBELET_DRIVER" # the lib's driver, not the host's default
WEB1=$(pod web "sleep 3600")
serve "$WEB1"
nginx_start
systemctl daemon-reload
systemctl start cubelet
t_ok "the URL's pod web-$NODE reaches Running" wait_for 180 is "url_pod web phase" Running
t_is "$(status_py "s['manifestURL']['lastError']")" "" "no fetch error"

# ---- a. a new pod within one check period (2 s, plus a little for the loop)
start=$(date +%s%N)
serve "$WEB1" "$(pod api "sleep 3600")"
wait_for 10 is "url_pod api uid | wc -c" 33
# when the agent took the pod in (its journal line), from when the list was written
api_seen() { journalctl -u cubelet -o short-unix --no-pager | grep -F "pod default/api-$NODE (uid" | grep -F "from '$URL'"; }
wait_for 10 eval 'api_seen | grep -q .'
seen=$(api_seen | head -n 1 | cut -d' ' -f1) # seconds.microseconds
ms=-1
[ -n "$seen" ] && ms=$((${seen%.*} * 1000 + 10#${seen#*.} / 1000 - start / 1000000))
t_ok "a. pod api-$NODE is taken in within one period of 2 s, plus the fetch (${ms} ms)" \
	test "$ms" -ge 0 -a "$ms" -le 2500
t_ok "a. api-$NODE reaches Running" wait_for 180 is "url_pod api phase" Running
API_UID=$(url_pod api uid)
t_is "$(url_pod api source)" "$URL" "a. its source is the URL"

# ---- b. unchanged: 304s
n304=$(fetches notModified)
wait_until 30 eval 'test "$(fetches notModified)" -ge $((n304 + 2))'
t_ok "b. 304s are counted ($n304 -> $(fetches notModified))" test "$(fetches notModified)" -ge $((n304 + 2))
t_is "$(status_py "s['manifestURL']['lastStatus']")" 304 "b. the last answer is a 304"
t_ok "b. /metrics counts them: cubelet_http_source_fetches_total{result=\"notModified\"} >= 2" sh -c \
	"curl -sf http://127.0.0.1:10255/metrics | grep -Eq '^cubelet_http_source_fetches_total[{]result=\"notModified\"[}] ([2-9]|[1-9][0-9]+)\$'"
t_diag "figure: a 304 over mutual TLS (kept-alive connection) took $(status_py "s['manifestURL']['lastDurationUs']") us"

# ---- c. an edit recreates web
WEB_UID=$(url_pod web uid)
WEB2=$(pod web "sleep 3601")
serve "$WEB2" "$(pod api "sleep 3600")"
t_ok "c. the edited web has a new UID" wait_for 10 eval '[ -n "$(url_pod web uid)" ] && [ "$(url_pod web uid)" != "$WEB_UID" ]'
t_ok "c. the new web reaches Running" wait_for 180 is "url_pod web phase" Running
t_ok "c. the old web's sandbox is gone" wait_for 60 is "sandboxes_of $WEB_UID" 0
t_is "$(url_pod api uid)" "$API_UID" "c. api is untouched"

# ---- d. nginx stopped for three periods
before=$(status_py "sorted((p['uid'], p['restarts'], [c['id'] for c in p['containers']]) for p in s['pods'])")
errs=$(fetches error)
nginx_stop
wait_until 40 eval 'test "$(fetches error)" -ge $((errs + 3))'
t_ok "d. at least three failed fetches" test "$(fetches error)" -ge $((errs + 3))
t_contains "$(status_py "s['manifestURL']['lastError']")" "$URL: Failed to connect to 127.0.0.1 port $TLS" \
	"d. status names the URL and the error"
t_contains "$(status_py "[e['message'] for e in s['errors']]")" "Failed to connect" "d. ... in the errors too"
t_is "$(status_py "sorted((p['uid'], p['restarts'], [c['id'] for c in p['containers']]) for p in s['pods'])")" \
	"$before" "d. the same pods, containers and restarts"
t_is "$(journalctl -u cubelet --no-pager | grep -c "$URL: Failed to connect")" 1 "d. the journal has it, once"
nginx_start
t_ok "d. nginx back: a 304 again" wait_for 10 is "status_py \"s['manifestURL']['lastStatus']\"" 304
t_is "$(status_py "s['manifestURL']['lastError']")" "" "d. the error is cleared"

# ---- e. a broken body
printf 'apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: web}\n  spec:\n    containers:\n    - name: app\n      resources: {limits: {cpu: 1.5.5}}\n      image: x\n' >"$D/root/pods.yaml"
t_ok "e. the broken body is reported" wait_for 10 eval \
	"status_py \"s['manifestURL']['lastError']\" | grep -q 'invalid quantity'"
t_contains "$(status_py "s['manifestURL']['lastError']")" \
	"$URL:8: items[0].spec.containers[0].resources.limits[cpu]: invalid quantity \"1.5.5\"" "e. with URL, line and field"
t_is "$(status_py "sorted((p['uid'], p['restarts'], [c['id'] for c in p['containers']]) for p in s['pods'])")" \
	"$before" "e. nothing changed"
t_contains "$(journalctl -u cubelet --no-pager)" "$URL:8: items[0].spec" "e. the journal has it"

# ---- f. a removed pod goes
serve "$WEB2"
t_ok "f. api-$NODE leaves" wait_for 20 is "url_pod api uid" ""
t_ok "f. its sandbox is removed" wait_for 60 is "sandboxes_of $API_UID" 0
t_is "$(url_pod web phase)" Running "f. web keeps running"

# ---- g. the same name in the directory and the URL: both run (names are unique per source)
cat >"$M/web.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3602"]
Y
t_ok "g. the directory's web-$NODE reaches Running" wait_for 180 is \
	"status_py \"[p['phase'] for p in s['pods'] if p['name']=='web-$NODE' and p['source']=='$M/web.yaml']\"" "['Running']"
t_is "$(status_py "len([p for p in s['pods'] if p['name']=='web-$NODE'])")" 2 "g. two pods named web-$NODE"
t_is "$(url_pod web phase)" Running "g. the URL's web keeps running"

# ---- h. restart with a client certificate of another CA
WEB_UID=$(url_pod web uid)
ctrs=$(sandboxes_of "$WEB_UID")
tasks=$(ctr -n k8s.io tasks ls 2>/dev/null | grep -c RUNNING)
sed -i "s|$D/pki/client.crt|$D/pki/wrong.crt|; s|$D/pki/client.key|$D/pki/wrong.key|" /etc/cubelet/config.yaml
systemctl restart cubelet
t_ok "h. the wrong client certificate is refused and reported" wait_for 20 eval \
	"status_py \"s['manifestURL']['lastError']\" | grep -q '400 Bad Request'"
t_contains "$(status_py "s['manifestURL']['lastError']")" "$URL: 400 Bad Request" "h. with the URL"
sleep 3
t_ok "h. the URL's pod has its sandbox and container ($ctrs)" test "$ctrs" -ge 2
t_is "$(sandboxes_of "$WEB_UID")" "$ctrs" "h. ... and keeps them while the URL has not answered"
t_is "$(url_pod web uid)" "$WEB_UID" "h. the URL's web is known from the answer kept on disk"
t_is "$(status_py "s['manifestURL']['cache']['inUse']")" True "h. status: the kept answer is in use"
t_is "$(ctr -n k8s.io tasks ls 2>/dev/null | grep -c RUNNING)" "$tasks" \
	"h. all $tasks tasks still run: the directory's pod's and the URL's"
t_contains "$(journalctl -u cubelet --no-pager)" "$URL: 400 Bad Request; the pods of the answer kept on disk keep running" \
	"h. the journal"

# ---- i. a start with nginx down and web's processes killed (what a reboot
# leaves), the right certificate again; then nginx back with an empty PodList
WEB_CTRS=$(url_pod web containers)
systemctl stop cubelet
nginx_stop
for cg in $(find /sys/fs/cgroup/kubepods* -maxdepth 3 -type d -name "*pod$WEB_UID*" 2>/dev/null); do
	echo 1 >"$cg/cgroup.kill"
done
sed -i "s|$D/pki/wrong.crt|$D/pki/client.crt|; s|$D/pki/wrong.key|$D/pki/client.key|" /etc/cubelet/config.yaml
systemctl start cubelet
t_ok "i. nginx down: web runs again from the answer kept on disk" wait_for 180 eval \
	'[ "$(url_pod web phase)" = Running ] && [ "$(url_pod web containers)" != "$WEB_CTRS" ]'
t_is "$(url_pod web uid)" "$WEB_UID" "i. with its UID"
t_contains "$(journalctl -u cubelet --no-pager)" "$URL: 1 pods from the answer kept in '/var/lib/cubelet/manifest_url_cache'" \
	"i. the journal says where its pods come from"
t_ok "i. the fetch fails and is retried" wait_for 20 eval \
	"status_py \"s['manifestURL']['lastError']\" | grep -q 'Failed to connect'"
serve
nginx_start
t_ok "i. nginx back with an empty PodList: web goes" wait_for 30 is "url_pod web uid" ""
t_ok "i. its sandbox is removed" wait_for 60 is "sandboxes_of $WEB_UID" 0
t_is "$(status_py "[p['source'] for p in s['pods']]")" "['$M/web.yaml']" "i. the directory's pod stays"

"$CUBELET" status >"$VM_OUT/status.txt" 2>&1
t_ok "the status table shows the URL" grep -Eq \
	"^manifest URL $URL: (ok \\(HTTP 200\\)|notModified \\(HTTP 304\\)) at [0-9T:Z-]+, 0 pods; fetches [0-9]+ ok, [0-9]+ not modified, [0-9]+ errors$" \
	"$VM_OUT/status.txt"
journalctl -u cubelet --no-pager >"$VM_OUT/cubelet.journal" 2>&1
nginx_stop
cubelet_teardown
t_done
