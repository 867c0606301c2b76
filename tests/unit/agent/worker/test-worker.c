/* SPDX-License-Identifier: Apache-2.0 */
/* agent/worker/worker.c, its pure part: the restart rule, what a sync does
 * with each container (init gating, sidecars, back-off), label parsing, the
 * bounded label list, and the order in which a pod's containers stop. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"
#include "agent/worker/worker-internal.h"
#include "agent/worker/worker.h"

static void test_should_restart(void **state) {
        (void) state;
        assert_true(worker_should_restart(NULL, 0));
        assert_true(worker_should_restart("Always", 0));
        assert_true(worker_should_restart("Always", 137));
        assert_false(worker_should_restart("OnFailure", 0));
        assert_true(worker_should_restart("OnFailure", 1));
        assert_true(worker_should_restart("OnFailure", -1));
        assert_false(worker_should_restart("Never", 0));
        assert_false(worker_should_restart("Never", 2));
        assert_false(worker_should_restart("never", 2));
}

typedef struct ActionCase {
        const char *what;
        bool init, sidecar;
        const char *policy;
        bool may, exists;
        CriContainerState state;
        int32_t exit_code;
        WorkerAction want;
        bool want_blocks;
} ActionCase;

static void test_container_action(void **state) {
        static const ActionCase cases[] = {
                /* app containers never hold anything back */
                { "app never ran", false, false, "Always", true, false, CRI_CONTAINER_UNKNOWN, 0, WORKER_ACTION_START,
                  false },
                { "app never ran, in back-off", false, false, "Never", false, false, CRI_CONTAINER_UNKNOWN, 0,
                  WORKER_ACTION_START, false },
                { "app running", false, false, "Always", true, true, CRI_CONTAINER_RUNNING, 0, WORKER_ACTION_NONE,
                  false },
                { "app created", false, false, "Always", true, true, CRI_CONTAINER_CREATED, 0, WORKER_ACTION_NONE,
                  false },
                { "app exited, Always", false, false, "Always", true, true, CRI_CONTAINER_EXITED, 0,
                  WORKER_ACTION_RESTART, false },
                { "app exited, Always, back-off", false, false, "Always", false, true, CRI_CONTAINER_EXITED, 1,
                  WORKER_ACTION_NONE, false },
                { "app succeeded, OnFailure", false, false, "OnFailure", true, true, CRI_CONTAINER_EXITED, 0,
                  WORKER_ACTION_NONE, false },
                { "app failed, OnFailure", false, false, "OnFailure", true, true, CRI_CONTAINER_EXITED, 3,
                  WORKER_ACTION_RESTART, false },
                { "app failed, Never", false, false, "Never", true, true, CRI_CONTAINER_EXITED, 3, WORKER_ACTION_NONE,
                  false },
                { "app unknown, Always", false, false, "Always", true, true, CRI_CONTAINER_UNKNOWN, 0,
                  WORKER_ACTION_RESTART, false },
                /* init containers gate the rest until they succeeded */
                { "init never ran", true, false, "Always", true, false, CRI_CONTAINER_UNKNOWN, 0, WORKER_ACTION_START,
                  true },
                { "init running", true, false, "Always", true, true, CRI_CONTAINER_RUNNING, 0, WORKER_ACTION_NONE,
                  true },
                { "init succeeded", true, false, "Always", true, true, CRI_CONTAINER_EXITED, 0, WORKER_ACTION_NONE,
                  false },
                { "init succeeded, Never", true, false, "Never", true, true, CRI_CONTAINER_EXITED, 0,
                  WORKER_ACTION_NONE, false },
                { "init failed, Always", true, false, "Always", true, true, CRI_CONTAINER_EXITED, 1,
                  WORKER_ACTION_RESTART, true },
                { "init failed, OnFailure", true, false, "OnFailure", true, true, CRI_CONTAINER_EXITED, 1,
                  WORKER_ACTION_RESTART, true },
                { "init failed, Never", true, false, "Never", true, true, CRI_CONTAINER_EXITED, 1, WORKER_ACTION_NONE,
                  true },
                { "init failed, back-off", true, false, "Always", false, true, CRI_CONTAINER_EXITED, 1,
                  WORKER_ACTION_NONE, true },
                /* sidecars run beside the rest and always restart */
                { "sidecar never ran", true, true, "Never", true, false, CRI_CONTAINER_UNKNOWN, 0, WORKER_ACTION_START,
                  false },
                { "sidecar running", true, true, "Never", true, true, CRI_CONTAINER_RUNNING, 0, WORKER_ACTION_NONE,
                  false },
                { "sidecar exited 0, Never", true, true, "Never", true, true, CRI_CONTAINER_EXITED, 0,
                  WORKER_ACTION_RESTART, false },
                { "sidecar exited 1, OnFailure", true, true, "OnFailure", true, true, CRI_CONTAINER_EXITED, 1,
                  WORKER_ACTION_RESTART, false },
                { "sidecar exited, back-off", true, true, "Always", false, true, CRI_CONTAINER_EXITED, 1,
                  WORKER_ACTION_NONE, false },
        };

        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const ActionCase *c = &cases[i];
                bool blocks = !c->want_blocks;
                WorkerAction a = worker_container_action(c->init, c->sidecar, c->policy, c->may, c->exists, c->state,
                                                         c->exit_code, &blocks);

                if (a != c->want || blocks != c->want_blocks)
                        fail_msg("%s: action %d blocks %d, want %d %d", c->what, a, blocks, c->want, c->want_blocks);
        }
}

static void test_label_int(void **state) {
        char k_grace[] = "grace", k_bad[] = "bad", k_trail[] = "trail", k_empty[] = "empty", k_big[] = "big",
             k_neg[] = "neg", k_space[] = "space";
        char v_grace[] = "45", v_bad[] = "x1", v_trail[] = "12s", v_empty[] = "", v_big[] = "99999999999999999999",
             v_neg[] = "-3", v_space[] = " 7";
        char *labels[] = { k_grace, v_grace, k_bad, v_bad, k_trail, v_trail, k_empty, v_empty,
                           k_big,   v_big,   k_neg, v_neg, k_space, v_space, NULL };

        (void) state;
        assert_int_equal(worker_label_int(labels, "grace", 30), 45);
        assert_int_equal(worker_label_int(labels, "neg", 30), -3);
        assert_int_equal(worker_label_int(labels, "missing", 30), 30);
        assert_int_equal(worker_label_int(labels, "bad", 30), 30);
        assert_int_equal(worker_label_int(labels, "trail", 30), 30);
        assert_int_equal(worker_label_int(labels, "empty", 30), 30);
        assert_int_equal(worker_label_int(labels, "big", 30), 30);
        assert_int_equal(worker_label_int(labels, "space", 30), 30);
        assert_int_equal(worker_label_int(NULL, "grace", 30), 30);
}

static void test_labels_are_bounded(void **state) {
        WorkerLabels l = {};
        char keys[WORKER_LABELS_MAX][16];

        (void) state;
        assert_null(l.kv[0]);
        for (unsigned i = 0; i < WORKER_LABELS_MAX; i++) {
                (void) snprintf(keys[i], sizeof(keys[i]), "k%u", i);
                assert_int_equal(worker_labels_add(&l, keys[i], "v"), 0);
        }
        assert_int_equal(l.n, 2 * WORKER_LABELS_MAX);
        assert_int_equal(worker_labels_add(&l, "one-more", "v"), -E2BIG);
        assert_int_equal(l.n, 2 * WORKER_LABELS_MAX);
        assert_null(l.kv[l.n]);
        assert_string_equal(l.kv[0], "k0");
        assert_string_equal(l.kv[2 * WORKER_LABELS_MAX - 2], keys[WORKER_LABELS_MAX - 1]);
        assert_string_equal(cri_kv_get((char *const *) l.kv, "k5"), "v");
        assert_null(cri_kv_get((char *const *) l.kv, "one-more"));
}

/* the sandbox's labels and annotations: kubelet's newPodLabels (the pod's,
 * then its own io.kubernetes.pod.*, which win) and newPodAnnotations */
static void test_sandbox_kv(void **state) {
        char k0[] = "app", k1[] = "io.kubernetes.pod.name", k2[] = "tier";
        char v0[] = "web", v1[] = "forged", v2[] = "front";
        char *keys[] = { k0, k1, k2 }, *values[] = { v0, v1, v2 };
        PodStringMap pod = { .keys = keys, .values = values, .n = 3 };
        WorkerLabels own = {};
        const char **kv = NULL;

        (void) state;
        assert_int_equal(worker_labels_add(&own, "io.kubernetes.pod.name", "web-0"), 0);
        assert_int_equal(worker_labels_add(&own, "cubelet.io/managed", "true"), 0);
        assert_int_equal(worker_sandbox_kv(&pod, &own, &kv), 0);
        assert_string_equal(kv[0], "app");
        assert_string_equal(kv[1], "web");
        assert_string_equal(kv[2], "tier");
        assert_string_equal(kv[3], "front");
        assert_string_equal(kv[4], "io.kubernetes.pod.name");
        assert_string_equal(kv[5], "web-0");
        assert_string_equal(kv[6], "cubelet.io/managed");
        assert_null(kv[8]);
        free(kv);
        /* annotations: the pod's alone; none at all is an empty list */
        assert_int_equal(worker_sandbox_kv(&pod, NULL, &kv), 0);
        assert_string_equal(kv[2], "io.kubernetes.pod.name");
        assert_string_equal(kv[3], "forged");
        assert_null(kv[6]);
        free(kv);
        assert_int_equal(worker_sandbox_kv(NULL, NULL, &kv), 0);
        assert_null(kv[0]);
        free(kv);
}

static void test_job_starts_without_latencies(void **state) {
        WorkerJob *j = worker_job_new(WORKER_SYNC);

        (void) state;
        assert_non_null(j);
        assert_int_equal(j->kind, WORKER_SYNC);
        assert_int_equal(j->sandbox_requested_usec, 0);
        assert_int_equal(j->containers_started_usec, 0);
        assert_null(worker_job_free(j));
        assert_null(worker_job_free(NULL));
}

/* A sync job outliving its pod: the job holds the spec's last reference and
 * its per-container configs, whose count comes from the spec (found on real
 * hardware: the job read the spec after dropping it). ASan checks the order. */
static void test_job_holds_last_spec_reference(void **state) {
        static const char manifest[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, uid: u1}\nspec:\n"
                                       "  containers:\n  - {name: c, image: busybox}\n  - {name: d, image: busybox}\n";
        Pod *pod = NULL;
        WorkerSpec *spec = NULL;
        CgOptions o;
        CubError err = {};
        WorkerJob *j = worker_job_new(WORKER_SYNC);

        (void) state;
        cg_options_init(&o);
        assert_int_equal(pod_decode(manifest, strlen(manifest), "a.yaml", POD_FORMAT_AUTO, &pod, &err), 0);
        assert_int_equal(worker_spec_new(pod, "/m/a.yaml", &o, "/var/log/pods", &spec, &err), 0);
        assert_non_null(j);
        j->spec = worker_spec_ref(spec);
        j->configs = calloc(3, sizeof(WorkerContainerConfig));
        assert_non_null(j->configs);
        j->configs[1].cpuset = strdup("0-1");
        worker_spec_unref(spec); /* the pod is gone: the job's reference is the last */
        assert_null(worker_job_free(j));
}

/* kubelet's termination ordering: app containers and regular init
 * containers stop at once; a sidecar waits for every app container and for
 * the sidecars after it; a container the spec does not name waits for
 * nothing and holds nothing back; without a pod, nothing waits. */
static void test_stop_order(void **state) {
        char always[] = "Always", n_init[] = "init", n_a[] = "side-a", n_b[] = "side-b", n_app1[] = "app1",
             n_app2[] = "app2";
        PodContainer init[] = { { .name = n_init }, { .name = n_a, .restart_policy = always },
                                { .name = n_b, .restart_policy = always } };
        PodContainer apps[] = { { .name = n_app1 }, { .name = n_app2 } };
        Pod pod = { .init_containers = init, .n_init_containers = 3, .containers = apps, .n_containers = 2 };
        const char *names[] = { "app2", "side-a", "app1", "side-b", "ghost", "init" };
        bool want[6][6] = {}, got[36];

        (void) state;
        want[1][0] = want[1][2] = want[1][3] = true; /* side-a: the apps and side-b */
        want[3][0] = want[3][2] = true;              /* side-b: the apps */
        worker_stop_order(&pod, names, 6, got);
        for (size_t i = 0; i < 6; i++)
                for (size_t k = 0; k < 6; k++) {
                        if (got[i * 6 + k] != want[i][k])
                                fail_msg("%s waits for %s: %d, want %d", names[i], names[k], got[i * 6 + k],
                                         want[i][k]);
                }
        memset(got, 1, sizeof(got));
        worker_stop_order(NULL, names, 6, got);
        for (size_t i = 0; i < 36; i++)
                assert_false(got[i]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_should_restart),
                cmocka_unit_test(test_stop_order),
                cmocka_unit_test(test_container_action),
                cmocka_unit_test(test_label_int),
                cmocka_unit_test(test_labels_are_bounded),
                cmocka_unit_test(test_sandbox_kv),
                cmocka_unit_test(test_job_starts_without_latencies),
                cmocka_unit_test(test_job_holds_last_spec_reference),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
