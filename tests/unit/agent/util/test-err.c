/* SPDX-License-Identifier: Apache-2.0 */
/* agent/util/err.c: the CubError contract. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/util/err.h"

static void test_set_fills_code_and_message(void **state) {
        CubError err = {};

        (void) state;
        assert_int_equal(cub_err_set(&err, EINVAL, "field '%s': bad value %d", "cpu", 42), -EINVAL);
        assert_int_equal(err.code, EINVAL);
        assert_string_equal(err.msg, "field 'cpu': bad value 42");
}

static void test_set_negative_errno_is_normalized(void **state) {
        CubError err = {};

        (void) state;
        assert_int_equal(cub_err_set(&err, -ENOENT, "gone"), -ENOENT);
        assert_int_equal(err.code, ENOENT);
        assert_string_equal(err.msg, "gone");
}

static void test_set_zero_errno_becomes_eio(void **state) {
        CubError err = {};

        (void) state;
        assert_int_equal(cub_err_set(&err, 0, "no errno"), -EIO);
        assert_int_equal(err.code, EIO);
        assert_string_equal(err.msg, "no errno");
}

static void test_set_null_err_only_returns(void **state) {
        (void) state;
        assert_int_equal(cub_err_set(NULL, EACCES, "ignored %s", "x"), -EACCES);
        assert_int_equal(cub_err_set(NULL, -EPERM, "ignored"), -EPERM);
        assert_int_equal(cub_err_set(NULL, 0, "ignored"), -EIO);
}

static void test_set_overwrites_previous(void **state) {
        CubError err = {};

        (void) state;
        (void) cub_err_set(&err, EINVAL, "first and long message");
        assert_int_equal(cub_err_set(&err, ERANGE, "second"), -ERANGE);
        assert_int_equal(err.code, ERANGE);
        assert_string_equal(err.msg, "second");
}

static void test_set_truncates_long_message(void **state) {
        CubError err = {};
        char big[2 * CUB_ERR_MSG_MAX];

        (void) state;
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        assert_int_equal(cub_err_set(&err, E2BIG, "%s", big), -E2BIG);
        assert_int_equal(strlen(err.msg), CUB_ERR_MSG_MAX - 1);
        assert_int_equal(err.msg[CUB_ERR_MSG_MAX - 2], 'a');
}

static void test_wrap_prepends_context(void **state) {
        CubError err = {};

        (void) state;
        (void) cub_err_set(&err, EACCES, "write 'memory.max': Permission denied");
        assert_int_equal(cub_err_wrap(&err, "cgroup %s", "kubepods/podx"), -EACCES);
        assert_int_equal(cub_err_wrap(&err, "pod %s/%s", "default", "web"), -EACCES);
        assert_int_equal(err.code, EACCES);
        assert_string_equal(err.msg, "pod default/web: cgroup kubepods/podx: write 'memory.max': Permission denied");
}

static void test_wrap_without_code_becomes_eio(void **state) {
        CubError err = {};

        (void) state;
        assert_int_equal(cub_err_wrap(&err, "context"), -EIO);
        assert_int_equal(err.code, EIO);
        assert_string_equal(err.msg, "context: ");
}

static void test_wrap_null_err(void **state) {
        (void) state;
        assert_int_equal(cub_err_wrap(NULL, "context %d", 1), -EIO);
}

static void test_wrap_errno_returns_callers_code(void **state) {
        CubError err = {};

        (void) state;
        (void) cub_err_set(&err, EACCES, "write 'memory.max': Permission denied");
        assert_int_equal(cub_err_wrap_errno(&err, -EACCES, "cgroup %s", "kubepods/podx"), -EACCES);
        assert_int_equal(err.code, EACCES);
        assert_string_equal(err.msg, "cgroup kubepods/podx: write 'memory.max': Permission denied");
}

static void test_wrap_errno_null_err_keeps_errno(void **state) {
        (void) state;
        assert_int_equal(cub_err_wrap_errno(NULL, -ENOENT, "context %d", 1), -ENOENT);
        assert_int_equal(cub_err_wrap_errno(NULL, EPERM, "context"), -EPERM);
        assert_int_equal(cub_err_wrap_errno(NULL, 0, "context"), -EIO);
}

static void test_wrap_errno_overrides_stale_code(void **state) {
        CubError err = {};

        (void) state;
        /* a callee that returned -ENOENT without filling err: its code wins */
        (void) cub_err_set(&err, EINVAL, "old");
        assert_int_equal(cub_err_wrap_errno(&err, -ENOENT, "ctx"), -ENOENT);
        assert_int_equal(err.code, ENOENT);
        assert_string_equal(err.msg, "ctx: old");
}

static void test_wrap_errno_truncation_is_marked(void **state) {
        CubError err = {};
        char big[CUB_ERR_MSG_MAX];

        (void) state;
        memset(big, 'b', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        (void) cub_err_set(&err, ENOSPC, "%s", big);
        assert_int_equal(cub_err_wrap_errno(&err, ENOSPC, "prefix"), -ENOSPC);
        assert_int_equal(strlen(err.msg), CUB_ERR_MSG_MAX - 1);
        assert_string_equal(err.msg + CUB_ERR_MSG_MAX - 4, "...");
}

static void test_wrap_does_not_reinterpret_old_message(void **state) {
        CubError err = {};

        (void) state;
        (void) cub_err_set(&err, EINVAL, "%s", "100%s %d %n");
        assert_int_equal(cub_err_wrap(&err, "ctx"), -EINVAL);
        assert_string_equal(err.msg, "ctx: 100%s %d %n");
}

static void test_wrap_truncation_is_marked(void **state) {
        CubError err = {};
        char big[CUB_ERR_MSG_MAX];

        (void) state;
        memset(big, 'b', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        (void) cub_err_set(&err, ENOSPC, "%s", big);
        assert_int_equal(strlen(err.msg), CUB_ERR_MSG_MAX - 1);
        assert_int_equal(cub_err_wrap(&err, "prefix"), -ENOSPC);
        assert_int_equal(strlen(err.msg), CUB_ERR_MSG_MAX - 1);
        assert_memory_equal(err.msg, "prefix: bbb", 11);
        assert_string_equal(err.msg + CUB_ERR_MSG_MAX - 4, "...");
        assert_int_equal(err.msg[CUB_ERR_MSG_MAX - 5], 'b');
}

static void test_wrap_exact_fit_is_not_marked(void **state) {
        CubError err = {};
        char msg[CUB_ERR_MSG_MAX];
        size_t n = CUB_ERR_MSG_MAX - 1 - strlen("p: ");

        (void) state;
        memset(msg, 'c', n);
        msg[n] = '\0';
        (void) cub_err_set(&err, EINVAL, "%s", msg);
        (void) cub_err_wrap(&err, "p");
        assert_int_equal(strlen(err.msg), CUB_ERR_MSG_MAX - 1);
        assert_int_equal(err.msg[CUB_ERR_MSG_MAX - 2], 'c');
}

static void test_clear(void **state) {
        CubError err = {};

        (void) state;
        (void) cub_err_set(&err, EINVAL, "something");
        cub_err_clear(&err);
        assert_int_equal(err.code, 0);
        assert_string_equal(err.msg, "");
        cub_err_clear(NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_set_fills_code_and_message),
                cmocka_unit_test(test_set_negative_errno_is_normalized),
                cmocka_unit_test(test_set_zero_errno_becomes_eio),
                cmocka_unit_test(test_set_null_err_only_returns),
                cmocka_unit_test(test_set_overwrites_previous),
                cmocka_unit_test(test_set_truncates_long_message),
                cmocka_unit_test(test_wrap_prepends_context),
                cmocka_unit_test(test_wrap_without_code_becomes_eio),
                cmocka_unit_test(test_wrap_null_err),
                cmocka_unit_test(test_wrap_errno_returns_callers_code),
                cmocka_unit_test(test_wrap_errno_null_err_keeps_errno),
                cmocka_unit_test(test_wrap_errno_overrides_stale_code),
                cmocka_unit_test(test_wrap_errno_truncation_is_marked),
                cmocka_unit_test(test_wrap_does_not_reinterpret_old_message),
                cmocka_unit_test(test_wrap_truncation_is_marked),
                cmocka_unit_test(test_wrap_exact_fit_is_not_marked),
                cmocka_unit_test(test_clear),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
