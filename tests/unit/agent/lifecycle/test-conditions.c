/* SPDX-License-Identifier: Apache-2.0 */
/* agent/lifecycle/pod.c: containers' started/ready from their probes and
 * the pod conditions with kubelet's reasons and messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/lifecycle/lifecycle.h"
#include "agent/pod/api-status.h"

static LcPod *make_pod(const char *yaml) {
        Pod *pod = NULL;
        WorkerSpec *spec = NULL;
        CgOptions cg;
        CubError err = {};
        LcPod *p = NULL;

        cg_options_init(&cg);
        if (pod_decode_static(yaml, strlen(yaml), "t.yaml", POD_FORMAT_AUTO, "node1", POD_SOURCE_FILE, "t.yaml", &pod,
                              &err) < 0)
                fail_msg("decode: %s", err.msg);
        if (worker_spec_new(pod, "t.yaml", &cg, "/tmp/lc-test-logs", &spec, &err) < 0)
                fail_msg("spec: %s", err.msg);
        assert_int_equal(lc_pod_new(spec, &p), 0);
        worker_spec_unref(spec);
        return p;
}

static void run(LcPod *p, size_t k, const char *id) {
        p->statuses[k].state = LC_CONTAINER_RUNNING;
        (void) snprintf(p->statuses[k].id, sizeof(p->statuses[k].id), "%s", id);
}

#define POD                                                                                          \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"                                    \
        "  initContainers:\n  - {name: init, image: x:1}\n"                                          \
        "  - name: side\n    image: x:1\n    restartPolicy: Always\n"                                \
        "    readinessProbe: {exec: {command: [a]}}\n"                                               \
        "  containers:\n  - name: web\n    image: x:1\n    readinessProbe: {exec: {command: [a]}}\n" \
        "    startupProbe: {exec: {command: [a]}}\n"                                                 \
        "  - {name: plain, image: x:1}\n"

static void test_started_ready(void **state) {
        LcPod *p = make_pod(POD);
        LcPodConditions c;

        (void) state;
        /* 0 init, 1 side, 2 web, 3 plain */
        lc_pod_conditions(p, &c);
        assert_false(c.initialized);
        assert_string_equal(c.initialized_reason, "ContainersNotInitialized");
        assert_string_equal(c.init_message, "containers with incomplete status: [init]");
        assert_false(c.ready || c.containers_ready);
        assert_string_equal(c.ready_reason, "ContainersNotReady");
        assert_string_equal(c.message, "containers with unready status: [side web plain]");

        p->statuses[0].state = LC_CONTAINER_TERMINATED;
        p->statuses[0].exit_code = 0;
        run(p, 1, "s1");
        run(p, 2, "w1");
        run(p, 3, "p1");
        /* plain: no probes, ready once running; web: its startup probe has not said yet */
        assert_true(lc_container_started(p, 3) && lc_container_ready(p, 3));
        assert_false(lc_container_started(p, 2));
        assert_true(lc_container_started(p, 1));
        assert_false(lc_container_ready(p, 1));
        lc_pod_conditions(p, &c);
        assert_true(c.initialized);
        assert_null(c.initialized_reason);
        assert_string_equal(c.message, "containers with unready status: [side web]");

        p->statuses[2].probe_known = true;
        p->statuses[2].probe_started = true;
        assert_true(lc_container_started(p, 2));
        assert_false(lc_container_ready(p, 2));
        p->statuses[2].probe_ready = true;
        p->statuses[1].probe_known = p->statuses[1].probe_started = p->statuses[1].probe_ready = true;
        lc_pod_conditions(p, &c);
        assert_true(c.ready && c.containers_ready);
        assert_null(c.ready_reason);
        assert_string_equal(c.message, "");

        /* the transitions are recorded */
        assert_true(lc_pod_track_conditions(p, 1000));
        assert_int_equal(p->cond_since[LC_POD_COND_READY], 1000);
        assert_false(lc_pod_track_conditions(p, 1010));
        assert_int_equal(p->cond_since[LC_POD_COND_READY], 1000);

        /* a terminal pod is ready no more */
        lc_pod_set_failed(p, "Evicted", "x", 0);
        assert_false(lc_container_ready(p, 3));
        assert_true(lc_pod_track_conditions(p, 1020));
        assert_int_equal(p->cond_since[LC_POD_COND_READY], 1020);
        assert_false(p->cond_value[LC_POD_COND_READY]);
        lc_pod_free(p);
}

static void test_new_container_forgets_probes(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                            "  - name: a\n    image: x:1\n    readinessProbe: {exec: {command: [a]}}\n");
        WorkerContainer wc = { .id = (char *) "c2", .name = (char *) "a", .state = CRI_CONTAINER_RUNNING };
        WorkerObserved o = {
                .config_hash = p->spec->pod->config_hash, .ready = true, .containers = &wc, .n_containers = 1
        };

        (void) state;
        run(p, 0, "c1");
        p->statuses[0].probe_known = p->statuses[0].probe_ready = p->statuses[0].probe_started = true;
        assert_true(lc_container_ready(p, 0));
        (void) lc_pod_observe(p, &o, 0);
        assert_string_equal(p->statuses[0].id, "c2");
        assert_false(p->statuses[0].probe_known);
        assert_false(lc_container_ready(p, 0));
        lc_pod_free(p);
}

/* readiness gates (GeneratePodReadyCondition): the containers ready, Ready
 * waits for each gate's condition to be True, with kubelet's words; the
 * statuses come from the API pod's status */
static void test_readiness_gates(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                            "  readinessGates: [{conditionType: a.io/one}, {conditionType: two}]\n"
                            "  containers:\n  - {name: a, image: x:1}\n");
        Pod *api = (Pod *) p->spec->pod;
        json_t *st = json_pack("{s:s,s:[{s:s,s:s},{s:s,s:s}]}", "phase", "Running", "conditions", "type", "a.io/one",
                               "status", "False", "type", "Ready", "status", "True");
        LcPodConditions c;

        (void) state;
        run(p, 0, "c1");
        lc_pod_conditions(p, &c);
        assert_true(c.containers_ready);
        assert_false(c.ready);
        assert_string_equal(c.gates_reason, "ReadinessGatesNotReady");
        assert_string_equal(c.gates_message, "corresponding condition of pod readiness gate \"a.io/one\" does not "
                                             "exist., corresponding condition of pod readiness gate \"two\" does not "
                                             "exist.");
        /* the API server's status: one False, one missing */
        assert_int_equal(pod_take_api_status(api, st), 0);
        assert_null(api->api_phase); /* not terminal */
        assert_true(lc_pod_set_gates(p, api));
        assert_false(lc_pod_set_gates(p, api));
        lc_pod_conditions(p, &c);
        assert_string_equal(c.gates_message, "the status of pod readiness gate \"a.io/one\" is not \"True\", but "
                                             "False, corresponding condition of pod readiness gate \"two\" does not "
                                             "exist.");
        /* both True: Ready */
        json_decref(st);
        st = json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "conditions", "type", "two", "status", "True", "type", "a.io/one",
                       "status", "True");
        assert_int_equal(pod_take_api_status(api, st), 0);
        assert_true(lc_pod_set_gates(p, api));
        lc_pod_conditions(p, &c);
        assert_true(c.ready);
        assert_null(c.gates_reason);
        json_decref(st);
        lc_pod_free(p);
}

static void test_completed(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n"
                            "  initContainers:\n  - {name: i, image: x:1}\n  containers:\n  - {name: a, image: x:1}\n");
        LcPodConditions c;

        (void) state;
        p->phase = LC_PHASE_SUCCEEDED;
        p->statuses[0].state = p->statuses[1].state = LC_CONTAINER_TERMINATED;
        lc_pod_conditions(p, &c);
        assert_true(c.initialized);
        assert_string_equal(c.initialized_reason, "PodCompleted");
        assert_false(c.ready || c.containers_ready);
        assert_string_equal(c.ready_reason, "PodCompleted");
        lc_pod_free(p);
}

/* kubelet 1.34 status/generate.go: Succeeded without init containers is
 * Initialized PodCompleted too; Failed is PodFailed, without a message */
static void test_terminal_phases(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n"
                            "  containers:\n  - {name: a, image: x:1}\n");
        LcPodConditions c;

        (void) state;
        p->phase = LC_PHASE_SUCCEEDED;
        p->statuses[0].state = LC_CONTAINER_TERMINATED;
        lc_pod_conditions(p, &c);
        assert_true(c.initialized);
        assert_string_equal(c.initialized_reason, "PodCompleted");
        assert_string_equal(c.ready_reason, "PodCompleted");
        p->phase = LC_PHASE_FAILED;
        p->statuses[0].exit_code = 3;
        lc_pod_conditions(p, &c);
        assert_true(c.initialized);
        assert_null(c.initialized_reason);
        assert_false(c.ready || c.containers_ready);
        assert_string_equal(c.ready_reason, "PodFailed");
        assert_string_equal(c.message, "");
        lc_pod_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_started_ready),
                cmocka_unit_test(test_new_container_forgets_probes),
                cmocka_unit_test(test_completed),
                cmocka_unit_test(test_readiness_gates),
                cmocka_unit_test(test_terminal_phases),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
