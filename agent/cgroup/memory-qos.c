/* SPDX-License-Identifier: Apache-2.0 */
/* Memory QoS (KEP-2570), kubelet 1.34 with the MemoryQoS feature gate on
 * cgroup v2: memory.min and memory.high of a container (sent in the CRI
 * unified map), memory.min of the QoS-level groups. The pod group's
 * memory.min is in cg_pod_values() (values.c). Pure. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cgroup.h"

/* Go's math.Floor for the values the formula meets: below 2^52 in
 * magnitude a double may have a fraction, above it has none (no libm). */
static double floor_f64(double x) {
        double t;

        if (!(x > -4503599627370496.0 && x < 4503599627370496.0))
                return x;
        t = (double) (int64_t) x;
        return t > x ? t - 1.0 : t;
}

int64_t cg_memory_high(int64_t request, int64_t limit, int64_t allocatable, double factor, int64_t page_size) {
        double above, pages;
        int64_t high;

        if (page_size <= 0)
                return 0;
        /* the limit, or without one the node's allocatable memory; neither: 0 */
        if (limit != 0)
                above = (double) limit;
        else if (allocatable > 0)
                above = (double) allocatable;
        else
                return 0;
        /* int64(math.Floor(req + (above - req) * factor) / pageSize) * pageSize,
         * in float64 (no fused multiply-add: Go's amd64 code has none) */
        pages = floor_f64((double) request + (above - (double) request) * factor) / (double) page_size;
        if (!(pages > -9.2e18 && pages < 9.2e18))
                return 0;
        /* the product wraps in Go only past INT64_MAX, to a negative value:
         * never above the request, so never written */
        if (__builtin_mul_overflow((int64_t) pages, page_size, &high))
                return 0;
        return high;
}

void cg_container_memory_qos(const PodContainer *c, const CgOptions *o, CgContainerResources *res) {
        CubQuantity req = {}, lim = {};
        int64_t request, limit, high;

        res->memory_min[0] = '\0';
        res->memory_high[0] = '\0';
        if (!o->memory_qos)
                return;
        /* the container's own request and limit (absent: 0); a pod-level
         * limit does not count here (the block reads
         * container.Resources.Limits, not getMemoryLimit) */
        (void) pod_resource_get(&c->requests, "memory", &req);
        (void) pod_resource_get(&c->limits, "memory", &lim);
        request = cub_quantity_value(req);
        limit = cub_quantity_value(lim);
        if (request != 0)
                (void) snprintf(res->memory_min, sizeof(res->memory_min), "%" PRId64, request);
        if (request == limit)
                return; /* memory.high only when they differ (Guaranteed pods: never) */
        high = cg_memory_high(request, limit, o->kubepods_memory, o->memory_throttling_factor, o->page_size);
        if (high != 0 && high > request)
                (void) snprintf(res->memory_high, sizeof(res->memory_high), "%" PRId64, high);
}

size_t cg_container_unified(const CgContainerResources *res, const char *kv[static CG_UNIFIED_KV_MAX]) {
        const char *const pairs[][2] = {
                /* kubelet's on cgroup v2 since 1.28 (singleProcessOOMKill false, the
                 * default): an OOM kill takes the whole container */
                { "memory.oom.group", "1" },
                { "memory.swap.max", res->memory_swap_max },
                { "memory.min", res->memory_min },
                { "memory.high", res->memory_high },
        };
        size_t n = 0;

        _Static_assert(2 * (sizeof(pairs) / sizeof(pairs[0])) + 1 <= CG_UNIFIED_KV_MAX, "CG_UNIFIED_KV_MAX fits all");
        for (size_t i = 0; !res->cgroup_v1 && i < sizeof(pairs) / sizeof(pairs[0]); i++)
                if (pairs[i][1][0]) {
                        kv[2 * n] = pairs[i][0];
                        kv[2 * n + 1] = pairs[i][1];
                        n++;
                }
        kv[2 * n] = NULL;
        return n;
}

static void put_min(CgGroupValues *g, int64_t v) {
        CgFile *f;

        if (v <= 0 || g->n_files >= CG_FILES_MAX)
                return;
        f = &g->files[g->n_files++];
        f->name = "memory.min";
        (void) snprintf(f->value, sizeof(f->value), "%" PRId64, v);
}

void cg_pod_memory_min(int64_t pod_memory_request, const CgOptions *o, CgGroupValues *g) {
        if (o->memory_qos)
                put_min(g, pod_memory_request);
}

void cg_qos_memory_min(int64_t guaranteed_memory, int64_t burstable_memory, const CgOptions *o, CgGroupValues ret[3]) {
        int64_t all;

        if (!o->memory_qos)
                return;
        if (__builtin_add_overflow(guaranteed_memory, burstable_memory, &all))
                all = INT64_MAX;
        /* kubepods holds the Guaranteed pods and the two other groups */
        put_min(&ret[0], all);
        put_min(&ret[1], burstable_memory);
}
