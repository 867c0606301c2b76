/* SPDX-License-Identifier: Apache-2.0 */
/* agent/lifecycle/pod.c: the pure status computation (phase, container
 * states, restart back-off, init/sidecar gating) and the enums. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/lifecycle/lifecycle.h"

#define SEC 1000000ULL
#define NSEC 1000000000LL

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

/* An observation with the pod's hash and a ready sandbox; containers are
 * added with add(). */
typedef struct Obs {
        WorkerObserved o;
        WorkerContainer c[4];
} Obs;

static void obs_init(Obs *x, const LcPod *p) {
        memset(x, 0, sizeof(*x));
        x->o.uid = p->spec->pod->uid;
        x->o.config_hash = p->spec->pod->config_hash;
        x->o.ready = true;
        x->o.containers = x->c;
}

static WorkerContainer *add(Obs *x, const char *name, CriContainerState st, int32_t exit_code, int64_t started,
                            int64_t finished) {
        WorkerContainer *c = &x->c[x->o.n_containers++];

        c->id = (char *) "cid";
        c->name = (char *) name;
        c->state = st;
        c->exit_code = exit_code;
        c->started_at = started;
        c->finished_at = finished;
        return c;
}

static const char *const ONE =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - {name: app, image: x}\n";

static void test_enums(void **state) {
        (void) state;
        assert_string_equal(lc_phase_to_string(LC_PHASE_PENDING), "Pending");
        assert_string_equal(lc_phase_to_string(LC_PHASE_RUNNING), "Running");
        assert_string_equal(lc_phase_to_string(LC_PHASE_SUCCEEDED), "Succeeded");
        assert_string_equal(lc_phase_to_string(LC_PHASE_FAILED), "Failed");
        assert_null(lc_phase_to_string(_LC_PHASE_MAX));
        assert_null(lc_phase_to_string(_LC_PHASE_INVALID));
        assert_string_equal(lc_container_state_to_string(LC_CONTAINER_WAITING), "Waiting");
        assert_string_equal(lc_container_state_to_string(LC_CONTAINER_CREATED), "Created");
        assert_string_equal(lc_container_state_to_string(LC_CONTAINER_RUNNING), "Running");
        assert_string_equal(lc_container_state_to_string(LC_CONTAINER_TERMINATED), "Terminated");
        assert_string_equal(lc_container_state_to_string(LC_CONTAINER_TERMINATING), "Terminating");
        assert_null(lc_container_state_to_string(_LC_CONTAINER_STATE_MAX));
}

static void test_nothing_observed(void **state) {
        LcPod *p = make_pod(ONE);

        (void) state;
        assert_true(lc_pod_observe(p, NULL, 0));
        assert_false(p->observed);
        assert_int_equal(p->phase, LC_PHASE_PENDING);
        assert_int_equal(p->statuses[0].state, LC_CONTAINER_WAITING);
        lc_pod_free(p);
}

static void test_other_hash_is_pending(void **state) {
        LcPod *p = make_pod(ONE);
        Obs x;

        (void) state;
        obs_init(&x, p);
        x.o.config_hash = (char *) "an-older-edit";
        add(&x, "app", CRI_CONTAINER_RUNNING, 0, 1, 0);
        assert_true(lc_pod_observe(p, &x.o, 0));
        assert_true(p->observed);
        assert_int_equal(p->phase, LC_PHASE_PENDING);
        lc_pod_free(p);
}

static void test_running(void **state) {
        LcPod *p = make_pod(ONE);
        Obs x;

        (void) state;
        obs_init(&x, p);
        add(&x, "app", CRI_CONTAINER_RUNNING, 0, 1, 0);
        assert_false(lc_pod_observe(p, &x.o, 5 * SEC));
        assert_int_equal(p->phase, LC_PHASE_RUNNING);
        assert_int_equal(p->statuses[0].state, LC_CONTAINER_RUNNING);
        assert_string_equal(p->statuses[0].id, "cid");
        lc_pod_free(p);
}

/* the pod IP: from the ready sandbox; kept when the runtime did not answer for
 * it this time; gone with the sandbox */
static void test_pod_ip_kept_when_unknown(void **state) {
        LcPod *p = make_pod(ONE);
        Obs x;

        (void) state;
        obs_init(&x, p);
        add(&x, "app", CRI_CONTAINER_RUNNING, 0, 1, 0);
        x.o.pod_ip = (char *) "10.88.0.7";
        (void) lc_pod_observe(p, &x.o, 5 * SEC);
        assert_string_equal(p->pod_ip, "10.88.0.7");
        x.o.pod_ip = NULL;
        x.o.pod_ip_unknown = true;
        (void) lc_pod_observe(p, &x.o, 6 * SEC);
        assert_string_equal(p->pod_ip, "10.88.0.7");
        assert_int_equal(p->phase, LC_PHASE_RUNNING);
        x.o.pod_ip_unknown = false;
        x.o.ready = false;
        (void) lc_pod_observe(p, &x.o, 7 * SEC);
        assert_string_equal(p->pod_ip, "");
        lc_pod_free(p);
}

/* activeDeadlineSeconds counts from the pod's start (latency.event) */
static void test_deadline(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  activeDeadlineSeconds: 5\n"
                            "  containers:\n  - {name: app, image: x}\n");

        (void) state;
        assert_int_equal(p->active_deadline_s, 5);
        assert_int_equal(lc_pod_deadline_usec(p), 0); /* not started */
        p->latency.event = 7 * SEC;
        assert_int_equal(lc_pod_deadline_usec(p), 12 * SEC);
        p->active_deadline_s = 1; /* the API server lowered it */
        assert_int_equal(lc_pod_deadline_usec(p), 8 * SEC);
        p->active_deadline_s = 0;
        assert_int_equal(lc_pod_deadline_usec(p), 0);
        lc_pod_free(p);
}

/* a terminal pod's containers as its stop left them: terminated, exit code,
 * reason and message; one not recorded keeps its state */
static void test_observe_final(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n"
                            "  - {name: app, image: x}\n  - {name: other, image: x}\n");
        Obs x;
        WorkerContainer *c;

        (void) state;
        obs_init(&x, p);
        add(&x, "app", CRI_CONTAINER_RUNNING, 0, 1, 0);
        add(&x, "other", CRI_CONTAINER_RUNNING, 0, 1, 0);
        (void) lc_pod_observe(p, &x.o, 5 * SEC);
        lc_pod_set_failed(p, "DeadlineExceeded", "deadline", 30);
        obs_init(&x, p);
        c = add(&x, "app", CRI_CONTAINER_EXITED, 143, 1, 2);
        c->reason = (char *) "Error";
        c->message = (char *) "bye";
        lc_pod_observe_final(p, &x.o);
        assert_int_equal(p->statuses[0].state, LC_CONTAINER_TERMINATED);
        assert_int_equal(p->statuses[0].exit_code, 143);
        assert_string_equal(p->statuses[0].reason, "Error");
        assert_string_equal(p->statuses[0].term_message, "bye");
        assert_int_equal(p->statuses[0].finished_at, 2);
        assert_int_not_equal(p->statuses[1].state, LC_CONTAINER_TERMINATED);
        lc_pod_free(p);
}

/* ephemeral containers: beside the pod's own (not in p->n, not in its
 * phase), started when the runtime lacks one (tries with back-off), never
 * restarted */
static void test_ephemeral(void **state) {
        const char *json = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"uid\":\"u1\"},"
                           "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"x:1\"}],"
                           "\"ephemeralContainers\":[{\"name\":\"debugger\",\"image\":\"x:1\",\"tty\":true}]}}";
        Pod *pod = NULL;
        WorkerSpec *spec = NULL;
        CgOptions cg;
        CubError err = {};
        LcPod *p = NULL;
        Obs x;
        WorkerContainer *c;

        (void) state;
        cg_options_init(&cg);
        assert_int_equal(pod_decode_api(json, strlen(json), "api", &pod, &err), 0);
        pod->config_hash = strdup("h");
        assert_int_equal(worker_spec_new(pod, "api", &cg, "/tmp/lc-test-logs", &spec, &err), 0);
        assert_int_equal(lc_pod_new(spec, &p), 0);
        worker_spec_unref(spec);
        assert_int_equal(p->n, 1);
        obs_init(&x, p);
        add(&x, "app", CRI_CONTAINER_RUNNING, 0, 1, 0);
        assert_true(lc_pod_observe(p, &x.o, 5 * SEC)); /* the debugger is missing: a sync */
        assert_int_equal(p->n_eph, 1);
        assert_int_equal(p->eph[0].state, LC_CONTAINER_WAITING);
        assert_int_equal(p->phase, LC_PHASE_RUNNING);
        assert_false(lc_pod_observe(p, &x.o, 6 * SEC)); /* tried: the next try after 10 s */
        assert_true(lc_pod_observe(p, &x.o, 15 * SEC));
        c = add(&x, "debugger", CRI_CONTAINER_RUNNING, 0, 7, 0);
        c->id = (char *) "eid";
        assert_false(lc_pod_observe(p, &x.o, 16 * SEC));
        assert_int_equal(p->eph[0].state, LC_CONTAINER_RUNNING);
        assert_string_equal(p->eph[0].id, "eid");
        assert_int_equal(p->eph[0].started_at, 7);
        c->state = CRI_CONTAINER_EXITED;
        c->exit_code = 1;
        c->finished_at = 9;
        assert_false(lc_pod_observe(p, &x.o, 100 * SEC)); /* ended: never started again */
        assert_int_equal(p->eph[0].state, LC_CONTAINER_TERMINATED);
        assert_int_equal(p->eph[0].exit_code, 1);
        assert_int_equal(p->phase, LC_PHASE_RUNNING);
        lc_pod_free(p);
}

static void test_missing_container_needs_sync(void **state) {
        LcPod *p = make_pod(ONE);
        Obs x;

        (void) state;
        obs_init(&x, p);
        assert_true(lc_pod_observe(p, &x.o, 0));
        assert_int_equal(p->statuses[0].state, LC_CONTAINER_WAITING);
        assert_int_equal(p->phase, LC_PHASE_PENDING);
        lc_pod_free(p);
}

/* kubelet's back-off: 0 s, then 10 s, 20 s, ... capped at 300 s */
static void test_backoff(void **state) {
        LcPod *p = make_pod(ONE);
        Obs x;
        WorkerContainer *c;
        uint64_t now = 1000 * SEC;

        (void) state;
        obs_init(&x, p);
        c = add(&x, "app", CRI_CONTAINER_EXITED, 1, 1 * NSEC, 2 * NSEC);
        /* first crash: restarted at once */
        assert_true(lc_pod_observe(p, &x.o, now));
        assert_int_equal(p->statuses[0].state, LC_CONTAINER_TERMINATED);
        assert_int_equal(p->statuses[0].exit_code, 1);
        assert_true(p->statuses[0].terminated_before);
        assert_int_equal(p->phase, LC_PHASE_RUNNING); /* restarting counts as running */
        /* second crash: 10 s */
        c->attempt = 1;
        c->finished_at = 3 * NSEC;
        assert_false(lc_pod_observe(p, &x.o, now));
        assert_true(p->statuses[0].waiting_backoff);
        assert_int_equal(p->statuses[0].state, LC_CONTAINER_WAITING);
        assert_int_equal(p->statuses[0].restarts, 1);
        assert_int_equal(p->backoff[0].next_usec, now + 10 * SEC);
        assert_false(lc_pod_observe(p, &x.o, now + 10 * SEC - 1));
        assert_true(lc_pod_observe(p, &x.o, now + 10 * SEC));
        /* third: 20 s; then 40, 80, 160, 300 (capped) */
        c->finished_at = 4 * NSEC;
        assert_false(lc_pod_observe(p, &x.o, now));
        assert_int_equal(p->backoff[0].next_usec, now + 20 * SEC);
        for (int64_t i = 5; i < 12; i++) {
                c->finished_at = i * NSEC;
                (void) lc_pod_observe(p, &x.o, now);
        }
        assert_int_equal(p->backoff[0].next_usec, now + 300 * SEC);
        /* a run of more than 10 minutes starts over */
        c->started_at = 100 * NSEC;
        c->finished_at = 100 * NSEC + 601 * NSEC;
        assert_true(lc_pod_observe(p, &x.o, now));
        assert_int_equal(p->backoff[0].crashes, 1);
        lc_pod_free(p);
}

static void test_never_restart_fails(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  restartPolicy: Never\n"
                            "  containers:\n  - {name: app, image: x}\n");
        Obs x;

        (void) state;
        obs_init(&x, p);
        add(&x, "app", CRI_CONTAINER_EXITED, 3, 1 * NSEC, 2 * NSEC);
        assert_false(lc_pod_observe(p, &x.o, 0));
        assert_int_equal(p->phase, LC_PHASE_FAILED);
        x.c[0].exit_code = 0;
        x.c[0].finished_at = 3 * NSEC;
        assert_false(lc_pod_observe(p, &x.o, 0));
        assert_int_equal(p->phase, LC_PHASE_SUCCEEDED);
        lc_pod_free(p);
}

static void test_oom_reported_once(void **state) {
        LcPod *p = make_pod(ONE);
        Obs x;
        WorkerContainer *c;

        (void) state;
        obs_init(&x, p);
        c = add(&x, "app", CRI_CONTAINER_EXITED, 137, 1 * NSEC, 2 * NSEC);
        c->reason = (char *) "OOMKilled";
        (void) lc_pod_observe(p, &x.o, 0);
        assert_true(p->statuses[0].oom_killed_now);
        assert_string_equal(p->statuses[0].reason, "OOMKilled");
        (void) lc_pod_observe(p, &x.o, 0);
        assert_false(p->statuses[0].oom_killed_now);
        lc_pod_free(p);
}

static const char *const INIT = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  restartPolicy: Never\n"
                                "  initContainers:\n  - {name: setup, image: x}\n"
                                "  containers:\n  - {name: app, image: x}\n";

static void test_init_gates_apps(void **state) {
        LcPod *p = make_pod(INIT);
        Obs x;

        (void) state;
        obs_init(&x, p);
        add(&x, "setup", CRI_CONTAINER_RUNNING, 0, 1, 0);
        assert_false(lc_pod_observe(p, &x.o, 0));
        assert_int_equal(p->phase, LC_PHASE_PENDING);
        assert_int_equal(p->statuses[0].state, LC_CONTAINER_RUNNING);
        assert_int_equal(p->statuses[1].state, LC_CONTAINER_WAITING);
        /* done: the app may start */
        x.c[0].state = CRI_CONTAINER_EXITED;
        x.c[0].finished_at = 2;
        assert_true(lc_pod_observe(p, &x.o, 0));
        /* failed, never restarted: the pod failed */
        x.c[0].exit_code = 1;
        x.c[0].finished_at = 3;
        assert_false(lc_pod_observe(p, &x.o, 0));
        assert_int_equal(p->phase, LC_PHASE_FAILED);
        lc_pod_free(p);
}

static void test_sidecar_does_not_gate(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n"
                            "  initContainers:\n  - {name: log, image: x, restartPolicy: Always}\n"
                            "  containers:\n  - {name: app, image: x}\n");
        Obs x;

        (void) state;
        obs_init(&x, p);
        add(&x, "log", CRI_CONTAINER_RUNNING, 0, 1, 0);
        assert_true(lc_pod_observe(p, &x.o, 0)); /* the app is missing: start it */
        add(&x, "app", CRI_CONTAINER_RUNNING, 0, 1, 0);
        assert_false(lc_pod_observe(p, &x.o, 0));
        assert_int_equal(p->phase, LC_PHASE_RUNNING);
        lc_pod_free(p);
}

/* the evented relist: a pod is steady when nothing of it waits on a timely relist */
static void test_steady(void **state) {
        LcPod *p = make_pod(ONE);
        LcPod *n = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  restartPolicy: Never\n"
                            "  containers:\n  - {name: app, image: x}\n");
        Obs x;
        WorkerContainer *c;

        (void) state;
        p->wanted = p->admitted = n->wanted = n->admitted = true;
        /* nothing observed yet: pending */
        assert_true(lc_pod_observe(p, NULL, 0));
        assert_false(lc_pod_steady(p));
        /* running */
        obs_init(&x, p);
        c = add(&x, "app", CRI_CONTAINER_RUNNING, 0, 1, 0);
        assert_false(lc_pod_observe(p, &x.o, 5 * SEC));
        assert_true(lc_pod_steady(p));
        /* a job in flight, a failed sync's retry, a victim, leaving */
        p->busy = true;
        assert_false(lc_pod_steady(p));
        p->busy = false;
        (void) cub_retry_failed(&p->sync_retry, &cub_retry_pod_sync, 0, "RunPodSandbox: boom", 0);
        assert_false(lc_pod_steady(p));
        (void) cub_retry_succeeded(&p->sync_retry);
        assert_int_equal(lc_pod_add_victim(p, "v"), 0);
        assert_false(lc_pod_steady(p));
        assert_true(lc_pod_drop_victim(p, "v"));
        p->wanted = false;
        assert_false(lc_pod_steady(p));
        p->wanted = true;
        /* created, not started */
        c->state = CRI_CONTAINER_CREATED;
        (void) lc_pod_observe(p, &x.o, 5 * SEC);
        assert_false(lc_pod_steady(p));
        /* crashed twice: waits its back-off */
        c->state = CRI_CONTAINER_EXITED;
        c->exit_code = 1;
        c->finished_at = 2 * NSEC;
        (void) lc_pod_observe(p, &x.o, 5 * SEC);
        c->attempt = 1;
        c->finished_at = 3 * NSEC;
        assert_false(lc_pod_observe(p, &x.o, 5 * SEC));
        assert_true(p->statuses[0].waiting_backoff);
        assert_false(lc_pod_steady(p));
        /* restartPolicy Never, ended: steady */
        obs_init(&x, n);
        add(&x, "app", CRI_CONTAINER_EXITED, 3, 1 * NSEC, 2 * NSEC);
        assert_false(lc_pod_observe(n, &x.o, 0));
        assert_int_equal(n->phase, LC_PHASE_FAILED);
        assert_true(lc_pod_steady(n));
        /* terminal (evicted): steady once nothing of it is left */
        lc_pod_set_failed(n, "Evicted", "m", 30);
        n->observed = true;
        assert_false(lc_pod_steady(n));
        n->observed = false;
        assert_true(lc_pod_steady(n));
        lc_pod_free(p);
        lc_pod_free(n);
}

static void test_set_failed_and_reset(void **state) {
        LcPod *p = make_pod(ONE);
        Obs x;

        (void) state;
        obs_init(&x, p);
        add(&x, "app", CRI_CONTAINER_RUNNING, 0, 1, 0);
        (void) lc_pod_observe(p, &x.o, 0);
        lc_pod_set_failed(p, "Evicted", "The node was low on resource: memory.", 5);
        assert_true(p->terminal);
        assert_int_equal(p->phase, LC_PHASE_FAILED);
        assert_int_equal(p->kill_grace, 5);
        assert_string_equal(p->reason, "Evicted");
        assert_int_equal(p->statuses[0].state, LC_CONTAINER_TERMINATING);
        lc_pod_reset(p);
        assert_false(p->terminal);
        assert_int_equal(p->phase, LC_PHASE_PENDING);
        assert_string_equal(p->reason, "");
        assert_int_equal(p->statuses[0].state, LC_CONTAINER_WAITING);
        lc_pod_free(p);
}

static void test_victims(void **state) {
        LcPod *p = make_pod(ONE);

        (void) state;
        assert_int_equal(lc_pod_add_victim(p, "u1"), 0);
        assert_int_equal(lc_pod_add_victim(p, "u2"), 0);
        assert_false(lc_pod_drop_victim(p, "u3"));
        assert_true(lc_pod_drop_victim(p, "u1"));
        assert_int_equal(p->n_victims, 1);
        assert_string_equal(p->victims[0], "u2");
        lc_pod_free(p);
}

static void test_cpu_request(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n"
                            "  initContainers:\n  - {name: i, image: x, resources: {requests: {cpu: 500m}}}\n"
                            "  containers:\n  - {name: a, image: x, resources: {requests: {cpu: 250m}}}\n"
                            "  - {name: b, image: x, resources: {requests: {cpu: 100m}}}\n");
        LcPod *q = make_pod(ONE);

        (void) state;
        /* kubelet's effective request: max(sum of apps, largest init) */
        assert_int_equal(p->cpu_request_milli, 500);
        assert_int_equal(q->cpu_request_milli, 0);
        lc_pod_free(p);
        lc_pod_free(q);
}

static void test_actions(void **state) {
        LcActions l = {};
        LcAction a = { .kind = LC_ACTION_FAIL, .uid = "x", .grace = -1 };

        (void) state;
        assert_int_equal(lc_actions_push(&l, &a), 0);
        a.kind = LC_ACTION_RESOURCES_CHANGED;
        assert_int_equal(lc_actions_push(&l, &a), 0);
        assert_int_equal(l.n, 2);
        assert_int_equal(l.items[0].kind, LC_ACTION_FAIL);
        assert_int_equal(l.items[1].kind, LC_ACTION_RESOURCES_CHANGED);
        lc_actions_done(&l);
        assert_int_equal(l.n, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_enums),
                cmocka_unit_test(test_nothing_observed),
                cmocka_unit_test(test_other_hash_is_pending),
                cmocka_unit_test(test_running),
                cmocka_unit_test(test_missing_container_needs_sync),
                cmocka_unit_test(test_backoff),
                cmocka_unit_test(test_steady),
                cmocka_unit_test(test_never_restart_fails),
                cmocka_unit_test(test_oom_reported_once),
                cmocka_unit_test(test_init_gates_apps),
                cmocka_unit_test(test_sidecar_does_not_gate),
                cmocka_unit_test(test_set_failed_and_reset),
                cmocka_unit_test(test_victims),
                cmocka_unit_test(test_cpu_request),
                cmocka_unit_test(test_actions),
                cmocka_unit_test(test_pod_ip_kept_when_unknown),
                cmocka_unit_test(test_deadline),
                cmocka_unit_test(test_observe_final),
                cmocka_unit_test(test_ephemeral),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
