/* SPDX-License-Identifier: Apache-2.0 */
/* The status publisher (publisher.h): the Node through node.c, each
 * second the pods' status, the final DELETEs, the mirror pods and the
 * events from the loop's snapshot and the source's set, and the node's own
 * events. The one writer of KubePublisher. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/time.h"
#include "events.h"
#include "publisher.h"
#include "status.h"

#define STATUS_TICK_USEC CUB_USEC_PER_SEC
#define STATUS_RESYNC_TICKS 10

struct KubePublisher {
        KubeClient *client;
        KubeNode *node;
        KubeSource *source; /* borrowed */
        KubeStatus *status; /* the pods' status, and the final DELETE */
        KubeEvents *events; /* their events */
        KubePublisherHooks hooks;
        char *node_name;
        sd_event_source *status_timer;
        uint64_t ticks;
        uint64_t tick_cpu_usec; /* the status tick's CPU (CLOCK_THREAD_CPUTIME_ID), for cubelet status */
        /* the node's own events (Starting, NodeReady, ...), and the
         * conditions they came from: type → status */
        struct {
                char reason[48], message[160];
                unsigned count;
                int64_t first_unix, last_unix;
        } node_events[12];
        size_t n_node_events;
        json_t *node_conditions;
};

static bool from_api(const LcPod *p) {
        return strcmp(p->spec->source, KUBE_SOURCE_PATH) == 0;
}

/* whether the snapshot has a pod of uid */
static bool snap_has(const KubePubSnapshot *snap, const char *uid) {
        for (size_t i = 0; i < snap->n_pods; i++)
                if (strcmp(snap->pods[i]->spec->pod->uid, uid) == 0)
                        return true;
        return false;
}

/* ---- the node's own events (kubelet's recordNodeStatusEvent) ------------------------ */

void kube_publisher_node_event(KubePublisher *pub, const char *reason, const char *message) {
        int64_t now = (int64_t) (cub_now_usec(CLOCK_REALTIME) / CUB_USEC_PER_SEC);
        size_t i;

        for (i = 0; i < pub->n_node_events; i++)
                if (strcmp(pub->node_events[i].reason, reason) == 0)
                        break;
        if (i == pub->n_node_events) {
                if (i == sizeof(pub->node_events) / sizeof(*pub->node_events))
                        return;
                pub->n_node_events++;
                (void) snprintf(pub->node_events[i].reason, sizeof(pub->node_events[i].reason), "%s", reason);
                pub->node_events[i].first_unix = now;
                pub->node_events[i].count = 0;
        }
        (void) snprintf(pub->node_events[i].message, sizeof(pub->node_events[i].message), "%s", message);
        pub->node_events[i].count++;
        pub->node_events[i].last_unix = now;
}

/* the conditions the node's status starts from: the existing Node's
 * (a restart), else none */
static json_t *first_conditions(KubePublisher *pub) {
        const json_t *api = kube_node_api_conditions(pub->node), *c;
        json_t *o = json_object();
        size_t i;

        json_array_foreach(api, i, c) {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *st = json_string_value(json_object_get(c, "status"));

                if (o && type && st)
                        json_object_set_new(o, type, json_string(st));
        }
        return o;
}

/* the conditions' changes as kubelet's events (nodestatus/setters.go): a
 * pressure condition's first status is a change (from Unknown), Ready's is
 * not (NodeReady and NodeNotReady only when an existing Ready condition
 * changes); on a Node that existed (a restart) they start from its
 * conditions, so that an unchanged one sends nothing. Before the node is
 * registered, nothing is decided. */
void kube_publisher_node_conditions(KubePublisher *pub, const json_t *conds) {
        static const struct {
                const char *type, *when_true, *when_false;
        } map[] = {
                { "MemoryPressure", "NodeHasInsufficientMemory", "NodeHasSufficientMemory" },
                { "DiskPressure", "NodeHasDiskPressure", "NodeHasNoDiskPressure" },
                { "PIDPressure", "NodeHasInsufficientPID", "NodeHasSufficientPID" },
                { "Ready", "NodeReady", "NodeNotReady" },
        };
        const json_t *c;
        size_t i;

        if (!kube_node_registered(pub->node))
                return;
        if (!pub->node_conditions && !(pub->node_conditions = first_conditions(pub)))
                return;
        json_array_foreach(conds, i, c) {
                const char *type = json_string_value(json_object_get(c, "type")) ?: "";
                const char *st = json_string_value(json_object_get(c, "status")) ?: "";
                const char *before = json_string_value(json_object_get(pub->node_conditions, type));
                char msg[160];

                if (strcmp(before ?: "", st) == 0)
                        continue;
                json_object_set_new(pub->node_conditions, type, json_string(st));
                if (!before && strcmp(type, "Ready") == 0)
                        continue; /* kubelet appends a new Ready condition without an event */
                for (size_t k = 0; k < sizeof(map) / sizeof(*map); k++)
                        if (strcmp(map[k].type, type) == 0) {
                                const char *r = strcmp(st, "True") == 0 ? map[k].when_true : map[k].when_false;

                                (void) snprintf(msg, sizeof(msg), "Node %s status is now: %s", pub->node_name,
                                                r);
                                kube_publisher_node_event(pub, r, msg);
                        }
        }
}

/* ---- pods' status and mirror pods ------------------------------------------------------- */

static const char *uid_of_json(const json_t *o) {
        return json_string_value(json_object_get(json_object_get(o, "metadata"), "uid")) ?: "";
}

/* ---- a pod's status ------------------------------------------------------------- */

static void publish_status(KubePublisher *pub, const LcPod *p, const ApiPodsInfo *info, const char *uid) {
        size_t key_len = 0;
        _cleanup_free_ char *key = api_pod_status_key(p, info, &key_len);
        json_t *pj;

        if (key && kube_status_unchanged(pub->status, uid, key, key_len))
                return;
        pj = api_pod_status_json(p, info);
        if (pj)
                kube_status_set(pub->status, p->spec->pod->namespace_, p->spec->pod->name, uid, pj, key,
                                key_len);
        json_decref(pj);
}

/* ---- mirror pods ------------------------------------------------------------------ */

/* the mirror pod of static pod p in the API's set (NULL: none) */
static const json_t *mirror_of(const json_t *set, const LcPod *p) {
        const char *uid;
        json_t *o;

        json_object_foreach((json_t *) set, uid, o) {
                const json_t *meta = json_object_get(o, "metadata");
                const char *name = json_string_value(json_object_get(meta, "name"));
                const char *ns = json_string_value(json_object_get(meta, "namespace"));

                /* one being deleted is finished below, then made again */
                if (json_object_get(json_object_get(meta, "annotations"), "kubernetes.io/config.mirror") && name &&
                    ns && !json_object_get(meta, "deletionTimestamp") && strcmp(name, p->spec->pod->name) == 0 &&
                    strcmp(ns, p->spec->pod->namespace_) == 0)
                        return o;
        }
        return NULL;
}

/* kubelet's mirror client: a copy of the static pod (as /pods renders its
 * spec), annotated with its config hash, owned by the Node */
/* Go's time.RFC3339Nano in UTC: the fraction without its trailing zeros */
static const char *seen_text(int64_t ns, char *buf, size_t size) {
        time_t s = (time_t) (ns / 1000000000);
        long frac = (long) (ns % 1000000000);
        char date[24], digits[12];
        struct tm tm;
        int n = 9;

        (void) gmtime_r(&s, &tm);
        (void) strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
        (void) snprintf(digits, sizeof(digits), "%09ld", frac);
        while (n > 0 && digits[n - 1] == '0')
                digits[--n] = 0;
        (void) snprintf(buf, size, "%s%s%sZ", date, n ? "." : "", digits);
        return buf;
}

static json_t *mirror_json(KubePublisher *pub, const LcPod *p, const ApiPodsInfo *info) {
        json_t *pj = api_pod_json(p, info), *meta, *ann;
        char seen[64];

        if (!pj)
                return NULL;
        json_object_del(pj, "status");
        meta = json_object_get(pj, "metadata");
        json_object_del(meta, "uid");
        json_object_del(meta, "creationTimestamp");
        ann = json_object_get(meta, "annotations");
        if (!json_is_object(ann)) {
                ann = json_object();
                json_object_set_new(meta, "annotations", ann);
        }
        json_object_set_new(ann, "kubernetes.io/config.mirror", json_string(p->spec->pod->config_hash));
        json_object_set_new(ann, "kubernetes.io/config.seen", json_string(seen_text(p->seen_ns, seen, sizeof(seen))));
        json_object_set_new(meta, "ownerReferences",
                            json_pack("[{s:s,s:s,s:s,s:s,s:b}]", "apiVersion", "v1", "kind", "Node", "name",
                                      pub->node_name, "uid", kube_node_uid(pub->node), "controller", 1));
        return pj;
}

/* Static pods get their mirror pod, with the static pod's status; a mirror
 * pod whose hash is not its static pod's (edited), or without one
 * (removed), is deleted with its UID as the precondition. */
static void mirror_pods(KubePublisher *pub, const KubePubSnapshot *snap, const json_t *set) {
        const char *uid;
        json_t *o;

        if (!kube_node_registered(pub->node))
                return;
        for (size_t i = 0; i < snap->n_pods; i++) {
                const LcPod *p = snap->pods[i];
                const json_t *m;
                json_t *pj;
                char key[600];

                if (from_api(p) || !p->wanted)
                        continue;
                m = mirror_of(set, p);
                if (!m) {
                        (void) snprintf(key, sizeof(key), "%s/%s", p->spec->pod->namespace_, p->spec->pod->name);
                        pj = mirror_json(pub, p, &snap->info);
                        if (pj)
                                kube_status_create(pub->status, key, p->spec->pod->namespace_, pj);
                        json_decref(pj);
                        continue;
                }
                if (strcmp(json_string_value(
                                   json_object_get(json_object_get(json_object_get(m, "metadata"), "annotations"),
                                                   "kubernetes.io/config.mirror"))
                                   ?: "",
                           p->spec->pod->config_hash) != 0)
                        continue; /* the old one goes below, the new one follows */
                publish_status(pub, p, &snap->info, uid_of_json(m));
        }
        json_object_foreach((json_t *) set, uid, o) {
                const json_t *meta = json_object_get(o, "metadata");
                const char *hash = json_string_value(
                        json_object_get(json_object_get(meta, "annotations"), "kubernetes.io/config.mirror"));
                bool keep = false;

                if (!hash)
                        continue;
                for (size_t i = 0; i < snap->n_pods && !keep; i++) {
                        const LcPod *p = snap->pods[i];

                        keep = !from_api(p) && p->wanted && mirror_of(set, p) == o &&
                               strcmp(p->spec->pod->config_hash, hash) == 0;
                }
                if (!keep)
                        kube_status_delete(pub->status, json_string_value(json_object_get(meta, "namespace")),
                                           json_string_value(json_object_get(meta, "name")), uid);
        }
}

/* ---- the status tick --------------------------------------------------------------------- */

/* Each second: the status of every API pod of the loop's snapshot, as /pods renders
 * it (rendered when what it depends on changed, sent when it did), the
 * final DELETE of each deleted pod whose containers are stopped, and the
 * statuses of pods the API no longer has forgotten. */
static void status_tick(KubePublisher *pub) {
        const json_t *set = kube_source_pods(pub->source);
        KubePubSnapshot snap = {};
        const char *uid;
        json_t *o, *keep;

        pub->ticks++;
        kube_source_tick(pub->source);
        if (!kube_source_synced(pub->source))
                return;
        pub->hooks.snapshot(pub->hooks.userdata, &snap);
        keep = json_object();
        (void) json_object_update(keep, (json_t *) set);
        for (size_t i = 0; keep && i < snap.n_pods; i++) {
                const LcPod *p = snap.pods[i];
                bool api = from_api(p) && json_object_get(set, p->spec->pod->uid);

                /* a static pod's events too, once the node is there (kubelet's) */
                if (!api && (from_api(p) || !p->wanted || !kube_node_registered(pub->node)))
                        continue;
                if (!api)
                        (void) json_object_set_new(keep, p->spec->pod->uid, json_true());
                /* kubelet's status manager resyncs every 10 s */
                if (api && pub->ticks % STATUS_RESYNC_TICKS == 0)
                        (void) kube_status_reconcile(
                                pub->status, p->spec->pod->uid,
                                json_object_get(json_object_get(set, p->spec->pod->uid), "status"));
                /* a pod already terminal in the API when cubelet first saw it
                 * keeps the API's status; one whose status is the one sent
                 * and depends on the same bytes is not rendered again */
                if (api && !p->api_terminal)
                        publish_status(pub, p, &snap.info, p->spec->pod->uid);
                for (size_t k = 0; k < p->n_events; k++) {
                        const LcEvent *e = &p->events[k];
                        KubeEventInput in = {
                                .ns = p->spec->pod->namespace_,
                                .pod = p->spec->pod->name,
                                .uid = p->spec->pod->uid,
                                .warning = e->warning,
                                .reason = e->reason,
                                .message = e->message ? e->message : "",
                                .count = e->count,
                                .first_unix = ((int64_t) e->first_usec + snap.info.wall_minus_mono_usec) / 1000000,
                                .last_unix = ((int64_t) e->last_usec + snap.info.wall_minus_mono_usec) / 1000000,
                        };

                        kube_events_record(pub->events, &in);
                }
        }
        json_object_foreach((json_t *) kube_source_waiting(pub->source), uid, o) {
                json_int_t first = json_integer_value(json_object_get(o, "first"));
                KubeEventInput in = { .ns = json_string_value(json_object_get(o, "ns")),
                                      .pod = json_string_value(json_object_get(o, "name")),
                                      .uid = uid,
                                      .warning = true,
                                      .reason = "FailedMount",
                                      .message = json_string_value(json_object_get(o, "message")),
                                      .count = 1,
                                      .first_unix = first,
                                      .last_unix = first };

                kube_events_record(pub->events, &in);
        }
        for (size_t i = 0; kube_node_registered(pub->node) && i < pub->n_node_events; i++) {
                KubeEventInput in = { .kind = "Node",
                                      .ns = "default",
                                      .pod = pub->node_name,
                                      .uid = pub->node_name,
                                      .reason = pub->node_events[i].reason,
                                      .message = pub->node_events[i].message,
                                      .count = pub->node_events[i].count,
                                      .first_unix = pub->node_events[i].first_unix,
                                      .last_unix = pub->node_events[i].last_unix };

                kube_events_record(pub->events, &in);
        }
        kube_events_prune(pub->events, keep ?: set);
        json_decref(keep);
        json_object_foreach((json_t *) set, uid, o) {
                const json_t *meta = json_object_get(o, "metadata");

                if (!json_object_get(meta, "deletionTimestamp") ||
                    json_object_get(json_object_get(meta, "annotations"), "kubernetes.io/config.mirror") ||
                    snap_has(&snap, uid) || pub->hooks.stopping(pub->hooks.userdata, uid))
                        continue;
                kube_status_delete(pub->status, json_string_value(json_object_get(meta, "namespace")),
                                   json_string_value(json_object_get(meta, "name")), uid);
        }
        mirror_pods(pub, &snap, set);
        kube_status_prune(pub->status, set);
}

static int on_status_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        KubePublisher *pub = userdata;
        uint64_t t0 = cub_now_usec(CLOCK_THREAD_CPUTIME_ID);

        (void) sd_event_source_set_time(s, usec + STATUS_TICK_USEC);
        status_tick(pub);
        pub->tick_cpu_usec += cub_now_usec(CLOCK_THREAD_CPUTIME_ID) - t0;
        return 0;
}

/* ---- the object ------------------------------------------------------------------------ */

int kube_publisher_new(sd_event *e, KubeClient *client, const KubeNodeOptions *o, const KubePublisherHooks *h,
                       KubePublisher **ret, CubError *err) {
        KubePublisher *pub = calloc(1, sizeof(*pub));
        int r;

        if (!pub) {
                kube_client_free(client);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        pub->client = client;
        pub->hooks = *h;
        pub->node_name = strdup(o->name);
        r = pub->node_name ? 0 : cub_err_set(err, ENOMEM, "out of memory");
        if (r >= 0)
                r = kube_node_new(e, client, o, h->node, h->userdata, &pub->node, err);
        if (r >= 0)
                r = kube_node_start(pub->node, err);
        if (r >= 0)
                r = kube_status_new(client, &pub->status, err);
        if (r >= 0)
                r = kube_events_new(client, o->name, &pub->events, err);
        if (r >= 0)
                kube_publisher_node_event(pub, "Starting", "Starting kubelet.");
        if (r >= 0 && (r = sd_event_add_time_relative(e, &pub->status_timer, CLOCK_MONOTONIC, STATUS_TICK_USEC,
                                                      CUB_USEC_PER_MSEC * 10, on_status_tick, pub)) < 0)
                r = cub_err_set(err, -r, "sd-event: %s", strerror(-r));
        if (r < 0) {
                kube_publisher_free(pub);
                return r;
        }
        (void) sd_event_source_set_description(pub->status_timer, "kube-pod-status");
        /* on with the source: the tick publishes against its set */
        (void) sd_event_source_set_enabled(pub->status_timer, SD_EVENT_OFF);
        *ret = pub;
        return 0;
}

void kube_publisher_set_source(KubePublisher *pub, KubeSource *source) {
        pub->source = source;
        (void) sd_event_source_set_enabled(pub->status_timer, source ? SD_EVENT_ON : SD_EVENT_OFF);
}

KubePublisher *kube_publisher_free(KubePublisher *pub) {
        if (!pub)
                return NULL;
        sd_event_source_disable_unref(pub->status_timer);
        kube_status_free(pub->status);
        kube_events_free(pub->events);
        json_decref(pub->node_conditions);
        kube_node_free(pub->node);
        kube_client_free(pub->client);
        free(pub->node_name);
        free(pub);
        return NULL;
}

KubeClient *kube_publisher_client(KubePublisher *pub) {
        return pub->client;
}

void kube_publisher_node_changed(KubePublisher *pub) {
        kube_node_changed(pub->node);
}

json_t *kube_publisher_status_json(KubePublisher *pub) {
        json_t *o = pub->node ? kube_node_status_json(pub->node) : NULL;
        const KubeClientStats *s = kube_client_stats(pub->client);

        if (!o)
                return NULL;
        json_object_set_new(o, "requests", json_integer((json_int_t) s->requests));
        if (pub->source)
                kube_source_status(pub->source, o);
        json_object_set_new(o, "podStatus", kube_status_json(pub->status));
        json_object_set_new(o, "events", kube_events_status_json(pub->events));
        json_object_set_new(o, "failures", json_integer((json_int_t) s->failures));
        json_object_set_new(o, "retryAfterHolds", json_integer((json_int_t) s->holds));
        /* the status tick's own CPU (the loop's thread), µs since the start */
        json_object_set_new(o, "statusTickCpuUsec", json_integer((json_int_t) pub->tick_cpu_usec));
        return o;
}
