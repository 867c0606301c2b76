#!/bin/bash
# The pod network through containerd's CNI (bridge + host-local + portmap):
# cubelet writes /etc/cni/net.d/10-cubelet.conflist at start (podCIDR); two
# pods get their own network namespace and IPs in podCIDR (status podIP),
# one reaches the other's `busybox httpd` by pod IP; a hostPort reaches a pod
# from the node; the pod's /etc/hosts has its hostname, FQDN and hostAliases,
# its /etc/resolv.conf dnsConfig's nameserver; a hostNetwork pod sees the
# node's interfaces (the bridge) and has the node's IP as podIP. The VM has
# no network card: loopback, the bridge and veths only. Last, a pod whose
# sandbox cannot be torn down (the CNI plugins gone): its stop is retried with
# the pod worker's back-off, not in a hot loop (CPU, attempts, journal lines).
# vm-guest: b
# vm-timeout: 600
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"

# the kernel modules of bridge, veth and the iptables rules of bridge/portmap (autoloaded too, mostly)
for m in bridge veth br_netfilter nf_conntrack nf_nat nf_tables nft_chain_nat nft_compat xt_MASQUERADE \
	xt_comment xt_mark xt_multiport xt_addrtype xt_conntrack xt_nat; do
	modprobe "$m" >>"$VM_OUT/scenario.log" 2>&1
done
sysctl -qw net.ipv4.ip_forward=1
cubelet_install
rm -f /etc/cni/net.d/* # cubelet writes it (the lib installed the packaged one)
echo "podCIDR: 10.88.0.0/16" >>/etc/cubelet/config.yaml
cat >>/etc/cubelet/config.yaml <<'Y'
clusterDomain: cluster.local
Y
systemctl daemon-reload
systemctl start cubelet
t_is "$(systemctl is-active cubelet)" active "cubelet.service is active"
t_is "$(cat /etc/cni/net.d/10-cubelet.conflist 2>&1; echo)" "$(cat "$VM_REPO/packaging/cni/10-cubelet.conflist")" \
	"cubelet wrote /etc/cni/net.d/10-cubelet.conflist for podCIDR 10.88.0.0/16 (the packaged file's content)"

in_cidr() { case "$1" in 10.88.*.*) return 0 ;; *) return 1 ;; esac; }

# the log file of a pod's container (its CRI log, whatever the layout)
logof() { find /var/lib/cubelet/pods /var/log/pods -path "*_$1-${NODE}_*" -name '0.log' 2>/dev/null | grep "/$2/" | head -1; }
wait_log() { # wait_log POD CONTAINER TEXT [SECONDS]
	for i in $(seq $((${4:-60} * 2))); do
		f=$(logof "$1" "$2")
		[ -n "$f" ] && grep -q -- "$3" "$f" && return 0
		sleep 0.5
	done
	return 1
}

cat >"$M/server.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: server}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: httpd
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'mkdir -p /www && echo hello-from-server >/www/index.html && exec httpd -f -p 8080 -h /www']
    ports: [{containerPort: 8080, hostPort: 18080}]
Y
cat >"$M/hostnet.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  terminationGracePeriodSeconds: 2
  hostNetwork: true
  hostAliases: [{ip: 10.9.9.9, hostnames: [alias.hostnet]}]
  containers:
  - name: sh
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'ip -o link; echo ---; cat /etc/hosts; echo done-hostnet; exec sleep 3600']
Y
t_ok "pod server reaches Running" wait_phase "server-$NODE" Running 120
t_ok "pod hostnet reaches Running" wait_phase "hostnet-$NODE" Running 120
for i in $(seq 20); do
	sip=$(pod_field "server-$NODE" podIP)
	[ -n "$sip" ] && break
	sleep 0.5
done
t_ok "server's podIP '$sip' is in podCIDR 10.88.0.0/16" in_cidr "$sip"
t_is "$(pod_field "server-$NODE" hostIP)" "127.0.0.1" "server's hostIP is the node's (127.0.0.1: the VM has no network card)"

# (`timeout 5 wget`: busybox-static's own wget -T segfaults)
cat >"$M/client.yaml" <<Y
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  hostname: web-0
  subdomain: web
  dnsPolicy: None
  dnsConfig:
    nameservers: [10.96.0.10]
    searches: [my.domain]
    options: [{name: ndots, value: "2"}]
  hostAliases: [{ip: 10.1.2.3, hostnames: [db.local, cache.local]}]
  terminationGracePeriodSeconds: 2
  containers:
  - name: sh
    image: localhost/cubelet/busybox:1
    command: [sh, -c, 'hostname; cat /etc/hosts; cat /etc/resolv.conf; for i in \$(seq 60); do timeout 5 wget -q -O - http://$sip:8080/ && break; sleep 1; done; echo done-client; exec sleep 3600']
Y
t_ok "pod client reaches Running" wait_phase "client-$NODE" Running 120
cip=$(pod_field "client-$NODE" podIP)
t_ok "client's podIP '$cip' is in podCIDR" in_cidr "$cip"
t_ok "the two pods have different IPs" test "$cip" != "$sip"
t_ok "client's log ends (done-client)" wait_log client sh done-client 90
clog=$(cat "$(logof client sh)" 2>/dev/null | sed 's/^[^ ]* [^ ]* [^ ]* //')
t_contains "$clog" "hello-from-server" "client reached server's httpd at $sip:8080 by pod IP"
t_contains "$clog" "$(printf '%s\tweb-0.web.default.svc.cluster.local\tweb-0' "$cip")" \
	"/etc/hosts has the pod's IP, FQDN (subdomain) and hostname"
t_contains "$clog" "$(printf '10.1.2.3\tdb.local\tcache.local')" "/etc/hosts has hostAliases"
t_contains "$clog" "# Kubernetes-managed hosts file." "/etc/hosts is kubelet's managed file"
t_contains "$clog" "nameserver 10.96.0.10" "/etc/resolv.conf has dnsConfig's nameserver"
t_contains "$clog" "search my.domain" "/etc/resolv.conf has dnsConfig's search"
t_contains "$clog" "options ndots:2" "/etc/resolv.conf has dnsConfig's option"
t_is "$(printf '%s\n' "$clog" | head -1)" "web-0" "the container's hostname is spec.hostname"
uid=$(pod_field "client-$NODE" uid)
t_ok "the hosts file is at /var/lib/cubelet/pods/<uid>/etc-hosts" test -f "/var/lib/cubelet/pods/$uid/etc-hosts"

# hostPort through portmap, from the node
out=""
for i in $(seq 30); do
	out=$(curl -s -m 3 http://127.0.0.1:18080/ 2>&1) && break
	sleep 1
done
t_is "$out" "hello-from-server" "hostPort 18080 reaches server from the node (curl 127.0.0.1:18080)"
[ "$out" = "hello-from-server" ] || {
	t_diag "via the bridge: $(curl -s -m 3 http://10.88.0.1:18080/ 2>&1)"
	iptables-save >"$VM_OUT/iptables.txt" 2>&1
}

# the host network pod
t_ok "hostnet's log ends" wait_log hostnet sh done-hostnet 60
hlog=$(cat "$(logof hostnet sh)" 2>/dev/null)
t_contains "$hlog" "cubelet0" "a hostNetwork pod sees the node's interfaces (the bridge cubelet0)"
t_contains "$hlog" "# Kubernetes-managed hosts file (host network)." "hostnet's /etc/hosts: the node's, kubelet's header"
t_contains "$hlog" "$(printf '10.9.9.9\talias.hostnet')" "hostnet's /etc/hosts has its hostAliases"
t_is "$(pod_field "hostnet-$NODE" podIP)" "127.0.0.1" "hostnet's podIP is the node's IP"

# the HTTP API's /pods shows the same
pods=$(curl -s http://127.0.0.1:10255/pods)
t_contains "$pods" "\"podIP\":\"$sip\"" "/pods: server's podIP"
t_contains "$pods" "\"podIPs\":[{\"ip\":\"$cip\"}]" "/pods: client's podIPs"

# a restarted cubelet finds the pod IPs again (the relist asks PodSandboxStatus once per sandbox)
suid=$(pod_field "server-$NODE" uid)
before=$(sandboxes_of "$suid")
systemctl restart cubelet
for i in $(seq 40); do
	[ "$(pod_field "server-$NODE" podIP)" = "$sip" ] && break
	sleep 0.5
done
t_is "$(pod_field "server-$NODE" podIP)" "$sip" "after a cubelet restart server's podIP is the same"
t_is "$(sandboxes_of "$suid")" "$before" "... and its sandbox and container were kept ($before in containerd)"

# removal: the pod's hosts file goes with it
rm -f "$M/client.yaml"
t_ok "client goes away" wait_gone "client-$NODE" 90
t_ok "its hosts file is removed" sh -c "for i in \$(seq 40); do [ ! -e /var/lib/cubelet/pods/$uid/etc-hosts ] && exit 0; sleep 0.5; done; exit 1"

# ---- a pod that cannot be torn down: no hot loop ------------------------------------------
# containerd's CNI bin_dir goes empty (a bind mount over /usr/lib/cni), then
# server's manifest goes: each StopPodSandbox fails ("failed to destroy
# network") until the plugins are back. cubelet used to stop the pod again at
# once after each failure (~900 times a second, 59 % of a CPU, ~2,000 journal
# lines a second, on a real machine); the kill table retries with the pod
# worker's back-off (10 s ± 50 %, doubling, 5 min).
stopping() { status_json | jq -r ".stopping[] | select(.uid == \"$suid\") | $1"; }
stop_fails() { stopping .lastError | grep -q 'failed to destroy network'; }
sandbox_gone() { [ "$(sandboxes_of "$suid")" = 0 ]; }
said_removed() { journalctl -u cubelet --since "@$t0" -o cat | grep -q "pod default/server-$NODE (uid $suid) removed after"; }
# Both windows last 20 s, a multiple of every period of the loop's own work
# (the 10 s relist and log monitor, the 1 s ticks): each holds as many of
# each as the other. With 15 s windows one held one relist and the other two,
# and a relist under the two CI guests' load costs ~0.1 s of emulated CPU,
# 7 per mille of 15 s: the check failed at 28 vs 18 with no fault of cubelet's.
cpu0=$(cubelet_cpu)
sleep 20 # the idle figure
cpu1=$(cubelet_cpu)
idle=$(((cpu1 - cpu0) / 20000)) # per mille of a CPU over 20 s
# while the plugins are gone, kubelet's words (agent/lifecycle/reasons.c) too:
# a sandbox that cannot be created (nonet), an image that cannot be pulled
# (noimage); cubelet status (JSON and table), /pods and cubelet describe agree
W=/run/vm-92 && mkdir -p "$W"
cat >"$W/nonet.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: nonet}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: c, image: localhost/cubelet/busybox:1, command: [sleep, "3600"]}
Y
cat >"$W/noimage.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: noimage}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: c, image: localhost/cubelet/not-there:1}
Y
mkdir -p /run/cni-gone
mount --bind /run/cni-gone /usr/lib/cni
t0=$(date +%s)
rm -f "$M/server.yaml"
t_ok "server's stop fails without the CNI plugins: status lists it under \"stopping\" with the runtime's error" \
	wait_until 60 stop_fails
# the fault held: the failing stop alone
cpu2=$(cubelet_cpu)
sleep 20
cpu3=$(cubelet_cpu)
fault=$(((cpu3 - cpu2) / 20000)) # per mille over 20 s
attempts=$(stopping .attempts)
held=$(($(date +%s) - t0))
lines=$(journalctl -u cubelet --since "@$t0" -o cat | grep -c "$suid")
t_diag "cubelet CPU: idle $idle per mille of a CPU, $fault during the failing stop; $attempts stop attempts and $lines journal lines about the pod in $held s"
# under qemu's emulation an idle cubelet already takes about 1 % (its relist
# and the event stream). The window holds the first retry (10 s ± 50 % after
# the failure): one StopPodSandbox that fails in CNI, its status and journal
# line, ~0.1 s of emulated CPU alone and ~0.2 s with both CI guests running,
# 5 to 11 per mille of 20 s on top of a noise of about ±5 (CI runs gave 28
# vs 18, 24 vs 30, 15 vs 14, 28 vs 17), and more when the host itself is
# busy (a clean-clone CI with the native kubelet oracle beside the guests
# gave 53 vs 14: a guest's CPU clock also runs while its vCPU waits for the
# host). So the bound is 10 % here: the loop this guards against took 59 %
# (~900 attempts a second), and the count of attempts below is the exact
# check; the retries then space out (20 s, 40 s, ... 5 min) and the figure on
# real hardware, where an attempt costs milliseconds, is tests/hw's.
t_ok "the failing stop adds under 10 % of a CPU to cubelet's idle figure in the 20 s of its first retry ($fault per mille; idle $idle)" \
	test "$fault" -lt $((idle + 100))
t_ok "the stop was attempted 1 to 4 times in $held s, not in a loop ($attempts)" \
	test "${attempts:-0}" -ge 1 -a "${attempts:-0}" -le 4
t_ok "the journal has at most one line per attempt and one for the stop ($lines lines, $attempts attempts)" \
	test "$lines" -le $((${attempts:-0} + 1))
table=$("$CUBELET" status 2>&1 | grep -A1 STOPPING)
t_contains "$table" "default/server-$NODE (uid $suid): attempt " "cubelet status shows the stopping pod and its attempts"
t_contains "$table" "failed to destroy network" "... and the runtime's error"
mv "$W/nonet.yaml" "$W/noimage.yaml" "$M/"
t_ok "noimage: event Failed \"Failed to pull image ...\" (describe and status)" \
	wait_until 60 describe_event noimage Failed 'Failed to pull image "localhost/cubelet/not-there:1"'
# ErrImagePull lasts until the pull's retry (10 s): under a loaded emulation
# that window can pass before or while the four are read (one read says
# ErrImagePull, the next ImagePullBackOff); then the event says ErrImagePull
# was there, and the four must agree on ImagePullBackOff (below)
r=$(reasons_of noimage c)
if [ "$r" = "ErrImagePull ErrImagePull ErrImagePull ErrImagePull" ]; then
	t_ok "noimage/c: waiting reason ErrImagePull in cubelet status -o json, the status table, /pods and cubelet describe" true
elif [ -z "$(echo "$r" | tr ' ' '\n' | grep -v -x -e ErrImagePull -e ImagePullBackOff)" ]; then
	t_ok "noimage/c: ErrImagePull (its window passed as the four were read: $r; event Failed \"Error: ErrImagePull\")" \
		describe_event noimage Failed 'Error: ErrImagePull'
else
	reasons_agree noimage c ErrImagePull
fi
t_ok "nonet: event FailedCreatePodSandBox \"Failed to create pod sandbox: ...\" (describe and status)" \
	wait_until 60 describe_event nonet FailedCreatePodSandBox "Failed to create pod sandbox: "
reasons_agree nonet c ContainerCreating
backoff_pull() { [ "$(status_json | jq -r --arg n "noimage-$NODE" '.pods[] | select(.name == $n) | .containers[0].waitingReason')" = ImagePullBackOff ]; }
t_ok "noimage: the pull is retried after 10 s and the container waits in ImagePullBackOff" wait_until 40 backoff_pull
reasons_agree noimage c ImagePullBackOff
t_ok "noimage: event BackOff \"Back-off pulling image ...\"" describe_event noimage BackOff 'Back-off pulling image "localhost/cubelet/not-there:1"'
"$CUBELET" describe "noimage-$NODE" >"$VM_OUT/describe-noimage.txt" 2>&1
rm -f "$M/nonet.yaml" "$M/noimage.yaml"
umount /usr/lib/cni
# the next retry may be 80 s ± 50 % away (the back-off's fourth step): wait
# for the one status names, and 30 s more
next=$(stopping .nextAttemptInSeconds)
next=${next%.*}
t_ok "once the plugins are back the sandbox is removed at the next retry (due in ${next:-0} s)" \
	wait_until $((${next:-0} + 30)) sandbox_gone
t_ok "... and the journal says so once" wait_until 20 said_removed
t_is "$(stopping .uid)" "" "nothing is left stopping"

# ---- the runtime's network not ready (CRI Status NetworkReady=false) -------------------------
# containerd without a CNI config reports NetworkReady=false: the node is not
# ready with kubelet's message, a pod on the pod network waits (no
# RunPodSandbox) with the event NetworkNotReady, a host-network pod starts
mv /etc/cni/net.d/10-cubelet.conflist /run/vm-92/
net_down() { status_json | jq -e '.runtime.networkReady == false' >/dev/null; }
t_ok "cubelet sees NetworkReady=false within 5 s of containerd (runtime.networkReady)" wait_until 30 net_down
t_contains "$(status_json | jq -r .nodeReady.message)" "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:" \
	"nodeReady is False with kubelet's message"
t_contains "$(curl -s "http://127.0.0.1:10255/readyz?verbose")" "[-]runtime-network failed: container runtime network not ready" \
	"/readyz says why"
t_contains "$("$CUBELET" status 2>&1)" "node NOT READY: container runtime network not ready" "cubelet status says so"
cat >"$M/waitnet.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: waitnet}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: c, image: localhost/cubelet/busybox:1, command: [sleep, "3600"]}
Y
cat >"$M/hostok.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: hostok}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: c, image: localhost/cubelet/busybox:1, command: [sleep, "3600"]}
Y
t_ok "a host-network pod starts meanwhile" wait_phase "hostok-$NODE" Running 60
t_ok "waitnet: event NetworkNotReady \"network is not ready: container runtime network not ready: ...\"" \
	wait_until 30 describe_event waitnet NetworkNotReady "network is not ready: container runtime network not ready: NetworkReady=false"
wuid=$(pod_field "waitnet-$NODE" uid)
t_is "$(sandboxes_of "$wuid")" 0 "waitnet: no RunPodSandbox while the network is not ready (no sandbox in containerd)"
reasons_agree waitnet c ContainerCreating
mv /run/vm-92/10-cubelet.conflist /etc/cni/net.d/
t_ok "the CNI config back: waitnet runs" wait_phase "waitnet-$NODE" Running 60
t_is "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:10255/readyz)" 200 "/readyz is ok again"

cubelet_teardown
t_done
