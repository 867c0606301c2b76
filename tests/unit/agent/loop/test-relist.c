/* SPDX-License-Identifier: Apache-2.0 */
/* agent/loop/relist-plan.c and killtable.c: the decisions of a relist on a fake
 * clock. The reproduction of the hot loop (a pod whose StopPodSandbox keeps
 * failing was stopped again at every relist, ~900 times a second) is
 * test_failing_stop_backs_off: 20 failures give 20 attempts spaced by the pod
 * worker's back-off, one more that succeeds, and no other. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/loop/relist-plan.h"
#include "agent/util/time.h"

#define SEC CUB_USEC_PER_SEC
#define MSEC CUB_USEC_PER_MSEC

static LcPod *make_pod_yaml(const char *yaml) {
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
        p->wanted = p->admitted = true;
        return p;
}

static LcPod *make_pod(const char *name) {
        char yaml[256];

        (void) snprintf(yaml, sizeof(yaml),
                        "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers:\n  - {name: app, image: x}\n",
                        name);
        return make_pod_yaml(yaml);
}

/* The loop's view: a pod table, its index and what the runtime holds. */
typedef struct Node {
        LcPod *pods[4];
        size_t n_pods;
        CubHashmap *by_uid;
        WorkerObserved obs[4];
        size_t n_obs;
        KillTable kills;
} Node;

static void node_init(Node *n) {
        memset(n, 0, sizeof(*n));
        assert_int_equal(cub_hashmap_new(&n->by_uid), 0);
}

static void node_add_pod(Node *n, LcPod *p) {
        n->pods[n->n_pods++] = p;
        assert_int_equal(cub_hashmap_put(n->by_uid, p->spec->pod->uid, p), 0);
}

static void node_observe(Node *n, const char *uid, const char *name, int64_t grace) {
        WorkerObserved *o = &n->obs[n->n_obs++];

        memset(o, 0, sizeof(*o));
        o->uid = (char *) uid;
        o->name = (char *) name;
        o->namespace_ = (char *) "default";
        o->cgroup = (char *) "/kubepods/besteffort/pod-x";
        o->grace = grace;
}

static void node_done(Node *n) {
        for (size_t i = 0; i < n->n_pods; i++)
                lc_pod_free(n->pods[i]);
        cub_hashmap_free(n->by_uid);
        kill_table_free(&n->kills);
}

static int plan(Node *n, uint64_t now, bool sources_ready, RelistPlan *ret) {
        RelistInput in = { .pods = n->pods,
                           .n_pods = n->n_pods,
                           .by_uid = n->by_uid,
                           .observed = n->obs,
                           .n_observed = n->n_obs,
                           .sources_ready = sources_ready,
                           .now = now };

        return relist_plan(&in, &n->kills, ret);
}

static uint32_t lcg(uint32_t *s) {
        *s = *s * 1664525u + 1013904223u;
        return *s;
}

static void test_failing_stop_backs_off(void **state) {
        Node n;
        uint64_t now = 1000 * SEC, last = 0, attempts[32];
        unsigned n_attempts = 0, news = 0;
        uint32_t seed = 42;

        (void) state;
        node_init(&n);
        /* a sandbox whose manifest was removed: the runtime holds it, no source wants it */
        node_observe(&n, "uid-net-vm", "net-vm", 30);
        /* relist every 100 ms for 3 simulated hours: the real loop relists
         * once a second, and did so at once after each failed kill */
        for (uint64_t end = now + 3 * 3600 * SEC; now < end; now += 100 * MSEC) {
                RelistPlan p;

                assert_int_equal(plan(&n, now, true, &p), 0);
                assert_true(p.n_kill <= 1);
                if (p.n_kill == 1) {
                        KillOutcome o;

                        assert_string_equal(p.kill[0]->uid, "uid-net-vm");
                        assert_int_equal(p.kill[0]->grace, 30);
                        assert_true(p.kill[0]->in_flight);
                        assert_int_equal(p.kill_new[0], n_attempts == 0);
                        assert_true(n_attempts < 32);
                        attempts[n_attempts++] = now;
                        if (n_attempts <= 20) {
                                o = kill_table_done(&n.kills, "uid-net-vm", -EIO,
                                                    "StopPodSandbox: failed to destroy network", now, lcg(&seed),
                                                    NULL);
                                assert_true(o == KILL_FAILED_NEW || o == KILL_FAILED_AGAIN);
                                news += o == KILL_FAILED_NEW;
                        } else {
                                unsigned tries = 0;

                                assert_int_equal(kill_table_done(&n.kills, "uid-net-vm", 0, "", now, 0, &tries),
                                                 KILL_DONE_RECOVERED);
                                assert_int_equal(tries, 21);
                                n.n_obs = 0; /* the runtime holds nothing of it now */
                        }
                }
                /* a waiting stop does not keep the node from being steady,
                 * and the relist timer is told when it is due */
                if (n_attempts > 0 && n_attempts <= 20 && p.n_kill == 0) {
                        assert_true(p.steady);
                        assert_true(p.next_due > now);
                }
                relist_plan_done(&p);
        }
        /* 20 failures, then the attempt that succeeded; one journal line */
        assert_int_equal(n_attempts, 21);
        assert_int_equal(news, 1);
        assert_int_equal(n.kills.n, 0);
        for (unsigned i = 1; i < n_attempts; i++) {
                uint64_t base = 10 * SEC << (i - 1 < 5 ? i - 1 : 5), gap = attempts[i] - attempts[i - 1];

                if (base > 300 * SEC)
                        base = 300 * SEC;
                /* ±50 %, and the relist's 100 ms granularity */
                assert_true(gap >= base / 2);
                assert_true(gap <= base / 2 * 3 + 100 * MSEC);
                last = attempts[i];
        }
        assert_true(last > attempts[0] + 1000 * SEC);
        node_done(&n);
}

static void test_waiting_stop_left_alone(void **state) {
        Node n;
        RelistPlan p;
        uint64_t now = 50 * SEC, due;

        (void) state;
        node_init(&n);
        node_observe(&n, "uid-a", "a", 2);
        assert_int_equal(plan(&n, now, true, &p), 0);
        assert_int_equal(p.n_kill, 1);
        assert_int_equal(p.n_new_kills, 1);
        /* in flight: a second relist submits nothing */
        relist_plan_done(&p);
        assert_int_equal(plan(&n, now, true, &p), 0);
        assert_int_equal(p.n_kill, 0);
        assert_false(p.steady); /* a stop in flight */
        relist_plan_done(&p);
        assert_int_equal(kill_table_done(&n.kills, "uid-a", -EIO, "boom", now, UINT32_C(0x80000000), NULL),
                         KILL_FAILED_NEW);
        due = kill_table_find(&n.kills, "uid-a")->retry.next_usec;
        assert_int_equal(due, now + 10 * SEC);
        /* a thousand relists before it is due: nothing */
        for (int i = 0; i < 1000; i++) {
                assert_int_equal(plan(&n, now + (uint64_t) i * MSEC, true, &p), 0);
                assert_int_equal(p.n_kill, 0);
                assert_int_equal(p.next_due, due);
                relist_plan_done(&p);
        }
        assert_int_equal(plan(&n, due, true, &p), 0);
        assert_int_equal(p.n_kill, 1);
        assert_int_equal(p.n_new_kills, 0);
        assert_int_equal(p.kill[0]->attempts, 2);
        relist_plan_done(&p);
        node_done(&n);
}

static void test_recovered_pod_forgotten(void **state) {
        Node n;
        RelistPlan p;

        (void) state;
        node_init(&n);
        node_observe(&n, "uid-a", "a", 2);
        assert_int_equal(plan(&n, 0, true, &p), 0);
        relist_plan_done(&p);
        assert_int_equal(kill_table_done(&n.kills, "uid-a", -EIO, "boom", 0, 0, NULL), KILL_FAILED_NEW);
        /* someone else removed the sandbox: the table forgets the pod */
        n.n_obs = 0;
        assert_int_equal(plan(&n, 1 * SEC, true, &p), 0);
        assert_int_equal(p.forgotten, 1);
        assert_int_equal(p.n_kill, 0);
        assert_int_equal(p.next_due, UINT64_MAX);
        assert_int_equal(n.kills.n, 0);
        relist_plan_done(&p);
        node_done(&n);
}

static void test_sources_not_ready(void **state) {
        Node n;
        RelistPlan p;

        (void) state;
        node_init(&n);
        node_observe(&n, "uid-a", "a", 2);
        /* after a restart, before the URL gave its set: nothing stopped */
        assert_int_equal(plan(&n, 0, false, &p), 0);
        assert_int_equal(p.n_kill, 0);
        assert_false(p.steady);
        relist_plan_done(&p);
        node_done(&n);
}

static bool held_b(const void *ctx, const char *uid) {
        (void) ctx;
        return strcmp(uid, "uid-b") == 0;
}

static void test_held_pod_left_running(void **state) {
        Node n;
        RelistPlan p;
        RelistInput in;

        (void) state;
        node_init(&n);
        node_observe(&n, "uid-a", "a", 2);
        node_observe(&n, "uid-b", "b", 2);
        /* after a restart the API server lists b, held back for its
         * token: what runs of it stays; a is wanted by no source and goes */
        in = (RelistInput){ .pods = n.pods,
                            .n_pods = n.n_pods,
                            .by_uid = n.by_uid,
                            .observed = n.obs,
                            .n_observed = n.n_obs,
                            .sources_ready = true,
                            .held = held_b,
                            .now = 0 };
        assert_int_equal(relist_plan(&in, &n.kills, &p), 0);
        assert_int_equal(p.n_kill, 1);
        assert_string_equal(p.kill[0]->uid, "uid-a");
        relist_plan_done(&p);
        node_done(&n);
}

static void test_syncs(void **state) {
        Node n;
        RelistPlan p;
        LcPod *a = make_pod("a"), *b = make_pod("b"), *c = make_pod("c"), *d = make_pod("d");

        (void) state;
        node_init(&n);
        node_add_pod(&n, a);
        node_add_pod(&n, b);
        node_add_pod(&n, c);
        node_add_pod(&n, d);
        b->busy = true; /* a job in flight */
        (void) cub_retry_failed(&c->sync_retry, &cub_retry_pod_sync, 0, "RunPodSandbox: boom", 0);
        /* d is terminal (evicted) and still held by the runtime: stopped with its grace */
        lc_pod_set_failed(d, "Evicted", "The node was low on resource: memory.", 7);
        node_observe(&n, d->spec->pod->uid, "d", 30);
        assert_int_equal(plan(&n, 1 * SEC, true, &p), 0);
        assert_int_equal(p.n_sync, 1);
        assert_ptr_equal(p.sync[0], a);
        assert_int_equal(p.n_kill, 1);
        assert_string_equal(p.kill[0]->uid, d->spec->pod->uid);
        assert_int_equal(p.kill[0]->grace, 7);
        assert_true(d->observed);
        assert_false(p.steady);
        relist_plan_done(&p);
        /* c's sync retry is due 10 s after its failure */
        assert_int_equal(plan(&n, 10 * SEC, true, &p), 0);
        assert_int_equal(p.n_sync, 2);
        assert_ptr_equal(p.sync[1], c);
        relist_plan_done(&p);
        node_done(&n);
}

/* A node whose only pod waits for its sync's retry (the CNI plugins
 * missing, say) is steady until then: the relist timer is not held at its
 * short period by a pod that has nothing to do before its retry, and fires
 * by the retry (next_due). */
static void test_waiting_sync_is_steady(void **state) {
        Node n;
        RelistPlan p;
        LcPod *a = make_pod("a");

        (void) state;
        node_init(&n);
        node_add_pod(&n, a);
        (void) cub_retry_failed(&a->sync_retry, &cub_retry_pod_sync, 5 * SEC, "RunPodSandbox: failed to find plugin", 0);
        assert_int_equal(plan(&n, 6 * SEC, true, &p), 0);
        assert_int_equal(p.n_sync, 0);
        assert_true(p.steady);
        assert_true(p.next_due == 15 * SEC);
        relist_plan_done(&p);
        /* due: synced again, and no longer waiting */
        assert_int_equal(plan(&n, 15 * SEC, true, &p), 0);
        assert_int_equal(p.n_sync, 1);
        assert_false(p.steady);
        assert_true(p.next_due == UINT64_MAX);
        relist_plan_done(&p);
        node_done(&n);
}

static void test_network_not_ready(void **state) {
        Node n;
        RelistPlan p;
        LcPod *a = make_pod("a");
        RelistInput in;
        const char *why = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                          "message:cni plugin not initialized";

        (void) state;
        node_init(&n);
        node_add_pod(&n, a);
        in = (RelistInput){ .pods = n.pods, .n_pods = n.n_pods, .by_uid = n.by_uid, .sources_ready = true,
                            .network_error = why, .now = 1 };
        /* a pod on the pod network waits, with kubelet's event once */
        for (int i = 0; i < 3; i++) {
                assert_int_equal(relist_plan(&in, &n.kills, &p), 0);
                assert_int_equal(p.n_sync, 0);
                relist_plan_done(&p);
        }
        assert_true(a->network_wait);
        assert_int_equal(a->n_events, 1);
        assert_string_equal(a->events[0].reason, "NetworkNotReady");
        assert_int_equal(a->events[0].count, 1);
        assert_string_equal(a->events[0].message, "network is not ready: container runtime network not ready: "
                                                  "NetworkReady=false reason:NetworkPluginNotReady message:cni plugin "
                                                  "not initialized");
        /* the network back: it may sync */
        assert_true(relist_may_sync(a, 1, "") && !a->network_wait);
        in.network_error = "";
        assert_int_equal(relist_plan(&in, &n.kills, &p), 0);
        assert_int_equal(p.n_sync, 1);
        relist_plan_done(&p);
        node_done(&n);
}

static void test_host_network_starts(void **state) {
        Node n;
        RelistPlan p;
        LcPod *h = make_pod_yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: h}\nspec:\n  hostNetwork: true\n"
                                 "  containers:\n  - {name: app, image: x}\n");
        RelistInput in;

        (void) state;
        node_init(&n);
        node_add_pod(&n, h);
        in = (RelistInput){ .pods = n.pods, .n_pods = n.n_pods, .by_uid = n.by_uid, .sources_ready = true,
                            .network_error = "container runtime network not ready", .now = 1 };
        assert_int_equal(relist_plan(&in, &n.kills, &p), 0);
        assert_int_equal(p.n_sync, 1);
        assert_int_equal(h->n_events, 0);
        relist_plan_done(&p);
        node_done(&n);
}

/* relist_decide changes nothing: two calls on the same input give the same
 * decisions, and the pods' records and the kill table are as they were
 * (the applier, relist-apply.c, is the one that changes them) */
static void test_decide_is_pure(void **state) {
        const char *why = "container runtime network not ready";
        Node n;
        LcPod *a = make_pod("a"), *b = make_pod("b");
        CubHashmap *observed = NULL;
        RelistDecisions d1, d2;
        RelistInput in;
        bool needs[2] = { true, true };
        bool kill_new = false;

        (void) state;
        node_init(&n);
        node_add_pod(&n, a);
        node_add_pod(&n, b);
        node_observe(&n, "uid-x", "x", 5); /* nobody's: stopped */
        node_observe(&n, b->spec->pod->uid, "b", 5);
        assert_non_null(kill_table_want(&n.kills, "uid-gone", "default", "gone", NULL, 1, 0, &kill_new));
        assert_int_equal(kill_table_done(&n.kills, "uid-gone", -EIO, "boom", 0, 0, NULL), KILL_FAILED_NEW);
        assert_int_equal(cub_hashmap_new(&observed), 0);
        for (size_t k = 0; k < n.n_obs; k++)
                assert_int_equal(cub_hashmap_put(observed, n.obs[k].uid, &n.obs[k]), 0);
        in = (RelistInput){ .pods = n.pods,
                            .n_pods = n.n_pods,
                            .by_uid = n.by_uid,
                            .observed = n.obs,
                            .n_observed = n.n_obs,
                            .sources_ready = true,
                            .network_error = why,
                            .now = 1,
                            .observed_by_uid = observed };
        assert_int_equal(relist_decide(&in, needs, &n.kills, &d1), 0);
        assert_int_equal(relist_decide(&in, needs, &n.kills, &d2), 0);
        /* both pods wait for the network, the orphan is stopped, the failed stop whose pod is gone goes */
        assert_int_equal(d1.n_sync, 0);
        assert_int_equal(d1.n_net_wait, 2);
        assert_int_equal(d1.n_stop, 1);
        assert_string_equal(d1.stop[0]->uid, "uid-x");
        assert_int_equal(d1.n_gone, 1);
        assert_string_equal(d1.gone[0], "uid-gone");
        assert_int_equal(d2.n_net_wait, d1.n_net_wait);
        assert_int_equal(d2.n_stop, d1.n_stop);
        assert_int_equal(d2.n_gone, d1.n_gone);
        /* nothing changed: no event, no wait recorded, the stop still in the table */
        assert_false(a->network_wait || b->network_wait);
        assert_int_equal(a->n_events + b->n_events, 0);
        assert_int_equal(n.kills.n, 1);
        relist_decisions_done(&d1);
        relist_decisions_done(&d2);
        cub_hashmap_free(observed);
        node_done(&n);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decide_is_pure),
                cmocka_unit_test(test_failing_stop_backs_off),
                cmocka_unit_test(test_waiting_stop_left_alone),
                cmocka_unit_test(test_recovered_pod_forgotten),
                cmocka_unit_test(test_sources_not_ready),
                cmocka_unit_test(test_held_pod_left_running),
                cmocka_unit_test(test_syncs),
                cmocka_unit_test(test_waiting_sync_is_steady),
                cmocka_unit_test(test_network_not_ready),
                cmocka_unit_test(test_host_network_starts),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
