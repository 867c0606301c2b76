/* SPDX-License-Identifier: Apache-2.0 */
/* eviction/conditions.c with a fake clock: thresholds met (strict
 * less-than, min-reclaim while resolving), grace periods of soft
 * thresholds, node conditions and the pressure transition period
 * (section 6.3). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "eviction/eviction.h"

#define MI (UINT64_C(1024) * 1024)
#define GI (1024 * MI)
#define SEC CUB_USEC_PER_SEC

static void config(EvictConfig *c, const char *const *hard, const char *const *soft, const char *const *grace,
                   const char *const *min_reclaim) {
        CubError err = {};

        evict_config_init(c);
        evict_config_set_hard_given(c);
        for (; hard && *hard; hard += 2)
                assert_int_equal(evict_config_add_hard(c, hard[0], hard[1], &err), 0);
        for (; soft && *soft; soft += 2)
                assert_int_equal(evict_config_add_soft(c, soft[0], soft[1], &err), 0);
        for (; grace && *grace; grace += 2)
                assert_int_equal(evict_config_set_soft_grace_period(c, grace[0], grace[1], &err), 0);
        for (; min_reclaim && *min_reclaim; min_reclaim += 2)
                assert_int_equal(evict_config_set_min_reclaim(c, min_reclaim[0], min_reclaim[1], &err), 0);
        if (evict_config_finish(c, /* enforce_pods_allocatable= */ false, &err) < 0)
                fail_msg("%s", err.msg);
}

static EvictObservations obs_of(EvictSignal s, uint64_t available, uint64_t capacity) {
        EvictObservations o = {};

        o.signals[s] = (EvictSignalObservation){ .present = true, .available = available, .capacity = capacity };
        return o;
}

static void test_strict_less_than(void **state) {
        static const char *const hard[] = { "memory.available", "100Mi", NULL };
        EvictConfig c;
        EvictState s;
        EvictObservations o;

        (void) state;
        config(&c, hard, NULL, NULL, NULL);
        evict_state_init(&s);
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 100 * MI, 16 * GI); /* equal: not met */
        evict_state_update(&s, &c, &o, 1 * SEC);
        assert_false(s.met[0]);
        assert_false(s.condition[EVICT_CONDITION_MEMORY_PRESSURE]);
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 100 * MI - 1, 16 * GI);
        evict_state_update(&s, &c, &o, 2 * SEC);
        assert_true(s.met[0]);
        assert_true(s.active[0]); /* hard: no grace period */
        assert_true(evict_state_any_active(&s, &c));
        assert_int_equal(s.first_observed_usec[0], 2 * SEC);
        /* a signal that is not observed meets nothing */
        o = (EvictObservations){};
        evict_state_update(&s, &c, &o, 3 * SEC);
        assert_false(s.met[0]);
        assert_false(evict_state_any_active(&s, &c));
}

static void test_percent_threshold(void **state) {
        static const char *const hard[] = { "nodefs.available", "10%", NULL };
        EvictConfig c;
        EvictState s;
        EvictObservations o;

        (void) state;
        config(&c, hard, NULL, NULL, NULL);
        evict_state_init(&s);
        /* 10% of 100Gi is 10737418400 (float32): 10737418399 available is met,
         * 10737418400 is not, although it is above 10% computed exactly */
        o = obs_of(EVICT_SIGNAL_NODEFS_AVAILABLE, UINT64_C(10737418400), 100 * GI);
        evict_state_update(&s, &c, &o, 1 * SEC);
        assert_false(s.met[0]);
        o = obs_of(EVICT_SIGNAL_NODEFS_AVAILABLE, UINT64_C(10737418399), 100 * GI);
        evict_state_update(&s, &c, &o, 2 * SEC);
        assert_true(s.met[0]);
        assert_true(s.condition[EVICT_CONDITION_DISK_PRESSURE]);
        assert_false(s.condition[EVICT_CONDITION_MEMORY_PRESSURE]);
}

static void test_condition_transition_period(void **state) {
        static const char *const hard[] = { "memory.available", "100Mi", NULL };
        EvictConfig c;
        EvictState s;
        EvictObservations low = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 50 * MI, 16 * GI);
        EvictObservations ok = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 8 * GI, 16 * GI);
        EvictConditionInfo ci;
        uint64_t t0 = 1000 * SEC;

        (void) state;
        config(&c, hard, NULL, NULL, NULL);
        assert_int_equal(c.transition_usec, 300 * SEC);
        evict_state_init(&s);
        evict_state_update(&s, &c, &ok, t0);
        evict_state_condition(&s, EVICT_CONDITION_MEMORY_PRESSURE, &ci);
        assert_false(ci.status);
        assert_string_equal(ci.name, "MemoryPressure");
        assert_string_equal(ci.reason, "KubeletHasSufficientMemory");
        assert_string_equal(ci.message, "kubelet has sufficient memory available");
        assert_int_equal(ci.last_transition_usec, 0);

        /* pressure appears */
        evict_state_update(&s, &c, &low, t0 + 10 * SEC);
        evict_state_condition(&s, EVICT_CONDITION_MEMORY_PRESSURE, &ci);
        assert_true(ci.status);
        assert_string_equal(ci.reason, "KubeletHasInsufficientMemory");
        assert_string_equal(ci.message, "kubelet has insufficient memory available");
        assert_int_equal(ci.last_transition_usec, t0 + 10 * SEC);
        evict_state_update(&s, &c, &low, t0 + 20 * SEC); /* last observed */

        /* pressure is gone, the condition stays for the transition period */
        evict_state_update(&s, &c, &ok, t0 + 30 * SEC);
        assert_false(s.met[0]);
        assert_true(s.condition[EVICT_CONDITION_MEMORY_PRESSURE]);
        evict_state_update(&s, &c, &ok, t0 + 20 * SEC + 300 * SEC - 1);
        assert_true(s.condition[EVICT_CONDITION_MEMORY_PRESSURE]);
        evict_state_condition(&s, EVICT_CONDITION_MEMORY_PRESSURE, &ci);
        assert_int_equal(ci.last_transition_usec, t0 + 10 * SEC);
        /* exactly the period after the last observation: cleared */
        evict_state_update(&s, &c, &ok, t0 + 20 * SEC + 300 * SEC);
        evict_state_condition(&s, EVICT_CONDITION_MEMORY_PRESSURE, &ci);
        assert_false(ci.status);
        assert_int_equal(ci.last_transition_usec, t0 + 320 * SEC);

        /* a breach in the window renews it */
        evict_state_update(&s, &c, &low, t0 + 400 * SEC);
        evict_state_update(&s, &c, &ok, t0 + 410 * SEC);
        evict_state_update(&s, &c, &low, t0 + 500 * SEC);
        evict_state_update(&s, &c, &ok, t0 + 780 * SEC);
        assert_true(s.condition[EVICT_CONDITION_MEMORY_PRESSURE]); /* 280s after the last breach */
        evict_state_update(&s, &c, &ok, t0 + 800 * SEC);
        assert_false(s.condition[EVICT_CONDITION_MEMORY_PRESSURE]);
}

static void test_zero_transition_period(void **state) {
        static const char *const hard[] = { "pid.available", "1000", NULL };
        EvictConfig c;
        EvictState s;
        EvictObservations o;
        CubError err = {};

        (void) state;
        config(&c, hard, NULL, NULL, NULL);
        assert_int_equal(evict_config_set_transition_period(&c, "0s", &err), 0);
        evict_state_init(&s);
        o = obs_of(EVICT_SIGNAL_PID_AVAILABLE, 999, 32768);
        evict_state_update(&s, &c, &o, 5 * SEC);
        assert_true(s.condition[EVICT_CONDITION_PID_PRESSURE]); /* true while met */
        o = obs_of(EVICT_SIGNAL_PID_AVAILABLE, 1000, 32768);
        evict_state_update(&s, &c, &o, 6 * SEC);
        assert_false(s.condition[EVICT_CONDITION_PID_PRESSURE]);
}

static void test_soft_grace_period(void **state) {
        static const char *const hard[] = { "memory.available", "100Mi", NULL };
        static const char *const soft[] = { "memory.available", "1Gi", NULL };
        static const char *const grace[] = { "memory.available", "1m30s", NULL };
        EvictConfig c;
        EvictState s;
        EvictObservations mid = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 512 * MI, 16 * GI);
        EvictObservations ok = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 8 * GI, 16 * GI);
        EvictMet met[EVICT_THRESHOLDS_MAX];

        (void) state;
        config(&c, hard, soft, grace, NULL);
        assert_int_equal(c.n_thresholds, 2);
        assert_true(c.thresholds[1].soft);
        evict_state_init(&s);

        evict_state_update(&s, &c, &mid, 100 * SEC);
        assert_false(s.met[0]);
        assert_true(s.met[1]);
        assert_false(s.active[1]);
        /* the condition is reported during the grace period */
        assert_true(s.condition[EVICT_CONDITION_MEMORY_PRESSURE]);
        assert_false(evict_state_any_active(&s, &c));
        assert_int_equal(evict_state_met(&s, &c, &mid, met), 1);
        assert_ptr_equal(met[0].threshold, &c.thresholds[1]);
        assert_int_equal(met[0].quantity, GI);
        assert_int_equal(met[0].available, 512 * MI);
        assert_int_equal(met[0].first_observed_usec, 100 * SEC);
        assert_false(met[0].active);

        evict_state_update(&s, &c, &mid, 189 * SEC);
        assert_false(s.active[1]);
        evict_state_update(&s, &c, &mid, 190 * SEC); /* 90s after first observed */
        assert_true(s.active[1]);
        assert_int_equal(evict_state_met(&s, &c, &mid, met), 1);
        assert_true(met[0].active);

        /* one sample above the threshold restarts the grace period */
        evict_state_update(&s, &c, &ok, 200 * SEC);
        assert_false(s.met[1]);
        assert_int_equal(evict_state_met(&s, &c, &ok, met), 0);
        evict_state_update(&s, &c, &mid, 210 * SEC);
        assert_int_equal(s.first_observed_usec[1], 210 * SEC);
        evict_state_update(&s, &c, &mid, 299 * SEC);
        assert_false(s.active[1]);
        evict_state_update(&s, &c, &mid, 300 * SEC);
        assert_true(s.active[1]);
}

static void test_min_reclaim(void **state) {
        static const char *const hard[] = { "memory.available", "100Mi", NULL };
        static const char *const mr[] = { "memory.available", "400Mi", NULL };
        EvictConfig c;
        EvictState s;
        EvictObservations o;

        (void) state;
        config(&c, hard, NULL, NULL, mr);
        evict_state_init(&s);
        /* above the threshold: min-reclaim does not apply before the
         * threshold has driven eviction */
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 300 * MI, 16 * GI);
        evict_state_update(&s, &c, &o, 1 * SEC);
        assert_false(s.met[0]);
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 90 * MI, 16 * GI);
        evict_state_update(&s, &c, &o, 2 * SEC);
        assert_true(s.active[0]);
        /* being resolved: met while 100Mi + 400Mi > available */
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 300 * MI, 16 * GI);
        evict_state_update(&s, &c, &o, 3 * SEC);
        assert_true(s.met[0]);
        assert_true(s.active[0]);
        assert_int_equal(s.first_observed_usec[0], 2 * SEC);
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 500 * MI - 1, 16 * GI);
        evict_state_update(&s, &c, &o, 4 * SEC);
        assert_true(s.met[0]);
        /* equality resolves it (strict) */
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 500 * MI, 16 * GI);
        evict_state_update(&s, &c, &o, 5 * SEC);
        assert_false(s.met[0]);
        assert_false(s.active[0]);
        /* and then min-reclaim is off again */
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 300 * MI, 16 * GI);
        evict_state_update(&s, &c, &o, 6 * SEC);
        assert_false(s.met[0]);
}

static void test_min_reclaim_percent(void **state) {
        static const char *const hard[] = { "nodefs.available", "10%", NULL };
        static const char *const mr[] = { "nodefs.available", "5%", NULL };
        EvictConfig c;
        EvictState s;
        EvictObservations o;

        (void) state;
        config(&c, hard, NULL, NULL, mr);
        evict_state_init(&s);
        o = obs_of(EVICT_SIGNAL_NODEFS_AVAILABLE, 5 * GI, 100 * GI);
        evict_state_update(&s, &c, &o, 1 * SEC);
        assert_true(s.active[0]);
        /* 10737418400 + 5368709200 = 16106127600 */
        o = obs_of(EVICT_SIGNAL_NODEFS_AVAILABLE, UINT64_C(16106127599), 100 * GI);
        evict_state_update(&s, &c, &o, 2 * SEC);
        assert_true(s.met[0]);
        o = obs_of(EVICT_SIGNAL_NODEFS_AVAILABLE, UINT64_C(16106127600), 100 * GI);
        evict_state_update(&s, &c, &o, 3 * SEC);
        assert_false(s.met[0]);
}

static void test_soft_min_reclaim_needs_active(void **state) {
        static const char *const soft[] = { "memory.available", "1Gi", NULL };
        static const char *const grace[] = { "memory.available", "1m", NULL };
        static const char *const mr[] = { "memory.available", "1Gi", NULL };
        EvictConfig c;
        EvictState s;
        EvictObservations o;

        (void) state;
        config(&c, NULL, soft, grace, mr);
        evict_state_init(&s);
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 512 * MI, 16 * GI);
        evict_state_update(&s, &c, &o, 0);
        assert_true(s.met[0]);
        assert_false(s.active[0]);
        /* in grace, not active: min-reclaim not applied, so 1.5Gi clears it */
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 1536 * MI, 16 * GI);
        evict_state_update(&s, &c, &o, 30 * SEC);
        assert_false(s.met[0]);
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 512 * MI, 16 * GI);
        evict_state_update(&s, &c, &o, 40 * SEC);
        evict_state_update(&s, &c, &o, 100 * SEC);
        assert_true(s.active[0]);
        o = obs_of(EVICT_SIGNAL_MEMORY_AVAILABLE, 1536 * MI, 16 * GI);
        evict_state_update(&s, &c, &o, 110 * SEC);
        assert_true(s.met[0]); /* 1Gi + 1Gi > 1.5Gi */
        assert_true(s.active[0]);
}

static void test_conditions_by_signal(void **state) {
        static const char *const hard[] = {
                "allocatableMemory.available", "1Gi", "imagefs.inodesFree", "5%", "pid.available", "100", NULL
        };
        EvictConfig c;
        EvictState s;
        EvictObservations o = {};
        EvictConditionInfo ci;

        (void) state;
        config(&c, hard, NULL, NULL, NULL);
        evict_state_init(&s);
        o.signals[EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE] =
                (EvictSignalObservation){ .present = true, .available = 512 * MI, .capacity = 15 * GI };
        o.signals[EVICT_SIGNAL_IMAGEFS_INODES_FREE] =
                (EvictSignalObservation){ .present = true, .available = 40000, .capacity = 1000000 };
        o.signals[EVICT_SIGNAL_PID_AVAILABLE] =
                (EvictSignalObservation){ .present = true, .available = 50, .capacity = 4194304 };
        evict_state_update(&s, &c, &o, 7 * SEC);
        for (int k = 0; k < _EVICT_CONDITION_MAX; k++)
                assert_true(s.condition[k]);
        evict_state_condition(&s, EVICT_CONDITION_DISK_PRESSURE, &ci);
        assert_string_equal(ci.name, "DiskPressure");
        assert_string_equal(ci.reason, "KubeletHasDiskPressure");
        evict_state_condition(&s, EVICT_CONDITION_PID_PRESSURE, &ci);
        assert_string_equal(ci.reason, "KubeletHasInsufficientPID");
        assert_string_equal(ci.message, "kubelet has insufficient PID available");
        assert_int_equal(ci.last_transition_usec, 7 * SEC);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_strict_less_than),
                cmocka_unit_test(test_percent_threshold),
                cmocka_unit_test(test_condition_transition_period),
                cmocka_unit_test(test_zero_transition_period),
                cmocka_unit_test(test_soft_grace_period),
                cmocka_unit_test(test_min_reclaim),
                cmocka_unit_test(test_min_reclaim_percent),
                cmocka_unit_test(test_soft_min_reclaim_needs_active),
                cmocka_unit_test(test_conditions_by_signal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
