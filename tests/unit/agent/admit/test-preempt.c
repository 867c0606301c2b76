/* SPDX-License-Identifier: Apache-2.0 */
/* agent/admit preemption: the minimal victim set, its tie-breaks, the
 * priority and criticality rules, preemptionPolicy Never, non-resource
 * failures, exclusive CPUs, and the greedy fallback. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/admit/admit.h"
#include "agent/pod/pod.h"

/* ---- fixtures ------------------------------------------------------------- */

#include "admit-fixture.h"

#define PRIO(p) "  priority: " #p "\n"

static void assert_victims(const AdmitDecision *d, const char *const *keys, size_t n) {
        if (d->n_victims != n)
                fail_msg("%zu victims, expected %zu (%s: %s)", d->n_victims, n, d->reason, d->message);
        for (size_t i = 0; i < n; i++) {
                bool found = false;

                for (size_t j = 0; j < d->n_victims; j++)
                        found = found || strcmp(d->victims[j].key, keys[i]) == 0;
                if (!found)
                        fail_msg("victim %s missing", keys[i]);
        }
}

#define VICTIMS(d, ...)                                              \
        do {                                                         \
                const char *const _v[] = { __VA_ARGS__ };            \
                assert_victims((d), _v, sizeof(_v) / sizeof(_v[0])); \
        } while (0)

static void test_fewest_victims(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        running(f, POD_HDR("low1") PRIO(1) APP("cpu: '1'"));
        running(f, POD_HDR("low2") PRIO(2) APP("cpu: '1'"));
        running(f, POD_HDR("mid") PRIO(50) APP("cpu: '2'"));
        d = decide(f, POD_HDR("a") PRIO(100) APP("cpu: '2'"));
        assert_true(d->admit);
        /* one victim beats two of lower priority */
        VICTIMS(d, "default/mid");
        assert_string_equal(d->victims[0].uid, "uid-mid");
        assert_string_equal(d->reason, "OutOfcpu");
        assert_string_equal(d->message,
                            "Node didn't have enough resource: cpu, requested: 2000, used: 4000, capacity: 4000");
}

static void test_lowest_max_priority(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("p50") PRIO(50) APP("cpu: '2'"));
        running(f, POD_HDR("p20") PRIO(20) APP("cpu: '2'"));
        VICTIMS(decide(f, POD_HDR("a") PRIO(100) APP("cpu: '2'")), "default/p20");
}

static void test_lowest_sum(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("a5") PRIO(5) APP("cpu: '1'"));
        running(f, POD_HDR("b10") PRIO(10) APP("cpu: '1'"));
        running(f, POD_HDR("c20") PRIO(20) APP("cpu: '2'"));
        /* {a5,c20} and {b10,c20} both have max 20: the smaller sum wins */
        VICTIMS(decide(f, POD_HDR("x") PRIO(100) APP("cpu: '3'")), "default/a5", "default/c20");
}

static void test_lower_max_beats_sum(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("a1") PRIO(1) APP("cpu: '1'"));
        running(f, POD_HDR("b30") PRIO(30) APP("cpu: '1'"));
        running(f, POD_HDR("c31") PRIO(31) APP("cpu: '1'"));
        running(f, POD_HDR("d40") PRIO(40) APP("cpu: '1'"));
        /* two victims: {b30,c31} (max 31) beats {a1,d40} (max 40, smaller sum) */
        VICTIMS(decide(f, POD_HDR("x") PRIO(100) APP("cpu: '2'")), "default/a1", "default/b30");
}

static void test_never_equal_or_higher(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        running(f, POD_HDR("eq") PRIO(100) APP("cpu: '2'"));
        running(f, POD_HDR("hi") PRIO(200) APP("cpu: '2'"));
        d = decide(f, POD_HDR("a") PRIO(100) APP("cpu: '1'"));
        assert_false(d->admit);
        assert_int_equal(d->n_victims, 0);
        assert_string_equal(d->reason, "OutOfcpu");
}

static void test_policy_never(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        running(f, POD_HDR("low") PRIO(1) APP("cpu: '4'"));
        d = decide(f, POD_HDR("a") PRIO(100) "  preemptionPolicy: Never\n" APP("cpu: '1'"));
        assert_false(d->admit);
        assert_int_equal(d->n_victims, 0);
        assert_string_equal(d->reason, "OutOfcpu");
}

static void test_non_resource_failure_no_preemption(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        running(f, POD_HDR("low") PRIO(1) APP("cpu: '4'"));
        d = decide(f, POD_HDR("a") PRIO(100) "  nodeSelector: {disk: hdd}\n" APP("cpu: '1'"));
        assert_false(d->admit);
        assert_int_equal(d->n_victims, 0);
        assert_string_equal(d->reason, "OutOfcpu");
        assert_string_equal(filter(d, "NodeAffinity")->reason, "NodeAffinity");
}

static void test_pressure_no_preemption(void **state) {
        Fx *f = *state;
        const AdmitConditions c = { .disk_pressure = true };
        const AdmitDecision *d;

        running(f, POD_HDR("low") PRIO(1) APP("cpu: '4'"));
        admit_snapshot_set_conditions(f->snap, &c);
        d = decide(f, POD_HDR("a") PRIO(100) APP("cpu: '1'"));
        assert_false(d->admit);
        assert_int_equal(d->n_victims, 0);
        assert_string_equal(d->reason, "Evicted");
}

static void test_static_victims_by_priority(void **state) {
        Fx *f = *state;
        CubError err = {};
        Pod *st = keep(f, decode_static(POD_HDR("static") PRIO(0) APP("cpu: '4'")));
        const AdmitDecision *d;

        /* cubelet: a static pod is critical by its priority only (kubelet
         * counts every static pod), so a higher-priority pod preempts it */
        assert_int_equal(admit_snapshot_add(f->snap, st, &err), 0);
        d = decide(f, POD_HDR("api") PRIO(100) APP("cpu: '1'"));
        assert_true(d->admit);
        VICTIMS(d, "default/static-node-1");
        d = decide_pod(f, keep(f, decode_static(POD_HDR("crit") PRIO(0) APP("cpu: '1'"))), NULL);
        assert_false(d->admit);
        assert_int_equal(d->n_victims, 0);
}

static void test_system_critical_priority(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("cluster") PRIO(2000000000) APP("cpu: '4'"));
        assert_false(decide(f, POD_HDR("a") PRIO(1000000000) APP("cpu: '1'"))->admit);
        VICTIMS(decide(f, POD_HDR("node") PRIO(2000001000) APP("cpu: '1'")), "default/cluster");
}

static void test_pods_count(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, NODE_HDR "status:\n  allocatable: {cpu: '4', memory: 16Gi, pods: '2'}\n");
        running(f, POD_HDR("p7") PRIO(7) APP_BARE);
        running(f, POD_HDR("p3") PRIO(3) APP_BARE);
        d = decide(f, POD_HDR("a") PRIO(10) APP_BARE);
        VICTIMS(d, "default/p3");
        assert_string_equal(d->reason, "OutOfpods");
}

static void test_two_resources(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("cpu") PRIO(1) APP("cpu: '3'"));
        running(f, POD_HDR("mem") PRIO(1) APP("memory: 15Gi"));
        running(f, POD_HDR("both") PRIO(2) APP("cpu: '1', memory: 1Gi"));
        /* needs 2 cpu and 2Gi: "both" alone is not enough; cpu+mem covers both */
        VICTIMS(decide(f, POD_HDR("a") PRIO(10) APP("cpu: '2', memory: 2Gi")), "default/cpu", "default/mem");
}

static void test_useless_pods_pruned(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("mem0") PRIO(0) APP("memory: 1Gi"));
        running(f, POD_HDR("cpu5") PRIO(5) APP("cpu: '4'"));
        VICTIMS(decide(f, POD_HDR("a") PRIO(10) APP("cpu: '1'")), "default/cpu5");
}

static void test_not_enough_even_with_all(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        running(f, POD_HDR("low") PRIO(1) APP("cpu: '1'"));
        running(f, POD_HDR("high") PRIO(500) APP("cpu: '3'"));
        d = decide(f, POD_HDR("a") PRIO(100) APP("cpu: '2'"));
        assert_false(d->admit);
        assert_int_equal(d->n_victims, 0);
}

static void test_exclusive_cpus(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, NODE_HDR "status:\n  allocatable: {cpu: '8', memory: 16Gi}\n");
        fx_cpus(f, 8, 2, 4, 1, 1, "0,4");
        running_cpus(f, POD_HDR("g1") PRIO(1) APP_G("cpu: '2', memory: 1Gi"));
        running_cpus(f, POD_HDR("g2") PRIO(2) APP_G("cpu: '2', memory: 1Gi"));
        running_cpus(f, POD_HDR("g3") PRIO(3) APP_G("cpu: '2', memory: 1Gi"));
        d = decide(f, POD_HDR("a") PRIO(10) APP_G("cpu: '2', memory: 1Gi"));
        assert_string_equal(d->reason, "UnexpectedAdmissionError");
        assert_string_equal(d->message, "Allocate failed due to not enough cpus available to satisfy request: "
                                        "requested=2, available=0, which is unexpected");
        assert_true(d->admit);
        VICTIMS(d, "default/g1");
        /* the victim's CPUs, a whole core */
        assert_string_equal(d->placement.cpuset, "1,5");
}

static void test_greedy_many_candidates(void **state) {
        Fx *f = *state;
        char yaml[512];
        const AdmitDecision *d;

        for (int i = 0; i < 40; i++) {
                (void) snprintf(yaml, sizeof(yaml), POD_HDR("g%d") "  priority: %d\n" APP("cpu: 100m"), i, i, 100 - i);
                running(f, yaml);
        }
        /* 4000m used; 250m more needs three victims: the three lowest priorities */
        d = decide(f, POD_HDR("a") PRIO(1000) APP("cpu: 250m"));
        assert_true(d->admit);
        VICTIMS(d, "default/g39", "default/g38", "default/g37");
}

static void test_exact_many_sizes(void **state) {
        Fx *f = *state;
        char yaml[512];

        /* 20 small pods and one big one of a higher priority: one victim wins */
        for (int i = 0; i < 20; i++) {
                (void) snprintf(yaml, sizeof(yaml), POD_HDR("s%d") "  priority: %d\n" APP("cpu: 100m"), i, i, i);
                running(f, yaml);
        }
        running(f, POD_HDR("big") PRIO(90) APP("cpu: '2'"));
        VICTIMS(decide(f, POD_HDR("a") PRIO(100) APP("cpu: '1'")), "default/big");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_fewest_victims),
                T(test_lowest_max_priority),
                T(test_lowest_sum),
                T(test_lower_max_beats_sum),
                T(test_never_equal_or_higher),
                T(test_policy_never),
                T(test_non_resource_failure_no_preemption),
                T(test_pressure_no_preemption),
                T(test_static_victims_by_priority),
                T(test_system_critical_priority),
                T(test_pods_count),
                T(test_two_resources),
                T(test_useless_pods_pruned),
                T(test_not_enough_even_with_all),
                T(test_exclusive_cpus),
                T(test_greedy_many_candidates),
                T(test_exact_many_sizes),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
