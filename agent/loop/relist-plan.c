/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>

#include "relist-plan.h"

bool relist_may_sync(LcPod *p, uint64_t now, const char *network_error) {
        if (!p->admitted || p->terminal || p->n_victims > 0 || p->busy || !cub_retry_due(&p->sync_retry, now))
                return false;
        return !lc_pod_network_wait(p, network_error, now);
}

static bool waits_for_retry(const LcPod *p, uint64_t now) {
        return p->wanted && p->admitted && !p->terminal && !p->busy && p->n_victims == 0 &&
               p->sync_retry.failures > 0 && p->sync_retry.next_usec > now;
}

static int add_kill(RelistPlan *plan, KillTable *kills, const WorkerObserved *o, int64_t grace, uint64_t now,
                    size_t cap) {
        bool is_new = false;
        KillEntry *e = kill_table_want(kills, o->uid, o->namespace_, o->name, o->cgroup, grace, now, &is_new);

        if (!e)
                return kill_table_find(kills, o->uid) ? 0 : -ENOMEM;
        if (plan->n_kill >= cap)
                return -ENOMEM; /* cannot happen: one per observed pod */
        plan->kill_new[plan->n_kill] = is_new;
        plan->kill[plan->n_kill++] = e;
        plan->n_new_kills += is_new;
        return 0;
}

int relist_plan(const RelistInput *in, KillTable *kills, RelistPlan *plan) {
        CubHashmap *observed = NULL;
        int r = 0;

        *plan = (RelistPlan){ .next_due = UINT64_MAX };
        plan->sync = calloc(in->n_pods + 1, sizeof(*plan->sync));
        plan->kill = calloc(in->n_observed + 1, sizeof(*plan->kill));
        plan->kill_new = calloc(in->n_observed + 1, sizeof(*plan->kill_new));
        if (!plan->sync || !plan->kill || !plan->kill_new || cub_hashmap_new(&observed) < 0) {
                relist_plan_done(plan);
                return -ENOMEM;
        }
        for (size_t k = 0; k < in->n_observed; k++)
                if ((r = cub_hashmap_put(observed, in->observed[k].uid, (void *) &in->observed[k])) < 0)
                        goto out;
        for (size_t i = 0; i < in->n_pods; i++) {
                LcPod *p = in->pods[i];
                const WorkerObserved *o = cub_hashmap_get(observed, p->spec->pod->uid);

                if (p->busy || !p->wanted)
                        continue;
                if (p->terminal) {
                        /* a rejected, preempted or evicted pod keeps nothing running */
                        lc_pod_set_observed(p, o != NULL);
                        if (o && (r = add_kill(plan, kills, o, p->kill_grace, in->now, in->n_observed)) < 0)
                                goto out;
                        continue;
                }
                if (!p->admitted)
                        continue;
                if (lc_pod_observe(p, o, in->now) && relist_may_sync(p, in->now, in->network_error))
                        plan->sync[plan->n_sync++] = p;
        }
        for (size_t k = 0; k < in->n_observed; k++) {
                const WorkerObserved *o = &in->observed[k];
                const LcPod *p = cub_hashmap_get(in->by_uid, o->uid);

                /* a pod of the table (wanted, or its own stop still under
                 * way) is not stopped from here, nor one a source holds
                 * back; nothing is before the sources have given their sets */
                if ((p && (p->wanted || p->busy)) || !in->sources_ready || (in->held && in->held(in->held_ctx, o->uid)))
                        continue;
                if ((r = add_kill(plan, kills, o, o->grace, in->now, in->n_observed)) < 0)
                        goto out;
        }
        /* stops that wait for a retry while the runtime holds nothing of
         * their pod any more: done (someone else removed it) */
        for (size_t i = kills->n; i > 0; i--) {
                const KillEntry *e = kills->entries[i - 1];

                if (!e->in_flight && !cub_hashmap_get(observed, e->uid) && kill_table_gone(kills, e->uid))
                        plan->forgotten++;
        }
        plan->next_due = kill_table_next_due(kills);
        plan->steady = kill_table_in_flight(kills) == 0 && in->sources_ready;
        for (size_t i = 0; i < in->n_pods; i++) {
                const LcPod *p = in->pods[i];

                /* a pod whose sync failed waits for its retry: nothing to
                 * relist for until then, the timer fires by its retry */
                if (waits_for_retry(p, in->now)) {
                        if (p->sync_retry.next_usec < plan->next_due)
                                plan->next_due = p->sync_retry.next_usec;
                        continue;
                }
                plan->steady = plan->steady && lc_pod_steady(p);
        }
out:
        /* a plan cut short still holds the stops it put in flight: the
         * caller applies it either way */
        cub_hashmap_free(observed);
        return r;
}

void relist_plan_done(RelistPlan *plan) {
        free(plan->sync);
        free(plan->kill);
        free(plan->kill_new);
        *plan = (RelistPlan){ .next_due = UINT64_MAX };
}
