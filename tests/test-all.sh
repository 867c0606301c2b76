#!/bin/bash
# `make test`: every suite, with the VM's guests running beside the host's.
#   1. the build dependencies (apt-get, as root), the release build (-j2), the
#      images, and for the VM its kernel, initramfs and the two package builds
#   2. the VM scenarios start in the background (tests/vm/run-scenarios.sh:
#      guests shared by several scenarios, VM_JOBS of them at once)
#   3. meanwhile the ASan+UBSan build and the host suites (tests/run-tests.sh),
#      then the clang build (-Werror, compile and link)
#   4. the VM's TAP joins the others, and a table of where the time went:
#      each step, suite, guest and scenario with its wall seconds, and the total
# Ends with "N passed, N failed" for everything. VM_TESTS=0 leaves out the VM.
#
#   tests/test-all.sh BUILD_DIR MAKE
set -u
B=${1:?usage: test-all.sh BUILD_DIR MAKE}
MAKE=${2:-make}
VM_TESTS=${VM_TESTS:-1}
mkdir -p "$B"
BUILD=$(cd "$B" && pwd)
export TIMINGS=$BUILD/timings.tsv
: >"$TIMINGS"
t0=$(date +%s.%N)

since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }
# step WHAT CMD...: CMD with its wall seconds in the table; stops at a failure
step() {
	what=$1
	shift
	s=$(date +%s.%N)
	"$@"
	rc=$?
	printf '%s\t%s\n' "$what" "$(since "$s")" >>"$TIMINGS"
	if [ "$rc" != 0 ]; then
		echo "test-all: $what failed (exit $rc)" >&2
		exit "$rc"
	fi
}

step "deps (apt-get, when missing)" tests/install-deps.sh
step "build: release, images, fake NVML (-j2)" \
	$MAKE --no-print-directory -j2 all images "$B/tests/fakes/libnvidia-ml.so.1"
vm_pid=""
if [ "$VM_TESTS" = 1 ]; then
	# the two package builds are 60-package's (the CI tier's since it fits)
	debs=vm-debs
	step "build: VM kernel, initramfs, ${debs:+package builds, }status-fetch" \
		$MAKE --no-print-directory -j2 vm-image $debs vm-tools
	# the real control plane for 97-cluster (Go, test peers only): seconds
	# with the module and build caches, about 5 min without them; not
	# built in 10 min, the scenario says so and skips
	s=$(date +%s.%N)
	timeout 600 $MAKE --no-print-directory cluster-peers >/dev/null 2>&1 ||
		echo "test-all: build/cluster/kube not built (make cluster-peers): 97-cluster will skip" >&2
	printf '%s\t%s\n' "build: the control plane (make cluster-peers, Go)" "$(since "$s")" >>"$TIMINGS"
	# the VM suite's output and status, collected by run-tests.sh
	export VM_SUITE_LOG=$BUILD/vm-suite.log VM_SUITE_RC=$BUILD/vm-suite.rc
	rm -f "$VM_SUITE_LOG" "$VM_SUITE_RC"
	(
		s=$(date +%s.%N)
		VM_TIMINGS=$TIMINGS VM_IMAGES=$BUILD/images tests/vm/run-scenarios.sh >"$VM_SUITE_LOG" 2>&1
		rc=$?
		printf '%s\t%s\n' "suite: vm scenarios (from start to last guest's end)" \
			"$(since "$s")" >>"$TIMINGS"
		echo "$rc" >"$VM_SUITE_RC"
	) &
	vm_pid=$!
	echo "test-all: the VM scenarios run in the background (log: $VM_SUITE_LOG)"
fi
# Kubernetes' conformance suite (e2e.test, agnhost, nonewprivs: Go, test peers
# only) for the native lane's conformance subset: a link of cached packages
# with the Go caches warm; not built in 15 min, the subset says so and fails
s=$(date +%s.%N)
timeout 900 $MAKE --no-print-directory cluster-peers conformance-peers >/dev/null 2>&1 ||
	echo "test-all: build/conformance/e2e.test not built (make conformance-peers)" >&2
printf '%s\t%s\n' "build: the conformance suite (make conformance-peers, Go)" "$(since "$s")" >>"$TIMINGS"
step "build: asan+ubsan, unit and integration tests (-j2)" \
	$MAKE --no-print-directory -j2 VARIANT=asan unit-test-build
# the suites (run-tests.sh times each one), the clang build among them, and
# the VM's suite once it is done
VM_TESTS=$VM_TESTS IMAGES_DIR=$BUILD/images MAKE=$MAKE tests/run-tests.sh "$B/asan"
rc=$?
[ -n "$vm_pid" ] && wait "$vm_pid"
printf '%s\t%s\n' "total" "$(since "$t0")" >>"$TIMINGS"

echo
echo "Where the time went (wall seconds; the VM runs beside the host's suites, so the lines overlap):"
awk -F'\t' '{ printf "  %-72s %8s\n", $1, $2 }' "$TIMINGS"
exit "$rc"
