#!/bin/sh
# Lint gates (style.md 2 and 23): every global symbol of a module archive
# carries the module prefix; banned calls and C++ comments stay out; the docs
# agree with the test data they quote (tests/docs-check.sh).
set -u
B=${1:?usage: lint.sh BUILD_DIR}
rc=0

check_prefix() {
        lib=$1
        prefix=$2
        bad=$(nm -g --defined-only "$B/$lib" 2>/dev/null | awk 'NF==3 && $2 ~ /[TDBR]/ {print $3}' | grep -v '^__odr_asan' | grep -v "^$prefix" || true)
        if [ -n "$bad" ]; then
                echo "lint: $lib exports symbols without the '$prefix' prefix:" $bad
                rc=1
        fi
}
check_prefix libcubutil.a cub_
check_prefix libpod.a pod_
check_prefix libcg.a cg_
check_prefix libcri.a cri_
check_prefix libworker.a worker_
check_prefix liblc.a lc_
check_prefix libpodsrc.a podsrc_
check_prefix libapi.a api_
check_prefix libcpumgr.a cpumgr_
check_prefix libadmit.a admit_
check_prefix libevict.a evict_
check_prefix libvol.a vol_
check_prefix libdp.a dp_
check_prefix libprobes.a probe_
# libproto.a also holds protoc-c's output (runtime__v1__*, containerd__services__events__v1__*, ...), named by the .proto package
bad=$(nm -g --defined-only "$B/libproto.a" 2>/dev/null | awk 'NF==3 && $2 ~ /[TDBR]/ {print $3}' | grep -v '^__odr_asan' | grep -v '^grpcx_' | grep -v '^runtime__v1__' | grep -v '^v1beta1__' | grep -v '^grpc__health__v1__' | grep -v '^containerd__services__events__v1__' || true)
if [ -n "$bad" ]; then
        echo "lint: libproto.a exports symbols without the 'grpcx_' prefix:" $bad
        rc=1
fi

SRCS=$(find agent cri proto eviction deviceplugin tests/unit tests/integration tests/fuzz -name '*.[ch]' | sort)
# shellcheck disable=SC2086
hits=$(grep -nE '\b(sprintf|strcpy|strcat|atoi|atol|gets|system|inotify_init|dup)\(' $SRCS | grep -v 'snprintf\|vsnprintf' || true)
if [ -n "$hits" ]; then
        echo "lint: banned calls:"; echo "$hits"; rc=1
fi
# shellcheck disable=SC2086
hits=$(grep -nE '(^|[^:"/])//' $(find agent cri proto eviction deviceplugin -name '*.[ch]') || true)
if [ -n "$hits" ]; then
        echo "lint: use /* */ comments:"; echo "$hits"; rc=1
fi
# shellcheck disable=SC2086
hits=$(grep -nE '\bexit\(' $(find agent cri proto eviction deviceplugin -name '*.c' ! -name main.c) || true)
if [ -n "$hits" ]; then
        echo "lint: exit() outside agent/cli/main.c:"; echo "$hits"; rc=1
fi
# shellcheck disable=SC2086
hits=$(grep -nE '[^_a-z]open(at)?\(' $(find agent cri proto eviction deviceplugin -name '*.c') | grep -v O_CLOEXEC || true)
if [ -n "$hits" ]; then
        echo "lint: open() without O_CLOEXEC:"; echo "$hits"; rc=1
fi
# The loop's layers (issue 25): no call or #include circle between agent/loop's files but the pod
# table's and its actions' (tests/loop-graph.py; -v prints the graph).
if ! python3 tests/loop-graph.py "$B"; then
        echo "lint: the loop's files call each other in a circle (tests/loop-graph.py)"; rc=1
fi
# struct Agent (issue 42): at most 30 fields another file of the loop can read; the rest are its owners' objects.
if ! python3 tests/agent-fields.py agent/loop/agent-internal.h; then
        echo "lint: struct Agent has more than 30 readable fields (tests/agent-fields.py -v)"; rc=1
fi
# The #include graph (issue 42): no circle among the product's headers (pod/'s parts include
# pod-model.h, the umbrella pod.h includes them), none between its folders (tests/include-graph.py).
if ! python3 tests/include-graph.py .; then
        echo "lint: an #include circle (tests/include-graph.py)"; rc=1
fi
# One writer of a pod's record (issue 42): LcPod's fields are written in agent/lifecycle alone,
# through its named transitions. Every other product file that can see an LcPod is compiled with
# LC_POD_READ_ONLY, which makes the fields const: the compiler names any other write.
cflags="$(make -s --no-print-directory print-cflags 2>/dev/null) -I$B/gen"
lcfiles=$(grep -rlE 'LcPod|lifecycle\.h|agent-internal\.h' agent cri eviction deviceplugin --include='*.c' | grep -v '^agent/lifecycle/' | sort)
if [ "$cflags" = " -I$B/gen" ] || [ -z "$lcfiles" ]; then
        echo "lint: the one-writer check has no compiler flags or no files"; rc=1
fi
for f in $lcfiles; do
        # shellcheck disable=SC2086
        if ! out=$(${CC:-cc} $cflags -DLC_POD_READ_ONLY -fsyntax-only "$f" 2>&1); then
                echo "lint: $f writes an LcPod outside agent/lifecycle (use a transition of lifecycle.h):"
                echo "$out" | grep -E 'error' | head -5; rc=1
        fi
done
# No product source over 600 lines (the style guide; the tests' own files are not held to it).
# shellcheck disable=SC2046
long=$(wc -l $(find agent cri proto eviction deviceplugin -name '*.[ch]' -not -path 'proto/*/*') | awk '$2 != "total" && $1 > 600')
if [ -n "$long" ]; then
        echo "lint: files over 600 lines:"; echo "$long"; rc=1
fi
# A VM scenario's "# vm-…" headers are read from its first 30 lines alone (run-vm.sh,
# run-scenarios.sh): one further down is silently the default (97-cluster's vm-timeout once).
late=$(for f in tests/vm/scenarios/*.sh tests/vm/extra/*.sh; do
        grep -n '^# vm-[a-z-]*:' "$f" | awk -F: -v f="$f" '$1 > 30 { print f ":" $1 ": " $2 }'
done)
if [ -n "$late" ]; then
        echo "lint: VM scenario headers past line 30 (not read):"; echo "$late"; rc=1
fi
# The docs (issue 25): the quoted test data equals its file, relative links resolve, README.md is
# at most 250 lines. Needs no build; `bash tests/docs-check.sh` runs it alone.
if ! bash tests/docs-check.sh; then
        echo "lint: the docs are out of step (tests/docs-check.sh)"; rc=1
fi
[ $rc -eq 0 ] && echo "lint: clean"
exit $rc
