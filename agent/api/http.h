/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/api http: the node's read-only HTTP API (kubelet's read-only port),
 * served by libmicrohttpd from its own thread. The loop never blocks on a
 * client: it publishes an immutable, refcounted ApiSnapshot (the PodList
 * and metrics text it rendered, the pods' cgroups), swapped under a mutex;
 * the HTTP thread takes a reference per request and reads the cgroup files
 * for /metrics/resource and /stats/summary itself. Health comes from two
 * atomics the loop stores every tick (its heartbeat, and since when the
 * runtime has been unreachable), so a stalled loop is seen as one.
 *
 * Freshness: the loop renders a snapshot on its next tick (1 s) after a
 * client asked (api_http_take_wanted); a request that finds the snapshot
 * older than API_HTTP_STALE_USEC (or none yet) wakes the loop at once
 * through the config's wake_fd (an eventfd the loop watches) and waits up
 * to that long for a fresh one.
 *
 *   GET /healthz /livez /readyz /pods /metrics /metrics/resource /stats/summary
 *   (HEAD too); other paths 404, other methods 405, a body 413.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "auth.h"

#define API_HTTP_STALE_USEC (2ULL * 1000000ULL)
#define API_HTTP_RUNTIME_DOWN_USEC (60ULL * 1000000ULL)

typedef struct ApiContainerRef {
        char *name;
        char *id; /* "" when it has no container yet */
        bool running;
        int64_t started_at; /* unix ns, 0 = unknown */
} ApiContainerRef;

typedef struct ApiPodRef {
        char *namespace_, *name, *uid;
        char *cgroup;       /* relative to the cgroup root */
        char *log_dir;      /* its logs: the pod's ephemeral storage */
        int64_t start_time; /* unix s */
        ApiContainerRef *containers;
        size_t n_containers;
} ApiPodRef;

typedef struct ApiSnapshot {
        int ref;
        uint64_t made_usec; /* CLOCK_MONOTONIC */
        char *node_name;
        char *pods_json; /* a v1 PodList */
        char *metrics;   /* the loop's part of /metrics */
        ApiPodRef *pods;
        size_t n_pods;
} ApiSnapshot;

ApiSnapshot *api_snapshot_new(void);
ApiSnapshot *api_snapshot_ref(ApiSnapshot *s);
ApiSnapshot *api_snapshot_unref(ApiSnapshot *s);
/* Appends a pod (copies the strings); returns it for its containers, NULL on ENOMEM. */
ApiPodRef *api_snapshot_add_pod(ApiSnapshot *s, const char *ns, const char *name, const char *uid, const char *cgroup,
                                const char *log_dir, int64_t start_time);
int api_pod_ref_add_container(ApiPodRef *p, const char *name, const char *id, bool running, int64_t started_at);

typedef struct ApiHttpConfig {
        const char *address; /* numeric IPv4 or IPv6 */
        unsigned port;
        const char *tls_cert_file, *tls_key_file, *client_ca_file; /* all or none */
        const char *cgroup_root;
        const char *proc;          /* "/proc" */
        const char *fs_path;       /* the node filesystem for /stats/summary (the state dir) */
        uint64_t stall_usec;       /* the loop is stalled after this long without a heartbeat */
        unsigned connection_limit; /* open at once; when full, one still sending its headers makes room (conns.h) */
        unsigned timeout_sec;      /* to send request headers (not reset by each byte), then the idle timeout */
        /* The kubelet server (port 10250) when set: TLS required, every
         * request authenticated and authorized (auth.h; the caller keeps it
         * alive), a thread per connection, and /containerLogs, /exec,
         * /attach, /portForward (kubelet.c) through the runtime at
         * runtime_endpoint. */
        ApiAuth *auth;
        const char *runtime_endpoint;
        int wake_fd; /* an eventfd the loop watches: written when a request waits for a snapshot; -1 = none */
} ApiHttpConfig;

void api_http_config_init(ApiHttpConfig *c);
bool api_http_address_is_loopback(const char *address);

typedef struct ApiHttp ApiHttp;

/* Starts the server thread. A non-loopback address without TLS and a
 * client CA is refused (EPERM), naming the fields to set. */
int api_http_new(const ApiHttpConfig *c, ApiHttp **ret, CubError *err);
ApiHttp *api_http_free(ApiHttp *h);
/* The port bound (useful with port 0 in tests... port 0 means off for the
 * agent; tests pass API_HTTP_PORT_ANY). */
#define API_HTTP_PORT_ANY 65536u
unsigned api_http_port(ApiHttp *h);

/* The loop's side. publish takes the caller's reference. */
void api_http_publish(ApiHttp *h, ApiSnapshot *s);
/* synced: the runtime was listed once (for /readyz). */
void api_http_heartbeat(ApiHttp *h, uint64_t now_usec, uint64_t runtime_down_since_usec, bool synced);
/* The runtime's network is not ready (kubelet's message), or is (NULL or
 * ""): /readyz fails with it meanwhile. */
void api_http_set_network(ApiHttp *h, const char *error);
/* Whether a client asked for data since the last call (and clears it). */
bool api_http_take_wanted(ApiHttp *h);
