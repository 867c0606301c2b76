/* SPDX-License-Identifier: Apache-2.0 */
/* The relist's one applier (relist-plan.h): what the runtime holds onto
 * the pods' records (lifecycle/'s transitions), then relist-plan.c's
 * decisions onto the kill table and the pods; the jobs to submit come out. */
#include <errno.h>
#include <stdlib.h>

#include "relist-plan.h"

bool relist_may_sync(LcPod *p, uint64_t now, const char *network_error) {
        switch (relist_sync_gate(p, now, network_error)) {
        case RELIST_GATE_SYNC:
                (void) lc_pod_network_wait(p, NULL, now);
                return true;
        case RELIST_GATE_NETWORK:
                (void) lc_pod_network_wait(p, network_error, now);
                return false;
        case RELIST_GATE_NO:
                break;
        }
        return false;
}

/* each wanted pod's record from what the runtime holds: needs[i], whether
 * pod i asks for a sync */
static void observe(const RelistInput *in, bool *needs) {
        for (size_t i = 0; i < in->n_pods; i++) {
                LcPod *p = in->pods[i];
                const WorkerObserved *o = cub_hashmap_get(in->observed_by_uid, p->spec->pod->uid);

                if (p->busy || !p->wanted)
                        continue;
                if (p->terminal)
                        lc_pod_set_observed(p, o != NULL);
                else if (p->admitted)
                        needs[i] = lc_pod_observe(p, o, in->now);
        }
}

static int apply(const RelistInput *in, const RelistDecisions *d, KillTable *kills, RelistPlan *plan) {
        for (size_t i = 0; i < d->n_sync; i++) {
                (void) lc_pod_network_wait(d->sync[i], NULL, in->now);
                plan->sync[plan->n_sync++] = d->sync[i];
        }
        for (size_t i = 0; i < d->n_net_wait; i++)
                (void) lc_pod_network_wait(d->net_wait[i], in->network_error, in->now);
        for (size_t i = 0; i < d->n_stop; i++) {
                const WorkerObserved *o = d->stop[i];
                bool is_new = false;
                KillEntry *e = kill_table_want(kills, o->uid, o->namespace_, o->name, o->cgroup, d->stop_grace[i],
                                               in->now, &is_new);

                if (!e) {
                        if (!kill_table_find(kills, o->uid))
                                return -ENOMEM;
                        continue; /* in flight, or waiting for its retry */
                }
                plan->kill_new[plan->n_kill] = is_new;
                plan->kill[plan->n_kill++] = e;
                plan->n_new_kills += is_new;
        }
        /* (each uid is the entry's own: gone with it, and not used after) */
        for (size_t i = 0; i < d->n_gone; i++)
                plan->forgotten += kill_table_gone(kills, d->gone[i]);
        return 0;
}

int relist_plan(const RelistInput *in, KillTable *kills, RelistPlan *plan) {
        _cleanup_free_ bool *needs = calloc(in->n_pods + 1, sizeof(bool));
        RelistInput with = *in;
        CubHashmap *observed = NULL;
        RelistDecisions d = { .sync_due = UINT64_MAX };
        int r = 0;

        *plan = (RelistPlan){ .next_due = UINT64_MAX };
        plan->sync = calloc(in->n_pods + 1, sizeof(*plan->sync));
        plan->kill = calloc(in->n_observed + 1, sizeof(*plan->kill));
        plan->kill_new = calloc(in->n_observed + 1, sizeof(*plan->kill_new));
        if (!needs || !plan->sync || !plan->kill || !plan->kill_new || cub_hashmap_new(&observed) < 0) {
                relist_plan_done(plan);
                return -ENOMEM;
        }
        for (size_t k = 0; k < in->n_observed; k++)
                if ((r = cub_hashmap_put(observed, in->observed[k].uid, (void *) &in->observed[k])) < 0)
                        goto out;
        with.observed_by_uid = observed;
        observe(&with, needs);
        r = relist_decide(&with, needs, kills, &d);
        if (r >= 0)
                r = apply(&with, &d, kills, plan);
        plan->next_due = kill_table_next_due(kills);
        if (d.sync_due < plan->next_due)
                plan->next_due = d.sync_due;
        plan->steady = r >= 0 && kill_table_in_flight(kills) == 0 && in->sources_ready && d.pods_steady;
out:
        /* a plan cut short still holds the stops it put in flight: the
         * caller applies it either way */
        relist_decisions_done(&d);
        cub_hashmap_free(observed);
        return r;
}

void relist_plan_done(RelistPlan *plan) {
        free(plan->sync);
        free(plan->kill);
        free(plan->kill_new);
        *plan = (RelistPlan){ .next_due = UINT64_MAX };
}
