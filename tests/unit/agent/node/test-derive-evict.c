/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent/node/derive.c: agent_evict_pod(), the requests eviction ranks by:
 * kubelet's GetResourceRequestQuantity (pkg/api/v1/resource/helpers.go,
 * 1.34): the pod-level request alone when the pod sets pod-level
 * resources, the containers' aggregate otherwise, the overhead only onto a
 * non-zero request. derive.c belongs to no library, so the test compiles it
 * in (as test-derive.c does).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/node/derive.c"

#define MI 1048576ULL
#define HDR "apiVersion: v1\nkind: Pod\nmetadata:\n  name: e\nspec:\n"

static Pod *pod_of(const char *spec) {
        char text[4096];
        Pod *pod = NULL;
        CubError err = {};

        assert_true((size_t) snprintf(text, sizeof(text), "%s%s", HDR, spec) < sizeof(text));
        if (pod_decode(text, strlen(text), "e.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode failed: %s", err.msg);
        return pod;
}

static void evict_of(const char *spec, EvictPod *ret, EvictContainer containers[4]) {
        static char name[64]; /* test-only: outlives the pod */
        Pod *pod = pod_of(spec);
        CubError err = {};

        assert_true(pod->n_containers <= 4);
        assert_int_equal(agent_evict_pod(pod, "default/e", containers, ret, &err), 0);
        /* the names point into the pod: keep only what the tests read */
        for (size_t i = 0; i < pod->n_containers; i++)
                containers[i].name = NULL;
        assert_true((size_t) snprintf(name, sizeof(name), "%s", ret->name) < sizeof(name));
        ret->name = name;
        pod_free(pod);
}

static void test_container_requests(void **state) {
        EvictContainer cs[4];
        EvictPod p;

        (void) state;
        evict_of("  overhead: {memory: 10Mi, ephemeral-storage: 1Mi}\n  containers:\n"
                 "  - name: a\n    image: x:1\n    resources:\n      requests: {memory: 100Mi}\n",
                 &p, cs);
        assert_int_equal(p.memory_request, 110 * MI);
        /* no ephemeral-storage request: the overhead is not added */
        assert_int_equal(p.ephemeral_request, 0);
        assert_int_equal(p.qos, EVICT_QOS_BURSTABLE);
        assert_false(p.pod_memory_request_set);
        assert_int_equal(cs[0].memory_request, 100 * MI);
}

static void test_pod_level_requests(void **state) {
        EvictContainer cs[4];
        EvictPod p;

        (void) state;
        /* memory from spec.resources (defaulted from its limit); the
         * containers' ephemeral-storage request is not counted */
        evict_of("  resources:\n    limits: {memory: 1Gi}\n  containers:\n"
                 "  - name: a\n    image: x:1\n    resources:\n      requests: {ephemeral-storage: 1Gi}\n"
                 "  - name: b\n    image: x:1\n    resources:\n      requests: {memory: 64Mi}\n",
                 &p, cs);
        assert_int_equal(p.memory_request, 64 * MI); /* the containers' aggregate, defaulted */
        assert_int_equal(p.ephemeral_request, 0);
        assert_int_equal(cs[1].memory_request, 64 * MI);
        assert_int_equal(cs[0].ephemeral_request, 1024 * MI);
        evict_of("  resources:\n    requests: {memory: 512Mi}\n  containers:\n"
                 "  - name: a\n    image: x:1\n    resources:\n      requests: {memory: 64Mi}\n",
                 &p, cs);
        assert_int_equal(p.memory_request, 512 * MI);
        /* the message's pod line */
        assert_true(p.pod_memory_request_set);
        assert_int_equal(p.pod_memory_request, 512 * MI);
        assert_string_equal(p.name, "e");
        /* pod-level resources without a memory request: 0 */
        evict_of("  resources:\n    requests: {cpu: 1}\n  containers:\n"
                 "  - name: a\n    image: x:1\n    resources:\n      requests: {memory: 64Mi}\n",
                 &p, cs);
        assert_int_equal(p.memory_request, 0);
        assert_false(p.pod_memory_request_set);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_container_requests),
                cmocka_unit_test(test_pod_level_requests),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
