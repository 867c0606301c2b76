#!/bin/bash
# tests/conformance/both.sh BUILD_DIR OUT_DIR: the selected conformance tests (run.sh's
# CONFORMANCE_* variables) against the real kubelet 1.34.4, then against cubelet, each on a fresh
# node and control plane (tests/conformance/run.sh), and the table of both: OUT_DIR/table.md
# (test, kubelet, cubelet) and OUT_DIR/table.tsv. The kubelet's half is the control: a test it
# fails too is the environment's (no DNS, no kube-proxy, no registry), not cubelet's.
set -u
B=${1:?usage: both.sh BUILD_DIR OUT_DIR}
OUT=${2:?usage: both.sh BUILD_DIR OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
for agent in kubelet cubelet; do
	s=$(date +%s)
	"$HERE/run.sh" "$B" "$agent" "$OUT/$agent" >"$OUT/$agent.tap" 2>&1
	echo "$agent: $(grep '^# .*passed' "$OUT/$agent.tap" | tail -n 1) ($(($(date +%s) - s)) s wall; $OUT/$agent.tap)"
done
/usr/bin/python3 "$HERE/junit.py" --table "$OUT/kubelet/results.tsv" "$OUT/cubelet/results.tsv" "$OUT/table.tsv" >"$OUT/table.md"
tail -n 3 "$OUT/table.md"
