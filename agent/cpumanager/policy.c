/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The static policy's state (policy_static.go): the shared pool
 * (defaultCpuSet), exclusive assignments per pod UID and container, init
 * container reuse, release. Pure.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "cpumanager-internal.h"

static const char *const policy_names[_CPUMGR_POLICY_MAX] = {
        [CPUMGR_POLICY_NONE] = "none",
        [CPUMGR_POLICY_STATIC] = "static",
};

const char *cpumgr_policy_to_string(CpumgrPolicy p) {
        return p >= 0 && p < _CPUMGR_POLICY_MAX ? policy_names[p] : NULL;
}

CpumgrPolicy cpumgr_policy_from_string(const char *s) {
        if (!s)
                return _CPUMGR_POLICY_INVALID;
        for (int p = 0; p < _CPUMGR_POLICY_MAX; p++)
                if (strcmp(s, policy_names[p]) == 0)
                        return (CpumgrPolicy) p;
        return _CPUMGR_POLICY_INVALID;
}

/* ---- what a pod asks for ------------------------------------------------- */

unsigned cpumgr_guaranteed_cpus(PodQOSClass qos, const PodContainer *c) {
        CubQuantity q;

        if (qos != POD_QOS_GUARANTEED || !pod_resource_get(&c->requests, "cpu", &q))
                return 0;
        /* q.Value()*1000 != q.MilliValue(): not a whole number of CPUs */
        if (q.milli != 0 || q.units <= 0)
                return 0;
        return q.units > UINT_MAX ? UINT_MAX : (unsigned) q.units;
}

/* policy_static.go Allocate/GetTopologyHints (1.34): a pod with pod-level
 * resources gets no exclusive CPUs, whatever its QoS class; its containers
 * run on the shared pool. */
static bool pod_gets_exclusive_cpus(const Pod *pod, PodQOSClass qos) {
        return qos == POD_QOS_GUARANTEED && !pod_level_resources_set(pod);
}

/* The pod's containers in allocation order: init containers, then app
 * containers, each in the manifest's order. */
static const PodContainer *pod_nth(const Pod *pod, size_t i, bool *ret_reusable) {
        bool init;
        const PodContainer *c = pod_container_at(pod, i, &init);

        /* a sidecar runs beside the app containers: never reused */
        *ret_reusable = init && !pod_container_is_sidecar(c);
        return c;
}

/*
 * Allocation with counts only. A regular init container takes k CPUs from
 * the candidates (free ∪ reusable) and hands them back to the reusable set,
 * so the candidate count stays; any other container consumes k. takeByTopology
 * succeeds iff k <= candidates, so this is exact for a pod holding nothing.
 */
unsigned cpumgr_pod_exclusive_cpus(const Pod *pod, PodQOSClass qos) {
        uint64_t consumed = 0, peak = 0;

        if (!pod_gets_exclusive_cpus(pod, qos))
                return 0;
        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++) {
                bool reusable;
                const PodContainer *c = pod_nth(pod, i, &reusable);
                unsigned k = cpumgr_guaranteed_cpus(qos, c);

                if (k == 0)
                        continue;
                if (consumed + k > peak)
                        peak = consumed + k;
                if (!reusable)
                        consumed += k;
        }
        return peak > UINT_MAX ? UINT_MAX : (unsigned) peak;
}

/* ---- the state ----------------------------------------------------------- */

int cpumgr_new(CpumgrPolicy policy, const CpumgrTopology *t, const CpumgrSet *reserved, CpumgrState **ret,
               CubError *err) {
        _cleanup_(cpumgr_freep) CpumgrState *s = NULL;
        CpumgrSet extra;
        int r;

        if (policy < 0 || policy >= _CPUMGR_POLICY_MAX)
                return cub_err_set(err, EINVAL, "unknown cpu manager policy %d", (int) policy);
        s = calloc(1, sizeof(*s));
        if (!s)
                return cub_err_set(err, ENOMEM, "out of memory");
        s->policy = policy;
        r = cpumgr_index_new(t, &s->idx, err);
        if (r < 0)
                return r;
        if (reserved)
                s->reserved = *reserved;
        extra = s->reserved;
        cpumgr_set_subtract(&extra, &s->idx->all);
        if (!cpumgr_set_is_empty(&extra)) {
                char buf[CPUMGR_SET_STR_MAX];

                return cub_err_set(err, EINVAL, "reserved cpus '%s' not on this node",
                                   cpumgr_set_format(&extra, buf, sizeof(buf)));
        }
        if (policy == CPUMGR_POLICY_STATIC && cpumgr_set_is_empty(&s->reserved))
                return cub_err_set(err, EINVAL,
                                   "the static policy requires systemreserved.cpu + kubereserved.cpu to be "
                                   "greater than zero");
        s->shared = s->idx->all;
        *ret = TAKE_PTR(s);
        return 0;
}

CpumgrState *cpumgr_free(CpumgrState *s) {
        if (!s)
                return NULL;
        cpumgr_index_unref(s->idx);
        free(s->entries);
        free(s->strs);
        free(s);
        return NULL;
}

/* Room a clone keeps for the placements admission tries on it, so that
 * allocating one pod on a clone does not reallocate. */
#define CLONE_SLACK_ENTRIES 4
#define CLONE_SLACK_STRS 256

int cpumgr_clone(const CpumgrState *s, CpumgrState **ret, CubError *err) {
        CpumgrState *c;

        c = malloc(sizeof(*c));
        if (!c)
                return cub_err_set(err, ENOMEM, "out of memory");
        *c = *s;
        c->cap_entries = s->n_entries + CLONE_SLACK_ENTRIES;
        c->strs_cap = s->strs_len + CLONE_SLACK_STRS;
        c->entries = malloc(c->cap_entries * sizeof(*c->entries));
        c->strs = malloc(c->strs_cap);
        if (!c->entries || !c->strs) {
                free(c->entries);
                free(c->strs);
                free(c);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        if (s->n_entries > 0)
                memcpy(c->entries, s->entries, s->n_entries * sizeof(*c->entries));
        if (s->strs_len > 0)
                memcpy(c->strs, s->strs, s->strs_len);
        c->idx = cpumgr_index_ref(s->idx);
        *ret = c;
        return 0;
}

CpumgrPolicy cpumgr_policy(const CpumgrState *s) {
        return s->policy;
}

const CpumgrTopology *cpumgr_topology(const CpumgrState *s) {
        return &s->idx->topo;
}

const CpumgrSet *cpumgr_reserved_set(const CpumgrState *s) {
        return &s->reserved;
}

const CpumgrSet *cpumgr_shared_pool(const CpumgrState *s) {
        return &s->shared;
}

void cpumgr_free_exclusive(const CpumgrState *s, CpumgrSet *ret) {
        CpumgrSet f = {};

        if (s->policy == CPUMGR_POLICY_STATIC) {
                f = s->shared;
                cpumgr_set_subtract(&f, &s->reserved);
        }
        *ret = f;
}

/* ---- assignments --------------------------------------------------------- */

CpumgrEntry *cpumgr_entry_find(const CpumgrState *s, const char *pod_uid, const char *container) {
        for (size_t i = 0; i < s->n_entries; i++) {
                CpumgrEntry *e = &s->entries[i];

                if (strcmp(cpumgr_entry_uid(s, e), pod_uid) == 0 && strcmp(cpumgr_entry_name(s, e), container) == 0)
                        return e;
        }
        return NULL;
}

static int strs_add(CpumgrState *s, const char *str, uint32_t *ret_off) {
        size_t len = strlen(str) + 1;

        if (s->strs_len + len > UINT32_MAX)
                return -ENOMEM;
        if (s->strs_len + len > s->strs_cap) {
                size_t cap = s->strs_cap ? s->strs_cap * 2 : 256;
                char *p;

                while (cap < s->strs_len + len)
                        cap *= 2;
                p = realloc(s->strs, cap);
                if (!p)
                        return -ENOMEM;
                s->strs = p;
                s->strs_cap = cap;
        }
        memcpy(s->strs + s->strs_len, str, len);
        *ret_off = (uint32_t) s->strs_len;
        s->strs_len += len;
        return 0;
}

int cpumgr_entry_add(CpumgrState *s, const char *pod_uid, const char *container, const CpumgrSet *cpus, CubError *err) {
        size_t strs0 = s->strs_len;
        CpumgrEntry e = { .cpus = *cpus };
        bool have_uid = false;

        if (s->n_entries == s->cap_entries) {
                size_t cap = s->cap_entries ? s->cap_entries * 2 : 8;
                CpumgrEntry *p = realloc(s->entries, cap * sizeof(*p));

                if (!p)
                        return cub_err_set(err, ENOMEM, "out of memory");
                s->entries = p;
                s->cap_entries = cap;
        }
        /* the containers of a pod share one copy of its UID */
        for (size_t i = 0; i < s->n_entries && !have_uid; i++)
                if (strcmp(cpumgr_entry_uid(s, &s->entries[i]), pod_uid) == 0) {
                        e.uid_off = s->entries[i].uid_off;
                        have_uid = true;
                }
        if ((!have_uid && strs_add(s, pod_uid, &e.uid_off) < 0) || strs_add(s, container, &e.name_off) < 0) {
                s->strs_len = strs0;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        s->entries[s->n_entries++] = e;
        return 0;
}

void cpumgr_assigned(const CpumgrState *s, CpumgrSet *ret) {
        CpumgrSet a = {};

        for (size_t i = 0; i < s->n_entries; i++)
                cpumgr_set_union(&a, &s->entries[i].cpus);
        *ret = a;
}

void cpumgr_state_reset(CpumgrState *s) {
        s->n_entries = 0;
        s->strs_len = 0;
        s->shared = s->idx->all;
}

/* Rewrites the string arena without the strings of released entries. Best
 * effort: on ENOMEM the garbage stays until the next release. */
static void strs_compact(CpumgrState *s) {
        char *p;
        size_t len = 0, cap = s->strs_len;

        if (s->n_entries == 0) {
                s->strs_len = 0;
                return;
        }
        p = malloc(cap);
        if (!p)
                return;
        for (size_t i = 0; i < s->n_entries; i++) {
                CpumgrEntry *e = &s->entries[i];
                uint32_t old_uid = e->uid_off, new_uid = UINT32_MAX;
                size_t n;

                /* an earlier entry of the same pod already moved the UID */
                for (size_t j = 0; j < i; j++)
                        if (strcmp(p + s->entries[j].uid_off, s->strs + old_uid) == 0) {
                                new_uid = s->entries[j].uid_off;
                                break;
                        }
                if (new_uid == UINT32_MAX) {
                        n = strlen(s->strs + old_uid) + 1;
                        memcpy(p + len, s->strs + old_uid, n);
                        new_uid = (uint32_t) len;
                        len += n;
                }
                n = strlen(s->strs + e->name_off) + 1;
                memcpy(p + len, s->strs + e->name_off, n);
                e->name_off = (uint32_t) len;
                e->uid_off = new_uid;
                len += n;
        }
        free(s->strs);
        s->strs = p;
        s->strs_len = len;
        s->strs_cap = cap;
}

/* Drops the entries matching (uid, container or NULL for all); their CPUs
 * return to the pool minus those other entries still hold. Does not touch
 * the arena, so uid may point into it. */
static size_t release_matching(CpumgrState *s, const char *uid, const char *container) {
        CpumgrSet freed = {}, held;
        size_t w = 0, dropped = 0;

        for (size_t i = 0; i < s->n_entries; i++) {
                CpumgrEntry *e = &s->entries[i];

                if (strcmp(cpumgr_entry_uid(s, e), uid) == 0 &&
                    (!container || strcmp(cpumgr_entry_name(s, e), container) == 0)) {
                        cpumgr_set_union(&freed, &e->cpus);
                        dropped++;
                        continue;
                }
                s->entries[w++] = *e;
        }
        s->n_entries = w;
        if (dropped == 0)
                return 0;
        cpumgr_assigned(s, &held);
        cpumgr_set_subtract(&freed, &held);
        cpumgr_set_union(&s->shared, &freed);
        return dropped;
}

int cpumgr_assign_container(CpumgrState *s, const char *pod_uid, const char *container, const CpumgrSet *cpus,
                            CubError *err) {
        CpumgrSet allowed, miss = *cpus;
        char buf[CPUMGR_SET_STR_MAX];
        int r;

        if (s->policy != CPUMGR_POLICY_STATIC)
                return cub_err_set(err, EINVAL, "the CPU manager policy is not static");
        if (cpumgr_entry_find(s, pod_uid, container))
                return cub_err_set(err, EEXIST, "container '%s' of pod '%s' already holds cpus", container, pod_uid);
        cpumgr_free_exclusive(s, &allowed);
        for (size_t i = 0; i < s->n_entries; i++)
                if (strcmp(cpumgr_entry_uid(s, &s->entries[i]), pod_uid) == 0)
                        cpumgr_set_union(&allowed, &s->entries[i].cpus);
        cpumgr_set_subtract(&miss, &allowed);
        if (!cpumgr_set_is_empty(&miss))
                return cub_err_set(err, ENOSPC, "cpus '%s' are not free", cpumgr_set_format(&miss, buf, sizeof(buf)));
        r = cpumgr_entry_add(s, pod_uid, container, cpus, err);
        if (r < 0)
                return r;
        cpumgr_set_subtract(&s->shared, cpus);
        return 0;
}

void cpumgr_release_pod(CpumgrState *s, const char *pod_uid) {
        if (release_matching(s, pod_uid, NULL) > 0)
                strs_compact(s);
}

void cpumgr_release_container(CpumgrState *s, const char *pod_uid, const char *container) {
        if (release_matching(s, pod_uid, container) > 0)
                strs_compact(s);
}

size_t cpumgr_release_stale(CpumgrState *s, const char *const *live_uids, size_t n_live) {
        size_t pods = 0, i = 0;

        while (i < s->n_entries) {
                const char *uid = cpumgr_entry_uid(s, &s->entries[i]);
                bool live = false;

                for (size_t j = 0; j < n_live && !live; j++)
                        live = live_uids[j] && strcmp(live_uids[j], uid) == 0;
                if (live) {
                        i++;
                        continue;
                }
                (void) release_matching(s, uid, NULL);
                pods++;
        }
        if (pods > 0)
                strs_compact(s);
        return pods;
}

/* ---- admission and allocation -------------------------------------------- */

bool cpumgr_pod_fits(const CpumgrState *s, const Pod *pod, PodQOSClass qos, CubError *err) {
        CpumgrSet f;
        uint64_t cand;

        if (s->policy != CPUMGR_POLICY_STATIC || !pod_gets_exclusive_cpus(pod, qos))
                return true;
        cpumgr_free_exclusive(s, &f);
        cand = cpumgr_set_count(&f);
        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++) {
                bool reusable;
                const PodContainer *c = pod_nth(pod, i, &reusable);
                unsigned k = cpumgr_guaranteed_cpus(qos, c);

                if (k == 0)
                        continue;
                if (k > cand) {
                        (void) cub_err_set(err, ENOSPC,
                                           "not enough cpus available to satisfy request: requested=%u, "
                                           "available=%u",
                                           k, (unsigned) cand);
                        return false;
                }
                if (!reusable)
                        cand -= k;
        }
        return true;
}

int cpumgr_allocate_pod(CpumgrState *s, const Pod *pod, PodQOSClass qos, CubError *err) {
        size_t n0 = s->n_entries, strs0 = s->strs_len;
        CpumgrSet shared0 = s->shared, reuse = {};
        int r;

        if (s->policy != CPUMGR_POLICY_STATIC || !pod_gets_exclusive_cpus(pod, qos))
                return 0;
        if (!pod->uid)
                return cub_err_set(err, EINVAL, "pod '%s' has no UID", pod->name ? pod->name : "");
        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++) {
                bool reusable;
                const PodContainer *c = pod_nth(pod, i, &reusable);
                unsigned k = cpumgr_guaranteed_cpus(qos, c);
                const CpumgrEntry *e;
                CpumgrSet cset;

                if (k == 0)
                        continue;
                e = cpumgr_entry_find(s, pod->uid, c->name);
                if (e)
                        cset = e->cpus; /* idempotent: it keeps what it holds */
                else {
                        CpumgrSet cand;

                        cpumgr_free_exclusive(s, &cand);
                        cpumgr_set_union(&cand, &reuse);
                        r = cpumgr_index_take(s->idx, &cand, k, &cset, err);
                        if (r >= 0)
                                r = cpumgr_entry_add(s, pod->uid, c->name, &cset, err);
                        if (r < 0) {
                                s->n_entries = n0;
                                s->strs_len = strs0;
                                s->shared = shared0;
                                return r;
                        }
                        cpumgr_set_subtract(&s->shared, &cset);
                }
                /* updateCPUsToReuse */
                if (reusable)
                        cpumgr_set_union(&reuse, &cset);
                else
                        cpumgr_set_subtract(&reuse, &cset);
        }
        return 0;
}

/* In-place resize (kubelet's alpha InPlacePodVerticalScalingExclusiveCPUs,
 * on in cubelet): each resizable container keeps the CPUs it holds and
 * takes the more it now needs from the free ones, or keeps as many of its
 * own as it still needs (topology-packed) and returns the rest. */
int cpumgr_resize_pod(CpumgrState *s, const Pod *pod, PodQOSClass qos, CubError *err) {
        bool exclusive = pod_gets_exclusive_cpus(pod, qos);
        unsigned need = 0, have_free;
        CpumgrSet avail;
        int r;

        if (s->policy != CPUMGR_POLICY_STATIC || !pod->uid)
                return 0;
        cpumgr_free_exclusive(s, &avail);
        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++) {
                bool init;
                const PodContainer *c = pod_container_at(pod, i, &init);
                const CpumgrEntry *e = cpumgr_entry_find(s, pod->uid, c->name);
                unsigned k = exclusive ? cpumgr_guaranteed_cpus(qos, c) : 0, have = e ? cpumgr_set_count(&e->cpus) : 0;

                if ((!init || pod_container_is_sidecar(c)) && k > have)
                        need += k - have;
        }
        have_free = cpumgr_set_count(&avail);
        if (need > have_free)
                return cub_err_set(err, ENOSPC,
                                   "not enough cpus available to satisfy request: requested=%u, available=%u", need,
                                   have_free);
        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++) {
                bool init;
                const PodContainer *c = pod_container_at(pod, i, &init);
                const CpumgrEntry *e = cpumgr_entry_find(s, pod->uid, c->name);
                unsigned k = exclusive ? cpumgr_guaranteed_cpus(qos, c) : 0, have = e ? cpumgr_set_count(&e->cpus) : 0;
                CpumgrSet held = e ? e->cpus : (CpumgrSet){}, next = {}, add;

                if ((init && !pod_container_is_sidecar(c)) || k == have)
                        continue;
                if (k > have) {
                        r = cpumgr_index_take(s->idx, &avail, k - have, &add, err);
                        if (r < 0)
                                return r;
                        cpumgr_set_subtract(&avail, &add);
                        next = held;
                        cpumgr_set_union(&next, &add);
                } else if (k > 0) {
                        r = cpumgr_index_take(s->idx, &held, k, &next, err);
                        if (r < 0)
                                return r;
                }
                (void) release_matching(s, pod->uid, c->name);
                if (k > 0) {
                        r = cpumgr_entry_add(s, pod->uid, c->name, &next, err);
                        if (r < 0)
                                return r;
                        cpumgr_set_subtract(&s->shared, &next);
                }
        }
        strs_compact(s);
        return 0;
}

/* ---- what containers run on ---------------------------------------------- */

const CpumgrSet *cpumgr_container_cpus(const CpumgrState *s, const char *pod_uid, const char *container) {
        const CpumgrEntry *e;

        if (s->policy != CPUMGR_POLICY_STATIC || !pod_uid || !container)
                return NULL;
        e = cpumgr_entry_find(s, pod_uid, container);
        return e ? &e->cpus : NULL;
}

const char *cpumgr_container_cpuset(const CpumgrState *s, const char *pod_uid, const char *container, char *buf,
                                    size_t size) {
        const CpumgrSet *set;

        if (size == 0)
                return buf;
        if (s->policy != CPUMGR_POLICY_STATIC) {
                buf[0] = '\0';
                return buf;
        }
        set = cpumgr_container_cpus(s, pod_uid, container);
        return cpumgr_set_format(set ? set : &s->shared, buf, size);
}
