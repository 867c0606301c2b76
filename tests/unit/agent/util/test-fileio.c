/* SPDX-License-Identifier: Apache-2.0 */
/* agent/util/fileio.c: bounded whole-file reads and atomic replacement,
 * in a private mkdtemp directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/util/fileio.h"

static char tmpdir[] = "/tmp/cubelet-test-fileio-XXXXXX";

static int group_setup(void **state) {
        (void) state;
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state) {
        DIR *d = opendir(tmpdir);
        struct dirent *de;

        (void) state;
        if (!d)
                return -1;
        while ((de = readdir(d))) {
                char p[512];

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                (void) snprintf(p, sizeof(p), "%s/%s", tmpdir, de->d_name);
                if (unlink(p) < 0)
                        (void) rmdir(p);
        }
        closedir(d);
        return rmdir(tmpdir);
}

static void path_of(char *buf, size_t size, const char *name) {
        (void) snprintf(buf, size, "%s/%s", tmpdir, name);
}

static void write_raw(const char *path, const void *data, size_t size) {
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, size, f), size);
        assert_int_equal(fclose(f), 0);
}

/* Number of directory entries whose name contains s. */
static int count_entries(const char *s) {
        DIR *d = opendir(tmpdir);
        struct dirent *de;
        int n = 0;

        assert_non_null(d);
        while ((de = readdir(d)))
                if (strstr(de->d_name, s))
                        n++;
        closedir(d);
        return n;
}

static void test_write_then_read_back(void **state) {
        char path[512], *data = NULL;
        size_t size = 0;
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "state.json");
        assert_int_equal(cub_write_file_atomic(path, "{\"a\":1}\n", 8, 0644, &err), 0);
        assert_int_equal(cub_read_file(path, 1024, &data, &size, &err), 0);
        assert_int_equal(size, 8);
        assert_string_equal(data, "{\"a\":1}\n");
        free(data);
        assert_int_equal(err.code, 0); /* untouched on success */
}

static void test_write_binary_with_nul(void **state) {
        static const char bin[] = { 'a', '\0', 'b', '\0', '\xff' };
        char path[512], *data = NULL;
        size_t size = 0;
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "binary");
        assert_int_equal(cub_write_file_atomic(path, bin, sizeof(bin), 0600, &err), 0);
        assert_int_equal(cub_read_file(path, 100, &data, &size, &err), 0);
        assert_int_equal(size, sizeof(bin));
        assert_memory_equal(data, bin, sizeof(bin));
        assert_int_equal(data[size], '\0');
        free(data);
}

static void test_write_replaces_and_leaves_no_temp(void **state) {
        char path[512], *data = NULL;
        size_t size = 0;
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "replace.txt");
        assert_int_equal(cub_write_file_atomic(path, "a much longer first version", 27, 0644, &err), 0);
        assert_int_equal(cub_write_file_atomic(path, "v2", 2, 0644, &err), 0);
        assert_int_equal(cub_read_file(path, 100, &data, &size, &err), 0);
        assert_int_equal(size, 2);
        assert_string_equal(data, "v2");
        free(data);
        assert_int_equal(count_entries("replace.txt"), 1);
        assert_int_equal(count_entries(".tmp"), 0);
}

static void test_write_applies_mode(void **state) {
        char path[512];
        struct stat st;
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "mode640");
        assert_int_equal(cub_write_file_atomic(path, "x", 1, 0640, &err), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0640);
        assert_int_equal(cub_write_file_atomic(path, "y", 1, 0600, &err), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_true(S_ISREG(st.st_mode));
}

static void test_write_empty_file(void **state) {
        char path[512], *data = NULL;
        size_t size = 99;
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "empty");
        assert_int_equal(cub_write_file_atomic(path, "", 0, 0644, &err), 0);
        assert_int_equal(cub_read_file(path, 0, &data, &size, &err), 0);
        assert_non_null(data);
        assert_int_equal(size, 0);
        assert_string_equal(data, "");
        free(data);
}

static void test_write_into_missing_directory(void **state) {
        char path[512], want[700];
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "no-such-dir/file");
        assert_int_equal(cub_write_file_atomic(path, "x", 1, 0644, &err), -ENOENT);
        assert_int_equal(err.code, ENOENT);
        (void) snprintf(want, sizeof(want), "'%s': create temporary file: No such file or directory", path);
        assert_string_equal(err.msg, want);
}

static void test_write_over_directory_fails_and_cleans_up(void **state) {
        char path[512], want[700];
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "adir");
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(cub_write_file_atomic(path, "x", 1, 0644, &err), -EISDIR);
        assert_int_equal(err.code, EISDIR);
        (void) snprintf(want, sizeof(want), "'%s': write: Is a directory", path);
        assert_string_equal(err.msg, want);
        assert_int_equal(count_entries("adir.tmp"), 0);
}

static void test_read_exactly_max_size(void **state) {
        char path[512], *data = NULL;
        size_t size = 0;
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "four");
        write_raw(path, "abcd", 4);
        assert_int_equal(cub_read_file(path, 4, &data, &size, &err), 0);
        assert_int_equal(size, 4);
        assert_string_equal(data, "abcd");
        free(data);
}

static void test_read_over_max_size_is_efbig(void **state) {
        char path[512], want[700], *data = NULL;
        size_t size = 77;
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "five");
        write_raw(path, "abcde", 5);
        assert_int_equal(cub_read_file(path, 4, &data, &size, &err), -EFBIG);
        assert_int_equal(err.code, EFBIG);
        (void) snprintf(want, sizeof(want), "'%s': file is larger than 4 bytes", path);
        assert_string_equal(err.msg, want);
        assert_null(data);
        assert_int_equal(size, 77);
}

static void test_read_large_file_growth(void **state) {
        char path[512], want[700], *big, *data = NULL;
        size_t size = 0;
        CubError err = {};

        (void) state;
        big = malloc(10000);
        assert_non_null(big);
        for (size_t i = 0; i < 10000; i++)
                big[i] = (char) ('a' + i % 26);
        path_of(path, sizeof(path), "big");
        write_raw(path, big, 10000);
        assert_int_equal(cub_read_file(path, 10000, &data, &size, &err), 0);
        assert_int_equal(size, 10000);
        assert_memory_equal(data, big, 10000);
        assert_int_equal(data[10000], '\0');
        free(data);
        data = NULL;
        assert_int_equal(cub_read_file(path, 9999, &data, &size, &err), -EFBIG);
        (void) snprintf(want, sizeof(want), "'%s': file is larger than 9999 bytes", path);
        assert_string_equal(err.msg, want);
        assert_null(data);
        free(big);
}

static void test_read_max_zero(void **state) {
        char path[512], *data = NULL;
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "one");
        write_raw(path, "1", 1);
        assert_int_equal(cub_read_file(path, 0, &data, NULL, &err), -EFBIG);
        assert_null(data);
}

static void test_read_enoent_names_path(void **state) {
        char path[512], want[700], *data = NULL;
        CubError err = {};

        (void) state;
        path_of(path, sizeof(path), "does-not-exist.yaml");
        assert_int_equal(cub_read_file(path, 100, &data, NULL, &err), -ENOENT);
        assert_int_equal(err.code, ENOENT);
        (void) snprintf(want, sizeof(want), "'%s': No such file or directory", path);
        assert_string_equal(err.msg, want);
        assert_null(data);
}

static void test_read_directory_is_eisdir(void **state) {
        char want[700], *data = NULL;
        CubError err = {};

        (void) state;
        assert_int_equal(cub_read_file(tmpdir, 100, &data, NULL, &err), -EISDIR);
        assert_int_equal(err.code, EISDIR);
        (void) snprintf(want, sizeof(want), "'%s': is a directory", tmpdir);
        assert_string_equal(err.msg, want);
        assert_null(data);
}

static void test_read_null_err(void **state) {
        char path[512], *data = NULL;

        (void) state;
        path_of(path, sizeof(path), "missing-too");
        assert_int_equal(cub_read_file(path, 100, &data, NULL, NULL), -ENOENT);
        assert_int_equal(cub_read_file(tmpdir, 100, &data, NULL, NULL), -EISDIR);
        assert_null(data);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_write_then_read_back),
                cmocka_unit_test(test_write_binary_with_nul),
                cmocka_unit_test(test_write_replaces_and_leaves_no_temp),
                cmocka_unit_test(test_write_applies_mode),
                cmocka_unit_test(test_write_empty_file),
                cmocka_unit_test(test_write_into_missing_directory),
                cmocka_unit_test(test_write_over_directory_fails_and_cleans_up),
                cmocka_unit_test(test_read_exactly_max_size),
                cmocka_unit_test(test_read_over_max_size_is_efbig),
                cmocka_unit_test(test_read_large_file_growth),
                cmocka_unit_test(test_read_max_zero),
                cmocka_unit_test(test_read_enoent_names_path),
                cmocka_unit_test(test_read_directory_is_eisdir),
                cmocka_unit_test(test_read_null_err),
        };

        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
