/* SPDX-License-Identifier: Apache-2.0 */
/* agent/util/time.h: the time units and cub_now_usec(). */
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_units),
                cmocka_unit_test(test_timespec_usec),
                cmocka_unit_test(test_now_is_monotonic),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
