/* SPDX-License-Identifier: Apache-2.0 */
/* The pod table (AgentPodTable, its one writer): pods come from the
 * sources' merge (merge.c decides which are wanted), go through the
 * managers' admission, get their jobs (submit.c) and leave. With actions.c
 * it is the one pair of the loop's files that call each other. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/time.h"
#include "agent-internal.h"
#include "relist-plan.h"

int agent_pods_init(Agent *a, CubError *err) {
        int r = cub_hashmap_new(&a->table.by_uid);

        if (r < 0)
                return cub_err_set(err, -r, "out of memory");
        return 0;
}

/* p leaves the table: the index points to another pod of its UID, if any
 * (an edited pod whose old copy was still stopping). */
static void unindex(Agent *a, LcPod *p) {
        const char *uid = p->spec->pod->uid;

        if (!cub_hashmap_remove(a->table.by_uid, uid, p))
                return;
        for (size_t i = a->table.n_pods; i > 0; i--)
                if (a->table.pods[i - 1] != p && strcmp(a->table.pods[i - 1]->spec->pod->uid, uid) == 0) {
                        (void) cub_hashmap_put(a->table.by_uid, a->table.pods[i - 1]->spec->pod->uid,
                                               a->table.pods[i - 1]);
                        return;
                }
}

/* An in-place resize: p's spec is now spec; the index follows (its key is
 * the spec's UID string). */
void agent_pod_set_spec(Agent *a, LcPod *p, WorkerSpec *spec) {
        bool indexed = cub_hashmap_get(a->table.by_uid, p->spec->pod->uid) == p;

        if (indexed)
                (void) cub_hashmap_remove(a->table.by_uid, p->spec->pod->uid, p);
        lc_pod_set_spec(p, spec);
        if (indexed && cub_hashmap_put(a->table.by_uid, p->spec->pod->uid, p) < 0)
                cub_log(LOG_ERR, "pod %s/%s: out of memory indexing it", p->spec->pod->namespace_, p->spec->pod->name);
}

/* Every manager lets go of what the pod holds. */
void agent_pod_forget(Agent *a, LcPod *p) {
        if (lc_pod_unadmit(p))
                agent_managers_pod_removed(a, p);
}

void agent_remove_unwanted(Agent *a) {
        size_t i = 0;

        while (i < a->table.n_pods) {
                LcPod *p = a->table.pods[i];

                if (p->wanted || p->busy) {
                        i++;
                        continue;
                }
                /* out of the table before the managers' pod_removed hooks,
                 * which may walk it (LcEnv.pods): a table that still held the
                 * pods freed earlier in this pass was a use-after-free when
                 * two pods went at once */
                memmove(&a->table.pods[i], &a->table.pods[i + 1], (a->table.n_pods - i - 1) * sizeof(*a->table.pods));
                a->table.n_pods--;
                unindex(a, p);
                agent_pod_forget(a, p);
                agent_keep_gone_spec(a, p);
                lc_pod_free(p);
        }
}

void agent_pods_meta_changed(Agent *a) {
        a->table.meta_generation++;
}

void agent_pods_free(Agent *a) {
        for (size_t i = 0; i < a->table.n_pods; i++)
                lc_pod_free(a->table.pods[i]);
        a->table.by_uid = cub_hashmap_free(a->table.by_uid);
        free(a->table.pods);
        a->table.pods = NULL;
        a->table.n_pods = 0;
}

/* kubelet's rejectPod: phase Failed, the reason, "Pod was rejected: " + message */
void agent_pod_reject(Agent *a, LcPod *p, const char *reason, const char *message) {
        char msg[LC_MESSAGE_MAX + 32];

        cub_log(LOG_WARNING, "pod %s/%s rejected: %s: %s", p->spec->pod->namespace_, p->spec->pod->name, reason,
                message);
        (void) snprintf(msg, sizeof(msg), "Pod was rejected: %s", message);
        lc_pod_event(p, true, reason, agent_now_usec(), "%s", msg);
        (void) agent_pod_fail(a, p, reason, msg, 0);
        lc_pod_rejected(p);
}

bool agent_pod_admit(Agent *a, LcPod *p) {
        const Pod *pod = p->spec->pod;
        LcAdmitResult res;
        size_t refused, pinned = 0;

        if (p->admitted)
                return true;
        if (pod->refused.n > 0) {
                /* a field cubelet does not implement: the pod never runs as
                 * not written (agent/pod/fields-table.c) */
                _cleanup_free_ char *msg = pod_field_notes_join(&pod->refused, NULL);

                cub_log(LOG_WARNING, "pod %s/%s refused: %s: %s", pod->namespace_, pod->name, POD_REFUSED_REASON,
                        msg ? msg : "out of memory");
                (void) agent_pod_fail(a, p, POD_REFUSED_REASON, msg ? msg : "out of memory", 0);
                return false;
        }
        refused = agent_managers_admit(a, p, &res, agent_apply_actions);
        if (refused != SIZE_MAX) {
                /* kubelet counts a failed exclusive-CPU allocation as a
                 * pinning error */
                agent_metrics_rejected(a, res.reason, res.pinning_error);
                agent_pod_reject(a, p, res.reason, res.message);
                return false;
        }
        lc_pod_admitted(p, a->decided->resources_gen);
        for (size_t k = 0; p->numa && k < p->n; k++)
                pinned += p->numa[k] != 0; /* containers given exclusive CPUs */
        agent_metrics_cpu_pinning(a, pinned);
        /* preemption victims: the sync waits for those whose stop is under way */
        agent_apply_actions(a);
        return p->n_victims == 0;
}

LcPod *agent_pod_insert(Agent *a, WorkerSpec *spec, uint64_t event_usec) {
        LcPod *p, **np;

        if (lc_pod_new(spec, &p) < 0) {
                worker_spec_unref(spec);
                return NULL;
        }
        worker_spec_unref(spec);
        lc_pod_seen(p, (int64_t) (cub_now_usec(CLOCK_REALTIME) * 1000), event_usec);
        np = realloc(a->table.pods, (a->table.n_pods + 1) * sizeof(*np));
        if (!np) {
                lc_pod_free(p);
                return NULL;
        }
        a->table.pods = np; /* (realloc may have moved it) */
        if (cub_hashmap_put(a->table.by_uid, spec->pod->uid, p) < 0) {
                lc_pod_free(p);
                return NULL;
        }
        a->table.pods[a->table.n_pods++] = p;
        cub_log(LOG_INFO, "pod %s/%s (uid %s) from '%s'", spec->pod->namespace_, spec->pod->name, spec->pod->uid,
                spec->source);
        return p;
}

void agent_pod_start(Agent *a, LcPod *p) {
        const WorkerSpec *spec = p->spec;

        /* once per pod: a rescan finds the same pod and adds nothing */
        for (size_t i = 0; i < spec->pod->warnings.n; i++) {
                _cleanup_free_ char *w = pod_field_note_format(&spec->pod->warnings.items[i], spec->source);

                if (w)
                        cub_log(LOG_WARNING, "pod %s/%s: %s", spec->pod->namespace_, spec->pod->name, w);
        }
        /* admission before any runtime call; an admitted pod has its cgroup
         * (the cgroups manager, last of the table, wrote it in its admit and
         * LC_ACTION_CGROUP_WRITTEN set latency.cgroup) and gets its sync at
         * once: the sync job finds out itself what the runtime has */
        if (!agent_pod_admit(a, p))
                return;
        if (a->core.pool)
                agent_submit_sync(a, p, agent_now_usec());
}

void agent_pod_api_terminal(Agent *a, LcPod *p) {
        const Pod *pod = p->spec->pod;

        lc_pod_api_terminal(p, pod->api_phase, pod->api_reason, pod->api_message);
        cub_log(LOG_INFO, "pod %s/%s (uid %s) is %s in the API server: not run again", pod->namespace_, pod->name,
                pod->uid, pod->api_phase);
        agent_notify_status(a);
}

bool agent_pod_fail(Agent *a, LcPod *p, const char *reason, const char *message, int64_t grace) {
        const Pod *pod = p->spec->pod;

        lc_pod_set_failed(p, reason, message, grace);
        agent_pod_forget(a, p);
        /* the pod's containers stop even while a sync job still runs: the
         * relist stops whatever that job started */
        if (a->core.pool && p->observed)
                agent_submit_kill(a, pod->uid, pod->namespace_, pod->name, p->spec->cgroup.path, grace);
        agent_notify_status(a);
        return agent_is_killing(a, pod->uid);
}

void agent_victim_stopped(Agent *a, const char *uid) {
        uint64_t now = agent_now_usec();

        for (size_t i = 0; i < a->table.n_pods; i++) {
                LcPod *p = a->table.pods[i];

                if (lc_pod_drop_victim(p, uid) && p->n_victims == 0)
                        agent_submit_sync(a, p, now);
        }
}
