/* SPDX-License-Identifier: Apache-2.0 */
/* Pod status to the API server: per UID, what was sent, what is in flight. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/time.h"
#include "status.h"

typedef struct Pending Pending;

struct KubeStatus {
        KubeClient *client;
        Pending *inflight;
        json_t *pods; /* uid → {sent, inflight, deleted, key} */
        uint64_t patches, deletes, creates, failures, resyncs, renders;
        char error[CUB_ERR_MSG_MAX];
};

struct Pending {
        KubeStatus *s;
        uint64_t id;
        char uid[600]; /* the UID, or a mirror pod's "NS/NAME" */
        bool create;
        json_t *status; /* NULL: the DELETE or the POST */
        json_t *key;    /* the bytes status was rendered from (kube_status_set's; NULL: unknown) */
        Pending *next;
};

static void unlink_pending(KubeStatus *s, Pending *p) {
        for (Pending **q = &s->inflight; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        return;
                }
}

static json_t *entry(KubeStatus *s, const char *uid) {
        json_t *e = json_object_get(s->pods, uid);

        if (!e) {
                e = json_object();
                if (!e || json_object_set_new(s->pods, uid, e) < 0)
                        return NULL;
        }
        return e;
}

static void on_answer(void *userdata, long status, json_t *body, const char *error) {
        Pending *p = userdata;
        KubeStatus *s = p->s;
        json_t *e = json_object_get(s->pods, p->uid);

        (void) body;
        unlink_pending(s, p);
        if (e)
                json_object_del(e, "inflight");
        if (p->create) {
                if (*error && status != 409) {
                        s->failures++;
                        if (strcmp(s->error, error) != 0)
                                cub_log(LOG_WARNING, "API server: mirror pod %s: %s; trying again in 10 s", p->uid,
                                        error);
                        (void) snprintf(s->error, sizeof(s->error), "%s", error);
                }
        } else if (*error && !(status == 404 && !p->status)) {
                s->failures++;
                if (strcmp(s->error, error) != 0)
                        cub_log(LOG_WARNING, "API server: %s; sent again with the next change", error);
                (void) snprintf(s->error, sizeof(s->error), "%s", error);
                if (e && !p->status)
                        json_object_del(e, "deleted"); /* the DELETE again */
        } else if (e && p->status) {
                json_object_set(e, "sent", p->status);
                /* no newer status was set while this one was in flight: the
                 * next tick need not render it again to know it is sent */
                if (p->key)
                        json_object_set(e, "key", p->key);
                s->error[0] = 0;
        }
        json_decref(p->status);
        json_decref(p->key);
        free(p);
}

static void send(KubeStatus *s, const char *method, const char *path, const json_t *body, const char *uid,
                 const json_t *status, json_t *key) {
        Pending *p = calloc(1, sizeof(*p));
        json_t *e = entry(s, uid);
        CubError err = {};

        if (!p || !e) {
                free(p);
                return;
        }
        p->s = s;
        p->create = strcmp(method, "POST") == 0;
        (void) snprintf(p->uid, sizeof(p->uid), "%s", uid);
        p->status = status ? json_incref((json_t *) status) : NULL;
        p->key = json_incref(key);
        if (kube_client_request(s->client, method, path, status ? KUBE_CT_STRATEGIC : KUBE_CT_JSON, body, on_answer, p,
                                &p->id, &err) < 0) {
                cub_log(LOG_ERR, "API server: %s", err.msg);
                json_decref(p->status);
                json_decref(p->key);
                free(p);
                return;
        }
        p->next = s->inflight;
        s->inflight = p;
        json_object_set_new(e, "inflight", json_true());
        if (status)
                s->patches++;
        else if (p->create)
                s->creates++;
        else
                s->deletes++;
}

bool kube_status_terminal(const json_t *status) {
        const char *ph = json_string_value(json_object_get(status, "phase"));

        return ph && (strcmp(ph, "Succeeded") == 0 || strcmp(ph, "Failed") == 0);
}

bool kube_status_unchanged(const KubeStatus *s, const char *uid, const char *key, size_t key_len) {
        const json_t *e = json_object_get(s->pods, uid), *k = e ? json_object_get(e, "key") : NULL;

        return k && json_object_get(e, "sent") && !json_object_get(e, "inflight") && !json_object_get(e, "deleted") &&
               json_string_length(k) == key_len && memcmp(json_string_value(k), key, key_len) == 0;
}

void kube_status_set(KubeStatus *s, const char *ns, const char *name, const char *uid, const json_t *status,
                     const char *key, size_t key_len) {
        json_t *e = entry(s, uid), *sent, *patch;
        _cleanup_(json_decrefp) json_t *kj = NULL;
        char path[1024];

        s->renders++;
        if (e)
                (void) json_object_del(e, "key");
        if (!e || json_object_get(e, "inflight") || json_object_get(e, "deleted"))
                return;
        sent = json_object_get(e, "sent");
        kj = key ? json_stringn_nocheck(key, key_len) : NULL;
        if (sent && json_equal(sent, (json_t *) status)) {
                /* settled: until the key changes, nothing to render */
                if (kj)
                        (void) json_object_set(e, "key", kj);
                return;
        }
        /* a terminal phase never goes back (kubelet's status manager) */
        if (sent && kube_status_terminal(sent) && !kube_status_terminal(status))
                return;
        patch = json_pack("{s:{s:s},s:o}", "metadata", "uid", uid, "status", json_deep_copy(status));
        /* hostIPs and podIPs merge by "ip" in a strategic merge patch: the
         * lists are replaced, or an address the node had before a restart
         * would stay beside the new one (422: one per IP family) */
        for (const char *const *k = (const char *const[]){ "hostIPs", "podIPs", NULL }; patch && *k; k++) {
                json_t *l = json_object_get(json_object_get(patch, "status"), *k);

                if (json_is_array(l))
                        (void) json_array_append_new(l, json_pack("{s:s}", "$patch", "replace"));
        }
        /* a strategic merge keeps what the patch leaves out: a condition's
         * reason and message cubelet no longer gives are null (kubelet's
         * two-way patch has them null), or Ready=True would keep the
         * ContainersNotReady of its False */
        {
                const json_t *c;
                size_t i;

                json_array_foreach(json_object_get(json_object_get(patch, "status"), "conditions"), i, c) {
                        for (const char *const *f = (const char *const[]){ "reason", "message", NULL }; *f; f++)
                                if (!json_object_get(c, *f))
                                        (void) json_object_set_new((json_t *) c, *f, json_null());
                }
        }
        /* conditions merge by "type": the resize conditions cubelet no
         * longer reports are deleted (conditions of others stay) */
        for (const char *const *t = (const char *const[]){ "PodResizePending", "PodResizeInProgress", NULL };
             patch && *t; t++) {
                json_t *l = json_object_get(json_object_get(patch, "status"), "conditions"), *c;
                bool has = false;
                size_t i;

                json_array_foreach(l, i, c) {
                        has = has || strcmp(json_string_value(json_object_get(c, "type")) ?: "", *t) == 0;
                }
                if (json_is_array(l) && !has)
                        (void) json_array_append_new(l, json_pack("{s:s,s:s}", "type", *t, "$patch", "delete"));
        }
        (void) snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", ns, name);
        if (patch)
                send(s, "PATCH", path, patch, uid, status, kj);
        json_decref(patch);
}

/* what a status says that matters to a reader (kubelet's needsReconcile
 * compares the API's pod with the cached status): the phase and reason,
 * each container's name, ID, restarts, readiness and state */
/* What the resync compares: the phase, the reason, each container's state,
 * and the status of each condition cubelet sends (`types`: the sent
 * status's conditions; others' conditions are theirs). The node lifecycle
 * controller sets Ready=False on the pods of a node that missed its Lease:
 * once the node is back, the resync sends Ready again, as kubelet's status
 * manager does. */
static json_t *digest(const json_t *status, const json_t *types) {
        json_t *d = json_pack("{s:O?,s:O?,s:[],s:{}}", "phase", json_object_get(status, "phase"), "reason",
                              json_object_get(status, "reason"), "containers", "conditions");
        const json_t *c, *t;
        size_t i, j;

        json_array_foreach(types, j, t) {
                const char *type = json_string_value(json_object_get(t, "type"));
                const char *st = NULL;

                json_array_foreach(json_object_get(status, "conditions"), i, c) {
                        if (type && strcmp(json_string_value(json_object_get(c, "type")) ?: "", type) == 0)
                                st = json_string_value(json_object_get(c, "status"));
                }
                if (d && type)
                        (void) json_object_set_new(json_object_get(d, "conditions"), type, json_string(st ?: "absent"));
        }

        json_array_foreach(json_object_get(status, "containerStatuses"), i, c) {
                const char *state = NULL;
                const json_t *v;

                json_object_foreach((json_t *) json_object_get(c, "state"), state, v) break;
                json_array_append_new(json_object_get(d, "containers"),
                                      json_pack("{s:O?,s:O?,s:O?,s:O?,s:s?}", "name", json_object_get(c, "name"), "id",
                                                json_object_get(c, "containerID"), "restarts",
                                                json_object_get(c, "restartCount"), "ready",
                                                json_object_get(c, "ready"), "state", state));
        }
        return d;
}

bool kube_status_reconcile(KubeStatus *s, const char *uid, const json_t *api_status) {
        json_t *e = json_object_get(s->pods, uid), *sent = e ? json_object_get(e, "sent") : NULL, *a, *b;
        bool differ;

        if (!sent || json_object_get(e, "inflight"))
                return false;
        a = digest(sent, json_object_get(sent, "conditions"));
        b = digest(api_status, json_object_get(sent, "conditions"));
        differ = a && b && !json_equal(a, b);
        json_decref(a);
        json_decref(b);
        if (differ) {
                json_object_del(e, "sent"); /* sent again with the next set */
                json_object_del(e, "key");
                s->resyncs++;
        }
        return differ;
}

void kube_status_delete(KubeStatus *s, const char *ns, const char *name, const char *uid) {
        json_t *e = entry(s, uid), *body;
        char path[1024];

        if (!e || json_object_get(e, "inflight") || json_object_get(e, "deleted"))
                return;
        body = json_pack("{s:s,s:s,s:i,s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1", "gracePeriodSeconds", 0,
                         "preconditions", "uid", uid);
        (void) snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
        json_object_set_new(e, "deleted", json_true());
        if (body)
                send(s, "DELETE", path, body, uid, NULL, NULL);
        json_decref(body);
}

#define CREATE_AGAIN_USEC (10 * CUB_USEC_PER_SEC)

void kube_status_create(KubeStatus *s, const char *key, const char *ns, const json_t *pod) {
        json_t *e = entry(s, key);
        uint64_t now = cub_now_usec(CLOCK_MONOTONIC);
        char path[512];

        if (!e || json_object_get(e, "inflight") ||
            (uint64_t) json_integer_value(json_object_get(e, "posted")) + CREATE_AGAIN_USEC > now)
                return;
        json_object_set_new(e, "posted", json_integer((json_int_t) now));
        (void) snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
        send(s, "POST", path, pod, key, NULL, NULL);
}

void kube_status_prune(KubeStatus *s, const json_t *keep) {
        const char *uid;
        json_t *e;
        void *tmp;

        json_object_foreach_safe(s->pods, tmp, uid, e) {
                if (!strchr(uid, '/') && !json_object_get(keep, uid) && !json_object_get(e, "inflight"))
                        json_object_del(s->pods, uid);
        }
}

int kube_status_new(KubeClient *c, KubeStatus **ret, CubError *err) {
        KubeStatus *s = calloc(1, sizeof(*s));

        if (!s || !(s->pods = json_object())) {
                free(s);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        s->client = c;
        *ret = s;
        return 0;
}

KubeStatus *kube_status_free(KubeStatus *s) {
        if (!s)
                return NULL;
        while (s->inflight) {
                Pending *p = s->inflight;

                s->inflight = p->next;
                kube_client_cancel(s->client, p->id);
                json_decref(p->status);
                json_decref(p->key);
                free(p);
        }
        json_decref(s->pods);
        free(s);
        return NULL;
}

json_t *kube_status_json(const KubeStatus *s) {
        return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "patches", (json_int_t) s->patches, "deletes",
                         (json_int_t) s->deletes, "mirrorCreates", (json_int_t) s->creates, "failures",
                         (json_int_t) s->failures, "resyncs", (json_int_t) s->resyncs, "renders",
                         (json_int_t) s->renders, "error", s->error);
}
