/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: what a client of the kubelet server and the runtime's
 * streaming server send (agent/api/request.h). An input is a request as
 * text: "METHOD PATH[?QUERY]" on its first line, header lines, an empty
 * line, then the runtime's answer head. The path is routed for the method
 * and for each other method; the query's arguments (split at '&' and the
 * first '=', as libmicrohttpd hands them over) are read as /containerLogs'
 * options and the streams' flags; each header is judged for the runtime;
 * the first header's value is split as the runtime's URL; the answer's
 * head is read for its status and headers. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/api/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 32

typedef struct Args {
        char *key[MAX_ARGS], *value[MAX_ARGS];
        size_t n;
} Args;

static const char *get_arg(void *ctx, const char *key) {
        Args *a = ctx;

        for (size_t i = 0; i < a->n; i++)
                if (strcmp(a->key[i], key) == 0)
                        return a->value[i];
        return NULL;
}

static void count_header(void *ctx, const char *key, const char *value) {
        *(size_t *) ctx += strlen(key) + strlen(value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "DELETE" };
        char *text = malloc(size + 1), *line, *rest, *method, *path, *query, *save = NULL, *head;
        char *host, *port, *upath, *uquery;
        const char *first_value = NULL;
        Args args = {};
        ApiKubeletRoute r;
        LogsReadOptions o;
        CubError err = {};
        unsigned status;
        size_t n = 0;

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        rest = text;
        line = strsep(&rest, "\n");
        method = strsep(&line, " ");
        path = line ? line : (char *) "/";
        query = strchr(path, '?');
        if (query)
                *query++ = '\0';
        for (size_t i = 0; i < sizeof(methods) / sizeof(*methods) + 1; i++)
                if (api_kubelet_route(path, i < 5 ? methods[i] : method, &r) == 0) {
                        /* a route is a kubelet path with its parts */
                        if (!api_kubelet_path(path) || !r.ns || !r.pod || !*r.ns || !*r.pod ||
                            (r.kind != API_KUBELET_PORT_FORWARD && !r.container))
                                abort();
                        api_kubelet_route_done(&r);
                }
        for (char *kv = query ? strtok_r(query, "&", &save) : NULL; kv && args.n < MAX_ARGS;
             kv = strtok_r(NULL, "&", &save)) {
                char *eq = strchr(kv, '=');

                if (eq)
                        *eq++ = '\0';
                args.key[args.n] = kv;
                args.value[args.n++] = eq ? eq : (char *) "";
        }
        (void) api_log_options_parse(get_arg, &args, 1796256000, &o);
        (void) api_stream_flags(get_arg, &args);
        /* the headers, to the empty line; then the runtime's head */
        while (rest && *rest && *rest != '\n') {
                char *h = strsep(&rest, "\n"), *colon = strchr(h, ':');

                if (colon) {
                        *colon = '\0';
                        (void) api_stream_header_passes(h, colon + 1);
                        if (!first_value)
                                first_value = colon + 1;
                }
        }
        if (first_value && api_stream_split_url(first_value, &host, &port, &upath, &uquery, &err) == 0) {
                free(host);
                free(port);
                free(upath);
                free(uquery);
        }
        head = rest ? rest + (*rest == '\n') : NULL;
        if (head && api_stream_head_status(head, &status) == 0)
                api_stream_head_headers(head, count_header, &n);
        free(text);
        return 0;
}
