/* SPDX-License-Identifier: Apache-2.0 */
/* admit_decide(): the filter table, CPU placement on a clone of the CPU
 * state, the node-level scores, and preemption. Pure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "admit-internal.h"

void admit_options_init(AdmitOptions *o) {
        *o = (AdmitOptions){
                .weight_whole_cores = 1,
                .weight_sockets = 1,
                .weight_numa = 1,
                .weight_cpu = 1,
                .weight_memory = 1,
                .preemption = true,
        };
}

const char *admit_preempted_message(const Pod *preemptor, char buf[static ADMIT_PREEMPTED_MESSAGE_MAX]) {
        (void) snprintf(buf, ADMIT_PREEMPTED_MESSAGE_MAX, "Preempted in order to admit pod %s/%s",
                        preemptor->namespace_, preemptor->name);
        return buf;
}

void admit_decision_done(AdmitDecision *d) {
        if (!d)
                return;
        admit_placement_done(&d->placement);
        for (size_t i = 0; i < d->n_victims; i++) {
                free(d->victims[i].uid);
                free(d->victims[i].key);
        }
        free(d->victims);
        d->victims = NULL;
        d->n_victims = 0;
}

/* ---- node-level scores (scheduler's resource_allocation formulas) ------------ */

static int64_t least_score(int64_t req, int64_t cap) {
        if (cap == 0 || req > cap)
                return 0;
        return (cap - req) * 100 / cap;
}

static int64_t most_score(int64_t req, int64_t cap) {
        if (cap == 0)
                return 0;
        if (req > cap)
                req = cap;
        return req * 100 / cap;
}

static void node_scores(const AdmitSnapshot *s, const int64_t requested[2], const AdmitOptions *o, AdmitDecision *d) {
        const int64_t w[2] = { o->weight_cpu, o->weight_memory };
        int64_t least = 0, most = 0, wsum = 0;
        double frac[2];
        size_t nf = 0;

        for (size_t r = 0; r < 2; r++) {
                int64_t cap = s->alloc[r];

                if (cap == 0)
                        continue;
                least += least_score(requested[r], cap) * w[r];
                most += most_score(requested[r], cap) * w[r];
                wsum += w[r];
                frac[nf] = (double) requested[r] / (double) cap;
                if (frac[nf] > 1)
                        frac[nf] = 1;
                nf++;
        }
        d->scores[d->n_scores++] = (AdmitScore){ "LeastAllocated", wsum ? least / wsum : 0 };
        d->scores[d->n_scores++] = (AdmitScore){ "MostAllocated", wsum ? most / wsum : 0 };
        {
                double std = 0;

                if (nf == 2)
                        std = (frac[0] > frac[1] ? frac[0] - frac[1] : frac[1] - frac[0]) / 2;
                d->scores[d->n_scores++] = (AdmitScore){ "BalancedAllocation", nf ? (int64_t) ((1 - std) * 100) : 0 };
        }
}

/* ---- helpers -------------------------------------------------------------------- */

static int resolve_requests(const AdmitSnapshot *s, const PodResourceList *req, AdmitPodReq **ret, size_t *ret_n) {
        AdmitPodReq *q = calloc(req->n ? req->n : 1, sizeof(AdmitPodReq));
        size_t n = 0;

        if (!q)
                return -ENOMEM;
        for (size_t i = 0; i < req->n; i++) {
                const PodResource *r = &req->items[i];
                ssize_t idx;

                if (!admit_resource_is_checked(r->name))
                        continue;
                idx = admit_snapshot_find_res(s, r->name);
                /* removeMissingExtendedResources: the node does not advertise it at all */
                if (admit_resource_is_extended(r->name) && (idx < 0 || !s->advertised[idx]))
                        continue;
                q[n++] = (AdmitPodReq){ .name = r->name,
                                        .res = idx < 0 ? SIZE_MAX : (size_t) idx,
                                        .value = admit_quantity_value(r->name, r->q) };
        }
        *ret = q;
        *ret_n = n;
        return 0;
}

static int place_devices(const AdmitSnapshot *s, const AdmitCtx *c, AdmitPlacement *pl) {
        for (size_t i = 0; i < c->n_reqs; i++) {
                const AdmitDevices *dev = NULL;
                AdmitDeviceIds *nd;

                for (size_t j = 0; j < s->n_devices; j++)
                        if (strcmp(s->devices[j].resource, c->reqs[i].name) == 0)
                                dev = &s->devices[j];
                if (!dev || c->reqs[i].value <= 0 || (size_t) c->reqs[i].value > dev->n)
                        continue;
                nd = realloc(pl->devices, (pl->n_devices + 1) * sizeof(AdmitDeviceIds));
                if (!nd)
                        return -ENOMEM;
                pl->devices = nd;
                nd = &pl->devices[pl->n_devices++];
                *nd = (AdmitDeviceIds){ .resource = strdup(dev->resource),
                                        .ids = calloc((size_t) c->reqs[i].value, sizeof(char *)) };
                if (!nd->resource || !nd->ids)
                        return -ENOMEM;
                for (size_t j = 0; j < (size_t) c->reqs[i].value; j++) {
                        nd->ids[j] = strdup(dev->ids[j]);
                        if (!nd->ids[j])
                                return -ENOMEM;
                        nd->n++;
                }
        }
        return 0;
}

static bool is_resource_filter(size_t f) {
        return f == ADMIT_FILTER_NODE_RESOURCES_FIT || f == ADMIT_FILTER_CPU_MANAGER;
}

/* The deficits of the failing resource dimensions. */
static size_t collect_needs(const AdmitCtx *c, AdmitNeed *needs, size_t max) {
        const AdmitSnapshot *s = c->s;
        size_t n = 0;

        if ((int64_t) s->n_pods + 1 > s->max_pods && n < max)
                needs[n++] = (AdmitNeed){ ADMIT_NEED_PODS, (int64_t) s->n_pods + 1 - s->max_pods };
        for (size_t i = 0; i < c->n_reqs && n < max; i++) {
                const AdmitPodReq *q = &c->reqs[i];
                int64_t used = q->res == SIZE_MAX ? 0 : s->used[q->res];
                int64_t alloc = q->res == SIZE_MAX ? 0 : s->alloc[q->res];

                if (q->value > 0 && q->value > alloc - used)
                        needs[n++] = (AdmitNeed){ q->res, q->value - (alloc - used) };
        }
        if (c->excl_cpus > 0 && s->cpumgr && n < max) {
                CpumgrSet free_set;
                unsigned have;

                cpumgr_free_exclusive(s->cpumgr, &free_set);
                have = cpumgr_set_count(&free_set);
                if (have < c->excl_cpus)
                        needs[n++] = (AdmitNeed){ ADMIT_NEED_CPUS, (int64_t) (c->excl_cpus - have) };
        }
        return n;
}

int admit_ctx_init(const AdmitSnapshot *s, const Pod *pod, const AdmitOptions *o, AdmitCtx *c, PodEffective *eff,
                   CubError *err) {
        int r;

        *c = (AdmitCtx){ .s = s, .pod = pod, .o = o, .qos = pod_qos_class(pod) };
        r = pod_effective(pod, eff, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "pod %s/%s", pod->namespace_, pod->name);
        if (resolve_requests(s, &eff->requests, &c->reqs, &c->n_reqs) < 0 ||
            admit_pod_ports(pod, &c->ports, &c->n_ports) < 0) {
                admit_ctx_done(c);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        if (s->cpumgr && cpumgr_policy(s->cpumgr) == CPUMGR_POLICY_STATIC)
                c->excl_cpus = cpumgr_pod_exclusive_cpus(pod, c->qos);
        return 0;
}

void admit_ctx_done(AdmitCtx *c) {
        free(c->reqs);
        free(c->ports);
        c->reqs = NULL;
        c->ports = NULL;
}

int admit_decide(const AdmitSnapshot *s, const Pod *pod, const AdmitOptions *o, AdmitDecision *ret, CubError *err) {
        _cleanup_(pod_effective_done) PodEffective eff = {};
        _cleanup_free_ AdmitPodReq *reqs = NULL;
        _cleanup_free_ AdmitPort *ports = NULL;
        _cleanup_free_ size_t *victims = NULL;
        _cleanup_(cpumgr_freep) CpumgrState *clone = NULL;
        AdmitOptions defaults;
        AdmitCtx c;
        size_t n_reqs = 0, first = SIZE_MAX;
        bool only_resources = true;
        int64_t requested[2], cpu_score = 0;
        int r, n_victims = 0;

        ret->admit = false;
        ret->reason[0] = ret->message[0] = 0;
        ret->n_filters = ret->n_scores = 0;
        ret->placement = (AdmitPlacement){};
        ret->victims = NULL;
        ret->n_victims = 0;
        ret->first_failed = _ADMIT_FILTER_INVALID;
        if (!o) {
                admit_options_init(&defaults);
                o = &defaults;
        }

        r = admit_ctx_init(s, pod, o, &c, &eff, err);
        if (r < 0)
                return r;
        reqs = c.reqs;
        ports = c.ports;
        n_reqs = c.n_reqs;

        for (size_t f = 0; f < _ADMIT_FILTER_MAX; f++) {
                AdmitFilterResult *fr = &ret->filters[ret->n_filters++];

                fr->plugin = admit_filter_to_string((AdmitFilterId) f);
                fr->ok = true;
                fr->reason[0] = fr->message[0] = 0;
                admit_filter_table[f](&c, fr);
                if (fr->ok)
                        continue;
                if (!is_resource_filter(f))
                        only_resources = false;
                if (first == SIZE_MAX)
                        first = f;
        }
        ret->first_failed = first == SIZE_MAX ? _ADMIT_FILTER_INVALID : (AdmitFilterId) first;
        if (first != SIZE_MAX) {
                memcpy(ret->reason, ret->filters[first].reason, sizeof(ret->reason));
                memcpy(ret->message, ret->filters[first].message, sizeof(ret->message));
        }

        /* preemption: only resource failures, a policy other than Never */
        if (first != SIZE_MAX && only_resources && o->preemption &&
            !(pod->preemption_policy && strcmp(pod->preemption_policy, "Never") == 0)) {
                AdmitNeed needs[16];
                size_t n_needs = collect_needs(&c, needs, ELEMENTSOF(needs));

                n_victims = admit_preempt_select(s, pod, needs, n_needs, &victims, err);
                if (n_victims < 0 && n_victims != -ENOSPC)
                        return n_victims;
                if (n_victims > 0) {
                        ret->victims = calloc((size_t) n_victims, sizeof(AdmitVictim));
                        if (!ret->victims)
                                return cub_err_set(err, ENOMEM, "out of memory");
                        for (int i = 0; i < n_victims; i++) {
                                const AdmitEntry *e = s->pods[victims[i]];

                                ret->victims[i] = (AdmitVictim){ .uid = strdup(e->uid),
                                                                 .key = strdup(e->key),
                                                                 .priority = e->priority };
                                ret->n_victims++;
                                if (!ret->victims[i].uid || !ret->victims[i].key) {
                                        admit_decision_done(ret);
                                        return cub_err_set(err, ENOMEM, "out of memory");
                                }
                        }
                        ret->admit = true;
                }
        } else if (first == SIZE_MAX)
                ret->admit = true;

        /* CPU placement on a clone, without the victims' CPUs */
        if (ret->admit && c.excl_cpus > 0) {
                r = cpumgr_clone(s->cpumgr, &clone, err);
                if (r < 0) {
                        admit_decision_done(ret);
                        return r;
                }
                for (size_t i = 0; i < ret->n_victims; i++)
                        cpumgr_release_pod(clone, ret->victims[i].uid);
                r = admit_place_cpus(clone, pod, c.qos, o, &ret->placement, &cpu_score, err);
                if (r == -ENOSPC) {
                        /* the victims' CPUs were not enough after all: a rejection */
                        admit_placement_done(&ret->placement);
                        admit_decision_done(ret);
                        ret->admit = false;
                        cpu_score = -1;
                } else if (r < 0) {
                        admit_decision_done(ret);
                        return r;
                }
                if (cpu_score >= 0)
                        ret->scores[ret->n_scores++] = (AdmitScore){ "CPUPlacement", cpu_score };
        }
        if (!ret->placement.cpuset) {
                ret->placement.cpuset = strdup("");
                if (!ret->placement.cpuset)
                        return cub_err_set(err, ENOMEM, "out of memory");
        }
        if (ret->admit && place_devices(s, &c, &ret->placement) < 0) {
                admit_decision_done(ret);
                return cub_err_set(err, ENOMEM, "out of memory");
        }

        /* node-level scores with the pod added (and the victims gone) */
        requested[0] = s->used[ADMIT_RES_CPU];
        requested[1] = s->used[ADMIT_RES_MEMORY];
        for (size_t i = 0; i < n_reqs; i++)
                if (reqs[i].res < 2)
                        requested[reqs[i].res] += reqs[i].value;
        for (int i = 0; i < n_victims && ret->n_victims > 0; i++) {
                const AdmitEntry *e = s->pods[victims[i]];

                for (size_t j = 0; j < e->n_reqs; j++)
                        if (e->reqs[j].res < 2)
                                requested[e->reqs[j].res] -= e->reqs[j].value;
        }
        node_scores(s, requested, o, ret);
        return 0;
}
