/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubelet's podDevices and its allocation pass (devicesToAllocate,
 * allocateContainerResources), release, adoption after a restart.
 *
 * The pass decides on the owner's thread: each new allocation is the own
 * choice, reserved at once as a pending allocation (its devices held, no
 * response, not in the checkpoint), and becomes one item of a job whose
 * thread makes the plugin calls (job.c). The pass is all or nothing both
 * here (a choice that fails drops what the pass reserved) and when the
 * thread answers (one failed call drops every allocation of the pass).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/util/cleanup.h"
#include "../agent/util/time.h"
#include "dp-internal.h"

void dp_alloc_free(DpAlloc *a) {
        if (!a)
                return;
        free(a->pub.pod_uid);
        free(a->pub.container);
        free(a->pub.resource);
        dp_strv_free(a->pub.ids, a->pub.n_ids);
        dp_container_response_done(&a->pub.resp);
        free(a->numa);
        free(a);
}

int dp_manager_add_alloc(DpManager *m, DpAlloc *a) {
        DpAlloc **v = realloc(m->allocs, (m->n_allocs + 1) * sizeof(DpAlloc *));

        if (!v)
                return -ENOMEM;
        m->allocs = v;
        m->allocs[m->n_allocs++] = a;
        return 0;
}

static void remove_alloc_at(DpManager *m, size_t i) {
        dp_alloc_free(m->allocs[i]);
        memmove(m->allocs + i, m->allocs + i + 1, (m->n_allocs - i - 1) * sizeof(DpAlloc *));
        m->n_allocs--;
}

void dp_manager_remove_alloc(DpManager *m, DpAlloc *a) {
        for (size_t i = 0; i < m->n_allocs; i++)
                if (m->allocs[i] == a) {
                        remove_alloc_at(m, i);
                        return;
                }
}

char *dp_manager_target(const DpManager *m, const DpRes *res, CubError *err) {
        char *t;

        if (!res->pub.connected || !*res->pub.endpoint) {
                (void) cub_err_set(err, ENOTCONN, "device plugin for %s is not connected%s%s", res->pub.name,
                                   *res->pub.last_error ? ": " : "", res->pub.last_error);
                return NULL;
        }
        if (asprintf(&t, "unix://%s/%s", m->dir, res->pub.endpoint) < 0) {
                (void) cub_err_set(err, ENOMEM, "out of memory");
                return NULL;
        }
        return t;
}

DpAlloc *dp_manager_find_alloc(const DpManager *m, const char *pod, const char *container, const char *resource) {
        for (size_t i = 0; i < m->n_allocs; i++) {
                DpAlloc *a = m->allocs[i];

                if (strcmp(a->pub.pod_uid, pod) == 0 && strcmp(a->pub.container, container) == 0 &&
                    strcmp(a->pub.resource, resource) == 0)
                        return a;
        }
        return NULL;
}

/* A new allocation holding (a sorted copy of) ids and resp (taken). */
static int alloc_new(const DpManager *m, const char *pod, const char *container, const char *resource,
                     const char *const *ids, size_t n, DpContainerResponse *resp, DpAlloc **ret) {
        const DpRes *res = dp_manager_res(m, resource);
        DpAlloc *a = calloc(1, sizeof(*a));

        if (!a)
                return -ENOMEM;
        if (!(a->pub.pod_uid = strdup(pod)) || !(a->pub.container = strdup(container)) ||
            !(a->pub.resource = strdup(resource)) || dp_strv_copy_sorted(ids, n, &a->pub.ids) < 0 ||
            !(a->numa = calloc(n + 1, sizeof(int)))) {
                dp_alloc_free(a);
                return -ENOMEM;
        }
        a->pub.n_ids = n;
        for (size_t i = 0; i < n; i++) {
                a->numa[i] = -1;
                for (size_t j = 0; res && j < res->pub.n_devices; j++)
                        if (strcmp(res->pub.devices[j].id, a->pub.ids[i]) == 0)
                                a->numa[i] = res->pub.devices[j].numa;
        }
        if (resp)
                a->pub.resp = *resp, *resp = (DpContainerResponse){};
        *ret = a;
        return 0;
}

/* ---- the reuse pool: devices of the pod's non-restartable init containers ---- */

typedef struct PoolItem {
        const char *resource; /* borrowed from the container request */
        char *id;
} PoolItem;

typedef struct Pool {
        PoolItem *items;
        size_t n;
} Pool;

static void pool_done(Pool *p) {
        for (size_t i = 0; i < p->n; i++)
                free(p->items[i].id);
        free(p->items);
        *p = (Pool){};
}

static bool pool_has(const Pool *p, const char *resource, const char *id) {
        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->items[i].resource, resource) == 0 && strcmp(p->items[i].id, id) == 0)
                        return true;
        return false;
}

static int pool_add(Pool *p, const char *resource, const char *id) {
        PoolItem *v;

        if (pool_has(p, resource, id))
                return 0;
        v = realloc(p->items, (p->n + 1) * sizeof(PoolItem));
        if (!v)
                return -ENOMEM;
        p->items = v;
        p->items[p->n].resource = resource;
        p->items[p->n].id = strdup(id);
        if (!p->items[p->n].id)
                return -ENOMEM;
        p->n++;
        return 0;
}

static void pool_remove(Pool *p, const char *resource, const char *id) {
        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->items[i].resource, resource) == 0 && strcmp(p->items[i].id, id) == 0) {
                        free(p->items[i].id);
                        p->items[i] = p->items[--p->n];
                        return;
                }
}

/* The pool's IDs of resource, sorted (borrowed strings). */
static size_t pool_take(const Pool *p, const char *resource, const char **ret) {
        size_t n = 0;

        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->items[i].resource, resource) == 0)
                        ret[n++] = p->items[i].id;
        qsort(ret, n, sizeof(char *), dp_strv_cmp);
        return n;
}

/* ---- the choice for one container and resource ------------------------------------ */

/* Fills ids (room for want) with the devices for a new allocation; returns how many were chosen or -errno. */
static int choose_for(DpManager *m, DpRes *res, const char *const *reuse, size_t n_reuse, size_t want,
                      uint64_t numa_mask, const char **ids, char ***ret_owned, size_t *ret_n_owned, char ***ret_avail,
                      size_t *ret_n_avail, CubError *err) {
        _cleanup_free_ DpDevice *free_devs = NULL;
        _cleanup_free_ const char **avail = NULL;
        _cleanup_free_ size_t *idx = NULL;
        size_t n_free = 0, need = want - n_reuse, k = 0;

        free_devs = calloc(res->pub.n_devices + 1, sizeof(DpDevice));
        avail = calloc(res->pub.n_devices + n_reuse + 1, sizeof(char *));
        idx = calloc(want + 1, sizeof(size_t));
        if (!free_devs || !avail || !idx)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (res->pub.connected)
                for (size_t i = 0; i < res->pub.n_devices; i++) {
                        const DpDevice *d = &res->pub.devices[i];

                        if (d->healthy && !dp_manager_id_held(m, res->pub.name, d->id, NULL))
                                free_devs[n_free++] = *d;
                }
        if (n_free < need)
                return cub_err_set(err, ENOSPC,
                                   "Requested number of devices unavailable for %s. Requested: %zu, "
                                   "Available: %zu",
                                   res->pub.name, need, n_free);
        for (size_t i = 0; i < n_reuse; i++)
                ids[k++] = reuse[i];
        if (need == 0)
                return (int) k;

        /* GetPreferredAllocation runs on the pass's thread: it is asked
         * with the devices free now, and its answer replaces the own choice
         * when those devices are still free then (job.c). Not for a
         * container that reuses or hands on devices within the pod: the
         * pass's later choices build on this one. */
        if (res->pub.preferred_allocation_available && m->ops->preferred && ret_avail && n_reuse == 0) {
                const char **av = calloc(n_free + 1, sizeof(char *));

                if (!av)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (size_t i = 0; i < n_free; i++)
                        av[i] = free_devs[i].id;
                if (dp_strv_copy_sorted(av, n_free, ret_avail) < 0) {
                        free(av);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
                free(av);
                *ret_n_avail = n_free;
        }
        if (dp_choose_devices(free_devs, n_free, need, numa_mask, idx) < 0)
                return cub_err_set(err, EINVAL, "device choice for %s failed", res->pub.name);
        for (size_t i = 0; i < need; i++)
                ids[k++] = free_devs[idx[i]].id;
        /* free_devs goes away: the IDs must outlive it */
        {
                char **owned = NULL;

                if (dp_strv_copy_sorted(ids, k, &owned) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (size_t i = 0; i < k; i++)
                        ids[i] = owned[i];
                *ret_owned = owned;
                *ret_n_owned = k;
        }
        return (int) k;
}

/* Reserves the container's devices of resource as a pending allocation
 * and adds the pass's item for it. */
static int allocate_one(DpManager *m, const char *pod_uid, const DpContainerRequest *c, const char *resource,
                        size_t want, Pool *pool, DpJobItem **items, size_t *n_items, CubError *err) {
        DpRes *res = dp_manager_res(m, resource);
        _cleanup_free_ const char **reuse = NULL, **ids = NULL;
        char **owned = NULL, **avail = NULL, *target;
        size_t n_owned = 0, n_reuse, n_avail = 0;
        bool donor = c->init && !c->restartable;
        DpJobItem *v, *it;
        DpAlloc *a = NULL;
        int r;

        if (!res || (res->pub.registered_usec == 0 && res->pub.n_devices == 0))
                return cub_err_set(err, ENODEV, "Resource %s has no registered device plugin", resource);
        reuse = calloc(pool->n + 1, sizeof(char *));
        ids = calloc(want + 1, sizeof(char *));
        if (!reuse || !ids)
                return cub_err_set(err, ENOMEM, "out of memory");
        n_reuse = pool_take(pool, resource, reuse);
        if (n_reuse > want)
                n_reuse = want;

        r = choose_for(m, res, reuse, n_reuse, want, c->numa_mask, ids, &owned, &n_owned, donor ? NULL : &avail,
                       &n_avail, err);
        if (r < 0)
                return r;
        /* the plugin is not connected: Allocate could only fail */
        target = dp_manager_target(m, res, err);
        if (!target) {
                dp_strv_free(owned, n_owned);
                dp_strv_free(avail, n_avail);
                return cub_err_set(err, ENOTCONN, "Allocate failed due to %s, which is unexpected", err->msg);
        }
        v = realloc(*items, (*n_items + 1) * sizeof(DpJobItem));
        r = v ? alloc_new(m, pod_uid, c->name, resource, ids, want, NULL, &a) : -ENOMEM;
        dp_strv_free(owned, n_owned);
        if (v)
                *items = v;
        if (r < 0 || dp_manager_add_alloc(m, a) < 0) {
                dp_alloc_free(a);
                dp_strv_free(avail, n_avail);
                free(target);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        a->pub.pending = true;
        it = &(*items)[(*n_items)++];
        *it = (DpJobItem){ .target = target, .preferred = avail != NULL, .avail = avail, .n_avail = n_avail };
        it->container = strdup(c->name);
        it->resource = strdup(resource);
        if (!it->container || !it->resource ||
            dp_strv_copy_sorted((const char *const *) a->pub.ids, want, &it->ids) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        it->n_ids = want;
        return 0;
}

int dp_manager_allocate_pod(DpManager *m, const char *pod_uid, const DpContainerRequest *containers, size_t n,
                            CubError *err) {
        _cleanup_(pool_done) Pool pool = {};
        size_t first_new = m->n_allocs, n_items = 0;
        DpJobItem *items = NULL;
        int r = 0;

        if (dp_job_pending(m, pod_uid))
                return 1; /* its answer is on the way */
        (void) dp_manager_expire(m, cub_now_usec(CLOCK_MONOTONIC));
        for (size_t i = 0; i < n && r >= 0; i++) {
                const DpContainerRequest *c = &containers[i];

                for (size_t k = 0; k < c->n_resources && r >= 0; k++) {
                        const char *resource = c->resources[k];
                        DpAlloc *a;

                        if (c->counts[k] <= 0)
                                continue;
                        a = dp_manager_find_alloc(m, pod_uid, c->name, resource);
                        if (a && a->pub.n_ids != (size_t) c->counts[k]) {
                                r = cub_err_set(err, EINVAL,
                                                "pod %s container %s changed request for resource %s from %zu to "
                                                "%" PRId64,
                                                pod_uid, c->name, resource, a->pub.n_ids, c->counts[k]);
                                break;
                        }
                        if (!a) {
                                r = allocate_one(m, pod_uid, c, resource, (size_t) c->counts[k], &pool, &items,
                                                 &n_items, err);
                                if (r < 0)
                                        break;
                                a = m->allocs[m->n_allocs - 1];
                        }
                        /* init containers hand their devices on; the others take them */
                        for (size_t j = 0; j < a->pub.n_ids && r >= 0; j++)
                                if (c->init && !c->restartable)
                                        r = pool_add(&pool, resource, a->pub.ids[j]) < 0
                                                    ? cub_err_set(err, ENOMEM, "out of memory")
                                                    : 0;
                                else
                                        pool_remove(&pool, resource, a->pub.ids[j]);
                }
        }
        if (r >= 0 && n_items > 0) {
                r = dp_job_start(m, pod_uid, items, n_items, cub_now_usec(CLOCK_MONOTONIC), err);
                items = NULL; /* taken */
                n_items = 0;
                if (r >= 0)
                        return 1;
        }
        dp_job_items_free(items, n_items);
        if (r < 0)
                /* all or nothing: the reservations of this pass go */
                while (m->n_allocs > first_new)
                        remove_alloc_at(m, m->n_allocs - 1);
        return r < 0 ? r : 0;
}

bool dp_manager_pod_pending(const DpManager *m, const char *pod_uid) {
        return dp_job_pending(m, pod_uid);
}

/* ---- PreStartContainer, on the caller's thread --------------------------------- */

typedef struct DpPreStartItem {
        char *resource, *target;
        char **ids;
        size_t n_ids;
} DpPreStartItem;

struct DpPreStart {
        const DpPluginOps *ops;
        void *ops_ud;
        DpPreStartItem *items;
        size_t n;
};

DpPreStart *dp_pre_start_free(DpPreStart *ps) {
        if (!ps)
                return NULL;
        for (size_t i = 0; i < ps->n; i++) {
                free(ps->items[i].resource);
                free(ps->items[i].target);
                dp_strv_free(ps->items[i].ids, ps->items[i].n_ids);
        }
        free(ps->items);
        free(ps);
        return NULL;
}

static inline void pre_start_freep(DpPreStart **p) {
        if (*p)
                dp_pre_start_free(*p);
}

int dp_manager_pre_start_prepare(DpManager *m, const char *pod_uid, const char *container, DpPreStart **ret,
                                 CubError *err) {
        _cleanup_(pre_start_freep) DpPreStart *ps = NULL;

        for (size_t i = 0; i < m->n_allocs; i++) {
                const DpAllocation *a = &m->allocs[i]->pub;
                const DpRes *res;
                DpPreStartItem *v, *it;

                if (strcmp(a->pod_uid, pod_uid) != 0 || strcmp(a->container, container) != 0)
                        continue;
                res = dp_manager_res(m, a->resource);
                if (!res || !res->pub.pre_start_required)
                        continue;
                if (!ps && !(ps = calloc(1, sizeof(*ps))))
                        return cub_err_set(err, ENOMEM, "out of memory");
                ps->ops = m->ops;
                ps->ops_ud = m->ops_ud;
                v = realloc(ps->items, (ps->n + 1) * sizeof(*v));
                if (!v)
                        return cub_err_set(err, ENOMEM, "out of memory");
                ps->items = v;
                it = &v[ps->n++];
                *it = (DpPreStartItem){ .resource = strdup(a->resource) };
                it->target = dp_manager_target(m, res, err);
                if (!it->target)
                        return cub_err_wrap(err, "PreStartContainer for %s", a->resource);
                if (!it->resource || dp_strv_copy_sorted((const char *const *) a->ids, a->n_ids, &it->ids) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
                it->n_ids = a->n_ids;
        }
        *ret = TAKE_PTR(ps);
        return 0;
}

int dp_pre_start_run(DpPreStart *ps, CubError *err) {
        for (size_t i = 0; ps && i < ps->n; i++) {
                const DpPreStartItem *it = &ps->items[i];
                DpCall c = { .resource = it->resource,
                             .target = it->target,
                             .timeout_usec = DP_PRE_START_TIMEOUT_USEC };
                CubError e = {};
                int r = ps->ops->pre_start(ps->ops_ud, &c, (const char *const *) it->ids, it->n_ids, &e);

                if (r < 0)
                        return cub_err_set(err, -r, "PreStartContainer of %s at device plugin '%s' failed: %s",
                                           it->resource, it->target, e.msg);
        }
        return 0;
}

int dp_manager_container_allocations(DpManager *m, const char *pod_uid, const char *container,
                                     const DpAllocation *const **ret, size_t *ret_n, CubError *err) {
        const DpAllocation **v;
        size_t n = 0;
        bool changed = false;

        v = realloc(m->scratch, (m->n_allocs + 1) * sizeof(DpAllocation *));
        if (!v)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->scratch = v;
        for (size_t i = 0; i < m->n_allocs; i++) {
                DpAllocation *a = &m->allocs[i]->pub;
                const DpRes *res;

                if (strcmp(a->pod_uid, pod_uid) != 0 || strcmp(a->container, container) != 0)
                        continue;
                if (a->pending)
                        return cub_err_set(err, EINPROGRESS, "waiting for the device plugin's Allocate answer");
                res = dp_manager_res(m, a->resource);
                if (!a->resp.raw && res && res->pub.connected) {
                        DpContainerResponse resp = {};
                        CubError aerr = {};
                        _cleanup_free_ char *target = dp_manager_target(m, res, &aerr);
                        DpCall call = { .resource = a->resource,
                                        .target = target,
                                        .timeout_usec = m->rpc_timeout_usec };
                        int r = target ? m->ops->allocate(m->ops_ud, &call, (const char *const *) a->ids, a->n_ids,
                                                          &resp, &aerr)
                                       : -ENOTCONN;

                        if (r < 0)
                                return cub_err_set(err, -r, "Allocate failed due to %s, which is unexpected", aerr.msg);
                        dp_container_response_done(&a->resp);
                        a->resp = resp;
                        changed = true;
                }
                v[n++] = a;
        }
        if (changed)
                (void) dp_manager_save_checkpoint(m, NULL);
        *ret = n > 0 ? v : NULL;
        *ret_n = n;
        return 0;
}

size_t dp_manager_n_allocations(const DpManager *m) {
        return m->n_allocs;
}

const DpAllocation *dp_manager_allocation(const DpManager *m, size_t i) {
        return i < m->n_allocs ? &m->allocs[i]->pub : NULL;
}

static int release_where(DpManager *m, const char *pod_uid, const char *const *keep, size_t n_keep, CubError *err) {
        bool changed = false;

        for (size_t i = m->n_allocs; i-- > 0;) {
                const char *uid = m->allocs[i]->pub.pod_uid;

                if (pod_uid ? strcmp(uid, pod_uid) == 0 : !dp_strv_contains(keep, n_keep, uid)) {
                        /* its pass stops first: the thread never outlives the reservation */
                        if (m->allocs[i]->pub.pending)
                                dp_job_cancel(m, uid);
                        remove_alloc_at(m, i);
                        changed = true;
                }
        }
        return changed ? dp_manager_save_checkpoint(m, err) : 0;
}

int dp_manager_release_pod(DpManager *m, const char *pod_uid, CubError *err) {
        return release_where(m, pod_uid, NULL, 0, err);
}

int dp_manager_retain_pods(DpManager *m, const char *const *uids, size_t n, CubError *err) {
        return release_where(m, NULL, uids, n, err);
}

int dp_manager_adopt(DpManager *m, const char *pod_uid, const char *container, const char *resource,
                     const char *const *ids, size_t n, CubError *err) {
        DpAlloc *old = dp_manager_find_alloc(m, pod_uid, container, resource), *a = NULL;
        int r;

        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < m->n_allocs; j++) {
                        const DpAllocation *o = &m->allocs[j]->pub;

                        if (strcmp(o->resource, resource) == 0 && strcmp(o->pod_uid, pod_uid) != 0 &&
                            dp_strv_contains((const char *const *) o->ids, o->n_ids, ids[i]))
                                return cub_err_set(err, EBUSY, "device %s of %s is held by pod %s", ids[i], resource,
                                                   o->pod_uid);
                }
        if (old && old->pub.n_ids == n) {
                bool same = true;

                for (size_t i = 0; i < n && same; i++)
                        same = dp_strv_contains((const char *const *) old->pub.ids, n, ids[i]);
                if (same)
                        return 0;
        }
        r = alloc_new(m, pod_uid, container, resource, ids, n, NULL, &a);
        if (r < 0 || dp_manager_add_alloc(m, a) < 0) {
                dp_alloc_free(a);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        if (old)
                dp_manager_remove_alloc(m, old);
        return dp_manager_save_checkpoint(m, err);
}
