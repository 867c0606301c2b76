#!/bin/bash
# tests/conformance/both.sh BUILD_DIR OUT_DIR: the selected conformance tests (run.sh's
# CONFORMANCE_* variables) against the real kubelet 1.34.4 and against cubelet, at once, each the
# node of a control plane of its own in a sandbox of its own (tests/conformance/run.sh); then, with
# CONFORMANCE_SERIAL=1 (make conformance sets it), the node conformance tests labelled Serial,
# Disruptive or Slow, each agent on a fresh node again, one test at a time; and the table of both:
# OUT_DIR/table.md (test, kubelet, cubelet, the counts) and OUT_DIR/table.tsv. The kubelet's half
# is the control: a test it fails too is the environment's (no DNS, no kube-proxy, no registry),
# not cubelet's.
set -u
B=${1:?usage: both.sh BUILD_DIR OUT_DIR}
OUT=${2:?usage: both.sh BUILD_DIR OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"

# part SUFFIX: both agents at once, OUT/AGENT$SUFFIX and OUT/AGENT$SUFFIX.tap
part() {
	local agent pids=() s
	s=$(date +%s)
	for agent in kubelet cubelet; do
		"$HERE/run.sh" "$B" "$agent" "$OUT/$agent$1" >"$OUT/$agent$1.tap" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	for agent in kubelet cubelet; do
		echo "$agent$1: $(grep '^# .*passed' "$OUT/$agent$1.tap" | tail -n 1) ($(($(date +%s) - s)) s wall; $OUT/$agent$1.tap)"
	done
}

part ""
k=$OUT/kubelet/results.tsv c=$OUT/cubelet/results.tsv
if [ -n "${CONFORMANCE_SERIAL:-}" ]; then
	CONFORMANCE_LABELS='Conformance && (sig-node || sig-storage) && (Serial || Disruptive || Slow)' \
		CONFORMANCE_FOCUS='' CONFORMANCE_SHARD='' CONFORMANCE_LIST='' part -serial
	k=$k,$OUT/kubelet-serial/results.tsv c=$c,$OUT/cubelet-serial/results.tsv
fi
/usr/bin/python3 "$HERE/junit.py" --table "$k" "$c" "$OUT/table.tsv" >"$OUT/table.md"
tail -n 3 "$OUT/table.md"
