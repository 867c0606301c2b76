/* SPDX-License-Identifier: Apache-2.0 */
/* The relist's decisions (relist-plan.h): pure. relist-apply.c applies them. */
#include <errno.h>
#include <stdlib.h>

#include "relist-plan.h"

RelistGate relist_sync_gate(const LcPod *p, uint64_t now, const char *network_error) {
        if (!p->admitted || p->terminal || p->n_victims > 0 || p->busy || !cub_retry_due(&p->sync_retry, now))
                return RELIST_GATE_NO;
        if (network_error && *network_error && !p->spec->pod->host_network)
                return RELIST_GATE_NETWORK;
        return RELIST_GATE_SYNC;
}

static bool waits_for_retry(const LcPod *p, uint64_t now) {
        return p->wanted && p->admitted && !p->terminal && !p->busy && p->n_victims == 0 &&
               p->sync_retry.failures > 0 && p->sync_retry.next_usec > now;
}

static void add_stop(RelistDecisions *d, const WorkerObserved *o, int64_t grace) {
        d->stop[d->n_stop] = o;
        d->stop_grace[d->n_stop++] = grace;
}

int relist_decide(const RelistInput *in, const bool *needs_sync, const KillTable *kills, RelistDecisions *d) {
        *d = (RelistDecisions){ .pods_steady = true, .sync_due = UINT64_MAX };
        d->sync = calloc(in->n_pods + 1, sizeof(*d->sync));
        d->net_wait = calloc(in->n_pods + 1, sizeof(*d->net_wait));
        d->stop = calloc(in->n_observed + 1, sizeof(*d->stop));
        d->stop_grace = calloc(in->n_observed + 1, sizeof(*d->stop_grace));
        d->gone = calloc(kills->n + 1, sizeof(*d->gone));
        if (!d->sync || !d->net_wait || !d->stop || !d->stop_grace || !d->gone) {
                relist_decisions_done(d);
                return -ENOMEM;
        }
        for (size_t i = 0; i < in->n_pods; i++) {
                LcPod *p = in->pods[i];
                const WorkerObserved *o = cub_hashmap_get(in->observed_by_uid, p->spec->pod->uid);

                if (p->busy || !p->wanted)
                        continue;
                if (p->terminal) {
                        /* a rejected, preempted or evicted pod keeps nothing running */
                        if (o)
                                add_stop(d, o, p->kill_grace);
                        continue;
                }
                if (!p->admitted || !needs_sync[i])
                        continue;
                switch (relist_sync_gate(p, in->now, in->network_error)) {
                case RELIST_GATE_SYNC:
                        d->sync[d->n_sync++] = p;
                        break;
                case RELIST_GATE_NETWORK:
                        d->net_wait[d->n_net_wait++] = p;
                        break;
                case RELIST_GATE_NO:
                        break;
                }
        }
        for (size_t k = 0; k < in->n_observed; k++) {
                const WorkerObserved *o = &in->observed[k];
                const LcPod *p = cub_hashmap_get(in->by_uid, o->uid);

                /* a pod of the table (wanted, or its own stop still under
                 * way) is not stopped from here, nor one a source holds
                 * back; nothing is before the sources have given their sets */
                if ((p && (p->wanted || p->busy)) || !in->sources_ready || (in->held && in->held(in->held_ctx, o->uid)))
                        continue;
                add_stop(d, o, o->grace);
        }
        /* stops that wait for a retry while the runtime holds nothing of
         * their pod any more: done (someone else removed it) */
        for (size_t i = kills->n; i > 0; i--) {
                const KillEntry *e = kills->entries[i - 1];

                if (!e->in_flight && !cub_hashmap_get(in->observed_by_uid, e->uid))
                        d->gone[d->n_gone++] = e->uid;
        }
        for (size_t i = 0; i < in->n_pods; i++) {
                const LcPod *p = in->pods[i];

                /* a pod whose sync failed waits for its retry: nothing to
                 * relist for until then, the timer fires by its retry */
                if (waits_for_retry(p, in->now)) {
                        if (p->sync_retry.next_usec < d->sync_due)
                                d->sync_due = p->sync_retry.next_usec;
                        continue;
                }
                d->pods_steady = d->pods_steady && lc_pod_steady(p);
        }
        return 0;
}

void relist_decisions_done(RelistDecisions *d) {
        free(d->sync);
        free(d->net_wait);
        free(d->stop);
        free(d->stop_grace);
        free(d->gone);
        *d = (RelistDecisions){ .sync_due = UINT64_MAX };
}
