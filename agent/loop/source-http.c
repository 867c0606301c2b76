/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest URL as a pod source (agent/config's poller on the loop).
 * Each 200 that decodes is the URL's whole set: its pods that left go,
 * new ones are admitted and started, the same UIDs stay. A 304 changes
 * nothing; an error changes nothing either (the last good set keeps
 * running) and is kept for `cubelet status` and logged once per message.
 * Names are unique per source, as kubelet's merge checks them: the
 * directory and the URL may both define a name, and both pods run (their
 * UIDs differ, "file:" and "url:" hashes).
 * Each good answer is kept in the state directory (CACHE_NAME); at the
 * start, its pods are the URL's set at once, before the first GET ends,
 * so a node that starts with the URL unreachable runs them. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/podsrc.h"
#include "../util/cleanup.h"
#include "../util/log.h"
#include "agent-internal.h"

/* Agent.url: its view first (the source), then what only this file reads */
typedef struct SourceHttp {
        AgentSourceHttp view;
        char cache_error[CUB_ERR_MSG_MAX]; /* the cache write error last logged */
} SourceHttp;

static SourceHttp *url_of(const Agent *a) {
        return (SourceHttp *) a->url;
}

#define CACHE_NAME "manifest_url_cache"

/* a 200 that decodes: the URL's whole set, for the loop's merge (agent/loop/merge.c) */
static void apply(Agent *a, PodsrcSet *set) {
        AgentUpdate *u = agent_update_new(AGENT_UPDATE_URL_SET, agent_now_usec());

        if (!u)
                return;
        agent_source_http_new_set(a);
        u->set = *set;
        *set = (PodsrcSet){};
        agent_update_push(a, u);
}

/* after the set is applied and its jobs submitted: the disk never delays
 * a pod */
static void save_cache(Agent *a) {
        const PodsrcHttpStats *st = podsrc_http_stats(a->url->source);

        (void) podsrc_http_save_cache(a->url->source);
        if (strcmp(st->cache_error, url_of(a)->cache_error) == 0)
                return;
        if (st->cache_error[0])
                cub_log(LOG_ERR, "%s; the pods run, a restart without the URL would not find them", st->cache_error);
        else if (url_of(a)->cache_error[0])
                cub_log(LOG_INFO, "'%s': the last good answer is kept again", st->cache_path);
        (void) snprintf(url_of(a)->cache_error, sizeof(url_of(a)->cache_error), "%s", st->cache_error);
}

static void on_result(PodsrcHttp *h, int r, PodsrcSet *set, const CubError *err, void *userdata) {
        Agent *a = userdata;
        const PodsrcHttpStats *st = podsrc_http_stats(h);
        size_t n_errs;
        const AgentError *errs = agent_source_http_errors(a, &n_errs);

        agent_metrics_url_fetch(a, podsrc_http_result_to_string(st->last_result));
        if (r < 0) {
                if (n_errs == 0 || strcmp(errs[0].message, err->msg) != 0)
                        cub_log(LOG_ERR, "%s; %s", err->msg,
                                st->have_set     ? "the pods of the last good answer keep running"
                                : st->from_cache ? "the pods of the answer kept on disk keep running"
                                                 : "no pods from this URL yet");
                agent_source_http_fetch_error(a, err->msg);
                agent_notify_status(a);
                return;
        }
        if (n_errs > 0 && errs[0].message[0]) {
                cub_log(LOG_INFO, "%s: answering again (HTTP %ld)", a->core.opt.manifest_url, st->last_status);
                agent_source_http_fetch_error(a, "");
        }
        if (r == 1) {
                cub_log(LOG_INFO, "%s: %zu pods (HTTP %ld, %" PRIu64 " ms)", a->core.opt.manifest_url, st->n_pods,
                        st->last_status, st->last_duration_usec / 1000);
                apply(a, set);
        }
        if (r == 0 && st->from_cache && st->last_result == PODSRC_HTTP_NOT_MODIFIED &&
            st->fetches[PODSRC_HTTP_OK] == 0 && st->fetches[PODSRC_HTTP_NOT_MODIFIED] == 1)
                cub_log(LOG_INFO, "%s: unchanged since the answer kept on disk (HTTP 304)", a->core.opt.manifest_url);
        agent_apply_actions(a);
        save_cache(a);
}

int agent_source_http_attach(Agent *a) {
        const PodKubeletConfig *kc = a->core.kc;
        PodsrcHttpOptions o = {
                .url = a->core.opt.manifest_url,
                .node_name = a->core.opt.node_name,
                .headers = kc ? (const char *const *) kc->static_pod_url_header.items : NULL,
                .n_headers = kc ? kc->static_pod_url_header.n : 0,
                .ca_file = kc ? kc->static_pod_url_ca_file : NULL,
                .client_cert = kc ? kc->static_pod_url_client_cert : NULL,
                .client_key = kc ? kc->static_pod_url_client_key : NULL,
                .timeout_usec = a->core.opt.http_timeout_usec,
        };
        _cleanup_free_ char *cache_path = NULL;
        CubError err = {};
        SourceHttp *u = calloc(1, sizeof(*u));
        int r;

        if (!u)
                return -ENOMEM;
        a->url = &u->view;
        if (!a->core.opt.manifest_url || !*a->core.opt.manifest_url)
                return 0;
        if (asprintf(&cache_path, "%s/" CACHE_NAME, a->core.opt.state_dir) < 0) {
                cache_path = NULL;
                cub_log(LOG_ERR, "%s: out of memory", a->core.opt.manifest_url);
                return -ENOMEM;
        }
        o.cache_path = cache_path;
        r = podsrc_http_new(&o, &a->url->source, &err);
        if (r >= 0)
                r = podsrc_http_attach(a->url->source, a->core.event, a->core.opt.http_check_usec, on_result, a, &err);
        if (r < 0) {
                cub_log(LOG_ERR, "%s", err.msg);
                return r;
        }
        return 0;
}

void agent_source_http_load_cache(Agent *a) {
        PodsrcSet set = {};
        CubError err = {};
        int r;

        if (!a->url || !a->url->source)
                return;
        /* a file that cannot be used costs nothing but waiting for the URL */
        r = podsrc_http_load_cache(a->url->source, &set, &err);
        if (r < 0)
                cub_log(LOG_WARNING, "%s, ignoring", err.msg);
        else if (r == 1) {
                cub_log(LOG_INFO, "%s: %zu pods from the answer kept in '%s', until the URL answers",
                        a->core.opt.manifest_url, podsrc_http_stats(a->url->source)->n_pods,
                        podsrc_http_stats(a->url->source)->cache_path);
                apply(a, &set);
        }
        podsrc_set_done(&set);
}

void agent_source_http_done(Agent *a) {
        agent_source_http_errors_free(a);
        if (!a->url)
                return;
        podsrc_http_free(a->url->source);
        free(url_of(a));
        a->url = NULL;
}

static json_t *usec_json(uint64_t usec) {
        char buf[64];
        time_t t = (time_t) (usec / CUB_USEC_PER_SEC);
        struct tm tm;

        if (!usec || !gmtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return json_null();
        return json_string(buf);
}

void agent_source_http_status(Agent *a, json_t *doc) {
        const PodsrcHttpStats *st;
        json_t *errors = json_object_get(doc, "errors");
        size_t n_errs;
        const AgentError *errs = agent_source_http_errors(a, &n_errs);

        if (!a->url || !a->url->source)
                return;
        st = podsrc_http_stats(a->url->source);
        for (size_t i = 0; i < n_errs; i++)
                if (errs[i].message[0])
                        json_array_append_new(
                                errors, json_pack("{s:s,s:s}", "source", errs[i].source, "message", errs[i].message));
        json_object_set_new(
                doc, "manifestURL",
                json_pack("{s:s,s:s,s:I,s:s,s:o,s:o,s:I,s:I,s:{s:I,s:I,s:I}}", "url", st->url, "lastResult",
                          podsrc_http_result_to_string(st->last_result), "lastStatus", (json_int_t) st->last_status,
                          "lastError", st->last_error, "lastFetch", usec_json(st->last_fetch_usec), "lastSuccess",
                          usec_json(st->last_ok_usec), "lastDurationUs", (json_int_t) st->last_duration_usec, "pods",
                          (json_int_t) st->n_pods, "fetches", "ok", (json_int_t) st->fetches[PODSRC_HTTP_OK],
                          "notModified", (json_int_t) st->fetches[PODSRC_HTTP_NOT_MODIFIED], "error",
                          (json_int_t) st->fetches[PODSRC_HTTP_ERROR]));
        if (st->cache_path)
                json_object_set_new(json_object_get(doc, "manifestURL"), "cache",
                                    json_pack("{s:s,s:b,s:s}", "path", st->cache_path, "inUse", st->from_cache, "error",
                                              st->cache_error));
}
