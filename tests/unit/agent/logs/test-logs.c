/* SPDX-License-Identifier: Apache-2.0 */
/* agent/logs: the CRI log format (kubelet's parseCRILog cases), rendering
 * as kubelet's ReadLogs writes (partial lines joined, timestamps, bad lines
 * skipped), --tail, names, and the rotation decisions of kubelet's
 * container log manager (cleanupUnusedLogs, removeExcessLogs). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/logs/logs.h"

static void test_parse(void **state) {
        LogsLine l;
        const char *s = "2016-10-06T00:17:09.669794202Z stdout F log content 1";

        (void) state;
        assert_int_equal(logs_parse_line(s, strlen(s), &l), 0);
        assert_int_equal(l.n_timestamp, strlen("2016-10-06T00:17:09.669794202Z"));
        assert_int_equal(l.stream, LOGS_STDOUT);
        assert_false(l.partial);
        assert_int_equal(l.n_text, strlen("log content 1"));
        assert_memory_equal(l.text, "log content 1", l.n_text);
        s = "2016-10-06T00:17:09.669794203Z stderr P log content 2";
        assert_int_equal(logs_parse_line(s, strlen(s), &l), 0);
        assert_int_equal(l.stream, LOGS_STDERR);
        assert_true(l.partial);
        /* an empty F line: the space after the tag is there, the text is empty */
        s = "2016-10-06T00:17:10.000000000+02:00 stdout F ";
        assert_int_equal(logs_parse_line(s, strlen(s), &l), 0);
        assert_int_equal(l.n_text, 0);
        /* forward-compatible tags: "P:extra" */
        s = "2016-10-06T00:17:10.1Z stdout P:x text";
        assert_int_equal(logs_parse_line(s, strlen(s), &l), 0);
        assert_true(l.partial);
        /* bad lines */
        static const char *const bad[] = {
                "",
                "nonsense",
                "2016-10-06T00:17:09.669794202Z",
                "2016-10-06T00:17:09.669794202Z stdout",
                "2016-10-06T00:17:09.669794202Z stdout F",
                "2016-10-06T00:17:09.669794202Z stdin F text",
                "yesterday stdout F text",
                "2016-10-06T00:17:09.669794202Z  F text",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (logs_parse_line(bad[i], strlen(bad[i]), &l) != -EINVAL)
                        fail_msg("'%s' parsed", bad[i]);
}

static char *render(const char *in, bool ts, bool final, size_t *ret_used, size_t *ret_bad) {
        char *out = NULL;
        size_t n = 0;

        *ret_bad = 0;
        assert_int_equal(logs_render(in, strlen(in), ts, final, &out, &n, ret_used, ret_bad), 0);
        return out ? out : strdup("");
}

static void test_render(void **state) {
        const char *in = "2024-01-01T00:00:00.1Z stdout F hello\n"
                         "2024-01-01T00:00:00.2Z stdout P par\n"
                         "2024-01-01T00:00:00.3Z stdout P ti\n"
                         "garbage line\n"
                         "2024-01-01T00:00:00.4Z stdout F al\n"
                         "2024-01-01T00:00:00.5Z stderr F oops\n"
                         "2024-01-01T00:00:00.6Z stdout F unfinis";
        size_t used, bad;
        char *out;

        (void) state;
        out = render(in, false, true, &used, &bad);
        assert_string_equal(out, "hello\npartial\noops\nunfinis\n");
        assert_int_equal(bad, 1);
        assert_int_equal(used, strlen(in));
        free(out);
        /* following: the incomplete last line waits */
        out = render(in, false, false, &used, &bad);
        assert_string_equal(out, "hello\npartial\noops\n");
        assert_int_equal(used, strlen(in) - strlen("2024-01-01T00:00:00.6Z stdout F unfinis"));
        free(out);
        /* timestamps: each piece after its own (kubelet writes one per message) */
        out = render("2024-01-01T00:00:00.2Z stdout P par\n2024-01-01T00:00:00.3Z stdout F tial\n", true, true, &used,
                     &bad);
        assert_string_equal(out, "2024-01-01T00:00:00.2Z par2024-01-01T00:00:00.3Z tial\n");
        free(out);
}

static void test_tail(void **state) {
        const char *b = "a\nb\nc\nd\n";
        size_t n = strlen(b);

        (void) state;
        assert_int_equal(logs_tail_offset(b, n, -1), 0);
        assert_int_equal(logs_tail_offset(b, n, 0), n);
        assert_string_equal(b + logs_tail_offset(b, n, 1), "d\n");
        assert_string_equal(b + logs_tail_offset(b, n, 2), "c\nd\n");
        assert_string_equal(b + logs_tail_offset(b, n, 4), b);
        assert_string_equal(b + logs_tail_offset(b, n, 10), b);
        /* a last line without its newline counts */
        const char *nonl = "a\nb\nc";

        assert_string_equal(nonl + logs_tail_offset(nonl, 5, 2), "b\nc");
        assert_int_equal(logs_tail_offset("", 0, 3), 0);
}

static void test_names(void **state) {
        char buf[256];
        char *s;

        (void) state;
        s = logs_pod_dir("/var/log/pods", "kube-system", "etcd-node1", "abc");
        assert_string_equal(s, "/var/log/pods/kube-system_etcd-node1_abc");
        free(s);
        s = logs_container_path("etcd", 3);
        assert_string_equal(s, "etcd/3.log");
        free(s);
        setenv("TZ", "UTC", 1);
        assert_int_equal(logs_rotated_name("/d/c/0.log", 1700000000, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/d/c/0.log.20231114-221320");
        assert_int_equal(logs_rotated_name("/d/c/0.log", 1700000000, buf, 8), -ENAMETOOLONG);
}

static void assert_strv(char **got, const char *const *want) {
        size_t i = 0;

        for (; want[i]; i++) {
                if (!got || !got[i])
                        fail_msg("missing %s", want[i]);
                assert_string_equal(got[i], want[i]);
        }
        assert_true(!got || !got[i]);
}

static void test_plan(void **state) {
        LogsRotatePlan p;
        const char *none[] = { NULL };
        const char *some[] = { "0.log.20240101-000003",    "0.log.20240101-000001.gz",  "0.log.20240101-000002.gz",
                               "0.log.20240101-000000.gz", "0.log.20240101-000004.tmp", "1.log",
                               "0.log.20240101-000005",    "0.log.20240101-000005.gz",  NULL };

        (void) state;
        /* under the limit: nothing at all */
        assert_int_equal(logs_rotate_plan("/p/c/0.log", 99, 100, 5, some, &p), 0);
        assert_false(p.rotate);
        assert_null(p.remove);
        assert_null(p.compress);
        /* at the limit, nothing rotated yet */
        assert_int_equal(logs_rotate_plan("/p/c/0.log", 100, 100, 5, none, &p), 0);
        assert_true(p.rotate);
        assert_null(p.remove);
        assert_null(p.compress);
        logs_rotate_plan_done(&p);
        /* .tmp and the uncompressed twin go; of 4 rotated, 3 stay (5 - 2), oldest first out;
         * the uncompressed one left is gzipped; another log's files are not touched */
        assert_int_equal(logs_rotate_plan("/p/c/0.log", 200, 100, 5, some, &p), 0);
        assert_true(p.rotate);
        assert_strv(p.remove,
                    (const char *const[]){ "/p/c/0.log.20240101-000004.tmp", "/p/c/0.log.20240101-000005",
                                           "/p/c/0.log.20240101-000000.gz", "/p/c/0.log.20240101-000001.gz", NULL });
        assert_strv(p.compress, (const char *const[]){ "/p/c/0.log.20240101-000003", NULL });
        logs_rotate_plan_done(&p);
        /* maxFiles 2: no rotated file is kept before the next rotation */
        assert_int_equal(logs_rotate_plan("/p/c/0.log", 200, 100, 2, some, &p), 0);
        assert_strv(p.remove, (const char *const[]){ "/p/c/0.log.20240101-000004.tmp", "/p/c/0.log.20240101-000005",
                                                     "/p/c/0.log.20240101-000000.gz", "/p/c/0.log.20240101-000001.gz",
                                                     "/p/c/0.log.20240101-000002.gz", "/p/c/0.log.20240101-000003",
                                                     "/p/c/0.log.20240101-000005.gz", NULL });
        assert_null(p.compress);
        logs_rotate_plan_done(&p);
}

/* gzip through <log>.tmp, the source removed, the bytes read back with zlib */
static void test_compress(void **state) {
        char dir[] = "/tmp/cubelet-logs-XXXXXX", src[128], dst[256], tmp[256], back[64] = "";
        const char *text = "2024-01-01T00:00:00.1Z stdout F hello\n";
        CubError err = {};
        gzFile gz;
        FILE *f;

        (void) state;
        assert_non_null(mkdtemp(dir));
        (void) snprintf(src, sizeof(src), "%s/0.log.20240101-000000", dir);
        (void) snprintf(dst, sizeof(dst), "%s.gz", src);
        (void) snprintf(tmp, sizeof(tmp), "%s.tmp", src);
        f = fopen(src, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        assert_int_equal(logs_compress(src, dst, &err), 0);
        assert_int_equal(access(src, F_OK), -1);
        assert_int_equal(access(tmp, F_OK), -1);
        gz = gzopen(dst, "rb");
        assert_non_null(gz);
        assert_int_equal(gzread(gz, back, sizeof(back) - 1), (int) strlen(text));
        gzclose(gz);
        assert_string_equal(back, text);
        /* a missing source: an error naming it */
        assert_int_equal(logs_compress(src, dst, &err), -ENOENT);
        assert_non_null(strstr(err.msg, src));
        assert_int_equal(unlink(dst), 0);
        assert_int_equal(rmdir(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse), cmocka_unit_test(test_render), cmocka_unit_test(test_tail),
                cmocka_unit_test(test_names), cmocka_unit_test(test_plan),   cmocka_unit_test(test_compress),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
