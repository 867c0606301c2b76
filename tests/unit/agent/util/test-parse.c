/* SPDX-License-Identifier: Apache-2.0 */
/* agent/util/parse.c: whole-string, range-checked integer parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/util/parse.h"

#define I64_SENTINEL ((int64_t) 0x5a5a5a5a5a5a5a5a)
#define U64_SENTINEL ((uint64_t) 0xa5a5a5a5a5a5a5a5u)
#define I32_SENTINEL ((int32_t) 0x5a5a5a5a)

static void i64_ok(const char *s, int64_t want) {
        int64_t v = I64_SENTINEL;

        assert_int_equal(cub_safe_atoi64(s, &v), 0);
        assert_true(v == want);
}

static void i64_fail(const char *s, int r) {
        int64_t v = I64_SENTINEL;

        assert_int_equal(cub_safe_atoi64(s, &v), r);
        assert_true(v == I64_SENTINEL); /* untouched on failure */
}

static void u64_ok(const char *s, uint64_t want) {
        uint64_t v = U64_SENTINEL;

        assert_int_equal(cub_safe_atou64(s, &v), 0);
        assert_true(v == want);
}

static void u64_fail(const char *s, int r) {
        uint64_t v = U64_SENTINEL;

        assert_int_equal(cub_safe_atou64(s, &v), r);
        assert_true(v == U64_SENTINEL);
}

static void i32_ok(const char *s, int32_t want) {
        int32_t v = I32_SENTINEL;

        assert_int_equal(cub_safe_atoi32(s, &v), 0);
        assert_int_equal(v, want);
}

static void i32_fail(const char *s, int r) {
        int32_t v = I32_SENTINEL;

        assert_int_equal(cub_safe_atoi32(s, &v), r);
        assert_int_equal(v, I32_SENTINEL);
}

static void test_atoi64_plain(void **state) {
        (void) state;
        i64_ok("0", 0);
        i64_ok("1", 1);
        i64_ok("42", 42);
        i64_ok("007", 7);
        i64_ok("-17", -17);
}

static void test_atoi64_sign(void **state) {
        (void) state;
        i64_ok("+5", 5);
        i64_ok("-0", 0);
        i64_ok("+0", 0);
        i64_fail("-", -EINVAL);
        i64_fail("+", -EINVAL);
        i64_fail("--1", -EINVAL);
        i64_fail("+-1", -EINVAL);
}

static void test_atoi64_limits(void **state) {
        (void) state;
        i64_ok("9223372036854775807", INT64_MAX);
        i64_ok("-9223372036854775808", INT64_MIN);
}

static void test_atoi64_overflow(void **state) {
        (void) state;
        i64_fail("9223372036854775808", -ERANGE);
        i64_fail("-9223372036854775809", -ERANGE);
        i64_fail("99999999999999999999999", -ERANGE);
}

static void test_atoi64_empty_and_null(void **state) {
        int64_t v = I64_SENTINEL;

        (void) state;
        i64_fail("", -EINVAL);
        assert_int_equal(cub_safe_atoi64(NULL, &v), -EINVAL);
        assert_true(v == I64_SENTINEL);
}

static void test_atoi64_spaces(void **state) {
        (void) state;
        i64_fail(" 1", -EINVAL);
        i64_fail("\t1", -EINVAL);
        i64_fail("\n1", -EINVAL);
        i64_fail("1 ", -EINVAL);
        i64_fail("1\n", -EINVAL);
        i64_fail("- 1", -EINVAL);
        i64_fail(" ", -EINVAL);
}

static void test_atoi64_trailing_garbage(void **state) {
        (void) state;
        i64_fail("12abc", -EINVAL);
        i64_fail("1.5", -EINVAL);
        i64_fail("1e3", -EINVAL);
        i64_fail("0x10", -EINVAL);
        i64_fail("abc", -EINVAL);
        i64_fail("1,000", -EINVAL);
}

static void test_atou64_plain(void **state) {
        (void) state;
        u64_ok("0", 0);
        u64_ok("123", 123);
        u64_ok("18446744073709551615", UINT64_MAX);
}

static void test_atou64_rejects_signs(void **state) {
        (void) state;
        /* strtoull would silently wrap "-1" to UINT64_MAX */
        u64_fail("-1", -EINVAL);
        u64_fail("-0", -EINVAL);
        u64_fail("+1", -EINVAL);
}

static void test_atou64_overflow(void **state) {
        (void) state;
        u64_fail("18446744073709551616", -ERANGE);
        u64_fail("100000000000000000000", -ERANGE);
}

static void test_atou64_garbage(void **state) {
        uint64_t v = U64_SENTINEL;

        (void) state;
        u64_fail("", -EINVAL);
        u64_fail(" 1", -EINVAL);
        u64_fail("1 ", -EINVAL);
        u64_fail("1k", -EINVAL);
        assert_int_equal(cub_safe_atou64(NULL, &v), -EINVAL);
}

static void test_atoi32_plain(void **state) {
        (void) state;
        i32_ok("0", 0);
        i32_ok("-1", -1);
        i32_ok("+100", 100);
        i32_ok("2147483647", INT32_MAX);
        i32_ok("-2147483648", INT32_MIN);
}

static void test_atoi32_range(void **state) {
        (void) state;
        i32_fail("2147483648", -ERANGE);
        i32_fail("-2147483649", -ERANGE);
        i32_fail("9223372036854775807", -ERANGE);
        i32_fail("9223372036854775808", -ERANGE);
}

static void test_atoi32_garbage(void **state) {
        (void) state;
        i32_fail("", -EINVAL);
        i32_fail(" 7", -EINVAL);
        i32_fail("7x", -EINVAL);
        i32_fail("-", -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_atoi64_plain),
                cmocka_unit_test(test_atoi64_sign),
                cmocka_unit_test(test_atoi64_limits),
                cmocka_unit_test(test_atoi64_overflow),
                cmocka_unit_test(test_atoi64_empty_and_null),
                cmocka_unit_test(test_atoi64_spaces),
                cmocka_unit_test(test_atoi64_trailing_garbage),
                cmocka_unit_test(test_atou64_plain),
                cmocka_unit_test(test_atou64_rejects_signs),
                cmocka_unit_test(test_atou64_overflow),
                cmocka_unit_test(test_atou64_garbage),
                cmocka_unit_test(test_atoi32_plain),
                cmocka_unit_test(test_atoi32_range),
                cmocka_unit_test(test_atoi32_garbage),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
