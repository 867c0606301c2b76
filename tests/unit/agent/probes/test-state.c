/* SPDX-License-Identifier: Apache-2.0 */
/* agent/probes/state.c: kubelet's prober worker as a pure state machine,
 * driven by a fake clock (one tick per periodSeconds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/probes/probes.h"
#include "agent/util/cleanup.h"

/* A fake container and clock: ticks at `now` seconds, the container running
 * since `started_at`. */
typedef struct Clock {
        int64_t now, started_at;
        bool running;
} Clock;

static PodProbe probe(int32_t delay, int32_t success, int32_t failure) {
        return (PodProbe){ .initial_delay_seconds = delay,
                           .period_seconds = 1,
                           .timeout_seconds = 1,
                           .success_threshold = success,
                           .failure_threshold = failure };
}

/* One tick: runs the probe when due with result r; returns whether it ran. */
static bool tick(ProbeState *s, const Clock *c, bool started, ProbeResult r, bool *changed) {
        *changed = false;
        if (!probe_state_due(s, c->running, c->now - c->started_at, started))
                return false;
        *changed = probe_state_record(s, r);
        return true;
}

static void test_initial_results(void **state) {
        PodProbe p = probe(0, 1, 3);
        ProbeState s;

        (void) state;
        probe_state_init(&s, PROBE_LIVENESS, &p);
        assert_int_equal(s.result, PROBE_RESULT_SUCCESS);
        probe_state_init(&s, PROBE_READINESS, &p);
        assert_int_equal(s.result, PROBE_RESULT_FAILURE);
        probe_state_init(&s, PROBE_STARTUP, &p);
        assert_int_equal(s.result, PROBE_RESULT_UNKNOWN);
        assert_string_equal(probe_kind_to_string(PROBE_READINESS), "Readiness");
        assert_string_equal(probe_result_to_string(PROBE_RESULT_FAILURE), "Failure");
        assert_null(probe_kind_to_string(_PROBE_KIND_MAX));
}

static void test_initial_delay_and_failure_threshold(void **state) {
        PodProbe p = probe(5, 1, 3);
        ProbeState s;
        Clock c = { .now = 100, .started_at = 100, .running = true };
        bool changed;
        int ran = 0, restart_at = -1;

        (void) state;
        probe_state_init(&s, PROBE_LIVENESS, &p);
        /* no container yet: never due */
        assert_false(tick(&s, &c, true, PROBE_RESULT_FAILURE, &changed));
        assert_false(probe_state_set_container(&s, "c1")); /* liveness starts at Success: no change */
        for (c.now = 100; c.now < 120; c.now++) {
                if (tick(&s, &c, true, PROBE_RESULT_FAILURE, &changed))
                        ran++;
                if (changed && restart_at < 0)
                        restart_at = (int) (c.now - c.started_at);
        }
        /* first probe at 5 s, the third failure at 7 s; then on hold */
        assert_int_equal(restart_at, 7);
        assert_int_equal(ran, 3);
        assert_true(s.on_hold);
        assert_int_equal(s.result, PROBE_RESULT_FAILURE);
        /* a new container: back to Success, probed again after its delay */
        c.started_at = c.now;
        assert_true(probe_state_set_container(&s, "c2"));
        assert_int_equal(s.result, PROBE_RESULT_SUCCESS);
        assert_false(s.on_hold);
        assert_false(tick(&s, &c, true, PROBE_RESULT_SUCCESS, &changed));
        c.now += 5;
        assert_true(tick(&s, &c, true, PROBE_RESULT_SUCCESS, &changed));
        assert_false(changed);
}

static void test_failures_must_be_consecutive(void **state) {
        PodProbe p = probe(0, 1, 3);
        ProbeState s;
        bool changed;
        Clock c = { .now = 0, .started_at = 0, .running = true };
        const ProbeResult seq[] = { PROBE_RESULT_FAILURE, PROBE_RESULT_FAILURE, PROBE_RESULT_SUCCESS,
                                    PROBE_RESULT_FAILURE, PROBE_RESULT_FAILURE, PROBE_RESULT_UNKNOWN,
                                    PROBE_RESULT_FAILURE };

        (void) state;
        probe_state_init(&s, PROBE_LIVENESS, &p);
        (void) probe_state_set_container(&s, "c1");
        for (size_t i = 0; i < ELEMENTSOF(seq); i++, c.now++) {
                assert_true(tick(&s, &c, true, seq[i], &changed));
                /* an errored probe (Unknown) is thrown away: the third failure in a row is the last */
                assert_int_equal(changed, i == ELEMENTSOF(seq) - 1);
        }
}

static void test_readiness_success_threshold(void **state) {
        PodProbe p = probe(0, 3, 1);
        ProbeState s;
        bool changed;
        Clock c = { .now = 0, .started_at = 0, .running = true };
        int ready_at = -1;

        (void) state;
        probe_state_init(&s, PROBE_READINESS, &p);
        (void) probe_state_set_container(&s, "c1");
        for (; c.now < 10; c.now++)
                if (tick(&s, &c, true, c.now < 4 ? PROBE_RESULT_FAILURE : PROBE_RESULT_SUCCESS, &changed) && changed &&
                    ready_at < 0)
                        ready_at = (int) c.now;
        /* successes at 4, 5, 6: ready at the third */
        assert_int_equal(ready_at, 6);
        assert_int_equal(s.result, PROBE_RESULT_SUCCESS);
        /* readiness is never on hold: one failure makes it unready */
        assert_true(tick(&s, &c, true, PROBE_RESULT_FAILURE, &changed));
        assert_true(changed);
        assert_false(s.on_hold);
        assert_true(tick(&s, &c, true, PROBE_RESULT_SUCCESS, &changed));
        assert_false(changed); /* one success of three */
}

static void test_startup_gates_the_others(void **state) {
        PodProbe sp = probe(0, 1, 10), lp = probe(0, 1, 1), rp = probe(0, 1, 1);
        ProbeState st, lv, rd;
        Clock c = { .now = 0, .started_at = 0, .running = true };
        bool changed, started;

        (void) state;
        probe_state_init(&st, PROBE_STARTUP, &sp);
        probe_state_init(&lv, PROBE_LIVENESS, &lp);
        probe_state_init(&rd, PROBE_READINESS, &rp);
        (void) probe_state_set_container(&st, "c1");
        (void) probe_state_set_container(&lv, "c1");
        (void) probe_state_set_container(&rd, "c1");
        for (; c.now < 4; c.now++) {
                started = probe_container_started(true, &st);
                assert_false(started);
                assert_false(probe_container_ready(true, started, &rd));
                /* liveness and readiness do not run before the container started */
                assert_false(tick(&lv, &c, started, PROBE_RESULT_FAILURE, &changed));
                assert_false(tick(&rd, &c, started, PROBE_RESULT_SUCCESS, &changed));
                assert_true(tick(&st, &c, started, c.now < 3 ? PROBE_RESULT_FAILURE : PROBE_RESULT_SUCCESS, &changed));
        }
        started = probe_container_started(true, &st);
        assert_true(started);
        /* the startup probe stops, the others start */
        assert_false(tick(&st, &c, started, PROBE_RESULT_FAILURE, &changed));
        assert_true(tick(&rd, &c, started, PROBE_RESULT_SUCCESS, &changed));
        assert_true(probe_container_ready(true, started, &rd));
        assert_true(tick(&lv, &c, started, PROBE_RESULT_FAILURE, &changed));
        assert_true(changed && lv.on_hold);
        /* not running: neither started nor ready */
        assert_false(probe_container_started(false, &st));
        assert_false(probe_container_ready(false, true, NULL));
        assert_true(probe_container_ready(true, true, NULL));
}

static void test_startup_failure_restarts(void **state) {
        PodProbe sp = probe(0, 1, 2);
        ProbeState st;
        Clock c = { .now = 0, .started_at = 0, .running = true };
        bool changed;

        (void) state;
        probe_state_init(&st, PROBE_STARTUP, &sp);
        (void) probe_state_set_container(&st, "c1");
        assert_true(tick(&st, &c, false, PROBE_RESULT_FAILURE, &changed));
        assert_false(changed);
        assert_true(tick(&st, &c, false, PROBE_RESULT_FAILURE, &changed));
        assert_true(changed);
        assert_true(st.on_hold);
        assert_false(probe_container_started(true, &st));
}

static void test_first_delay(void **state) {
        (void) state;
        /* young prober: a random part of the period */
        assert_int_equal(probe_first_delay_usec(10000000, 0, 12345678), 2345678);
        /* older than the period: at once */
        assert_int_equal(probe_first_delay_usec(10000000, 10000000, 12345678), 0);
        assert_int_equal(probe_first_delay_usec(0, 0, 5), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_initial_results),
                cmocka_unit_test(test_initial_delay_and_failure_threshold),
                cmocka_unit_test(test_failures_must_be_consecutive),
                cmocka_unit_test(test_readiness_success_threshold),
                cmocka_unit_test(test_startup_gates_the_others),
                cmocka_unit_test(test_startup_failure_restarts),
                cmocka_unit_test(test_first_delay),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
