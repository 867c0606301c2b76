/* SPDX-License-Identifier: Apache-2.0 */
/* eviction/pace.c: the sample period while the signals hold still or rise,
 * a tenth of it while one falls fast enough to cross its threshold within
 * two periods; never faster once a threshold is met, nor on a rate taken
 * over an interval too short to mean one. */
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
#define MSEC (SEC / 1000)

static void config(EvictConfig *c, const char *signal, const char *value) {
        CubError err = {};

        evict_config_init(c);
        evict_config_set_hard_given(c);
        assert_int_equal(evict_config_add_hard(c, signal, value, &err), 0);
        if (evict_config_finish(c, /* enforce_pods_allocatable= */ false, &err) < 0)
                fail_msg("%s", err.msg);
}

static EvictObservations at(uint64_t t, EvictSignal s, uint64_t available, uint64_t capacity) {
        EvictObservations o = { .time_usec = t };

        o.signals[s] = (EvictSignalObservation){ .present = true, .available = available, .capacity = capacity };
        return o;
}

static void test_steady_and_rising(void **state) {
        EvictConfig c;
        EvictObservations a, b;

        (void) state;
        config(&c, "memory.available", "100Mi");
        /* steady just above the threshold: the period */
        a = at(10 * SEC, EVICT_SIGNAL_MEMORY_AVAILABLE, 101 * MI, 16 * GI);
        b = at(11 * SEC, EVICT_SIGNAL_MEMORY_AVAILABLE, 101 * MI, 16 * GI);
        assert_int_equal(evict_sample_delay_usec(&c, &a, &b, SEC), SEC);
        /* rising */
        b = at(11 * SEC, EVICT_SIGNAL_MEMORY_AVAILABLE, 300 * MI, 16 * GI);
        assert_int_equal(evict_sample_delay_usec(&c, &a, &b, SEC), SEC);
        /* no earlier round */
        assert_int_equal(evict_sample_delay_usec(&c, NULL, &b, SEC), SEC);
        evict_config_done(&c);
}

static void test_falling(void **state) {
        EvictConfig c;
        EvictObservations a, b;

        (void) state;
        config(&c, "memory.available", "100Mi");
        /* 50 MiB a second with 200 MiB to go: four periods away, the period */
        a = at(10 * SEC, EVICT_SIGNAL_MEMORY_AVAILABLE, 350 * MI, 16 * GI);
        b = at(11 * SEC, EVICT_SIGNAL_MEMORY_AVAILABLE, 300 * MI, 16 * GI);
        assert_int_equal(evict_sample_delay_usec(&c, &a, &b, SEC), SEC);
        /* 120 MiB a second with 200 MiB to go: within two periods, a tenth */
        a = at(10 * SEC, EVICT_SIGNAL_MEMORY_AVAILABLE, 420 * MI, 16 * GI);
        assert_int_equal(evict_sample_delay_usec(&c, &a, &b, SEC), 100 * MSEC);
        /* the same rate over a 100 ms interval (fast sampling goes on) */
        a = at(10900 * MSEC, EVICT_SIGNAL_MEMORY_AVAILABLE, 312 * MI, 16 * GI);
        assert_int_equal(evict_sample_delay_usec(&c, &a, &b, SEC), 100 * MSEC);
        /* a round 10 ms after the last (a PSI trigger): no rate */
        a = at(10990 * MSEC, EVICT_SIGNAL_MEMORY_AVAILABLE, 302 * MI, 16 * GI);
        assert_int_equal(evict_sample_delay_usec(&c, &a, &b, SEC), SEC);
        /* met: the period */
        a = at(10 * SEC, EVICT_SIGNAL_MEMORY_AVAILABLE, 300 * MI, 16 * GI);
        b = at(11 * SEC, EVICT_SIGNAL_MEMORY_AVAILABLE, 99 * MI, 16 * GI);
        assert_int_equal(evict_sample_delay_usec(&c, &a, &b, SEC), SEC);
        /* a signal without a threshold falls: the period */
        a = at(10 * SEC, EVICT_SIGNAL_NODEFS_AVAILABLE, 2 * GI, 16 * GI);
        b = at(11 * SEC, EVICT_SIGNAL_NODEFS_AVAILABLE, 1 * GI, 16 * GI);
        assert_int_equal(evict_sample_delay_usec(&c, &a, &b, SEC), SEC);
        evict_config_done(&c);
}

static void test_percent(void **state) {
        EvictConfig c;
        EvictObservations a, b;

        (void) state;
        config(&c, "nodefs.available", "10%"); /* 1 GiB of 10 */
        a = at(10 * SEC, EVICT_SIGNAL_NODEFS_AVAILABLE, 2 * GI, 10 * GI);
        b = at(11 * SEC, EVICT_SIGNAL_NODEFS_AVAILABLE, 1536 * MI, 10 * GI); /* 512 MiB/s, 512 MiB to go */
        assert_int_equal(evict_sample_delay_usec(&c, &a, &b, SEC), 100 * MSEC);
        evict_config_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_steady_and_rising),
                cmocka_unit_test(test_falling),
                cmocka_unit_test(test_percent),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
