# Shared by the golden-file suites (tests/{plan,admit,rank}/run.sh), sourced
# from the repository root: a scratch directory $tmp removed on exit, and TAP
# output. Call tap_done last: it prints the plan and sets the exit status.
unset JOURNAL_STREAM CUBELET_LOG_LEVEL

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

n=0
failed=0

ok() {
        n=$((n + 1))
        echo "ok $n - $1"
}

# not_ok DESCRIPTION [DIAGNOSTIC LINE...]
not_ok() {
        n=$((n + 1))
        failed=$((failed + 1))
        echo "not ok $n - $1"
        shift
        for line in "$@"; do
                echo "# $line"
        done
}

# Prints a file as TAP diagnostics.
diag() {
        sed 's/^/# /' "$1"
}

tap_done() {
        echo "1..$n"
        [ "$failed" -eq 0 ]
}
