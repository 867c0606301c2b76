#!/bin/sh
# Runs libFuzzer targets, each for FUZZ_SECONDS from its corpus in
# tests/fuzz/corpus/TARGET (new inputs go to a directory of the run's, or
# to FUZZ_KEEP/corpus-TARGET when set: `make fuzz` keeps them), with a
# fixed seed. One TAP line per target: its executions and corpus size; a
# crash, leak, timeout or sanitizer report is "not ok" with libFuzzer's
# report and the input that caused it (kept in FUZZ_ARTIFACTS).
#   tests/fuzz/run.sh FUZZ_DIR TARGET...
set -u
D=${1:?usage: run.sh FUZZ_DIR TARGET...}
shift
S=${FUZZ_SECONDS:-4}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ART=${FUZZ_ARTIFACTS:-$D/artifacts}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$ART"
echo "1..$#"
n=0
for t in "$@"; do
	n=$((n + 1))
	bin=$D/fuzz-$t
	if [ ! -x "$bin" ]; then
		echo "not ok $n - fuzz-$t: $bin was not built"
		continue
	fi
	work=${FUZZ_KEEP:+$FUZZ_KEEP/corpus-$t}
	work=${work:-$T/corpus-$t}
	mkdir -p "$work"
	started=$(date +%s.%N)
	# -rss_limit_mb, -timeout, -max_len: a slow or hungry input is a finding too
	"$bin" -seed=1 -max_total_time="$S" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$ART/$t-" "$work" "$ROOT/tests/fuzz/corpus/$t" \
		>"$T/$t.log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$T/$t.log")
	units=$(ls "$work" | wc -l)
	secs=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
	if [ "$rc" -eq 0 ] && [ -n "$execs" ]; then
		echo "ok $n - fuzz-$t: ${execs} executions in ${secs} s, no finding (seed corpus $(ls "$ROOT/tests/fuzz/corpus/$t" | wc -l), $units new inputs)"
	else
		echo "not ok $n - fuzz-$t: exit $rc after ${execs:-?} executions; the input in $ART/$t-*"
		grep -E '^(==|SUMMARY|ERROR|    #[0-9]|.*runtime error|artifact_prefix|Test unit written)' "$T/$t.log" |
			head -n 40 | sed 's/^/# /'
	fi
done
