/* SPDX-License-Identifier: Apache-2.0 */
/* CPU placement: candidate exclusive cpusets for a pod — the static
 * policy's own choice (cpumgr_allocate_pod: takeByTopologyNUMAPacked) and
 * the same take restricted to each NUMA node and to each socket — scored
 * by whole cores, sockets spanned and NUMA nodes spanned. The best wins;
 * ties keep the policy's own choice. Pure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "admit-internal.h"

#define MAX_CANDIDATES 64

static unsigned count_distinct(const CpumgrTopology *t, const CpumgrSet *cpus, bool numa) {
        unsigned seen[64], n = 0;

        for (size_t i = 0; i < t->n; i++) {
                unsigned id = numa ? t->cpus[i].numa : t->cpus[i].socket;
                bool dup = false;

                if (!cpumgr_set_has(cpus, t->cpus[i].cpu))
                        continue;
                for (unsigned j = 0; j < n; j++)
                        if (seen[j] == id)
                                dup = true;
                if (!dup && n < ELEMENTSOF(seen))
                        seen[n++] = id;
        }
        return n;
}

/* CPUs of the set whose every hyperthread sibling is in the set. */
static unsigned whole_core_cpus(const CpumgrTopology *t, const CpumgrSet *cpus) {
        unsigned n = 0;

        for (size_t i = 0; i < t->n; i++) {
                bool whole = true;

                if (!cpumgr_set_has(cpus, t->cpus[i].cpu))
                        continue;
                for (size_t j = 0; j < t->n && whole; j++)
                        if (t->cpus[j].core == t->cpus[i].core && !cpumgr_set_has(cpus, t->cpus[j].cpu))
                                whole = false;
                n += whole;
        }
        return n;
}

int64_t admit_cpuset_score(const CpumgrTopology *t, const CpumgrSet *cpus, const AdmitOptions *o) {
        unsigned n = cpumgr_set_count(cpus), sockets, numas;
        int64_t wc = o->weight_whole_cores, ws = o->weight_sockets, wn = o->weight_numa, total;

        if (n == 0 || wc + ws + wn == 0)
                return 0;
        sockets = count_distinct(t, cpus, false);
        numas = count_distinct(t, cpus, true);
        total = wc * 100 * (int64_t) whole_core_cpus(t, cpus) / n + ws * 100 / (sockets ? sockets : 1) +
                wn * 100 / (numas ? numas : 1);
        return total / (wc + ws + wn);
}

void admit_placement_done(AdmitPlacement *p) {
        free(p->cpuset);
        for (size_t i = 0; i < p->n_containers; i++) {
                free(p->containers[i].name);
                free(p->containers[i].cpuset);
        }
        free(p->containers);
        for (size_t i = 0; i < p->n_devices; i++) {
                free(p->devices[i].resource);
                for (size_t j = 0; j < p->devices[i].n; j++)
                        free(p->devices[i].ids[j]);
                free(p->devices[i].ids);
        }
        free(p->devices);
        *p = (AdmitPlacement){};
}

static char *format_set(const CpumgrSet *s) {
        char buf[CPUMGR_SET_STR_MAX];

        return strdup(cpumgr_set_format(s, buf, sizeof(buf)));
}

static int add_container(AdmitPlacement *pl, const char *name, const CpumgrSet *cpus) {
        AdmitContainerCpus *c = realloc(pl->containers, (pl->n_containers + 1) * sizeof(AdmitContainerCpus));

        if (!c)
                return -ENOMEM;
        pl->containers = c;
        c[pl->n_containers] = (AdmitContainerCpus){ .name = strdup(name), .cpus = *cpus, .cpuset = format_set(cpus) };
        pl->n_containers++;
        if (!c[pl->n_containers - 1].name || !c[pl->n_containers - 1].cpuset)
                return -ENOMEM;
        return 0;
}

/* Splits a chosen set among the pod's containers the way the static policy
 * hands CPUs out: init containers in order (a regular one's CPUs are reused
 * by the containers after it; a sidecar's are kept), then app containers. */
static int split(const CpumgrTopology *t, const Pod *pod, PodQOSClass qos, const CpumgrSet *chosen, AdmitPlacement *pl,
                 CubError *err) {
        CpumgrSet avail = *chosen, got;
        int r;

        for (size_t pass = 0; pass < 2; pass++) {
                const PodContainer *cs = pass == 0 ? pod->init_containers : pod->containers;
                size_t n = pass == 0 ? pod->n_init_containers : pod->n_containers;

                for (size_t i = 0; i < n; i++) {
                        unsigned k = cpumgr_guaranteed_cpus(qos, &cs[i]);

                        if (k == 0)
                                continue;
                        r = cpumgr_take_by_topology(t, &avail, k, &got, err);
                        if (r < 0)
                                return r;
                        if (pass == 1 || pod_container_is_sidecar(&cs[i]))
                                cpumgr_set_subtract(&avail, &got);
                        if (add_container(pl, cs[i].name, &got) < 0)
                                return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        return 0;
}

static int from_state(const CpumgrState *st, const Pod *pod, AdmitPlacement *pl, CubError *err) {
        for (size_t pass = 0; pass < 2; pass++) {
                const PodContainer *cs = pass == 0 ? pod->init_containers : pod->containers;
                size_t n = pass == 0 ? pod->n_init_containers : pod->n_containers;

                for (size_t i = 0; i < n; i++) {
                        const CpumgrSet *set = cpumgr_container_cpus(st, pod->uid, cs[i].name);

                        if (set && !cpumgr_set_is_empty(set) && add_container(pl, cs[i].name, set) < 0)
                                return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        return 0;
}

static void add_candidate(AdmitCpuCandidate *c, size_t *n, const CpumgrSet *cpus) {
        for (size_t i = 0; i < *n; i++)
                if (cpumgr_set_equal(&c[i].cpus, cpus))
                        return;
        if (*n < MAX_CANDIDATES)
                c[(*n)++].cpus = *cpus;
}

int admit_place_cpus(CpumgrState *st, const Pod *pod, PodQOSClass qos, const AdmitOptions *o, AdmitPlacement *pl,
                     int64_t *ret_score, CubError *err) {
        const CpumgrTopology *t = cpumgr_topology(st);
        AdmitCpuCandidate cand[MAX_CANDIDATES];
        unsigned need = cpumgr_pod_exclusive_cpus(pod, qos);
        unsigned ids[64];
        size_t n_cand = 0, n_ids, best = 0;
        CpumgrSet free_set, own = {}, sub, got;
        CubError ignored = {};
        int r;

        *ret_score = 0;
        if (need == 0 || cpumgr_policy(st) != CPUMGR_POLICY_STATIC)
                return 0;
        cpumgr_free_exclusive(st, &free_set);

        /* 0: the policy's own choice */
        r = cpumgr_allocate_pod(st, pod, qos, err);
        if (r < 0)
                return r;
        r = from_state(st, pod, pl, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < pl->n_containers; i++)
                cpumgr_set_union(&own, &pl->containers[i].cpus);
        add_candidate(cand, &n_cand, &own);

        /* 1..: aligned to one NUMA node, then to one socket — unless the policy's
         * choice already sits in one of each (an aligned take of the same size
         * cannot do better there, and packing already favours whole cores) */
        for (int level = 0; level < 2 && (count_distinct(t, &own, true) > 1 || count_distinct(t, &own, false) > 1);
             level++) {
                n_ids = 0;
                for (size_t i = 0; i < t->n; i++) {
                        unsigned id = level == 0 ? t->cpus[i].numa : t->cpus[i].socket;
                        bool dup = false;

                        for (size_t j = 0; j < n_ids; j++)
                                dup = dup || ids[j] == id;
                        if (!dup && n_ids < ELEMENTSOF(ids))
                                ids[n_ids++] = id;
                }
                if (n_ids < 2)
                        continue;
                for (size_t k = 0; k < n_ids; k++) {
                        sub = (CpumgrSet){};
                        for (size_t i = 0; i < t->n; i++)
                                if ((level == 0 ? t->cpus[i].numa : t->cpus[i].socket) == ids[k] &&
                                    cpumgr_set_has(&free_set, t->cpus[i].cpu))
                                        cpumgr_set_add(&sub, t->cpus[i].cpu);
                        if (cpumgr_set_count(&sub) < need)
                                continue;
                        if (cpumgr_take_by_topology(t, &sub, need, &got, &ignored) >= 0)
                                add_candidate(cand, &n_cand, &got);
                }
        }
        for (size_t i = 0; i < n_cand; i++) {
                cand[i].score = admit_cpuset_score(t, &cand[i].cpus, o);
                if (cand[i].score > cand[best].score)
                        best = i;
        }
        if (best != 0) {
                AdmitPlacement alt = {};

                r = split(t, pod, qos, &cand[best].cpus, &alt, &ignored);
                if (r >= 0) {
                        admit_placement_done(pl);
                        *pl = alt;
                } else {
                        admit_placement_done(&alt);
                        best = 0;
                }
        }
        pl->policy_choice = best == 0;
        pl->cpus = cand[best].cpus;
        pl->cpuset = format_set(&pl->cpus);
        if (!pl->cpuset)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret_score = cand[best].score;
        return 0;
}
