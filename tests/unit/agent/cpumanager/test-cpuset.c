/* SPDX-License-Identifier: Apache-2.0 */
/* agent/cpumanager/cpuset.c: CPU sets and the Linux list format. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cpumanager/cpumanager.h"

static CpumgrSet parse_ok(const char *s) {
        CpumgrSet set;
        CubError err = {};

        if (cpumgr_set_parse(s, &set, &err) < 0)
                fail_msg("parse '%s' failed: %s", s, err.msg);
        return set;
}

/* parse → format gives want */
static void assert_round(const char *in, const char *want) {
        char buf[CPUMGR_SET_STR_MAX];
        CpumgrSet set = parse_ok(in), back;

        assert_string_equal(cpumgr_set_format(&set, buf, sizeof(buf)), want);
        back = parse_ok(buf);
        assert_true(cpumgr_set_equal(&set, &back));
}

static void test_round_trips(void **state) {
        (void) state;
        assert_round("", "");
        assert_round("0", "0");
        assert_round("0-2,5,7-8", "0-2,5,7-8");
        assert_round("0,1,3", "0-1,3");
        assert_round("3,1,0", "0-1,3");
        assert_round("0-3,2-5", "0-5");
        assert_round("7,6,5,4", "4-7");
        assert_round("1023", "1023");
        assert_round("0-1023", "0-1023");
        assert_round("62-65,127-128", "62-65,127-128");
        assert_round("5-5", "5");
}

static void test_blanks_and_newline(void **state) {
        (void) state;
        assert_round("0-3\n", "0-3");
        assert_round(" 0 - 1 , 4 \n", "0-1,4");
        assert_round("\n", "");
        assert_round("   ", "");
}

static void test_parse_errors(void **state) {
        CpumgrSet set;
        CubError err = {};

        (void) state;
        assert_int_equal(cpumgr_set_parse("a", &set, &err), -EINVAL);
        assert_string_equal(err.msg, "invalid cpu list 'a'");
        assert_int_equal(cpumgr_set_parse("1,", &set, NULL), -EINVAL);
        assert_int_equal(cpumgr_set_parse(",1", &set, NULL), -EINVAL);
        assert_int_equal(cpumgr_set_parse("1,,2", &set, NULL), -EINVAL);
        assert_int_equal(cpumgr_set_parse("3-1", &set, NULL), -EINVAL);
        assert_int_equal(cpumgr_set_parse("1-", &set, NULL), -EINVAL);
        assert_int_equal(cpumgr_set_parse("-1", &set, NULL), -EINVAL);
        assert_int_equal(cpumgr_set_parse("0-7:2", &set, NULL), -EINVAL);
        assert_int_equal(cpumgr_set_parse("1 2", &set, NULL), -EINVAL);
        assert_int_equal(cpumgr_set_parse("0x1", &set, NULL), -EINVAL);
        assert_int_equal(cpumgr_set_parse(NULL, &set, NULL), -EINVAL);
        assert_int_equal(cpumgr_set_parse("1024", &set, &err), -ERANGE);
        assert_string_equal(err.msg, "cpu list '1024': cpu number above 1023");
        assert_int_equal(cpumgr_set_parse("0-99999999999999999999", &set, NULL), -ERANGE);
}

static void test_parse_failure_keeps_output(void **state) {
        CpumgrSet set = parse_ok("4");
        CpumgrSet want = set;

        (void) state;
        assert_int_equal(cpumgr_set_parse("1,x", &set, NULL), -EINVAL);
        assert_true(cpumgr_set_equal(&set, &want));
}

static void test_ops(void **state) {
        char buf[CPUMGR_SET_STR_MAX];
        CpumgrSet a = parse_ok("0-5"), b = parse_ok("4-9"), x;

        (void) state;
        assert_int_equal(cpumgr_set_count(&a), 6);
        x = a;
        cpumgr_set_union(&x, &b);
        assert_string_equal(cpumgr_set_format(&x, buf, sizeof(buf)), "0-9");
        x = a;
        cpumgr_set_subtract(&x, &b);
        assert_string_equal(cpumgr_set_format(&x, buf, sizeof(buf)), "0-3");
        x = a;
        cpumgr_set_intersect(&x, &b);
        assert_string_equal(cpumgr_set_format(&x, buf, sizeof(buf)), "4-5");
        cpumgr_set_del(&x, 4);
        assert_false(cpumgr_set_has(&x, 4));
        assert_true(cpumgr_set_has(&x, 5));
        cpumgr_set_add(&x, 1000);
        cpumgr_set_add(&x, 5000); /* out of range: ignored */
        assert_string_equal(cpumgr_set_format(&x, buf, sizeof(buf)), "5,1000");
        assert_false(cpumgr_set_has(&x, 5000));
        cpumgr_set_del(&x, 5);
        cpumgr_set_del(&x, 1000);
        assert_true(cpumgr_set_is_empty(&x));
        assert_false(cpumgr_set_is_empty(&a));
        assert_false(cpumgr_set_equal(&a, &b));
}

static void test_format_truncates(void **state) {
        char buf[6];
        CpumgrSet set = parse_ok("0-2,5,7-8");

        (void) state;
        /* never overflows, stays NUL-terminated */
        assert_string_equal(cpumgr_set_format(&set, buf, sizeof(buf)), "0-2,5");
        assert_string_equal(cpumgr_set_format(&set, buf, 4), "0-2");
        assert_string_equal(cpumgr_set_format(&set, buf, 1), "");
}

static void test_format_worst_case(void **state) {
        static char buf[CPUMGR_SET_STR_MAX];
        CpumgrSet set = {}, back;

        (void) state;
        /* every other CPU: the longest text a set can have */
        for (unsigned c = 0; c < CPUMGR_MAX_CPUS; c += 2)
                cpumgr_set_add(&set, c);
        (void) cpumgr_set_format(&set, buf, sizeof(buf));
        assert_true(strlen(buf) < CPUMGR_SET_STR_MAX - 1);
        assert_int_equal(strncmp(buf, "0,2,4,", 6), 0);
        back = parse_ok(buf);
        assert_true(cpumgr_set_equal(&set, &back));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trips),
                cmocka_unit_test(test_blanks_and_newline),
                cmocka_unit_test(test_parse_errors),
                cmocka_unit_test(test_parse_failure_keeps_output),
                cmocka_unit_test(test_ops),
                cmocka_unit_test(test_format_truncates),
                cmocka_unit_test(test_format_worst_case),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
