/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/resize.c: a static pod's UID through a resize, a QoS change and
 * other edits; pod_resize_compare(); resizePolicy's checks
 * (validateResizePolicy); the API's masked spec. */
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
#include "agent/pod/resize.h"

/* a Burstable pod: app (cpu 100m/200m, memory 64Mi/128Mi, policy), a
 * sidecar and an init container, each with resources */
#define POD_FMT                                                                                       \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  restartPolicy: %s\n"             \
        "  initContainers:\n  - name: init\n    image: busybox\n"                                     \
        "    resources: {requests: {cpu: %s}}\n"                                                      \
        "  - name: side\n    image: busybox\n    restartPolicy: Always\n"                             \
        "    resources: {requests: {cpu: %s}}\n"                                                      \
        "  containers:\n  - name: app\n    image: nginx\n"                                            \
        "    resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}, {resourceName: memory, " \
        "restartPolicy: %s}]\n"                                                                       \
        "    resources:\n      requests: {cpu: %s, memory: %s, ephemeral-storage: 1Gi}\n"             \
        "      limits: {cpu: %s, memory: %s}\n"

typedef struct Spec {
        const char *restart, *init_cpu, *side_cpu, *mem_policy, *cpu_req, *mem_req, *cpu_lim, *mem_lim;
} Spec;

static const Spec base = { "Always", "10m", "20m", "RestartContainer", "100m", "64Mi", "200m", "128Mi" };

static int load(const Spec *s, Pod **ret, CubError *err) {
        char text[2048];

        (void) snprintf(text, sizeof(text), POD_FMT, s->restart, s->init_cpu, s->side_cpu, s->mem_policy, s->cpu_req,
                        s->mem_req, s->cpu_lim, s->mem_lim);
        return pod_decode_static(text, strlen(text), "web.yaml", POD_FORMAT_YAML, "node-a", POD_SOURCE_FILE, NULL, ret,
                                 err);
}

static Pod *must(const Spec *s) {
        Pod *pod = NULL;
        CubError err = {};

        if (load(s, &pod, &err) < 0)
                fail_msg("%s", err.msg);
        return pod;
}

static void test_uid_through_edits(void **state) {
        Pod *a = must(&base), *b;
        Spec s = base;

        (void) state;
        /* cpu and memory of the app and the sidecar: a resize, the same UID */
        s.cpu_req = "300m";
        s.cpu_lim = "400m";
        s.mem_lim = "256Mi";
        s.side_cpu = "50m";
        b = must(&s);
        assert_string_equal(a->uid, b->uid);
        assert_string_equal(a->config_hash, b->config_hash);
        pod_free(b);
        /* the init container's resources: a new pod */
        s = base;
        s.init_cpu = "20m";
        b = must(&s);
        assert_string_not_equal(a->uid, b->uid);
        pod_free(b);
        /* a resizePolicy edit: a new pod */
        s = base;
        s.mem_policy = "NotRequired";
        b = must(&s);
        assert_string_not_equal(a->uid, b->uid);
        pod_free(b);
        pod_free(a);
}

static void test_qos_change_is_new_pod(void **state) {
        static const char be[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  containers:\n"
                                 "  - {name: c, image: nginx}\n";
        static const char bu[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  containers:\n"
                                 "  - {name: c, image: nginx, resources: {requests: {cpu: 100m}}}\n";
        static const char gu[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  containers:\n"
                                 "  - {name: c, image: nginx, resources: {limits: {cpu: 100m, memory: 64Mi}}}\n";
        static const char gu2[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  containers:\n"
                                  "  - {name: c, image: nginx, resources: {limits: {cpu: 200m, memory: 96Mi}}}\n";
        const char *texts[] = { be, bu, gu, gu2 };
        Pod *p[4];
        CubError err = {};

        (void) state;
        for (int i = 0; i < 4; i++) {
                p[i] = NULL;
                assert_int_equal(pod_decode_static(texts[i], strlen(texts[i]), "q.yaml", POD_FORMAT_YAML, "n",
                                                   POD_SOURCE_FILE, NULL, &p[i], &err),
                                 0);
        }
        assert_string_not_equal(p[0]->uid, p[1]->uid); /* BestEffort → Burstable */
        assert_string_not_equal(p[1]->uid, p[2]->uid); /* Burstable → Guaranteed */
        assert_string_equal(p[2]->uid, p[3]->uid);     /* Guaranteed, resized */
        for (int i = 0; i < 4; i++)
                pod_free(p[i]);
}

static void test_compare(void **state) {
        Pod *a = must(&base), *b;
        Spec s = base;
        PodResizeChange ch[3];
        CubError err = {};
        bool any = true;

        (void) state;
        assert_int_equal(pod_resize_compare(a, a, ch, &any, &err), 0);
        assert_false(any);
        s.cpu_req = "150m";
        b = must(&s);
        assert_int_equal(pod_resize_compare(a, b, ch, &any, &err), 0);
        assert_true(any);
        /* init, side, app */
        assert_false(ch[0].cpu || ch[1].cpu || ch[2].memory);
        assert_true(ch[2].cpu);
        assert_false(ch[2].restart); /* cpu: NotRequired */
        assert_false(ch[2].memory_limit_down);
        pod_free(b);
        s = base;
        s.mem_lim = "96Mi";
        b = must(&s);
        assert_int_equal(pod_resize_compare(a, b, ch, &any, &err), 0);
        assert_true(ch[2].memory && ch[2].restart && ch[2].memory_limit_down);
        pod_free(b);
        s = base;
        s.side_cpu = "30m";
        b = must(&s);
        assert_int_equal(pod_resize_compare(a, b, ch, &any, &err), 0);
        assert_true(ch[1].cpu);
        pod_free(b);
        pod_free(a);
}

static void test_policy_checks(void **state) {
        Spec s = base;
        Pod *pod = NULL;
        CubError err = {};

        (void) state;
        s.mem_policy = "Sometimes";
        assert_int_equal(load(&s, &pod, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "spec.containers[0].resizePolicy[1].restartPolicy: Unsupported value: "
                                        "\"Sometimes\": supported values: \"NotRequired\", \"RestartContainer\""));
        s = base;
        s.restart = "Never";
        assert_int_equal(load(&s, &pod, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "spec.containers[0].resizePolicy[1].restartPolicy: Invalid value: "
                                        "\"RestartContainer\": must be 'NotRequired' when `restartPolicy` is 'Never'"));
        s.mem_policy = "NotRequired";
        pod = must(&s);
        assert_false(pod->containers[0].resize_restart_memory);
        pod_free(pod);
        pod = must(&base);
        assert_true(pod->containers[0].resize_restart_memory);
        assert_false(pod->containers[0].resize_restart_cpu);
        pod_free(pod);
}

static void test_policy_names(void **state) {
        static const char dup[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: d}\nspec:\n  containers:\n"
                                  "  - name: c\n    image: nginx\n    resizePolicy:\n"
                                  "    - {resourceName: cpu, restartPolicy: NotRequired}\n"
                                  "    - {resourceName: cpu, restartPolicy: NotRequired}\n";
        static const char gpu[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: d}\nspec:\n  containers:\n"
                                  "  - name: c\n    image: nginx\n    resizePolicy:\n"
                                  "    - {resourceName: nvidia.com/gpu, restartPolicy: NotRequired}\n";
        static const char extra[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: d}\nspec:\n  containers:\n"
                                    "  - name: c\n    image: nginx\n    resizePolicy:\n"
                                    "    - {resourceName: cpu, restartPolicy: NotRequired, when: now}\n";
        Pod *pod = NULL;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_decode(dup, strlen(dup), "d.yaml", POD_FORMAT_YAML, &pod, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "d.yaml:10: spec.containers[0].resizePolicy[1]: Duplicate value: \"cpu\""));
        assert_int_equal(pod_decode(gpu, strlen(gpu), "d.yaml", POD_FORMAT_YAML, &pod, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "spec.containers[0].resizePolicy[0].resourceName: Unsupported value: "
                                        "\"nvidia.com/gpu\""));
        /* an unknown field is refused with its path, as every field cubelet does not know */
        assert_int_equal(pod_decode(extra, strlen(extra), "d.yaml", POD_FORMAT_YAML, &pod, &err), 0);
        {
                char *notes = pod_field_notes_join(&pod->refused, "d.yaml");

                assert_string_equal(notes, "d.yaml:9: spec.containers[0].resizePolicy[0].when: unknown field");
                free(notes);
        }
        pod_free(pod);
}

static void test_api_spec_text(void **state) {
        json_t *a = json_loads("{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"},"
                               "\"limits\":{\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"}}}]}",
                               0, NULL);
        json_t *pl = json_loads("{\"resources\":{\"limits\":{\"cpu\":\"1\"}},\"containers\":[{\"name\":\"c\","
                                "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}",
                                0, NULL);
        char *t = pod_resize_spec_text(a), *u = pod_resize_spec_text(pl);

        (void) state;
        assert_string_equal(
                t, "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}");
        /* pod-level resources: nothing is masked */
        assert_non_null(strstr(u, "\"requests\":{\"cpu\":\"1\"}"));
        free(t);
        free(u);
        /* activeDeadlineSeconds may change while the pod runs: not in the hash's text */
        json_object_set_new(a, "activeDeadlineSeconds", json_integer(5));
        t = pod_resize_spec_text(a);
        assert_null(strstr(t, "activeDeadlineSeconds"));
        free(t);
        /* nor the ephemeral containers kubectl debug adds */
        json_object_set_new(a, "ephemeralContainers", json_pack("[{s:s,s:s}]", "name", "debugger", "image", "x"));
        t = pod_resize_spec_text(a);
        assert_null(strstr(t, "ephemeralContainers"));
        free(t);
        json_decref(a);
        json_decref(pl);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_uid_through_edits), cmocka_unit_test(test_qos_change_is_new_pod),
                cmocka_unit_test(test_compare),           cmocka_unit_test(test_policy_checks),
                cmocka_unit_test(test_policy_names),      cmocka_unit_test(test_api_spec_text),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
