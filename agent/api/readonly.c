/* SPDX-License-Identifier: Apache-2.0 */
/* The read-only port's paths: /healthz, /livez, /readyz, /pods, /metrics,
 * /metrics/resource, /stats/summary (http-internal.h). The kubelet server's
 * own are kubelet.c's. */
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/cleanup.h"
#include "../util/time.h"
#include "http-internal.h"
#include "metrics.h"
#include "resource.h"

static enum MHD_Result reply_copy(struct MHD_Connection *c, const char *ctype, const char *text) {
        char *b = strdup(text ? text : "");

        return b ? api_http_reply(c, MHD_HTTP_OK, ctype, b, strlen(b)) : MHD_NO;
}

static enum MHD_Result find_key(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        (void) kind;
        (void) value;
        if (strcmp(key, "verbose") == 0)
                *(bool *) cls = true;
        return MHD_YES;
}

/* The read-only port's paths (the kubelet server's own are request.c's):
 * kubelet's mux, a trailing slash where it takes one. */
typedef enum HttpRoute {
        ROUTE_HEALTHZ,
        ROUTE_LIVEZ,
        ROUTE_READYZ,
        ROUTE_PODS,
        ROUTE_METRICS,
        ROUTE_METRICS_RESOURCE,
        ROUTE_STATS_SUMMARY,
        ROUTE_NONE,
} HttpRoute;

static HttpRoute route_of(const char *url) {
        static const struct {
                const char *path;
                HttpRoute route;
        } routes[] = {
                { "/healthz", ROUTE_HEALTHZ },
                { "/livez", ROUTE_LIVEZ },
                { "/readyz", ROUTE_READYZ },
                { "/pods", ROUTE_PODS },
                { "/pods/", ROUTE_PODS },
                { "/metrics", ROUTE_METRICS },
                { "/metrics/resource", ROUTE_METRICS_RESOURCE },
                { "/stats/summary", ROUTE_STATS_SUMMARY },
                { "/stats/summary/", ROUTE_STATS_SUMMARY },
        };

        for (size_t i = 0; i < ELEMENTSOF(routes); i++)
                if (strcmp(url, routes[i].path) == 0)
                        return routes[i].route;
        return ROUTE_NONE;
}

/* /healthz (loop and runtime), /livez (loop), /readyz (loop, first relist,
 * runtime up now): "ok", or kubelet's "[-]check failed: why" lines and 500. */
static enum MHD_Result health(ApiHttp *h, struct MHD_Connection *c, HttpRoute which) {
        uint64_t now = cub_now_usec(CLOCK_MONOTONIC), age, down = atomic_load(&h->runtime_down_since);
        bool verbose = false, ok = true;
        bool live = which == ROUTE_LIVEZ, ready = which == ROUTE_READYZ;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f)
                return MHD_NO;
        (void) MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, find_key, &verbose);
        fputs("[+]ping ok\n", f);
        if (api_http_loop_alive(h, now, &age))
                fputs("[+]syncloop ok\n", f);
        else {
                fprintf(f, "[-]syncloop failed: the loop has not run for %llu s (watchdog %llu s)\n",
                        (unsigned long long) (age / CUB_USEC_PER_SEC),
                        (unsigned long long) (h->stall_usec / CUB_USEC_PER_SEC));
                ok = false;
        }
        if (!live) {
                bool rt_ok = ready ? down == 0 : down == 0 || now - down < API_HTTP_RUNTIME_DOWN_USEC;

                if (rt_ok)
                        fputs("[+]runtime ok\n", f);
                else {
                        fprintf(f, "[-]runtime failed: the container runtime has been unreachable for %llu s\n",
                                (unsigned long long) ((now - down) / CUB_USEC_PER_SEC));
                        ok = false;
                }
        }
        if (ready) {
                char net[sizeof(h->network_error)];

                pthread_mutex_lock(&h->lock);
                memcpy(net, h->network_error, sizeof(net));
                pthread_mutex_unlock(&h->lock);
                if (!*net)
                        fputs("[+]runtime-network ok\n", f);
                else {
                        fprintf(f, "[-]runtime-network failed: %s\n", net);
                        ok = false;
                }
        }
        if (ready) {
                if (atomic_load(&h->synced))
                        fputs("[+]synced ok\n", f);
                else {
                        fputs("[-]synced failed: the runtime has not been listed yet\n", f);
                        ok = false;
                }
        }
        fprintf(f, "%s check %s\n", live ? "livez" : ready ? "readyz" : "healthz", ok ? "passed" : "failed");
        if (fclose(f) != 0)
                return MHD_NO;
        if (ok && !verbose)
                return api_http_reply_text(c, MHD_HTTP_OK, "ok");
        return api_http_reply(c, ok ? MHD_HTTP_OK : MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8",
                              TAKE_PTR(text), len);
}

static enum MHD_Result metrics(ApiHttp *h, struct MHD_Connection *c, ApiSnapshot *s, bool resource) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        int r;

        if (!f)
                return MHD_NO;
        if (resource)
                r = api_resource_metrics(s, h->cgroup_root, h->proc, f);
        else {
                fputs(s->metrics ? s->metrics : "", f);
                r = api_metrics_render_process(h->proc, f);
        }
        if (fclose(f) != 0 || r < -ENOMEM) {
                free(text);
                return MHD_NO;
        }
        return api_http_reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

enum MHD_Result api_readonly_serve(ApiHttp *h, struct MHD_Connection *c, const char *url) {
        HttpRoute route = route_of(url);
        ApiSnapshot *s;
        enum MHD_Result r;

        switch (route) {
        case ROUTE_NONE:
                return api_http_reply_text(c, MHD_HTTP_NOT_FOUND, "404 page not found\n");
        case ROUTE_HEALTHZ:
        case ROUTE_LIVEZ:
        case ROUTE_READYZ:
                return health(h, c, route);
        default:
                break;
        }
        s = api_http_snapshot(h);
        if (!s)
                return api_http_reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "503 the agent is starting\n");
        switch (route) {
        case ROUTE_PODS:
                r = reply_copy(c, "application/json", s->pods_json);
                break;
        case ROUTE_METRICS:
        case ROUTE_METRICS_RESOURCE:
                r = metrics(h, c, s, route == ROUTE_METRICS_RESOURCE);
                break;
        default: {
                char *doc = api_stats_summary(s, h->cgroup_root, h->proc, h->fs_path);

                r = doc ? api_http_reply(c, MHD_HTTP_OK, "application/json", doc, strlen(doc)) : MHD_NO;
        }
        }
        api_snapshot_unref(s);
        return r;
}
