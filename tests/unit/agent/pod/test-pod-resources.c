/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/pod-resources.c: spec.resources (pod-level resources, 1.34) as
 * decoded, defaulted (pkg/apis/core/v1/defaults.go defaultHugePagePodLimits,
 * defaultPodRequests) and validated (pkg/apis/core/validation/validation.go
 * validatePodResources): one test per rule, with the API server's paths and
 * words; YAML lines, JSON and PodList paths. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"

#define HDR "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
#define C(name, extra) "  - name: " name "\n    image: x:1\n" extra
#define RES(req, lim) "    resources:\n      requests: {" req "}\n      limits: {" lim "}\n"
#define REQ(req) "    resources:\n      requests: {" req "}\n"
#define LIM(lim) "    resources:\n      limits: {" lim "}\n"
#define SIDECAR "    restartPolicy: Always\n"

static Pod *pod_ok(const char *spec) {
        char text[4096];
        Pod *pod = NULL;
        CubError err = {};

        assert_true((size_t) snprintf(text, sizeof(text), "%s%s", HDR, spec) < sizeof(text));
        if (pod_decode(text, strlen(text), "p.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode failed: %s", err.msg);
        return pod;
}

/* The decoding error of spec, which must fail with EINVAL. */
static void assert_refused(const char *spec, const char *want) {
        char text[4096];
        Pod *pod = NULL;
        CubError err = {};

        assert_true((size_t) snprintf(text, sizeof(text), "%s%s", HDR, spec) < sizeof(text));
        assert_int_equal(pod_decode(text, strlen(text), "p.yaml", POD_FORMAT_YAML, &pod, &err), -EINVAL);
        assert_null(pod);
        assert_string_equal(err.msg, want);
}

static int64_t milli_of(const PodResourceList *l, const char *name) {
        CubQuantity q;

        if (!pod_resource_get(l, name, &q))
                fail_msg("%s missing", name);
        return cub_quantity_milli(q);
}

/* ---- decoding ----------------------------------------------------------------- */

static void test_decoded(void **state) {
        Pod *pod;

        (void) state;
        pod = pod_ok("  resources:\n    requests: {cpu: 500m}\n    limits: {cpu: \"1\", memory: 1Gi}\n"
                     "  containers:\n" C("a", ""));
        assert_true(pod->resources_set);
        assert_int_equal(milli_of(&pod->resources_requests, "cpu"), 500);
        assert_int_equal(milli_of(&pod->resources_limits, "cpu"), 1000);
        assert_int_equal(pod->refused.n, 0);
        pod_free(pod);
        /* absent and null are not set; {} is */
        pod = pod_ok("  containers:\n" C("a", ""));
        assert_false(pod->resources_set);
        pod_free(pod);
        pod = pod_ok("  resources: null\n  containers:\n" C("a", ""));
        assert_false(pod->resources_set);
        pod_free(pod);
        pod = pod_ok("  resources: {}\n  containers:\n" C("a", ""));
        assert_true(pod->resources_set);
        assert_int_equal(pod->resources_requests.n + pod->resources_limits.n, 0);
        pod_free(pod);
}

static void test_bad_quantity_and_type(void **state) {
        (void) state;
        assert_refused("  resources:\n    limits: {cpu: 12XB}\n  containers:\n" C("a", ""),
                       "p.yaml:7: spec.resources.limits[cpu]: invalid quantity \"12XB\": unknown suffix \"XB\"");
        assert_refused("  resources: [cpu]\n  containers:\n" C("a", ""),
                       "p.yaml:6: spec.resources: Invalid type: expected object, got array");
}

/* ---- defaulting ---------------------------------------------------------------- */

static void test_requests_default_from_limits(void **state) {
        Pod *pod;

        (void) state;
        pod = pod_ok("  resources:\n    limits: {cpu: \"2\", memory: 1Gi}\n  containers:\n" C("a", ""));
        assert_int_equal(pod->resources_requests.n, 2);
        assert_int_equal(milli_of(&pod->resources_requests, "cpu"), 2000);
        assert_int_equal(milli_of(&pod->resources_requests, "memory"), 1073741824000LL);
        pod_free(pod);
        /* an explicit request stays */
        pod = pod_ok("  resources:\n    requests: {cpu: 100m}\n    limits: {cpu: \"2\"}\n  containers:\n" C("a", ""));
        assert_int_equal(pod->resources_requests.n, 1);
        assert_int_equal(milli_of(&pod->resources_requests, "cpu"), 100);
        pod_free(pod);
        /* no pod-level limits: nothing is defaulted */
        pod = pod_ok("  resources:\n    requests: {cpu: 1}\n  containers:\n" C("a", REQ("memory: 1Gi")));
        assert_int_equal(pod->resources_requests.n, 1);
        assert_int_equal(pod->resources_limits.n, 0);
        pod_free(pod);
}

static void test_requests_default_from_containers(void **state) {
        Pod *pod;

        (void) state;
        /* cpu and memory requested by containers: their aggregate (sidecar
         * before an init container: max(100m + 300m, 100m + 1)), even for cpu,
         * which has no pod-level limit */
        pod = pod_ok("  resources:\n    limits: {memory: 1Gi}\n  initContainers:\n" C("s", SIDECAR REQ("cpu: 100m"))
                             C("i", REQ("cpu: 1")) "  containers:\n" C("a", REQ("cpu: 300m, memory: 128Mi")));
        assert_int_equal(milli_of(&pod->resources_requests, "cpu"), 1100);
        assert_int_equal(milli_of(&pod->resources_requests, "memory"), 134217728000LL);
        pod_free(pod);
        /* a container request defaulted from its limit counts too */
        pod = pod_ok("  resources:\n    limits: {cpu: \"4\"}\n  containers:\n" C("a", LIM("cpu: \"1\"")));
        assert_int_equal(milli_of(&pod->resources_requests, "cpu"), 1000);
        pod_free(pod);
        /* ephemeral-storage and extended resources are not pod-level */
        pod = pod_ok("  resources:\n    limits: {cpu: \"4\"}\n  containers:\n" C(
                "a", RES("ephemeral-storage: 1Gi, example.com/dev: 1", "example.com/dev: 1")));
        assert_int_equal(pod->resources_requests.n, 1);
        pod_free(pod);
}

static void test_hugepage_limits_default(void **state) {
        Pod *pod;

        (void) state;
        /* the containers' hugepages limit becomes the pod-level limit, then the request */
        pod = pod_ok("  resources:\n    limits: {cpu: \"1\", memory: 1Gi}\n  containers:\n" C(
                "a", LIM("memory: 64Mi, hugepages-2Mi: 8Mi")) C("b", LIM("memory: 64Mi, hugepages-2Mi: 4Mi")));
        assert_int_equal(milli_of(&pod->resources_limits, "hugepages-2Mi"), 12582912000LL);
        assert_int_equal(milli_of(&pod->resources_requests, "hugepages-2Mi"), 12582912000LL);
        pod_free(pod);
        /* also beside pod-level requests only; the defaulted limit then
         * lets defaultPodRequests run: hugepages from that limit, memory
         * from the container */
        pod = pod_ok("  resources:\n    requests: {cpu: \"1\"}\n  containers:\n" C(
                "a", LIM("memory: 64Mi, hugepages-2Mi: 8Mi")));
        assert_int_equal(milli_of(&pod->resources_limits, "hugepages-2Mi"), 8388608000LL);
        assert_int_equal(milli_of(&pod->resources_requests, "hugepages-2Mi"), 8388608000LL);
        assert_int_equal(milli_of(&pod->resources_requests, "memory"), 67108864000LL);
        assert_int_equal(pod_qos_class(pod), POD_QOS_BURSTABLE);
        pod_free(pod);
        /* an explicit pod-level limit is kept */
        pod = pod_ok("  resources:\n    requests: {cpu: \"1\", hugepages-2Mi: 8Mi}\n    limits: {hugepages-2Mi: 8Mi}\n"
                     "  containers:\n" C("a", LIM("memory: 64Mi, hugepages-2Mi: 4Mi")));
        assert_int_equal(milli_of(&pod->resources_limits, "hugepages-2Mi"), 8388608000LL);
        pod_free(pod);
        /* never beside an empty spec.resources */
        pod = pod_ok("  resources: {}\n  containers:\n" C("a", LIM("memory: 64Mi, hugepages-2Mi: 8Mi")));
        assert_int_equal(pod->resources_limits.n, 0);
        pod_free(pod);
}

/* ---- validatePodResourceRequirements ------------------------------------------------- */

static void test_resource_names(void **state) {
        (void) state;
        assert_refused("  resources:\n    limits: {cpu: \"1\", ephemeral-storage: 1Gi}\n  containers:\n" C("a", ""),
                       "p.yaml:7: spec.resources.limits[ephemeral-storage]: Unsupported value: \"ephemeral-storage\": "
                       "supported values: \"cpu\", \"hugepages-\", \"memory\"");
        assert_refused("  resources:\n    requests: {example.com/dev: 1}\n  containers:\n" C("a", ""),
                       "p.yaml:7: spec.resources.requests[example.com/dev]: Unsupported value: \"example.com/dev\": "
                       "supported values: \"cpu\", \"hugepages-\", \"memory\"");
        assert_refused("  resources:\n    requests: {gpu: 1}\n  containers:\n" C("a", ""),
                       "p.yaml:7: spec.resources.requests[gpu]: Invalid value: \"gpu\": must be a standard resource "
                       "type or fully qualified");
        /* a quota name is standard, but not a pod-level resource */
        assert_refused("  resources:\n    limits: {pods: 1}\n  containers:\n" C("a", ""),
                       "p.yaml:7: spec.resources.limits[pods]: Unsupported value: \"pods\": supported values: \"cpu\", "
                       "\"hugepages-\", \"memory\"");
}

static void test_request_over_limit(void **state) {
        (void) state;
        assert_refused("  resources:\n    requests: {cpu: \"2\"}\n    limits: {cpu: \"1\"}\n  containers:\n" C("a", ""),
                       "p.yaml:7: spec.resources.requests: Invalid value: \"2\": must be less than or equal to cpu "
                       "limit of 1");
        assert_refused(
                "  resources:\n    requests: {memory: 2Gi}\n    limits: {memory: 1Gi}\n  containers:\n" C("a", ""),
                "p.yaml:7: spec.resources.requests: Invalid value: \"2Gi\": must be less than or equal to "
                "memory limit of 1Gi");
        /* a defaulted request: the line of spec.resources */
        assert_refused("  resources:\n    limits: {cpu: \"1\"}\n  containers:\n" C("a", LIM("cpu: \"2\"")),
                       "p.yaml:6: spec.resources.requests: Invalid value: \"2\": must be less than or equal to cpu "
                       "limit of 1");
}

static void test_hugepages_rules(void **state) {
        (void) state;
        assert_refused(
                "  resources:\n    requests: {cpu: \"1\", hugepages-2Mi: 4Mi}\n    limits: {hugepages-2Mi: 8Mi}\n"
                "  containers:\n" C("a", ""),
                "p.yaml:7: spec.resources.requests: Invalid value: \"4Mi\": must be equal to hugepages-2Mi "
                "limit of 8Mi");
        assert_refused("  resources:\n    requests: {cpu: \"1\", hugepages-2Mi: 4Mi}\n  containers:\n" C("a", ""),
                       "p.yaml:7: spec.resources.limits: Required value: Limit must be set for non overcommitable "
                       "resources");
        assert_refused("  resources:\n    limits: {cpu: \"1\", hugepages-2Mi: 3Mi}\n  containers:\n" C("a", ""),
                       "p.yaml:7: spec.resources.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive "
                       "integer multiple of hugepages-2Mi");
        /* a request: equal to its limit is checked before its page size */
        assert_refused(
                "  resources:\n    requests: {cpu: \"1\", hugepages-2Mi: 3Mi}\n    limits: {hugepages-2Mi: 4Mi}\n"
                "  containers:\n" C("a", ""),
                "p.yaml:7: spec.resources.requests: Invalid value: \"3Mi\": must be equal to hugepages-2Mi "
                "limit of 4Mi");
        assert_refused(
                "  resources:\n    requests: {cpu: \"1\", hugepages-2Mi: 3Mi}\n    limits: {hugepages-2Mi: 3Mi}\n"
                "  containers:\n" C("a", ""),
                "p.yaml:8: spec.resources.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive "
                "integer multiple of hugepages-2Mi");
        /* an unparsable page size divides nothing */
        assert_refused("  resources:\n    limits: {cpu: \"1\", hugepages-x: 4Mi}\n  containers:\n" C("a", ""),
                       "p.yaml:7: spec.resources.limits[hugepages-x]: Invalid value: \"4Mi\": 4Mi is not positive "
                       "integer multiple of hugepages-x");
        assert_refused("  resources:\n    limits: {hugepages-1Gi: 2Gi}\n  containers:\n" C("a", ""),
                       "p.yaml:6: spec.resources: Forbidden: HugePages require cpu or memory");
}

/* ---- validatePodResourceConsistency -------------------------------------------------- */

static void test_requests_cover_containers(void **state) {
        (void) state;
        assert_refused("  resources:\n    requests: {cpu: 500m}\n  containers:\n" C("a", REQ("cpu: 300m"))
                               C("b", REQ("cpu: 300m")),
                       "p.yaml:7: spec.resources.requests[cpu]: Invalid value: \"500m\": must be greater than or equal "
                       "to aggregate container requests of 600m");
        /* init containers count as PodRequests counts them */
        assert_refused("  resources:\n    requests: {memory: 100Mi}\n  initContainers:\n" C(
                               "i", REQ("memory: 200Mi")) "  containers:\n" C("a", REQ("memory: 50Mi")),
                       "p.yaml:7: spec.resources.requests[memory]: Invalid value: \"100Mi\": must be greater than or "
                       "equal to aggregate container requests of 200Mi");
        /* a resource without a pod-level request is not compared */
        pod_free(pod_ok("  resources:\n    requests: {cpu: 1}\n  containers:\n" C("a", REQ("memory: 8Gi"))));
}

static void test_container_limits_under_pod(void **state) {
        (void) state;
        assert_refused("  resources:\n    requests: {cpu: \"1\"}\n    limits: {cpu: \"1\"}\n  containers:\n" C("a", "")
                               C("b", RES("cpu: 500m", "cpu: \"2\"")),
                       "p.yaml:16: spec.resources.containers[1][cpu].limits: Invalid value: \"2\": must be less than "
                       "or equal to pod limits of 1");
        /* init containers are not compared (the API checks spec.containers only) */
        pod_free(pod_ok("  resources:\n    requests: {cpu: \"1\"}\n    limits: {cpu: \"1\"}\n  initContainers:\n" C(
                "i", RES("cpu: 500m", "cpu: \"2\"")) "  containers:\n" C("a", "")));
        /* nor a resource without a pod-level limit */
        pod_free(pod_ok("  resources:\n    limits: {memory: 1Gi}\n  containers:\n" C("a", LIM("cpu: \"8\""))));
}

static void test_claims_refused(void **state) {
        Pod *pod;
        char *s;

        (void) state;
        pod = pod_ok("  resources:\n    claims: [{name: gpu}]\n  containers:\n" C("a", ""));
        s = pod_field_notes_join(&pod->refused, "p.yaml");
        assert_string_equal(s, "p.yaml:7: spec.resources.claims: Forbidden: claims may not be set for Resources at "
                               "pod-level");
        free(s);
        pod_free(pod);
}

/* ---- JSON, pods of the API server, PodLists --------------------------------------- */

static void test_json_and_api(void **state) {
        const char *json =
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
                "\"resources\":{\"limits\":{\"cpu\":\"1\"}},"
                "\"containers\":[{\"name\":\"a\",\"image\":\"x:1\",\"resources\":{\"limits\":{\"cpu\":2}}}]}}";
        const char *ok = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
                         "\"resources\":{\"requests\":{\"cpu\":\"1\"},\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}},"
                         "\"containers\":[{\"name\":\"a\",\"image\":\"x:1\"}]}}";
        Pod *pod = NULL;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_decode(json, strlen(json), "p.json", POD_FORMAT_JSON, &pod, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "p.json: spec.resources.requests: Invalid value: \"2\": must be less than or equal "
                            "to cpu limit of 1");
        assert_int_equal(pod_decode_api(ok, strlen(ok), "api", &pod, &err), 0);
        assert_int_equal(pod_qos_class(pod), POD_QOS_BURSTABLE);
        assert_int_equal(milli_of(&pod->resources_requests, "memory"), 1073741824000LL);
        pod_free(pod);
}

static void test_podlist_paths(void **state) {
        const char *list = "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: p}\n  spec:\n"
                           "    resources:\n      requests: {cpu: 100m}\n"
                           "    containers:\n    - {name: a, image: 'x:1', resources: {requests: {cpu: 1}}}\n";
        Pod **pods = NULL;
        size_t n = 0;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_decode_static_list(list, strlen(list), "u", POD_FORMAT_YAML, "node", POD_SOURCE_HTTP, NULL,
                                                &pods, &n, &err),
                         -EINVAL);
        assert_string_equal(err.msg, "u:7: items[0].spec.resources.requests[cpu]: Invalid value: \"100m\": must be "
                                     "greater than or equal to aggregate container requests of 1");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decoded),
                cmocka_unit_test(test_bad_quantity_and_type),
                cmocka_unit_test(test_requests_default_from_limits),
                cmocka_unit_test(test_requests_default_from_containers),
                cmocka_unit_test(test_hugepage_limits_default),
                cmocka_unit_test(test_resource_names),
                cmocka_unit_test(test_request_over_limit),
                cmocka_unit_test(test_hugepages_rules),
                cmocka_unit_test(test_requests_cover_containers),
                cmocka_unit_test(test_container_limits_under_pod),
                cmocka_unit_test(test_claims_refused),
                cmocka_unit_test(test_json_and_api),
                cmocka_unit_test(test_podlist_paths),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
