/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent/cpumanager/quota.c: kubelet 1.34's DisableCPUQuotaWithExclusiveCPUs.
 * Under the static policy a Guaranteed container with integer cpus (its
 * exclusive CPUs) gets CpuQuota -1 and its pod cgroup cpu.max "max 100000";
 * a fractional Guaranteed pod, the none policy and cpuCFSQuota off keep the
 * quota as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cpumanager/cpumanager.h"
#include "agent/pod/pod.h"

#define POD(cpu1, cpu2)                                                                             \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u1}\nspec:\n  containers:\n"           \
        "  - name: a\n    image: x:1\n    resources: {limits: {cpu: \"" cpu1 "\", memory: 64Mi}}\n" \
        "  - name: b\n    image: x:1\n    resources: {limits: {cpu: \"" cpu2 "\", memory: 64Mi}}\n"

static const char *cpu_max(const CgGroupValues *g) {
        for (size_t i = 0; i < g->n_files; i++)
                if (strcmp(g->files[i].name, "cpu.max") == 0)
                        return g->files[i].value;
        return NULL;
}

/* the pod cgroup's cpu.max and each container's quota, for o */
static void plan(const char *yaml, const CgOptions *o, char *ret_pod, size_t size, int64_t ret_quota[2]) {
        Pod *pod = NULL;
        PodEffective eff;
        CgGroupValues g;
        CubError err = {};
        PodQOSClass qos;

        if (pod_decode(yaml, strlen(yaml), "p.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode: %s", err.msg);
        qos = pod_qos_class(pod);
        assert_int_equal(pod_effective(pod, &eff, &err), 0);
        assert_int_equal(cg_pod_values(pod, &eff, qos, o, &g, &err), 0);
        cpumgr_unquota_pod(pod, qos, o, &g);
        (void) snprintf(ret_pod, size, "%s", cpu_max(&g));
        for (size_t i = 0; i < 2; i++) {
                CgContainerResources res;

                cg_container_resources(pod, qos, &pod->containers[i], o, &res);
                cpumgr_unquota_container(qos, &pod->containers[i], o, &res);
                ret_quota[i] = res.cpu_quota;
        }
        pod_effective_done(&eff);
        pod_free(pod);
}

static void test_exclusive_unquota(void **state) {
        CgOptions o;
        char pod[64];
        int64_t q[2];

        (void) state;
        cg_options_init(&o);
        o.cpu_static = true;
        /* one container with 1 exclusive CPU, one with 500m of the shared pool */
        plan(POD("1", "500m"), &o, pod, sizeof(pod), q);
        assert_string_equal(pod, "max 100000");
        assert_int_equal(q[0], -1);
        assert_int_equal(q[1], 50000);
        /* fractional only: no exclusive CPU, the quotas stay */
        plan(POD("250m", "500m"), &o, pod, sizeof(pod), q);
        assert_string_equal(pod, "75000 100000");
        assert_int_equal(q[0], 25000);
        /* the none policy: nothing changes */
        o.cpu_static = false;
        plan(POD("1", "500m"), &o, pod, sizeof(pod), q);
        assert_string_equal(pod, "150000 100000");
        assert_int_equal(q[0], 100000);
        /* cpuCFSQuota off: no quota anywhere, none added */
        o.cpu_static = true;
        o.enforce_cpu_limits = false;
        plan(POD("1", "500m"), &o, pod, sizeof(pod), q);
        assert_string_equal(pod, "max 100000");
        assert_int_equal(q[0], 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exclusive_unquota),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
