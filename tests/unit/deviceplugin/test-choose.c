/* SPDX-License-Identifier: Apache-2.0 */
/* deviceplugin: resource-name rules, the own device choice, the check of a
 * plugin's preferred answer (all pure). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "deviceplugin/dp-internal.h"

static void test_resource_names(void **state) {
        static const char *const good[] = {
                "nvidia.com/gpu", "example.com/foo", "a.b-c.io/x_y.z", "vendor/x", "amd.com/gpu-2", "x.io/A1",
        };
        static const struct {
                const char *name;
                const char *why;
        } bad[] = {
                { "gpu", "domain prefix" },
                { "kubernetes.io/foo", "kubernetes.io domain" },
                { "foo.kubernetes.io/bar", "kubernetes.io domain" },
                { "requests.example.com/foo", "requests." },
                { "example.com/a/b", "at most one '/'" },
                { "Example.com/foo", "DNS-1123" },
                { "-example.com/foo", "DNS-1123" },
                { "example..com/foo", "DNS-1123" },
                { "example.com/", "at most 63" },
                { "example.com/-foo", "at most 63" },
                { "example.com/foo bar", "at most 63" },
                { "/foo", "DNS-1123" },
                { "", "empty" },
        };
        CubError err = {};
        char long_name[128];

        (void) state;
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                assert_int_equal(dp_validate_resource_name(good[i], &err), 0);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                err = (CubError){};
                assert_int_equal(dp_validate_resource_name(bad[i].name, &err), -EINVAL);
                assert_non_null(strstr(err.msg, "is invalid"));
                if (!strstr(err.msg, bad[i].why))
                        fail_msg("'%s': message '%s' lacks '%s'", bad[i].name, err.msg, bad[i].why);
        }
        /* the name part: at most 63 characters */
        memset(long_name, 'a', sizeof(long_name));
        memcpy(long_name, "x.io/", 5);
        long_name[5 + 63] = 0;
        assert_int_equal(dp_validate_resource_name(long_name, NULL), 0);
        long_name[5 + 63] = 'a';
        long_name[5 + 64] = 0;
        assert_int_equal(dp_validate_resource_name(long_name, NULL), -EINVAL);
}

static DpDevice dev(const char *id, int numa) {
        DpDevice d = { .healthy = true, .numa = numa };

        (void) snprintf(d.id, sizeof(d.id), "%s", id);
        return d;
}

static void expect_choice(const DpDevice *c, size_t n, size_t want, uint64_t mask, const char *const *ids) {
        size_t idx[16];

        assert_int_equal(dp_choose_devices(c, n, want, mask, idx), 0);
        for (size_t i = 0; i < want; i++)
                if (strcmp(c[idx[i]].id, ids[i]) != 0)
                        fail_msg("choice %zu: got %s, want %s", i, c[idx[i]].id, ids[i]);
}

static void test_choose(void **state) {
        DpDevice flat[] = { dev("d-2", -1), dev("d-0", -1), dev("d-1", -1) };
        DpDevice two[] = { dev("a", 0), dev("b", 1), dev("c", 1), dev("d", 0), dev("e", 1) };
        size_t idx[8];

        (void) state;
        /* no topology: the lowest IDs, in ID order */
        expect_choice(flat, 3, 2, 0, (const char *const[]){ "d-0", "d-1" });
        expect_choice(flat, 3, 2, 1, (const char *const[]){ "d-0", "d-1" });
        /* fewest NUMA nodes: node 1 holds 3, so 3 come from there */
        expect_choice(two, 5, 3, 0, (const char *const[]){ "b", "c", "e" });
        /* the mask first: node 0 has a and d */
        expect_choice(two, 5, 2, UINT64_C(1) << 0, (const char *const[]){ "a", "d" });
        /* mask too small: its devices, then the fewest other nodes */
        expect_choice(two, 5, 3, UINT64_C(1) << 0, (const char *const[]){ "a", "b", "d" });
        /* one device: the node with most candidates, its lowest ID */
        expect_choice(two, 5, 1, 0, (const char *const[]){ "b" });
        /* all of them */
        expect_choice(two, 5, 5, 0, (const char *const[]){ "a", "b", "c", "d", "e" });
        /* not enough */
        assert_int_equal(dp_choose_devices(two, 5, 6, 0, idx), -EINVAL);
        assert_int_equal(dp_choose_devices(two, 5, 0, 0, idx), 0);
}

static void test_preferred_valid(void **state) {
        const char *avail[] = { "a", "b", "c", "d" };
        const char *must[] = { "c" };

        (void) state;
        assert_true(dp_preferred_valid((const char *const[]){ "a", "c" }, 2, avail, 4, must, 1, 2));
        /* wrong count */
        assert_false(dp_preferred_valid((const char *const[]){ "a", "c", "d" }, 3, avail, 4, must, 1, 2));
        /* not available */
        assert_false(dp_preferred_valid((const char *const[]){ "x", "c" }, 2, avail, 4, must, 1, 2));
        /* must-include missing */
        assert_false(dp_preferred_valid((const char *const[]){ "a", "b" }, 2, avail, 4, must, 1, 2));
        /* repeated */
        assert_false(dp_preferred_valid((const char *const[]){ "c", "c" }, 2, avail, 4, must, 1, 2));
        assert_true(dp_preferred_valid((const char *const[]){ "b", "d" }, 2, avail, 4, NULL, 0, 2));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_resource_names),
                cmocka_unit_test(test_choose),
                cmocka_unit_test(test_preferred_valid),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
