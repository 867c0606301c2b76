/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/api request: what a client of the kubelet server and the runtime's
 * streaming server send, read by pure functions (no connection, no
 * libmicrohttpd): the path's route, the query's log options and stream
 * flags, the client headers that go on to the runtime, the runtime's URL
 * and its answer's head. kubelet.c and stream.c call them on each request;
 * tests/fuzz/fuzz-kubelet-request.c feeds them anything.
 */

#include <stdbool.h>
#include <stdint.h>

#include "../../cri/cri.h"
#include "../logs/logs.h"
#include "../util/err.h"

typedef enum ApiKubeletKind {
        API_KUBELET_LOGS,
        API_KUBELET_EXEC,
        API_KUBELET_ATTACH,
        API_KUBELET_PORT_FORWARD,
} ApiKubeletKind;

typedef struct ApiKubeletRoute {
        ApiKubeletKind kind;
        const char *kind_name; /* "containerLogs", "exec", "attach", "portForward" */
        char *buf;             /* owns the parts below */
        const char *ns, *pod;
        const char *uid;       /* NULL when the path has none */
        const char *container; /* NULL for portForward */
} ApiKubeletRoute;

/* True when url is one of the kubelet server's own paths (its prefix). */
bool api_kubelet_path(const char *url);

/* The route of url (the path, no query) for method: 0 and *r (free with
 * api_kubelet_route_done), or the HTTP status that refuses it: 404 (not a
 * kubelet path, or not NS/POD/CONTAINER for logs, NS/POD[/UID]/CONTAINER
 * for exec and attach, NS/POD[/UID] for portForward), 405 (the method:
 * GET or HEAD for logs, GET or POST for the streams), 500 (out of memory). */
unsigned api_kubelet_route(const char *url, const char *method, ApiKubeletRoute *r);
void api_kubelet_route_done(ApiKubeletRoute *r);

/* a query argument's value, NULL when absent */
typedef const char *(*ApiArgFn)(void *ctx, const char *key);

/* /containerLogs' query as kubelet validates it (ValidatePodLogOptions):
 * follow, previous, timestamps, tailLines (or the legacy tail, a count or
 * "all"), limitBytes, sinceSeconds, sinceTime, stream; now_s: the time
 * sinceSeconds counts back from. -EINVAL when it is invalid (kubelet: 422). */
int api_log_options_parse(ApiArgFn arg, void *ctx, int64_t now_s, LogsReadOptions *o);

/* /exec and /attach's stdin/input, stdout/output, stderr/error, tty ("1" or "true") */
CriStreamFlags api_stream_flags(ApiArgFn arg, void *ctx);

/* Whether a client's header goes on to the runtime: not the hop's own
 * (Host, Authorization, Content-Length, Transfer-Encoding,
 * Proxy-Authorization, Keep-Alive), never one with CR or LF. */
bool api_stream_header_passes(const char *key, const char *value);

/* host (an IPv6 literal without brackets), port, path and query (NULL when
 * none) of the runtime's streaming URL, by libcurl's parser; -EPROTO */
int api_stream_split_url(const char *url, char **host, char **port, char **path, char **query, CubError *err);

/* The runtime's answer head (NUL-terminated, the blank line cut): its
 * status (100..599); -EPROTO when the first line is no HTTP/1.0 or 1.1
 * status. */
int api_stream_head_status(const char *head, unsigned *ret_status);
/* each of its headers that libmicrohttpd does not write itself (not
 * Connection, Content-Length, Transfer-Encoding, Date) to fn; head is
 * edited while fn runs and restored */
typedef void (*ApiHeaderFn)(void *ctx, const char *key, const char *value);
void api_stream_head_headers(char *head, ApiHeaderFn fn, void *ctx);
