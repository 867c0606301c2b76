/* SPDX-License-Identifier: Apache-2.0 */
/* kubelet's PodConfig merge. The sources (the manifest directory, the
 * manifest URL, the API server) read and decode, then push what they
 * read onto one queue; the loop drains it here, the one place that puts
 * pods in the table and takes them out. A push drains at once unless a
 * drain is under way (an update pushed while one is applied waits its
 * turn), so a source's event is applied before the loop runs anything else.
 * Names are unique per source; UIDs are unique across sources (the first
 * wins). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/log.h"
#include "agent-internal.h"

/* The sources' queue: written by merge.c alone. */
struct AgentQueue {
        AgentUpdate *head, *tail;
        bool draining;
};

static void pod_set_file_id(LcPod *p, const PodsrcFileId *id) {
        lc_pod_set_file_id(p, id->dev, id->ino, id->size, id->mtime_ns, id->ctime_ns);
}

/* a pod that left its source */
static void pod_gone(Agent *a, LcPod *p) {
        cub_log(LOG_INFO, "pod %s/%s (uid %s) is no longer wanted", p->spec->pod->namespace_, p->spec->pod->name,
                p->spec->pod->uid);
        lc_pod_set_wanted(p, false);
        agent_pod_forget(a, p);
}

/* a new pod of an entry (takes its pod); false when it could not be made */
static bool pod_new(Agent *a, PodsrcEntry *e, uint64_t event_usec) {
        WorkerSpec *spec;
        CubError err = {};

        _cleanup_free_ char *uid = e->pod ? strdup(e->pod->uid) : NULL;
        LcPod *p;

        if (e->pod)
                agent_resize_restore_pod(a, e->pod); /* its allocation, after a restart */
        if (worker_spec_new(TAKE_PTR(e->pod), e->path, &a->core.cg, a->core.log_root, &spec, &err) < 0) {
                cub_log(LOG_ERR, "%s: %s, skipping this manifest", e->path, err.msg);
                return false;
        }
        p = agent_pod_insert(a, spec, event_usec);
        if (p) {
                lc_pod_set_wanted(p, true); /* before its admission, which may look (LcEnv.pods) */
                if (p->spec->pod->api_phase)
                        agent_pod_api_terminal(a, p);
                else
                        agent_pod_start(a, p);
        }
        p = uid ? agent_find_pod(a, uid) : NULL;
        if (p) {
                pod_set_file_id(p, &e->id);
                agent_resize_restored(a, p);
        }
        return true;
}

/* the table changed */
static void changed(Agent *a) {
        agent_pods_trim_later(a);
        agent_remove_unwanted(a);
        agent_managers_pods_changed(a); /* the QoS groups */
        agent_request_relist(a);
        agent_notify_status(a);
}

/* The directory's whole set (the rescan): its pods that are not in it go,
 * the same ones stay, new ones come. */
static void merge_dir_set(Agent *a, PodsrcSet *set, uint64_t now) {
        bool any = false, batch = false;

        for (size_t i = 0; i < a->table.n_pods; i++)
                if (agent_pod_from_dir(a, a->table.pods[i])) /* the URL's and the API's are their own */
                        lc_pod_set_wanted(a->table.pods[i], false);
        /* pods that stay are known first, so that what left frees its
         * resources before new pods are admitted */
        for (size_t i = 0; i < set->n; i++) {
                const Pod *ep = set->items[i].pod ? set->items[i].pod : set->items[i].cached;
                LcPod *p = ep ? agent_find_pod(a, ep->uid) : NULL;

                if (p && strcmp(p->spec->pod->config_hash, ep->config_hash) == 0) {
                        lc_pod_set_wanted(p, true);
                        pod_set_file_id(p, &set->items[i].id);           /* touched, same pod */
                        agent_pod_resize_want(a, p, &set->items[i].pod); /* or resized */
                }
        }
        for (size_t i = 0; i < a->table.n_pods; i++)
                if (!a->table.pods[i]->wanted && agent_pod_from_dir(a, a->table.pods[i])) {
                        pod_gone(a, a->table.pods[i]);
                        any = true;
                }
        for (size_t i = 0; i < set->n; i++) {
                PodsrcEntry *e = &set->items[i];
                LcPod *p;

                if (!e->pod)
                        continue;
                p = agent_find_pod(a, e->pod->uid);
                if (p && p->wanted)
                        continue; /* the same pod, or a duplicate UID in two files: the first wins */
                if (!batch) {
                        agent_managers_admit_batch(a);
                        batch = true;
                }
                any = pod_new(a, e, now) || any;
        }
        if (any)
                changed(a);
}

/* One complete file of the directory: its pod is added, replaced or removed
 * (e->pod NULL: the file is gone, or broken with e->error). */
static void merge_file(Agent *a, const char *path, PodsrcEntry *e, uint64_t event_usec) {
        bool any = false;

        if (e->pod) {
                for (size_t i = 0; i < a->table.n_pods; i++) {
                        const LcPod *o = a->table.pods[i];

                        /* names are unique per source (kubelet's merge) */
                        if (o->wanted && strcmp(o->spec->source, path) != 0 && agent_pod_from_dir(a, o) &&
                            strcmp(o->spec->pod->name, e->pod->name) == 0 &&
                            strcmp(o->spec->pod->namespace_, e->pod->namespace_) == 0) {
                                CubError err = {};

                                (void) cub_err_set(&err, EEXIST, "%s: pod %s/%s is already defined by '%s'", path,
                                                   o->spec->pod->namespace_, o->spec->pod->name, o->spec->source);
                                e->pod = pod_free(e->pod);
                                free(e->error);
                                e->error = strdup(err.msg);
                                break;
                        }
                }
        }
        agent_source_dir_file_error(a, path, e->error);
        /* the pods this file defined before go, unless it is the very same pod */
        for (size_t i = 0; i < a->table.n_pods; i++) {
                LcPod *p = a->table.pods[i];

                if (!p->wanted || strcmp(p->spec->source, path) != 0)
                        continue;
                if (e->pod && strcmp(p->spec->pod->uid, e->pod->uid) == 0 &&
                    strcmp(p->spec->pod->config_hash, e->pod->config_hash) == 0) {
                        pod_set_file_id(p, &e->id);           /* rewritten, same pod */
                        agent_pod_resize_want(a, p, &e->pod); /* or resized */
                        return;
                }
                pod_gone(a, p);
                any = true;
        }
        if (e->pod) {
                const LcPod *known = agent_find_pod(a, e->pod->uid);

                if (!known || !known->wanted) {
                        agent_managers_admit_batch(a);
                        any = pod_new(a, e, event_usec) || any;
                }
        }
        if (any)
                changed(a);
        else
                agent_notify_status(a);
}

static bool from_source(const Agent *a, const LcPod *p, bool api) {
        return api ? agent_pod_from_api(p) : agent_pod_from_url(a, p);
}

/* The URL's whole set (a 200 that decodes) or the API server's (after a
 * list or a watch event): its pods that left go, new ones come, the same
 * UIDs stay. */
static void merge_set(Agent *a, PodsrcSet *set, uint64_t now, bool api) {
        bool any = false, batch = false;

        bool *was = calloc(a->table.n_pods + 1, sizeof(bool));

        if (!was)
                return;
        for (size_t i = 0; i < a->table.n_pods; i++)
                if (from_source(a, a->table.pods[i], api)) {
                        was[i] = a->table.pods[i]->wanted;
                        lc_pod_set_wanted(a->table.pods[i], false);
                }
        for (size_t i = 0; i < set->n; i++) {
                LcPod *p = set->items[i].pod ? agent_find_pod(a, set->items[i].pod->uid) : NULL;

                if (p && from_source(a, p, api) &&
                    strcmp(p->spec->pod->config_hash, set->items[i].pod->config_hash) == 0) {
                        lc_pod_set_wanted(p, true);
                        /* activeDeadlineSeconds may change while the pod runs (not in the hash) */
                        /* readiness gates: what the API server says of their conditions */
                        if (lc_pod_set_gates(p, set->items[i].pod)) {
                                (void) lc_pod_track_conditions(
                                        p, (int64_t) (cub_now_usec(CLOCK_REALTIME) / CUB_USEC_PER_SEC));
                                agent_notify_status(a);
                        }
                        if (lc_pod_set_active_deadline(p, set->items[i].pod->active_deadline_seconds))
                                agent_request_relist(a);
                        agent_pod_resize_want(a, p, &set->items[i].pod); /* the same pod, or resized */
                        if (agent_pod_spec_want(a, p, &set->items[i].pod) && agent_pod_spec_apply(a, p))
                                agent_request_relist(a);
                }
        }
        for (size_t i = 0; i < a->table.n_pods; i++)
                if (was[i] && !a->table.pods[i]->wanted) {
                        pod_gone(a, a->table.pods[i]);
                        any = true;
                }
        for (size_t i = 0; i < set->n; i++) {
                PodsrcEntry *e = &set->items[i];
                LcPod *p;

                if (e->error) {
                        if (!api)
                                agent_source_http_error(a, e->error);
                        continue;
                }
                if (!e->pod)
                        continue; /* taken by a resize */
                p = agent_find_pod(a, e->pod->uid);
                if (p && p->wanted) {
                        if (!from_source(a, p, api)) {
                                char msg[CUB_ERR_MSG_MAX];

                                (void) snprintf(msg, sizeof(msg), "%s: pod %s/%s: uid %s is already used by '%s'",
                                                api ? AGENT_SOURCE_API : a->core.opt.manifest_url, e->pod->namespace_,
                                                e->pod->name, e->pod->uid, p->spec->source);
                                if (api)
                                        cub_log(LOG_ERR, "%s", msg);
                                else
                                        agent_source_http_error(a, msg);
                        }
                        continue;
                }
                if (!batch) {
                        agent_managers_admit_batch(a);
                        batch = true;
                }
                any = pod_new(a, e, now) || any;
        }
        free(was);
        if (any)
                changed(a);
        else
                agent_notify_status(a);
}

static AgentUpdate *update_free(AgentUpdate *u) {
        if (!u)
                return NULL;
        podsrc_set_done(&u->set);
        podsrc_entry_done(&u->entry);
        free(u->path);
        free(u);
        return NULL;
}

AgentUpdate *agent_update_new(AgentUpdateKind kind, uint64_t event_usec) {
        AgentUpdate *u = calloc(1, sizeof(*u));

        if (u) {
                u->kind = kind;
                u->event_usec = event_usec;
        }
        return u;
}

void agent_update_push(Agent *a, AgentUpdate *u) {
        if (!u)
                return;
        if (!a->queue && !(a->queue = calloc(1, sizeof(*a->queue)))) {
                cub_log(LOG_ERR, "%s: out of memory: an update of the sources is lost", u->path ?: "sources");
                update_free(u);
                return;
        }
        if (a->queue->tail)
                a->queue->tail->next = u;
        else
                a->queue->head = u;
        a->queue->tail = u;
        if (a->queue->draining)
                return;
        a->queue->draining = true;
        while ((u = a->queue->head)) {
                a->queue->head = u->next;
                if (!a->queue->head)
                        a->queue->tail = NULL;
                switch (u->kind) {
                case AGENT_UPDATE_DIR_SET:
                        merge_dir_set(a, &u->set, u->event_usec);
                        break;
                case AGENT_UPDATE_FILE:
                        merge_file(a, u->path, &u->entry, u->event_usec);
                        break;
                case AGENT_UPDATE_URL_SET:
                        merge_set(a, &u->set, u->event_usec, false);
                        break;
                case AGENT_UPDATE_API_SET:
                        merge_set(a, &u->set, u->event_usec, true);
                        break;
                }
                update_free(u);
        }
        a->queue->draining = false;
        /* before the sources are ready, a pod that runs may only be unknown
         * yet (the API server's list after a restart): the managers drop
         * what belongs to pods that are gone once every source has given
         * its set, as kubelet's cleanups wait for sourcesReady */
        if (agent_sources_ready(a) && !agent_pods_held(a))
                agent_managers_restore(a);
}

void agent_updates_free(Agent *a) {
        if (!a->queue)
                return;
        while (a->queue->head) {
                AgentUpdate *u = a->queue->head;

                a->queue->head = u->next;
                update_free(u);
        }
        free(a->queue);
        a->queue = NULL;
}
