/* SPDX-License-Identifier: Apache-2.0 */
/* Events to the API server: per (pod, reason, message) the name it was
 * created under and the count the API server has. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "../util/fnv.h"
#include "../util/log.h"
#include "../util/time.h"
#include "events.h"

/* a failed request is not sent again before this */
#define RETRY_USEC (10 * CUB_USEC_PER_SEC)

typedef struct Sent Sent;

struct KubeEvents {
        KubeClient *client;
        char *node;
        json_t *sent; /* key → {uid, name, count, inflight} */
        Sent *inflight;
        size_t n_inflight;
        uint64_t posts, patches, failures;
        char error[CUB_ERR_MSG_MAX];
};

struct Sent {
        KubeEvents *ev;
        uint64_t id;
        char key[256];
        unsigned count;
        bool create;
        Sent *next;
};

static void rfc3339(int64_t t, char buf[static 32]) {
        time_t tt = (time_t) t;
        struct tm tm;

        if (!gmtime_r(&tt, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                (void) snprintf(buf, 32, "1970-01-01T00:00:00Z");
}

static void unlink_sent(KubeEvents *ev, Sent *s) {
        for (Sent **q = &ev->inflight; *q; q = &(*q)->next)
                if (*q == s) {
                        *q = s->next;
                        ev->n_inflight--;
                        return;
                }
}

static void on_answer(void *userdata, long status, json_t *body, const char *error) {
        Sent *s = userdata;
        KubeEvents *ev = s->ev;
        json_t *e = json_object_get(ev->sent, s->key);

        (void) status;
        (void) body;
        unlink_sent(ev, s);
        if (e) {
                json_object_del(e, "inflight");
                if (!*error)
                        json_object_set_new(e, "count", json_integer(s->count));
                else if (s->create && status == 409)
                        json_object_set_new(e, "count", json_integer(0)); /* it exists: patched next */
                else /* not before RETRY_USEC */
                        json_object_set_new(e, "failed", json_integer((json_int_t) cub_now_usec(CLOCK_MONOTONIC)));
        }
        if (*error && !(s->create && status == 409)) {
                ev->failures++;
                if (strcmp(ev->error, error) != 0)
                        cub_log(LOG_WARNING, "API server: event: %s", error);
                (void) snprintf(ev->error, sizeof(ev->error), "%s", error);
        }
        free(s);
}

void kube_events_record(KubeEvents *ev, const KubeEventInput *in) {
        char key[256], name[320], path[640], first[32], last[32];
        json_t *e, *body;
        Sent *s;
        CubError err = {};
        bool create;
        uint32_t h = cub_fnv32a_str(cub_fnv32a_str(CUB_FNV32_OFFSET, in->reason), in->message);

        (void) snprintf(key, sizeof(key), "%s/%s/%08x", in->uid, in->reason, h);
        e = json_object_get(ev->sent, key);
        if (e && (json_object_get(e, "inflight") ||
                  (json_object_get(e, "count") &&
                   json_integer_value(json_object_get(e, "count")) >= (json_int_t) in->count) ||
                  (uint64_t) json_integer_value(json_object_get(e, "failed")) + RETRY_USEC >
                          cub_now_usec(CLOCK_MONOTONIC)))
                return;
        if (ev->n_inflight >= KUBE_EVENTS_BURST)
                return; /* the next record sends it */
        if (!e) {
                e = json_pack("{s:s}", "uid", in->uid);
                if (!e || json_object_set_new(ev->sent, key, e) < 0)
                        return;
        }
        create = !json_object_get(e, "count");
        /* kubelet's names: the object's name and a unique suffix */
        (void) snprintf(name, sizeof(name), "%.200s.%08x%08x", in->pod, h,
                        cub_fnv32a(CUB_FNV32_OFFSET, &in->first_unix, sizeof(in->first_unix)));
        rfc3339(in->first_unix, first);
        rfc3339(in->last_unix, last);
        if (create) {
                bool node = in->kind && strcmp(in->kind, "Node") == 0;

                /* kubelet's node reference: no namespace, the node's name as its UID */
                body = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s*,s:s,s:s},s:s,s:s,s:s,s:{s:s,s:s},s:s,s:s,"
                                 "s:I,s:s,s:s}",
                                 "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace", in->ns,
                                 "involvedObject", "apiVersion", "v1", "kind", node ? "Node" : "Pod", "namespace",
                                 node ? NULL : in->ns, "name", in->pod, "uid", in->uid, "reason", in->reason,
                                 "message", in->message, "type",
                                 in->warning ? "Warning" : "Normal", "source", "component", "kubelet", "host",
                                 ev->node, "firstTimestamp", first, "lastTimestamp", last, "count",
                                 (json_int_t) in->count, "reportingComponent", "kubelet", "reportingInstance",
                                 ev->node);
                (void) snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", in->ns);
        } else {
                body = json_pack("{s:I,s:s}", "count", (json_int_t) in->count, "lastTimestamp", last);
                (void) snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events/%s", in->ns, name);
        }
        s = calloc(1, sizeof(*s));
        if (!body || !s) {
                json_decref(body);
                free(s);
                return;
        }
        s->ev = ev;
        s->count = in->count;
        s->create = create;
        (void) snprintf(s->key, sizeof(s->key), "%s", key);
        if (kube_client_request(ev->client, create ? "POST" : "PATCH", path, create ? KUBE_CT_JSON : KUBE_CT_MERGE,
                                body, on_answer, s, &s->id, &err) < 0) {
                cub_log(LOG_ERR, "API server: event: %s", err.msg);
                free(s);
        } else {
                s->next = ev->inflight;
                ev->inflight = s;
                ev->n_inflight++;
                json_object_set_new(e, "inflight", json_true());
                if (create)
                        ev->posts++;
                else
                        ev->patches++;
        }
        json_decref(body);
}

void kube_events_prune(KubeEvents *ev, const json_t *keep) {
        const char *key;
        json_t *e;
        void *tmp;

        json_object_foreach_safe(ev->sent, tmp, key, e) {
                const char *uid = json_string_value(json_object_get(e, "uid")) ?: "";

                if (!json_object_get(e, "inflight") && !json_object_get(keep, uid) && strcmp(uid, ev->node) != 0)
                        json_object_del(ev->sent, key);
        }
}

int kube_events_new(KubeClient *c, const char *node_name, KubeEvents **ret, CubError *err) {
        KubeEvents *ev = calloc(1, sizeof(*ev));

        if (!ev || !(ev->node = strdup(node_name)) || !(ev->sent = json_object())) {
                kube_events_free(ev);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        ev->client = c;
        *ret = ev;
        return 0;
}

KubeEvents *kube_events_free(KubeEvents *ev) {
        if (!ev)
                return NULL;
        while (ev->inflight) {
                Sent *s = ev->inflight;

                ev->inflight = s->next;
                kube_client_cancel(ev->client, s->id);
                free(s);
        }
        json_decref(ev->sent);
        free(ev->node);
        free(ev);
        return NULL;
}

json_t *kube_events_status_json(const KubeEvents *ev) {
        return json_pack("{s:I,s:I,s:I,s:s}", "created", (json_int_t) ev->posts, "patched", (json_int_t) ev->patches,
                         "failures", (json_int_t) ev->failures, "error", ev->error);
}
