/* SPDX-License-Identifier: Apache-2.0 */
/* agent/util/duration.c: Go's time.ParseDuration, with Go's messages. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/util/duration.h"

static void test_duration(void **state) {
        static const struct {
                const char *s;
                uint64_t usec;
        } ok[] = {
                { "0", 0 },
                { "1m30s", 90000000 },
                { "90s", 90000000 },
                { "500ms", 500000 },
                { "5m", 300000000 },
                { "1h", UINT64_C(3600000000) },
                { "1.5h", UINT64_C(5400000000) },
                { "2h45m", UINT64_C(9900000000) },
                { "300us", 300 },
                { "300\xc2\xb5s", 300 },
                { "300\xce\xbcs", 300 },
                { "1500ns", 1 },
                { ".5s", 500000 },
                { "1.s", 1000000 },
                { "+10s", 10000000 },
                { "0s", 0 },
                { "-0s", 0 },
        };
        static const struct {
                const char *s;
                int r;
                const char *msg;
        } bad[] = {
                { "", -EINVAL, "time: invalid duration \"\"" },
                { "1", -EINVAL, "time: missing unit in duration \"1\"" },
                { "10x", -EINVAL, "time: unknown unit \"x\" in duration \"10x\"" },
                { "1d", -EINVAL, "time: unknown unit \"d\" in duration \"1d\"" },
                { "s", -EINVAL, "time: invalid duration \"s\"" },
                { ".s", -EINVAL, "time: invalid duration \".s\"" },
                { " 1s", -EINVAL, "time: invalid duration \" 1s\"" },
                { "-5m", -ERANGE, "invalid duration \"-5m\": must not be negative" },
                { "9999999999h", -ERANGE, "time: invalid duration \"9999999999h\"" },
        };
        CubError err = {};
        uint64_t v;

        (void) state;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                v = 42;
                if (cub_duration_parse(ok[i].s, &v, &err) < 0)
                        fail_msg("\"%s\": %s", ok[i].s, err.msg);
                assert_int_equal(v, ok[i].usec);
        }
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                v = 42;
                cub_err_clear(&err);
                assert_int_equal(cub_duration_parse(bad[i].s, &v, &err), bad[i].r);
                assert_string_equal(err.msg, bad[i].msg);
                assert_int_equal(v, 42);
        }
}

/* the signed parse (a KubeletConfiguration's metav1.Duration), and Go's
 * time.Duration.String() of what it parsed (Go 1.22's outputs) */
static void test_signed_and_format(void **state) {
        static const struct {
                const char *in, *out;
                int64_t usec;
        } cases[] = {
                { "0", "0s", 0 },
                { "-1s", "-1s", -1000000 },
                { "500ms", "500ms", 500000 },
                { "1.5ms", "1.5ms", 1500 },
                { "250us", "250\xc2\xb5s", 250 },
                { "20s", "20s", 20000000 },
                { "90s", "1m30s", 90000000 },
                { "5m", "5m0s", 300000000 },
                { "1h", "1h0m0s", INT64_C(3600000000) },
                { "2h45m0.5s", "2h45m0.5s", INT64_C(9900500000) },
                { "-1m0.25s", "-1m0.25s", -60250000 },
        };
        char buf[CUB_DURATION_MAX];
        CubError err = {};
        int64_t v;

        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                if (cub_duration_parse_signed(cases[i].in, &v, &err) < 0)
                        fail_msg("\"%s\": %s", cases[i].in, err.msg);
                assert_true(v == cases[i].usec);
                cub_duration_format(v, buf, sizeof(buf));
                assert_string_equal(buf, cases[i].out);
        }
        assert_int_equal(cub_duration_parse_signed("soon", &v, &err), -EINVAL);
        assert_string_equal(err.msg, "time: invalid duration \"soon\"");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_duration),
                cmocka_unit_test(test_signed_and_format),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
