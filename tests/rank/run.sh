#!/bin/sh
# Golden-file tests of `cubelet rank`, in TAP. Run from the repository root:
#
#   tests/rank/run.sh CUBELET_BINARY
#
# tests/data/rank/NAME.expected  the exact stdout of a good run (exit 0,
#     nothing on stderr).
# tests/data/rank/NAME.err       the exact stderr of a bad run (exit 2,
#     nothing on stdout).
# The arguments are those of tests/data/rank/NAME.args when it exists
# (e.g. "--input tests/data/rank/memory.json --policy kubelet"), else
# "--input tests/data/rank/NAME.json". Every NAME.json is the input of some
# case.
set -u
CUBELET=${1:?usage: tests/rank/run.sh CUBELET_BINARY}
D=tests/data/rank
# shellcheck disable=SC1091
. tests/golden-tap.sh

# args NAME: the arguments of case NAME
args() {
        if [ -f "$D/$1.args" ]; then
                cat "$D/$1.args"
        else
                echo "--input $D/$1.json"
        fi
}

# ---- good inputs: exact stdout ------------------------------------------------
for exp in "$D"/*.expected; do
        [ -f "$exp" ] || continue
        base=${exp##*/}
        base=${base%.expected}
        a=$(args "$base")
        name="rank $base ($a)"
        # shellcheck disable=SC2086
        "$CUBELET" rank $a >"$tmp/out" 2>"$tmp/err"
        rc=$?
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
        if ! cmp -s "$exp" "$tmp/out"; then
                not_ok "$name" "stdout differs from $exp:"
                diff -u "$exp" "$tmp/out" | sed "s/^/# /"
                continue
        fi
        ok "$name"
done

# ---- bad inputs: exit 2, exact stderr, empty stdout -------------------------------
for errf in "$D"/*.err; do
        [ -f "$errf" ] || continue
        base=${errf##*/}
        base=${base%.err}
        a=$(args "$base")
        name="reject $base ($a)"
        # shellcheck disable=SC2086
        "$CUBELET" rank $a >"$tmp/out" 2>"$tmp/err"
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
        if [ -s "$tmp/out" ]; then
                not_ok "$name" "unexpected output on stdout:"
                diag "$tmp/out"
                continue
        fi
        ok "$name"
done

# ---- every input belongs to a case ----------------------------------------------
for j in "$D"/*.json; do
        [ -f "$j" ] || continue
        base=${j##*/}
        base=${base%.json}
        if [ ! -f "$D/$base.expected" ] && [ ! -f "$D/$base.err" ]; then
                not_ok "input $base has a case" "missing $D/$base.expected or $D/$base.err"
        fi
done

# ---- --help ----------------------------------------------------------------------
name="rank --help prints the usage and exits 0"
"$CUBELET" rank --help >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^Usage: cubelet rank --input' "$tmp/out" && [ ! -s "$tmp/err" ]; then
        ok "$name"
else
        not_ok "$name" "exit status $rc"
        diag "$tmp/out"
fi

# ---- the order does not depend on the order of the input ---------------------------
name="rank: the same pods in reverse order give the same result"
if command -v python3 >/dev/null; then
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["pods"].reverse(); json.dump(d, open(sys.argv[2], "w"))' \
                "$D/memory.json" "$tmp/reversed.json"
        "$CUBELET" rank --input "$tmp/reversed.json" >"$tmp/out" 2>"$tmp/err"
        if cmp -s "$D/memory.expected" "$tmp/out"; then
                ok "$name"
        else
                not_ok "$name" "stdout differs from $D/memory.expected:"
                diff -u "$D/memory.expected" "$tmp/out" | sed "s/^/# /"
        fi
else
        ok "$name # SKIP python3 not installed"
fi

tap_done
