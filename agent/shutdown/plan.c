/* SPDX-License-Identifier: Apache-2.0 */
/* The priority groups of a graceful node shutdown, as kubelet 1.34 derives
 * them (pkg/kubelet/nodeshutdown: migrateConfig, groupByPriority; the
 * checks of pkg/kubelet/apis/config/validation are agent/pod/kubelet-checks.c's). Pure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../eviction/eviction.h"
#include "../util/time.h"
#include "shutdown.h"

static int by_priority(const void *a, const void *b) {
        const ShutdownGroup *x = a, *y = b;

        return (x->priority > y->priority) - (x->priority < y->priority);
}

int shutdown_plan(const PodKubeletConfig *kc, ShutdownPlan *ret, CubError *err) {
        int64_t requested, critical;
        ShutdownGroup *g;
        size_t n;

        /* kubelet's checks of the three fields (zero or at least 1 s, the
         * critical pods' no longer than the period, not both kinds, no
         * negative seconds) are the configuration decoder's */
        *ret = (ShutdownPlan){};
        requested = kc->shutdown_grace_period.usec / (int64_t) CUB_USEC_PER_SEC;
        critical = kc->shutdown_grace_period_critical_pods.usec / (int64_t) CUB_USEC_PER_SEC;
        if (kc->n_shutdown_by_priority > 0) {
                n = kc->n_shutdown_by_priority;
                g = calloc(n, sizeof(*g));
                if (!g)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (size_t i = 0; i < n; i++)
                        g[i] = (ShutdownGroup){ .priority = kc->shutdown_by_priority[i].priority,
                                                .grace_s = kc->shutdown_by_priority[i].grace_s };
                qsort(g, n, sizeof(*g), by_priority);
        } else if (requested > 0) {
                /* migrateConfig: the regular pods get what the critical
                 * ones leave of the period */
                n = 2;
                g = calloc(n, sizeof(*g));
                if (!g)
                        return cub_err_set(err, ENOMEM, "out of memory");
                g[0] = (ShutdownGroup){ .priority = SHUTDOWN_DEFAULT_PRIORITY, .grace_s = requested - critical };
                g[1] = (ShutdownGroup){ .priority = SHUTDOWN_CRITICAL_PRIORITY, .grace_s = critical };
        } else
                return 0; /* off */
        *ret = (ShutdownPlan){ .groups = g, .n = n };
        return 0;
}

void shutdown_plan_done(ShutdownPlan *p) {
        free(p->groups);
        *p = (ShutdownPlan){};
}

int64_t shutdown_period_requested(const ShutdownPlan *p) {
        int64_t s = 0;

        for (size_t i = 0; i < p->n; i++)
                s += p->groups[i].grace_s;
        return s;
}

size_t shutdown_group_of(const ShutdownPlan *p, int32_t priority) {
        size_t i = 0;

        /* sort.Search: the first group of a priority >= the pod's */
        while (i < p->n && p->groups[i].priority < priority)
                i++;
        if (i == p->n)
                return p->n > 0 ? p->n - 1 : 0; /* above the highest: the highest */
        if (i > 0 && p->groups[i].priority > priority)
                i--; /* between two groups: the lower */
        return i;
}
