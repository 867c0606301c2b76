/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/quantity.c: the resource.Quantity grammar (shared/kubelet-facts.md
 * "Quantities"), MilliValue()/Value(), arithmetic and canonical text. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"

/* Macros, so that a failure names the line of the vector. */
#define Q_OK(s, u, m)                                                                                         \
        do {                                                                                                  \
                CubQuantity q_ = { .units = -7, .milli = 7 };                                                 \
                CubError e_ = {};                                                                             \
                int r_ = cub_quantity_parse((s), &q_, &e_);                                                   \
                if (r_ < 0)                                                                                   \
                        fail_msg("parsing \"%s\" failed: %s", (s), e_.msg);                                   \
                if (q_.units != (int64_t) (u) || q_.milli != (m))                                             \
                        fail_msg("\"%s\": got units=%lld milli=%u, want units=%lld milli=%u", (s),            \
                                 (long long) q_.units, (unsigned) q_.milli, (long long) (u), (unsigned) (m)); \
        } while (0)

#define Q_ERR(s, ecode, text)                                                                                    \
        do {                                                                                                     \
                CubQuantity q_ = { .units = 11, .milli = 22 };                                                   \
                CubError e_ = {};                                                                                \
                int r_ = cub_quantity_parse((s), &q_, &e_);                                                      \
                if (r_ >= 0)                                                                                     \
                        fail_msg("\"%s\" parsed unexpectedly to units=%lld milli=%u", (s), (long long) q_.units, \
                                 (unsigned) q_.milli);                                                           \
                assert_int_equal(r_, -(ecode));                                                                  \
                assert_int_equal(e_.code, (ecode));                                                              \
                assert_string_equal(e_.msg, (text));                                                             \
                assert_true(q_.units == 11 && q_.milli == 22); /* untouched */                                   \
        } while (0)

static CubQuantity q(const char *s) {
        CubQuantity r = {};
        CubError err = {};

        if (cub_quantity_parse(s, &r, &err) < 0)
                fail_msg("parsing \"%s\" failed: %s", s, err.msg);
        return r;
}

static const char *fmt(const char *s, bool is_cpu, char buf[static CUB_QUANTITY_STR_MAX]) {
        return cub_quantity_format(q(s), is_cpu, buf);
}

/* ---- the grammar -------------------------------------------------------- */

static void test_plain_integers(void **state) {
        (void) state;
        Q_OK("0", 0, 0);
        Q_OK("1", 1, 0);
        Q_OK("42", 42, 0);
        Q_OK("000", 0, 0);
        Q_OK("007", 7, 0);
        Q_OK("1073741824", 1073741824, 0);
}

static void test_decimal_small_suffixes(void **state) {
        (void) state;
        /* n, u, m: values keep milli precision, rounded up */
        Q_OK("1n", 0, 1);
        Q_OK("0n", 0, 0);
        Q_OK("1000000n", 0, 1);
        Q_OK("1000001n", 0, 2);
        Q_OK("1500000n", 0, 2);
        Q_OK("2000000000n", 2, 0);
        Q_OK("1u", 0, 1);
        Q_OK("1000u", 0, 1);
        Q_OK("2500u", 0, 3);
        Q_OK("1000000u", 1, 0);
        Q_OK("1m", 0, 1);
        Q_OK("250m", 0, 250);
        Q_OK("1000m", 1, 0);
        Q_OK("1500m", 1, 500);
        Q_OK("0m", 0, 0);
}

static void test_decimal_large_suffixes(void **state) {
        (void) state;
        Q_OK("1k", 1000, 0);
        Q_OK("1M", 1000000, 0);
        Q_OK("1G", 1000000000, 0);
        Q_OK("1T", 1000000000000LL, 0);
        Q_OK("1P", 1000000000000000LL, 0);
        Q_OK("1E", 1000000000000000000LL, 0);
        Q_OK("9E", 9000000000000000000LL, 0);
        Q_OK("128M", 128000000, 0);
}

static void test_binary_suffixes(void **state) {
        (void) state;
        Q_OK("1Ki", 1024, 0);
        Q_OK("1Mi", 1048576, 0);
        Q_OK("1Gi", 1073741824, 0);
        Q_OK("1Ti", 1099511627776LL, 0);
        Q_OK("1Pi", 1125899906842624LL, 0);
        Q_OK("1Ei", 1152921504606846976LL, 0);
        Q_OK("7Ei", 8070450532247928832LL, 0);
        Q_OK("256Mi", 268435456, 0);
        Q_OK("0Ki", 0, 0);
}

static void test_binary_fractions(void **state) {
        (void) state;
        Q_OK("1.5Gi", 1610612736, 0);
        Q_OK("0.5Ki", 512, 0);
        Q_OK("1.5Ki", 1536, 0);
        Q_OK("0.1Ki", 102, 400);
        Q_OK("0.001Ki", 1, 24);
        Q_OK("0.5Mi", 524288, 0);
}

static void test_exponents(void **state) {
        (void) state;
        Q_OK("1e3", 1000, 0);
        Q_OK("1E3", 1000, 0);
        Q_OK("1e+3", 1000, 0);
        Q_OK("1e0", 1, 0);
        Q_OK("2E-1", 0, 200);
        Q_OK("2e-1", 0, 200);
        Q_OK("1.5e3", 1500, 0);
        Q_OK("12e-3", 0, 12);
        Q_OK("5e-4", 0, 1);
        Q_OK("1e-9", 0, 1);
        Q_OK("2e9", 2000000000, 0);
        Q_OK("1e18", 1000000000000000000LL, 0);
        Q_OK("0e9", 0, 0);
        Q_OK("1e06", 1000000, 0);
        Q_OK("1e-1000", 0, 1);
}

static void test_capital_e_alone_is_exa(void **state) {
        (void) state;
        /* "1E" is the exa suffix, not an exponent without digits */
        Q_OK("1E", 1000000000000000000LL, 0);
        Q_OK("2E", 2000000000000000000LL, 0);
        Q_OK("0.5E", 500000000000000000LL, 0);
}

static void test_fractions_round_up_to_milli(void **state) {
        (void) state;
        Q_OK("0.0001", 0, 1);
        Q_OK("0.001", 0, 1);
        Q_OK("0.0011", 0, 2);
        Q_OK("0.1", 0, 100);
        Q_OK("0.5", 0, 500);
        Q_OK("1.5", 1, 500);
        Q_OK("2.25", 2, 250);
        Q_OK("0.000000000000000000000000000000000000000000001", 0, 1);
        Q_OK("0.0000", 0, 0);
}

static void test_leading_and_trailing_dot(void **state) {
        (void) state;
        Q_OK("1.", 1, 0);
        Q_OK(".5", 0, 500);
        Q_OK("1.G", 1000000000, 0);
        Q_OK(".5Gi", 536870912, 0);
        Q_OK("+.5", 0, 500);
}

static void test_signs(void **state) {
        (void) state;
        Q_OK("+1", 1, 0);
        Q_OK("+250m", 0, 250);
        Q_OK("-0", 0, 0);
        Q_OK("-0.0", 0, 0);
        Q_OK("-0Mi", 0, 0);
        Q_OK("+0", 0, 0);
}

static void test_negative_is_erange(void **state) {
        (void) state;
        Q_ERR("-1", ERANGE, "invalid quantity \"-1\": must be greater than or equal to 0");
        Q_ERR("-1m", ERANGE, "invalid quantity \"-1m\": must be greater than or equal to 0");
        Q_ERR("-0.0001", ERANGE, "invalid quantity \"-0.0001\": must be greater than or equal to 0");
        Q_ERR("-1Gi", ERANGE, "invalid quantity \"-1Gi\": must be greater than or equal to 0");
        Q_ERR("-1n", ERANGE, "invalid quantity \"-1n\": must be greater than or equal to 0");
}

static void test_empty(void **state) {
        CubQuantity r = { .units = 3 };
        CubError err = {};

        (void) state;
        Q_ERR("", EINVAL, "invalid quantity \"\": empty string");
        assert_int_equal(cub_quantity_parse(NULL, &r, &err), -EINVAL);
        assert_string_equal(err.msg, "invalid quantity \"\": empty string");
        assert_int_equal(r.units, 3);
}

static void test_garbage_suffixes(void **state) {
        (void) state;
        Q_ERR("12XB", EINVAL, "invalid quantity \"12XB\": unknown suffix \"XB\"");
        Q_ERR("1e", EINVAL, "invalid quantity \"1e\": unknown suffix \"e\"");
        Q_ERR("1e+", EINVAL, "invalid quantity \"1e+\": unknown suffix \"e+\"");
        Q_ERR("1e-", EINVAL, "invalid quantity \"1e-\": unknown suffix \"e-\"");
        Q_ERR("1e1.5", EINVAL, "invalid quantity \"1e1.5\": unknown suffix \"e1.5\"");
        Q_ERR("1K", EINVAL, "invalid quantity \"1K\": unknown suffix \"K\"");
        Q_ERR("1ki", EINVAL, "invalid quantity \"1ki\": unknown suffix \"ki\"");
        Q_ERR("1KiB", EINVAL, "invalid quantity \"1KiB\": unknown suffix \"KiB\"");
        Q_ERR("0.1mi", EINVAL, "invalid quantity \"0.1mi\": unknown suffix \"mi\"");
        Q_ERR("1i", EINVAL, "invalid quantity \"1i\": unknown suffix \"i\"");
        Q_ERR("1Z", EINVAL, "invalid quantity \"1Z\": unknown suffix \"Z\"");
        Q_ERR("0x10", EINVAL, "invalid quantity \"0x10\": unknown suffix \"x10\"");
        Q_ERR("1,5", EINVAL, "invalid quantity \"1,5\": unknown suffix \",5\"");
        Q_ERR("1e3k", EINVAL, "invalid quantity \"1e3k\": unknown suffix \"e3k\"");
}

static void test_garbage_numbers(void **state) {
        (void) state;
        Q_ERR("1.5.5", EINVAL, "invalid quantity \"1.5.5\": more than one '.'");
        Q_ERR("1..5", EINVAL, "invalid quantity \"1..5\": more than one '.'");
        Q_ERR("Mi", EINVAL, "invalid quantity \"Mi\": no number before the suffix");
        Q_ERR("e3", EINVAL, "invalid quantity \"e3\": no number before the suffix");
        Q_ERR(".", EINVAL, "invalid quantity \".\": no number before the suffix");
        Q_ERR("+", EINVAL, "invalid quantity \"+\": no number before the suffix");
        Q_ERR("-", EINVAL, "invalid quantity \"-\": no number before the suffix");
        Q_ERR("--1", EINVAL, "invalid quantity \"--1\": no number before the suffix");
        Q_ERR("+-1", EINVAL, "invalid quantity \"+-1\": no number before the suffix");
        Q_ERR("aoeu", EINVAL, "invalid quantity \"aoeu\": no number before the suffix");
}

static void test_whitespace_is_rejected(void **state) {
        (void) state;
        Q_ERR(" 1", EINVAL, "invalid quantity \" 1\": no number before the suffix");
        Q_ERR("1 ", EINVAL, "invalid quantity \"1 \": unknown suffix \" \"");
        Q_ERR("1 Gi", EINVAL, "invalid quantity \"1 Gi\": unknown suffix \" Gi\"");
}

static void test_too_large(void **state) {
        (void) state;
        Q_OK("9223372036854775807", INT64_MAX, 0);
        Q_OK("9223372036854775807.5", INT64_MAX, 500);
        Q_ERR("9223372036854775808", ERANGE, "invalid quantity \"9223372036854775808\": value is too large");
        Q_ERR("8Ei", ERANGE, "invalid quantity \"8Ei\": value is too large");
        Q_ERR("10E", ERANGE, "invalid quantity \"10E\": value is too large");
        Q_ERR("1e19", ERANGE, "invalid quantity \"1e19\": value is too large");
        Q_ERR("1e400", ERANGE, "invalid quantity \"1e400\": value is too large");
        Q_ERR("-1e30", ERANGE, "invalid quantity \"-1e30\": value is too large");
        Q_ERR("1e100000", ERANGE, "invalid quantity \"1e100000\": exponent out of range");
        Q_ERR("1234567890123456789012345678901234567", ERANGE,
              "invalid quantity \"1234567890123456789012345678901234567\": too many digits");
}

/* ---- MilliValue / Value ------------------------------------------------- */

static void test_milli_value(void **state) {
        (void) state;
        assert_int_equal(cub_quantity_milli(q("0.0001")), 1);
        assert_int_equal(cub_quantity_milli(q("250m")), 250);
        assert_int_equal(cub_quantity_milli(q("1")), 1000);
        assert_int_equal(cub_quantity_milli(q("1.5")), 1500);
        assert_int_equal(cub_quantity_milli(q("300")), 300000);
        assert_int_equal(cub_quantity_milli(q("1k")), 1000000);
        assert_int_equal(cub_quantity_milli(q("0")), 0);
}

static void test_milli_value_saturates(void **state) {
        (void) state;
        assert_true(cub_quantity_milli((CubQuantity){ .units = INT64_MAX }) == INT64_MAX);
        assert_true(cub_quantity_milli((CubQuantity){ .units = INT64_MAX / 1000 + 1 }) == INT64_MAX);
        /* the largest exact values still fit: 9223372036854775807m */
        assert_true(cub_quantity_milli((CubQuantity){ .units = INT64_MAX / 1000, .milli = 807 }) == INT64_MAX);
}

static void test_milli_value_exact_near_limit(void **state) {
        (void) state;
        /* MilliValue() of 9223372036854775 is 9223372036854775000, which fits
         * in int64; it must not saturate. */
        assert_true(cub_quantity_milli(q("9223372036854775")) == 9223372036854775000LL);
        assert_true(cub_quantity_milli(q("9223372036854775806m")) == 9223372036854775806LL);
}

static void test_value_rounds_up(void **state) {
        (void) state;
        assert_int_equal(cub_quantity_value(q("100m")), 1);
        assert_int_equal(cub_quantity_value(q("1001m")), 2);
        assert_int_equal(cub_quantity_value(q("1")), 1);
        assert_int_equal(cub_quantity_value(q("0")), 0);
        assert_int_equal(cub_quantity_value(q("1.5Gi")), 1610612736);
        assert_int_equal(cub_quantity_value(q("1G")), 1000000000);
        assert_int_equal(cub_quantity_value(q("2e9")), 2000000000);
        assert_int_equal(cub_quantity_value(q("0.1Ki")), 103);
}

static void test_value_saturates(void **state) {
        (void) state;
        assert_true(cub_quantity_value((CubQuantity){ .units = INT64_MAX, .milli = 1 }) == INT64_MAX);
        assert_true(cub_quantity_value((CubQuantity){ .units = INT64_MAX }) == INT64_MAX);
        assert_true(cub_quantity_value((CubQuantity){ .units = INT64_MAX - 1, .milli = 999 }) == INT64_MAX);
}

/* ---- cmp / add / is_zero ------------------------------------------------ */

static void test_cmp(void **state) {
        (void) state;
        assert_int_equal(cub_quantity_cmp(q("250m"), q("1")), -1);
        assert_int_equal(cub_quantity_cmp(q("1"), q("250m")), 1);
        assert_int_equal(cub_quantity_cmp(q("1"), q("1000m")), 0);
        assert_int_equal(cub_quantity_cmp(q("1Gi"), q("1073741824")), 0);
        assert_int_equal(cub_quantity_cmp(q("1G"), q("1Gi")), -1);
        assert_int_equal(cub_quantity_cmp(q("1.5"), q("1501m")), -1);
        assert_int_equal(cub_quantity_cmp(q("2"), q("1999m")), 1);
        assert_int_equal(cub_quantity_cmp(q("0"), q("-0")), 0);
}

static void test_is_zero(void **state) {
        (void) state;
        assert_true(cub_quantity_is_zero(q("0")));
        assert_true(cub_quantity_is_zero(q("-0")));
        assert_true(cub_quantity_is_zero(q("0Gi")));
        assert_false(cub_quantity_is_zero(q("1n")));
        assert_false(cub_quantity_is_zero(q("1")));
}

static void test_add(void **state) {
        CubQuantity r = {};

        (void) state;
        assert_int_equal(cub_quantity_add(q("250m"), q("750m"), &r), 0);
        assert_true(r.units == 1 && r.milli == 0);
        assert_int_equal(cub_quantity_add(q("999m"), q("2m"), &r), 0);
        assert_true(r.units == 1 && r.milli == 1);
        assert_int_equal(cub_quantity_add(q("256Mi"), q("120Mi"), &r), 0);
        assert_true(r.units == 394264576 && r.milli == 0);
        assert_int_equal(cub_quantity_add(q("1.5"), q("0"), &r), 0);
        assert_true(r.units == 1 && r.milli == 500);
}

static void test_add_overflow(void **state) {
        CubQuantity r = { .units = 5 };

        (void) state;
        assert_int_equal(cub_quantity_add((CubQuantity){ .units = INT64_MAX }, q("1"), &r), -ERANGE);
        assert_int_equal(cub_quantity_add((CubQuantity){ .units = INT64_MAX, .milli = 500 }, q("500m"), &r), -ERANGE);
        assert_int_equal(r.units, 5);
        assert_int_equal(cub_quantity_add((CubQuantity){ .units = INT64_MAX - 1, .milli = 500 }, q("500m"), &r), 0);
        assert_true(r.units == INT64_MAX && r.milli == 0);
}

/* ---- canonical text ----------------------------------------------------- */

static void test_format_cpu(void **state) {
        char buf[CUB_QUANTITY_STR_MAX];

        (void) state;
        assert_string_equal(fmt("250m", true, buf), "250m");
        assert_string_equal(fmt("1", true, buf), "1");
        assert_string_equal(fmt("1000m", true, buf), "1");
        assert_string_equal(fmt("1.5", true, buf), "1500m");
        assert_string_equal(fmt("0", true, buf), "0");
        assert_string_equal(fmt("0.0001", true, buf), "1m");
        assert_string_equal(fmt("300", true, buf), "300");
        assert_string_equal(fmt("12.05", true, buf), "12050m");
}

static void test_format_bytes(void **state) {
        char buf[CUB_QUANTITY_STR_MAX];

        (void) state;
        assert_string_equal(fmt("64Mi", false, buf), "64Mi");
        assert_string_equal(fmt("67108864", false, buf), "64Mi");
        assert_string_equal(fmt("1G", false, buf), "1G");
        assert_string_equal(fmt("1k", false, buf), "1k");
        assert_string_equal(fmt("0", false, buf), "0");
        assert_string_equal(fmt("1Gi", false, buf), "1Gi");
        assert_string_equal(fmt("1.5Gi", false, buf), "1536Mi");
        assert_string_equal(fmt("1536", false, buf), "1536");
        assert_string_equal(fmt("100m", false, buf), "1");
        assert_string_equal(fmt("1Ei", false, buf), "1Ei");
        /* the shorter spelling wins (10^18 = 976562500000000 * 1024, but "1E" is shorter) */
        assert_string_equal(fmt("1E", false, buf), "1E");
        assert_string_equal(fmt("1M", false, buf), "1M");
        assert_string_equal(fmt("3e9", false, buf), "3G");
        assert_string_equal(fmt("2e9", false, buf), "2G");
        assert_string_equal(fmt("1500", false, buf), "1500");
}

static void test_format_extremes_fit(void **state) {
        char buf[CUB_QUANTITY_STR_MAX];

        (void) state;
        assert_string_equal(cub_quantity_format((CubQuantity){ .units = INT64_MAX, .milli = 999 }, true, buf),
                            "9223372036854775807999m");
        assert_string_equal(cub_quantity_format((CubQuantity){ .units = INT64_MAX }, false, buf),
                            "9223372036854775807");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plain_integers),
                cmocka_unit_test(test_decimal_small_suffixes),
                cmocka_unit_test(test_decimal_large_suffixes),
                cmocka_unit_test(test_binary_suffixes),
                cmocka_unit_test(test_binary_fractions),
                cmocka_unit_test(test_exponents),
                cmocka_unit_test(test_capital_e_alone_is_exa),
                cmocka_unit_test(test_fractions_round_up_to_milli),
                cmocka_unit_test(test_leading_and_trailing_dot),
                cmocka_unit_test(test_signs),
                cmocka_unit_test(test_negative_is_erange),
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_garbage_suffixes),
                cmocka_unit_test(test_garbage_numbers),
                cmocka_unit_test(test_whitespace_is_rejected),
                cmocka_unit_test(test_too_large),
                cmocka_unit_test(test_milli_value),
                cmocka_unit_test(test_milli_value_saturates),
                cmocka_unit_test(test_milli_value_exact_near_limit),
                cmocka_unit_test(test_value_rounds_up),
                cmocka_unit_test(test_value_saturates),
                cmocka_unit_test(test_cmp),
                cmocka_unit_test(test_is_zero),
                cmocka_unit_test(test_add),
                cmocka_unit_test(test_add_overflow),
                cmocka_unit_test(test_format_cpu),
                cmocka_unit_test(test_format_bytes),
                cmocka_unit_test(test_format_extremes_fit),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
