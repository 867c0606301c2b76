/* SPDX-License-Identifier: Apache-2.0 */
/* agent/shutdown/plan.c: the KubeletConfiguration's three shutdown fields
 * decoded and checked with kubelet's messages, migrateConfig's two groups,
 * groupByPriority's group of each priority and the pod's grace (the cases
 * of kubelet 1.34's nodeshutdown_manager_test.go). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/shutdown/shutdown.h"

static int plan_of(const char *yaml, ShutdownPlan *ret, CubError *err) {
        PodKubeletConfig kc;
        int r;

        r = pod_kubelet_config_decode(yaml, strlen(yaml), "config.yaml", &kc, err);
        if (r < 0)
                return r;
        r = shutdown_plan(&kc, ret, err);
        pod_kubelet_config_done(&kc);
        return r;
}

static void test_off(void **state) {
        ShutdownPlan p;
        CubError err = {};

        (void) state;
        assert_int_equal(plan_of("kind: KubeletConfiguration\n", &p, &err), 0);
        assert_int_equal(p.n, 0);
        assert_int_equal(shutdown_period_requested(&p), 0);
        assert_int_equal(plan_of("shutdownGracePeriod: 0s\nshutdownGracePeriodCriticalPods: 0s\n", &p, &err), 0);
        assert_int_equal(p.n, 0);
}

/* migrateConfig: 300 s and 120 s are 180 s for priority 0, 120 s for 2000000000 */
static void test_migrate(void **state) {
        ShutdownPlan p;
        CubError err = {};

        (void) state;
        assert_int_equal(plan_of("shutdownGracePeriod: 5m\nshutdownGracePeriodCriticalPods: 2m\n", &p, &err), 0);
        assert_int_equal(p.n, 2);
        assert_int_equal(p.groups[0].priority, 0);
        assert_int_equal(p.groups[0].grace_s, 180);
        assert_int_equal(p.groups[1].priority, 2000000000);
        assert_int_equal(p.groups[1].grace_s, 120);
        assert_int_equal(shutdown_period_requested(&p), 300);
        /* normal, highest user-definable (1000000000), critical */
        assert_int_equal(shutdown_group_of(&p, 0), 0);
        assert_int_equal(shutdown_group_of(&p, 1000000000), 0);
        assert_int_equal(shutdown_group_of(&p, 2000000000), 1);
        assert_int_equal(shutdown_group_of(&p, 2000001000), 1); /* system-node-critical */
        assert_int_equal(shutdown_group_of(&p, -5), 0);         /* below the lowest: the lowest */
        shutdown_plan_done(&p);

        assert_int_equal(plan_of("shutdownGracePeriod: 100s\n", &p, &err), 0);
        assert_int_equal(p.n, 2);
        assert_int_equal(p.groups[0].grace_s, 100);
        assert_int_equal(p.groups[1].grace_s, 0);
        shutdown_plan_done(&p);
}

/* groupByPriority "pod priority": groups 1..4 (given out of order), pods 0..5 */
static void test_by_priority(void **state) {
        ShutdownPlan p;
        CubError err = {};
        static const size_t want[] = { 0, 0, 1, 2, 3, 3 };

        (void) state;
        assert_int_equal(plan_of("shutdownGracePeriodByPodPriority:\n"
                                 "- {priority: 3, shutdownGracePeriodSeconds: 30}\n"
                                 "- {priority: 1, shutdownGracePeriodSeconds: 10}\n"
                                 "- {priority: 4, shutdownGracePeriodSeconds: 40}\n"
                                 "- {priority: 2, shutdownGracePeriodSeconds: 20}\n",
                                 &p, &err),
                         0);
        assert_int_equal(p.n, 4);
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(p.groups[i].priority, (int32_t) i + 1);
                assert_int_equal(p.groups[i].grace_s, 10 * ((int64_t) i + 1));
        }
        assert_int_equal(shutdown_period_requested(&p), 100);
        for (int32_t prio = 0; prio <= 5; prio++)
                assert_int_equal(shutdown_group_of(&p, prio), want[prio]);
        shutdown_plan_done(&p);
}

/* kubelet's validation messages */
static void test_invalid(void **state) {
        ShutdownPlan p;
        CubError err = {};

        (void) state;
        assert_int_equal(plan_of("shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n", &p, &err),
                         -EINVAL);
        assert_string_equal(err.msg, "config.yaml: invalid configuration: shutdownGracePeriodCriticalPods 20s must be <= "
                                     "shutdownGracePeriod 10s");
        err = (CubError){};
        assert_int_equal(plan_of("shutdownGracePeriod: 500ms\n", &p, &err), -EINVAL);
        assert_string_equal(
                err.msg, "config.yaml: invalid configuration: shutdownGracePeriod 500ms must be either zero or otherwise >= 1 sec");
        err = (CubError){};
        assert_int_equal(plan_of("shutdownGracePeriod: -1s\n", &p, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "config.yaml: invalid configuration: shutdownGracePeriod -1s must be either zero or otherwise >= 1 sec");
        err = (CubError){};
        assert_int_equal(plan_of("shutdownGracePeriod: 30s\n"
                                 "shutdownGracePeriodByPodPriority: [{priority: 1, shutdownGracePeriodSeconds: 1}]\n",
                                 &p, &err),
                         -EINVAL);
        assert_string_equal(err.msg, "config.yaml: invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority and "
                                     "shutdownGracePeriod at the same time");
        err = (CubError){};
        assert_int_equal(plan_of("shutdownGracePeriod: soon\n", &p, &err), -EINVAL);
        assert_string_equal(err.msg, "config.yaml:1: shutdownGracePeriod: Invalid value: time: invalid duration \"soon\"");
        /* an item's bad value is named with its path */
        err = (CubError){};
        assert_true(plan_of("shutdownGracePeriodByPodPriority: [{priority: high}]\n", &p, &err) < 0);
        assert_non_null(strstr(err.msg, "shutdownGracePeriodByPodPriority[0].priority"));
}

/* the pod's terminationGracePeriodSeconds when it is at most the group's */
static void test_pod_grace(void **state) {
        (void) state;
        assert_int_equal(shutdown_pod_grace(180, 30), 30);
        assert_int_equal(shutdown_pod_grace(20, 30), 20);
        assert_int_equal(shutdown_pod_grace(0, 30), 0);
        assert_int_equal(shutdown_pod_grace(30, 30), 30);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_off),     cmocka_unit_test(test_migrate),   cmocka_unit_test(test_by_priority),
                cmocka_unit_test(test_invalid), cmocka_unit_test(test_pod_grace),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
