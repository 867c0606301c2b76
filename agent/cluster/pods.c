/* SPDX-License-Identifier: Apache-2.0 */
/* List and watch of the node's pods, on the loop: one request at a time
 * (the list, then one watch after another). */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/retry.h"
#include "../util/time.h"
#include "pods-cache.h"
#include "pods.h"

/* client-go's reflector: a watch asks the server to end it after a random
 * 5-10 minutes; failures back off from 800 ms (here 1 s) to 30 s */
#define WATCH_MIN_S 300
#define WATCH_SPREAD_S 300
static const CubRetryPolicy watch_retry = {
        .base_usec = 1 * CUB_USEC_PER_SEC,
        .max_usec = 30 * CUB_USEC_PER_SEC,
        .factor = 2,
        .jitter_pct = 0,
};

struct KubePods {
        KubeClient *client;
        char *node, *selector; /* the field selector, URL-escaped */
        KubePodsFn fn;
        void *userdata;
        sd_event_source *timer;
        uint64_t req;
        json_t *set; /* uid → Pod */
        char rv[64];
        bool synced, relist;
        CubRetry retry;
        uint64_t lists, watches, events;
        uint64_t watch_start_usec, watch_start_events; /* of the watch under way */
        /* kube_pods_set_cache */
        char *cache_path, *cache_fp, cache_error[CUB_ERR_MSG_MAX];
        bool offline_start;
        json_t *offline; /* the file's pods until the first list, when offline_start */
        size_t offline_started;
        uint64_t cache_writes;
};

static uint64_t now_mono(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

static void arm(KubePods *p, uint64_t at) {
        (void) sd_event_source_set_time(p->timer, at);
        (void) sd_event_source_set_enabled(p->timer, SD_EVENT_ONESHOT);
}

/* the set to fn, and to the file when its pods changed */
static void deliver(KubePods *p) {
        _cleanup_free_ char *fp = p->cache_path ? kube_pods_cache_fingerprint(p->set) : NULL;
        CubError err = {};
        size_t n;

        p->fn(p->userdata, p->set);
        if (!fp || (p->cache_fp && strcmp(fp, p->cache_fp) == 0))
                return;
        if (kube_pods_cache_write(p->cache_path, p->node, p->set, &n, &err) < 0) {
                if (strcmp(p->cache_error, err.msg) != 0)
                        cub_log(LOG_WARNING, "API server: pods file: %s; written again with the next change", err.msg);
                (void) snprintf(p->cache_error, sizeof(p->cache_error), "%s", err.msg);
                return;
        }
        p->cache_error[0] = 0;
        p->cache_writes++;
        free(p->cache_fp);
        p->cache_fp = TAKE_PTR(fp);
}

static void failed(KubePods *p, const char *what, const char *error) {
        if (cub_retry_failed(&p->retry, &watch_retry, now_mono(), error, cub_retry_draw()))
                cub_log(LOG_WARNING, "API server: pods: %s: %s; retrying", what, error);
        arm(p, p->retry.next_usec);
        /* offlinePods: start: the first list failed, the node starts what it ran */
        if (!p->synced && p->offline && !p->offline_started) {
                p->offline_started = json_object_size(p->offline);
                cub_log(LOG_WARNING,
                        "API server: unreachable at the start: the %zu pods of its last list from '%s' "
                        "(offlinePods: start) until a list answers",
                        p->offline_started, p->cache_path);
                if (p->offline_started)
                        p->fn(p->userdata, p->offline);
        }
}

static void succeeded(KubePods *p) {
        if (cub_retry_succeeded(&p->retry))
                cub_log(LOG_INFO, "API server: pods: working again");
}

static const char *uid_of(const json_t *o) {
        return json_string_value(json_object_get(json_object_get(o, "metadata"), "uid"));
}

static void take_rv(KubePods *p, const json_t *meta) {
        const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));

        if (rv)
                (void) snprintf(p->rv, sizeof(p->rv), "%s", rv);
}

static void on_line(void *userdata, const char *line, size_t len) {
        KubePods *p = userdata;
        json_error_t jerr;
        json_t *ev = json_loadb(line, len, 0, &jerr), *obj = json_object_get(ev, "object");
        const char *type = json_string_value(json_object_get(ev, "type")), *uid = uid_of(obj);

        if (!ev || !type || !json_is_object(obj)) {
                cub_log(LOG_WARNING, "API server: pods: a watch event that is not one (%s); listing again",
                        ev ? "no type or object" : jerr.text);
                p->relist = true;
                json_decref(ev);
                return;
        }
        p->events++;
        if (strcmp(type, "ERROR") == 0) {
                /* 410 Gone: the version is too old; anything else: list again too */
                cub_log(json_integer_value(json_object_get(obj, "code")) == 410 ? LOG_INFO : LOG_WARNING,
                        "API server: pods: the watch ended: %s (%lld); listing again",
                        json_string_value(json_object_get(obj, "message")) ?: "no message",
                        (long long) json_integer_value(json_object_get(obj, "code")));
                p->relist = true;
        } else if (strcmp(type, "BOOKMARK") == 0) {
                take_rv(p, json_object_get(obj, "metadata"));
        } else if (uid && (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)) {
                take_rv(p, json_object_get(obj, "metadata"));
                json_object_set(p->set, uid, obj);
                deliver(p);
        } else if (uid && strcmp(type, "DELETED") == 0) {
                take_rv(p, json_object_get(obj, "metadata"));
                json_object_del(p->set, uid);
                deliver(p);
        }
        json_decref(ev);
}

static void step(KubePods *p);

static void on_watch_end(void *userdata, long status, json_t *body, const char *error) {
        KubePods *p = userdata;

        (void) body;
        p->req = 0;
        if (status == 410)
                p->relist = true;
        else if (*error) {
                failed(p, "watch", error);
                return;
        } else if (now_mono() < p->watch_start_usec + CUB_USEC_PER_SEC && p->events == p->watch_start_events) {
                /* client-go's reflector: a server that closes every watch at once is not watched in a loop */
                failed(p, "watch", "very short watch: it lasted less than a second and no items were received");
                return;
        }
        succeeded(p);
        step(p); /* ended by the server's timeout, or a 410: go on at once */
}

static void on_list(void *userdata, long status, json_t *body, const char *error) {
        KubePods *p = userdata;
        json_t *items = json_object_get(body, "items"), *o;
        size_t i;

        (void) status;
        p->req = 0;
        if (*error || !json_is_array(items)) {
                failed(p, "list", *error ? error : "the answer has no items");
                return;
        }
        succeeded(p);
        p->lists++;
        json_object_clear(p->set);
        json_array_foreach(items, i, o)
                if (uid_of(o))
                        json_object_set(p->set, uid_of(o), o);
        take_rv(p, json_object_get(body, "metadata"));
        if (!p->synced)
                cub_log(LOG_INFO, "API server: %zu pods bound to node '%s'", json_object_size(p->set), p->node);
        p->synced = true;
        p->relist = false;
        json_decref(p->offline);
        p->offline = NULL;
        deliver(p);
        step(p);
}

static void step(KubePods *p) {
        char path[1024];
        CubError err = {};
        int r;

        if (p->req)
                return;
        if (!p->synced || p->relist) {
                (void) snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=%s&limit=500&resourceVersion=0",
                                p->selector);
                r = kube_client_request(p->client, "GET", path, NULL, NULL, on_list, p, &p->req, &err);
        } else {
                unsigned t = WATCH_MIN_S + cub_retry_draw() % WATCH_SPREAD_S;

                (void) snprintf(path, sizeof(path),
                                "/api/v1/pods?fieldSelector=%s&watch=true&allowWatchBookmarks=true&resourceVersion=%s"
                                "&timeoutSeconds=%u",
                                p->selector, p->rv, t);
                r = kube_client_watch(p->client, path, on_line, on_watch_end, p, (t + 30) * CUB_USEC_PER_SEC, &p->req,
                                      &err);
                p->watches += r >= 0;
                p->watch_start_usec = now_mono();
                p->watch_start_events = p->events;
        }
        if (r < 0)
                failed(p, "request", err.msg);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        step(userdata);
        return 0;
}

int kube_pods_new(sd_event *e, KubeClient *c, const char *node_name, KubePodsFn fn, void *userdata, KubePods **ret,
                  CubError *err) {
        KubePods *p = calloc(1, sizeof(*p));
        char *esc = NULL, sel[512];
        int r;

        (void) snprintf(sel, sizeof(sel), "spec.nodeName=%s", node_name);
        if (!p || !(p->node = strdup(node_name)) || !(p->set = json_object()) ||
            !(esc = curl_easy_escape(NULL, sel, 0)) || !(p->selector = strdup(esc))) {
                curl_free(esc);
                kube_pods_free(p);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        curl_free(esc);
        p->client = c;
        p->fn = fn;
        p->userdata = userdata;
        r = sd_event_add_time(e, &p->timer, CLOCK_MONOTONIC, 0, CUB_USEC_PER_MSEC, on_timer, p);
        if (r < 0) {
                kube_pods_free(p);
                return cub_err_set(err, -r, "pods: sd-event: %s", strerror(-r));
        }
        (void) sd_event_source_set_enabled(p->timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(p->timer, "kube-pods");
        *ret = p;
        return 0;
}

KubePods *kube_pods_free(KubePods *p) {
        if (!p)
                return NULL;
        if (p->client && p->req)
                kube_client_cancel(p->client, p->req);
        p->timer = sd_event_source_disable_unref(p->timer);
        json_decref(p->set);
        json_decref(p->offline);
        free(p->cache_path);
        free(p->cache_fp);
        free(p->node);
        free(p->selector);
        free(p);
        return NULL;
}

int kube_pods_set_cache(KubePods *p, const char *dir, bool offline_start, CubError *err) {
        free(p->cache_path);
        if (asprintf(&p->cache_path, "%s/" KUBE_PODS_FILE, dir) < 0)
                return p->cache_path = NULL, cub_err_set(err, ENOMEM, "out of memory");
        p->offline_start = offline_start;
        return 0;
}

void kube_pods_start(KubePods *p) {
        CubError err = {};

        if (p->cache_path && p->offline_start) {
                p->offline = kube_pods_cache_read(p->cache_path, p->node, &err);
                if (p->offline)
                        p->cache_fp = kube_pods_cache_fingerprint(p->offline);
                else
                        cub_log(err.code == ENOENT ? LOG_INFO : LOG_WARNING,
                                "API server: pods file: %s: nothing starts before the first list", err.msg);
        }
        arm(p, now_mono());
}

const json_t *kube_pods_set(const KubePods *p) {
        return p->set;
}

bool kube_pods_synced(const KubePods *p) {
        return p && p->synced;
}

json_t *kube_pods_status_json(const KubePods *p) {
        return json_pack("{s:b,s:I,s:s,s:I,s:I,s:I,s:s,s:o*}", "synced", p->synced, "pods",
                         (json_int_t) json_object_size(p->set), "resourceVersion", p->rv, "lists",
                         (json_int_t) p->lists, "watches", (json_int_t) p->watches, "events", (json_int_t) p->events,
                         "error", p->retry.failures ? p->retry.error : "", "file",
                         p->cache_path ? json_pack("{s:s,s:s,s:I,s:I,s:s}", "path", p->cache_path, "offlinePods",
                                                   p->offline_start ? "start" : "keep", "writes",
                                                   (json_int_t) p->cache_writes, "startedOffline",
                                                   (json_int_t) p->offline_started, "error", p->cache_error)
                                       : NULL);
}
