/* SPDX-License-Identifier: Apache-2.0 */
/* What a kubelet server's client and the runtime send, read
 * (agent/api/request.c): each path's route and status, /containerLogs'
 * options as kubelet validates them (a sinceSeconds beyond the epoch is
 * every line, not an overflow), the headers that go on to the runtime,
 * and the runtime's answer head. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/api/request.h"

static void test_route(void **state) {
        static const struct {
                const char *url, *method;
                unsigned status;
                const char *want; /* kind ns pod uid container */
        } cases[] = {
                { "/containerLogs/default/web/nginx", "GET", 0, "containerLogs default web - nginx" },
                { "/containerLogs/default/web/nginx", "HEAD", 0, "containerLogs default web - nginx" },
                { "/containerLogs/default/web/nginx", "POST", 405, NULL },
                { "/containerLogs/default/web", "GET", 404, NULL },
                { "/containerLogs/default/web/uid/nginx", "GET", 404, NULL },
                { "/exec/default/web/nginx", "POST", 0, "exec default web - nginx" },
                { "/exec/default/web/7f0c/nginx", "GET", 0, "exec default web 7f0c nginx" },
                { "/exec/default/web/7f0c/nginx", "DELETE", 405, NULL },
                { "/exec//default//web///nginx", "GET", 0, "exec default web - nginx" },
                { "/attach/ns/p/u/c/extra", "GET", 404, NULL },
                { "/portForward/ns/p", "GET", 0, "portForward ns p - -" },
                { "/portForward/ns/p/u", "POST", 0, "portForward ns p u -" },
                { "/portForward/ns", "GET", 404, NULL },
                { "/exec/", "GET", 404, NULL },
                { "/healthz", "GET", 404, NULL },
                { "/execx/a/b/c", "GET", 404, NULL },
        };

        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                ApiKubeletRoute r;
                unsigned st = api_kubelet_route(cases[i].url, cases[i].method, &r);
                char got[256];

                if (st != cases[i].status)
                        fail_msg("%s %s: %u, want %u", cases[i].method, cases[i].url, st, cases[i].status);
                if (st)
                        continue;
                (void) snprintf(got, sizeof(got), "%s %s %s %s %s", r.kind_name, r.ns, r.pod, r.uid ? r.uid : "-",
                                r.container ? r.container : "-");
                if (strcmp(got, cases[i].want) != 0)
                        fail_msg("%s: '%s', want '%s'", cases[i].url, got, cases[i].want);
                api_kubelet_route_done(&r);
        }
        assert_true(api_kubelet_path("/portForward/x"));
        assert_false(api_kubelet_path("/pods"));
}

typedef struct Query {
        const char *const *kv; /* key, value, ..., NULL */
} Query;

static const char *get(void *ctx, const char *key) {
        const Query *q = ctx;

        for (size_t i = 0; q->kv[i]; i += 2)
                if (strcmp(q->kv[i], key) == 0)
                        return q->kv[i + 1];
        return NULL;
}

static int opts(LogsReadOptions *o, const char *const *kv) {
        Query q = { kv };

        return api_log_options_parse(get, &q, 1800000000, o);
}

static void test_log_options(void **state) {
        LogsReadOptions o;

        (void) state;
        assert_int_equal(opts(&o, (const char *[]){ "follow", "true", "tailLines", "10", "timestamps", "1", NULL }), 0);
        assert_true(o.follow && o.timestamps && !o.previous);
        assert_int_equal(o.tail_lines, 10);
        assert_int_equal(o.stream, -1);
        assert_int_equal(opts(&o, (const char *[]){ "sinceSeconds", "60", NULL }), 0);
        assert_int_equal(o.since_unix_ns, (1800000000LL - 60) * 1000000000LL);
        /* beyond the epoch: every line (was a signed overflow) */
        assert_int_equal(opts(&o, (const char *[]){ "sinceSeconds", "9223372036854775807", NULL }), 0);
        assert_int_equal(o.since_unix_ns, 1);
        assert_int_equal(opts(&o, (const char *[]){ "sinceTime", "2026-12-03T10:00:00.5Z", NULL }), 0);
        assert_int_equal(o.since_unix_ns, 1796292000LL * 1000000000LL);
        assert_int_equal(opts(&o, (const char *[]){ "tail", "all", NULL }), 0);
        assert_int_equal(o.tail_lines, -1);
        assert_int_equal(opts(&o, (const char *[]){ "stream", "Stderr", NULL }), 0);
        assert_int_equal(o.stream, LOGS_STDERR);
        /* kubelet's 422s */
        assert_int_equal(opts(&o, (const char *[]){ "sinceSeconds", "0", NULL }), -EINVAL);
        assert_int_equal(opts(&o, (const char *[]){ "sinceSeconds", "5", "sinceTime", "2026-12-03T10:00:00Z", NULL }),
                         -EINVAL);
        assert_int_equal(opts(&o, (const char *[]){ "limitBytes", "0", NULL }), -EINVAL);
        assert_int_equal(opts(&o, (const char *[]){ "tailLines", "-1", NULL }), -EINVAL);
        assert_int_equal(opts(&o, (const char *[]){ "tailLines", "1x", NULL }), -EINVAL);
        assert_int_equal(opts(&o, (const char *[]){ "stream", "Stdout", "tailLines", "3", NULL }), -EINVAL);
        assert_int_equal(opts(&o, (const char *[]){ "stream", "stdout", NULL }), -EINVAL);
        assert_int_equal(opts(&o, (const char *[]){ "sinceTime", "yesterday", NULL }), -EINVAL);
}

static void test_stream(void **state) {
        Query q = { (const char *[]){ "input", "1", "stdout", "true", "tty", "TRUE", "stderr", "0", NULL } };
        CriStreamFlags f = api_stream_flags(get, &q);

        (void) state;
        assert_true(f.in && f.out && f.tty && !f.err);
        assert_true(api_stream_header_passes("Upgrade", "SPDY/3.1"));
        assert_true(api_stream_header_passes("X-Stream-Protocol-Version", "v4.channel.k8s.io"));
        assert_false(api_stream_header_passes("authorization", "Bearer x"));
        assert_false(api_stream_header_passes("Host", "evil"));
        assert_false(api_stream_header_passes("X-Injected", "a\r\nHost: evil"));
        assert_false(api_stream_header_passes("", "x"));
}

static void collect(void *ctx, const char *key, const char *value) {
        size_t n = strlen(ctx);

        (void) snprintf((char *) ctx + n, 256 - n, "%s=%s;", key, value);
}

static void test_head(void **state) {
        char head[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                      "Date: x\r\nX-Stream-Protocol-Version:  v4.channel.k8s.io\r\nno colon";
        char copy[sizeof(head)], got[256] = "";
        unsigned status = 0;
        char *host, *port, *path, *query;
        CubError err = {};

        (void) state;
        memcpy(copy, head, sizeof(head));
        assert_int_equal(api_stream_head_status(head, &status), 0);
        assert_int_equal(status, 101);
        api_stream_head_headers(head, collect, got);
        assert_string_equal(got, "Upgrade=SPDY/3.1;X-Stream-Protocol-Version=v4.channel.k8s.io;");
        assert_memory_equal(head, copy, sizeof(head)); /* restored */
        assert_int_equal(api_stream_head_status("HTTP/2 200 OK", &status), -EPROTO);
        assert_int_equal(api_stream_head_status("HTTP/1.1 99 x", &status), -EPROTO);
        assert_int_equal(api_stream_split_url("http://[::1]:35000/exec/AbC?x=1", &host, &port, &path, &query, &err), 0);
        assert_string_equal(host, "::1");
        assert_string_equal(port, "35000");
        assert_string_equal(path, "/exec/AbC");
        assert_string_equal(query, "x=1");
        free(host);
        free(port);
        free(path);
        free(query);
        assert_int_equal(api_stream_split_url("not a url", &host, &port, &path, &query, &err), -EPROTO);
        assert_null(host);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_route),
                cmocka_unit_test(test_log_options),
                cmocka_unit_test(test_stream),
                cmocka_unit_test(test_head),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
