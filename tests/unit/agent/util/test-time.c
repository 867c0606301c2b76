/* SPDX-License-Identifier: Apache-2.0 */
/* agent/util/time.h: the time units, cub_now_usec() and the kept wall offset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "agent/util/time.h"

static void test_units(void **state) {
        (void) state;
        assert_int_equal(CUB_USEC_PER_SEC, 1000000);
        assert_int_equal(CUB_USEC_PER_MSEC * CUB_MSEC_PER_SEC, CUB_USEC_PER_SEC);
        assert_int_equal(CUB_NSEC_PER_USEC * CUB_USEC_PER_SEC, CUB_NSEC_PER_SEC);
        assert_int_equal(CUB_NSEC_PER_MSEC * CUB_MSEC_PER_SEC, CUB_NSEC_PER_SEC);
}

static void test_timespec_usec(void **state) {
        struct timespec ts = { .tv_sec = 3, .tv_nsec = 999999999 };

        (void) state;
        assert_int_equal(cub_timespec_usec(&ts), UINT64_C(3999999));
        ts = (struct timespec){ .tv_sec = 0, .tv_nsec = 999 };
        assert_int_equal(cub_timespec_usec(&ts), 0);
        ts = (struct timespec){ .tv_sec = -1, .tv_nsec = 0 };
        assert_int_equal(cub_timespec_usec(&ts), 0);
}

static void test_now_is_monotonic(void **state) {
        uint64_t a, b;

        (void) state;
        a = cub_now_usec(CLOCK_MONOTONIC);
        b = cub_now_usec(CLOCK_MONOTONIC);
        assert_true(a > 0);
        assert_true(b >= a);
        /* the realtime clock is past 2020-01-01 */
        assert_true(cub_now_usec(CLOCK_REALTIME) > UINT64_C(1577836800) * CUB_USEC_PER_SEC);
        /* an invalid clock reads as 0 */
        assert_int_equal(cub_now_usec((clockid_t) -1000), 0);
}

static void test_wall_offset_kept(void **state) {
        int64_t cache = 0, a, b;

        (void) state;
        /* the first reading is kept through jitter under a second */
        assert_int_equal(cub_wall_offset_keep(&cache, 5000000), 5000000);
        assert_int_equal(cub_wall_offset_keep(&cache, 5999999), 5000000);
        assert_int_equal(cub_wall_offset_keep(&cache, 4000001), 5000000);
        /* a step of the wall clock (over a second) is taken */
        assert_int_equal(cub_wall_offset_keep(&cache, 6000001), 6000001);
        assert_int_equal(cub_wall_offset_keep(&cache, 3000000), 3000000);
        /* the real clocks: two readings give the very same offset */
        cache = 0;
        a = cub_wall_minus_mono_usec(&cache);
        b = cub_wall_minus_mono_usec(&cache);
        assert_true(a != 0);
        assert_int_equal(a, b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_units),
                cmocka_unit_test(test_timespec_usec),
                cmocka_unit_test(test_now_is_monotonic),
                cmocka_unit_test(test_wall_offset_kept),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
