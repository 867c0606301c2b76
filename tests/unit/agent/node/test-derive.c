/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent/derive.c: agent_kubepods_capacity(), agent_kubepods_pids(),
 * agent_node_resources(). derive.c belongs to no
 * library (it is linked into the cubelet binary with the rest of agent/),
 * so the test compiles it in.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/node/derive.c"

#define GI (INT64_C(1) << 30)

static void with_config(const char *yaml, int64_t cpu_cap, uint64_t mem_cap, int64_t *ret_cpu, int64_t *ret_mem) {
        PodKubeletConfig c;
        CubError err = {};

        pod_kubelet_config_init(&c);
        if (pod_kubelet_config_decode(yaml, strlen(yaml), "kubelet.yaml", &c, &err) < 0)
                fail_msg("decode: %s", err.msg);
        agent_kubepods_capacity(&c, cpu_cap, mem_cap, ret_cpu, ret_mem);
        pod_kubelet_config_done(&c);
}

/* kubelet's kubepods pids.max: min(pid_max, threads-max) less the "pid"
 * reservations (createNodeAllocatableCgroups, getNodeAllocatableAbsoluteImpl) */
static void test_pids_minus_reserved(void **state) {
        const char *yaml = "kubeReserved:\n  pid: \"1000\"\nsystemReserved:\n  pid: \"500\"\n";
        PodKubeletConfig c;
        CubError err = {};

        (void) state;
        pod_kubelet_config_init(&c);
        if (pod_kubelet_config_decode(yaml, strlen(yaml), "kubelet.yaml", &c, &err) < 0)
                fail_msg("decode: %s", err.msg);
        assert_int_equal(agent_kubepods_pids(&c, 23682), 23682 - 1500);
        assert_int_equal(agent_kubepods_pids(&c, 1200), 0); /* nothing left: not written */
        assert_int_equal(agent_kubepods_pids(&c, 0), 0);    /* unknown */
        pod_kubelet_config_done(&c);
        assert_int_equal(agent_kubepods_pids(NULL, 4194304), 4194304);
}

static void test_capacity_minus_reserved(void **state) {
        int64_t cpu = -1, mem = -1;

        (void) state;
        with_config("kubeReserved:\n  cpu: 100m\n  memory: 1Gi\nsystemReserved:\n  cpu: 250m\n  memory: 512Mi\n", 4000,
                    (uint64_t) (8 * GI), &cpu, &mem);
        assert_int_equal(cpu, 3650);
        assert_int_equal(mem, 8 * GI - GI - GI / 2);
}

static void test_nothing_reserved(void **state) {
        int64_t cpu = -1, mem = -1;

        (void) state;
        with_config("{}", 2000, (uint64_t) GI, &cpu, &mem);
        assert_int_equal(cpu, 2000);
        assert_int_equal(mem, GI);
        agent_kubepods_capacity(NULL, 2000, (uint64_t) GI, &cpu, &mem);
        assert_int_equal(cpu, 2000);
        assert_int_equal(mem, GI);
}

static int64_t get(const PodResourceList *l, const char *name, bool milli) {
        CubQuantity q;

        if (!pod_resource_get(l, name, &q))
                return -1;
        return milli ? cub_quantity_milli(q) : cub_quantity_value(q);
}

/* the Node's capacity and allocatable (kubelet's GetNodeAllocatableReservation):
 * kubepods' share less the hard memory.available and nodefs.available
 * thresholds and the reserved ephemeral-storage */
static void test_node_resources(void **state) {
        const char *yaml = "kubeReserved: {memory: 1Gi, ephemeral-storage: 1Gi}\nmaxPods: 50\n"
                           "evictionHard: {memory.available: 100Mi, nodefs.available: 2Gi}\n";
        CgOptions cg = { .cpu_capacity_milli = 4000,
                         .memory_capacity = (uint64_t) (8 * GI),
                         .kubepods_cpu_milli = 3900,
                         .kubepods_memory = 7 * GI };
        PodResourceList cap = {}, alloc = {};
        PodKubeletConfig c;
        CubError err = {};
        struct statvfs sv;
        int64_t disk;

        (void) state;
        assert_int_equal(statvfs("/", &sv), 0);
        disk = (int64_t) ((uint64_t) sv.f_blocks * sv.f_frsize);
        pod_kubelet_config_init(&c);
        if (pod_kubelet_config_decode(yaml, strlen(yaml), "kubelet.yaml", &c, &err) < 0)
                fail_msg("decode: %s", err.msg);
        assert_int_equal(agent_node_resources(&c, &cg, "/", &cap, &alloc, &err), 0);
        assert_int_equal(get(&cap, "cpu", true), 4000);
        assert_int_equal(get(&cap, "memory", false), 8 * GI);
        assert_int_equal(get(&cap, "pods", false), 50);
        assert_int_equal(get(&cap, "ephemeral-storage", false), disk);
        assert_int_equal(get(&alloc, "cpu", true), 3900);
        assert_int_equal(get(&alloc, "memory", false), 7 * GI - 100 * (GI >> 10));
        assert_int_equal(get(&alloc, "ephemeral-storage", false), disk > 3 * GI ? disk - 3 * GI : 0);
        assert_int_equal(get(&alloc, "pods", false), 50);
        pod_resource_list_done(&cap);
        pod_resource_list_done(&alloc);
        /* no filesystem: no ephemeral-storage capacity, none allocatable */
        assert_int_equal(agent_node_resources(&c, &cg, NULL, &cap, NULL, &err), 0);
        assert_int_equal(get(&cap, "ephemeral-storage", false), -1);
        assert_int_equal(cap.n, 3);
        pod_resource_list_done(&cap);
        pod_kubelet_config_done(&c);
}

static void test_clamped_at_zero(void **state) {
        int64_t cpu = -1, mem = -1;

        (void) state;
        /* each reservation alone, and both together, above capacity */
        with_config("kubeReserved:\n  cpu: '8'\n  memory: 2Gi\n", 4000, (uint64_t) GI, &cpu, &mem);
        assert_int_equal(cpu, 0);
        assert_int_equal(mem, 0);
        with_config("kubeReserved:\n  cpu: '3'\n  memory: 768Mi\nsystemReserved:\n  cpu: '3'\n  memory: 768Mi\n", 4000,
                    (uint64_t) GI, &cpu, &mem);
        assert_int_equal(cpu, 0);
        assert_int_equal(mem, 0);
        /* exactly the capacity */
        with_config("systemReserved:\n  cpu: '4'\n  memory: 1Gi\n", 4000, (uint64_t) GI, &cpu, &mem);
        assert_int_equal(cpu, 0);
        assert_int_equal(mem, 0);
}

static void test_extremes(void **state) {
        int64_t cpu = -1, mem = -1;

        (void) state;
        /* unknown capacity (0) and a capacity beyond int64 */
        with_config("kubeReserved:\n  memory: 1Gi\n", 0, UINT64_MAX, &cpu, &mem);
        assert_int_equal(cpu, 0);
        assert_int_equal(mem, INT64_MAX - GI);
        /* reservations near the quantity limit do not wrap */
        with_config("kubeReserved:\n  memory: 8E\nsystemReserved:\n  memory: 8E\n", 1000, (uint64_t) GI, &cpu, &mem);
        assert_int_equal(cpu, 1000);
        assert_int_equal(mem, 0);
        agent_kubepods_capacity(NULL, -5, 0, &cpu, &mem);
        assert_int_equal(cpu, 0);
        assert_int_equal(mem, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_capacity_minus_reserved),
                cmocka_unit_test(test_pids_minus_reserved),
                cmocka_unit_test(test_nothing_reserved),
                cmocka_unit_test(test_clamped_at_zero),
                cmocka_unit_test(test_node_resources),
                cmocka_unit_test(test_extremes),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
