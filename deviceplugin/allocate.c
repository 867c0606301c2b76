/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubelet's podDevices and its allocation pass (devicesToAllocate,
 * allocateContainerResources), release, adoption after a restart.
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

static DpAlloc *find_alloc(const DpManager *m, const char *pod, const char *container, const char *resource) {
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
                      uint64_t numa_mask, const char **ids, char ***ret_owned, size_t *ret_n_owned, CubError *err) {
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

        if (res->pub.preferred_allocation_available && m->ops->preferred) {
                char **pref = NULL;
                size_t n_pref = 0, n_avail = 0;
                CubError perr = {};

                for (size_t i = 0; i < n_free; i++)
                        avail[n_avail++] = free_devs[i].id;
                for (size_t i = 0; i < n_reuse; i++)
                        avail[n_avail++] = reuse[i];
                if (m->ops->preferred(m->ops_ud, m, &res->pub, avail, n_avail, reuse, n_reuse, want, &pref, &n_pref,
                                      &perr) >= 0) {
                        if (dp_preferred_valid((const char *const *) pref, n_pref, avail, n_avail, reuse, n_reuse,
                                               want)) {
                                for (size_t i = 0; i < n_pref; i++)
                                        ids[i] = pref[i];
                                *ret_owned = pref;
                                *ret_n_owned = n_pref;
                                return (int) n_pref;
                        }
                        dp_strv_free(pref, n_pref);
                }
                /* an error or an unusable answer: kubelet's fallback, the own choice */
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

static int allocate_one(DpManager *m, const char *pod_uid, const DpContainerRequest *c, const char *resource,
                        size_t want, Pool *pool, size_t *n_made, CubError *err) {
        DpRes *res = dp_manager_res(m, resource);
        _cleanup_free_ const char **reuse = NULL, **ids = NULL;
        char **owned = NULL;
        size_t n_owned = 0, n_reuse;
        DpContainerResponse resp = {};
        CubError aerr = {};
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

        r = choose_for(m, res, reuse, n_reuse, want, c->numa_mask, ids, &owned, &n_owned, err);
        if (r < 0)
                return r;
        r = m->ops->allocate(m->ops_ud, m, &res->pub, ids, want, &resp, &aerr);
        if (r < 0) {
                dp_strv_free(owned, n_owned);
                return cub_err_set(err, -r, "Allocate failed due to %s, which is unexpected", aerr.msg);
        }
        r = alloc_new(m, pod_uid, c->name, resource, ids, want, &resp, &a);
        dp_strv_free(owned, n_owned);
        dp_container_response_done(&resp);
        if (r < 0 || dp_manager_add_alloc(m, a) < 0) {
                dp_alloc_free(a);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        (*n_made)++;
        return 0;
}

int dp_manager_allocate_pod(DpManager *m, const char *pod_uid, const DpContainerRequest *containers, size_t n,
                            CubError *err) {
        _cleanup_(pool_done) Pool pool = {};
        size_t first_new = m->n_allocs, n_made = 0;
        int r = 0;

        (void) dp_manager_expire(m, cub_now_usec(CLOCK_MONOTONIC));
        for (size_t i = 0; i < n && r >= 0; i++) {
                const DpContainerRequest *c = &containers[i];

                for (size_t k = 0; k < c->n_resources && r >= 0; k++) {
                        const char *resource = c->resources[k];
                        DpAlloc *a;

                        if (c->counts[k] <= 0)
                                continue;
                        a = find_alloc(m, pod_uid, c->name, resource);
                        if (a && a->pub.n_ids != (size_t) c->counts[k]) {
                                r = cub_err_set(err, EINVAL,
                                                "pod %s container %s changed request for resource %s from %zu to "
                                                "%" PRId64,
                                                pod_uid, c->name, resource, a->pub.n_ids, c->counts[k]);
                                break;
                        }
                        if (!a) {
                                r = allocate_one(m, pod_uid, c, resource, (size_t) c->counts[k], &pool, &n_made, err);
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
        if (r >= 0 && n_made > 0)
                r = dp_manager_save_checkpoint(m, err);
        if (r < 0)
                /* all or nothing: the allocations of this pass go */
                while (m->n_allocs > first_new)
                        remove_alloc_at(m, m->n_allocs - 1);
        return r < 0 ? r : 0;
}

int dp_manager_pre_start(DpManager *m, const char *pod_uid, const char *container, CubError *err) {
        for (size_t i = 0; i < m->n_allocs; i++) {
                const DpAllocation *a = &m->allocs[i]->pub;
                const DpRes *res;
                int r;

                if (strcmp(a->pod_uid, pod_uid) != 0 || strcmp(a->container, container) != 0)
                        continue;
                res = dp_manager_res(m, a->resource);
                if (!res || !res->pub.pre_start_required)
                        continue;
                r = m->ops->pre_start(m->ops_ud, m, &res->pub, (const char *const *) a->ids, a->n_ids, err);
                if (r < 0)
                        return cub_err_wrap_errno(err, r, "PreStartContainer for %s", a->resource);
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
                res = dp_manager_res(m, a->resource);
                if (!a->resp.raw && res && res->pub.connected) {
                        DpContainerResponse resp = {};
                        CubError aerr = {};
                        int r = m->ops->allocate(m->ops_ud, m, &res->pub, (const char *const *) a->ids, a->n_ids, &resp,
                                                 &aerr);

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
        DpAlloc *old = find_alloc(m, pod_uid, container, resource), *a = NULL;
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
                for (size_t i = 0; i < m->n_allocs; i++)
                        if (m->allocs[i] == old) {
                                remove_alloc_at(m, i);
                                break;
                        }
        return dp_manager_save_checkpoint(m, err);
}
