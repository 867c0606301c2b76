/* SPDX-License-Identifier: Apache-2.0 */
/* agent/cgroup/memory-qos.c, memory QoS (KEP-2570) as kubelet 1.34 with the
 * MemoryQoS feature gate on cgroup v2: the container's memory.min and
 * memory.high (kuberuntime_container_linux.go generateLinuxContainerResources,
 * the enforceMemoryQoS block), the pod group's memory.min (helpers_linux.go
 * ResourceConfigForPod), the QoS groups' (qos_container_manager_linux.go
 * setMemoryQoS), the CRI unified map, and the KubeletConfiguration's
 * featureGates.MemoryQoS and memoryThrottlingFactor (validation.go). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cgroup/cgroup.h"
#include "agent/pod/node.h"
#include "agent/pod/pod.h"
#include "values-fixture.h"

#define GI 1073741824LL
#define MI 1048576LL
/* 16Gi - 1Gi kubeReserved - 512Mi systemReserved: GetNodeAllocatableAbsolute */
#define ALLOCATABLE 15569256448LL

#define PODRES(body) "  resources:\n" body

static CgOptions qos_opts(void) {
        CgOptions o = opts();

        o.memory_qos = true;
        o.page_size = 4096;
        o.kubepods_memory = ALLOCATABLE;
        return o;
}

#define ASSERT_QOS(spec, name, o, want_min, want_high)                        \
        do {                                                                  \
                CgContainerResources r_ = container_res((spec), (name), (o)); \
                assert_string_equal(r_.memory_min, (want_min));               \
                assert_string_equal(r_.memory_high, (want_high));             \
        } while (0)

static void test_memory_high_formula(void **state) {
        (void) state;
        /* 4Gi + (8Gi - 4Gi) x 0.9 = 8160437862.4 -> floor, / 4096 = 1992294.4 -> 1992294 pages */
        assert_int_equal(cg_memory_high(4 * GI, 8 * GI, 0, 0.9, 4096), 8160436224LL);
        /* the same with 64 KiB pages (arm64, ppc64le kernels) */
        assert_int_equal(cg_memory_high(4 * GI, 8 * GI, 0, 0.9, 65536), 8160411648LL);
        /* no limit: the node's allocatable memory */
        assert_int_equal(cg_memory_high(100 * MI, 0, ALLOCATABLE, 0.9, 4096), 14022815744LL);
        /* the limit wins over the allocatable memory */
        assert_int_equal(cg_memory_high(4 * GI, 8 * GI, ALLOCATABLE, 0.9, 4096), 8160436224LL);
        /* factor 1.0: the limit itself */
        assert_int_equal(cg_memory_high(GI, 2 * GI, 0, 1.0, 4096), 2 * GI);
        /* decimal quantities: 1G + 1G x 0.9 = 1900000000, rounded down to a page */
        assert_int_equal(cg_memory_high(1000000000LL, 2000000000LL, 0, 0.9, 4096), 1899999232LL);
        /* an explicit request of 0 */
        assert_int_equal(cg_memory_high(0, GI, 0, 0.9, 4096), 966365184LL);
        /* float64, not exact arithmetic: 10 x 0.3 = 3.0000000000000004, floor 3 (exactly: 2.99...) */
        assert_int_equal(cg_memory_high(0, 10, 0, 0.3, 1), 3);
        /* neither a limit nor the allocatable memory: 0 (nothing written) */
        assert_int_equal(cg_memory_high(GI, 0, 0, 0.9, 4096), 0);
        /* allocatable below the request: below the request too */
        assert_int_equal(cg_memory_high(20 * GI, 0, ALLOCATABLE, 0.9, 4096), 16159813632LL);
        /* near INT64_MAX the product past it is never above the request */
        assert_true(cg_memory_high(0, INT64_MAX, 0, 1.0, 4096) <= 0);
}

static void test_container(void **state) {
        CgOptions o = qos_opts();

        (void) state;
        /* request < limit: memory.min and memory.high */
        ASSERT_QOS("  containers:\n" C("a", RES("memory: 4Gi", "memory: 8Gi")), "a", &o, "4294967296", "8160436224");
        /* a request without a limit: from the allocatable memory */
        ASSERT_QOS("  containers:\n" C("a", REQ("memory: 100Mi")), "a", &o, "104857600", "14022815744");
        /* request == limit (a limit alone is defaulted to the request): memory.min only */
        ASSERT_QOS("  containers:\n" C("a", LIM("memory: 1Gi")), "a", &o, "1073741824", "");
        ASSERT_QOS("  containers:\n" C("a", RES("memory: 1Gi, cpu: 100m", "memory: 1Gi")), "a", &o, "1073741824", "");
        /* a Guaranteed pod */
        ASSERT_QOS("  containers:\n" C("a", LIM("memory: 1Gi, cpu: 1")), "a", &o, "1073741824", "");
        /* no memory at all (BestEffort, or cpu only): nothing */
        ASSERT_QOS("  containers:\n" C("a", ""), "a", &o, "", "");
        ASSERT_QOS("  containers:\n" C("a", REQ("cpu: 100m")), "a", &o, "", "");
        /* an explicit request of 0 with a limit: memory.high only */
        ASSERT_QOS("  containers:\n" C("a", RES("memory: 0", "memory: 1Gi")), "a", &o, "", "966365184");
        /* memory.high not above the request: left out (20Gi request, 14.5Gi allocatable) */
        ASSERT_QOS("  containers:\n" C("a", REQ("memory: 20Gi")), "a", &o, "21474836480", "");
        /* a limit just above the request: the page below is the request itself */
        ASSERT_QOS("  containers:\n" C("a", RES("memory: 1Gi", "memory: 1073745920")), "a", &o, "1073741824", "");
        /* allocatable unknown and no limit: memory.min only */
        o.kubepods_memory = 0;
        ASSERT_QOS("  containers:\n" C("a", REQ("memory: 100Mi")), "a", &o, "104857600", "");
        o = qos_opts();
        /* memoryThrottlingFactor */
        o.memory_throttling_factor = 0.5;
        ASSERT_QOS("  containers:\n" C("a", RES("memory: 4Gi", "memory: 8Gi")), "a", &o, "4294967296", "6442450944");
        /* init containers get theirs too */
        o = qos_opts();
        ASSERT_QOS("  initContainers:\n" C("i", RES("memory: 4Gi", "memory: 8Gi")) "  containers:\n" C("a", ""), "i",
                   &o, "4294967296", "8160436224");
        /* the gate off: nothing */
        o.memory_qos = false;
        ASSERT_QOS("  containers:\n" C("a", RES("memory: 4Gi", "memory: 8Gi")), "a", &o, "", "");
}

static void test_container_pod_level(void **state) {
        CgOptions o = qos_opts();

        (void) state;
        /* a pod-level limit does not count: the block reads the container's own
         * limit, so a container without one goes by the allocatable memory */
        ASSERT_QOS(PODRES("    requests: {memory: 1Gi}\n    limits: {memory: 2Gi}\n") "  containers:\n" C(
                           "a", REQ("memory: 100Mi")),
                   "a", &o, "104857600", "14022815744");
        /* nor a pod-level request: no memory of its own, nothing */
        ASSERT_QOS(PODRES("    requests: {memory: 1Gi}\n    limits: {memory: 2Gi}\n") "  containers:\n" C("a", ""), "a",
                   &o, "", "");
}

static void test_pod_group(void **state) {
        CgOptions o = qos_opts();
        CgGroupValues g;

        (void) state;
        /* Burstable: the pod's memory request, written last */
        g = pod_values("  containers:\n" C("a", RES("memory: 4Gi", "memory: 8Gi")) C("b", REQ("memory: 1Gi")), &o,
                       NULL);
        assert_int_equal(g.n_files, 5);
        assert_string_equal(g.files[4].name, "memory.min");
        assert_string_equal(g.files[4].value, "5368709120");
        /* Guaranteed: the request, which is the limit */
        g = pod_values("  containers:\n" C("a", LIM("memory: 256Mi, cpu: 500m")), &o, NULL);
        assert_string_equal(cg_group_get(&g, "memory.min"), "268435456");
        /* BestEffort and a pod without a memory request: no memory.min */
        g = pod_values("  containers:\n" C("a", ""), &o, NULL);
        assert_null(cg_group_get(&g, "memory.min"));
        assert_int_equal(g.n_files, 4);
        g = pod_values("  containers:\n" C("a", REQ("cpu: 100m")), &o, NULL);
        assert_null(cg_group_get(&g, "memory.min"));
        /* pod-level resources and the overhead count (PodRequests) */
        g = pod_values(PODRES("    requests: {memory: 1Gi}\n") "  containers:\n" C("a", REQ("memory: 100Mi")), &o,
                       NULL);
        assert_string_equal(cg_group_get(&g, "memory.min"), "1073741824");
        g = pod_values("  overhead: {memory: 120Mi}\n  containers:\n" C("a", REQ("memory: 100Mi")), &o, NULL);
        assert_string_equal(cg_group_get(&g, "memory.min"), "230686720");
        /* init containers: the larger of the init and app sums */
        g = pod_values("  initContainers:\n" C("i", REQ("memory: 2Gi")) "  containers:\n" C("a", REQ("memory: 1Gi")),
                       &o, NULL);
        assert_string_equal(cg_group_get(&g, "memory.min"), "2147483648");
        /* the gate off */
        o.memory_qos = false;
        g = pod_values("  containers:\n" C("a", RES("memory: 4Gi", "memory: 8Gi")), &o, NULL);
        assert_null(cg_group_get(&g, "memory.min"));
}

static void test_qos_groups(void **state) {
        CgOptions o = qos_opts();
        CgGroupValues g[3];

        (void) state;
        cg_qos_values(100, &o, g);
        cg_qos_memory_min(256 * MI, 5 * GI, &o, g);
        /* kubepods: Guaranteed + Burstable; burstable: Burstable; besteffort: none */
        assert_string_equal(cg_group_get(&g[0], "memory.min"), "5637144576");
        assert_string_equal(g[0].files[g[0].n_files - 1].name, "memory.min");
        assert_string_equal(cg_group_get(&g[1], "memory.min"), "5368709120");
        assert_null(cg_group_get(&g[2], "memory.min"));
        /* no Burstable pods: the burstable group gets nothing (kubelet leaves
         * the file as it was), kubepods the Guaranteed sum */
        cg_qos_values(0, &o, g);
        cg_qos_memory_min(256 * MI, 0, &o, g);
        assert_string_equal(cg_group_get(&g[0], "memory.min"), "268435456");
        assert_null(cg_group_get(&g[1], "memory.min"));
        cg_qos_values(0, &o, g);
        cg_qos_memory_min(0, 0, &o, g);
        assert_null(cg_group_get(&g[0], "memory.min"));
        /* the gate off */
        o.memory_qos = false;
        cg_qos_values(100, &o, g);
        cg_qos_memory_min(256 * MI, 5 * GI, &o, g);
        assert_null(cg_group_get(&g[0], "memory.min"));
        assert_null(cg_group_get(&g[1], "memory.min"));
}

static void test_unified(void **state) {
        CgContainerResources r = {};
        const char *kv[CG_UNIFIED_KV_MAX];

        (void) state;
        assert_int_equal(cg_container_unified(&r, kv), 1);
        assert_string_equal(kv[0], "memory.oom.group");
        assert_string_equal(kv[1], "1");
        assert_null(kv[2]);
        (void) snprintf(r.memory_min, sizeof(r.memory_min), "4294967296");
        (void) snprintf(r.memory_high, sizeof(r.memory_high), "8160436224");
        assert_int_equal(cg_container_unified(&r, kv), 3);
        assert_string_equal(kv[2], "memory.min");
        assert_string_equal(kv[3], "4294967296");
        assert_string_equal(kv[4], "memory.high");
        assert_string_equal(kv[5], "8160436224");
        assert_null(kv[6]);
        (void) snprintf(r.memory_swap_max, sizeof(r.memory_swap_max), "0");
        assert_int_equal(cg_container_unified(&r, kv), 4);
        assert_string_equal(kv[2], "memory.swap.max");
        assert_string_equal(kv[3], "0");
        assert_string_equal(kv[6], "memory.high");
        assert_null(kv[8]);
}

static void test_options_default(void **state) {
        CgOptions o;

        (void) state;
        cg_options_init(&o);
        assert_false(o.memory_qos); /* off by default, as kubelet's gate */
        assert_true(o.memory_throttling_factor == 0.9);
        assert_true(o.page_size > 0 && o.page_size % 4096 == 0);
}

static void decode_ok(const char *text, bool want_qos, double want_factor) {
        PodKubeletConfig c;
        CubError err = {};

        if (pod_kubelet_config_decode(text, strlen(text), "k.yaml", &c, &err) < 0)
                fail_msg("decode '%s' failed: %s", text, err.msg);
        assert_int_equal(c.memory_qos, want_qos);
        assert_true(c.memory_throttling_factor == want_factor);
        pod_kubelet_config_done(&c);
}

static void decode_bad(const char *text, const char *want) {
        PodKubeletConfig c;
        CubError err = {};

        assert_int_equal(pod_kubelet_config_decode(text, strlen(text), "k.yaml", &c, &err), -EINVAL);
        assert_string_equal(err.msg, want);
}

static void test_config(void **state) {
        PodKubeletConfig c;
        CubError err = {};
        static const char gates[] = "featureGates:\n  KubeletTracing: true\n  MemoryQoS: true\n  Other: false\n";

        (void) state;
        decode_ok("maxPods: 10\n", false, 0.9);
        decode_ok("featureGates: {MemoryQoS: true}\n", true, 0.9);
        decode_ok("featureGates: {MemoryQoS: false}\n", false, 0.9);
        decode_ok("featureGates: {}\n", false, 0.9);
        decode_ok("{\"featureGates\": {\"MemoryQoS\": true}, \"memoryThrottlingFactor\": 0.75}", true, 0.75);
        decode_ok("memoryThrottlingFactor: 1\n", false, 1.0);
        decode_ok("memoryThrottlingFactor: 1.0\n", false, 1.0);
        decode_ok("memoryThrottlingFactor: 0.001\n", false, 0.001);
        decode_ok("memoryThrottlingFactor: null\n", false, 0.9);
        /* the other gates are listed as ignored, by name */
        assert_int_equal(pod_kubelet_config_decode(gates, strlen(gates), "k.yaml", &c, &err), 0);
        assert_true(c.memory_qos);
        assert_int_equal(c.ignored.n, 2);
        assert_string_equal(c.ignored.items[0], "featureGates.KubeletTracing");
        assert_string_equal(c.ignored.items[1], "featureGates.Other");
        pod_kubelet_config_done(&c);
        /* validation.go: greater than 0 and at most 1.0, whatever the gate */
        decode_bad("memoryThrottlingFactor: 0\n",
                   "k.yaml:1: memoryThrottlingFactor: Invalid value: 0: must be greater than 0 and less than or equal "
                   "to 1.0");
        decode_bad("featureGates: {MemoryQoS: true}\nmemoryThrottlingFactor: 1.5\n",
                   "k.yaml:2: memoryThrottlingFactor: Invalid value: 1.5: must be greater than 0 and less than or "
                   "equal to 1.0");
        decode_bad("memoryThrottlingFactor: -0.1\n",
                   "k.yaml:1: memoryThrottlingFactor: Invalid value: -0.1: must be greater than 0 and less than or "
                   "equal to 1.0");
        decode_bad("{\"memoryThrottlingFactor\": 2}",
                   "k.yaml: memoryThrottlingFactor: Invalid value: 2: must be greater than 0 and less than or equal "
                   "to 1.0");
        decode_bad("memoryThrottlingFactor: \"0.9\"\n",
                   "k.yaml:1: memoryThrottlingFactor: Invalid type: expected number, got string");
        decode_bad("featureGates:\n  MemoryQoS: \"true\"\n",
                   "k.yaml:2: featureGates[MemoryQoS]: Invalid type: expected boolean, got string");
        decode_bad("featureGates: [MemoryQoS]\n",
                   "k.yaml:1: featureGates: Invalid type: expected object of booleans, got array");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_memory_high_formula), cmocka_unit_test(test_container),
                cmocka_unit_test(test_container_pod_level), cmocka_unit_test(test_pod_group),
                cmocka_unit_test(test_qos_groups),          cmocka_unit_test(test_unified),
                cmocka_unit_test(test_options_default),     cmocka_unit_test(test_config),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
