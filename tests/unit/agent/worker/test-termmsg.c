/* SPDX-License-Identifier: Apache-2.0 */
/* agent/worker/termmsg.c: the termination message file (its place and mode),
 * the message of an ended container as kubelet's getTerminationMessage and
 * readLastStringFromContainerLogs give it, and the files' removal. */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/worker/worker-internal.h"

static char dir[64];

static int setup(void **state) {
        (void) state;
        (void) snprintf(dir, sizeof(dir), "/tmp/test-termmsg-XXXXXX");
        return mkdtemp(dir) ? 0 : -1;
}

static int remove_one(const char *path, const struct stat *s, int flag, struct FTW *f) {
        (void) s;
        (void) f;
        return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int teardown(void **state) {
        (void) state;
        return nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void write_file(const char *path, const char *text, size_t n) {
        FILE *f = fopen(path, "w");

        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, n, f), n);
        assert_int_equal(fclose(f), 0);
}

static void test_file_place_and_mode(void **state) {
        char *path = NULL, want[160];
        CubError err = {};
        struct stat s;
        mode_t old = umask(022);

        (void) state;
        assert_int_equal(worker_term_file(dir, "uid-1", "app", &path, &err), 0);
        umask(old);
        assert_non_null(path);
        (void) snprintf(want, sizeof(want), "%s/uid-1/containers/app/", dir);
        assert_int_equal(strncmp(path, want, strlen(want)), 0);
        /* kubelet's makeUID: 8 hex digits */
        assert_int_equal(strlen(path + strlen(want)), 8);
        assert_int_equal(strspn(path + strlen(want), "0123456789abcdef"), 8);
        assert_int_equal(stat(path, &s), 0);
        assert_true(S_ISREG(s.st_mode));
        assert_int_equal(s.st_mode & 07777, 0666);
        assert_int_equal(s.st_size, 0);
        /* each container made gets a file of its own */
        {
                char *again = NULL;

                assert_int_equal(worker_term_file(dir, "uid-1", "app", &again, &err), 0);
                assert_string_not_equal(again, path);
                free(again);
        }
        worker_term_remove(dir, "uid-1");
        assert_int_equal(access(path, F_OK), -1);
        (void) snprintf(want, sizeof(want), "%s/uid-1/containers", dir);
        assert_int_equal(access(want, F_OK), -1);
        free(path);
}

static void test_file_error_names_the_path(void **state) {
        char *path = NULL, bad[160];
        CubError err = {};

        (void) state;
        (void) snprintf(bad, sizeof(bad), "%s/a-file", dir);
        write_file(bad, "x", 1);
        assert_true(worker_term_file(bad, "uid-2", "app", &path, &err) < 0);
        assert_null(path);
        assert_non_null(strstr(err.msg, "termination message: mkdir"));
        assert_non_null(strstr(err.msg, bad));
}

static void test_message_from_file(void **state) {
        char path[160], *m;

        (void) state;
        (void) snprintf(path, sizeof(path), "%s/msg", dir);
        write_file(path, "DONE", 4);
        m = worker_term_message(path, false, NULL, NULL);
        assert_string_equal(m, "DONE");
        free(m);
        /* the runtime's message first */
        m = worker_term_message(path, false, NULL, "runtime says");
        assert_string_equal(m, "runtime says: DONE");
        free(m);
        m = worker_term_message(NULL, false, NULL, "runtime says");
        assert_string_equal(m, "runtime says");
        free(m);
        /* none: no file, an empty one, no path */
        write_file(path, "", 0);
        assert_null(worker_term_message(path, false, NULL, ""));
        assert_null(worker_term_message("/nonexistent/termination-log", false, NULL, NULL));
        assert_null(worker_term_message(NULL, false, NULL, NULL));
}

static void test_message_last_4096_bytes(void **state) {
        char path[160], *text = malloc(5000), *m;

        (void) state;
        assert_non_null(text);
        for (size_t i = 0; i < 5000; i++)
                text[i] = i < 904 ? 'a' : 'b';
        (void) snprintf(path, sizeof(path), "%s/big", dir);
        write_file(path, text, 5000);
        m = worker_term_message(path, false, NULL, NULL);
        assert_int_equal(strlen(m), 4096);
        assert_int_equal(strspn(m, "b"), 4096);
        free(m);
        free(text);
}

static void test_fallback_to_logs(void **state) {
        char path[160], log[160], *m;
        FILE *f;

        (void) state;
        (void) snprintf(path, sizeof(path), "%s/empty", dir);
        (void) snprintf(log, sizeof(log), "%s/0.log", dir);
        write_file(path, "", 0);
        f = fopen(log, "w");
        assert_non_null(f);
        for (int i = 0; i < 100; i++)
                fprintf(f, "2026-12-04T00:00:%02d.000000000Z stdout F line %d\n", i % 60, i);
        fprintf(f, "2026-12-04T00:01:40.000000000Z stderr P DON\n");
        fprintf(f, "2026-12-04T00:01:40.000000000Z stderr F E\n");
        assert_int_equal(fclose(f), 0);
        m = worker_term_message(path, true, log, NULL);
        assert_non_null(m);
        /* the last 80 log lines, as kubectl logs prints them */
        assert_int_equal(strncmp(m, "line 22\n", 8), 0);
        assert_non_null(strstr(m, "line 99\nDONE\n"));
        assert_int_equal(strlen(strstr(m, "DONE\n")), 5);
        free(m);
        /* the file wins when it says something; no fallback, no log */
        write_file(path, "OK", 2);
        m = worker_term_message(path, true, log, NULL);
        assert_string_equal(m, "OK");
        free(m);
        write_file(path, "", 0);
        assert_null(worker_term_message(path, false, log, NULL));
        /* at most the last 2048 bytes */
        f = fopen(log, "w");
        assert_non_null(f);
        for (int i = 0; i < 60; i++)
                fprintf(f, "2026-12-04T00:00:00.000000000Z stdout F %0100d\n", i);
        assert_int_equal(fclose(f), 0);
        m = worker_term_message(path, true, log, NULL);
        assert_int_equal(strlen(m), 2048);
        assert_int_equal(strcmp(m + 2048 - 4, "059\n"), 0);
        free(m);
}

static void test_invalid_utf8_replaced(void **state) {
        char path[160], *m;

        (void) state;
        (void) snprintf(path, sizeof(path), "%s/utf8", dir);
        /* a cut character, a lone continuation byte, an overlong '/', then é whole */
        write_file(path, "a\xe2\x82 b\x80 c\xc0\xaf d\xc3\xa9", 14);
        m = worker_term_message(path, false, NULL, NULL);
        assert_string_equal(m, "a\xef\xbf\xbd\xef\xbf\xbd b\xef\xbf\xbd c\xef\xbf\xbd\xef\xbf\xbd d\xc3\xa9");
        free(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_file_place_and_mode),
                cmocka_unit_test(test_file_error_names_the_path),
                cmocka_unit_test(test_message_from_file),
                cmocka_unit_test(test_message_last_4096_bytes),
                cmocka_unit_test(test_fallback_to_logs),
                cmocka_unit_test(test_invalid_utf8_replaced),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
