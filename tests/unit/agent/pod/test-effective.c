/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/resources.c: pod_effective() (component-helpers PodRequests /
 * PodLimits with sidecars and overhead, ResourceConfigForPod's
 * cpu/memoryLimitsDeclared): vectors T9-T14 and T24b, the priority
 * helpers, and the pod-level resources of 1.34 (PodRequests/PodLimits,
 * GetResourceRequestQuantity, getCPULimit/getMemoryLimit,
 * remainingPodMemReqPerContainer). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"

#define HDR "apiVersion: v1\nkind: Pod\nmetadata:\n  name: e\nspec:\n"

typedef struct Fixture {
        Pod *pod;
        PodEffective eff;
} Fixture;

static Pod *pod_of(const char *spec) {
        char text[4096];
        Pod *pod = NULL;
        CubError err = {};

        assert_true((size_t) snprintf(text, sizeof(text), "%s%s", HDR, spec) < sizeof(text));
        if (pod_decode(text, strlen(text), "eff.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode failed: %s", err.msg);
        return pod;
}

static void effective(Fixture *f, const char *spec) {
        CubError err = {};

        f->pod = pod_of(spec);
        if (pod_effective(f->pod, &f->eff, &err) < 0)
                fail_msg("pod_effective failed: %s", err.msg);
}

static void done(Fixture *f) {
        pod_effective_done(&f->eff);
        pod_free(f->pod);
}

static int64_t milli(const PodResourceList *l, const char *name) {
        CubQuantity q;

        if (!pod_resource_get(l, name, &q))
                fail_msg("%s missing", name);
        return cub_quantity_milli(q);
}

static int64_t value(const PodResourceList *l, const char *name) {
        CubQuantity q;

        if (!pod_resource_get(l, name, &q))
                fail_msg("%s missing", name);
        return cub_quantity_value(q);
}

#define C(name, extra) "  - name: " name "\n    image: x:1\n" extra
#define RES(req, lim) "    resources:\n      requests: {" req "}\n      limits: {" lim "}\n"
#define REQ(req) "    resources:\n      requests: {" req "}\n"
#define LIM(lim) "    resources:\n      limits: {" lim "}\n"
#define SIDECAR "    restartPolicy: Always\n"

static void test_t9_init_max_wins(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  initContainers:\n" C("i", REQ("cpu: 1")) "  containers:\n" C("a", REQ("cpu: 250m"))
                              C("b", REQ("cpu: 500m")));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 1000);
        done(&f);
}

static void test_t10_app_sum_wins(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  initContainers:\n" C("i", REQ("cpu: 1")) "  containers:\n" C("a", REQ("cpu: 1000m"))
                              C("b", REQ("cpu: 500m")));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 1500);
        done(&f);
}

static void test_t11_sidecar_before_init(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  initContainers:\n" C("s", SIDECAR REQ("cpu: 100m"))
                              C("i", REQ("cpu: 1000m")) "  containers:\n" C("a", REQ("cpu: 500m")));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 1100);
        done(&f);
}

static void test_t12_sidecar_after_init(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  initContainers:\n" C("i", REQ("cpu: 1000m"))
                              C("s", SIDECAR REQ("cpu: 100m")) "  containers:\n" C("a", REQ("cpu: 500m")));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 1000);
        done(&f);
}

static void test_sidecar_sum_can_win(void **state) {
        Fixture f = {};

        (void) state;
        /* app 500m + sidecars 100m + 700m = 1300m > init 1000m + 100m */
        effective(&f, "  initContainers:\n" C("s1", SIDECAR REQ("cpu: 100m")) C("i", REQ("cpu: 1000m"))
                              C("s2", SIDECAR REQ("cpu: 700m")) "  containers:\n" C("a", REQ("cpu: 500m")));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 1300);
        done(&f);
}

static void test_sidecars_accumulate_before_init(void **state) {
        Fixture f = {};

        (void) state;
        /* candidates: 100, 300, 1000 + 300 = 1300; app + sidecars = 800 */
        effective(&f, "  initContainers:\n" C("s1", SIDECAR REQ("cpu: 100m, memory: 10Mi"))
                              C("s2", SIDECAR REQ("cpu: 200m, memory: 20Mi"))
                                      C("i", REQ("cpu: 1000m, memory: 1Mi")) "  containers:\n" C(
                                              "a", REQ("cpu: 500m, memory: 100Mi")));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 1300);
        assert_int_equal(value(&f.eff.requests, "memory"), 130 * 1048576);
        done(&f);
}

static void test_t13_overhead(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  overhead: {cpu: 250m, memory: 120Mi}\n  containers:\n" C(
                              "a", RES("cpu: 500m, memory: 256Mi", "cpu: 1, memory: 512Mi")));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 750);
        assert_int_equal(value(&f.eff.requests, "memory"), 394264576);
        assert_int_equal(milli(&f.eff.limits, "cpu"), 1250);
        assert_int_equal(value(&f.eff.limits, "memory"), 662700032);
        assert_true(f.eff.cpu_limits_declared);
        assert_true(f.eff.memory_limits_declared);
        done(&f);
}

static void test_t14_overhead_not_added_to_absent_limit(void **state) {
        Fixture f = {};
        CubQuantity q = { .units = 9 };

        (void) state;
        effective(&f, "  overhead: {cpu: 250m, memory: 120Mi}\n  containers:\n" C(
                              "a", RES("cpu: 500m, memory: 256Mi", "cpu: 1")));
        assert_int_equal(value(&f.eff.requests, "memory"), 394264576);
        assert_false(pod_resource_get(&f.eff.limits, "memory", &q));
        assert_true(cub_quantity_is_zero(q));
        assert_int_equal(milli(&f.eff.limits, "cpu"), 1250);
        assert_false(f.eff.memory_limits_declared);
        assert_true(f.eff.cpu_limits_declared);
        done(&f);
}

static void test_overhead_on_besteffort(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  overhead: {cpu: 250m, memory: 120Mi}\n  containers:\n" C("a", ""));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 250);
        assert_int_equal(value(&f.eff.requests, "memory"), 125829120);
        assert_int_equal(f.eff.limits.n, 0);
        assert_false(f.eff.cpu_limits_declared);
        assert_false(f.eff.memory_limits_declared);
        done(&f);
}

static void test_t24b_init_without_limits_clears_declared(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  initContainers:\n" C("i", "") "  containers:\n" C(
                              "a", RES("cpu: 500m, memory: 256Mi", "cpu: 1, memory: 512Mi")));
        assert_false(f.eff.cpu_limits_declared);
        assert_false(f.eff.memory_limits_declared);
        assert_int_equal(milli(&f.eff.requests, "cpu"), 500);
        assert_int_equal(milli(&f.eff.limits, "cpu"), 1000);
        assert_int_equal(value(&f.eff.limits, "memory"), 536870912);
        done(&f);
}

static void test_declared_when_every_container_has_limits(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  initContainers:\n" C("i", LIM("cpu: 2, memory: 1Gi")) "  containers:\n" C(
                              "a", LIM("cpu: 1, memory: 512Mi"))
                              C("b", RES("cpu: 100m, memory: 64Mi", "cpu: 500m, memory: 256Mi")));
        assert_true(f.eff.cpu_limits_declared);
        assert_true(f.eff.memory_limits_declared);
        assert_int_equal(milli(&f.eff.limits, "cpu"), 2000);
        assert_int_equal(value(&f.eff.limits, "memory"), 1073741824);
        assert_int_equal(milli(&f.eff.requests, "cpu"), 2000);
        done(&f);
}

static void test_declared_per_resource(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  containers:\n" C("a", LIM("cpu: 1, memory: 512Mi")) C("b", LIM("cpu: 1")));
        assert_true(f.eff.cpu_limits_declared);
        assert_false(f.eff.memory_limits_declared);
        done(&f);
        f = (Fixture){};
        effective(&f, "  containers:\n" C("a", LIM("cpu: 1, memory: 512Mi")) C("b", LIM("memory: 1Mi")));
        assert_false(f.eff.cpu_limits_declared);
        assert_true(f.eff.memory_limits_declared);
        done(&f);
}

static void test_declared_zero_limit_counts_as_missing(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  containers:\n" C("a", LIM("cpu: \"0\", memory: 512Mi")));
        assert_false(f.eff.cpu_limits_declared);
        assert_true(f.eff.memory_limits_declared);
        done(&f);
}

static void test_declared_sidecar_limits_cover_later_init(void **state) {
        Fixture f = {};

        (void) state;
        /* the regular init container's candidate includes the sidecars
         * started before it, so PodLimits' callback sees non-zero limits */
        effective(&f, "  initContainers:\n" C("s", SIDECAR LIM("cpu: 100m, memory: 64Mi"))
                              C("i", "") "  containers:\n" C("a", LIM("cpu: 1, memory: 512Mi")));
        assert_true(f.eff.cpu_limits_declared);
        assert_true(f.eff.memory_limits_declared);
        assert_int_equal(milli(&f.eff.limits, "cpu"), 1100);
        done(&f);
}

static void test_declared_sidecar_without_limits(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  initContainers:\n" C("s", SIDECAR "") "  containers:\n" C("a", LIM("cpu: 1, memory: 512Mi")));
        assert_false(f.eff.cpu_limits_declared);
        assert_false(f.eff.memory_limits_declared);
        done(&f);
}

static void test_limits_with_sidecars(void **state) {
        Fixture f = {};

        (void) state;
        /* sum 1 + 0.2 = 1.2; candidates 0.2, 2 + 0.2 = 2.2 */
        effective(&f, "  initContainers:\n" C("s", SIDECAR LIM("cpu: 200m, memory: 100Mi")) C(
                              "i", LIM("cpu: 2, memory: 50Mi")) "  containers:\n" C("a", LIM("cpu: 1, memory: 200Mi")));
        assert_int_equal(milli(&f.eff.limits, "cpu"), 2200);
        assert_int_equal(value(&f.eff.limits, "memory"), 300 * 1048576);
        assert_int_equal(milli(&f.eff.requests, "cpu"), 2200);
        done(&f);
}

static void test_other_resources_summed(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, "  containers:\n" C("a", LIM("nvidia.com/gpu: 1, ephemeral-storage: 1Gi"))
                              C("b", LIM("nvidia.com/gpu: 2")));
        assert_int_equal(value(&f.eff.requests, "nvidia.com/gpu"), 3);
        assert_int_equal(value(&f.eff.limits, "nvidia.com/gpu"), 3);
        assert_int_equal(value(&f.eff.requests, "ephemeral-storage"), 1073741824);
        assert_false(pod_resource_get(&f.eff.requests, "cpu", NULL));
        done(&f);
}

static void test_sum_overflow(void **state) {
        Pod *pod;
        PodEffective eff = { .cpu_limits_declared = true };
        CubError err = {};

        (void) state;
        pod = pod_of("  containers:\n" C("a", LIM("memory: 5E")) C("b", LIM("memory: 5E")));
        assert_int_equal(pod_effective(pod, &eff, &err), -ERANGE);
        assert_int_equal(err.code, ERANGE);
        assert_string_equal(err.msg, "pod default/e: effective resources: sum out of range");
        assert_int_equal(eff.requests.n, 0);
        assert_true(eff.cpu_limits_declared); /* untouched */
        pod_free(pod);
}

static void test_resource_get(void **state) {
        Pod *pod;
        CubQuantity q = { .units = 4, .milli = 4 };

        (void) state;
        pod = pod_of("  containers:\n" C("a", REQ("cpu: 1500m")));
        assert_true(pod_resource_get(&pod->containers[0].requests, "cpu", &q));
        assert_true(q.units == 1 && q.milli == 500);
        assert_true(pod_resource_get(&pod->containers[0].requests, "cpu", NULL));
        assert_false(pod_resource_get(&pod->containers[0].requests, "memory", &q));
        assert_true(cub_quantity_is_zero(q));
        assert_false(pod_resource_get(&pod->containers[0].limits, "cpu", NULL));
        assert_false(pod_resource_get(NULL, "cpu", &q));
        pod_free(pod);
}

static void test_builtin_priority(void **state) {
        int32_t p = 7;

        (void) state;
        assert_true(pod_builtin_priority("system-node-critical", &p));
        assert_int_equal(p, 2000001000);
        assert_true(pod_builtin_priority("system-cluster-critical", &p));
        assert_int_equal(p, 2000000000);
        p = 7;
        assert_false(pod_builtin_priority("high-priority", &p));
        assert_false(pod_builtin_priority("", &p));
        assert_false(pod_builtin_priority(NULL, &p));
        assert_int_equal(p, 7);
}

static void test_critical(void **state) {
        Pod *pod;

        (void) state;
        pod = pod_of("  priority: 2000000000\n  containers:\n" C("a", ""));
        assert_true(pod_is_critical(pod));
        assert_false(pod_is_node_critical(pod));
        pod_free(pod);
        pod = pod_of("  priority: 1999999999\n  containers:\n" C("a", ""));
        assert_false(pod_is_critical(pod));
        pod_free(pod);
        pod = pod_of("  containers:\n" C("a", ""));
        assert_false(pod_is_critical(pod));
        assert_false(pod_is_node_critical(pod));
        pod_free(pod);
        pod = pod_of("  priorityClassName: system-node-critical\n  containers:\n" C("a", ""));
        assert_true(pod_is_critical(pod));
        assert_true(pod_is_node_critical(pod));
        pod_free(pod);
        pod = pod_of("  priorityClassName: system-cluster-critical\n  containers:\n" C("a", ""));
        assert_true(pod_is_critical(pod));
        assert_false(pod_is_node_critical(pod));
        pod_free(pod);
}

static void test_is_sidecar(void **state) {
        Pod *pod;

        (void) state;
        pod = pod_of("  initContainers:\n" C("s", SIDECAR) C("i", "") "  containers:\n" C("a", ""));
        assert_true(pod_container_is_sidecar(&pod->init_containers[0]));
        assert_false(pod_container_is_sidecar(&pod->init_containers[1]));
        assert_false(pod_container_is_sidecar(&pod->containers[0]));
        pod_free(pod);
}

static void test_container_at(void **state) {
        static const char *const want[] = { "s", "i", "a", "b" };
        Pod *pod;
        bool init = false;

        (void) state;
        pod = pod_of("  initContainers:\n" C("s", SIDECAR) C("i", "") "  containers:\n" C("a", "") C("b", ""));
        for (size_t k = 0; k < 4; k++) {
                const PodContainer *c = pod_container_at(pod, k, &init);

                assert_string_equal(c->name, want[k]);
                assert_int_equal(init, k < 2);
                assert_ptr_equal(c, k < 2 ? &pod->init_containers[k] : &pod->containers[k - 2]);
                assert_ptr_equal(pod_container_at(pod, k, NULL), c);
        }
        pod_free(pod);

        /* no init containers: k counts the app containers */
        pod = pod_of("  containers:\n" C("a", ""));
        assert_ptr_equal(pod_container_at(pod, 0, &init), &pod->containers[0]);
        assert_false(init);
        pod_free(pod);
}

static void test_critical_priority(void **state) {
        int32_t p = 0;

        (void) state;
        assert_int_equal(POD_PRIORITY_CRITICAL, 2000000000);
        assert_true(pod_builtin_priority("system-cluster-critical", &p));
        assert_int_equal(p, POD_PRIORITY_CRITICAL);
        assert_true(pod_builtin_priority("system-node-critical", &p));
        assert_int_equal(p, POD_PRIORITY_CRITICAL + 1000);
}

static void test_done_on_empty(void **state) {
        PodEffective e = {};
        PodResourceList l = {};

        (void) state;
        pod_effective_done(&e);
        pod_resource_list_done(&l);
        assert_int_equal(e.requests.n, 0);
        assert_null(l.items);
        assert_null(pod_free(NULL));
}

/* ---- pod-level resources (component-helpers PodRequests/PodLimits, 1.34) --- */

#define PODRES(body) "  resources:\n" body

static void test_pod_level_replaces_supported(void **state) {
        Fixture f = {};

        (void) state;
        /* cpu and memory from spec.resources; ephemeral-storage and the
         * extended resource stay the containers' aggregate */
        effective(
                &f,
                PODRES("    requests: {cpu: 1, memory: 1Gi}\n    limits: {cpu: 2, memory: 2Gi}\n") "  containers:\n" C(
                        "a", RES("cpu: 250m, memory: 128Mi, ephemeral-storage: 1Gi, example.com/dev: 1",
                                 "cpu: 500m, ephemeral-storage: 2Gi, example.com/dev: 1")));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 1000);
        assert_int_equal(value(&f.eff.requests, "memory"), 1073741824);
        assert_int_equal(value(&f.eff.requests, "ephemeral-storage"), 1073741824);
        assert_int_equal(value(&f.eff.requests, "example.com/dev"), 1);
        assert_int_equal(milli(&f.eff.limits, "cpu"), 2000);
        assert_int_equal(value(&f.eff.limits, "memory"), 2147483648);
        assert_int_equal(value(&f.eff.limits, "ephemeral-storage"), 2147483648);
        /* a container lacks a memory limit, the pod-level one declares it */
        assert_true(f.eff.cpu_limits_declared);
        assert_true(f.eff.memory_limits_declared);
        done(&f);
}

static void test_pod_level_defaulted_requests(void **state) {
        Fixture f = {};

        (void) state;
        /* defaults.go defaultPodRequests: cpu from the containers' aggregate
         * (sidecar and init included), memory from the pod-level limit */
        effective(&f,
                  PODRES("    limits: {cpu: 4, memory: 1Gi}\n") "  initContainers:\n" C("s", SIDECAR REQ("cpu: 100m"))
                          C("i", REQ("cpu: 1")) "  containers:\n" C("a", REQ("cpu: 500m")));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 1100);
        assert_int_equal(value(&f.eff.requests, "memory"), 1073741824);
        assert_int_equal(milli(&f.eff.limits, "cpu"), 4000);
        assert_true(f.eff.cpu_limits_declared);
        assert_true(f.eff.memory_limits_declared);
        assert_int_equal(f.pod->resources_requests.n, 2);
        done(&f);
}

static void test_pod_level_requests_only(void **state) {
        Fixture f = {};

        (void) state;
        /* limits are the containers' (IsPodLevelResourcesSet, no pod-level
         * limit to take); one container without a cpu limit: not declared */
        effective(&f, PODRES("    requests: {cpu: 2, memory: 1Gi}\n") "  containers:\n" C(
                              "a", LIM("cpu: 1, memory: 256Mi")) C("b", REQ("memory: 64Mi")));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 2000);
        assert_int_equal(milli(&f.eff.limits, "cpu"), 1000);
        assert_int_equal(value(&f.eff.limits, "memory"), 268435456);
        assert_false(f.eff.cpu_limits_declared);
        assert_false(f.eff.memory_limits_declared);
        done(&f);
}

static void test_pod_level_memory_limit_only(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, PODRES("    limits: {memory: 1Gi}\n") "  containers:\n" C("a", LIM("cpu: 1")) C("b", ""));
        assert_false(f.eff.cpu_limits_declared); /* b has no cpu limit, nor the pod */
        assert_true(f.eff.memory_limits_declared);
        assert_int_equal(milli(&f.eff.limits, "cpu"), 1000);
        assert_int_equal(milli(&f.eff.requests, "cpu"), 1000); /* a's, defaulted from its limit */
        done(&f);
}

static void test_pod_level_overhead(void **state) {
        Fixture f = {};

        (void) state;
        /* the overhead goes onto the pod-level values: every request, every
         * non-zero limit */
        effective(&f, "  overhead: {cpu: 250m, memory: 120Mi, ephemeral-storage: 1Mi}\n" PODRES(
                              "    limits: {cpu: 1, memory: 512Mi}\n") "  containers:\n" C("a", ""));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 1250);
        assert_int_equal(value(&f.eff.requests, "memory"), 632 * 1048576LL);
        assert_int_equal(value(&f.eff.requests, "ephemeral-storage"), 1048576);
        assert_int_equal(milli(&f.eff.limits, "cpu"), 1250);
        assert_int_equal(value(&f.eff.limits, "memory"), 632 * 1048576LL);
        assert_false(pod_resource_get(&f.eff.limits, "ephemeral-storage", NULL));
        done(&f);
}

static void test_pod_level_empty_is_not_set(void **state) {
        Fixture f = {};

        (void) state;
        effective(&f, PODRES("    requests: {}\n") "  containers:\n" C("a", RES("cpu: 250m", "cpu: 500m")));
        assert_true(f.pod->resources_set);
        assert_false(pod_level_resources_set(f.pod));
        assert_int_equal(milli(&f.eff.requests, "cpu"), 250);
        assert_int_equal(milli(&f.eff.limits, "cpu"), 500);
        done(&f);
}

static void test_pod_level_predicates(void **state) {
        PodResource req[] = { { (char *) "ephemeral-storage", { 1, 0 } } };
        PodResource lim[] = { { (char *) "hugepages-2Mi", { 4194304, 0 } } };
        Pod pod = { .resources_set = true, .resources_requests = { req, 1 } };

        (void) state;
        assert_true(pod_level_resource_supported("cpu"));
        assert_true(pod_level_resource_supported("memory"));
        assert_true(pod_level_resource_supported("hugepages-1Gi"));
        assert_false(pod_level_resource_supported("ephemeral-storage"));
        assert_false(pod_level_resource_supported("example.com/dev"));
        /* IsPodLevelRequestsSet: a supported name, not just a name */
        assert_false(pod_level_requests_set(&pod));
        assert_false(pod_level_resources_set(&pod));
        pod.resources_limits = (PodResourceList){ lim, 1 };
        assert_true(pod_level_limits_set(&pod));
        assert_true(pod_level_resources_set(&pod));
        pod.resources_set = false;
        assert_false(pod_level_resources_set(&pod));
}

/* pkg/api/v1/resource GetResourceRequestQuantity (eviction ranking) */
static void test_request_quantity(void **state) {
        Fixture f = {};

        (void) state;
        f.pod = pod_of("  overhead: {memory: 10Mi, ephemeral-storage: 1Mi}\n  containers:\n" C(
                "a", REQ("memory: 100Mi")) C("b", REQ("memory: 28Mi")));
        assert_int_equal(cub_quantity_value(pod_request_quantity(f.pod, "memory")), 138 * 1048576LL);
        /* no request: the overhead is not added */
        assert_true(cub_quantity_is_zero(pod_request_quantity(f.pod, "ephemeral-storage")));
        pod_free(f.pod);

        /* pod-level resources: the pod-level request alone; a resource they
         * do not cover counts 0, whatever the containers request */
        f.pod = pod_of("  overhead: {memory: 10Mi}\n" PODRES("    requests: {memory: 512Mi}\n") "  containers:\n" C(
                "a", REQ("memory: 100Mi, ephemeral-storage: 1Gi")));
        assert_int_equal(cub_quantity_value(pod_request_quantity(f.pod, "memory")), 522 * 1048576LL);
        assert_true(cub_quantity_is_zero(pod_request_quantity(f.pod, "ephemeral-storage")));
        assert_true(cub_quantity_is_zero(pod_request_quantity(f.pod, "cpu")));
        pod_free(f.pod);
}

/* kuberuntime getCPULimit/getMemoryLimit */
static void test_container_limit(void **state) {
        Pod *pod;

        (void) state;
        pod = pod_of(PODRES("    limits: {cpu: 2, memory: 1Gi}\n") "  containers:\n" C("a", LIM("cpu: 500m"))
                             C("b", LIM("cpu: 0")) C("c", ""));
        assert_int_equal(cub_quantity_milli(pod_container_limit(pod, &pod->containers[0], "cpu")), 500);
        assert_int_equal(cub_quantity_value(pod_container_limit(pod, &pod->containers[0], "memory")), 1073741824);
        assert_int_equal(cub_quantity_milli(pod_container_limit(pod, &pod->containers[1], "cpu")), 2000); /* zero */
        assert_int_equal(cub_quantity_milli(pod_container_limit(pod, &pod->containers[2], "cpu")), 2000);
        pod_free(pod);
        /* pod-level requests only: no pod-level limit to give */
        pod = pod_of(PODRES("    requests: {cpu: 1}\n") "  containers:\n" C("a", ""));
        assert_true(cub_quantity_is_zero(pod_container_limit(pod, &pod->containers[0], "cpu")));
        pod_free(pod);
        /* no pod-level resources: the container's own, zero when none */
        pod = pod_of("  containers:\n" C("a", LIM("memory: 64Mi")));
        assert_int_equal(cub_quantity_value(pod_container_limit(pod, &pod->containers[0], "memory")), 67108864);
        assert_true(cub_quantity_is_zero(pod_container_limit(pod, &pod->containers[0], "cpu")));
        pod_free(pod);
}

/* qos/helpers.go remainingPodMemReqPerContainer */
static void test_remaining_memory(void **state) {
        Pod *pod;

        (void) state;
        pod = pod_of(PODRES("    requests: {memory: 620Mi}\n") "  initContainers:\n" C("s", SIDECAR REQ("memory: 64Mi"))
                             C("i", REQ("memory: 128Mi")) "  containers:\n" C("a", REQ("memory: 256Mi")));
        /* (620Mi - max(256Mi + 64Mi, 128Mi + 64Mi)) / 3 */
        assert_int_equal(pod_remaining_memory_request_per_container(pod), 100 * 1048576LL);
        pod_free(pod);
        /* Go's division truncates */
        pod = pod_of(PODRES("    requests: {memory: 100}\n") "  containers:\n" C("a", "") C("b", "") C("c", ""));
        assert_int_equal(pod_remaining_memory_request_per_container(pod), 33);
        pod_free(pod);
        /* no pod-level memory request, or no pod-level requests: 0 */
        pod = pod_of(PODRES("    requests: {cpu: 1}\n") "  containers:\n" C("a", ""));
        assert_int_equal(pod_remaining_memory_request_per_container(pod), 0);
        pod_free(pod);
        pod = pod_of("  containers:\n" C("a", REQ("memory: 1Gi")));
        assert_int_equal(pod_remaining_memory_request_per_container(pod), 0);
        pod_free(pod);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_t9_init_max_wins),
                cmocka_unit_test(test_t10_app_sum_wins),
                cmocka_unit_test(test_t11_sidecar_before_init),
                cmocka_unit_test(test_t12_sidecar_after_init),
                cmocka_unit_test(test_sidecar_sum_can_win),
                cmocka_unit_test(test_sidecars_accumulate_before_init),
                cmocka_unit_test(test_t13_overhead),
                cmocka_unit_test(test_t14_overhead_not_added_to_absent_limit),
                cmocka_unit_test(test_overhead_on_besteffort),
                cmocka_unit_test(test_t24b_init_without_limits_clears_declared),
                cmocka_unit_test(test_declared_when_every_container_has_limits),
                cmocka_unit_test(test_declared_per_resource),
                cmocka_unit_test(test_declared_zero_limit_counts_as_missing),
                cmocka_unit_test(test_declared_sidecar_limits_cover_later_init),
                cmocka_unit_test(test_declared_sidecar_without_limits),
                cmocka_unit_test(test_limits_with_sidecars),
                cmocka_unit_test(test_other_resources_summed),
                cmocka_unit_test(test_sum_overflow),
                cmocka_unit_test(test_resource_get),
                cmocka_unit_test(test_builtin_priority),
                cmocka_unit_test(test_critical),
                cmocka_unit_test(test_is_sidecar),
                cmocka_unit_test(test_container_at),
                cmocka_unit_test(test_critical_priority),
                cmocka_unit_test(test_done_on_empty),
                cmocka_unit_test(test_pod_level_replaces_supported),
                cmocka_unit_test(test_pod_level_defaulted_requests),
                cmocka_unit_test(test_pod_level_requests_only),
                cmocka_unit_test(test_pod_level_memory_limit_only),
                cmocka_unit_test(test_pod_level_overhead),
                cmocka_unit_test(test_pod_level_empty_is_not_set),
                cmocka_unit_test(test_pod_level_predicates),
                cmocka_unit_test(test_request_quantity),
                cmocka_unit_test(test_container_limit),
                cmocka_unit_test(test_remaining_memory),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
