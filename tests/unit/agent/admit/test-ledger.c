/* SPDX-License-Identifier: Apache-2.0 */
/* agent/admit ledger (assume / confirm / forget, checkpoint) and CPU
 * placement on several topologies. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/admit/admit-internal.h"
#include "agent/pod/pod.h"

/* ---- fixtures ------------------------------------------------------------- */

#include "admit-fixture.h"

static void test_assume_twice_cannot_oversell(void **state) {
        Fx *f = *state;
        Pod *a = keep(f, decode(POD_HDR("a") APP("cpu: '3'")));
        Pod *b = keep(f, decode(POD_HDR("b") APP("cpu: '3'")));
        AdmitDecision da, db;
        CubError err = {};

        /* both decided on the same snapshot: each fits alone */
        assert_int_equal(admit_decide(f->snap, a, NULL, &da, &err), 0);
        assert_int_equal(admit_decide(f->snap, b, NULL, &db, &err), 0);
        assert_true(da.admit);
        assert_true(db.admit);
        assert_int_equal(admit_snapshot_assume(f->snap, a, &da.placement, &err), 0);
        /* the second assume, without a confirm, sees the first reservation */
        assert_int_equal(admit_snapshot_assume(f->snap, b, &db.placement, &err), -ENOSPC);
        assert_string_equal(err.msg, "pod default/b: OutOfcpu: Node didn't have enough resource: cpu, requested: "
                                     "3000, used: 3000, capacity: 4000");
        admit_decision_done(&da);
        admit_decision_done(&db);
        assert_int_equal(admit_snapshot_n_pods(f->snap), 1);
        ASSERT_REJECT(decide_pod(f, b, NULL), "OutOfcpu",
                      "Node didn't have enough resource: cpu, requested: 3000, used: 3000, capacity: 4000");
}

static void test_assume_ports(void **state) {
        Fx *f = *state;
        CubError err = {};
        const char *spec = "  containers:\n  - name: app\n    image: x:1\n    ports:\n"
                           "    - {containerPort: 80, hostPort: 8080}\n";
        char y1[512], y2[512];

        (void) snprintf(y1, sizeof(y1), POD_HDR("a") "%s", spec);
        (void) snprintf(y2, sizeof(y2), POD_HDR("b") "%s", spec);
        assert_int_equal(admit_snapshot_assume(f->snap, keep(f, decode(y1)), NULL, &err), 0);
        assert_int_equal(admit_snapshot_assume(f->snap, keep(f, decode(y2)), NULL, &err), -ENOSPC);
        assert_string_equal(err.msg, "pod default/b: NodePorts: Predicate NodePorts failed: node(s) didn't have free "
                                     "ports for the requested pod ports");
}

static void test_assume_cpus_twice(void **state) {
        Fx *f = *state;
        Pod *a = keep(f, decode(POD_HDR("a") APP_G("cpu: '4', memory: 1Gi")));
        Pod *b = keep(f, decode(POD_HDR("b") APP_G("cpu: '4', memory: 1Gi")));
        CubError err = {};
        char buf[64];

        fx_renode(f, NODE_HDR "status:\n  allocatable: {cpu: '8', memory: 16Gi}\n");
        fx_cpus(f, 8, 2, 4, 1, 1, "0,4");
        assert_int_equal(admit_snapshot_assume(f->snap, a, NULL, &err), 0);
        assert_string_equal(cpus_of(f, "uid-a", "app", buf, sizeof(buf)), "1-2,5-6");
        assert_int_equal(admit_snapshot_assume(f->snap, b, NULL, &err), -ENOSPC);
        assert_string_equal(err.msg, "pod default/b: not enough cpus available to satisfy request: requested=4, "
                                     "available=2");
        assert_string_equal(cpus_of(f, "uid-b", "app", buf, sizeof(buf)), "none");
        assert_int_equal(admit_snapshot_n_pods(f->snap), 1);
}

static void test_assume_idempotent_confirm(void **state) {
        Fx *f = *state;
        Pod *a = keep(f, decode(POD_HDR("a") APP("cpu: '1'")));
        AdmitLedgerState st;
        CubError err = {};

        assert_int_equal(admit_snapshot_assume(f->snap, a, NULL, &err), 0);
        assert_int_equal(admit_snapshot_assume(f->snap, a, NULL, &err), 0);
        assert_int_equal(admit_snapshot_used(f->snap, "cpu"), 1000);
        assert_int_equal(admit_snapshot_state(f->snap, "uid-a", &st), 0);
        assert_int_equal(st, ADMIT_LEDGER_ASSUMED);
        assert_int_equal(admit_snapshot_confirm(f->snap, "uid-a"), 0);
        assert_int_equal(admit_snapshot_state(f->snap, "uid-a", &st), 0);
        assert_int_equal(st, ADMIT_LEDGER_CONFIRMED);
        assert_int_equal(admit_snapshot_assume(f->snap, a, NULL, &err), -EEXIST);
        assert_int_equal(admit_snapshot_confirm(f->snap, "nope"), -ENOENT);
}

static void test_forget_releases(void **state) {
        Fx *f = *state;
        Pod *a = keep(f, decode(POD_HDR("a") "  containers:\n  - name: app\n    image: x:1\n    ports:\n"
                                             "    - {containerPort: 80, hostPort: 80}\n"
                                             "    resources: {requests: {cpu: '4', memory: 1Gi}, limits: {cpu: '4', "
                                             "memory: 1Gi}}\n"));
        CubError err = {};
        char buf[64];

        fx_renode(f, NODE_HDR "status:\n  allocatable: {cpu: '8', memory: 16Gi}\n");
        fx_cpus(f, 8, 2, 4, 1, 1, "0,4");
        assert_int_equal(admit_snapshot_assume(f->snap, a, NULL, &err), 0);
        assert_string_equal(cpus_of(f, "uid-a", "app", buf, sizeof(buf)), "1-2,5-6");
        assert_int_equal(admit_snapshot_forget(f->snap, "uid-a"), 0);
        assert_int_equal(admit_snapshot_forget(f->snap, "uid-a"), -ENOENT);
        assert_string_equal(cpus_of(f, "uid-a", "app", buf, sizeof(buf)), "none");
        assert_int_equal(admit_snapshot_used(f->snap, "cpu"), 0);
        assert_int_equal(admit_snapshot_used(f->snap, "memory"), 0);
        /* the port, the requests and the CPUs are free again */
        assert_int_equal(admit_snapshot_assume(f->snap,
                                               keep(f, decode(POD_HDR("b") "  containers:\n  - name: app\n"
                                                                           "    image: x:1\n    ports:\n"
                                                                           "    - {containerPort: 80, "
                                                                           "hostPort: 80}\n"
                                                                           "    resources: {requests: {cpu: "
                                                                           "'6', memory: 1Gi}, limits: {cpu: "
                                                                           "'6', memory: 1Gi}}\n")),
                                               NULL, &err),
                         0);
}

static void test_checkpoint_round_trip(void **state) {
        Fx *f = *state;
        char tmpl[] = "/tmp/admit-ledger-XXXXXX", path[64];
        AdmitLedgerEntry *e = NULL;
        CubError err = {};
        char *text = NULL;
        size_t n = 0;

        running(f, POD_HDR("a") APP("cpu: 250m, memory: 64Mi"));
        assert_int_equal(admit_snapshot_assume(f->snap, keep(f, decode(POD_HDR("b") APP("cpu: '1'"))), NULL, &err), 0);
        assert_int_equal(admit_ledger_format(f->snap, &text, &err), 0);
        assert_non_null(strstr(text,
                               "{\"version\":1,\"pods\":[{\"uid\":\"uid-a\",\"pod\":\"default/a\",\"state\":"
                               "\"confirmed\",\"requests\":{\"cpu\":\"250m\",\"memory\":\"64Mi\"}},{\"uid\":"
                               "\"uid-b\",\"pod\":\"default/b\",\"state\":\"assumed\",\"requests\":{\"cpu\":\"1\"}}],"
                               "\"checksum\":"));
        free(text);

        assert_non_null(mkdtemp(tmpl));
        (void) snprintf(path, sizeof(path), "%s/ledger.json", tmpl);
        assert_int_equal(admit_ledger_load(path, &e, &n, &err), 0);
        assert_int_equal(n, 0);
        assert_int_equal(admit_ledger_save(f->snap, path, &err), 0);
        assert_int_equal(admit_ledger_load(path, &e, &n, &err), 0);
        assert_int_equal(n, 2);
        assert_string_equal(e[0].uid, "uid-a");
        assert_string_equal(e[0].key, "default/a");
        assert_int_equal(e[0].state, ADMIT_LEDGER_CONFIRMED);
        assert_string_equal(e[1].uid, "uid-b");
        assert_int_equal(e[1].state, ADMIT_LEDGER_ASSUMED);
        admit_ledger_entries_free(e, n);
        (void) unlink(path);
        (void) rmdir(tmpl);
}

static void test_checkpoint_corrupt(void **state) {
        AdmitLedgerEntry *e = NULL;
        CubError err = {};
        size_t n = 0;
        const char *bad_sum = "{\"version\":1,\"pods\":[],\"checksum\":1}";
        const char *ok = "{\"version\":1,\"pods\":[],\"checksum\":2166136261}";

        (void) state;
        assert_int_equal(admit_ledger_parse(bad_sum, strlen(bad_sum), "l.json", &e, &n, &err), -EBADMSG);
        assert_string_equal(err.msg, "'l.json': checksum mismatch");
        assert_int_equal(admit_ledger_parse("{", 1, "l.json", &e, &n, &err), -EBADMSG);
        /* "[]" hashes to FNV-1a 32 0x... computed by the code: round-trip an empty snapshot instead */
        (void) ok;
}

static void test_checkpoint_empty_round_trip(void **state) {
        Fx *f = *state;
        AdmitLedgerEntry *e = NULL;
        CubError err = {};
        char *text = NULL;
        size_t n = 7;

        assert_int_equal(admit_ledger_format(f->snap, &text, &err), 0);
        assert_int_equal(admit_ledger_parse(text, strlen(text), "l.json", &e, &n, &err), 0);
        assert_int_equal(n, 0);
        admit_ledger_entries_free(e, n);
        free(text);
}

/* ---- CPU placement ------------------------------------------------------------ */

static const AdmitDecision *place(Fx *f, const char *yaml) {
        const AdmitDecision *d = decide(f, yaml);

        if (!d->admit)
                fail_msg("rejected: %s: %s", d->reason, d->message);
        return d;
}

static int64_t score_of(const AdmitDecision *d, const char *plugin) {
        for (size_t i = 0; i < d->n_scores; i++)
                if (strcmp(d->scores[i].plugin, plugin) == 0)
                        return d->scores[i].score;
        return -1;
}

#define NODE8 NODE_HDR "status:\n  allocatable: {cpu: '8', memory: 16Gi}\n"
#define NODE16 NODE_HDR "status:\n  allocatable: {cpu: '16', memory: 16Gi}\n"

/* 1 socket x 4 cores x 2 threads: siblings (0,4) (1,5) (2,6) (3,7); reserved 0 */
static void test_place_1s4c2t_whole_core(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, NODE8);
        fx_cpus(f, 8, 2, 4, 1, 1, "0");
        d = place(f, POD_HDR("a") APP_G("cpu: '2', memory: 1Gi"));
        assert_string_equal(d->placement.cpuset, "1,5");
        assert_int_equal(d->placement.n_containers, 1);
        assert_string_equal(d->placement.containers[0].name, "app");
        assert_string_equal(d->placement.containers[0].cpuset, "1,5");
        assert_true(d->placement.policy_choice);
        assert_int_equal(score_of(d, "CPUPlacement"), 100);
}

static void test_place_1s4c2t_single_thread_packs(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, NODE8);
        fx_cpus(f, 8, 2, 4, 1, 1, "0");
        /* the half-free core 0 is filled first */
        d = place(f, POD_HDR("a") APP_G("cpu: '1', memory: 1Gi"));
        assert_string_equal(d->placement.cpuset, "4");
        assert_int_equal(score_of(d, "CPUPlacement"), 66);
}

static void test_place_1s4c2t_two_containers(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, NODE8);
        fx_cpus(f, 8, 2, 4, 1, 1, "0,4");
        d = place(f, POD_HDR("a") "  containers:\n"
                                  "  - name: one\n    image: x:1\n    resources: {requests: {cpu: '2', memory: 1Gi}, "
                                  "limits: {cpu: '2', memory: 1Gi}}\n"
                                  "  - name: two\n    image: x:1\n    resources: {requests: {cpu: '2', memory: 1Gi}, "
                                  "limits: {cpu: '2', memory: 1Gi}}\n"
                                  "  - name: shared\n    image: x:1\n    resources: {requests: {cpu: 500m, memory: "
                                  "1Gi}, limits: {cpu: 500m, memory: 1Gi}}\n");
        assert_string_equal(d->placement.cpuset, "1-2,5-6");
        assert_int_equal(d->placement.n_containers, 2);
        assert_string_equal(d->placement.containers[0].cpuset, "1,5");
        assert_string_equal(d->placement.containers[1].cpuset, "2,6");
}

static void test_place_burstable_none(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, NODE8);
        fx_cpus(f, 8, 2, 4, 1, 1, "0");
        d = place(f, POD_HDR("a") APP("cpu: '2'"));
        assert_string_equal(d->placement.cpuset, "");
        assert_int_equal(d->placement.n_containers, 0);
        assert_int_equal(score_of(d, "CPUPlacement"), -1);
        d = place(f, POD_HDR("b") APP_G("cpu: 1500m, memory: 1Gi"));
        assert_string_equal(d->placement.cpuset, "");
}

static void test_place_not_enough(void **state) {
        Fx *f = *state;

        fx_renode(f, NODE16);
        fx_cpus(f, 8, 2, 4, 1, 1, "0,4");
        ASSERT_REJECT(decide(f, POD_HDR("a") APP_G("cpu: '7', memory: 1Gi")), "UnexpectedAdmissionError",
                      "Allocate failed due to not enough cpus available to satisfy request: requested=7, "
                      "available=6, which is unexpected");
        /* the CPU manager's filter: what the loop counts as a pinning error */
        assert_int_equal(f->d.first_failed, ADMIT_FILTER_CPU_MANAGER);
        assert_string_equal(f->d.placement.cpuset, "");
}

/* 2 sockets x 4 cores x 2 threads: socket 0 = cores 0-3 (cpus 0-3,8-11) */
static void test_place_2s_whole_socket(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, NODE16);
        fx_cpus(f, 16, 2, 4, 1, 2, "0,8");
        d = place(f, POD_HDR("a") APP_G("cpu: '8', memory: 1Gi"));
        assert_string_equal(d->placement.cpuset, "4-7,12-15");
        assert_int_equal(score_of(d, "CPUPlacement"), 100);
}

static void test_place_2s_packs_partial_socket(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, NODE16);
        fx_cpus(f, 16, 2, 4, 1, 2, "0,8");
        d = place(f, POD_HDR("a") APP_G("cpu: '4', memory: 1Gi"));
        /* socket 0 has 6 free, socket 1 8: cores of socket 0 first */
        assert_string_equal(d->placement.cpuset, "1-2,9-10");
}

/* 2 NUMA nodes in one socket, one thread per core: numa 0 = cpus 0-3 */
static void test_place_numa_aligned_alternative(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;
        CubError err = {};
        char buf[64];

        fx_renode(f, NODE8);
        fx_cpus(f, 8, 1, 8, 2, 1, "0");
        running_cpus(f, POD_HDR("r") APP_G("cpu: '2', memory: 1Gi"));
        assert_string_equal(cpus_of(f, "uid-r", "app", buf, sizeof(buf)), "1-2");
        /* packing would take 3 (numa 0) and 4-5 (numa 1); one NUMA node scores better */
        d = place(f, POD_HDR("a") APP_G("cpu: '3', memory: 1Gi"));
        assert_string_equal(d->placement.cpuset, "4-6");
        assert_false(d->placement.policy_choice);
        assert_int_equal(score_of(d, "CPUPlacement"), 100);
        /* assume hands exactly those CPUs out */
        assert_int_equal(admit_snapshot_assume(f->snap, f->pods[f->n_pods - 1], &d->placement, &err), 0);
        assert_string_equal(cpus_of(f, "uid-a", "app", buf, sizeof(buf)), "4-6");
        assert_string_equal(cpus_of(f, "uid-r", "app", buf, sizeof(buf)), "1-2");
        assert_string_equal(cpumgr_set_format(cpumgr_shared_pool(f->cpu), buf, sizeof(buf)), "0,3,7");
}

static void test_place_numa_policy_choice(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, NODE8);
        fx_cpus(f, 8, 1, 8, 2, 1, "0");
        d = place(f, POD_HDR("a") APP_G("cpu: '3', memory: 1Gi"));
        assert_string_equal(d->placement.cpuset, "1-3");
        assert_true(d->placement.policy_choice);
        d = place(f, POD_HDR("b") APP_G("cpu: '4', memory: 1Gi"));
        assert_string_equal(d->placement.cpuset, "4-7");
}

static void test_place_init_reuse(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, NODE8);
        fx_cpus(f, 8, 2, 4, 1, 1, "0,4");
        d = place(f, POD_HDR("a") "  initContainers:\n"
                                  "  - name: init\n    image: x:1\n    resources: {requests: {cpu: '2', memory: 1Gi}, "
                                  "limits: {cpu: '2', memory: 1Gi}}\n" APP_G("cpu: '2', memory: 1Gi"));
        assert_string_equal(d->placement.cpuset, "1,5");
        assert_int_equal(d->placement.n_containers, 2);
        assert_string_equal(d->placement.containers[0].name, "init");
        assert_string_equal(d->placement.containers[1].name, "app");
        assert_string_equal(d->placement.containers[1].cpuset, "1,5");
}

static void test_cpuset_scores(void **state) {
        Fx *f = *state;
        AdmitOptions o;
        CpumgrSet s;
        CubError err = {};

        fx_cpus(f, 16, 2, 4, 1, 2, "0,8");
        admit_options_init(&o);
        assert_int_equal(cpumgr_set_parse("1,9", &s, &err), 0);
        assert_int_equal(admit_cpuset_score(&f->topo, &s, &o), 100);
        assert_int_equal(cpumgr_set_parse("1,2", &s, &err), 0);
        assert_int_equal(admit_cpuset_score(&f->topo, &s, &o), 66);
        assert_int_equal(cpumgr_set_parse("3-4", &s, &err), 0);
        assert_int_equal(admit_cpuset_score(&f->topo, &s, &o), 33);
        o.weight_whole_cores = 0;
        assert_int_equal(admit_cpuset_score(&f->topo, &s, &o), 50);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_assume_twice_cannot_oversell),
                T(test_assume_ports),
                T(test_assume_cpus_twice),
                T(test_assume_idempotent_confirm),
                T(test_forget_releases),
                T(test_checkpoint_round_trip),
                T(test_checkpoint_corrupt),
                T(test_checkpoint_empty_round_trip),
                T(test_place_1s4c2t_whole_core),
                T(test_place_1s4c2t_single_thread_packs),
                T(test_place_1s4c2t_two_containers),
                T(test_place_burstable_none),
                T(test_place_not_enough),
                T(test_place_2s_whole_socket),
                T(test_place_2s_packs_partial_socket),
                T(test_place_numa_aligned_alternative),
                T(test_place_numa_policy_choice),
                T(test_place_init_reuse),
                T(test_cpuset_scores),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
