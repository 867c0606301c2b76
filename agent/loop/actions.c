/* SPDX-License-Identifier: Apache-2.0 */
/* The decisions of managers, applied by the loop: pods made terminal
 * (evictions, preemption victims), node conditions (evicted pods are
 * admitted again once none is left), changed container resources. It takes
 * them from managers.c's queue, and is the one writer of AgentDecisions
 * (the node conditions, the resources generation). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/log.h"
#include "agent-internal.h"

/* Agent.decided: its view first, then the node conditions */
typedef struct Decisions {
        AgentDecisions view;
        bool conditions[_LC_CONDITION_MAX]; /* LcEnv.conditions */
} Decisions;

static Decisions *decided_of(const Agent *a) {
        return (Decisions *) a->decided;
}

int agent_decisions_init(Agent *a) {
        Decisions *d = calloc(1, sizeof(*d));

        if (!d)
                return -ENOMEM;
        d->view.resources_gen = 1;
        a->decided = &d->view;
        return 0;
}

void agent_decisions_free(Agent *a) {
        free(decided_of(a));
        a->decided = NULL;
}

const bool *agent_decided_conditions(const Agent *a) {
        return decided_of(a)->conditions;
}

void agent_pod_stopped(Agent *a, const char *uid) {
        agent_victim_stopped(a, uid);
        agent_managers_pod_stopped(a, uid);
}

/* Manifest pods only: an evicted API pod is Failed for good, as kubelet's
 * (the API server refuses a terminal phase's way back; its controller
 * makes a new pod) */
static void readmit_evicted(Agent *a) {
        uint64_t now = agent_now_usec();
        bool batch = false;

        for (size_t i = 0; i < a->table.n_pods; i++) {
                LcPod *p = a->table.pods[i];

                if (!p->evicted || !p->wanted || p->busy || !pod_is_static(p->spec->pod) ||
                    agent_is_killing(a, p->spec->pod->uid))
                        continue;
                cub_log(LOG_INFO, "pod %s/%s: the pressure is gone, admitting it again", p->spec->pod->namespace_,
                        p->spec->pod->name);
                lc_pod_reset(p);
                if (!batch) {
                        agent_managers_admit_batch(a);
                        batch = true;
                }
                if (agent_pod_admit(a, p))
                        agent_submit_sync(a, p, now);
        }
}

static void apply_fail(Agent *a, const LcAction *act) {
        LcPod *p = agent_find_pod(a, act->uid), *waiter;
        int64_t grace;

        if (!p || p->terminal) {
                agent_pod_stopped(a, act->uid);
                return;
        }
        if (act->evicted || strcmp(act->reason, "Preempted") == 0)
                agent_metrics_stopped_by(a, act->evicted, act->resource);
        grace = act->grace >= 0 ? act->grace : p->spec->pod->termination_grace_period_seconds;
        lc_pod_set_evicted(p, act->evicted);
        /* kubelet's events: the eviction or preemption, then each container's stop */
        if (act->evicted)
                lc_pod_event(p, true, "Evicted", agent_now_usec(), "%s", act->message);
        else if (strcmp(act->reason, "Preempted") == 0)
                lc_pod_event(p, true, "Preempting", agent_now_usec(), "%s", act->message);
        for (size_t k = 0; k < p->n; k++)
                if (p->statuses[k].state == LC_CONTAINER_RUNNING || p->statuses[k].state == LC_CONTAINER_CREATED)
                        lc_pod_event(p, false, "Killing", agent_now_usec(), "Stopping container %s",
                                     pod_container_at(p->spec->pod, k, NULL)->name);
        if (!agent_pod_fail(a, p, act->reason, act->message, grace)) {
                /* nothing of it runs */
                agent_pod_stopped(a, act->uid);
                return;
        }
        waiter = act->waiter[0] ? agent_find_pod(a, act->waiter) : NULL;
        if (waiter && lc_pod_add_victim(waiter, act->uid) < 0)
                cub_log(LOG_ERR, "out of memory recording a preemption victim");
}

void agent_pod_check_deadline(Agent *a, LcPod *p, uint64_t now) {
        uint64_t at = lc_pod_deadline_usec(p);
        LcAction act = { .kind = LC_ACTION_FAIL, .grace = -1 };
        static const char message[] = "Pod was active on the node longer than the specified deadline";

        if (!at || !p->wanted || !p->admitted || p->terminal || now < at)
                return;
        /* kubelet's activeDeadlineHandler: a Normal event, then the pod Failed and
         * stopped with its own grace period */
        cub_log(LOG_INFO, "pod %s/%s: active for its %" PRId64 " s deadline: stopping it", p->spec->pod->namespace_,
                p->spec->pod->name, p->active_deadline_s);
        lc_pod_event(p, false, "DeadlineExceeded", now, "%s", message);
        (void) snprintf(act.uid, sizeof(act.uid), "%s", p->spec->pod->uid);
        (void) snprintf(act.reason, sizeof(act.reason), "DeadlineExceeded");
        (void) snprintf(act.message, sizeof(act.message), "%s", message);
        apply_fail(a, &act);
}

/* probes and hooks: the container's probes said started/ready */
static void apply_probe(Agent *a, const LcAction *act) {
        LcPod *p = agent_find_pod(a, act->uid);

        if (p)
                (void) lc_pod_probe_result(p, act->container, act->container_id, act->started, act->ready,
                                           (int64_t) (cub_now_usec(CLOCK_REALTIME) / CUB_USEC_PER_SEC));
}

/* probes and hooks: a liveness or startup failure kills the container; the
 * next sync starts it again per restartPolicy */
static void apply_restart_container(Agent *a, const LcAction *act) {
        LcPod *p = agent_find_pod(a, act->uid);
        const Pod *pod;

        if (!p || p->terminal || act->container >= p->n ||
            strcmp(p->statuses[act->container].id, act->container_id) != 0)
                return;
        pod = p->spec->pod;
        cub_log(LOG_INFO, "pod %s/%s: %s", pod->namespace_, pod->name, act->message);
        lc_pod_event(p, false, "Killing", agent_now_usec(), "%s", act->message);
        lc_pod_container_killed(p, act->container, act->message);
        agent_submit_stop_container(a, p, act->container, act->container_id,
                                    act->grace >= 0 ? act->grace : pod->termination_grace_period_seconds);
}

void agent_apply_actions(Agent *a) {
        /* actions may queue more actions: take the list first */
        LcActions l;

        while (agent_managers_take_actions(a, &l)) {
                for (size_t i = 0; i < l.n; i++) {
                        const LcAction *act = &l.items[i];
                        bool any = false;

                        switch (act->kind) {
                        case LC_ACTION_FAIL:
                                apply_fail(a, act);
                                break;
                        case LC_ACTION_CONDITIONS:
                                for (int c = 0; c < _LC_CONDITION_MAX; c++) {
                                        decided_of(a)->conditions[c] = act->conditions[c];
                                        any = any || act->conditions[c];
                                }
                                if (!any)
                                        readmit_evicted(a);
                                break;
                        case LC_ACTION_RESOURCES_CHANGED:
                                a->decided->resources_gen++;
                                agent_update_resources(a);
                                break;
                        case LC_ACTION_WAIT: {
                                LcPod *w = agent_find_pod(a, act->waiter);

                                if (w && agent_is_killing(a, act->uid) && lc_pod_add_victim(w, act->uid) < 0)
                                        cub_log(LOG_ERR, "out of memory recording a pod to wait for");
                                break;
                        }
                        case LC_ACTION_PROBE:
                                apply_probe(a, act);
                                break;
                        case LC_ACTION_EVENT: {
                                LcPod *p = agent_find_pod(a, act->uid);

                                if (p)
                                        lc_pod_event(p, act->warning, act->reason, agent_now_usec(), "%s",
                                                     act->message);
                                break;
                        }
                        case LC_ACTION_RESTART_CONTAINER:
                                apply_restart_container(a, act);
                                break;
                        case LC_ACTION_HOLD: {
                                LcPod *w = agent_find_pod(a, act->waiter);
                                bool held = false;

                                for (size_t k = 0; w && k < w->n_victims; k++)
                                        held = held || strcmp(w->victims[k], act->uid) == 0;
                                if (w && !w->terminal && !held && lc_pod_add_victim(w, act->uid) < 0)
                                        cub_log(LOG_ERR, "out of memory recording a pod to wait for");
                                break;
                        }
                        case LC_ACTION_RELEASE:
                                agent_victim_stopped(a, act->uid);
                                break;
                        case LC_ACTION_REJECT: {
                                LcPod *p = agent_find_pod(a, act->uid);

                                if (p && p->admitted && !p->terminal) {
                                        agent_metrics_rejected(a, act->reason, false);
                                        agent_pod_reject(a, p, act->reason, act->message);
                                }
                                break;
                        }
                        case LC_ACTION_CGROUP_WRITTEN: {
                                LcPod *p = agent_find_pod(a, act->uid);

                                if (p)
                                        lc_pod_cgroup_written(p, act->usec);
                                break;
                        }
                        case LC_ACTION_NODE_RESOURCE:
                                agent_managers_node_resource(a, act->resource, act->quantity);
                                break;
                        default:
                                break;
                        }
                }
                lc_actions_done(&l);
        }
}
