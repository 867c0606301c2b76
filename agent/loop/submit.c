/* SPDX-License-Identifier: Apache-2.0 */
/* What the loop asks of the worker pool: every job but the relist goes in
 * from here (a pod's sync, its containers' resources, a container's stop,
 * a pod's stop), below the pod table and its actions, which call down
 * here. The one writer of the stops (AgentStops): the kill table and the
 * specs kept for the kill jobs' preStop hooks. The results come back to
 * jobs.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/log.h"
#include "agent-internal.h"
#include "relist-plan.h"

/* ---- a pod's sync and its containers' resources ------------------------------ */

/* Each container's config, init containers first, from the managers; the
 * cpuset is always set (the spec's when no manager set one). NULL with err
 * (*ret_k: the container) when a manager could not give a container its
 * share. For a sync (containers may be created), also the env and pull
 * credentials the API server's objects give; an update needs neither. */
/* The pods being stopped: this file's object (Agent.stops), written here alone. */
struct AgentStops {
        KillTable kills; /* the pods being stopped, their retries (agent/loop/killtable.h) */
        /* probes and hooks: specs of pods that left the table while something
         * of them ran, for their kill job's preStop hooks */
        WorkerSpec **gone_specs;
        size_t n_gone_specs;
};

static WorkerContainerConfig *container_configs(Agent *a, const LcPod *p, bool sync, size_t *ret_k, CubError *err) {
        size_t n = worker_spec_containers(p->spec); /* the ephemeral containers' too */
        WorkerContainerConfig *l = calloc(n + 1, sizeof(WorkerContainerConfig));

        *ret_k = SIZE_MAX;
        if (!l) {
                (void) cub_err_set(err, ENOMEM, "out of memory");
                return NULL;
        }
        for (size_t k = 0; k < n; k++) {
                LcContainerConfig *cfg = &l[k];
                int r = agent_managers_prepare_container(a, p, k, cfg, err);

                if (r >= 0 && !cfg->cpuset)
                        cfg->cpuset =
                                strdup(k < p->spec->pod->n_init_containers
                                               ? p->spec->init_res[k].cpuset_cpus
                                               : p->spec->app_res[k - p->spec->pod->n_init_containers].cpuset_cpus);
                if (r >= 0 && !cfg->cpuset)
                        r = cub_err_set(err, ENOMEM, "out of memory");
                /* a sync's containers may be created: their env from ConfigMaps and
                 * Secrets and their pull credentials (pods of the API server) */
                if (r >= 0 && sync &&
                    agent_cluster_container_env(a, p->spec->pod, pod_container_at(p->spec->pod, k, NULL), cfg) < 0)
                        r = cub_err_set(err, ENOMEM, "out of memory");
                /* an ephemeral container's share that cannot be had fails it
                 * alone (its CreateContainerConfigError), not the pod's sync */
                if (r < 0 && k >= p->n) {
                        free(cfg->env_error);
                        cfg->env_error = strdup(err->msg);
                        *err = (CubError){};
                        r = cfg->env_error ? 0 : cub_err_set(err, ENOMEM, "out of memory");
                }
                if (r < 0) {
                        *ret_k = k;
                        worker_container_configs_free(l, n);
                        return NULL;
                }
        }
        return l;
}

void agent_submit_sync(Agent *a, LcPod *p, uint64_t now) {
        WorkerContainerConfig *configs;
        WorkerJob *j;
        CubError err = {};
        size_t k;

        if (!relist_may_sync(p, now, a->rt->network_error))
                return;
        agent_managers_flush(a);
        configs = container_configs(a, p, true, &k, &err);
        if (!configs) {
                /* no container starts without its managers' share (devices,
                 * mounts): a failed sync, retried by the sync's back-off */
                char msg[CUB_ERR_MSG_MAX + 64];

                (void) snprintf(msg, sizeof(msg), "CreateContainerConfigError: container '%s': %s",
                                k < p->n ? pod_container_at(p->spec->pod, k, NULL)->name : "-", err.msg);
                if (lc_pod_sync_refused(p, WORKER_FAIL_CONFIG, k, msg, now, cub_retry_draw()))
                        cub_log(LOG_WARNING, "pod %s/%s: %s", p->spec->pod->namespace_, p->spec->pod->name, msg);
                return;
        }
        j = worker_job_new(WORKER_SYNC);
        if (!j) {
                worker_container_configs_free(configs, worker_spec_containers(p->spec));
                return;
        }
        j->spec = worker_spec_ref(p->spec);
        j->configs = configs;
        /* p->resources_gen stays: a sync creates containers (with the configs
         * of now) and changes none that runs, so the running ones keep the
         * generation they have; and the pool may change before the sync
         * creates its containers. An older generation gets the UPDATE job
         * once the pod is idle (agent_update_resources, after each relist):
         * kubelet's reconcileState brings every running container, sidecars
         * and restarted ones included, to its current cpuset */
        j->may_start = calloc(p->n + 1, sizeof(bool));
        for (size_t i = 0; j->may_start && i < p->n; i++)
                j->may_start[i] = now >= p->backoff[i].next_usec;
        lc_pod_submitted(p, 0);
        worker_pool_submit(a->core.pool, j);
}

void agent_update_resources(Agent *a) {
        for (size_t i = 0; i < a->table.n_pods; i++) {
                LcPod *p = a->table.pods[i];
                WorkerContainerConfig *sets;
                WorkerJob *j;
                CubError err = {};
                size_t k;

                if (!p->admitted || p->terminal || p->busy || !p->observed ||
                    p->resources_gen == a->decided->resources_gen)
                        continue;
                sets = container_configs(a, p, false, &k, &err);
                j = worker_job_new(WORKER_UPDATE);
                if (!sets || !j) {
                        worker_container_configs_free(sets, worker_spec_containers(p->spec));
                        worker_job_free(j);
                        continue;
                }
                j->spec = worker_spec_ref(p->spec);
                j->configs = sets;
                lc_pod_submitted(p, a->decided->resources_gen);
                worker_pool_submit(a->core.pool, j);
        }
}

/* an in-place resize's actuation (agent/loop/resize.c): takes skip */
bool agent_submit_resize(Agent *a, LcPod *p, bool *skip) {
        WorkerContainerConfig *sets;
        WorkerJob *j;
        CubError err = {};
        size_t k;

        sets = container_configs(a, p, false, &k, &err);
        j = worker_job_new(WORKER_UPDATE);
        if (!sets || !j) {
                worker_container_configs_free(sets, worker_spec_containers(p->spec));
                worker_job_free(j);
                free(skip);
                return false;
        }
        j->spec = worker_spec_ref(p->spec);
        j->configs = sets;
        j->resize = true;
        j->skip = skip;
        lc_pod_submitted(p, a->decided->resources_gen);
        worker_pool_submit(a->core.pool, j);
        return true;
}

void agent_submit_stop_container(Agent *a, const LcPod *p, size_t k, const char *container_id, int64_t grace) {
        WorkerJob *j = worker_job_new(WORKER_STOP_CONTAINER);

        if (!j || !(j->container_id = strdup(container_id)) || !(j->uid = strdup(p->spec->pod->uid))) {
                worker_job_free(j);
                cub_log(LOG_ERR, "out of memory stopping a container");
                return;
        }
        /* the preStop httpGet hook's target (network) */
        if (*p->pod_ip && !(j->pod_ip = strdup(p->pod_ip))) {
                worker_job_free(j);
                cub_log(LOG_ERR, "out of memory stopping a container");
                return;
        }
        j->spec = worker_spec_ref(p->spec);
        j->container = k;
        j->grace = grace;
        worker_pool_submit(a->core.pool, j);
}

/* ---- the stops: the kill table and the specs kept for preStop hooks ---------- */

/* probes and hooks: a removed pod's spec stays until its kill job takes it
 * (its preStop hooks); at most GONE_SPECS_MAX */
#define GONE_SPECS_MAX 256
void agent_keep_gone_spec(Agent *a, const LcPod *p) {
        WorkerSpec **n;

        if (!p->observed || a->stops->n_gone_specs >= GONE_SPECS_MAX)
                return;
        n = realloc(a->stops->gone_specs, (a->stops->n_gone_specs + 1) * sizeof(*n));
        if (!n)
                return;
        a->stops->gone_specs = n;
        a->stops->gone_specs[a->stops->n_gone_specs++] = worker_spec_ref(p->spec);
}

/* probes and hooks: the spec of uid for its kill job's preStop hooks (a
 * reference: the table's pod's, or one kept after it left the table) */
static WorkerSpec *take_spec(Agent *a, const char *uid) {
        LcPod *p = agent_find_pod(a, uid);

        if (p)
                return worker_spec_ref(p->spec);
        for (size_t i = 0; i < a->stops->n_gone_specs; i++)
                if (strcmp(a->stops->gone_specs[i]->pod->uid, uid) == 0) {
                        WorkerSpec *s = a->stops->gone_specs[i];

                        a->stops->gone_specs[i] = a->stops->gone_specs[--a->stops->n_gone_specs];
                        return s;
                }
        return NULL;
}

bool agent_is_killing(Agent *a, const char *uid) {
        return kill_table_find(&a->stops->kills, uid) != NULL;
}

int agent_stops_init(Agent *a) {
        a->stops = calloc(1, sizeof(*a->stops));
        return a->stops ? 0 : -ENOMEM;
}

void agent_stops_free(Agent *a) {
        if (!a->stops)
                return;
        kill_table_free(&a->stops->kills);
        for (size_t i = 0; i < a->stops->n_gone_specs; i++)
                worker_spec_unref(a->stops->gone_specs[i]);
        free(a->stops->gone_specs);
        free(a->stops);
        a->stops = NULL;
}

KillTable *agent_kills(const Agent *a) {
        return &a->stops->kills;
}

size_t agent_stops_gone_specs(const Agent *a) {
        return a->stops->n_gone_specs;
}

void agent_submit_kill_entry(Agent *a, KillEntry *e, bool first) {
        WorkerJob *j = worker_job_new(WORKER_KILL);

        if (!j || !(j->uid = strdup(e->uid)) || (e->cgroup && !(j->cgroup = strdup(e->cgroup)))) {
                /* out of memory: the stop is attempted again after the policy's wait */
                worker_job_free(j);
                (void) kill_table_done(&a->stops->kills, e->uid, -ENOMEM, "out of memory", agent_now_usec(),
                                       cub_retry_draw(), NULL);
                return;
        }
        j->grace = e->grace;
        j->spec = take_spec(a, e->uid); /* probes and hooks: its preStop hooks */
        if (first)
                cub_log(LOG_INFO, "stopping pod %s/%s (uid %s), grace period %" PRId64 "s", e->namespace_, e->name,
                        e->uid, e->grace);
        worker_pool_submit(a->core.pool, j);
}

void agent_submit_kill(Agent *a, const char *uid, const char *ns, const char *name, const char *cgroup, int64_t grace) {
        bool first = false;
        KillEntry *e = kill_table_want(&a->stops->kills, uid, ns, name, cgroup, grace, agent_now_usec(), &first);

        if (e)
                agent_submit_kill_entry(a, e, first);
}

int agent_stops_plan(Agent *a, const RelistInput *in, RelistPlan *plan) {
        return relist_plan(in, &a->stops->kills, plan);
}

KillOutcome agent_stops_done(Agent *a, const WorkerJob *j, uint64_t now, unsigned *ret_attempts) {
        return kill_table_done(&a->stops->kills, j->uid, j->r, j->error, now, cub_retry_draw(), ret_attempts);
}
