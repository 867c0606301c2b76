# shellcheck shell=bash
# A real shutdown of the guest with graceful node shutdown on (issue 23
# part 4), for 55-poweroff (`systemctl poweroff`) and 56-shutdown-now
# (`shutdown -h now`), which go through logind (PrepareForShutdown, cubelet's
# delay lock; Debian 12's systemd 252), and 57-poweroff-target (`systemctl
# start poweroff.target`: systemd starts shutdown.target itself, no logind,
# cubelet's unit gets SIGTERM). Either way the regular pod stops first (its preStop hook, then
# its SIGTERM, which it takes 3 s to handle), then the critical one, within
# shutdownGracePeriod (20 s) + 1 s; logind's InhibitDelayMaxSec of another
# program's zz-other.conf (3 s) does not cut it short.
# The scenario outlives its unit's stop (KillMode=mixed: only the harness's
# run.sh gets SIGTERM, and carries on); it reads its results while the
# other units stop, then the guest powers off. It is the last of its guest
# ("# vm-order: last").
#
# poweroff_scenario logind|direct COMMAND...
poweroff_scenario() {
	local mode=$1
	shift
	# shellcheck disable=SC1091
	. "$VM_LIB/tap.sh"
	t_node_clean
	# shellcheck disable=SC1091
	. "$VM_LIB/cubelet.sh"

	X=/var/lib/cubelet-poweroff-test
	# this scenario's part of the journal: earlier ones of the guest's boot stopped cubelet too
	start=$(date +%s)
	mkdir -p $X /etc/systemd/logind.conf.d
	lock_held() { systemd-inhibit --list --no-pager 2>/dev/null | grep -q '^ *cubelet .* shutdown .* delay'; }
	printf '[Login]\nInhibitDelayMaxSec=3\n' >/etc/systemd/logind.conf.d/zz-other.conf
	systemctl kill -s HUP systemd-logind

	cubelet_install
	printf 'shutdownGracePeriod: 20s\nshutdownGracePeriodCriticalPods: 8s\n' >>/etc/cubelet/config.yaml
	# the regular pod takes 3 s to handle SIGTERM: longer than zz-other.conf's delay
	shutdown_pod regular 30 "" 'sleep 3; read u _ </proc/uptime; echo $u >/x/regular-exit'
	shutdown_pod critical 30 system-node-critical
	systemctl start cubelet
	for p in regular critical; do
		t_ok "pod $p reaches Running" wait_phase "$p-$NODE" Running 180
	done
	t_ok "cubelet holds its delay inhibitor lock (systemd-inhibit --list)" wait_until 20 lock_held

	# ---- the shutdown ----------------------------------------------------------------------
	read -r t0 _ </proc/uptime
	"$@"
	t_is "$?" 0 "'$*' returns at once (the guest keeps going while the pods stop)"
	cubelet_stopped() { # inactive or failed; "deactivating" while its SIGTERM handling runs
		case $(systemctl show -p ActiveState --value cubelet) in inactive | failed) return 0 ;; esac
		return 1
	}
	t_ok "systemd stops cubelet.service in the end" wait_until 60 cubelet_stopped
	read -r t1 _ </proc/uptime
	j=$(journalctl -o short-monotonic --no-pager -q -S "@$start" 2>/dev/null)
	mono() { # the last journal line with this text: its monotonic time
		echo "$j" | grep -F -- "$1" | tail -1 | sed 's/^\[ *\([0-9.]*\)\].*/\1/'
	}
	since() { awk -v a="$t0" -v b="$1" 'BEGIN { if (b == "") print "?"; else printf "%.1f", b - a }'; }
	case $mode in
	logind)
		t_ok "logind sent PrepareForShutdown: cubelet started the sequence on it" test -n \
			"$(mono 'graceful node shutdown: logind says the node shuts down')"
		;;
	direct)
		t_is "$(mono 'graceful node shutdown: logind says')" "" "no PrepareForShutdown came ('$*' bypasses logind)"
		t_ok "cubelet saw systemd stop the system on its SIGTERM and stopped the pods first" test -n \
			"$(mono 'systemd stops the system without logind')"
		;;
	esac
	for f in regular-prestop regular-term regular-exit critical-prestop critical-term; do
		t_ok "$f: written (${f%%-*}'s preStop hook ran, then its SIGTERM)" test -s "$X/$f"
	done
	rx=$(cat $X/regular-exit 2>/dev/null) cp=$(cat $X/critical-prestop 2>/dev/null) ct=$(cat $X/critical-term 2>/dev/null)
	released=$(mono 'graceful node shutdown: every pod stopped')
	# when cubelet learnt of the shutdown: logind's signal, or its SIGTERM while systemd stops the system
	begun=$(mono 'graceful node shutdown: logind says the node shuts down')
	[ -n "$begun" ] || begun=$(mono 'graceful node shutdown: systemd stops the system without logind')
	stopping=$(mono 'Stopping cubelet.service')
	stopped=$(echo "$j" | grep -E 'cubelet.service: (Deactivated|Failed|Main process exited)' | tail -1 |
		sed 's/^\[ *\([0-9.]*\)\].*/\1/')
	t_diag "since '$*' (guest uptime $t0): cubelet learnt of it $(since "$begun") s, regular SIGTERM handled $(since "$rx") s, critical preStop $(since "$cp") s," \
		"critical SIGTERM $(since "$ct") s, pods stopped $(since "$released") s, systemd stops cubelet" \
		"$(since "$stopping") s, cubelet gone $(since "$stopped") s"
	t_ok "the critical pod's preStop ran after the regular pod had stopped" \
		awk -v r="${rx:-x}" -v c="${cp:-0}" 'BEGIN { exit !(r != "x" && c >= r) }'
	t_ok "every pod stopped within shutdownGracePeriod (20 s) + 1 s of cubelet learning of the shutdown" \
		awk -v a="${begun:-0}" -v b="${released:-999999}" 'BEGIN { exit !(b - a <= 21) }'
	t_ok "zz-other.conf's 3 s did not cut it short: the regular pod had its 3 s" \
		awk -v a="$t0" -v b="${rx:-0}" 'BEGIN { exit !(b - a >= 3) }'
	case $mode in
	logind)
		t_ok "systemd began stopping cubelet only after cubelet had released its lock" \
			awk -v r="${released:-999999}" -v s="${stopping:-0}" 'BEGIN { exit !(s >= r) }'
		;;
	direct)
		t_ok "cubelet exited only after the pods had stopped, its stop timeout extended (not killed)" \
			awk -v r="${released:-999999}" -v s="${stopped:-0}" 'BEGIN { exit !(s >= r) }'
		t_is "$(echo "$j" | grep -c 'cubelet.service: State .stop-sigterm. timed out')" 0 \
			"systemd did not kill cubelet for its time"
		;;
	esac
	t_diag "the guest powers off ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s after '$*')"
	t_done
}
