/* SPDX-License-Identifier: Apache-2.0 */
/* agent/util/meminfo.c: /proc/meminfo, parsed in one place. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/util/meminfo.h"

#define KB 1024ULL

static const char kernel61[] = "MemTotal:       16318460 kB\n"
                               "MemFree:         1203456 kB\n"
                               "MemAvailable:   12001234 kB\n"
                               "Buffers:          312000 kB\n"
                               "Cached:         10000000 kB\n"
                               "SwapCached:            0 kB\n"
                               "Active:          4000000 kB\n"
                               "Inactive:        9000000 kB\n"
                               "Active(anon):     100000 kB\n"
                               "Inactive(anon):  2000000 kB\n"
                               "Active(file):    3900000 kB\n"
                               "Inactive(file):  7000000 kB\n"
                               "SwapTotal:       1048572 kB\n"
                               "SwapFree:        1048572 kB\n"
                               "AnonPages:       2100000 kB\n"
                               "HugePages_Total:       0\n";

static void test_kernel_sample(void **state) {
        CubError err = {};
        CubMeminfo m;

        (void) state;
        assert_int_equal(cub_meminfo_parse("/proc/meminfo", kernel61, &m, &err), 0);
        assert_true(m.mem_total == 16318460 * KB);
        assert_true(m.mem_free == 1203456 * KB);
        assert_true(m.mem_available == 12001234 * KB);
        assert_true(m.inactive_file == 7000000 * KB); /* not Inactive: nor Inactive(anon): */
        assert_true(m.anon_pages == 2100000 * KB);
        assert_true(m.swap_total == 1048572 * KB); /* not SwapCached: nor SwapFree: */
}

static void test_optional_lines_read_zero(void **state) {
        CubError err = {};
        CubMeminfo m;

        (void) state;
        assert_int_equal(cub_meminfo_parse("f", "MemTotal: 1000 kB\nMemFree: 10 kB\n", &m, &err), 0);
        assert_true(m.mem_total == 1000 * KB && m.mem_free == 10 * KB);
        assert_true(m.mem_available == 0 && m.inactive_file == 0 && m.anon_pages == 0 && m.swap_total == 0);
}

static void test_required_lines_named(void **state) {
        CubError err = {};
        CubMeminfo m = { .mem_total = 7 };

        (void) state;
        assert_int_equal(cub_meminfo_parse("/x/meminfo", "MemTotal: 1000 kB\n", &m, &err), -ENOENT);
        assert_string_equal(err.msg, "'/x/meminfo': no 'MemFree' line");
        assert_true(m.mem_total == 7); /* untouched on failure */
        assert_int_equal(cub_meminfo_parse("/x/meminfo", "MemTotalX: 1 kB\nMemFree: 1 kB\n", &m, &err), -ENOENT);
        assert_string_equal(err.msg, "'/x/meminfo': no 'MemTotal' line");
}

static void test_bad_values(void **state) {
        CubError err = {};
        CubMeminfo m;

        (void) state;
        assert_int_equal(cub_meminfo_parse("/x/meminfo", "MemTotal: 1000 kB\nMemFree: lots kB\n", &m, &err), -EINVAL);
        assert_string_equal(err.msg, "'/x/meminfo': bad value of 'MemFree'");
        assert_int_equal(cub_meminfo_parse("/x/meminfo", "MemTotal: 18446744073709551615 kB\nMemFree: 1 kB\n", &m, &err),
                         -ERANGE);
        assert_string_equal(err.msg, "'/x/meminfo': bad value of 'MemTotal'");
        /* a value without " kB" is taken as bytes (HugePages_Total has none) */
        assert_int_equal(cub_meminfo_parse("/x/meminfo", "MemTotal: 4096\nMemFree: 0\n", &m, &err), 0);
        assert_true(m.mem_total == 4096);
}

static void test_read_names_the_file(void **state) {
        char dir[] = "/tmp/cubelet-meminfo-XXXXXX", path[64];
        CubError err = {};
        CubMeminfo m;
        FILE *f;

        (void) state;
        assert_non_null(mkdtemp(dir));
        assert_int_equal(cub_meminfo_read(dir, &m, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "/meminfo'"));
        (void) snprintf(path, sizeof(path), "%s/meminfo", dir);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(kernel61, f);
        fclose(f);
        assert_int_equal(cub_meminfo_read(dir, &m, &err), 0);
        assert_true(m.mem_total == 16318460 * KB);
        unlink(path);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kernel_sample),
                cmocka_unit_test(test_optional_lines_read_zero),
                cmocka_unit_test(test_required_lines_named),
                cmocka_unit_test(test_bad_values),
                cmocka_unit_test(test_read_names_the_file),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
