#!/bin/bash
# A node that starts offline (issue 23 part 6, the manifest URL's half): a
# pod from staticPodURL (a real nginx on the loopback) runs; then what a
# reboot with the server down leaves: cubelet stopped, the pod's processes
# killed (cgroup.kill), nginx stopped. cubelet started: the pod runs again
# from the answer kept on disk (<stateDir>/manifest_url_cache), same UID, a
# new container, about as soon as the static pod beside it; nginx back with a changed
# list: the node converges (the old pod goes, the new one runs).
# tests/native/http-source.sh does the same over mutual TLS among its
# other checks.
# vm-guest: b
# vm-timeout: 600
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

D=/srv/cubelet-url-offline-vm
PORT=18081
URL=http://127.0.0.1:$PORT/pods.yaml
rm -rf "$D"
sh "$VM_REPO/tests/unit/agent/config/http-nginx.sh" "$D" "$PORT" 18444
nginx_start() {
	setsid nginx -p "$D" -c "$D/nginx.conf" >>"$VM_OUT/nginx.log" 2>&1 &
	NGINX=$!
	wait_until 30 curl -s -o /dev/null "http://127.0.0.1:$PORT/"
}
nginx_stop() { kill "$NGINX" 2>/dev/null; wait "$NGINX" 2>/dev/null; }
serve() { # serve NAME...: a PodList of busybox pods, written whole, then renamed
	{
		printf 'apiVersion: v1\nkind: PodList\nitems:\n'
		for n in "$@"; do
			printf -- '- metadata: {name: %s}\n  spec:\n    terminationGracePeriodSeconds: 1\n' "$n"
			printf '    containers:\n    - name: app\n      image: localhost/cubelet/busybox:1\n'
			printf '      command: [sleep, "3600"]\n'
		done
	} >"$D/root/.pods.tmp"
	mv "$D/root/.pods.tmp" "$D/root/pods.yaml"
}
url_pod() { # url_pod NAME FIELD
	status_json | jq -r --arg n "$1-$NODE" --arg u "$URL" \
		".pods[] | select(.name == \$n and .source == \$u) | .$2"
}
phase_is() { [ "$(url_pod "$1" phase)" = "$2" ]; }

cubelet_install
printf 'staticPodURL: %s\nhttpCheckFrequency: 2s\n' "$URL" >>/etc/cubelet/config.yaml
serve web
cat >"$M/st.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: st}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/cubelet/busybox:1
    command: [sleep, "3600"]
Y
nginx_start
systemctl daemon-reload
systemctl start cubelet
t_ok "the URL's pod web runs" wait_until 180 phase_is web Running
st() { status_json | jq -r --arg n "st-$NODE" ".pods[] | select(.name == \$n) | .$1"; }
t_ok "the static pod st runs" wait_until 180 eval '[ "$(st phase)" = Running ]'
uid=$(url_pod web uid) ctr=$(url_pod web 'containers[0].id') st_uid=$(st uid) st_ctr=$(st 'containers[0].id')
t_ok "the answer is kept on disk" test -s /var/lib/cubelet/manifest_url_cache

# ---- what a reboot with the server down leaves ------------------------------------------------
systemctl stop cubelet
for cg in $(find /sys/fs/cgroup/kubepods -maxdepth 3 -type d -name "pod$uid" -o -name "pod$st_uid" 2>/dev/null); do
	echo 1 >"$cg/cgroup.kill"
done
nginx_stop
t0=$(date +%s.%N)
systemctl start cubelet
# both polled together: when each runs again (a new container), from cubelet's start
t_web= t_st=
for _ in $(seq 360); do
	now=$(date +%s.%N)
	[ -z "$t_web" ] && phase_is web Running && [ "$(url_pod web 'containers[0].id')" != "$ctr" ] && t_web=$now
	[ -z "$t_st" ] && [ "$(st phase)" = Running ] && [ "$(st 'containers[0].id')" != "$st_ctr" ] && t_st=$now
	[ -n "$t_web" ] && [ -n "$t_st" ] && break
	sleep 0.5
done
t_ok "nginx down: web runs again from the answer kept on disk" test -n "$t_web"
t_ok "the static pod st runs again" test -n "$t_st"
d_web=$(awk -v s="$t0" -v e="${t_web:-0}" 'BEGIN { printf "%.1f", e - s }')
d_st=$(awk -v s="$t0" -v e="${t_st:-0}" 'BEGIN { printf "%.1f", e - s }')
t_diag "Running again after cubelet's start: web (the URL's, from disk) $d_web s, st (static) $d_st s"
# (the two pods' syncs share the worker pool: under load one may wait for the
# other's; a CI run had 57.0 s beside 51.1 s)
t_ok "web is back about as soon as the static pod (at most 1.5 × its time + 5 s)" \
	awk -v w="$d_web" -v s="$d_st" 'BEGIN { exit !(w > 0 && w <= s * 1.5 + 5) }'
t_is "$(st uid)" "$st_uid" "st keeps its UID"
t_is "$(url_pod web uid)" "$uid" "with its UID"
t_contains "$(journalctl -u cubelet --no-pager -q)" "$URL: 1 pods from the answer kept in '/var/lib/cubelet/manifest_url_cache'" \
	"the journal says where its pod comes from"
err() { [ -n "$(status_json | jq -r '.manifestURL.lastError')" ]; }
t_ok "the fetch fails and is retried" wait_until 30 err

# ---- the server back with a changed list ------------------------------------------------------
serve api
nginx_start
t_ok "nginx back with another list: web goes" wait_until 60 sh -c "[ -z \"\$($STATUS_JSON | jq -r '.pods[] | select(.name == \"web-$NODE\") | .uid')\" ]"
t_ok "and api runs" wait_until 180 phase_is api Running
t_is "$(status_json | jq -r '.manifestURL.lastError')" "" "no fetch error any more"

nginx_stop
rm -f "$M/st.yaml"
cubelet_teardown
rm -rf "$D"
t_done
