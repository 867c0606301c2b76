# cubelet — a small node agent for Kubernetes-style pods.
#
#   make            build/cubelet (optimised, with debug info)
#   make deps       install the build and test dependencies (apt-get, as root); without them
#                   `make` stops with one line naming what is missing
#   make deb        the Debian packages cubelet and cubelet-gpu-plugin (packaging/README.md)
#   make test       install build deps (as root), build with ASan+UBSan, run every suite
#   make demo       the main job (for now: `cubelet plan` on packaging/examples)
#   make fuzz       libFuzzer targets (clang), each run for FUZZ_SECONDS
#   make lint       symbol-prefix and banned-call gates; make format-check
#
# Every dependency comes through pkg-config.

CC      ?= cc
BUILD   ?= build
VARIANT ?= release
FUZZ_SECONDS ?= 60

PKGS := jansson yaml-0.1 libcgroup libsystemd libcrypto grpc libprotobuf-c libseccomp libnl-3.0 libnl-idiag-3.0 libcurl libmicrohttpd gnutls zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_CFLAGS := $(shell pkg-config --cflags cmocka 2>/dev/null)
CMOCKA_LIBS   := $(shell pkg-config --libs cmocka 2>/dev/null)

VERSION := $(shell git describe --always --dirty 2>/dev/null || echo 0.1.0)

# Without the build dependencies, `make` stops at once with one line naming what is missing and
# `make deps` (as root: apt-get install). The goals that install them first, or need none, skip it.
NO_DEPS_GOALS := deps vm-deps test demo bench clean vm-clean format format-check deb vm-debs
ifneq ($(if $(MAKECMDGOALS),$(filter-out $(NO_DEPS_GOALS),$(MAKECMDGOALS)),all),)
MISSING_DEPS := $(shell tests/check-build-deps.sh '$(CC)' $(PKGS))
ifneq ($(MISSING_DEPS),)
$(error missing build dependencies: $(MISSING_DEPS); run 'make deps' as root to install them (apt-get))
endif
endif

# The warning set of shared/style.md, each flag probed against $(CC).
WARN_CANDIDATES := -Wall -Wextra -Werror -Wformat=2 -Werror=format-security \
	-Werror=missing-prototypes -Werror=missing-declarations -Werror=strict-prototypes \
	-Wshadow -Werror=shadow -Werror=implicit-fallthrough -Werror=int-conversion \
	-Werror=incompatible-pointer-types -Werror=return-type -Werror=undef -Werror=pointer-arith \
	-Werror=write-strings -fno-common -fstack-protector-strong
probe = $(shell for f in $(1); do $(CC) -Werror $$f -x c -c /dev/null -o /dev/null 2>/dev/null && echo $$f; done)
WARN := $(call probe,$(WARN_CANDIDATES))
LDHARD := $(call probe,-Wl$(comma)-z$(comma)now -Wl$(comma)-z$(comma)relro)
comma := ,

ifeq ($(VARIANT),asan)
B := $(BUILD)/asan
OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
else
B := $(BUILD)
OPT := -O2 -g
endif

CFLAGS_ALL := -std=c17 -D_GNU_SOURCE $(OPT) $(WARN) -I. -I$(B)/gen $(PKG_CFLAGS) -DCUBELET_VERSION=\"$(VERSION)\" $(CPPFLAGS) $(CFLAGS)
LDFLAGS_ALL := $(OPT) -Wl,-z,now -Wl,-z,relro $(LDFLAGS)

UTIL_SRCS := $(wildcard agent/util/*.c)
POD_SRCS  := $(wildcard agent/pod/*.c)
CG_SRCS   := $(wildcard agent/cgroup/*.c)
AGENT_SRCS := $(wildcard agent/cli/*.c)
NODE_SRCS  := $(wildcard agent/node/*.c)
CONFIG_SRCS := $(wildcard agent/config/*.c)
CLUSTER_SRCS := $(wildcard agent/cluster/*.c)
WORKER_SRCS := $(wildcard agent/worker/*.c)
LC_SRCS     := $(wildcard agent/lifecycle/*.c)
LOOP_SRCS   := $(wildcard agent/loop/*.c)
MGR_SRCS    := $(wildcard agent/managers/*.c)
LOGS_SRCS   := $(wildcard agent/logs/*.c)
PROBE_SRCS  := $(wildcard agent/probes/*.c)
API_SRCS    := $(wildcard agent/api/*.c)
CPUMGR_SRCS := $(wildcard agent/cpumanager/*.c)
ADMIT_SRCS  := $(wildcard agent/admit/*.c)
EVICT_SRCS  := $(wildcard eviction/*.c)
VOL_SRCS    := $(wildcard agent/volumes/*.c)
SHUTDOWN_SRCS := $(wildcard agent/shutdown/*.c)
PROTO_SRCS := $(wildcard proto/*.c)
CRI_SRCS   := $(wildcard cri/*.c)
DP_SRCS    := $(wildcard deviceplugin/*.c)
GPU_SRCS   := $(wildcard deviceplugin/gpu/*.c)
PROTOS     := proto/cri/api.proto proto/deviceplugin/api.proto proto/grpc/health.proto proto/containerd/events.proto
GEN_SRCS   := $(patsubst %.proto,$(B)/gen/%.pb-c.c,$(PROTOS))
GEN_HDRS   := $(GEN_SRCS:.c=.h)

LIBS := $(B)/libloop.a $(B)/libnode.a $(B)/liblc.a $(B)/libworker.a $(B)/libprobes.a $(B)/libcluster.a $(B)/libpodsrc.a $(B)/libapi.a $(B)/liblogs.a $(B)/libadmit.a $(B)/libcpumgr.a $(B)/libshutdown.a \
	$(B)/libvol.a $(B)/libdp.a $(B)/libcri.a $(B)/libproto.a $(B)/libcg.a $(B)/libpod.a $(B)/libevict.a \
	$(B)/libcubutil.a

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

.PHONY: cluster-peers all deps test unit-test unit-test-build check-clang demo demo-plan bench bench-vm bench-faults bench-cluster bench-peer bench-peer-eviction bench-scale bench-host fuzz fuzz-build print-fuzz-dir print-fuzz-targets lint format format-check clean install
all: $(B)/cubelet $(B)/cubelet-gpu-plugin

# protoc-c output is a build product (pinned: Debian's protobuf-c-compiler 1.4.1),
# compiled with relaxed flags of its own.
$(B)/gen/%.pb-c.c $(B)/gen/%.pb-c.h: %.proto
	@mkdir -p $(B)/gen
	@echo "  PROTOC  $< ($$(protoc-c --version | head -n 1))"
	@protoc-c --c_out=$(B)/gen -I. $<
.SECONDARY: $(GEN_SRCS) $(GEN_HDRS)
$(B)/obj/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) -std=c17 $(OPT) -I$(B)/gen $(PKG_CFLAGS) -c $< -o $@

$(B)/obj/%.o: %.c | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# `cubelet --version` names the commit it was built from: cli.c is compiled
# again whenever git describe changes
$(B)/version.txt: FORCE
	@mkdir -p $(B); echo '$(VERSION)' | cmp -s - $@ || echo '$(VERSION)' >$@
$(call obj,agent/cli/cli.c): $(B)/version.txt
.PHONY: FORCE
FORCE:

$(B)/libcubutil.a: $(call obj,$(UTIL_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libpod.a: $(call obj,$(POD_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libcg.a: $(call obj,$(CG_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libproto.a: $(call obj,$(PROTO_SRCS)) $(patsubst $(B)/gen/%.c,$(B)/obj/gen/%.o,$(GEN_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libcri.a: $(call obj,$(CRI_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libdp.a: $(call obj,$(DP_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libpodsrc.a: $(call obj,$(CONFIG_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libcluster.a: $(call obj,$(CLUSTER_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libworker.a: $(call obj,$(WORKER_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/liblogs.a: $(call obj,$(LOGS_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libprobes.a: $(call obj,$(PROBE_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/liblc.a: $(call obj,$(LC_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libnode.a: $(call obj,$(NODE_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libloop.a: $(call obj,$(LOOP_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libapi.a: $(call obj,$(API_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libcpumgr.a: $(call obj,$(CPUMGR_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libadmit.a: $(call obj,$(ADMIT_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libevict.a: $(call obj,$(EVICT_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libvol.a: $(call obj,$(VOL_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(B)/libshutdown.a: $(call obj,$(SHUTDOWN_SRCS))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^

$(B)/cubelet: $(call obj,$(AGENT_SRCS) $(MGR_SRCS)) $(LIBS)
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS)

# The GPU device plugin daemon (deviceplugin/gpu/): NVML through dlopen.
$(B)/cubelet-gpu-plugin: $(call obj,$(GPU_SRCS)) $(LIBS)
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -ldl

# ---- unit tests (cmocka, TAP) ----------------------------------------------
TEST_SRCS := $(shell find tests/unit -name 'test-*.c' 2>/dev/null | sort)
TEST_BINS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(TEST_SRCS))

$(B)/tests/unit/%: tests/unit/%.c $(LIBS)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	@$(CC) $(CFLAGS_ALL) $(CMOCKA_CFLAGS) -Wno-error=missing-prototypes -o $@ $< $(TEST_LDFLAGS) $(LIBS) $(PKG_LIBS) $(CMOCKA_LIBS)

# agent/loop as a whole (test-loop.c, test-loop-cpu.c; loop-fixture.h): the managers' objects beside the
# archives, and the loop's worker_pool_* calls sent to the test's fake pool
# (and a fake cgroup writer that records its writes: the test's root is no
# cgroup v2 mount)
LOOP_TEST_WRAP := new submit take free check_runtime set_node_env set_network
LOOP_TEST_CG_WRAP := new_driver apply free
LOOP_TESTS := $(B)/tests/unit/agent/loop/test-loop $(B)/tests/unit/agent/loop/test-loop-cpu
$(LOOP_TESTS): TEST_LDFLAGS = $(call obj,$(MGR_SRCS)) \
	$(patsubst %,-Wl$(comma)--wrap=worker_pool_%,$(LOOP_TEST_WRAP)) \
	$(patsubst %,-Wl$(comma)--wrap=cg_writer_%,$(LOOP_TEST_CG_WRAP))
$(LOOP_TESTS): $(call obj,$(MGR_SRCS)) tests/unit/agent/loop/loop-fixture.h

# ---- integration tests: real containerd, real sockets ------------------------
IT_SRCS := $(shell find tests/integration -name 'test-*.c' 2>/dev/null | sort)
IT_BINS := $(patsubst tests/integration/%.c,$(B)/tests/integration/%,$(IT_SRCS))

$(B)/tests/integration/%: tests/integration/%.c $(LIBS)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	@$(CC) $(CFLAGS_ALL) $(CMOCKA_CFLAGS) -o $@ $< $(LIBS) $(PKG_LIBS) $(CMOCKA_LIBS)

# ---- benchmarks that need no VM (tests/bench/bench-*.c), run by `make bench`
BENCH_SRCS := $(wildcard tests/bench/bench-*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(B)/tests/bench/%,$(BENCH_SRCS))

$(B)/tests/bench/%: tests/bench/%.c $(LIBS)
	@mkdir -p $(dir $@)
	@echo "  BENCH   $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(LIBS) $(PKG_LIBS)

bench-host: $(BENCH_BINS)
	@for b in $(BENCH_BINS); do echo "== $$b"; $$b || exit 1; done

# ---- fuzz targets: corpus replay in the test build, libFuzzer in `make fuzz`
# (api-pod, watch, answers, kubeconfig, pullcreds: what an API server or a
# kubeconfig's author can send; kubelet-request: what a kubelet server's
# client and the runtime's streaming server send)
FUZZ_TARGETS := json yaml quantity cpu-checkpoint api-pod watch answers kubeconfig pullcreds kubelet-request
FUZZ_REPLAY := $(patsubst %,$(B)/tests/fuzz/replay-%,$(FUZZ_TARGETS))

$(B)/tests/fuzz/replay-%: tests/fuzz/fuzz-%.c tests/fuzz/fuzz-main.c $(LIBS)
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(CC) $(CFLAGS_ALL) -o $@ tests/fuzz/fuzz-$*.c tests/fuzz/fuzz-main.c $(LIBS) $(PKG_LIBS)

# A fake libnvidia-ml.so.1 (tests/fakes/nvml/) for cubelet-gpu-plugin's interop
# suite: GPUs and XID events come from the file $FAKE_NVML_CONFIG names.
$(B)/tests/fakes/libnvidia-ml.so.1: tests/fakes/nvml/fake-nvml.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(CC) -std=c17 -D_GNU_SOURCE $(OPT) $(WARN) -Wno-missing-prototypes -Wno-missing-declarations \
		-shared -fPIC -o $@ $< -lpthread
unit-test-build: $(B)/cubelet-gpu-plugin $(B)/tests/fakes/libnvidia-ml.so.1

unit-test-build: $(B)/cubelet $(TEST_BINS) $(IT_BINS) $(FUZZ_REPLAY) $(BENCH_BINS) images
unit-test: unit-test-build
	@IMAGES_DIR=$(IMAGES_DIR) VM_TESTS=$(VM_TESTS) tests/run-tests.sh $(B)

deps:
	@tests/install-deps.sh

# Every suite: unit (ASan+UBSan), golden plan files, fuzz corpora, integration
# against a private containerd, images, lint, format, the clang build, and the
# VM scenarios (the release build runs as a systemd unit in the VM), which run
# in the background beside the rest (tests/test-all.sh); at the end a table of
# each step's, suite's, guest's and scenario's wall seconds. VM_TESTS=0 skips
# the VM.
VM_TESTS ?= 1
test:
	@VM_TESTS=$(VM_TESTS) tests/test-all.sh $(BUILD) "$(MAKE)"

# The clang build (-Werror): compile and link only. `make test` runs it as a
# suite; afterwards this finds it up to date.
check-clang:
	@$(MAKE) --no-print-directory -j2 CC=clang BUILD=$(BUILD)/clang

# libFuzzer: the sources built once (fuzzer-no-link), each target linked
# with libFuzzer; `make fuzz` runs each for FUZZ_SECONDS, `make test` for a
# few seconds (tests/fuzz/run.sh)
FUZZ_CC ?= clang
FUZZ_SAN := address,undefined
FUZZ_CFLAGS := -std=c17 -D_GNU_SOURCE -g -O1 -I. -DCUBELET_VERSION=\"fuzz\" $(PKG_CFLAGS)
FUZZ_SRCS := $(UTIL_SRCS) $(POD_SRCS) $(CPUMGR_SRCS) $(CG_SRCS) $(CLUSTER_SRCS) $(CONFIG_SRCS) \
	$(LOGS_SRCS) agent/api/request.c
FUZZ_OBJS := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(FUZZ_SRCS))
FUZZ_BINS := $(patsubst %,$(BUILD)/fuzz/fuzz-%,$(FUZZ_TARGETS))
fuzz-build: $(FUZZ_BINS)
$(FUZZ_OBJS): $(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -MMD -MP -c $< -o $@
$(BUILD)/fuzz/libfuzzsrc.a: $(FUZZ_OBJS)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/fuzz/fuzz-%: tests/fuzz/fuzz-%.c $(BUILD)/fuzz/libfuzzsrc.a
	@echo "  FUZZLD  $@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) -o $@ $< $(BUILD)/fuzz/libfuzzsrc.a $(PKG_LIBS)
-include $(shell find $(BUILD)/fuzz/obj -name '*.d' 2>/dev/null)

print-fuzz-dir:
	@echo $(BUILD)/fuzz
print-fuzz-targets:
	@echo $(FUZZ_TARGETS)

fuzz: fuzz-build
	@FUZZ_KEEP=$(BUILD)/fuzz FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(BUILD)/fuzz $(FUZZ_TARGETS)

# The main job: cubelet and containerd as systemd units in a cgroup v2 VM run
# packaging/examples; ends with `cubelet status` and the pods' cgroup values.
demo: deps
	@$(MAKE) --no-print-directory all images vm-image
	@VM_IMAGES=$(abspath $(IMAGES_DIR)) tests/vm/run-vm.sh tests/vm/demo/demo.sh

# What `cubelet plan` makes of the examples, without a VM.
demo-plan: $(B)/cubelet
	@tests/demo.sh $(B)/cubelet

# Figures, printed, not asserted: pod start latencies and cubelet's footprint
# with BENCH_PODS pause pods (a list: one VM a count), in the VM, beside the
# raw-CRI and raw-cgroup baselines (tests/vm/bench/*.c). The guest runs
# $(B)/cubelet and the helpers: their directory reaches it in
# /etc/cubelet-bench/env (the host's / is the guest's lower root).
# `make bench-vm` runs the VM part alone.
BENCH_PODS ?= 110
# 1: the HTTP API is scraped once a second while the pods start (and requests/s with them)
BENCH_SCRAPE ?= 0
BENCH_VM_BINS := $(patsubst tests/vm/bench/%.c,$(B)/tests/vm/bench/%,$(wildcard tests/vm/bench/*.c))

$(B)/tests/vm/bench/%: tests/vm/bench/%.c $(LIBS)
	@mkdir -p $(dir $@)
	@echo "  BENCH   $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(LIBS) $(PKG_LIBS)

# the RSS floor links exactly the shared objects cubelet needs (readelf), kept
# even where unused, so that it maps what cubelet maps
$(B)/tests/vm/bench/rss-floor: tests/vm/bench/rss-floor.c $(B)/cubelet
	@mkdir -p $(dir $@)
	@echo "  BENCH   $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< -Wl,--no-as-needed \
		$$(readelf -d $(B)/cubelet | sed -n 's/.*Shared library: \[\(.*\)\]/-l:\1/p')

bench: deps
	@$(MAKE) --no-print-directory bench-host
	@$(MAKE) --no-print-directory bench-vm
	@VM_IMAGES=$(abspath $(IMAGES_DIR)) tests/vm/run-vm.sh tests/vm/bench/eviction.sh
	@VM_IMAGES=$(abspath $(IMAGES_DIR)) tests/vm/run-vm.sh tests/vm/bench/resize.sh
	@$(MAKE) --no-print-directory bench-faults
	@$(MAKE) --no-print-directory bench-cluster
	@$(MAKE) --no-print-directory bench-peer
	@$(MAKE) --no-print-directory bench-peer-eviction
	@$(MAKE) --no-print-directory bench-scale

# The real kubelet beside cubelet (tests/vm/bench/peer.sh): memory, idle CPU
# and pod start latency of both on the same guest, pods and configuration,
# printed as one table of ratios.
bench-peer: $(B)/cubelet $(BENCH_VM_BINS) images vm-image $(BUILD)/cluster/kubelet
	@VM_IMAGES=$(abspath $(IMAGES_DIR)) tests/vm/run-vm.sh -o $(abspath $(B))/vm/runs/peer-bench \
		tests/vm/bench/peer.sh

# The real kubelet beside cubelet under memory pressure
# (tests/vm/bench/peer-eviction.sh): each agent in turn a node of the real
# control plane, the same ramp as an API pod, onset -> eviction decision ->
# victim stopped and OOM kills, as a table of ratios.
bench-peer-eviction: $(B)/cubelet images vm-image $(BUILD)/cluster/kubelet $(BUILD)/cluster/kube
	@VM_IMAGES=$(abspath $(IMAGES_DIR)) tests/vm/run-vm.sh -o $(abspath $(B))/vm/runs/peer-eviction \
		tests/vm/bench/peer-eviction.sh

# cubelet as a node of the real control plane (tests/vm/bench/cluster.sh):
# idle CPU, memory and API requests without and with --kubeconfig, and
# BENCH_CLUSTER_PODS pods through the API server beside the same as static
# manifests. Skipped (said) when the control plane cannot be built.
bench-cluster: $(B)/cubelet images vm-image
	@$(MAKE) --no-print-directory cluster-peers || echo "bench-cluster: no control plane (make cluster-peers failed)"
	@VM_IMAGES=$(abspath $(IMAGES_DIR)) tests/vm/run-vm.sh -o $(abspath $(B))/vm/runs/cluster-bench \
		tests/vm/bench/cluster.sh

# Hollow nodes against the real control plane (tests/cluster/scale/): for
# N in SCALE_NODES (10,100,500,1000), hollow cubelets and kubemark's hollow
# kubelets, each kind alone, then one node at SCALE_COUNTS pods; rewrites
# docs/scale.md's tables and plot. About an hour on 2 cores.
bench-scale: $(B)/cubelet cluster-peers
	@tests/cluster/scale/bench-scale.sh $(B) $(abspath $(B))/scale

# The fault matrix (tests/vm/bench/faults.sh): FAULT_PODS pods, each fault
# held FAULT_HOLD seconds, cubelet's CPU and journal lines beside its idle
# figure, then the recovery checked.
FAULT_HOLD ?= 60
bench-faults: $(B)/cubelet images vm-image
	@f=$(abspath $(B))/vm/fault-files; rm -rf $$f; mkdir -p $$f/etc/cubelet-faults; \
		printf 'FAULT_HOLD=%s\n' "$(FAULT_HOLD)" >$$f/etc/cubelet-faults/env; \
		VM_IMAGES=$(abspath $(IMAGES_DIR)) tests/vm/run-vm.sh -f $$f -o $(abspath $(B))/vm/runs/faults \
			tests/vm/bench/faults.sh

bench-vm: $(B)/cubelet $(BENCH_VM_BINS) images vm-image
	@for n in $(BENCH_PODS); do \
		f=$(abspath $(B))/vm/bench-files/$$n; rm -rf $$f; mkdir -p $$f/etc/cubelet-bench; \
		printf 'BENCH_BIN=%s\nBENCH_PODS=%s\nBENCH_SCRAPE=%s\n' $(abspath $(B)) $$n "$(BENCH_SCRAPE)" \
			>$$f/etc/cubelet-bench/env; \
		VM_IMAGES=$(abspath $(IMAGES_DIR)) tests/vm/run-vm.sh -f $$f -o $(abspath $(B))/vm/runs/bench-$$n \
			$$(test $$n -gt 150 && echo "-m 6144M -t 7200") tests/vm/bench/bench.sh || exit 1; \
	done

# ---- lint -------------------------------------------------------------------
lint: $(LIBS)
	@tests/lint.sh $(B)

FORMAT_FILES = $(UTIL_SRCS) $(POD_SRCS) $(CG_SRCS) $(AGENT_SRCS) $(CONFIG_SRCS) $(WORKER_SRCS) $(API_SRCS) \
	$(LC_SRCS) $(LOOP_SRCS) $(NODE_SRCS) $(MGR_SRCS) $(LOGS_SRCS) $(PROBE_SRCS) \
	$(CPUMGR_SRCS) $(ADMIT_SRCS) $(EVICT_SRCS) $(VOL_SRCS) \
	$(CRI_SRCS) $(PROTO_SRCS) $(DP_SRCS) $(GPU_SRCS) \
	$(wildcard agent/*/*.h cri/*.h proto/*.h eviction/*.h deviceplugin/*.h deviceplugin/gpu/*.h)
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@clang-format --dry-run -Werror $(FORMAT_FILES)

PREFIX ?= /usr/local
install: $(B)/cubelet $(B)/cubelet-gpu-plugin
	install -D -m 0755 $(B)/cubelet $(DESTDIR)$(PREFIX)/bin/cubelet
	install -D -m 0644 packaging/systemd/cubelet.service $(DESTDIR)/etc/systemd/system/cubelet.service
	test -e $(DESTDIR)/etc/cubelet/config.yaml || \
		install -D -m 0644 packaging/cubelet.yaml $(DESTDIR)/etc/cubelet/config.yaml
	install -d -m 0755 $(DESTDIR)/etc/kubernetes/manifests
	install -d -m 0755 $(DESTDIR)/etc/cni/net.d
	test -e $(DESTDIR)/etc/cni/net.d/10-cubelet.conflist || \
		install -D -m 0644 packaging/cni/10-cubelet.conflist $(DESTDIR)/etc/cni/net.d/10-cubelet.conflist
	install -D -m 0644 packaging/containerd/config.toml $(DESTDIR)$(PREFIX)/share/cubelet/containerd-config.toml
	install -D -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/cubelet/README.md
	install -d -m 0755 $(DESTDIR)$(PREFIX)/share/doc/cubelet/docs
	install -m 0644 docs/*.md $(DESTDIR)$(PREFIX)/share/doc/cubelet/docs/

# The cluster issue's test peers (tests/cluster/): the real kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet and kubectl as one binary,
# built from k8s.io/kubernetes at the release tests/cluster/go.mod pins (Go
# from the module proxy; `make test` builds it before the VM scenarios).
KUBE_VERSION := v1.34.4
KUBE_LDFLAGS := -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=34 -X $(p).gitTreeState=clean)
# Go for the test peers: the one on PATH, else the toolchain's usual place
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
cluster-peers: $(BUILD)/cluster/kube $(BUILD)/cluster/hollow
# kubelet alone, for the benchmark peer (make bench-peer): kube's other
# commands would weigh on its memory
$(BUILD)/cluster/kubelet: tests/cluster/kubelet/main.go tests/cluster/go.mod tests/cluster/go.sum
	@mkdir -p $(dir $@)
	@echo "  GO      $@"
	@cd tests/cluster && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(abspath $@) ./kubelet
# kubemark's hollow node and the fake CRI runtime, for make bench-scale
$(BUILD)/cluster/hollow: tests/cluster/hollow/main.go tests/cluster/go.mod tests/cluster/go.sum
	@mkdir -p $(dir $@)
	@echo "  GO      $@"
	@cd tests/cluster && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(abspath $@) ./hollow
$(BUILD)/cluster/kube: tests/cluster/main.go tests/cluster/cridump.go tests/cluster/go.mod tests/cluster/go.sum
	@mkdir -p $(dir $@)
	@echo "  GO      $@"
	@cd tests/cluster && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(abspath $@) .

clean:
	rm -rf $(BUILD)

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# Fragments owned by their folders (VM harness, packaging, protocol code).
-include tests/vm/vm.mk
-include packaging/packaging.mk
-include tests/conformance/conformance.mk

# the compiler's flags, for tests/lint.sh's one-writer check (LC_POD_READ_ONLY)
print-cflags:
	@echo $(CFLAGS_ALL)
