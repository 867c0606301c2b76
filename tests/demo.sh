#!/bin/sh
# `make demo`: until the agent runs pods in the VM, the main job is the
# plan — what cubelet would do for the example manifests on an example node.
set -eu
CUBELET=${1:-build/cubelet}
ex=packaging/examples
echo "== cubelet plan --config packaging/cubelet.yaml --node $ex/node.json $ex/*.yaml $ex/*.json"
"$CUBELET" plan --config packaging/cubelet.yaml --node "$ex/node.json" "$ex"/guaranteed.yaml "$ex"/burstable.yaml \
        "$ex"/besteffort.json
echo
echo "== a broken manifest beside a good one is reported, the good one is still planned (exit 2)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/cpu: "1"/cpu: "1.5.5"/' "$ex/guaranteed.yaml" >"$tmp/broken.yaml"
set +e
"$CUBELET" plan --node "$ex/node.json" "$tmp/broken.yaml" "$ex/besteffort.json" >"$tmp/out.json"
rc=$?
set -e
grep -E '"(name|qosClass|source|message)"' "$tmp/out.json"
echo "exit status: $rc"
