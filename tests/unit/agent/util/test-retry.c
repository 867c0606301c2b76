/* SPDX-License-Identifier: Apache-2.0 */
/* agent/util/retry.c: the one retry policy (delays, jitter, the journal's
 * one line per distinct error). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>

#include "agent/util/log.h"
#include "agent/util/retry.h"
#include "agent/util/time.h"

#define SEC CUB_USEC_PER_SEC
#define MID UINT32_C(0x80000000) /* the draw with no jitter */

static void test_pod_worker_delays(void **state) {
        static const uint64_t want[] = { 10, 20, 40, 80, 160, 300, 300, 300 };

        (void) state;
        for (unsigned n = 1; n <= 8; n++)
                assert_int_equal(cub_retry_delay(&cub_retry_pod_worker, n, MID), want[n - 1] * SEC);
        /* no overflow however long it fails */
        assert_int_equal(cub_retry_delay(&cub_retry_pod_worker, UINT32_MAX, MID), 300 * SEC);
}

static void test_jitter_bounds(void **state) {
        (void) state;
        /* ±50 %: 5 s to 15 s around 10 s, 150 s to 450 s around the cap */
        assert_int_equal(cub_retry_delay(&cub_retry_pod_worker, 1, 0), 5 * SEC);
        assert_true(cub_retry_delay(&cub_retry_pod_worker, 1, UINT32_MAX) < 15 * SEC);
        assert_true(cub_retry_delay(&cub_retry_pod_worker, 1, UINT32_MAX) > 15 * SEC - 10);
        assert_int_equal(cub_retry_delay(&cub_retry_pod_worker, 9, 0), 150 * SEC);
        assert_true(cub_retry_delay(&cub_retry_pod_worker, 9, UINT32_MAX) < 450 * SEC);
        /* the sync policy: 10 s, neither doubled nor spread */
        for (unsigned n = 1; n < 5; n++) {
                assert_int_equal(cub_retry_delay(&cub_retry_pod_sync, n, 0), 10 * SEC);
                assert_int_equal(cub_retry_delay(&cub_retry_pod_sync, n, UINT32_MAX), 10 * SEC);
        }
}

static void test_failed_and_succeeded(void **state) {
        CubRetry r = {};

        (void) state;
        assert_true(cub_retry_due(&r, 0));
        /* the first failure is news, the same one again is not, another one is */
        assert_true(cub_retry_failed(&r, &cub_retry_pod_worker, 100 * SEC, "StopPodSandbox: no CNI", MID));
        assert_int_equal(r.failures, 1);
        assert_int_equal(r.next_usec, 110 * SEC);
        assert_int_equal(r.first_failure_usec, 100 * SEC);
        assert_false(cub_retry_due(&r, 110 * SEC - 1));
        assert_true(cub_retry_due(&r, 110 * SEC));
        assert_false(cub_retry_failed(&r, &cub_retry_pod_worker, 110 * SEC, "StopPodSandbox: no CNI", MID));
        assert_int_equal(r.next_usec, 130 * SEC);
        assert_true(cub_retry_failed(&r, &cub_retry_pod_worker, 130 * SEC, "runtime is down", MID));
        assert_string_equal(r.error, "runtime is down");
        assert_int_equal(r.failures, 3);
        assert_int_equal(r.first_failure_usec, 100 * SEC);
        /* success clears it, and says it ended a run of failures once */
        assert_true(cub_retry_succeeded(&r));
        assert_int_equal(r.failures, 0);
        assert_string_equal(r.error, "");
        assert_true(cub_retry_due(&r, 0));
        assert_false(cub_retry_succeeded(&r));
        /* a NULL error is an empty one */
        assert_true(cub_retry_failed(&r, &cub_retry_pod_sync, 5 * SEC, NULL, 0));
        assert_string_equal(r.error, "");
        assert_int_equal(r.next_usec, 15 * SEC);
}

static void test_draw(void **state) {
        uint32_t a = cub_retry_draw(), b = cub_retry_draw(), c = cub_retry_draw();

        (void) state;
        assert_false(a == b && b == c);
}

/* cub_log_changed: a task failing the same way logs once; another error
 * logs again; success clears (and logs once) */
static void test_log_changed(void **state) {
        char last[CUB_ERR_MSG_MAX] = "";
        CubError a = {}, b = {};

        (void) state;
        (void) cub_err_set(&a, EIO, "ListContainers: UNAVAILABLE");
        (void) cub_err_set(&b, ENOSPC, "write: No space left on device");
        assert_true(cub_log_changed(LOG_WARNING, -EIO, &a, last, "rotation"));
        assert_string_equal(last, "ListContainers: UNAVAILABLE");
        assert_true(cub_log_changed(LOG_WARNING, -EIO, &a, last, "rotation"));
        assert_true(cub_log_changed(LOG_WARNING, -ENOSPC, &b, last, "rotation"));
        assert_string_equal(last, "write: No space left on device");
        assert_false(cub_log_changed(LOG_WARNING, 0, NULL, last, "rotation"));
        assert_string_equal(last, "");
        /* no message: the errno's text */
        assert_true(cub_log_changed(LOG_WARNING, -ENOENT, NULL, last, "rotation"));
        assert_string_equal(last, "No such file or directory");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pod_worker_delays),
                cmocka_unit_test(test_jitter_bounds),
                cmocka_unit_test(test_failed_and_succeeded),
                cmocka_unit_test(test_log_changed),
                cmocka_unit_test(test_draw),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
