# Measurement helpers shared by the VM bench (tests/vm/bench/bench.sh) and the
# real-hardware run (tests/hw/run.sh). The caller defines say (print and log),
# cubelet_pid (the running agent's PID) and MEASURE_LOG (a log file).
# shellcheck shell=bash

# ms: percentile P of column C of FILE (microseconds in, milliseconds out)
pct() {
	awk -v c="$3" '$1 !~ /^#/ { print $c }' "$1" | sort -n |
		awk -v p="$2" '{ a[NR] = $1 } END { i = int((NR * p + 99) / 100); if (i < 1) i = 1; printf "%.1f", a[i] / 1000 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# footprint LABEL: RSS, breakdown, threads of the running cubelet
footprint() {
	pid=$(cubelet_pid)
	say "cubelet $1: VmRSS $(awk '/VmRSS/ {print $2}' "/proc/$pid/status") kB, VmHWM $(awk '/VmHWM/ {print $2}' "/proc/$pid/status") kB, threads $(ls "/proc/$pid/task" | wc -l)"
	say "  threads by name: $(cat "/proc/$pid"/task/*/comm | sort | uniq -c | awk '{ printf "%s%s x%d", (NR > 1 ? ", " : ""), $2, $1 }')"
	# Rss by kind: heap; anonymous: 64 MiB-aligned malloc arenas, 8 MiB
	# thread stacks, other; file-backed (cubelet's text, libraries); the rest
	awk '
		/^[0-9a-f]+-[0-9a-f]+ / {
			split($1, r, "-"); lo = r[1]; perm = $2; path = $6; k = ""
			next
		}
		/^Size:/ {
			sz = $2
			# 64 MiB-aligned: the last 6 hex digits 0, the 7th one of 0 4 8 c
			al = length(lo) >= 7 && substr(lo, length(lo) - 5) == "000000" && index("048c", substr(lo, length(lo) - 6, 1)) > 0
			if (path == "[heap]") k = "heap"
			else if (path == "[stack]") k = "main stack"
			else if (path ~ /^\//) k = (path ~ /cubelet$/ ? "cubelet binary" : "libraries and files")
			else if (path != "") k = "other " path
			else if (al && perm ~ /^rw/) k = "malloc arenas"
			else if (sz == 8192 || sz == 8188) k = "thread stacks"
			else k = "other anonymous"
			next
		}
		/^Rss:/ { rss[k] += $2; tot += $2 }
		END { for (k in rss) if (rss[k] > 0) printf "  %-22s %7d kB\n", k, rss[k]; printf "  %-22s %7d kB\n", "total (smaps Rss)", tot }
	' "/proc/$pid/smaps" | sort -k1,1 | tee -a "$MEASURE_LOG"
	awk '/^Rss:/ { } /^(Anonymous|Private_Dirty|Shared_Clean|Private_Clean):/ { s[$1] += $2 } END { printf "  (Anonymous %d kB, Private_Dirty %d kB, Private_Clean %d kB, Shared_Clean %d kB)\n", s["Anonymous:"], s["Private_Dirty:"], s["Private_Clean:"], s["Shared_Clean:"] }' "/proc/$pid/smaps" | tee -a "$MEASURE_LOG"
}

# idle_cpu SECONDS: cubelet's CPU time over that many seconds
idle_cpu() {
	pid=$(cubelet_pid)
	ticks=$(getconf CLK_TCK)
	c0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	sleep "$1"
	c1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	echo "$(((c1 - c0) * 1000 / ticks)) ms over $1 s idle ($(awk -v c=$((c1 - c0)) -v t="$ticks" -v s="$1" 'BEGIN { printf "%.2f", c * 100 / t / s }')% of one CPU)"
}

# trim_probe: RSS before and after malloc_trim(0) called in cubelet through gdb
trim_probe() {
	command -v gdb >/dev/null || { say "  malloc_trim(0): no gdb in the guest"; return; }
	pid=$(cubelet_pid)
	r0=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
	timeout 120 gdb -p "$pid" -batch -nx -ex 'call (int) malloc_trim(0)' >>"$MEASURE_LOG" 2>&1
	r1=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
	say "  malloc_trim(0) through gdb: VmRSS $r0 -> $r1 kB"
}


# plan_sample CUBELET FILE: writes the bench's pause pod to FILE and sets
# files (the plan's "name=value" pod cgroup files) and weight (its cpu.weight)
plan_sample() {
	cat >"$2" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: b1, uid: bench-1}
spec:
  containers:
  - name: p
    image: localhost/cubelet/pause:1
    resources: {requests: {cpu: 10m, memory: 8Mi}}
Y
	mapfile -t files < <("$1" plan "$2" | jq -r '.pods[0].cgroup.files | to_entries[] | "\(.key)=\(.value)"')
	weight=$("$1" plan "$2" | jq -r '.pods[0].cgroup.files["cpu.weight"]')
}
