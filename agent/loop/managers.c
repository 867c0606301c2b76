/* SPDX-License-Identifier: Apache-2.0 */
/* The manager table's dispatch, all of it: every call from the loop into
 * the managers (agent/managers, LcManagerVtable) goes through here, in the
 * table's order (freed in reverse). The managers never see the loop: they
 * get an LcEnv and return decisions (LcAction). The queue of the decisions
 * they take on their own (LcEnv.act) is here too, below actions.c, which
 * takes it: this file calls no other file of the loop. */
#include <errno.h>
#include <stdlib.h>

#include "../managers/managers.h"
#include "../util/cleanup.h"
#include "../util/log.h"
#include "agent-internal.h"

/* The manager table: written by managers.c alone. */
struct AgentManagers {
        LcEnv env;
        const LcManagerVtable *const *mgr;
        size_t n_mgr;
        void **mgr_state;
        LcActions actions;            /* queued by managers (LcEnv.act), taken by actions.c */
        bool restored;                /* their restore ran: the sources were ready, nothing held back */
        sd_event_source *actions_src; /* deferred: applies what they queued (agent.c's handler) */
        int64_t wall_minus_mono;      /* cub_wall_minus_mono_usec()'s kept offset */
};

static const LcPod *const *env_pods(void *loop, size_t *ret_n) {
        Agent *a = loop;

        *ret_n = a->table.n_pods;
        return (const LcPod *const *) a->table.pods;
}

/* the decisions a manager takes on its own wait here for the loop's
 * deferred event (actions_src, agent.c's handler), which applies them (actions.c) */
static void env_act(void *loop, const LcAction *act) {
        Agent *a = loop;

        if (lc_actions_push(&a->mgrs->actions, act) < 0) {
                cub_log(LOG_ERR, "out of memory queueing a decision of a manager");
                return;
        }
        (void) sd_event_source_set_enabled(a->mgrs->actions_src, SD_EVENT_ONESHOT);
}

static void env_quit(void *loop) {
        Agent *a = loop;

        (void) sd_event_exit(a->core.event, 0);
}

bool agent_managers_take_actions(Agent *a, LcActions *ret) {
        if (a->mgrs->actions.n == 0)
                return false;
        *ret = a->mgrs->actions;
        a->mgrs->actions = (LcActions){};
        return true;
}

int agent_managers_new(Agent *a, const bool *conditions, CubError *err) {
        a->mgrs = calloc(1, sizeof(*a->mgrs));
        if (!a->mgrs)
                return cub_err_set(err, ENOMEM, "out of memory");
        a->mgrs->env = (LcEnv){
                .event = a->core.event,
                .cgroup_root = a->core.opt.cgroup_root,
                .sys_root = a->core.opt.sys_root,
                .state_dir = a->core.opt.state_dir,
                .node_name = a->core.opt.node_name,
                .kc = a->core.kc,
                .cg = &a->core.cg,
                .writer = a->core.writer,
                .cri = a->core.cri,
                .conditions = conditions,
                .pods = env_pods,
                .act = env_act,
                .quit = env_quit,
                .api_files = a->core.opt.kubeconfig ? agent_cluster_api_files : NULL,
                .api_generation = a->core.opt.kubeconfig ? agent_cluster_api_generation : NULL,
                .loop = a,
        };
        a->mgrs->mgr = mgr_table(&a->mgrs->n_mgr);
        a->mgrs->mgr_state = calloc(a->mgrs->n_mgr + 1, sizeof(void *));
        if (!a->mgrs->mgr_state)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < a->mgrs->n_mgr; i++) {
                int r = a->mgrs->mgr[i]->new (&a->mgrs->env, &a->mgrs->mgr_state[i], err);

                if (r < 0)
                        return r;
        }
        return 0;
}

int agent_managers_attach_actions(Agent *a, sd_event_handler_t on_actions) {
        int r = sd_event_add_defer(a->core.event, &a->mgrs->actions_src, on_actions, a);

        if (r < 0)
                return r;
        (void) sd_event_source_set_description(a->mgrs->actions_src, "manager-actions");
        (void) sd_event_source_set_enabled(a->mgrs->actions_src, SD_EVENT_OFF);
        return 0;
}

void agent_managers_free(Agent *a) {
        if (!a->mgrs)
                return;
        a->mgrs->actions_src = sd_event_source_disable_unref(a->mgrs->actions_src);
        for (size_t i = a->mgrs->n_mgr; a->mgrs->mgr_state && i > 0; i--)
                if (a->mgrs->mgr_state[i - 1])
                        a->mgrs->mgr[i - 1]->free(a->mgrs->mgr_state[i - 1]);
        free(a->mgrs->mgr_state);
        lc_actions_done(&a->mgrs->actions);
        free(a->mgrs);
        a->mgrs = NULL;
}

const LcEnv *agent_managers_env(const Agent *a) {
        return &a->mgrs->env;
}

/* each hook that a manager may leave NULL, called on every manager that has it */
#define EACH(hook, ...)                                                                        \
        do {                                                                                   \
                for (size_t i_ = 0; a->mgrs && i_ < a->mgrs->n_mgr; i_++)                      \
                        if (a->mgrs->mgr[i_]->hook)                                            \
                                a->mgrs->mgr[i_]->hook(a->mgrs->mgr_state[i_], ##__VA_ARGS__); \
        } while (0)

void agent_managers_start(Agent *a) {
        EACH(attach);
}

void agent_managers_restore(Agent *a) {
        if (a->mgrs->restored)
                return;
        a->mgrs->restored = true;
        EACH(restore);
}

void agent_managers_admit_batch(Agent *a) {
        EACH(admit_batch);
}

size_t agent_managers_admit(Agent *a, LcPod *p, LcAdmitResult *ret, void (*apply)(Agent *a)) {
        for (size_t i = 0; i < a->mgrs->n_mgr; i++) {
                CubError err = {};

                *ret = (LcAdmitResult){ .admit = true };
                if (!a->mgrs->mgr[i]->admit)
                        continue;
                if (a->mgrs->mgr[i]->admit(a->mgrs->mgr_state[i], p, ret, &err) < 0) {
                        cub_log(LOG_ERR, "pod %s/%s: %s: %s", p->spec->pod->namespace_, p->spec->pod->name,
                                a->mgrs->mgr[i]->name, err.msg);
                        (void) snprintf(ret->reason, sizeof(ret->reason), "UnexpectedAdmissionError");
                        (void) snprintf(ret->message, sizeof(ret->message), "%s", err.msg);
                        ret->admit = false;
                }
                if (!ret->admit) {
                        free(ret->numa);
                        ret->numa = NULL;
                        /* the managers before this one admitted it: they let go again */
                        for (size_t k = 0; k < i; k++)
                                if (a->mgrs->mgr[k]->pod_removed)
                                        a->mgrs->mgr[k]->pod_removed(a->mgrs->mgr_state[k], p);
                        return i;
                }
                if (ret->numa)
                        lc_pod_set_numa(p, TAKE_PTR(ret->numa));
                /* what it decided (preemption victims) is in place before
                 * the next manager looks at the pod */
                apply(a);
        }
        *ret = (LcAdmitResult){ .admit = true };
        return SIZE_MAX;
}

int agent_managers_prepare_container(Agent *a, const LcPod *p, size_t k, LcContainerConfig *cfg, CubError *err) {
        for (size_t i = 0; i < a->mgrs->n_mgr; i++) {
                int r;

                if (!a->mgrs->mgr[i]->prepare_container)
                        continue;
                r = a->mgrs->mgr[i]->prepare_container(a->mgrs->mgr_state[i], p, k, cfg, err);
                if (r < 0)
                        return cub_err_wrap(err, "%s", a->mgrs->mgr[i]->name);
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

static void container_api_status(void *userdata, const LcPod *p, const char *container, void *json_status) {
        Agent *a = userdata;

        EACH(container_api_status, p, container, json_status);
}

void agent_api_pods_info(Agent *a, ApiPodsInfo *info) {
        *info = (ApiPodsInfo){ .node_name = a->core.opt.node_name,
                               .host_ip = a->core.node.ip[0] ? a->core.node.ip : NULL,
                               .runtime = "containerd",
                               .wall_minus_mono_usec = cub_wall_minus_mono_usec(&a->mgrs->wall_minus_mono),
                               .container_extra = container_api_status,
                               .extra_userdata = a };
        for (size_t i = 0; i < a->mgrs->n_mgr; i++)
                if (a->mgrs->mgr[i]->api_generation)
                        info->extra_generation += a->mgrs->mgr[i]->api_generation(a->mgrs->mgr_state[i]);
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

/* one manager alone judges a resize today (admission); the first that
 * refuses decides */
void agent_managers_resize(Agent *a, LcPod *p, const Pod *want, LcAdmitResult *ret) {
        *ret = (LcAdmitResult){ .admit = true };
        for (size_t i = 0; i < a->mgrs->n_mgr && ret->admit; i++) {
                CubError err = {};

                if (a->mgrs->mgr[i]->resize && a->mgrs->mgr[i]->resize(a->mgrs->mgr_state[i], p, want, ret, &err) < 0) {
                        cub_log(LOG_ERR, "pod %s/%s: resize: %s: %s", want->namespace_, want->name,
                                a->mgrs->mgr[i]->name, err.msg);
                        *ret = (LcAdmitResult){ .reason = "Deferred" };
                        (void) snprintf(ret->message, sizeof(ret->message), "%s", err.msg);
                }
        }
}

void agent_managers_pods_changed(Agent *a) {
        EACH(pods_changed);
}

bool agent_managers_terminate(Agent *a) {
        bool hold = false;

        for (size_t i = 0; i < a->mgrs->n_mgr; i++)
                if (a->mgrs->mgr[i]->terminate && a->mgrs->mgr[i]->terminate(a->mgrs->mgr_state[i]))
                        hold = true;
        return hold;
}
