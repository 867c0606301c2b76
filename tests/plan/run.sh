#!/bin/sh
# Golden-file tests of `cubelet plan`, in TAP. Run from the repository root:
#
#   tests/plan/run.sh CUBELET_BINARY
#
# tests/data/manifests/NAME.{yaml,json}  a valid pod; its plan on the node
#     tests/data/nodes/node-16gi.json must be tests/data/expected/NAME.json
#     byte for byte (exit 0, nothing on stderr). tests/data/expected/NAME.args,
#     if present, holds extra arguments (--config FILE, or --node FILE to use
#     another node). Manifests without metadata.uid get a UID hashed from
#     their content and absolute path: their expected file says <uid> where
#     the 32 hex digits go.
# tests/data/bad/NAME.{yaml,json}  a malformed input: exit 2, stderr exactly
#     tests/data/bad/NAME.err, and the file named in the "errors" array.
# tests/data/multi/NAME.args  the manifests of one run of several pods; its
#     stdout must be tests/data/multi/NAME.json (<uid> as above; an --node in
#     NAME.args wins over the default node: examples-burstable is the plan of
#     packaging/examples that docs/plan-admit-rank.md quotes).
set -u
CUBELET=${1:?usage: tests/plan/run.sh CUBELET_BINARY}
NODE=tests/data/nodes/node-16gi.json
# shellcheck disable=SC1091
. tests/golden-tap.sh

# The computed UID of a plan (32 hex digits), or nothing.
plan_uid() {
        sed -n 's/^ *"uid": "\([0-9a-f]\{32\}\)",\{0,1\}$/\1/p' "$1" | head -n 1
}

# Replaces the computed UID of plan $1 with <uid>, in place.
mask_uid() {
        u=$(plan_uid "$1")
        if [ -n "$u" ]; then
                sed "s/$u/<uid>/g" "$1" >"$1.masked" && mv "$1.masked" "$1"
        fi
}

# pin ARGS...: "--cgroup-driver cgroupfs" unless the arguments choose a
# driver (--cgroup-driver, or a --config whose cgroupDriver is set): the
# default depends on the host (systemd when PID 1 is systemd), the golden
# files on nothing.
pin() {
        prev=
        for a in "$@"; do
                case $a in --cgroup-driver*) return ;; esac
                if [ "$prev" = --config ] && grep -q '^cgroupDriver:' "$a" 2>/dev/null; then
                        return
                fi
                prev=$a
        done
        echo "--cgroup-driver cgroupfs"
}

# compare NAME EXPECTED ACTUAL: ok, or not ok with a diff
compare() {
        if cmp -s "$2" "$3"; then
                return 0
        fi
        not_ok "$1" "stdout differs from $2:"
        diff -u "$2" "$3" | sed "s/^/# /"
        return 1
}

# ---- valid manifests: golden output --------------------------------------
for m in tests/data/manifests/*.yaml tests/data/manifests/*.json; do
        [ -f "$m" ] || continue
        base=${m##*/}
        base=${base%.*}
        exp=tests/data/expected/$base.json
        name="plan $base"
        args=
        if [ -f "tests/data/expected/$base.args" ]; then
                args=$(cat "tests/data/expected/$base.args")
        fi
        if [ ! -f "$exp" ]; then
                not_ok "$name" "missing $exp"
                continue
        fi
        # shellcheck disable=SC2086,SC2046
        "$CUBELET" plan --node "$NODE" $(pin $args) $args "$m" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if grep -q '<uid>' "$exp"; then
                mask_uid "$tmp/out"
        fi
        if [ "$rc" -ne 0 ]; then
                not_ok "$name" "exit status $rc, expected 0; stderr:"
                diag "$tmp/err"
                continue
        fi
        if [ -s "$tmp/err" ]; then
                not_ok "$name" "unexpected output on stderr:"
                diag "$tmp/err"
                continue
        fi
        compare "$name" "$exp" "$tmp/out" && ok "$name"
done

# ---- malformed inputs: exit 2, one exact line on stderr, reported in "errors"
for f in tests/data/bad/*; do
        case $f in
        *.err) continue ;;
        esac
        [ -f "$f" ] || continue
        base=${f##*/}
        base=${base%.*}
        name="reject $base"
        errf=tests/data/bad/$base.err
        if [ ! -f "$errf" ]; then
                not_ok "$name" "missing $errf"
                continue
        fi
        "$CUBELET" plan --node "$NODE" --cgroup-driver cgroupfs "$f" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if [ "$rc" -ne 2 ]; then
                not_ok "$name" "exit status $rc, expected 2; stderr:"
                diag "$tmp/err"
                continue
        fi
        if ! cmp -s "$errf" "$tmp/err"; then
                not_ok "$name" "stderr differs from $errf:"
                diff -u "$errf" "$tmp/err" | sed "s/^/# /"
                continue
        fi
        if ! grep -qF "\"source\": \"$f\"" "$tmp/out"; then
                not_ok "$name" "the \"errors\" array of stdout does not name $f:"
                diag "$tmp/out"
                continue
        fi
        ok "$name"
done

# ---- several pods in one run: golden output -------------------------------
for a in tests/data/multi/*.args; do
        [ -f "$a" ] || continue
        base=${a##*/}
        base=${base%.args}
        name="plan several: $base"
        # shellcheck disable=SC2046
        "$CUBELET" plan --node "$NODE" $(pin $(cat "$a")) $(cat "$a") >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if grep -q '<uid>' "tests/data/multi/$base.json"; then
                mask_uid "$tmp/out"
        fi
        if [ "$rc" -ne 0 ] || [ -s "$tmp/err" ]; then
                not_ok "$name" "exit status $rc, expected 0 and an empty stderr:"
                diag "$tmp/err"
                continue
        fi
        compare "$name" "tests/data/multi/$base.json" "$tmp/out" && ok "$name"
done

# ---- two good manifests and a bad one: the good ones are still planned -----
name="two good manifests and a bad one: exit 2, the good ones planned"
good1=tests/data/manifests/t01-guaranteed.yaml
good2=tests/data/manifests/t25-besteffort.json
bad=tests/data/bad/b14-quantity-12XB.yaml
"$CUBELET" plan --node "$NODE" "$good1" "$bad" "$good2" >"$tmp/out" 2>"$tmp/err"
rc=$?
why=
[ "$rc" -eq 2 ] || why="exit status $rc, expected 2"
grep -qF '"name": "t01-guaranteed-node-1"' "$tmp/out" || why="$why; t01-guaranteed-node-1 not planned"
grep -qF '"name": "t25-besteffort-node-1"' "$tmp/out" || why="$why; t25-besteffort-node-1 not planned"
grep -qF "\"source\": \"$bad\"" "$tmp/out" || why="$why; $bad not in \"errors\""
[ "$(grep -c . "$tmp/err")" -eq 1 ] || why="$why; expected exactly one line on stderr"
grep -qxF "$(cat tests/data/bad/b14-quantity-12XB.err)" "$tmp/err" || why="$why; stderr does not hold the line of b14-quantity-12XB.err"
if [ -z "$why" ]; then
        ok "$name"
else
        not_ok "$name" "${why#; }"
        diag "$tmp/err"
        diag "$tmp/out"
fi

# ---- no manifest at all --------------------------------------------------
name="plan without a manifest exits 2"
"$CUBELET" plan >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ -s "$tmp/err" ]; then
        ok "$name"
else
        not_ok "$name" "exit status $rc, expected 2 and a message on stderr"
fi

# ---- an unknown cgroup driver ---------------------------------------------
name="plan --cgroup-driver bogus exits 2 naming the choices"
"$CUBELET" plan --node "$NODE" --cgroup-driver bogus tests/data/manifests/t01-guaranteed.yaml >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -qx "cubelet: error: plan: --cgroup-driver 'bogus': expected cgroupfs or systemd" "$tmp/err"; then
        ok "$name"
else
        not_ok "$name" "exit status $rc, expected 2 and one line on stderr:"
        diag "$tmp/err"
fi

# ---- a config kubelet's validation refuses ---------------------------------
name="plan --config with memoryThrottlingFactor 1.5 exits 2 naming the field"
printf 'featureGates:\n  MemoryQoS: true\nmemoryThrottlingFactor: 1.5\n' >"$tmp/factor.yaml"
"$CUBELET" plan --node "$NODE" --config "$tmp/factor.yaml" tests/data/manifests/m01-memqos-burstable.yaml >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -qxF "cubelet: error: $tmp/factor.yaml:3: memoryThrottlingFactor: Invalid value: 1.5: must be greater than 0 and less than or equal to 1.0" "$tmp/err"; then
        ok "$name"
else
        not_ok "$name" "exit status $rc, expected 2 and one line on stderr:"
        diag "$tmp/err"
fi

# ---- computed static pod UIDs: stable, and new for new content or path ----
name="computed UID: same file twice gives the same UID"
src=tests/data/manifests/x07-no-uid.yaml
"$CUBELET" plan --node "$NODE" "$src" >"$tmp/a" 2>/dev/null
"$CUBELET" plan --node "$NODE" "$src" >"$tmp/b" 2>/dev/null
ua=$(plan_uid "$tmp/a")
ub=$(plan_uid "$tmp/b")
if [ -n "$ua" ] && [ "$ua" = "$ub" ]; then
        ok "$name"
else
        not_ok "$name" "first '$ua', then '$ub'"
fi

name="computed UID: the same content at another path gets another UID"
cp "$src" "$tmp/copy.yaml"
"$CUBELET" plan --node "$NODE" "$tmp/copy.yaml" >"$tmp/c" 2>/dev/null
uc=$(plan_uid "$tmp/c")
if [ -n "$uc" ] && [ "$uc" != "$ua" ]; then
        ok "$name"
else
        not_ok "$name" "'$uc' at $tmp/copy.yaml, '$ua' at $src"
fi

name="computed UID: changed content at the same path gets another UID"
sed 's/app:1.0/app:1.1/' "$src" >"$tmp/copy.yaml"
"$CUBELET" plan --node "$NODE" "$tmp/copy.yaml" >"$tmp/d" 2>/dev/null
ud=$(plan_uid "$tmp/d")
if [ -n "$ud" ] && [ "$ud" != "$uc" ] && [ "$ud" != "$ua" ]; then
        ok "$name"
else
        not_ok "$name" "'$ud' after the edit, '$uc' before"
fi

# in-place resize (docs/resize.md): cpu/memory of a container are not part
# of the identity while the QoS class stays
name="computed UID: a cpu-only change at the same path keeps the UID (an in-place resize)"
sed 's/cpu: 200m/cpu: 300m/' "$src" >"$tmp/copy.yaml"
"$CUBELET" plan --node "$NODE" "$tmp/copy.yaml" >"$tmp/d" 2>/dev/null
ud=$(plan_uid "$tmp/d")
if [ -n "$ud" ] && [ "$ud" = "$uc" ]; then
        ok "$name"
else
        not_ok "$name" "'$ud' after the edit, '$uc' before"
fi

name="computed UID: a comment-only change keeps the UID"
{ echo "# a comment"; cat "$src"; } >"$tmp/copy.yaml"
"$CUBELET" plan --node "$NODE" "$tmp/copy.yaml" >"$tmp/e" 2>/dev/null
cp "$src" "$tmp/copy.yaml"
ue=$(plan_uid "$tmp/e")
if [ -n "$ue" ] && [ "$ue" = "$uc" ]; then
        ok "$name"
else
        not_ok "$name" "'$ue' with the comment, '$uc' without"
fi

tap_done
