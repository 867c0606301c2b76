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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_duration),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
