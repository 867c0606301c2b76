/* SPDX-License-Identifier: Apache-2.0 */
/* What clients and the runtime send the kubelet server, read (request.h). */
#include "request.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../util/cleanup.h"

static const struct {
        const char *prefix, *name;
        ApiKubeletKind kind;
} kinds[] = {
        { "/containerLogs/", "containerLogs", API_KUBELET_LOGS },
        { "/exec/", "exec", API_KUBELET_EXEC },
        { "/attach/", "attach", API_KUBELET_ATTACH },
        { "/portForward/", "portForward", API_KUBELET_PORT_FORWARD },
};

bool api_kubelet_path(const char *url) {
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                if (strncmp(url, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
                        return true;
        return false;
}

void api_kubelet_route_done(ApiKubeletRoute *r) {
        free(r->buf);
        *r = (ApiKubeletRoute){};
}

unsigned api_kubelet_route(const char *url, const char *method, ApiKubeletRoute *r) {
        char *parts[5] = {}, *save = NULL;
        size_t n = 0, i;
        bool logs;

        *r = (ApiKubeletRoute){};
        for (i = 0; i < ELEMENTSOF(kinds); i++)
                if (strncmp(url, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
                        break;
        if (i == ELEMENTSOF(kinds))
                return 404;
        r->kind = kinds[i].kind;
        r->kind_name = kinds[i].name;
        r->buf = strdup(url + strlen(kinds[i].prefix));
        if (!r->buf)
                return 500;
        /* the parts after the prefix, split at '/' (empty ones skipped, as the mux cleans the path) */
        for (char *t = strtok_r(r->buf, "/", &save); t && n < ELEMENTSOF(parts); t = strtok_r(NULL, "/", &save))
                parts[n++] = t;
        logs = r->kind == API_KUBELET_LOGS;
        if (r->kind == API_KUBELET_LOGS           ? n != 3
            : r->kind == API_KUBELET_PORT_FORWARD ? n < 2 || n > 3
                                                  : n < 3 || n > 4) {
                api_kubelet_route_done(r);
                return 404;
        }
        if (logs ? strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0
                 : strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0) {
                api_kubelet_route_done(r);
                return 405;
        }
        r->ns = parts[0];
        r->pod = parts[1];
        if (r->kind == API_KUBELET_PORT_FORWARD)
                r->uid = n == 3 ? parts[2] : NULL;
        else {
                r->uid = n == 4 ? parts[2] : NULL;
                r->container = parts[n - 1];
        }
        return 0;
}

static bool arg_true(ApiArgFn arg, void *ctx, const char *key) {
        const char *v = arg(ctx, key);

        return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0);
}

/* a non-negative integer argument: 0 and *ret (def when absent), -EINVAL */
static int arg_int(ApiArgFn arg, void *ctx, const char *key, int64_t def, int64_t *ret) {
        const char *v = arg(ctx, key);
        char *end;

        *ret = def;
        if (!v)
                return 0;
        errno = 0;
        *ret = strtoll(v, &end, 10);
        return errno || end == v || *end || *ret < 0 ? -EINVAL : 0;
}

int api_log_options_parse(ApiArgFn arg, void *ctx, int64_t now_s, LogsReadOptions *o) {
        const char *tail = arg(ctx, "tail"), *since_time = arg(ctx, "sinceTime"), *stream = arg(ctx, "stream");
        int64_t since_s = -1;

        *o = (LogsReadOptions){ .follow = arg_true(arg, ctx, "follow"),
                                .previous = arg_true(arg, ctx, "previous"),
                                .timestamps = arg_true(arg, ctx, "timestamps"),
                                .stream = -1 };
        if (arg_int(arg, ctx, "tailLines", -1, &o->tail_lines) < 0 ||
            arg_int(arg, ctx, "limitBytes", 0, &o->limit_bytes) < 0 ||
            arg_int(arg, ctx, "sinceSeconds", -1, &since_s) < 0)
                return -EINVAL;
        /* the legacy "tail" (kubelet keeps it): a count, or "all" */
        if (tail && strcmp(tail, "all") != 0 && arg_int(arg, ctx, "tail", -1, &o->tail_lines) < 0)
                return -EINVAL;
        if (since_s == 0 || (since_s > 0 && since_time) || (arg(ctx, "limitBytes") && o->limit_bytes == 0))
                return -EINVAL; /* ValidatePodLogOptions: positive, one of the two */
        /* sinceSeconds beyond the epoch is every line (and no overflow) */
        if (since_s > 0)
                o->since_unix_ns = since_s >= now_s ? 1 : (now_s - since_s) * 1000000000LL;
        else if (since_time) {
                /* metav1.Time: whole seconds */
                if (logs_parse_timestamp(since_time, strlen(since_time), &o->since_unix_ns) < 0)
                        return -EINVAL;
                o->since_unix_ns -= o->since_unix_ns % 1000000000LL;
        }
        if (stream && strcmp(stream, "All") != 0)
                o->stream = strcmp(stream, "Stdout") == 0   ? LOGS_STDOUT
                            : strcmp(stream, "Stderr") == 0 ? LOGS_STDERR
                                                            : -2;
        if (o->stream == -2 || (o->stream != -1 && o->tail_lines >= 0))
                return -EINVAL; /* tailLines goes with stream All only (1.34's validation) */
        return 0;
}

CriStreamFlags api_stream_flags(ApiArgFn arg, void *ctx) {
        return (CriStreamFlags){ .in = arg_true(arg, ctx, "stdin") || arg_true(arg, ctx, "input"),
                                 .out = arg_true(arg, ctx, "stdout") || arg_true(arg, ctx, "output"),
                                 .err = arg_true(arg, ctx, "stderr") || arg_true(arg, ctx, "error"),
                                 .tty = arg_true(arg, ctx, "tty") };
}

bool api_stream_header_passes(const char *key, const char *value) {
        static const char *const hop[] = {
                "Host", "Authorization", "Content-Length", "Transfer-Encoding", "Proxy-Authorization", "Keep-Alive"
        };

        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (strcasecmp(key, hop[i]) == 0)
                        return false;
        return !*key ? false : !strpbrk(key, "\r\n:") && (!value || !strpbrk(value, "\r\n"));
}

int api_stream_split_url(const char *url, char **host, char **port, char **path, char **query, CubError *err) {
        CURLU *u = curl_url();
        int r = 0;

        *host = *port = *path = *query = NULL;
        if (!u)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK || curl_url_get(u, CURLUPART_HOST, host, 0) ||
            curl_url_get(u, CURLUPART_PORT, port, CURLU_DEFAULT_PORT) || curl_url_get(u, CURLUPART_PATH, path, 0))
                r = cub_err_set(err, EPROTO, "the runtime's streaming URL '%s' does not parse", url);
        (void) curl_url_get(u, CURLUPART_QUERY, query, 0);
        curl_url_cleanup(u);
        if (r == 0 && *host && **host == '[') { /* an IPv6 literal */
                memmove(*host, *host + 1, strlen(*host));
                (*host)[strcspn(*host, "]")] = '\0';
        }
        if (r < 0) {
                curl_free(*host);
                curl_free(*port);
                curl_free(*path);
                curl_free(*query);
                *host = *port = *path = *query = NULL;
        }
        return r;
}

int api_stream_head_status(const char *head, unsigned *ret_status) {
        unsigned status = 0;

        if (sscanf(head, "HTTP/1.%*1[01] %3u", &status) != 1 || status < 100 || status > 599)
                return -EPROTO;
        *ret_status = status;
        return 0;
}

void api_stream_head_headers(char *head, ApiHeaderFn fn, void *ctx) {
        char *next;

        for (char *line = strstr(head, "\r\n"); line; line = next) {
                char *colon, *value;

                line += 2;
                next = strstr(line, "\r\n");
                if (next)
                        *next = '\0';
                colon = strchr(line, ':');
                if (colon) {
                        *colon = '\0';
                        value = colon + 1 + strspn(colon + 1, " \t");
                        /* libmicrohttpd writes its own framing and Connection */
                        if (*line && strcasecmp(line, "Connection") != 0 && strcasecmp(line, "Content-Length") != 0 &&
                            strcasecmp(line, "Transfer-Encoding") != 0 && strcasecmp(line, "Date") != 0)
                                fn(ctx, line, value);
                        *colon = ':';
                }
                if (next)
                        *next = '\r';
        }
}
