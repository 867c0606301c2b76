/* SPDX-License-Identifier: Apache-2.0 */
/* The manager table's dispatch, all of it: every call from the loop into
 * the managers (agent/managers, LcManagerVtable) goes through here, in the
 * table's order (freed in reverse). The managers never see the loop: they
 * get an LcEnv and return decisions (LcAction). */
#include <errno.h>
#include <stdlib.h>

#include "../managers/managers.h"
#include "../util/log.h"
#include "agent-internal.h"

int agent_managers_new(Agent *a, CubError *err) {
        a->mgr = mgr_table(&a->n_mgr);
        a->mgr_state = calloc(a->n_mgr + 1, sizeof(void *));
        if (!a->mgr_state)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < a->n_mgr; i++) {
                int r = a->mgr[i]->new (&a->env, &a->mgr_state[i], err);

                if (r < 0)
                        return r;
        }
        return 0;
}

void agent_managers_free(Agent *a) {
        for (size_t i = a->n_mgr; a->mgr_state && i > 0; i--)
                if (a->mgr_state[i - 1])
                        a->mgr[i - 1]->free(a->mgr_state[i - 1]);
        free(a->mgr_state);
        a->mgr_state = NULL;
}

/* each hook that a manager may leave NULL, called on every manager that has it */
#define EACH(hook, ...)                                                            \
        do {                                                                       \
                for (size_t i_ = 0; i_ < a->n_mgr; i_++)                           \
                        if (a->mgr[i_]->hook)                                      \
                                a->mgr[i_]->hook(a->mgr_state[i_], ##__VA_ARGS__); \
        } while (0)

void agent_managers_start(Agent *a) {
        /* what the checkpoints hold first, then the managers' own event sources */
        EACH(restore);
        EACH(attach);
}

void agent_managers_admit_batch(Agent *a) {
        EACH(admit_batch);
}

size_t agent_managers_admit(Agent *a, LcPod *p, LcAdmitResult *ret) {
        for (size_t i = 0; i < a->n_mgr; i++) {
                CubError err = {};

                *ret = (LcAdmitResult){ .admit = true };
                if (!a->mgr[i]->admit)
                        continue;
                if (a->mgr[i]->admit(a->mgr_state[i], p, ret, &err) < 0) {
                        cub_log(LOG_ERR, "pod %s/%s: %s: %s", p->spec->pod->namespace_, p->spec->pod->name,
                                a->mgr[i]->name, err.msg);
                        (void) snprintf(ret->reason, sizeof(ret->reason), "UnexpectedAdmissionError");
                        (void) snprintf(ret->message, sizeof(ret->message), "%s", err.msg);
                        ret->admit = false;
                }
                if (!ret->admit) {
                        free(ret->numa);
                        ret->numa = NULL;
                        /* the managers before this one admitted it: they let go again */
                        for (size_t k = 0; k < i; k++)
                                if (a->mgr[k]->pod_removed)
                                        a->mgr[k]->pod_removed(a->mgr_state[k], p);
                        return i;
                }
                if (ret->numa) {
                        free(p->numa);
                        p->numa = ret->numa;
                        ret->numa = NULL;
                }
                /* what it decided (preemption victims) is in place before
                 * the next manager looks at the pod */
                agent_apply_actions(a);
        }
        *ret = (LcAdmitResult){ .admit = true };
        return SIZE_MAX;
}

int agent_managers_prepare_container(Agent *a, const LcPod *p, size_t k, LcContainerConfig *cfg, CubError *err) {
        for (size_t i = 0; i < a->n_mgr; i++) {
                int r;

                if (!a->mgr[i]->prepare_container)
                        continue;
                r = a->mgr[i]->prepare_container(a->mgr_state[i], p, k, cfg, err);
                if (r < 0)
                        return cub_err_wrap(err, "%s", a->mgr[i]->name);
        }
        return 0;
}

void agent_managers_pod_started(Agent *a, const LcPod *p) {
        EACH(pod_started, p);
}

void agent_managers_pod_removed(Agent *a, const LcPod *p) {
        EACH(pod_removed, p);
}

void agent_managers_pod_stopped(Agent *a, const char *uid) {
        EACH(pod_stopped, uid);
}

void agent_managers_pod_status(Agent *a, const LcPod *p, json_t *pod) {
        EACH(pod_status, p, pod);
}

void agent_managers_node_status(Agent *a, json_t *doc) {
        EACH(node_status, doc);
}

void agent_managers_node_resource(Agent *a, const char *resource, int64_t allocatable) {
        EACH(node_resource, resource, allocatable);
}

void agent_managers_flush(Agent *a) {
        EACH(flush);
}

void agent_managers_metrics(Agent *a, FILE *f) {
        EACH(metrics, f);
}
