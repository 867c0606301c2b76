#!/bin/sh
# Runs every test suite of a build directory and ends with one line:
# "N passed, N failed". Suites speak TAP ("ok N - name" / "not ok N - name");
# exit 77 means skipped (the suite prints why).
set -u
B=${1:?usage: run-tests.sh BUILD_DIR}
export CMOCKA_MESSAGE_OUTPUT=TAP
export ASAN_OPTIONS=${ASAN_OPTIONS:-strict_string_checks=1:detect_stack_use_after_return=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
pass=0
fail=0
skip=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# each suite's wall seconds, for the table at the end of `make test`
timing() {
        [ -n "${TIMINGS:-}" ] && printf 'suite: %s\t%s\n' "$1" \
                "$(awk -v s="$2" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')" >>"$TIMINGS"
}

run_suite() {
        name=$1
        shift
        started=$(date +%s.%N)
        "$@" >"$log" 2>&1
        rc=$?
        # (the VM's, collected here, is timed by tests/test-all.sh)
        [ "$name" = "vm scenarios" ] && [ -n "${VM_SUITE_LOG:-}" ] || timing "$name" "$started"
        ok=$(grep -c '^ok ' "$log")
        nok=$(grep -c '^not ok ' "$log")
        if [ "$rc" -eq 77 ]; then
                skip=$((skip + 1))
                echo "SKIP $name: $(tail -n 1 "$log")"
                return
        fi
        if [ "$rc" -ne 0 ] && [ "$nok" -eq 0 ]; then
                nok=1
        fi
        pass=$((pass + ok))
        fail=$((fail + nok))
        if [ "$nok" -gt 0 ]; then
                echo "FAIL $name ($ok passed, $nok failed, exit $rc):"
                sed 's/^/    /' "$log"
        else
                echo "PASS $name ($ok)"
        fi
}

for t in $(find "$B/tests/unit" -type f -perm -u+x -name 'test-*' 2>/dev/null | sort); do
        run_suite "${t#"$B"/tests/}" "$t"
done
for t in $(find "$B/tests/fuzz" -type f -perm -u+x -name 'replay-*' 2>/dev/null | sort); do
        target=${t##*/replay-}
        run_suite "fuzz corpus $target" "$t" tests/fuzz/corpus/"$target"
done
# libFuzzer, a few seconds per target (`make fuzz` runs them longer): with clang
if [ "${FUZZ_TEST:-1}" = 1 ] && command -v clang >/dev/null; then
	run_suite "fuzz (libFuzzer, ${FUZZ_TEST_SECONDS:-4} s per target)" sh -c \
		"${MAKE:-make} --no-print-directory -j2 fuzz-build >&2 && FUZZ_SECONDS=${FUZZ_TEST_SECONDS:-4} tests/fuzz/run.sh \"\$(${MAKE:-make} --no-print-directory -s print-fuzz-dir)\" \$(${MAKE:-make} --no-print-directory -s print-fuzz-targets)"
fi
run_suite "plan golden files" tests/plan/run.sh "$B/cubelet"
run_suite "admit golden files" tests/admit/run.sh "$B/cubelet"
run_suite "rank golden files" tests/rank/run.sh "$B/cubelet"
run_suite "device manager interop (python3-grpcio)" tests/interop/run-device-manager.sh "$B"
run_suite "device manager in the agent interop (python3-grpcio)" tests/interop/run-device-agent.sh "$B"
run_suite "gpu plugin interop (python3-grpcio)" tests/interop/run-gpu-plugin.sh "$B"
run_suite "cluster node (the real control plane, in a network namespace of its own)" tests/cluster/run-node.sh "$B"
run_suite "cluster node against a hostile API server" tests/cluster/run-hostile.sh "$B"
run_suite "hollow nodes: bench-scale's harness, 3 cubelets and 3 kubemark kubelets" tests/cluster/run-hollow.sh "$B"
run_suite "integration (containerd)" tests/integration/run.sh "$B" "${IMAGES_DIR:-build/images}"
run_suite "native lane (cubelet + a private containerd, cgroupsPerQOS: false)" tests/native/run.sh "$B" "${IMAGES_DIR:-build/images}"
run_suite "native lane: probes, hooks, env, logs and exec (tests/native/probes-logs.sh)" tests/native/probes-logs.sh "$B" "${IMAGES_DIR:-build/images}"
run_suite "native lane: pods from a manifest URL over mutual TLS (tests/native/http-source.sh)" tests/native/http-source.sh "$B" "${IMAGES_DIR:-build/images}"
run_suite "native lane: the kubelet oracle (kubelet 1.34 and cubelet on tests/data/oracle)" tests/native/oracle.sh "$B" "${IMAGES_DIR:-build/images}"
run_suite "native lane: the oracle's self-test (tests/data/oracle-selftest)" env ORACLE_WAIT=0 tests/native/oracle.sh "$B" "${IMAGES_DIR:-build/images}" tests/data/oracle-selftest
# Kubernetes' own node conformance tests, a fast subset, against cubelet as the one node of the
# real control plane (tests/conformance/README.md; `make conformance` runs the whole set); a
# missing e2e.test is a failure here, not a skip
if [ -x build/conformance/e2e.test ]; then
        run_suite "native lane: Kubernetes' conformance subset against cubelet (tests/conformance/fast.txt)" \
                env CONFORMANCE_LIST=tests/conformance/fast.txt CONFORMANCE_TIMEOUT=15m \
                CONFORMANCE_LABELS='(Conformance || NodeConformance) && (sig-node || sig-storage) && !Serial && !Disruptive && !Slow' \
                tests/conformance/run.sh "$B" cubelet build/conformance/fast
else
        echo "FAIL native lane: Kubernetes' conformance subset: no build/conformance/e2e.test (make conformance-peers)"
        fail=$((fail + 1))
fi
if [ -x tests/images/run.sh ]; then
        run_suite "images" tests/images/run.sh
fi
run_suite "lint" sh -c "tests/lint.sh '$B' && echo 'ok 1 - lint' || echo 'not ok 1 - lint'"
if command -v clang-format >/dev/null; then
        run_suite "format" sh -c "make --no-print-directory format-check && echo 'ok 1 - clang-format' || echo 'not ok 1 - clang-format'"
fi
# the clang build (-Werror): compile and link (`make check-clang` finds it done)
if [ "${CLANG_BUILD:-1}" = 1 ] && command -v clang >/dev/null; then
        run_suite "clang build (-Werror, -j2)" sh -c "${MAKE:-make} --no-print-directory check-clang >&2 && echo 'ok 1 - clang build' || echo 'not ok 1 - clang build'"
fi
# The VM scenarios: run here, or (tests/test-all.sh) already running in the
# background: their output and status are collected once they are done.
if [ "${VM_TESTS:-0}" = 1 ] && [ -n "${VM_SUITE_LOG:-}" ]; then
        echo "(waiting for the VM scenarios: $VM_SUITE_LOG)"
        while [ ! -f "$VM_SUITE_RC" ]; do sleep 5; done
        run_suite "vm scenarios" sh -c "cat '$VM_SUITE_LOG'; exit \$(cat '$VM_SUITE_RC')"
elif [ "${VM_TESTS:-0}" = 1 ] && [ -x tests/vm/run-scenarios.sh ]; then
        run_suite "vm scenarios" env VM_IMAGES="$(cd "${IMAGES_DIR:-build/images}" && pwd)" tests/vm/run-scenarios.sh
fi

[ "$skip" -gt 0 ] && echo "($skip suites skipped)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
