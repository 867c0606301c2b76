/* SPDX-License-Identifier: Apache-2.0 */
/* In-place resize (KEP-1287), kubelet 1.34's allocation manager and
 * resize actuation, the loop's part. The pod's spec is what is allocated.
 * A source's pod of the same identity whose cpu/memory differ waits in
 * LcResize.want; it is allocated once the managers fit it (admission:
 * Deferred, Infeasible), then actuated by an UPDATE job (the pod cgroup,
 * UpdateContainerResources, no memory limit below usage); a container
 * whose resizePolicy says RestartContainer for what changed is stopped and
 * started again with its new resources. Deferred resizes and failed
 * actuations are tried again after a relist, with back-off. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../pod/resize.h"
#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../util/time.h"
#include "agent-internal.h"

#define RESIZE_DEFERRED_USEC (5 * CUB_USEC_PER_SEC)
#define RESIZE_RETRY_MAX_USEC (60 * CUB_USEC_PER_SEC)

/* ---- the checkpoint ------------------------------------------------------ */

#define CKPT_FILE "pod_resources"

static json_t *ckpt(Agent *a) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        json_t *doc = NULL;
        size_t len = 0;
        CubError err = {};

        if (a->resize.ckpt)
                return a->resize.ckpt;
        if (asprintf(&path, "%s/%s", a->core.opt.state_dir, CKPT_FILE) >= 0 &&
            cub_read_file(path, 16 << 20, &text, &len, &err) >= 0) {
                doc = json_loadb(text, len, 0, NULL);
                if (!json_is_object(json_object_get(doc, "pods")) ||
                    json_integer_value(json_object_get(doc, "version")) != 1) {
                        cub_log(LOG_WARNING, "%s: not a pod resources checkpoint of version 1; ignored", path);
                        json_decref(doc);
                        doc = NULL;
                }
        }
        a->resize.ckpt = doc ? doc : json_pack("{s:i,s:{}}", "version", 1, "pods");
        return a->resize.ckpt;
}

/* the pod's entry as it is now (none when nothing waits or is in progress),
 * and the file written again */
static void save(Agent *a, const LcPod *p) {
        json_t *pods = json_object_get(ckpt(a), "pods"), *list;
        _cleanup_free_ char *path = NULL, *text = NULL;
        CubError err = {};

        if (!pods)
                return;
        /* the entries of pods that are gone, once every source has spoken */
        if (agent_sources_ready(a)) {
                const char *uid;
                json_t *v;
                void *tmp;

                json_object_foreach_safe(pods, tmp, uid, v) {
                        if (!agent_find_pod(a, uid))
                                (void) json_object_del(pods, uid);
                }
        }
        if (!p->resize.want && !p->resize.in_progress) {
                if (json_object_del(pods, p->spec->pod->uid) < 0)
                        return; /* nothing was there */
        } else {
                list = json_array();
                for (size_t k = 0; k < p->n; k++)
                        json_array_append_new(list, pod_resize_container_json(pod_container_at(p->spec->pod, k, NULL)));
                json_object_set_new(pods, p->spec->pod->uid,
                                    json_pack("{s:b,s:o}", "inProgress", p->resize.in_progress, "containers", list));
        }
        text = json_dumps(a->resize.ckpt, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text || asprintf(&path, "%s/%s", a->core.opt.state_dir, CKPT_FILE) < 0 ||
            cub_write_file_atomic(path, text, strlen(text), 0600, &err) < 0)
                cub_log(LOG_ERR, "pod %s/%s: the resize checkpoint: %s", p->spec->pod->namespace_, p->spec->pod->name,
                        *err.msg ? err.msg : "out of memory");
}

void agent_resize_restore_pod(Agent *a, Pod *pod) {
        const json_t *e = json_object_get(json_object_get(ckpt(a), "pods"), pod->uid);
        CubError err = {};

        if (e && pod_resize_apply(pod, json_object_get(e, "containers"), &err) < 0)
                cub_log(LOG_ERR, "pod %s/%s: its allocation in the resize checkpoint: %s; the source's taken",
                        pod->namespace_, pod->name, err.msg);
}

void agent_resize_restored(Agent *a, LcPod *p) {
        const json_t *e = json_object_get(json_object_get(ckpt(a), "pods"), p->spec->pod->uid);

        if (!e)
                return;
        /* the source's pod comes again (the directory's rescan decodes the
         * file again, the URL's next answer, the API's next event): if it
         * differs from the allocation, it waits as the want */
        lc_resize_restored(p, json_is_true(json_object_get(e, "inProgress")), agent_now_usec(), time(NULL));
        cub_log(LOG_INFO, "pod %s/%s: its allocation from the resize checkpoint%s", p->spec->pod->namespace_,
                p->spec->pod->name, p->resize.in_progress ? ", to be actuated" : "");
}

void agent_resize_free(Agent *a) {
        json_decref(a->resize.ckpt);
        a->resize.ckpt = NULL;
}

/* ---- resize --------------------------------------------------------------- */

static void try_one(Agent *a, LcPod *p, uint64_t now);

void agent_pod_resize_want(Agent *a, LcPod *p, Pod **pod) {
        const Pod *cur = p->spec->pod;
        _cleanup_free_ PodResizeChange *ch = NULL;
        WorkerSpec *spec = NULL;
        CubError err = {};
        bool any = false;

        /* a rescan's unchanged file comes without a pod: nothing to compare */
        if (!*pod || !(ch = calloc(p->n + 1, sizeof(PodResizeChange))))
                return;
        if (pod_resize_compare(cur, *pod, ch, &any, &err) < 0) {
                cub_log(LOG_ERR, "%s: pod %s/%s: %s; not resized", p->spec->source, cur->namespace_, cur->name,
                        err.msg);
                return;
        }
        if (!any) {
                /* back to what is allocated: nothing waits any more */
                if (p->resize.want) {
                        cub_log(LOG_INFO, "pod %s/%s: the resize waiting is withdrawn", cur->namespace_, cur->name);
                        lc_resize_withdraw(p);
                        save(a, p);
                }
                return;
        }
        if (p->resize.want) {
                bool again = false;

                if (pod_resize_compare(p->resize.want->pod, *pod, ch, &again, &err) >= 0 && !again)
                        return; /* the same resize, still waiting */
        }
        if (worker_spec_new(TAKE_PTR(*pod), p->spec->source, &a->core.cg, a->core.log_root, &spec, &err) < 0) {
                cub_log(LOG_ERR, "%s: pod %s/%s: %s; not resized", p->spec->source, cur->namespace_, cur->name,
                        err.msg);
                return;
        }
        lc_resize_want(p, spec);
        cub_log(LOG_INFO, "pod %s/%s: resize wanted", cur->namespace_, cur->name);
        save(a, p);
        try_one(a, p, agent_now_usec());
        agent_notify_status(a);
}

static void actuate(Agent *a, LcPod *p) {
        bool *skip = NULL;

        if (p->resize.restart) {
                skip = malloc((p->n + 1) * sizeof(bool));
                if (skip)
                        memcpy(skip, p->resize.restart, p->n * sizeof(bool));
        }
        if (!agent_submit_resize(a, p, skip))
                lc_resize_retry_at(p, agent_now_usec() + CUB_USEC_PER_SEC);
}

/* kubelet's disallowResizeForSwappableContainers: a memory request that
 * changes, without RestartContainer for memory, in a container that swaps
 * before or after */
static bool swaps(const WorkerSpec *s, size_t k) {
        const CgContainerResources *r =
                k < s->pod->n_init_containers ? &s->init_res[k] : &s->app_res[k - s->pod->n_init_containers];

        return *r->memory_swap_max && strcmp(r->memory_swap_max, "0") != 0;
}

static bool swap_resize(const LcPod *p) {
        for (size_t k = 0; k < p->n; k++) {
                const PodContainer *a = pod_container_at(p->spec->pod, k, NULL);
                const PodContainer *b = pod_container_at(p->resize.want->pod, k, NULL);
                CubQuantity qa, qb;
                bool ha = pod_resource_get(&a->requests, "memory", &qa),
                     hb = pod_resource_get(&b->requests, "memory", &qb);

                if ((ha != hb || cub_quantity_cmp(qa, qb) != 0) && !a->resize_restart_memory &&
                    (swaps(p->spec, k) || swaps(p->resize.want, k)))
                        return true;
        }
        return false;
}

/* kubelet's handlePodResourcesResize: allocate the wanted resources when
 * they fit */
static void try_one(Agent *a, LcPod *p, uint64_t now) {
        const Pod *pod = p->spec->pod;
        _cleanup_free_ PodResizeChange *ch = NULL;
        _cleanup_free_ bool *restarts = NULL;
        LcAdmitResult r;
        CubError err = {};
        bool any = false, restart = false;

        /* called for every pod after each relist and job batch: nothing
         * allocated unless a resize waits and may go now */
        if (!p->resize.want || !p->admitted || !p->started || p->terminal || p->busy || p->resize.in_progress ||
            now < p->resize.next_usec || !(ch = calloc(p->n + 1, sizeof(PodResizeChange))))
                return;
        if (pod_resize_compare(pod, p->resize.want->pod, ch, &any, &err) < 0)
                return;
        if (swap_resize(p)) {
                r = (LcAdmitResult){ .reason = "Infeasible" };
                (void) snprintf(r.message, sizeof(r.message),
                                "In-place resize of containers with swap is not supported.");
        } else
                agent_managers_resize(a, p, p->resize.want->pod, &r);
        if (!r.admit) {
                /* Infeasible waits for another resize of the source */
                if (lc_resize_pending(p, r.reason, r.message,
                                      strcmp(r.reason, "Infeasible") == 0 ? UINT64_MAX : now + RESIZE_DEFERRED_USEC,
                                      time(NULL)))
                        cub_log(LOG_INFO, "pod %s/%s: resize %s: %s", pod->namespace_, pod->name, r.reason, r.message);
                agent_notify_status(a);
                return;
        }
        if (!(restarts = calloc(p->n + 1, sizeof(bool))))
                return;
        for (size_t k = 0; k < p->n; k++) {
                restarts[k] = ch[k].restart;
                restart = restart || ch[k].restart;
        }
        lc_resize_allocating(p, restarts);
        agent_pod_set_spec(a, p, p->resize.want);
        lc_resize_allocated(p, now, time(NULL));
        pod = p->spec->pod;
        cub_log(LOG_INFO, "pod %s/%s: resize allocated%s", pod->namespace_, pod->name,
                restart ? ", containers restart for it" : "");
        save(a, p);
        agent_managers_pods_changed(a); /* the QoS groups' sums */
        actuate(a, p);
        agent_notify_status(a);
}

void agent_resizes_retry(Agent *a) {
        uint64_t now = agent_now_usec();

        for (size_t i = 0; i < a->table.n_pods; i++) {
                LcPod *p = a->table.pods[i];

                if (p->resize.in_progress && p->admitted && !p->busy && now >= p->resize.next_usec && !p->terminal)
                        actuate(a, p);
                else
                        try_one(a, p, now);
        }
}

/* "Pod resize completed: {...}" as kubelet's podResizeCompletionMsg */
static void completed(LcPod *p, uint64_t now) {
        const Pod *pod = p->spec->pod;
        json_t *o = json_object(), *init = json_array(), *app = json_array();
        _cleanup_free_ char *text = NULL;

        for (size_t k = 0; k < p->n; k++) {
                bool is_init;
                const PodContainer *c = pod_container_at(pod, k, &is_init);

                json_array_append_new(is_init ? init : app, pod_resize_container_json(c));
        }
        if (json_array_size(init) > 0)
                json_object_set(o, "initContainers", init);
        json_object_set(o, "containers", app);
        json_decref(init);
        json_decref(app);
        text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        cub_log(LOG_INFO, "pod %s/%s: resize completed in %.3f s", pod->namespace_, pod->name,
                (double) (now - p->resize.started_usec) / 1e6);
        lc_pod_event(p, false, "ResizeCompleted", now, "Pod resize completed: %s", text ? text : "{}");
}

void agent_resize_done(Agent *a, LcPod *p, const WorkerJob *j) {
        const Pod *pod = p->spec->pod;
        uint64_t now = agent_now_usec();

        if (j->spec != p->spec)
                return; /* resized again meanwhile: that one actuates */
        if (j->r < 0) {
                if (lc_resize_failed(p, j->error, now, RESIZE_RETRY_MAX_USEC))
                        cub_log(LOG_WARNING, "pod %s/%s: resize: %s", pod->namespace_, pod->name, j->error);
                agent_notify_status(a);
                return;
        }
        /* the containers that restart for it: stopped, the sync starts them */
        for (size_t k = 0; p->resize.restart && k < p->n; k++)
                if (p->resize.restart[k] && *p->statuses[k].id) {
                        const PodContainer *c = pod_container_at(pod, k, NULL);

                        lc_pod_event(p, false, "Killing", now, "Container %s resize requires restart", c->name);
                        agent_submit_stop_container(a, p, k, p->statuses[k].id, pod->termination_grace_period_seconds);
                }
        lc_resize_actuated(p);
        completed(p, now);
        save(a, p);
        agent_notify_status(a);
        /* a pod that left room may let a deferred one in */
        agent_resizes_retry(a);
}
