/* SPDX-License-Identifier: Apache-2.0 */
/* The pod list's JSON, each pod's rendered again only when what it
 * depends on changed (pods.h: api_pod_list_json_cached). */
#include "pods.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *api_pod_status_key(const LcPod *p, const ApiPodsInfo *info, size_t *ret_len) {
        char *key = NULL;
        FILE *f = open_memstream(&key, ret_len);

        if (!f)
                return NULL;
        /* the UID too: a new spec may come at the address of a freed one */
        fprintf(f, "%s %d %d %d %s\n%s\n%s\n%s\n", p->spec->pod->uid, (int) p->phase, p->observed, p->terminal,
                p->reason, p->message, info->host_ip ? info->host_ip : "", info->node_name);
        fprintf(f, "%s %" PRIu64 "\n", p->pod_ip, info->extra_generation); /* network; the managers' part */
        /* the spec (a new WorkerSpec with any edit; its hash besides, as an
         * edit's may come at the address of the freed one), startTime, the
         * rejection and eviction, the clock the times are rendered with */
        fprintf(f, "%p %s %" PRIu64 " %d %d %" PRId64 "\n", (const void *) p->spec, p->spec->pod->config_hash ?: "",
                p->latency.event, p->rejected, p->evicted, info->wall_minus_mono_usec);
        if (p->gates) /* readiness gates: the conditions the API server gave */
                fwrite(p->gates, 1, p->spec->pod->readiness_gates.n, f);
        fwrite(p->statuses, sizeof(*p->statuses), p->n, f);
        if (p->n_eph > 0)
                fwrite(p->eph, sizeof(*p->eph), p->n_eph, f); /* ephemeral containers */
        for (size_t k = 0; k < p->n; k++)                     /* termination messages: by content, not address */
                fprintf(f, "%s\n", p->statuses[k].term_message ? p->statuses[k].term_message : "");
        /* probes and hooks: the conditions' transitions, the sync's error (waiting reasons) */
        fwrite(p->cond_since, sizeof(p->cond_since), 1, f);
        fprintf(f, "%s\n", p->sync_retry.error);
        /* the waiting reasons' other inputs (agent/lifecycle/reasons.c): the
         * typed failure, its count (ErrImagePull → ImagePullBackOff), the
         * crash back-off (CrashLoopBackOff's message) */
        fprintf(f, "%d %zu %u\n", (int) p->failure, p->failure_container, p->sync_retry.failures);
        fwrite(p->backoff, sizeof(*p->backoff), p->n, f);
        /* in-place resize */
        fprintf(f, "%s %s %d %s %p %" PRId64 " %" PRId64 "\n", p->resize.pending, p->resize.message,
                p->resize.in_progress, p->resize.error, (void *) p->resize.actual, p->resize.pending_since,
                p->resize.progress_since);
        if (fclose(f) != 0) {
                free(key);
                return NULL;
        }
        return key;
}

char *api_pod_list_json_cached(ApiPodCache *c, LcPod *const *pods, size_t n, const ApiPodsInfo *info) {
        char *text = NULL;
        size_t len = 0, k = 0;
        FILE *f;
        bool first = true, ok = true;

        for (size_t i = 0; i < c->n; i++)
                c->items[i].seen = false;
        f = open_memstream(&text, &len);
        if (!f)
                return NULL;
        fputs("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[", f);
        for (size_t i = 0; i < n && ok; i++) {
                const LcPod *p = pods[i];
                struct ApiPodCacheEntry *e = NULL;
                size_t key_len;
                char *key;

                if (!p->wanted)
                        continue;
                key = api_pod_status_key(p, info, &key_len);
                if (!key) {
                        ok = false;
                        break;
                }
                for (size_t j = 0; j < c->n && !e; j++)
                        if (c->items[j].spec == p->spec && !c->items[j].seen)
                                e = &c->items[j];
                if (!e) {
                        struct ApiPodCacheEntry *items = realloc(c->items, (c->n + 1) * sizeof(*items));

                        if (!items) {
                                free(key);
                                ok = false;
                                break;
                        }
                        c->items = items;
                        e = &items[c->n++];
                        *e = (struct ApiPodCacheEntry){ .spec = p->spec };
                }
                e->seen = true;
                if (!e->json || e->key_len != key_len || memcmp(e->key, key, key_len) != 0) {
                        json_t *pj = api_pod_json(p, info);

                        free(e->json);
                        free(e->key);
                        e->json = pj ? json_dumps(pj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
                        json_decref(pj);
                        e->key = key;
                        e->key_len = key_len;
                        if (!e->json)
                                ok = false;
                } else
                        free(key);
                if (ok) {
                        fputs(first ? "" : ",", f);
                        fputs(e->json, f);
                        first = false;
                }
        }
        fputs("]}", f);
        if (fclose(f) != 0 || !ok) {
                free(text);
                text = NULL;
        }
        /* drop the pods that are gone */
        for (size_t i = 0; i < c->n; i++)
                if (c->items[i].seen)
                        c->items[k++] = c->items[i];
                else {
                        free(c->items[i].key);
                        free(c->items[i].json);
                }
        c->n = k;
        return text;
}

void api_pod_cache_done(ApiPodCache *c) {
        for (size_t i = 0; i < c->n; i++) {
                free(c->items[i].key);
                free(c->items[i].json);
        }
        free(c->items);
        *c = (ApiPodCache){};
}
