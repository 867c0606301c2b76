/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the routes of the read-only port (readonly.c) and of the kubelet
 * server (kubelet.c) use of the HTTP server (http.c): its state, its
 * snapshot, its answers, its runtime and its sessions. */

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conns.h"
#include "http.h"
#include "request.h"
#include "stream.h"

/* The server's state: http.c owns and writes it; the route files read it. */
struct ApiHttp {
        char *address, *cgroup_root, *proc, *fs_path;
        uint64_t stall_usec;
        char *cert, *key, *ca; /* PEM text when TLS */
        struct MHD_Daemon *d;
        ApiConns *conns; /* the slots and header deadlines (conns.h) */
        pthread_mutex_t lock;
        pthread_cond_t fresh; /* a snapshot was published */
        ApiSnapshot *snap;    /* under lock */
        _Atomic uint64_t heartbeat, runtime_down_since;
        atomic_bool wanted, synced;
        int wake_fd;             /* not owned */
        char network_error[768]; /* under lock: why the runtime's network is not ready, "" = it is */
        unsigned port;
        /* the kubelet server's (NULL otherwise) */
        ApiAuth *auth;
        char *runtime_endpoint;
        ApiStreams *streams;
        atomic_bool stopping;
};

/* the loop ran within stall_usec of now; *ret_age: since its last beat */
bool api_http_loop_alive(ApiHttp *h, uint64_t now, uint64_t *ret_age);

/* ---- readonly.c: the read-only port's paths ------------------------------------ */

/* /healthz, /livez, /readyz, /pods, /metrics, /metrics/resource,
 * /stats/summary (a GET or HEAD without a body); 404 for any other path */
enum MHD_Result api_readonly_serve(ApiHttp *h, struct MHD_Connection *c, const char *url);

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
