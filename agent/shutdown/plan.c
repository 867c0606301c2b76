/* SPDX-License-Identifier: Apache-2.0 */
/* The priority groups of a graceful node shutdown, as kubelet 1.34 derives
 * them (pkg/kubelet/nodeshutdown: migrateConfig, groupByPriority; the
 * checks of pkg/kubelet/apis/config/validation). Pure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../eviction/eviction.h"
#include "../util/duration.h"
#include "../util/time.h"
#include "shutdown.h"

/* a Go duration of the configuration in whole seconds ("" or NULL: 0);
 * kubelet's check: zero, or at least 1 s */
static int period_s(const char *field, const char *text, int64_t *ret, CubError *err) {
        CubError derr = {};
        uint64_t usec = 0;
        int r;

        *ret = 0;
        if (!text || !*text)
                return 0;
        r = cub_duration_parse(text, &usec, &derr);
        if (r < 0 && r != -ERANGE)
                return cub_err_set(err, EINVAL, "invalid configuration: %s %s: %s", field, text, derr.msg);
        if (r == -ERANGE || (usec > 0 && usec < CUB_USEC_PER_SEC))
                return cub_err_set(err, EINVAL,
                                   "invalid configuration: %s %s must be either zero or otherwise >= 1 sec", field,
                                   text);
        *ret = (int64_t) (usec / CUB_USEC_PER_SEC);
        return 0;
}

static int by_priority(const void *a, const void *b) {
        const ShutdownGroup *x = a, *y = b;

        return (x->priority > y->priority) - (x->priority < y->priority);
}

int shutdown_plan(const PodKubeletConfig *kc, ShutdownPlan *ret, CubError *err) {
        int64_t requested, critical;
        ShutdownGroup *g;
        size_t n;
        int r;

        *ret = (ShutdownPlan){};
        r = period_s("shutdownGracePeriod", kc->shutdown_grace_period, &requested, err);
        if (r < 0)
                return r;
        r = period_s("shutdownGracePeriodCriticalPods", kc->shutdown_grace_period_critical_pods, &critical, err);
        if (r < 0)
                return r;
        if (critical > requested)
                return cub_err_set(err, EINVAL,
                                   "invalid configuration: shutdownGracePeriodCriticalPods %s must be <= "
                                   "shutdownGracePeriod %s",
                                   kc->shutdown_grace_period_critical_pods,
                                   kc->shutdown_grace_period ? kc->shutdown_grace_period : "0s");
        if (kc->n_shutdown_by_priority > 0 && (requested > 0 || critical > 0))
                return cub_err_set(err, EINVAL,
                                   "invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority and "
                                   "shutdownGracePeriod at the same time");
        for (size_t i = 0; i < kc->n_shutdown_by_priority; i++)
                if (kc->shutdown_by_priority[i].grace_s < 0)
                        return cub_err_set(err, EINVAL,
                                           "invalid configuration: shutdownGracePeriodByPodPriority[%zu]."
                                           "shutdownGracePeriodSeconds %lld must not be negative",
                                           i, (long long) kc->shutdown_by_priority[i].grace_s);
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
