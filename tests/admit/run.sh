#!/bin/sh
# Golden-file tests of `cubelet admit`, in TAP. Run from the repository root:
#
#   tests/admit/run.sh CUBELET_BINARY
#
# tests/data/admit/cases/NAME.args  the arguments of one run (inputs live in
#     tests/data/admit/). For gNN-* cases stdout must be NAME.json byte for
#     byte, with exit 0 and nothing on stderr; for eNN-* cases (bad input)
#     the exit status must be 2 and stderr exactly NAME.err, with nothing on
#     stdout.
set -u
CUBELET=${1:?usage: tests/admit/run.sh CUBELET_BINARY}
DIR=tests/data/admit/cases
# shellcheck disable=SC1091
. tests/golden-tap.sh

for a in "$DIR"/*.args; do
        [ -f "$a" ] || continue
        base=${a##*/}
        base=${base%.args}
        # shellcheck disable=SC2046
        "$CUBELET" admit $(cat "$a") >"$tmp/out" 2>"$tmp/err"
        rc=$?
        case $base in
        e*)
                name="reject $base"
                exp=$DIR/$base.err
                if [ ! -f "$exp" ]; then
                        not_ok "$name" "missing $exp"
                elif [ "$rc" -ne 2 ]; then
                        not_ok "$name" "exit status $rc, expected 2; stderr:"
                        diag "$tmp/err"
                elif ! cmp -s "$exp" "$tmp/err"; then
                        not_ok "$name" "stderr differs from $exp:"
                        diff -u "$exp" "$tmp/err" | sed 's/^/# /'
                elif [ -s "$tmp/out" ]; then
                        not_ok "$name" "unexpected output on stdout:"
                        diag "$tmp/out"
                else
                        ok "$name"
                fi
                ;;
        *)
                name="admit $base"
                exp=$DIR/$base.json
                if [ ! -f "$exp" ]; then
                        not_ok "$name" "missing $exp"
                elif [ "$rc" -ne 0 ]; then
                        not_ok "$name" "exit status $rc, expected 0; stderr:"
                        diag "$tmp/err"
                elif [ -s "$tmp/err" ]; then
                        not_ok "$name" "unexpected output on stderr:"
                        diag "$tmp/err"
                elif ! cmp -s "$exp" "$tmp/out"; then
                        not_ok "$name" "stdout differs from $exp:"
                        diff -u "$exp" "$tmp/out" | sed 's/^/# /'
                else
                        ok "$name"
                fi
                ;;
        esac
done

name="admit --help exits 0"
if "$CUBELET" admit --help >"$tmp/out" 2>&1 && grep -q '^Usage: cubelet admit' "$tmp/out"; then
        ok "$name"
else
        not_ok "$name"
fi

name="admit with two manifests exits 2"
"$CUBELET" admit --node tests/data/admit/node.json tests/data/admit/small.yaml tests/data/admit/small.yaml \
        >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ -s "$tmp/err" ] && [ ! -s "$tmp/out" ]; then
        ok "$name"
else
        not_ok "$name" "exit status $rc, expected 2 and a message on stderr"
fi

tap_done
