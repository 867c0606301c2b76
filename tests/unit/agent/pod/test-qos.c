/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/resources.c: pod_qos_class() (qos.go ComputePodQOS), vectors
 * T1-T8 of shared/kubelet-semantics.md section 13, more shapes, and the
 * pod-level resources of 1.34. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"

#define HDR "apiVersion: v1\nkind: Pod\nmetadata:\n  name: q\nspec:\n"

static PodQOSClass qos_of(const char *spec) {
        char text[4096];
        Pod *pod = NULL;
        CubError err = {};
        PodQOSClass q;

        assert_true((size_t) snprintf(text, sizeof(text), "%s%s", HDR, spec) < sizeof(text));
        if (pod_decode(text, strlen(text), "qos.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode failed: %s", err.msg);
        q = pod_qos_class(pod);
        pod_free(pod);
        return q;
}

#define ASSERT_QOS(spec, want) assert_string_equal(pod_qos_to_string(qos_of(spec)), pod_qos_to_string(want))

static void test_t1_requests_equal_limits(void **state) {
        (void) state;
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n"
                   "      requests: {cpu: 500m, memory: 256Mi}\n      limits: {cpu: 500m, memory: 256Mi}\n",
                   POD_QOS_GUARANTEED);
}

static void test_t2_limits_only(void **state) {
        (void) state;
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n      limits: {cpu: 1, memory: 1Gi}\n",
                   POD_QOS_GUARANTEED);
}

static void test_t3_cpu_request_below_limit(void **state) {
        (void) state;
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n"
                   "      requests: {cpu: 250m, memory: 128Mi}\n      limits: {cpu: 500m, memory: 128Mi}\n",
                   POD_QOS_BURSTABLE);
}

static void test_t4_second_container_bare(void **state) {
        (void) state;
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n"
                   "      requests: {cpu: 1, memory: 1Gi}\n      limits: {cpu: 1, memory: 1Gi}\n"
                   "  - name: b\n    image: x:1\n",
                   POD_QOS_BURSTABLE);
}

static void test_t5_init_container_without_resources(void **state) {
        (void) state;
        ASSERT_QOS("  initContainers:\n  - name: i\n    image: x:1\n"
                   "  containers:\n  - name: a\n    image: x:1\n    resources:\n      limits: {cpu: 1, memory: 1Gi}\n",
                   POD_QOS_BURSTABLE);
}

static void test_t6_only_extended_and_ephemeral(void **state) {
        (void) state;
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n"
                   "      limits: {nvidia.com/gpu: 1, ephemeral-storage: 1Gi}\n"
                   "  - name: b\n    image: x:1\n    resources:\n      requests: {ephemeral-storage: 1Gi}\n",
                   POD_QOS_BESTEFFORT);
}

static void test_t7_zero_requests(void **state) {
        (void) state;
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n      requests: {cpu: \"0\", memory: "
                   "\"0\"}\n",
                   POD_QOS_BESTEFFORT);
}

static void test_t8_equal_quantities_different_text(void **state) {
        (void) state;
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n"
                   "      requests: {cpu: 1, memory: 1Gi}\n      limits: {cpu: 1000m, memory: 1073741824}\n",
                   POD_QOS_GUARANTEED);
}

static void test_no_resources_is_besteffort(void **state) {
        (void) state;
        ASSERT_QOS("  initContainers:\n  - name: i\n    image: x:1\n"
                   "  containers:\n  - name: a\n    image: x:1\n  - name: b\n    image: x:1\n",
                   POD_QOS_BESTEFFORT);
}

static void test_two_guaranteed_containers_and_init(void **state) {
        (void) state;
        ASSERT_QOS(
                "  initContainers:\n  - name: i\n    image: x:1\n    resources:\n      limits: {cpu: 2, memory: 1Gi}\n"
                "  containers:\n  - name: a\n    image: x:1\n    resources:\n      limits: {cpu: 1, memory: 512Mi}\n"
                "  - name: b\n    image: x:1\n    resources:\n      limits: {cpu: 500m, memory: 256Mi}\n",
                POD_QOS_GUARANTEED);
}

static void test_memory_limit_only_is_burstable(void **state) {
        (void) state;
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n      limits: {memory: 1Gi}\n",
                   POD_QOS_BURSTABLE);
}

static void test_cpu_request_only_is_burstable(void **state) {
        (void) state;
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n      requests: {cpu: 100m}\n",
                   POD_QOS_BURSTABLE);
}

static void test_zero_cpu_request_with_limits_is_burstable(void **state) {
        (void) state;
        /* an explicit request of 0 is not defaulted and not counted */
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n"
                   "      requests: {cpu: \"0\"}\n      limits: {cpu: 1, memory: 1Gi}\n",
                   POD_QOS_BURSTABLE);
}

static void test_zero_limit_is_not_a_limit(void **state) {
        (void) state;
        ASSERT_QOS(
                "  containers:\n  - name: a\n    image: x:1\n    resources:\n      limits: {cpu: \"0\", memory: 1Gi}\n",
                POD_QOS_BURSTABLE);
}

static void test_extra_resources_do_not_break_guaranteed(void **state) {
        (void) state;
        ASSERT_QOS("  containers:\n  - name: a\n    image: x:1\n    resources:\n"
                   "      requests: {cpu: 1, memory: 1Gi, ephemeral-storage: 1Gi}\n"
                   "      limits: {cpu: 1, memory: 1Gi, ephemeral-storage: 2Gi, example.com/dev: 1}\n",
                   POD_QOS_GUARANTEED);
}

static void test_sidecar_counts(void **state) {
        (void) state;
        ASSERT_QOS("  initContainers:\n  - name: s\n    image: x:1\n    restartPolicy: Always\n"
                   "  containers:\n  - name: a\n    image: x:1\n    resources:\n      limits: {cpu: 1, memory: 1Gi}\n",
                   POD_QOS_BURSTABLE);
        ASSERT_QOS("  initContainers:\n  - name: s\n    image: x:1\n    restartPolicy: Always\n    resources:\n"
                   "      limits: {cpu: 100m, memory: 64Mi}\n"
                   "  containers:\n  - name: a\n    image: x:1\n    resources:\n      limits: {cpu: 1, memory: 1Gi}\n",
                   POD_QOS_GUARANTEED);
}

static void test_only_init_has_resources(void **state) {
        (void) state;
        ASSERT_QOS("  initContainers:\n  - name: i\n    image: x:1\n    resources:\n      requests: {memory: 64Mi}\n"
                   "  containers:\n  - name: a\n    image: x:1\n",
                   POD_QOS_BURSTABLE);
}

/* ---- pod-level resources (qos.go ComputePodQOS, 1.34) ---------------------- */

#define BARE "  containers:\n  - name: a\n    image: x:1\n"
#define GUAR_C "  containers:\n  - name: a\n    image: x:1\n    resources:\n      limits: {cpu: 1, memory: 1Gi}\n"

static void test_pod_level_limits_are_guaranteed(void **state) {
        (void) state;
        /* requests default to the limits (defaults.go defaultPodRequests) */
        ASSERT_QOS("  resources:\n    limits: {cpu: 2, memory: 1Gi}\n" BARE, POD_QOS_GUARANTEED);
        ASSERT_QOS("  resources:\n    requests: {cpu: 2, memory: 1Gi}\n    limits: {cpu: 2, memory: 1Gi}\n" BARE
                   "  - name: b\n    image: x:1\n    resources:\n      requests: {cpu: 500m}\n",
                   POD_QOS_GUARANTEED);
        /* the pod-level limits decide, not the container without any */
        ASSERT_QOS("  resources:\n    limits: {cpu: 2, memory: 1Gi}\n" GUAR_C "  - name: b\n    image: x:1\n"
                   "    resources:\n      requests: {cpu: 1}\n",
                   POD_QOS_GUARANTEED);
}

static void test_pod_level_requests_default_from_containers(void **state) {
        (void) state;
        /* the pod-level cpu request is the containers' 500m, below the limit */
        ASSERT_QOS("  resources:\n    limits: {cpu: 2, memory: 1Gi}\n"
                   "  containers:\n  - name: a\n    image: x:1\n    resources:\n      requests: {cpu: 500m}\n",
                   POD_QOS_BURSTABLE);
}

static void test_pod_level_decides_alone(void **state) {
        (void) state;
        /* requests without limits: Burstable though the container is Guaranteed */
        ASSERT_QOS("  resources:\n    requests: {cpu: 1, memory: 1Gi}\n" GUAR_C, POD_QOS_BURSTABLE);
        /* limits without memory */
        ASSERT_QOS("  resources:\n    limits: {cpu: 1}\n" GUAR_C, POD_QOS_BURSTABLE);
        /* spec.resources present but empty: BestEffort, whatever the containers say */
        ASSERT_QOS("  resources: {}\n" GUAR_C, POD_QOS_BESTEFFORT);
        ASSERT_QOS("  resources:\n    requests: {}\n    limits: {}\n" GUAR_C, POD_QOS_BESTEFFORT);
        /* zero requests count as none */
        ASSERT_QOS("  resources:\n    requests: {cpu: 0, memory: 0}\n" BARE, POD_QOS_BESTEFFORT);
        /* spec.resources null is no pod-level resources */
        ASSERT_QOS("  resources: null\n" GUAR_C, POD_QOS_GUARANTEED);
}

static void test_pod_level_hugepages_do_not_count(void **state) {
        (void) state;
        ASSERT_QOS("  resources:\n    limits: {cpu: 1, memory: 1Gi, hugepages-2Mi: 4Mi}\n" BARE, POD_QOS_GUARANTEED);
}

static void test_qos_names(void **state) {
        (void) state;
        assert_string_equal(pod_qos_to_string(POD_QOS_GUARANTEED), "Guaranteed");
        assert_string_equal(pod_qos_to_string(POD_QOS_BURSTABLE), "Burstable");
        assert_string_equal(pod_qos_to_string(POD_QOS_BESTEFFORT), "BestEffort");
        assert_null(pod_qos_to_string(_POD_QOS_MAX));
        assert_null(pod_qos_to_string(_POD_QOS_INVALID));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_t1_requests_equal_limits),
                cmocka_unit_test(test_t2_limits_only),
                cmocka_unit_test(test_t3_cpu_request_below_limit),
                cmocka_unit_test(test_t4_second_container_bare),
                cmocka_unit_test(test_t5_init_container_without_resources),
                cmocka_unit_test(test_t6_only_extended_and_ephemeral),
                cmocka_unit_test(test_t7_zero_requests),
                cmocka_unit_test(test_t8_equal_quantities_different_text),
                cmocka_unit_test(test_no_resources_is_besteffort),
                cmocka_unit_test(test_two_guaranteed_containers_and_init),
                cmocka_unit_test(test_memory_limit_only_is_burstable),
                cmocka_unit_test(test_cpu_request_only_is_burstable),
                cmocka_unit_test(test_zero_cpu_request_with_limits_is_burstable),
                cmocka_unit_test(test_zero_limit_is_not_a_limit),
                cmocka_unit_test(test_extra_resources_do_not_break_guaranteed),
                cmocka_unit_test(test_sidecar_counts),
                cmocka_unit_test(test_only_init_has_resources),
                cmocka_unit_test(test_pod_level_limits_are_guaranteed),
                cmocka_unit_test(test_pod_level_requests_default_from_containers),
                cmocka_unit_test(test_pod_level_decides_alone),
                cmocka_unit_test(test_pod_level_hugepages_do_not_count),
                cmocka_unit_test(test_qos_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
