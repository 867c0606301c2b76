/* SPDX-License-Identifier: Apache-2.0 */
/* agent/logs/read.c: the attempt a reader picks (and kubelet's two
 * messages when there is none), tail, since, stream, timestamps,
 * limit-bytes, partial lines joined, and following: appended lines,
 * -EAGAIN, rotation, the end (`ended`, a newer attempt). */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <unistd.h>

#include "agent/logs/logs.h"

typedef struct Fixture {
        char root[64];
        char cdir[128];
} Fixture;

static void put(const char *dir, const char *name, const char *mode, const char *text) {
        char path[256];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, mode);
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static int setup(void **state) {
        Fixture *fx = calloc(1, sizeof(*fx));

        assert_non_null(fx);
        (void) snprintf(fx->root, sizeof(fx->root), "/tmp/cubelet-read-XXXXXX");
        assert_non_null(mkdtemp(fx->root));
        (void) snprintf(fx->cdir, sizeof(fx->cdir), "%s/c", fx->root);
        assert_int_equal(mkdir(fx->cdir, 0755), 0);
        *state = fx;
        return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

static int teardown(void **state) {
        Fixture *fx = *state;

        assert_int_equal(nftw(fx->root, rm_one, 8, FTW_DEPTH | FTW_PHYS), 0);
        free(fx);
        return 0;
}

/* Reads until 0 or -EAGAIN through a buffer of bufsize bytes; the output
 * (malloc'd) and the last return in *ret_rc. */
static char *drain(LogsReader *r, size_t bufsize, bool ended, ssize_t *ret_rc) {
        char *out = calloc(1, 1), buf[256];
        size_t n = 0;
        ssize_t k;

        assert_true(bufsize <= sizeof(buf));
        while ((k = logs_reader_read(r, buf, bufsize, ended)) > 0) {
                assert_true((size_t) k <= bufsize);
                out = realloc(out, n + (size_t) k + 1);
                assert_non_null(out);
                memcpy(out + n, buf, (size_t) k);
                n += (size_t) k;
                out[n] = '\0';
        }
        *ret_rc = k;
        return out;
}

/* The whole output of a reader over cdir with o, which must end with 0. */
static char *read_with(const Fixture *fx, const LogsReadOptions *o, size_t bufsize) {
        LogsReader *r = NULL;
        CubError err = {};
        ssize_t rc;
        char *out;

        assert_int_equal(logs_reader_open(fx->cdir, "p", o, &r, &err), 0);
        out = drain(r, bufsize, false, &rc);
        assert_int_equal(rc, 0);
        /* and 0 again after the end */
        assert_int_equal(logs_reader_read(r, (char[4]){}, 4, false), 0);
        assert_null(logs_reader_free(r));
        return out;
}

#define L0 "2026-01-01T00:00:00.000000001Z stdout F zero\n"
#define L1                                               \
        "2026-01-01T00:00:01.000000001Z stdout F one\n"  \
        "2026-01-01T00:00:02.5Z stderr F two\n"          \
        "2026-01-01T00:00:03Z stdout P thr\n"            \
        "not a CRI line\n"                               \
        "2026-01-01T02:00:04+02:00 stdout F ee\n"        \
        "2026-01-01T00:00:05.000000000Z stderr F five\n" \
        "2026-01-01T00:00:06Z stdout F six"

static void test_attempts(void **state) {
        Fixture *fx = *state;
        LogsReadOptions prev = { .previous = true, .tail_lines = -1, .stream = -1 };
        LogsReader *r = NULL;
        CubError err = {};
        char *out;

        /* no directory, an empty one: no log yet; previous: not found */
        assert_int_equal(logs_reader_open("/nonexistent/c", "p", NULL, &r, &err), -ENOENT);
        assert_string_equal(err.msg, "container \"c\" in pod \"p\" has no log yet");
        assert_null(r);
        assert_int_equal(logs_reader_open(fx->cdir, "p", NULL, &r, &err), -ENOENT);
        assert_string_equal(err.msg, "container \"c\" in pod \"p\" has no log yet");
        assert_int_equal(logs_reader_open(fx->cdir, "web", &prev, &r, &err), -ENOENT);
        assert_string_equal(err.msg, "previous terminated container \"c\" in pod \"web\" not found");
        /* the current attempt alone: no previous one */
        put(fx->cdir, "0.log", "w", L0);
        assert_int_equal(logs_reader_open(fx->cdir, "web", &prev, &r, &err), -ENOENT);
        assert_string_equal(err.msg, "previous terminated container \"c\" in pod \"web\" not found");
        assert_null(r);
        /* the highest <N>.log is current (numerically; other names ignored), the one below previous */
        put(fx->cdir, "10.log", "w", L1);
        put(fx->cdir, "9.log", "w", "2026-01-01T00:00:00Z stdout F nine\n");
        put(fx->cdir, "11.log.20260101-000000", "w", "2026-01-01T00:00:00Z stdout F rotated\n");
        put(fx->cdir, "x.log", "w", "2026-01-01T00:00:00Z stdout F x\n");
        assert_int_equal(logs_reader_open(fx->cdir, "p", NULL, &r, &err), 0);
        assert_int_equal(logs_reader_attempt(r), 10);
        r = logs_reader_free(r);
        assert_int_equal(logs_reader_open(fx->cdir, "p", &prev, &r, &err), 0);
        assert_int_equal(logs_reader_attempt(r), 9);
        r = logs_reader_free(r);
        out = read_with(fx, &prev, 256);
        assert_string_equal(out, "nine\n");
        free(out);
        /* a bad stream */
        assert_int_equal(logs_reader_open(fx->cdir, "p", &(LogsReadOptions){ .stream = 7 }, &r, &err), -EINVAL);
        assert_null(logs_reader_free(NULL));
}

/* all of it: partial lines joined, bad lines skipped, a last line without
 * its newline rendered; the same through a 1-byte buffer */
static void test_render_all(void **state) {
        Fixture *fx = *state;
        const LogsReadOptions all = { .tail_lines = -1, .stream = -1 };
        const char *want = "one\ntwo\nthree\nfive\nsix\n";
        char *out;

        put(fx->cdir, "0.log", "w", L1);
        out = read_with(fx, &all, 256);
        assert_string_equal(out, want);
        free(out);
        out = read_with(fx, &all, 1);
        assert_string_equal(out, want);
        free(out);
        out = read_with(fx, NULL, 7);
        assert_string_equal(out, want);
        free(out);
}

static void test_tail(void **state) {
        Fixture *fx = *state;
        char *out;

        put(fx->cdir, "0.log", "w", L1);
        out = read_with(fx, &(LogsReadOptions){ .tail_lines = 2, .stream = -1 }, 256);
        assert_string_equal(out, "five\nsix\n");
        free(out);
        /* tail counts the file's lines: the bad one, the P piece */
        out = read_with(fx, &(LogsReadOptions){ .tail_lines = 4, .stream = -1 }, 256);
        assert_string_equal(out, "ee\nfive\nsix\n");
        free(out);
        out = read_with(fx, &(LogsReadOptions){ .tail_lines = 0, .stream = -1 }, 256);
        assert_string_equal(out, "");
        free(out);
}

static void test_since_stream(void **state) {
        Fixture *fx = *state;
        /* 2026-01-01T00:00:00Z */
        const int64_t base = INT64_C(1767225600) * 1000000000;
        char *out;

        put(fx->cdir, "0.log", "w", L1 "\n2026-13-01T00:00:07Z stdout F bad month\n");
        /* at 00:00:02.5 exactly: "two" is kept (not before); "ee" is 00:00:04 UTC through its offset */
        out = read_with(
                fx, &(LogsReadOptions){ .since_unix_ns = base + INT64_C(2500000000), .tail_lines = -1, .stream = -1 },
                256);
        assert_string_equal(out, "two\nthree\nfive\nsix\n");
        free(out);
        out = read_with(
                fx, &(LogsReadOptions){ .since_unix_ns = base + INT64_C(2500000001), .tail_lines = -1, .stream = -1 },
                256);
        assert_string_equal(out, "three\nfive\nsix\n");
        free(out);
        /* nanoseconds count: one ns after "one" */
        out = read_with(
                fx, &(LogsReadOptions){ .since_unix_ns = base + INT64_C(1000000002), .tail_lines = -1, .stream = -1 },
                256);
        assert_string_equal(out, "two\nthree\nfive\nsix\n");
        free(out);
        /* without since, a timestamp strptime refuses is not looked at */
        out = read_with(fx, &(LogsReadOptions){ .tail_lines = 1, .stream = -1 }, 256);
        assert_string_equal(out, "bad month\n");
        free(out);
        out = read_with(fx, &(LogsReadOptions){ .since_unix_ns = 1, .tail_lines = 1, .stream = -1 }, 256);
        assert_string_equal(out, "");
        free(out);
        /* streams */
        out = read_with(fx, &(LogsReadOptions){ .tail_lines = -1, .stream = LOGS_STDOUT }, 256);
        assert_string_equal(out, "one\nthree\nsix\nbad month\n");
        free(out);
        out = read_with(fx, &(LogsReadOptions){ .tail_lines = -1, .stream = LOGS_STDERR }, 256);
        assert_string_equal(out, "two\nfive\n");
        free(out);
}

static void test_timestamps_limit(void **state) {
        Fixture *fx = *state;
        char *out;

        put(fx->cdir, "0.log", "w", L1);
        out = read_with(fx, &(LogsReadOptions){ .timestamps = true, .tail_lines = 3, .stream = -1 }, 256);
        assert_string_equal(out, "2026-01-01T02:00:04+02:00 ee\n"
                                 "2026-01-01T00:00:05.000000000Z five\n"
                                 "2026-01-01T00:00:06Z six\n");
        free(out);
        /* each piece of a partial line after its own timestamp, as logs_render */
        out = read_with(
                fx,
                &(LogsReadOptions){ .timestamps = true, .since_unix_ns = 1, .stream = LOGS_STDOUT, .tail_lines = -1 },
                256);
        assert_string_equal(out, "2026-01-01T00:00:01.000000001Z one\n"
                                 "2026-01-01T00:00:03Z thr2026-01-01T02:00:04+02:00 ee\n"
                                 "2026-01-01T00:00:06Z six\n");
        free(out);
        /* limit_bytes cuts inside a line, through any buffer size, after the filters */
        out = read_with(fx, &(LogsReadOptions){ .limit_bytes = 10, .tail_lines = -1, .stream = -1 }, 256);
        assert_string_equal(out, "one\ntwo\nth");
        free(out);
        out = read_with(fx, &(LogsReadOptions){ .limit_bytes = 10, .tail_lines = -1, .stream = -1 }, 3);
        assert_string_equal(out, "one\ntwo\nth");
        free(out);
        out = read_with(fx, &(LogsReadOptions){ .limit_bytes = 6, .tail_lines = -1, .stream = LOGS_STDERR }, 4);
        assert_string_equal(out, "two\nfi");
        free(out);
        out = read_with(fx, &(LogsReadOptions){ .limit_bytes = 1000, .tail_lines = -1, .stream = -1 }, 256);
        assert_string_equal(out, "one\ntwo\nthree\nfive\nsix\n");
        free(out);
}

/* following: the lines appended come out, -EAGAIN in between, a rotated
 * file is read to its end and the new one at the path after it, and
 * `ended` renders the last line without its newline and ends */
static void test_follow(void **state) {
        Fixture *fx = *state;
        const LogsReadOptions o = { .follow = true, .tail_lines = 1, .stream = -1 };
        char old[256], rotated[300], buf[8];
        LogsReader *r = NULL;
        CubError err = {};
        ssize_t rc;
        char *out;

        put(fx->cdir, "0.log", "w", "2026-01-01T00:00:00Z stdout F a\n2026-01-01T00:00:01Z stdout F b\n");
        assert_int_equal(logs_reader_open(fx->cdir, "p", &o, &r, &err), 0);
        out = drain(r, 256, false, &rc);
        assert_string_equal(out, "b\n");
        assert_int_equal(rc, -EAGAIN);
        free(out);
        assert_int_equal(logs_reader_read(r, buf, sizeof(buf), false), -EAGAIN);
        /* appended: a line, and a P piece and a line not finished yet */
        put(fx->cdir, "0.log", "a", "2026-01-01T00:00:02Z stdout F c\n2026-01-01T00:00:03Z stdout P d1\n20");
        out = drain(r, 2, false, &rc);
        assert_string_equal(out, "c\nd1");
        assert_int_equal(rc, -EAGAIN);
        free(out);
        put(fx->cdir, "0.log", "a", "26-01-01T00:00:04Z stdout F d2\n");
        out = drain(r, 256, false, &rc);
        assert_string_equal(out, "d2\n");
        assert_int_equal(rc, -EAGAIN);
        free(out);
        /* rotated: the old file gets a last line after the rename, a new file is at the path */
        (void) snprintf(old, sizeof(old), "%s/0.log", fx->cdir);
        (void) snprintf(rotated, sizeof(rotated), "%s.20260101-000000", old);
        assert_int_equal(rename(old, rotated), 0);
        assert_int_equal(logs_reader_read(r, buf, sizeof(buf), false), -EAGAIN); /* no file at the path yet */
        put(fx->cdir, "0.log.20260101-000000", "a", "2026-01-01T00:00:05Z stdout F e\n");
        put(fx->cdir, "0.log", "w", "2026-01-01T00:00:06Z stdout F f\n2026-01-01T00:00:07Z stderr F g");
        out = drain(r, 256, false, &rc);
        assert_string_equal(out, "e\nf\n");
        assert_int_equal(rc, -EAGAIN);
        free(out);
        /* the end: the last line without its newline, then 0 */
        out = drain(r, 256, true, &rc);
        assert_string_equal(out, "g\n");
        assert_int_equal(rc, 0);
        free(out);
        assert_int_equal(logs_reader_read(r, buf, sizeof(buf), false), 0);
        r = logs_reader_free(r);
}

/* following: a newer attempt's file is the end of this one (looked for at
 * most once a second: polled for up to 5 s) */
static void test_follow_newer_attempt(void **state) {
        Fixture *fx = *state;
        const LogsReadOptions o = { .follow = true, .tail_lines = -1, .stream = -1 };
        LogsReader *r = NULL;
        CubError err = {};
        char all[256] = "";
        size_t n_all = 0;
        ssize_t rc;
        char *out;

        put(fx->cdir, "0.log", "w", "2026-01-01T00:00:00Z stdout F a\n");
        assert_int_equal(logs_reader_open(fx->cdir, "p", &o, &r, &err), 0);
        assert_int_equal(logs_reader_attempt(r), 0);
        out = drain(r, 256, false, &rc);
        assert_string_equal(out, "a\n");
        assert_int_equal(rc, -EAGAIN);
        free(out);
        /* the last words of attempt 0, then attempt 1 starts */
        put(fx->cdir, "0.log", "a", "2026-01-01T00:00:01Z stdout F b\n2026-01-01T00:00:02Z stdout F c");
        put(fx->cdir, "1.log", "w", "2026-01-01T00:00:03Z stdout F next\n");
        for (int i = 0; i < 50; i++) {
                out = drain(r, 256, false, &rc);
                assert_true(n_all + strlen(out) < sizeof(all));
                memcpy(all + n_all, out, strlen(out) + 1);
                n_all += strlen(out);
                free(out);
                if (rc != -EAGAIN)
                        break;
                (void) usleep(100000);
        }
        assert_int_equal(rc, 0);
        assert_string_equal(all, "b\nc\n");
        r = logs_reader_free(r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_attempts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_render_all, setup, teardown),
                cmocka_unit_test_setup_teardown(test_tail, setup, teardown),
                cmocka_unit_test_setup_teardown(test_since_stream, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timestamps_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_follow, setup, teardown),
                cmocka_unit_test_setup_teardown(test_follow_newer_attempt, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
