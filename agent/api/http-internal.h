/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the kubelet server's routes (kubelet.c) use of the HTTP server
 * (http.c): its snapshot, its answers, its runtime and its sessions. */

#include <microhttpd.h>
#include <stdbool.h>

#include "conns.h"
#include "http.h"
#include "request.h"
#include "stream.h"

/* A reference to the newest snapshot (waits for a fresh one when stale);
 * NULL before the first. */
ApiSnapshot *api_http_snapshot(ApiHttp *h);
/* the same, no older than max_age_usec at the call (0: rendered after it) */
ApiSnapshot *api_http_snapshot_within(ApiHttp *h, uint64_t max_age_usec);
enum MHD_Result api_http_reply(struct MHD_Connection *c, unsigned status, const char *ctype, char *body, size_t len);
enum MHD_Result api_http_reply_text(struct MHD_Connection *c, unsigned status, const char *text);
const char *api_http_runtime_endpoint(ApiHttp *h);
ApiStreams *api_http_streams(ApiHttp *h);
ApiConns *api_http_conns(ApiHttp *h);
ApiConn *api_http_conn(struct MHD_Connection *c);
/* a client certificate that the clientCAFile verifies was presented */
bool api_http_client_cert_ok(struct MHD_Connection *c);
/* the server is stopping: long answers end */
bool api_http_stopping(ApiHttp *h);

/* ---- kubelet.c: the kubelet server's own paths ---------------------------------- */

/* The kubelet server's filter: 401 unless authenticated, 403 unless the
 * API server allows it (auth.h); true when the request goes on, else *ret
 * is the answer. */
bool api_kubelet_authorized(ApiAuth *a, struct MHD_Connection *c, const char *url, const char *method,
                            enum MHD_Result *ret);
/* /containerLogs/, /exec/, /attach/, /portForward/ */
enum MHD_Result api_kubelet_serve(ApiHttp *h, struct MHD_Connection *c, const char *url, const char *method);
