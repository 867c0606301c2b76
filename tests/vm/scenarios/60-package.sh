#!/bin/bash
# The Debian package, as README.md installs it. `make vm-debs` builds this tree twice on the
# host: $VM_DEBS/1 (the version of `make deb`) and $VM_DEBS/2 (the same + "+vmtest2", newer).
#   a. dpkg -i enables and starts cubelet (the hardened unit) with the package's config; with the
#      package's containerd drop-in linked the example pods run.
#   b. dpkg -i of the newer build restarts cubelet (new PID, new version) and no container: every
#      task's ID, PID and process start time, every container and sandbox ID is unchanged.
#   c. dpkg -r stops cubelet and leaves the pods running; the conffiles and state stay.
#   d. dpkg --purge removes /etc/cubelet, /var/lib/cubelet and the drop-in link, and touches no
#      container: neither cubelet's pods nor one that containerd runs for someone else.
# vm-guest: b
# vm-order: last
# vm-timeout: 1200
# vm-mem: 2048M
set -u
# shellcheck disable=SC1091
. "$VM_LIB/tap.sh"
t_node_clean
# shellcheck disable=SC1091
. "$VM_LIB/cubelet.sh"
CUBELET=/usr/bin/cubelet # the package's, for cubelet.sh's helpers

debs1=("${VM_DEBS:-/nonexistent}"/1/cubelet_*.deb)
debs2=("${VM_DEBS:-/nonexistent}"/2/cubelet_*.deb)
deb1=${debs1[0]} deb2=${debs2[0]}
if [ ! -f "$deb1" ] || [ ! -f "$deb2" ]; then
	t_fail "the two package builds are in ${VM_DEBS:-(VM_DEBS unset)}/{1,2} (make vm-debs)"
	t_done
	exit 1
fi
v1=$(dpkg-deb -f "$deb1" Version)
v2=$(dpkg-deb -f "$deb2" Version)
t_diag "package builds: $v1 -> $v2"
t_ok "build 2 ($v2) is newer than build 1 ($v1) to dpkg" dpkg --compare-versions "$v2" gt "$v1"

# The guest's root is the host's, a container image whose /usr/sbin/policy-rc.d (exit 101) stops
# maintainer scripts from starting services; a node has none.
rm -f /usr/sbin/policy-rc.d
# The guest's /var/lib/cubelet is a tmpfs mount point (tests/vm/README.md); purge must be able to
# remove the directory, as on a node.
mountpoint -q /var/lib/cubelet && umount /var/lib/cubelet && rmdir /var/lib/cubelet

# sandboxes UID: the CRI sandboxes containerd holds for a pod UID
sandboxes() {
	ctr -n k8s.io containers ls -q "labels.\"cubelet.io/pod-uid\"==$1,labels.\"io.cri-containerd.kind\"==sandbox" 2>/dev/null | wc -l
}

# snapshot: every task containerd runs in k8s.io (sandboxes and containers, cubelet's and the
# other one): "ID PID START" with START the process's start time in clock ticks after boot
# (/proc/PID/stat field 22), then every container ID containerd holds (running or not).
snapshot() {
	ctr -n k8s.io tasks ls 2>/dev/null | awk 'NR > 1 && $3 == "RUNNING" { print $1, $2 }' | sort |
		while read -r id pid; do
			echo "task $id $pid $(awk '{ print $22 }' "/proc/$pid/stat" 2>/dev/null)"
		done
	ctr -n k8s.io containers ls -q 2>/dev/null | sort | sed 's/^/container /'
}

# ---- a. install -------------------------------------------------------------------------------
# The example pods' image (the package ships only the sandbox image) and a container that
# containerd runs without cubelet, in the CRI's own namespace.
images=${VM_IMAGES:-}
if [ -z "$images" ] || [ ! -f "$images/busybox.tar" ]; then
	images=/tmp/images
	"$VM_REPO/packaging/images/build-images.sh" "$images" >>"$VM_OUT/scenario.log" 2>&1
fi
ctr -n k8s.io images import "$images/busybox.tar" >>"$VM_OUT/scenario.log" 2>&1
ctr -n k8s.io run -d localhost/cubelet/busybox:1 not-cubelets sleep 3600 >>"$VM_OUT/scenario.log" 2>&1
other=$(snapshot | grep '^task not-cubelets ')
t_contains "$other" "task not-cubelets " "a container that is not cubelet's runs in containerd's k8s.io namespace"

dpkg -i "$deb1" >"$VM_OUT/dpkg-install.txt" 2>&1
t_is "$?" 0 "dpkg -i cubelet_${v1}_amd64.deb succeeds"
t_is "$(systemctl is-enabled cubelet 2>&1)" enabled "cubelet.service is enabled"
t_is "$(systemctl is-active cubelet 2>&1)" active "cubelet.service is active (READY=1 under the hardened unit)"
t_is "$(systemctl show -p FragmentPath --value cubelet)" /lib/systemd/system/cubelet.service "the unit is the package's"
t_is "$("$CUBELET" version)" "{\"version\":\"$v1\"}" "cubelet version prints the package version"
t_is "$(dpkg-query -W -f='${Conffiles}' cubelet | awk '{ print $1 }' | sort | tr '\n' ' ')" \
	"/etc/cubelet/config.yaml /etc/cubelet/containerd.toml " "the two files in /etc/cubelet are conffiles"
t_is "$(grep '^cgroupDriver:' /etc/cubelet/config.yaml)" "cgroupDriver: cgroupfs" "the config names the cgroupfs driver"
t_is "$(grep '^ *SystemdCgroup' /etc/cubelet/containerd.toml | tr -d ' ')" "SystemdCgroup=false" \
	"the containerd config the package ships matches it (SystemdCgroup = false)"
t_is "$(systemd-analyze security cubelet.service 2>/dev/null | sed -n 's/^→ Overall exposure level for cubelet.service: //p')" \
	"4.8 OK 🙂" "systemd-analyze security: the hardened unit's exposure"

# README.md: link the containerd drop-in, restart containerd; cubelet rides the restart out.
mkdir -p /etc/systemd/system/containerd.service.d
ln -s /usr/share/cubelet/containerd-dropin.conf /etc/systemd/system/containerd.service.d/cubelet.conf
systemctl daemon-reload
systemctl restart containerd
t_contains "$(systemctl show -p ExecStart --value containerd)" "--config /etc/cubelet/containerd.toml" \
	"containerd runs with /etc/cubelet/containerd.toml"
t_contains "$(ctr -n k8s.io images ls -q)" localhost/cubelet/pause:1 "the drop-in imported the sandbox image"

cp /usr/share/doc/cubelet/examples/guaranteed.yaml /usr/share/doc/cubelet/examples/burstable.yaml \
	/usr/share/doc/cubelet/examples/besteffort.json "$M/"
for n in db web batch; do
	t_ok "example pod $n-$NODE reaches Running" wait_phase "$n-$NODE" Running 300
done
# db: sandbox + 2, web: sandbox + sidecar + app, batch: sandbox + worker; and not-cubelets.
t_is "$(ctr -n k8s.io tasks ls 2>/dev/null | grep -c RUNNING)" 9 "containerd runs 9 tasks: 3 sandboxes, 5 containers, not-cubelets"
t_is "$(journalctl -u cubelet --no-pager | grep -ciE 'not permitted|read-only file system|permission denied')" 0 \
	"the journal of the sandboxed cubelet has no EPERM, EROFS or EACCES"
sleep 5 # a few relists: nothing restarts on its own
before=$(snapshot)
printf '%s\n' "$before" >"$VM_OUT/snapshot-before.txt"
t_diag "before the upgrade: $(echo "$before" | grep -c '^task') tasks, $(echo "$before" | grep -c '^container') containers"
restarts0=$(for n in db web batch; do pod_field "$n-$NODE" restarts; done | tr '\n' ' ')
t_is "$restarts0" "0 0 0 " "no pod has restarted a container"

# ---- b. upgrade -------------------------------------------------------------------------------
pid1=$(systemctl show -p MainPID --value cubelet)
t0=$(date +%s%N)
dpkg -i "$deb2" >"$VM_OUT/dpkg-upgrade.txt" 2>&1
rc=$?
t1=$(date +%s%N)
t_is "$rc" 0 "dpkg -i cubelet_${v2}_amd64.deb (the upgrade) succeeds"
pid2=$(systemctl show -p MainPID --value cubelet)
t_is "$(systemctl is-active cubelet 2>&1)" active "cubelet.service is active after the upgrade"
t_ok "cubelet was restarted: MainPID $pid1 -> $pid2" test "$pid2" != "$pid1" -a "$pid2" != 0
t_is "$("$CUBELET" version)" "{\"version\":\"$v2\"}" "the running cubelet is the new build"
t_is "$(dpkg-query -W -f='${Version} ${Status}' cubelet)" "$v2 install ok installed" "dpkg records $v2"
conv=0
for _ in $(seq 240); do
	[ "$(for n in db web batch; do pod_field "$n-$NODE" phase; done | tr '\n' ' ')" = "Running Running Running " ] &&
		conv=1 && break
	sleep 0.25
done
t2=$(date +%s%N)
t_is "$conv" 1 "the new cubelet reports the three pods Running (adopted)"
t_diag "upgrade: dpkg -i took $(((t1 - t0) / 1000000)) ms; dpkg -i start to all pods Running in the new cubelet's status $(((t2 - t0) / 1000000)) ms"
echo "dpkg_ms=$(((t1 - t0) / 1000000)) adopted_ms=$(((t2 - t0) / 1000000))" >"$VM_OUT/upgrade-time.txt"
sleep 5 # a few relists of the new cubelet
after=$(snapshot)
printf '%s\n' "$after" >"$VM_OUT/snapshot-after-upgrade.txt"
t_is "$after" "$before" "after the upgrade every task ID, PID and start time and every container ID is unchanged"
t_is "$(for n in db web batch; do pod_field "$n-$NODE" restarts; done | tr '\n' ' ')" "0 0 0 " \
	"the new cubelet counts no restart"
for n in db web batch; do
	t_is "$(sandboxes "$(pod_field "$n-$NODE" uid)")" 1 "pod $n has one sandbox (none recreated)"
done
journalctl -u cubelet --no-pager >"$VM_OUT/cubelet-journal.txt" 2>&1
# How long cubelet was away: systemd's "Stopping" of the old one to "Started" (READY=1) of the new.
gap=$(journalctl -u cubelet -o short-monotonic --no-pager | awk '
	{ match($0, /\[ *[0-9.]+\]/); t = substr($0, RSTART + 1, RLENGTH - 2) + 0 }
	/Stopping cubelet.service/ { s = t }
	/Started cubelet.service/ && s != "" { g = t - s }
	END { if (g != "") printf "%d", g * 1000 }')
t_diag "upgrade: cubelet away for ${gap:-?} ms (Stopping -> Started, READY=1 of the new one)"
echo "restart_gap_ms=${gap:-?}" >>"$VM_OUT/upgrade-time.txt"

# ---- c. remove --------------------------------------------------------------------------------
dpkg -r cubelet >"$VM_OUT/dpkg-remove.txt" 2>&1
t_is "$?" 0 "dpkg -r cubelet succeeds"
t_is "$(systemctl is-active cubelet 2>&1)" inactive "cubelet is stopped"
t_ok "/usr/bin/cubelet is gone" test ! -e /usr/bin/cubelet
t_is "$(dpkg-query -W -f='${Status}' cubelet)" "deinstall ok config-files" "dpkg keeps the conffiles"
t_ok "/etc/cubelet/config.yaml and /var/lib/cubelet stay" test -f /etc/cubelet/config.yaml -a -d /var/lib/cubelet
t_is "$(snapshot)" "$before" "the pods keep running: every task and container unchanged"

# ---- d. purge ---------------------------------------------------------------------------------
ls -la /var/lib/cubelet >"$VM_OUT/state-before-purge.txt" 2>&1
dpkg --purge cubelet >"$VM_OUT/dpkg-purge.txt" 2>&1
t_is "$?" 0 "dpkg --purge cubelet succeeds"
t_is "$(dpkg-query -W -f='${Status}' cubelet 2>/dev/null)" "" "dpkg has forgotten cubelet"
t_ok "/etc/cubelet is gone" test ! -e /etc/cubelet
t_ok "/var/lib/cubelet is gone" test ! -e /var/lib/cubelet
t_ok "the containerd drop-in link is gone" test ! -e /etc/systemd/system/containerd.service.d/cubelet.conf -a \
	! -L /etc/systemd/system/containerd.service.d/cubelet.conf
t_is "$(systemctl is-active containerd)" active "containerd is untouched (active)"
t_is "$(snapshot)" "$before" "no container was touched: cubelet's pods and not-cubelets run as before"
t_is "$(snapshot | grep '^task not-cubelets ')" "$other" "not-cubelets: same task, PID and start time"

cubelet_teardown >/dev/null 2>&1
# the guest's /var/lib/cubelet as its boot made it (a tmpfs of its own,
# tests/vm/init), for 55-poweroff after this one in guest b
mkdir -p /var/lib/cubelet && mount -t tmpfs -o mode=0711 tmpfs /var/lib/cubelet
t_done
