/* SPDX-License-Identifier: Apache-2.0 */
/* agent/cgroup/values.c with pod-level resources (kubelet 1.34): the pod
 * cgroup (pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod), the CRI
 * container resources (kuberuntime_container_linux.go getCPULimit,
 * getMemoryLimit, calculateLinuxResources) and oom_score_adj
 * (pkg/kubelet/qos/policy.go, helpers.go remainingPodMemReqPerContainer). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cgroup/cgroup.h"
#include "agent/pod/pod.h"
#include "values-fixture.h"

#define MI 1048576LL

#define SIDECAR "    restartPolicy: Always\n"
#define PODRES(body) "  resources:\n" body

static void assert_file(const CgGroupValues *g, const char *name, const char *want) {
        const char *v = cg_group_get(g, name);

        if (!v)
                fail_msg("%s missing", name);
        assert_string_equal(v, want);
}

/* ---- the pod cgroup ------------------------------------------------------------ */

static void test_pod_limits_guaranteed(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g =
                pod_values(PODRES("    limits: {cpu: 2, memory: 1Gi}\n") "  containers:\n" C("a", ""), &o, &qos);

        (void) state;
        assert_int_equal(qos, POD_QOS_GUARANTEED);
        assert_string_equal(g.path, "kubepods/pod" UID);
        assert_file(&g, "cpu.weight", "79"); /* shares 2048 */
        assert_file(&g, "cpu.max", "200000 100000");
        assert_file(&g, "memory.max", "1073741824");
}

static void test_pod_limits_declare(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g;

        (void) state;
        /* no container has a limit; the pod-level ones declare both */
        g = pod_values(PODRES("    limits: {cpu: 2, memory: 1Gi}\n") "  containers:\n" C("a", REQ("cpu: 500m"))
                               C("b", REQ("cpu: 250m, memory: 64Mi")),
                       &o, &qos);
        assert_int_equal(qos, POD_QOS_BURSTABLE);
        assert_file(&g, "cpu.weight", "30"); /* 750m: shares 768 */
        assert_file(&g, "cpu.max", "200000 100000");
        assert_file(&g, "memory.max", "1073741824");
        /* memory only at pod level, a container without a cpu limit: cpu.max stays max */
        g = pod_values(PODRES("    limits: {memory: 1Gi}\n") "  containers:\n" C("a", LIM("cpu: 1")) C("b", ""), &o,
                       &qos);
        assert_int_equal(qos, POD_QOS_BURSTABLE);
        assert_file(&g, "cpu.max", "max 100000");
        assert_file(&g, "memory.max", "1073741824");
        /* every container declares cpu: the containers' sum, the pod has no cpu limit */
        g = pod_values(PODRES("    limits: {memory: 1Gi}\n") "  containers:\n" C("a", LIM("cpu: 1"))
                               C("b", LIM("cpu: 500m")),
                       &o, &qos);
        assert_file(&g, "cpu.max", "150000 100000");
}

static void test_pod_requests_only(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g = pod_values(PODRES("    requests: {cpu: 1, memory: 768Mi}\n") "  containers:\n" C(
                                             "a", LIM("cpu: 1, memory: 512Mi")),
                                     &o, &qos);

        (void) state;
        assert_int_equal(qos, POD_QOS_BURSTABLE);
        assert_file(&g, "cpu.weight", "39");
        assert_file(&g, "cpu.max", "100000 100000");
        assert_file(&g, "memory.max", "536870912");
}

static void test_empty_pod_resources_besteffort(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g =
                pod_values("  resources: {}\n  containers:\n" C("a", LIM("cpu: 500m, memory: 256Mi")), &o, &qos);

        (void) state;
        assert_int_equal(qos, POD_QOS_BESTEFFORT);
        assert_string_equal(g.path, "kubepods/besteffort/pod" UID);
        assert_file(&g, "cpu.weight", "1");
        assert_file(&g, "cpu.max", "max 100000");
        assert_file(&g, "memory.max", "max");
}

static void test_pod_level_overhead(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g = pod_values("  overhead: {cpu: 250m, memory: 120Mi}\n" PODRES(
                                             "    limits: {cpu: 1, memory: 512Mi}\n") "  containers:\n" C("a", ""),
                                     &o, &qos);

        (void) state;
        assert_int_equal(qos, POD_QOS_GUARANTEED);
        assert_file(&g, "cpu.weight", "49"); /* 1250m: shares 1280 */
        assert_file(&g, "cpu.max", "125000 100000");
        assert_file(&g, "memory.max", "662700032");
}

/* ---- the containers ---------------------------------------------------------------- */

static void test_container_gets_pod_limits(void **state) {
        CgOptions o = opts();
        const char *spec =
                PODRES("    requests: {cpu: 2, memory: 1Gi}\n    limits: {cpu: 2, memory: 1Gi}\n") "  containers:\n" C(
                        "db", RES("cpu: 1, memory: 512Mi", "cpu: 1, memory: 512Mi")) C("agent", "")
                        C("zero", RES("cpu: 0", "cpu: 0"));
        CgContainerResources r;

        (void) state;
        r = container_res(spec, "db", &o);
        assert_int_equal(r.cpu_shares, 1024);
        assert_int_equal(r.cpu_quota, 100000);
        assert_int_equal(r.memory_limit_in_bytes, 512 * MI);
        assert_int_equal(r.oom_score_adj, -997);
        /* no request: the shares come from the pod-level cpu limit */
        r = container_res(spec, "agent", &o);
        assert_int_equal(r.cpu_shares, 2048);
        assert_int_equal(r.cpu_quota, 200000);
        assert_int_equal(r.cpu_period, 100000);
        assert_int_equal(r.memory_limit_in_bytes, 1024 * MI);
        /* an explicit zero request keeps 2 shares; a zero limit is no limit */
        r = container_res(spec, "zero", &o);
        assert_int_equal(r.cpu_shares, 2);
        assert_int_equal(r.cpu_quota, 200000);
        /* without the CFS quota: no quota, no period */
        o.enforce_cpu_limits = false;
        r = container_res(spec, "agent", &o);
        assert_int_equal(r.cpu_quota, 0);
        assert_int_equal(r.cpu_period, 0);
}

static void test_container_without_pod_limit(void **state) {
        CgOptions o = opts();
        CgContainerResources r;

        (void) state;
        /* pod-level requests only: nothing to take */
        r = container_res(PODRES("    requests: {cpu: 1, memory: 1Gi}\n") "  containers:\n" C("a", ""), "a", &o);
        assert_int_equal(r.cpu_shares, 2);
        assert_int_equal(r.cpu_quota, 0);
        assert_int_equal(r.memory_limit_in_bytes, 0);
        /* memory only at pod level */
        r = container_res(PODRES("    limits: {memory: 1Gi}\n") "  containers:\n" C("a", REQ("cpu: 250m")), "a", &o);
        assert_int_equal(r.cpu_shares, 256);
        assert_int_equal(r.cpu_quota, 0);
        assert_int_equal(r.memory_limit_in_bytes, 1024 * MI);
        /* spec.resources {} sets nothing */
        r = container_res("  resources: {}\n  containers:\n" C("a", ""), "a", &o);
        assert_int_equal(r.cpu_quota, 0);
        assert_int_equal(r.memory_limit_in_bytes, 0);
        assert_int_equal(r.oom_score_adj, 1000);
}

static void test_oom_shares_pod_memory_request(void **state) {
        CgOptions o = opts();
        const char *spec = PODRES(
                "    requests: {cpu: 1, memory: 620Mi}\n    limits: {cpu: 2, memory: 1Gi}\n") "  initContainers:\n" C("proxy",
                                                                                                                      SIDECAR RES(
                                                                                                                              "cpu: 200m, memory: 64Mi",
                                                                                                                              "memory: 128Mi"))
                C("migrate", REQ("cpu: 500m, memory: 128Mi")) "  containers:\n" C("app",
                                                                                  REQ("cpu: 300m, memory: 256Mi"));

        (void) state;
        /* (620Mi - 320Mi) / 3 = 100Mi more for each container */
        assert_int_equal(container_res(spec, "app", &o).oom_score_adj, 1000 - 1000 * 356 * MI / (16384 * MI));
        assert_int_equal(container_res(spec, "migrate", &o).oom_score_adj, 1000 - 1000 * 228 * MI / (16384 * MI));
        /* the sidecar (164Mi: 990) is capped by the app container's score */
        assert_int_equal(container_res(spec, "proxy", &o).oom_score_adj, 979);
        /* no memory beyond the containers': their own requests */
        spec = PODRES("    limits: {cpu: 2, memory: 1Gi}\n") "  containers:\n" C("a", REQ("cpu: 500m, memory: 256Mi"))
                C("b", REQ("cpu: 250m"));
        assert_int_equal(container_res(spec, "a", &o).oom_score_adj, 985);
        assert_int_equal(container_res(spec, "b", &o).oom_score_adj, 999);
        /* the pod-level memory request defaulted from the limit, shared by two */
        spec = PODRES("    limits: {memory: 1Gi}\n") "  containers:\n" C("a", REQ("cpu: 500m")) C("b", "");
        assert_int_equal(container_res(spec, "a", &o).oom_score_adj, 969);
        assert_int_equal(container_res(spec, "b", &o).oom_score_adj, 969);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pod_limits_guaranteed),
                cmocka_unit_test(test_pod_limits_declare),
                cmocka_unit_test(test_pod_requests_only),
                cmocka_unit_test(test_empty_pod_resources_besteffort),
                cmocka_unit_test(test_pod_level_overhead),
                cmocka_unit_test(test_container_gets_pod_limits),
                cmocka_unit_test(test_container_without_pod_limit),
                cmocka_unit_test(test_oom_shares_pod_memory_request),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
