/* SPDX-License-Identifier: Apache-2.0 */
/* List and watch of one kind of API object, on the loop: one request at a
 * time (the list, then one watch after another). */
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
#include "reflector.h"

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

struct KubeReflector {
        KubeClient *client;
        char *what, *path, *selector; /* selector: "fieldSelector=...&" URL-escaped, or "" */
        KubeReflectorFn fn;
        KubeReflectorFailedFn failed_fn;
        void *userdata;
        sd_event_source *timer;
        uint64_t req;
        json_t *set; /* uid → object */
        char rv[64];
        bool synced, relist;
        CubRetry retry;
        uint64_t lists, watches, events;
        uint64_t watch_start_usec, watch_start_events; /* of the watch under way */
};

static uint64_t now_mono(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

static void arm(KubeReflector *r, uint64_t at) {
        (void) sd_event_source_set_time(r->timer, at);
        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
}

static void failed(KubeReflector *r, const char *what, const char *error) {
        if (cub_retry_failed(&r->retry, &watch_retry, now_mono(), error, cub_retry_draw()))
                cub_log(LOG_WARNING, "API server: %s: %s: %s; retrying", r->what, what, error);
        arm(r, r->retry.next_usec);
        if (r->failed_fn)
                r->failed_fn(r->userdata, r->synced);
}

static void succeeded(KubeReflector *r) {
        if (cub_retry_succeeded(&r->retry))
                cub_log(LOG_INFO, "API server: %s: working again", r->what);
}

static const char *uid_of(const json_t *o) {
        return json_string_value(json_object_get(json_object_get(o, "metadata"), "uid"));
}

static void take_rv(KubeReflector *r, const json_t *meta) {
        const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));

        if (rv)
                (void) snprintf(r->rv, sizeof(r->rv), "%s", rv);
}

int kube_watch_event(const char *line, size_t len, json_t **ret_event, const char **ret_type, json_t **ret_obj,
                     CubError *err) {
        json_error_t jerr;
        json_t *ev = json_loadb(line, len, 0, &jerr), *obj = json_object_get(ev, "object");
        const char *type = json_string_value(json_object_get(ev, "type"));

        *ret_event = NULL;
        if (!ev)
                return cub_err_set(err, EINVAL, "%s", jerr.text);
        if (!type || !json_is_object(obj)) {
                json_decref(ev);
                return cub_err_set(err, EINVAL, "no type or object");
        }
        *ret_event = ev;
        *ret_type = type;
        *ret_obj = obj;
        return 0;
}

static void on_line(void *userdata, const char *line, size_t len) {
        KubeReflector *r = userdata;
        json_t *ev, *obj;
        const char *type, *uid;
        CubError err = {};

        if (kube_watch_event(line, len, &ev, &type, &obj, &err) < 0) {
                cub_log(LOG_WARNING, "API server: %s: a watch event that is not one (%s); listing again", r->what,
                        err.msg);
                r->relist = true;
                return;
        }
        uid = uid_of(obj);
        r->events++;
        if (strcmp(type, "ERROR") == 0) {
                /* 410 Gone: the version is too old; anything else: list again too */
                cub_log(json_integer_value(json_object_get(obj, "code")) == 410 ? LOG_INFO : LOG_WARNING,
                        "API server: %s: the watch ended: %s (%lld); listing again", r->what,
                        json_string_value(json_object_get(obj, "message")) ?: "no message",
                        (long long) json_integer_value(json_object_get(obj, "code")));
                r->relist = true;
        } else if (strcmp(type, "BOOKMARK") == 0) {
                take_rv(r, json_object_get(obj, "metadata"));
        } else if (uid && (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)) {
                take_rv(r, json_object_get(obj, "metadata"));
                json_object_set(r->set, uid, obj);
                r->fn(r->userdata, r->set);
        } else if (uid && strcmp(type, "DELETED") == 0) {
                take_rv(r, json_object_get(obj, "metadata"));
                json_object_del(r->set, uid);
                r->fn(r->userdata, r->set);
        }
        json_decref(ev);
}

static void step(KubeReflector *r);

static void on_watch_end(void *userdata, long status, json_t *body, const char *error) {
        KubeReflector *r = userdata;

        (void) body;
        r->req = 0;
        if (status == 410)
                r->relist = true;
        else if (*error) {
                failed(r, "watch", error);
                return;
        } else if (now_mono() < r->watch_start_usec + CUB_USEC_PER_SEC && r->events == r->watch_start_events) {
                /* client-go's reflector: a server that closes every watch at once is not watched in a loop */
                failed(r, "watch", "very short watch: it lasted less than a second and no items were received");
                return;
        }
        succeeded(r);
        step(r); /* ended by the server's timeout, or a 410: go on at once */
}

static void on_list(void *userdata, long status, json_t *body, const char *error) {
        KubeReflector *r = userdata;
        json_t *items = json_object_get(body, "items"), *o;
        size_t i;

        (void) status;
        r->req = 0;
        if (*error || !json_is_array(items)) {
                failed(r, "list", *error ? error : "the answer has no items");
                return;
        }
        succeeded(r);
        r->lists++;
        json_object_clear(r->set);
        json_array_foreach(items, i, o)
                if (uid_of(o))
                        json_object_set(r->set, uid_of(o), o);
        take_rv(r, json_object_get(body, "metadata"));
        r->synced = true;
        r->relist = false;
        r->fn(r->userdata, r->set);
        step(r);
}

static void step(KubeReflector *r) {
        char path[1024];
        CubError err = {};
        int k;

        if (r->req)
                return;
        if (!r->synced || r->relist) {
                (void) snprintf(path, sizeof(path), "%s?%slimit=500&resourceVersion=0", r->path, r->selector);
                k = kube_client_request(r->client, "GET", path, NULL, NULL, on_list, r, &r->req, &err);
        } else {
                unsigned t = WATCH_MIN_S + cub_retry_draw() % WATCH_SPREAD_S;

                (void) snprintf(path, sizeof(path),
                                "%s?%swatch=true&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%u",
                                r->path, r->selector, r->rv, t);
                k = kube_client_watch(r->client, path, on_line, on_watch_end, r, (t + 30) * CUB_USEC_PER_SEC, &r->req,
                                      &err);
                r->watches += k >= 0;
                r->watch_start_usec = now_mono();
                r->watch_start_events = r->events;
        }
        if (k < 0)
                failed(r, "request", err.msg);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        step(userdata);
        return 0;
}

int kube_reflector_new(sd_event *e, KubeClient *c, const KubeReflectorSpec *spec, KubeReflector **ret,
                       CubError *err) {
        _cleanup_free_ char *sel = NULL;
        KubeReflector *r = calloc(1, sizeof(*r));
        char *esc = NULL;
        int k;

        if (r && spec->field_selector && (esc = curl_easy_escape(NULL, spec->field_selector, 0)) &&
            asprintf(&sel, "fieldSelector=%s&", esc) < 0)
                sel = NULL;
        curl_free(esc);
        if (!r || (spec->field_selector && !sel) || !(r->what = strdup(spec->what)) ||
            !(r->path = strdup(spec->path)) || !(r->selector = strdup(sel ? sel : "")) || !(r->set = json_object())) {
                kube_reflector_free(r);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        r->client = c;
        r->fn = spec->fn;
        r->failed_fn = spec->failed_fn;
        r->userdata = spec->userdata;
        k = sd_event_add_time(e, &r->timer, CLOCK_MONOTONIC, 0, CUB_USEC_PER_MSEC, on_timer, r);
        if (k < 0) {
                kube_reflector_free(r);
                return cub_err_set(err, -k, "%s: sd-event: %s", spec->what, strerror(-k));
        }
        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(r->timer, "kube-reflector");
        *ret = r;
        return 0;
}

KubeReflector *kube_reflector_free(KubeReflector *r) {
        if (!r)
                return NULL;
        if (r->client && r->req)
                kube_client_cancel(r->client, r->req);
        r->timer = sd_event_source_disable_unref(r->timer);
        json_decref(r->set);
        free(r->what);
        free(r->path);
        free(r->selector);
        free(r);
        return NULL;
}

void kube_reflector_start(KubeReflector *r) {
        arm(r, now_mono());
}

const json_t *kube_reflector_set(const KubeReflector *r) {
        return r->set;
}

bool kube_reflector_synced(const KubeReflector *r) {
        return r && r->synced;
}

bool kube_reflector_failing(const KubeReflector *r) {
        return r && r->retry.failures > 0;
}

const char *kube_reflector_error(const KubeReflector *r) {
        return r && r->retry.failures > 0 ? r->retry.error : NULL;
}

json_t *kube_reflector_status_json(const KubeReflector *r, const char *count_key) {
        return json_pack("{s:b,s:I,s:s,s:I,s:I,s:I,s:s}", "synced", r->synced, count_key,
                         (json_int_t) json_object_size(r->set), "resourceVersion", r->rv, "lists",
                         (json_int_t) r->lists, "watches", (json_int_t) r->watches, "events", (json_int_t) r->events,
                         "error", r->retry.failures ? r->retry.error : "");
}
