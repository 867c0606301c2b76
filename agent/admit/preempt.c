/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Victim selection for on-node preemption (cubelet extends kubelet's
 * critical-pod preemption to any pod of higher priority whose
 * preemptionPolicy is not Never).
 *
 * Needs are the failing dimensions with their deficit: the pod count, a
 * resource (requested − (allocatable − used)), or exclusive CPUs. A victim
 * must have a strictly lower priority than the preemptor, a critical victim
 * needs a critical preemptor, and it must free something of a need
 * (candidates that free nothing are pruned).
 *
 * Exact (<= ADMIT_PREEMPT_EXACT_MAX candidates): the set that covers every
 * deficit with, in order, the fewest victims, the lowest maximum victim
 * priority, the lowest sum of priorities; remaining ties go to the pods
 * admitted first. Depth-first search by increasing set size over the
 * candidates sorted by priority, pruned by the coverage the remaining
 * candidates can still give and by the best cost found.
 *
 * Greedy (more candidates): take candidates by ascending priority (ties:
 * the one freeing the largest share of the deficits first) until every
 * deficit is covered, then drop the chosen ones, highest priority first,
 * whose removal keeps every deficit covered. Not guaranteed minimal.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "admit-internal.h"

#define MAX_NEEDS 16

typedef struct Cand {
        size_t idx; /* into s->pods */
        int32_t prio;
        int64_t give[MAX_NEEDS];
        double share; /* sum over needs of min(1, give/deficit) */
} Cand;

typedef struct Search {
        const Cand *c;
        size_t n;
        size_t n_needs;
        const int64_t *deficit;
        int64_t (*suffix)[MAX_NEEDS]; /* suffix[i][d] = sum of give[d] over c[i..] */
        size_t k;
        size_t cur[ADMIT_PREEMPT_EXACT_MAX];
        size_t best[ADMIT_PREEMPT_EXACT_MAX];
        bool found;
        int64_t best_max, best_sum;
} Search;

/* Exclusive CPUs held by an admitted pod in the CPU state. */
static unsigned pod_held_cpus(const CpumgrState *st, const AdmitEntry *e) {
        CpumgrSet all = {};

        if (!st)
                return 0;
        for (size_t pass = 0; pass < 2; pass++) {
                const PodContainer *cs = pass == 0 ? e->pod->init_containers : e->pod->containers;
                size_t n = pass == 0 ? e->pod->n_init_containers : e->pod->n_containers;

                for (size_t i = 0; i < n; i++) {
                        const CpumgrSet *set = cpumgr_container_cpus(st, e->uid, cs[i].name);

                        if (set)
                                cpumgr_set_union(&all, set);
                }
        }
        return cpumgr_set_count(&all);
}

static int64_t gives(const AdmitSnapshot *s, const AdmitEntry *e, const AdmitNeed *need) {
        int64_t v = 0;

        if (need->res == ADMIT_NEED_PODS)
                return 1;
        if (need->res == ADMIT_NEED_CPUS)
                return pod_held_cpus(s->cpumgr, e);
        for (size_t i = 0; i < e->n_reqs; i++)
                if (e->reqs[i].res == need->res)
                        v += e->reqs[i].value;
        return v;
}

static int cand_cmp(const void *a, const void *b) {
        const Cand *x = a, *y = b;

        if (x->prio != y->prio)
                return x->prio < y->prio ? -1 : 1;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cand_cmp_greedy(const void *a, const void *b) {
        const Cand *x = a, *y = b;

        if (x->prio != y->prio)
                return x->prio < y->prio ? -1 : 1;
        if (x->share != y->share)
                return x->share > y->share ? -1 : 1;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void dfs(Search *s, size_t start, size_t depth, int64_t *left, int64_t cur_max, int64_t cur_sum) {
        if (depth == s->k) {
                for (size_t d = 0; d < s->n_needs; d++)
                        if (left[d] > 0)
                                return;
                if (!s->found || cur_max < s->best_max || (cur_max == s->best_max && cur_sum < s->best_sum)) {
                        s->found = true;
                        s->best_max = cur_max;
                        s->best_sum = cur_sum;
                        memcpy(s->best, s->cur, s->k * sizeof(size_t));
                }
                return;
        }
        for (size_t i = start; i + (s->k - depth) <= s->n; i++) {
                int64_t lb_max = s->c[i].prio, lb_sum = cur_sum + (int64_t) (s->k - depth) * s->c[i].prio;
                bool reachable = true;

                /* candidates are sorted by priority: nothing after i is cheaper */
                if (s->found && (lb_max > s->best_max || (lb_max == s->best_max && lb_sum >= s->best_sum)))
                        return;
                for (size_t d = 0; d < s->n_needs; d++)
                        if (left[d] > s->suffix[i][d])
                                reachable = false;
                if (!reachable)
                        return;
                for (size_t d = 0; d < s->n_needs; d++)
                        left[d] -= s->c[i].give[d];
                s->cur[depth] = i;
                dfs(s, i + 1, depth + 1, left, lb_max > cur_max ? lb_max : cur_max, cur_sum + s->c[i].prio);
                for (size_t d = 0; d < s->n_needs; d++)
                        left[d] += s->c[i].give[d];
        }
}

static bool covered(const Cand *c, const bool *in, size_t n, const int64_t *deficit, size_t n_needs) {
        for (size_t d = 0; d < n_needs; d++) {
                int64_t sum = 0;

                for (size_t i = 0; i < n; i++)
                        if (in[i])
                                sum += c[i].give[d];
                if (sum < deficit[d])
                        return false;
        }
        return true;
}

int admit_preempt_select(const AdmitSnapshot *s, const Pod *pod, const AdmitNeed *needs, size_t n_needs,
                         size_t **ret_idx, CubError *err) {
        _cleanup_free_ Cand *c = NULL;
        _cleanup_free_ size_t *out = NULL;
        _cleanup_free_ bool *in = NULL;
        int64_t deficit[MAX_NEEDS], total[MAX_NEEDS] = {};
        bool preemptor_critical = pod->priority >= POD_PRIORITY_CRITICAL;
        size_t n = 0, n_out = 0;

        *ret_idx = NULL;
        if (n_needs == 0)
                return 0;
        if (n_needs > MAX_NEEDS)
                return cub_err_set(err, E2BIG, "too many resources to preempt for");
        for (size_t d = 0; d < n_needs; d++)
                deficit[d] = needs[d].deficit;
        c = calloc(s->n_pods ? s->n_pods : 1, sizeof(Cand));
        if (!c)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < s->n_pods; i++) {
                const AdmitEntry *e = s->pods[i];
                bool useful = false;

                if (e->priority >= pod->priority || (e->critical && !preemptor_critical))
                        continue;
                c[n] = (Cand){ .idx = i, .prio = e->priority };
                for (size_t d = 0; d < n_needs; d++) {
                        int64_t g = gives(s, e, &needs[d]);

                        c[n].give[d] = g > 0 ? g : 0;
                        if (g > 0) {
                                useful = true;
                                c[n].share += g >= deficit[d] ? 1.0 : (double) g / (double) deficit[d];
                        }
                }
                if (!useful)
                        continue;
                for (size_t d = 0; d < n_needs; d++)
                        total[d] += c[n].give[d];
                n++;
        }
        for (size_t d = 0; d < n_needs; d++)
                if (total[d] < deficit[d])
                        return -ENOSPC;

        out = calloc(n ? n : 1, sizeof(size_t));
        if (!out)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (n <= ADMIT_PREEMPT_EXACT_MAX) {
                _cleanup_free_ int64_t(*suffix)[MAX_NEEDS] = calloc(n + 1, sizeof(*suffix));
                Search se = { .c = c, .n = n, .n_needs = n_needs, .deficit = deficit };
                int64_t left[MAX_NEEDS];

                if (!suffix)
                        return cub_err_set(err, ENOMEM, "out of memory");
                qsort(c, n, sizeof(Cand), cand_cmp);
                for (size_t i = n; i-- > 0;)
                        for (size_t d = 0; d < n_needs; d++)
                                suffix[i][d] = suffix[i + 1][d] + c[i].give[d];
                se.suffix = suffix;
                for (se.k = 1; se.k <= n && !se.found; se.k++) {
                        memcpy(left, deficit, sizeof(left));
                        dfs(&se, 0, 0, left, INT64_MIN, 0);
                        if (se.found)
                                break;
                }
                if (!se.found)
                        return -ENOSPC;
                for (size_t i = 0; i < se.k; i++)
                        out[n_out++] = c[se.best[i]].idx;
        } else {
                in = calloc(n, sizeof(bool));
                if (!in)
                        return cub_err_set(err, ENOMEM, "out of memory");
                qsort(c, n, sizeof(Cand), cand_cmp_greedy);
                for (size_t i = 0; i < n && !covered(c, in, n, deficit, n_needs); i++)
                        in[i] = true;
                for (size_t i = n; i-- > 0;) {
                        if (!in[i])
                                continue;
                        in[i] = false;
                        if (!covered(c, in, n, deficit, n_needs))
                                in[i] = true;
                }
                for (size_t i = 0; i < n; i++)
                        if (in[i])
                                out[n_out++] = c[i].idx;
        }
        *ret_idx = TAKE_PTR(out);
        return (int) n_out;
}
