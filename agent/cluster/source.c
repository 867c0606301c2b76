/* SPDX-License-Identifier: Apache-2.0 */
/* The API server as a pod source (source.h). */
#include "source.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "../pod/api-status.h"
#include "../pod/resize.h"
#include "../util/cleanup.h"
#include "../util/fnv.h"
#include "../util/log.h"
#include "../util/time.h"
#include "pods.h"

struct KubeSource {
        KubeSourceHooks hooks;
        KubePods *pods;           /* the pods bound to this node */
        KubeProjected *projected; /* tokens, ConfigMaps and Secrets of their volumes and env */
        KubeServices *services;   /* the Services, for the containers' env */
        bool services_synced;     /* their first list, or its failure, has been seen (on_services) */
        /* pods waiting for their volumes' data: uid → {ns, name, message, first} (FailedMount events) */
        json_t *waiting;
        /* the UIDs of all pods held back for their volumes' data (uid → true),
         * failure or not: wanted, so what runs of them is not stopped */
        json_t *held;
};

/* a Pod of the API server as an entry of the set: decoded as a manifest
 * (refused fields land in pod->refused, and the pod fails with their
 * paths), the API's UID, a config hash of its spec */
static void api_entry(const json_t *o, PodsrcEntry *e) {
        _cleanup_free_ char *text = json_dumps(o, JSON_COMPACT), *spec = NULL;
        const json_t *meta = json_object_get(o, "metadata");
        char source[600], hash[16];
        CubError err = {};

        (void) snprintf(source, sizeof(source), "pod %s/%s",
                        json_string_value(json_object_get(meta, "namespace")) ?: "default",
                        json_string_value(json_object_get(meta, "name")) ?: "?");
        e->path = strdup(KUBE_SOURCE_PATH);
        spec = pod_resize_spec_text(json_object_get(o, "spec")); /* a resize keeps the hash */
        if (text) {
                /* what the API server sets or has applied (generateName:
                 * the name is made), and the service account fields whose
                 * volume (if any) is decoded, not dropped */
                static const char *const server_set[] = { "resourceVersion", "generation", "creationTimestamp",
                                                          "managedFields",   "selfLink",   "ownerReferences",
                                                          "generateName" };
                static const char *const sa[] = { "serviceAccountName", "serviceAccount",
                                                  "automountServiceAccountToken" };
                json_t *c = json_deep_copy(o);

                for (size_t i = 0; c && i < sizeof(server_set) / sizeof(*server_set); i++)
                        (void) json_object_del(json_object_get(c, "metadata"), server_set[i]);
                for (size_t i = 0; c && i < sizeof(sa) / sizeof(*sa); i++)
                        (void) json_object_del(json_object_get(c, "spec"), sa[i]);
                (void) json_object_del(c, "status");
                /* a list's items carry no apiVersion and kind */
                if (c) {
                        json_object_set_new(c, "apiVersion", json_string("v1"));
                        json_object_set_new(c, "kind", json_string("Pod"));
                }
                free(text);
                text = c ? json_dumps(c, JSON_COMPACT) : NULL;
                json_decref(c);
        }
        if (!text || !spec || !e->path || pod_decode_api(text, strlen(text), source, &e->pod, &err) < 0) {
                e->error = strdup(*err.msg ? err.msg : "out of memory");
                return;
        }
        /* the token's service account (the field itself is the API server's) */
        {
                const json_t *sp = json_object_get(o, "spec");
                const char *sa = json_string_value(json_object_get(sp, "serviceAccountName"))
                                         ?: json_string_value(json_object_get(sp, "serviceAccount"));

                free(e->pod->service_account_name);
                e->pod->service_account_name = strdup(sa && *sa ? sa : "default");
        }
        (void) snprintf(hash, sizeof(hash), "%08x", cub_fnv32a_str(CUB_FNV32_OFFSET, spec));
        free(e->pod->config_hash);
        e->pod->config_hash = strdup(hash);
        /* already Succeeded or Failed (before a restart of cubelet, or on another node's watch): kubelet
         * does not run such a pod again; the conditions its readiness gates name (not in the hash) */
        if (pod_take_api_status(e->pod, json_object_get(o, "status")) < 0)
                cub_log(LOG_ERR, "%s: out of memory reading its status", source);
}

static void stops_free(KubeSourceStop *g, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(g[i].uid);
                free(g[i].ns);
                free(g[i].name);
                free(g[i].cgroup);
        }
        free(g);
}

/* a pod being deleted with a deletionGracePeriodSeconds shorter than its
 * own grace (kubectl delete --grace-period=N): stopped with it */
static void shorter_grace(KubeSource *s, const char *uid, const json_t *dgp, KubeSourceStop **list, size_t *n) {
        KubeSourcePod p;
        KubeSourceStop *more;

        if (!s->hooks.pod(s->hooks.userdata, uid, &p) || !p.wanted || !json_is_integer(dgp) ||
            json_integer_value(dgp) < 0 || json_integer_value(dgp) >= p.grace)
                return;
        more = realloc(*list, (*n + 1) * sizeof(*more));
        if (!more)
                return;
        *list = more;
        more[*n] = (KubeSourceStop){ .uid = strdup(uid),
                                     .ns = strdup(p.ns),
                                     .name = strdup(p.name),
                                     .cgroup = strdup(p.cgroup ?: ""),
                                     .grace = json_integer_value(dgp) };
        if (!more[*n].uid || !more[*n].ns || !more[*n].name || !more[*n].cgroup) {
                free(more[*n].uid), free(more[*n].ns), free(more[*n].name), free(more[*n].cgroup);
                return;
        }
        cub_log(LOG_INFO,
                "pod %s/%s (uid %s): deleted with a grace period of %" JSON_INTEGER_FORMAT
                " s, shorter than its own %" PRId64 " s",
                more[*n].ns, more[*n].name, uid, json_integer_value(dgp), p.grace);
        (*n)++;
}

/* a pod waiting for its volumes' data with a failure: kubelet's FailedMount
 * event (its first time kept while the message stays) */
static void wait_note(KubeSource *s, json_t *waiting, const char *uid, const Pod *pod, const char *why) {
        const json_t *old = json_object_get(s->waiting, uid);
        json_int_t first = json_integer_value(json_object_get(old, "first"));

        if (!old || strcmp(json_string_value(json_object_get(old, "message")) ?: "", why) != 0)
                first = (json_int_t) (cub_now_usec(CLOCK_REALTIME) / CUB_USEC_PER_SEC);
        (void) json_object_set_new(waiting, uid,
                                   json_pack("{s:s,s:s,s:s,s:I}", "ns", pod->namespace_, "name", pod->name, "message",
                                             why, "first", first));
}

static void on_pods(void *userdata, const json_t *pods) {
        KubeSource *s = userdata;
        KubeSourceStop *stops = NULL;
        size_t n_stops = 0, n = 0;
        json_t *waiting = json_object(), *held = json_object(), *o;
        PodsrcSet set = { .items = calloc(json_object_size(pods) + 1, sizeof(PodsrcEntry)) };
        char why[CUB_ERR_MSG_MAX];
        const char *uid;

        if (!set.items) {
                json_decref(waiting), json_decref(held);
                cub_log(LOG_ERR, "API server: pods: out of memory");
                return;
        }
        kube_projected_mark(s->projected);
        json_object_foreach((json_t *) pods, uid, o) {
                const json_t *meta = json_object_get(o, "metadata");
                KubeSourcePod known;

                /* mirror pods are the node's own static pods: never run */
                if (json_object_get(json_object_get(meta, "annotations"), "kubernetes.io/config.mirror"))
                        continue;
                /* being deleted: out of the set, so stopped (graceful deletion) */
                if (json_object_get(meta, "deletionTimestamp")) {
                        shorter_grace(s, uid, json_object_get(meta, "deletionGracePeriodSeconds"), &stops, &n_stops);
                        continue;
                }
                api_entry(o, &set.items[n]);
                if (set.items[n].error)
                        cub_log(LOG_ERR, "API server: %s", set.items[n].error);
                /* a new pod whose volumes need the API server's data waits for it
                 * (one that has ended is never run: nothing to wait for) */
                /* (asked for even when it runs: what a pass does not ask for is dropped) */
                else if (!set.items[n].pod->refused.n && !set.items[n].pod->api_phase &&
                         pod_has_api_data(set.items[n].pod) &&
                         !kube_source_volumes_ready(s, set.items[n].pod, why, sizeof(why)) &&
                         !s->hooks.pod(s->hooks.userdata, uid, &known)) {
                        if (*why && waiting)
                                wait_note(s, waiting, uid, set.items[n].pod, why);
                        if (held)
                                (void) json_object_set_new(held, uid, json_true());
                        podsrc_entry_done(&set.items[n]);
                        continue;
                }
                n++;
        }
        kube_projected_sweep(s->projected);
        json_decref(s->waiting);
        s->waiting = waiting;
        json_decref(s->held);
        s->held = held;
        set.n = n;
        s->hooks.update(s->hooks.userdata, &set, stops, n_stops);
        podsrc_set_done(&set);
        stops_free(stops, n_stops);
}

/* a token or ConfigMap arrived: the pods that waited for it go on */
static void on_projected(void *userdata) {
        KubeSource *s = userdata;

        if (kube_pods_synced(s->pods))
                on_pods(s, kube_pods_set(s->pods));
}

/* the Services' first list, or its first failure: the API pods that
 * waited for it go on (with the Services, the file's, or kubelet's error) */
static void on_services(void *userdata) {
        KubeSource *s = userdata;

        if (!s->services_synced && (kube_services_synced(s->services) || kube_services_failing(s->services))) {
                s->services_synced = true;
                on_projected(s);
        }
}

int kube_source_new(sd_event *e, KubeClient *c, const KubeSourceOptions *o, const KubeSourceHooks *h,
                    KubeSource **ret, CubError *err) {
        KubeSource *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return cub_err_set(err, ENOMEM, "out of memory");
        s->hooks = *h;
        r = kube_pods_new(e, c, o->node_name, on_pods, s, &s->pods, err);
        if (r >= 0)
                r = kube_pods_set_cache(s->pods, o->state_dir, o->offline_start, err);
        if (r >= 0)
                r = kube_projected_new(e, c, on_projected, s, &s->projected, err);
        if (r >= 0)
                r = kube_services_new(e, c, on_services, s, &s->services, err);
        if (r >= 0)
                r = kube_services_set_cache(s->services, o->state_dir, err);
        if (r < 0) {
                kube_source_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

void kube_source_start(KubeSource *s) {
        kube_services_start(s->services);
        kube_pods_start(s->pods);
}

KubeSource *kube_source_free(KubeSource *s) {
        if (!s)
                return NULL;
        s->projected = kube_projected_free(s->projected);
        s->services = kube_services_free(s->services);
        json_decref(s->waiting);
        json_decref(s->held);
        s->pods = kube_pods_free(s->pods);
        free(s);
        return NULL;
}

const json_t *kube_source_pods(const KubeSource *s) {
        return kube_pods_set(s->pods);
}

bool kube_source_synced(const KubeSource *s) {
        return kube_pods_synced(s->pods);
}

bool kube_source_holds(const KubeSource *s, const char *uid) {
        return json_object_get(s->held, uid) != NULL;
}

size_t kube_source_n_held(const KubeSource *s) {
        return json_object_size(s->held);
}

const json_t *kube_source_waiting(const KubeSource *s) {
        return s->waiting;
}

void kube_source_tick(KubeSource *s) {
        kube_projected_tick(s->projected);
}

KubeProjected *kube_source_projected(const KubeSource *s) {
        return s->projected;
}

const KubeServices *kube_source_services(const KubeSource *s) {
        return s->services;
}

void kube_source_status(const KubeSource *s, json_t *o) {
        json_object_set_new(o, "pods", kube_pods_status_json(s->pods));
        json_object_set_new(o, "volumes", kube_projected_status_json(s->projected));
        json_object_set_new(o, "services", kube_services_status_json(s->services));
        json_object_set_new(o, "waitingForVolumes", json_integer((json_int_t) json_object_size(s->held)));
}
