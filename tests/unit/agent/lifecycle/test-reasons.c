/* SPDX-License-Identifier: Apache-2.0 */
/* agent/lifecycle/reasons.c: kubelet's waiting reasons and messages from
 * the typed sync failures, and the pod's bounded list of events. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/lifecycle/lifecycle.h"

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

static const char *const TWO = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, uid: u1}\nspec:\n"
                               "  initContainers:\n  - {name: init, image: 'busybox:1'}\n"
                               "  containers:\n  - {name: app, image: 'web:2'}\n";
static const char *const ONE = "apiVersion: v1\nkind: Pod\nmetadata: {name: b, uid: u2}\nspec:\n"
                               "  containers:\n  - {name: app, image: 'web:2'}\n";

/* one failed sync, as the loop records it (the retry first, then the result) */
static void sync_failed(LcPod *p, WorkerFailKind kind, size_t k, const char *error, uint64_t now) {
        (void) cub_retry_failed(&p->sync_retry, &cub_retry_pod_sync, now, error, 0);
        lc_pod_sync_result(p, -EIO, kind, k, error, now);
}

/* kubelet's image events (images/image_manager.go), in the order they
 * happened even when the job's result comes after the relist's events */
static void test_pull_events(void **state) {
        LcPod *p = make_pod(TWO);
        const uint64_t S = 1000000;
        WorkerPull pulls[] = {
                { .container = 0, .pulled = false, .ok = true, .started_usec = 10 * S, .finished_usec = 10 * S + 5 },
                { .container = 1, .pulled = true, .ok = true, .started_usec = 11 * S, .finished_usec = 73 * S + 345678,
                  .size = 2155000 },
        };
        WorkerPull failed = { .container = 1, .pulled = true, .started_usec = 90 * S, .finished_usec = 91 * S };
        WorkerPull quick = { .container = 1, .pulled = true, .ok = true, .started_usec = 100 * S,
                             .finished_usec = 100 * S + 512999 };

        (void) state;
        /* a relist saw the init container Created before the job came back */
        lc_pod_event(p, false, "Created", 12 * S, "Created container: init");
        lc_pod_pull_events(p, pulls, 2);
        assert_int_equal(p->n_events, 4);
        assert_string_equal(p->events[0].reason, "Pulled");
        assert_string_equal(p->events[0].message, "Container image \"busybox:1\" already present on machine");
        assert_string_equal(p->events[1].reason, "Pulling");
        assert_string_equal(p->events[1].message, "Pulling image \"web:2\"");
        assert_string_equal(p->events[2].reason, "Created");
        assert_string_equal(p->events[3].reason, "Pulled");
        assert_string_equal(p->events[3].message, "Successfully pulled image \"web:2\" in 1m2.345s (1m2.345s including "
                                                  "waiting). Image size: 2155000 bytes.");
        assert_false(p->events[3].warning);
        /* a failed pull: Pulling again (counted), no Pulled */
        lc_pod_pull_events(p, &failed, 1);
        assert_int_equal(p->n_events, 4);
        assert_string_equal(p->events[3].reason, "Pulling");
        assert_int_equal(p->events[3].count, 2);
        lc_pod_pull_events(p, &quick, 1);
        assert_string_equal(p->events[p->n_events - 1].message,
                            "Successfully pulled image \"web:2\" in 512ms (512ms including waiting). Image size: 0 bytes.");
        lc_pod_free(p);
}

static const char *waiting(const LcPod *p, size_t k, char *msg) {
        const char *r = lc_container_waiting(p, k, msg, 512);

        return r ? r : "(none)";
}

static void test_defaults(void **state) {
        LcPod *a = make_pod(TWO), *b = make_pod(ONE);
        char msg[512];

        (void) state;
        /* kubelet's default for a container without status */
        assert_string_equal(waiting(a, 0, msg), "PodInitializing");
        assert_string_equal(waiting(a, 1, msg), "PodInitializing");
        assert_string_equal(msg, "");
        assert_string_equal(waiting(b, 0, msg), "ContainerCreating");
        /* a running container is not waiting */
        b->statuses[0] = (LcContainerStatus){ .id = "c1", .state = LC_CONTAINER_RUNNING };
        assert_null(lc_container_waiting(b, 0, msg, sizeof(msg)));
        /* a terminal pod */
        b->statuses[0].state = LC_CONTAINER_WAITING;
        lc_pod_set_failed(b, "Evicted", "The node was low on resource: memory.", 0);
        assert_string_equal(waiting(b, 0, msg), "PodTerminated");
        lc_pod_free(a);
        lc_pod_free(b);
}

static void test_failures(void **state) {
        LcPod *p = make_pod(ONE);
        char msg[512];

        (void) state;
        sync_failed(p, WORKER_FAIL_SANDBOX, SIZE_MAX, "sandbox: RunPodSandbox: no CNI", 1);
        assert_string_equal(waiting(p, 0, msg), "ContainerCreating");
        assert_int_equal(p->n_events, 1);
        assert_true(p->events[0].warning);
        assert_string_equal(p->events[0].reason, "FailedCreatePodSandBox");
        assert_string_equal(p->events[0].message, "Failed to create pod sandbox: sandbox: RunPodSandbox: no CNI");
        /* the same failure again counts up */
        sync_failed(p, WORKER_FAIL_SANDBOX, SIZE_MAX, "sandbox: RunPodSandbox: no CNI", 2);
        assert_int_equal(p->n_events, 1);
        assert_int_equal(p->events[0].count, 2);
        assert_int_equal(p->events[0].first_usec, 1);
        assert_int_equal(p->events[0].last_usec, 2);
        (void) cub_retry_succeeded(&p->sync_retry);
        lc_pod_sync_result(p, 0, WORKER_FAIL_NONE, SIZE_MAX, "", 3);
        assert_int_equal(p->failure, WORKER_FAIL_NONE);

        /* an image that cannot be pulled: ErrImagePull, then ImagePullBackOff */
        sync_failed(p, WORKER_FAIL_IMAGE_PULL, 0, "container 'app': image 'web:2': not found", 4);
        assert_string_equal(waiting(p, 0, msg), "ErrImagePull");
        assert_string_equal(msg, "container 'app': image 'web:2': not found");
        assert_string_equal(p->events[p->n_events - 2].message,
                            "Failed to pull image \"web:2\": container 'app': image 'web:2': not found");
        assert_string_equal(p->events[p->n_events - 1].message, "Error: ErrImagePull");
        sync_failed(p, WORKER_FAIL_IMAGE_PULL, 0, "container 'app': image 'web:2': not found", 5);
        assert_string_equal(waiting(p, 0, msg), "ImagePullBackOff");
        assert_string_equal(msg, "Back-off pulling image \"web:2\"");
        assert_string_equal(p->events[p->n_events - 1].reason, "BackOff");
        assert_false(p->events[p->n_events - 1].warning);
        (void) cub_retry_succeeded(&p->sync_retry);

        sync_failed(p, WORKER_FAIL_IMAGE_NEVER_PULL, 0, "never", 6);
        assert_string_equal(waiting(p, 0, msg), "ErrImageNeverPull");
        sync_failed(p, WORKER_FAIL_CONFIG, 0, "container 'app': CreateContainerConfigError: runAsNonRoot", 7);
        assert_string_equal(waiting(p, 0, msg), "CreateContainerConfigError");
        assert_string_equal(p->events[p->n_events - 1].message,
                            "Error: container 'app': CreateContainerConfigError: runAsNonRoot");
        sync_failed(p, WORKER_FAIL_CREATE, 0, "container 'app': create: boom", 8);
        assert_string_equal(waiting(p, 0, msg), "CreateContainerError");
        sync_failed(p, WORKER_FAIL_START, 0, "container 'app': start: exec: not found", 9);
        assert_string_equal(waiting(p, 0, msg), "RunContainerError");
        assert_string_equal(msg, "container 'app': start: exec: not found");
        sync_failed(p, WORKER_FAIL_POST_START, 0, "container 'app': PostStartHookError: exit 1", 10);
        assert_string_equal(waiting(p, 0, msg), "PostStartHookError");
        sync_failed(p, WORKER_FAIL_KILL, SIZE_MAX, "StopPodSandbox: busy", 11);
        assert_string_equal(waiting(p, 0, msg), "ContainerCreating");
        assert_string_equal(p->events[p->n_events - 1].reason, "FailedKillPod");
        assert_string_equal(p->events[p->n_events - 1].message, "error killing pod: StopPodSandbox: busy");
        lc_pod_free(p);
}

static void test_crash_loop(void **state) {
        LcPod *p = make_pod(ONE);
        char msg[512];

        (void) state;
        p->statuses[0] = (LcContainerStatus){ .id = "c1", .state = LC_CONTAINER_WAITING, .waiting_backoff = true };
        p->backoff[0].crashes = 3;
        assert_string_equal(waiting(p, 0, msg), "CrashLoopBackOff");
        assert_string_equal(msg, "back-off 20s restarting failed container=app pod=b-node1_default(u2)");
        p->backoff[0].crashes = 9;
        assert_string_equal(waiting(p, 0, msg), "CrashLoopBackOff");
        assert_string_equal(msg, "back-off 5m0s restarting failed container=app pod=b-node1_default(u2)");
        p->backoff[0].crashes = 5;
        (void) waiting(p, 0, msg);
        assert_string_equal(msg, "back-off 1m20s restarting failed container=app pod=b-node1_default(u2)");
        lc_pod_free(p);
}

static void test_event_ring(void **state) {
        LcPod *p = make_pod(ONE);

        (void) state;
        for (unsigned i = 0; i < LC_EVENTS_MAX + 3; i++)
                lc_pod_event(p, false, "Pulled", i, "image %u", i);
        assert_int_equal(p->n_events, LC_EVENTS_MAX);
        assert_string_equal(p->events[0].message, "image 3");
        /* the same again moves last, counted */
        lc_pod_event(p, false, "Pulled", 100, "image 3");
        assert_string_equal(p->events[LC_EVENTS_MAX - 1].message, "image 3");
        assert_int_equal(p->events[LC_EVENTS_MAX - 1].count, 2);
        assert_string_equal(p->events[0].message, "image 4");
        /* another type is another event */
        lc_pod_event(p, true, "Pulled", 101, "image 3");
        assert_true(p->events[LC_EVENTS_MAX - 1].warning);
        assert_int_equal(p->events[LC_EVENTS_MAX - 1].count, 1);
        lc_pod_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_failures),
                cmocka_unit_test(test_crash_loop),
                cmocka_unit_test(test_event_ring),
                cmocka_unit_test(test_pull_events),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
