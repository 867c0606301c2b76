/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocation passes off the owner's thread. dp_manager_allocate_pod()
 * decides and reserves on the owner's thread (allocate.c) and hands the
 * plugin calls of the pass to a job: a thread of its own that makes them
 * and posts a DP_EVENT_JOB to the owner's queue (dp_manager_post), applied
 * by dp_manager_dispatch():
 *
 *   1. preferred stage (only when an item asks for it): GetPreferredAllocation
 *      with the devices that were free at the reservation; the owner takes an
 *      answer in place of the own choice when it is valid and its devices are
 *      still held by no other allocation, then starts the thread again for
 *   2. the Allocate stage: one call per item, in order, the first failure
 *      ends the pass. The owner fills the responses in and writes the
 *      checkpoint, or drops every reservation of the pass; then on_allocated.
 *
 * The thread reads only its job (items, target, deadline), never the
 * manager's state; each call is a cancellable client stream over a channel
 * of its own (dp_call_unary), so that a release of the pod or the manager's
 * end cancels and joins it at once. A plugin that never answers costs one
 * sleeping thread for at most the deadline (rpc_timeout_usec, 10 s).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/util/cleanup.h"
#include "../agent/util/time.h"
#include "dp-internal.h"

struct DpJob {
        DpManager *m;
        uint64_t id; /* events name the job by id: a cancelled job's late event finds none */
        char *pod_uid;
        uint64_t started_usec;
        bool allocate_stage; /* false: the preferred stage */
        DpJobItem *items;
        size_t n;
        const DpPluginOps *ops;
        void *ops_ud;
        uint64_t timeout_usec;
        DpCancel cancel;
        DpEvent *done; /* the thread posts it when it ends */
        pthread_t thread;
        bool running;
        DpJob *next;
};

void dp_job_items_free(DpJobItem *items, size_t n) {
        for (size_t i = 0; items && i < n; i++) {
                free(items[i].container);
                free(items[i].resource);
                free(items[i].target);
                dp_strv_free(items[i].avail, items[i].n_avail);
                dp_strv_free(items[i].ids, items[i].n_ids);
                dp_strv_free(items[i].pref, items[i].n_pref);
                dp_container_response_done(&items[i].resp);
        }
        free(items);
}

static void job_free(DpJob *j) {
        if (!j)
                return;
        dp_job_items_free(j->items, j->n);
        dp_cancel_done(&j->cancel);
        dp_event_free(j->done);
        free(j->pod_uid);
        free(j);
}

static void *job_main(void *arg) {
        DpJob *j = arg;
        DpEvent *e = TAKE_PTR(j->done);

        for (size_t i = 0; i < j->n; i++) {
                DpJobItem *it = &j->items[i];
                DpCall c = { .resource = it->resource,
                             .target = it->target,
                             .timeout_usec = j->timeout_usec,
                             .cancel = &j->cancel };

                if (!j->allocate_stage) {
                        CubError perr = {};

                        /* an error or an unusable answer: kubelet's fallback, the own choice */
                        if (it->preferred &&
                            j->ops->preferred(j->ops_ud, &c, (const char *const *) it->avail, it->n_avail, NULL, 0,
                                              it->n_ids, &it->pref, &it->n_pref, &perr) < 0) {
                                it->pref = NULL;
                                it->n_pref = 0;
                        }
                        continue;
                }
                it->r = j->ops->allocate(j->ops_ud, &c, (const char *const *) it->ids, it->n_ids, &it->resp, &it->err);
                if (it->r < 0)
                        break; /* all or nothing */
        }
        e->usec = cub_now_usec(CLOCK_MONOTONIC);
        dp_manager_post(j->m, e);
        return NULL;
}

static int job_run(DpJob *j, CubError *err) {
        int r;

        /* made here: the thread's answer always reaches the owner */
        j->done = calloc(1, sizeof(DpEvent));
        if (!j->done)
                return cub_err_set(err, ENOMEM, "out of memory");
        j->done->kind = DP_EVENT_JOB;
        j->done->gen = j->id;
        r = pthread_create(&j->thread, NULL, job_main, j);
        if (r != 0) {
                dp_event_free(TAKE_PTR(j->done));
                return cub_err_set(err, r, "Allocate failed due to %s, which is unexpected",
                                   "no thread for the device plugin calls");
        }
        j->running = true;
        (void) pthread_setname_np(j->thread, "dp-allocate");
        return 0;
}

static void job_join(DpJob *j) {
        if (j->running)
                (void) pthread_join(j->thread, NULL);
        j->running = false;
}

int dp_job_start(DpManager *m, const char *pod_uid, DpJobItem *items, size_t n, uint64_t started_usec, CubError *err) {
        static uint64_t next_id;
        DpJob *j = calloc(1, sizeof(*j));
        int r;

        if (!j || !(j->pod_uid = strdup(pod_uid))) {
                free(j);
                dp_job_items_free(items, n);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        j->m = m;
        j->id = ++next_id;
        j->started_usec = started_usec;
        j->items = items;
        j->n = n;
        j->ops = m->ops;
        j->ops_ud = m->ops_ud;
        j->timeout_usec = m->rpc_timeout_usec;
        dp_cancel_init(&j->cancel);
        j->allocate_stage = true;
        for (size_t i = 0; i < n; i++)
                if (items[i].preferred)
                        j->allocate_stage = false;
        r = job_run(j, err);
        if (r < 0) {
                job_free(j);
                return r;
        }
        j->next = m->jobs;
        m->jobs = j;
        return 0;
}

bool dp_job_pending(const DpManager *m, const char *pod_uid) {
        for (const DpJob *j = m->jobs; j; j = j->next)
                if (strcmp(j->pod_uid, pod_uid) == 0)
                        return true;
        return false;
}

static void job_unlink(DpManager *m, DpJob *j) {
        for (DpJob **pp = &m->jobs; *pp; pp = &(*pp)->next)
                if (*pp == j) {
                        *pp = j->next;
                        return;
                }
}

void dp_job_cancel(DpManager *m, const char *pod_uid) {
        DpJob *j = m->jobs, *next;

        for (; j; j = next) {
                next = j->next;
                if (pod_uid && strcmp(j->pod_uid, pod_uid) != 0)
                        continue;
                dp_cancel_fire(&j->cancel);
                job_join(j);
                job_unlink(m, j);
                job_free(j);
        }
}

/* The preferred answer replaces the item's reservation when it is usable
 * and its devices are held by no other allocation (nor by another item). */
static void take_preferred(DpManager *m, const DpJob *j, DpJobItem *it) {
        DpAlloc *own = dp_manager_find_alloc(m, j->pod_uid, it->container, it->resource);
        char **ids = NULL;
        int *numa;
        const DpRes *res = dp_manager_res(m, it->resource);

        if (!own || !it->pref ||
            !dp_preferred_valid((const char *const *) it->pref, it->n_pref, (const char *const *) it->avail,
                                it->n_avail, NULL, 0, it->n_ids))
                return;
        for (size_t i = 0; i < it->n_pref; i++)
                for (size_t k = 0; k < m->n_allocs; k++) {
                        const DpAllocation *o = &m->allocs[k]->pub;

                        if (m->allocs[k] != own && strcmp(o->resource, it->resource) == 0 &&
                            dp_strv_contains((const char *const *) o->ids, o->n_ids, it->pref[i]))
                                return;
                }
        numa = calloc(it->n_pref + 1, sizeof(int));
        if (!numa || dp_strv_copy_sorted((const char *const *) it->pref, it->n_pref, &ids) < 0) {
                free(numa);
                return;
        }
        for (size_t i = 0; i < it->n_pref; i++) {
                numa[i] = -1;
                for (size_t d = 0; res && d < res->pub.n_devices; d++)
                        if (strcmp(res->pub.devices[d].id, ids[i]) == 0)
                                numa[i] = res->pub.devices[d].numa;
        }
        dp_strv_free(own->pub.ids, own->pub.n_ids);
        free(own->numa);
        own->pub.ids = ids;
        own->numa = numa;
        dp_strv_free(it->ids, it->n_ids);
        if (dp_strv_copy_sorted((const char *const *) ids, it->n_pref, &it->ids) < 0)
                it->ids = NULL, it->n_ids = 0; /* Allocate then fails on an empty request */
        else
                it->n_ids = it->n_pref;
}

static void job_end(DpManager *m, DpJob *j, int r, const char *message) {
        uint64_t took = cub_now_usec(CLOCK_MONOTONIC) - j->started_usec;
        _cleanup_free_ char *uid = TAKE_PTR(j->pod_uid);

        job_unlink(m, j);
        job_free(j);
        if (m->on_allocated)
                m->on_allocated(m->userdata, uid, r, message, took);
}

void dp_job_apply(DpManager *m, DpJob *j) {
        CubError err = {};
        int r = 0;

        job_join(j);
        if (!j->allocate_stage) {
                for (size_t i = 0; i < j->n; i++)
                        take_preferred(m, j, &j->items[i]);
                j->allocate_stage = true;
                r = job_run(j, &err);
                if (r >= 0)
                        return;
        }
        for (size_t i = 0; i < j->n && r >= 0; i++)
                if (j->items[i].r < 0)
                        r = cub_err_set(&err, -j->items[i].r, "Allocate failed due to %s, which is unexpected",
                                        j->items[i].err.msg);
        for (size_t i = 0; i < j->n && r >= 0; i++) {
                DpJobItem *it = &j->items[i];
                DpAlloc *a = dp_manager_find_alloc(m, j->pod_uid, it->container, it->resource);

                if (!a || !a->pub.pending)
                        continue;
                dp_container_response_done(&a->pub.resp);
                a->pub.resp = it->resp;
                it->resp = (DpContainerResponse){};
                a->pub.pending = false;
        }
        if (r >= 0)
                r = dp_manager_save_checkpoint(m, &err);
        if (r < 0)
                /* all or nothing: every allocation of the pass goes */
                for (size_t i = 0; i < j->n; i++) {
                        DpAlloc *a = dp_manager_find_alloc(m, j->pod_uid, j->items[i].container, j->items[i].resource);

                        if (a)
                                dp_manager_remove_alloc(m, a);
                }
        job_end(m, j, r, r < 0 ? err.msg : "");
}

DpJob *dp_job_find(const DpManager *m, uint64_t id) {
        for (DpJob *j = m->jobs; j; j = j->next)
                if (j->id == id)
                        return j;
        return NULL;
}
