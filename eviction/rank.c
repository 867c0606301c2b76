/* SPDX-License-Identifier: Apache-2.0 */
/* Ranking: comparator chains for cubelet's policy (QoS, priority, usage
 * over request) and kubelet's (helpers.go rankMemoryPressure,
 * rankPIDPressure, rankDiskPressureFunc). Pure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "eviction-internal.h"

bool evict_pod_is_exempt(const EvictPod *p) {
        return p->critical || p->protected_ || p->priority >= EVICT_CRITICAL_PRIORITY;
}

/* kubelet's cmpBool: true first. */
static int cmp_bool_first(bool a, bool b) {
        if (a == b)
                return 0;
        return a ? -1 : 1;
}

static int cmp_priority(const EvictPod *a, const EvictPod *b) {
        if (a->priority == b->priority)
                return 0;
        return a->priority < b->priority ? -1 : 1; /* lower first */
}

/* Usage and request of the resource a signal measures. Inodes and
 * processes have no request. */
static void usage_of(const EvictPod *p, EvictResource r, uint64_t *ret_usage, uint64_t *ret_request) {
        switch (r) {
        case EVICT_RESOURCE_MEMORY:
                *ret_usage = p->memory_usage;
                *ret_request = p->memory_request;
                break;
        case EVICT_RESOURCE_EPHEMERAL_STORAGE:
                *ret_usage = p->ephemeral_usage;
                *ret_request = p->ephemeral_request;
                break;
        case EVICT_RESOURCE_INODES:
                *ret_usage = p->inodes_usage;
                *ret_request = 0;
                break;
        default:
                *ret_usage = p->processes;
                *ret_request = 0;
                break;
        }
}

/* Pods without stats first, then usage > request first (kubelet's
 * exceedMemoryRequests / exceedDiskRequests). */
static int cmp_exceeds(const EvictPod *a, const EvictPod *b, EvictResource r) {
        uint64_t ua, ra, ub, rb;

        if (!a->stats || !b->stats)
                return cmp_bool_first(!a->stats, !b->stats);
        usage_of(a, r, &ua, &ra);
        usage_of(b, r, &ub, &rb);
        return cmp_bool_first(ua > ra, ub > rb);
}

/* Pods without stats first, then larger usage - request first (kubelet's
 * memory / disk / process comparators). */
static int cmp_usage(const EvictPod *a, const EvictPod *b, EvictResource r) {
        uint64_t ua, ra, ub, rb;
        __int128 da, db;

        if (!a->stats || !b->stats)
                return cmp_bool_first(!a->stats, !b->stats);
        usage_of(a, r, &ua, &ra);
        usage_of(b, r, &ub, &rb);
        da = (__int128) ua - (__int128) ra;
        db = (__int128) ub - (__int128) rb;
        if (da == db)
                return 0;
        return da > db ? -1 : 1;
}

static int cmp_qos(const EvictPod *a, const EvictPod *b) {
        /* BestEffort (2) first, Guaranteed (0) last */
        if (a->qos == b->qos)
                return 0;
        return a->qos > b->qos ? -1 : 1;
}

static int cmp_key(const EvictPod *a, const EvictPod *b) {
        return strcmp(a->key ? a->key : "", b->key ? b->key : "");
}

int evict_pod_cmp(const EvictPod *a, const EvictPod *b, EvictSignal signal, EvictPolicy policy) {
        EvictResource r = evict_signal_resource(signal);
        int c;

        if (policy == EVICT_POLICY_KUBELET) {
                switch (r) {
                case EVICT_RESOURCE_PIDS: /* orderedBy(priority, process) */
                        c = cmp_priority(a, b);
                        if (c == 0)
                                c = cmp_usage(a, b, r);
                        break;
                default: /* orderedBy(exceedRequests, priority, usage - request) */
                        c = cmp_exceeds(a, b, r);
                        if (c == 0)
                                c = cmp_priority(a, b);
                        if (c == 0)
                                c = cmp_usage(a, b, r);
                        break;
                }
        } else {
                c = cmp_qos(a, b);
                if (c == 0)
                        c = cmp_priority(a, b);
                if (c == 0)
                        c = cmp_usage(a, b, r);
        }
        if (c == 0)
                c = cmp_key(a, b);
        return c;
}

typedef struct RankCtx {
        const EvictPod *pods;
        EvictSignal signal;
        EvictPolicy policy;
} RankCtx;

static int cmp_index(const void *x, const void *y, void *userdata) {
        const RankCtx *ctx = userdata;
        size_t i = *(const size_t *) x, j = *(const size_t *) y;
        int c = evict_pod_cmp(&ctx->pods[i], &ctx->pods[j], ctx->signal, ctx->policy);

        if (c != 0)
                return c;
        return i < j ? -1 : i > j; /* equal keys: input order, so the sort is total */
}

int evict_rank(const EvictPod *pods, size_t n, EvictSignal signal, EvictPolicy policy, size_t *ret_order,
               size_t *ret_n_order, size_t *ret_exempt, size_t *ret_n_exempt, CubError *err) {
        RankCtx ctx = { .pods = pods, .signal = signal, .policy = policy };
        size_t no = 0, ne = 0;

        if (signal < 0 || signal >= _EVICT_SIGNAL_MAX)
                return cub_err_set(err, EINVAL, "unknown eviction signal %d", (int) signal);
        if (policy < 0 || policy >= _EVICT_POLICY_MAX)
                return cub_err_set(err, EINVAL, "unknown eviction policy %d", (int) policy);
        if (n > 0 && (!pods || !ret_order || !ret_exempt))
                return cub_err_set(err, EINVAL, "rank: no room for the result");

        for (size_t i = 0; i < n; i++) {
                if (evict_pod_is_exempt(&pods[i]))
                        ret_exempt[ne++] = i;
                else
                        ret_order[no++] = i;
        }
        if (no > 1)
                qsort_r(ret_order, no, sizeof(size_t), cmp_index, &ctx);
        if (ne > 1)
                qsort_r(ret_exempt, ne, sizeof(size_t), cmp_index, &ctx);
        *ret_n_order = no;
        *ret_n_exempt = ne;
        return 0;
}
