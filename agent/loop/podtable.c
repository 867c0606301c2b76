/* SPDX-License-Identifier: Apache-2.0 */
/* The pod table: pods come from the sources, go through the managers'
 * admission, get their sync, update and kill jobs, and leave. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "agent-internal.h"
#include "relist-plan.h"

LcPod *agent_find_pod(Agent *a, const char *uid) {
        return cub_hashmap_get(a->by_uid, uid);
}

/* p leaves the table: the index points to another pod of its UID, if any
 * (an edited pod whose old copy was still stopping). */
static void unindex(Agent *a, LcPod *p) {
        const char *uid = p->spec->pod->uid;

        if (!cub_hashmap_remove(a->by_uid, uid, p))
                return;
        for (size_t i = a->n_pods; i > 0; i--)
                if (a->pods[i - 1] != p && strcmp(a->pods[i - 1]->spec->pod->uid, uid) == 0) {
                        (void) cub_hashmap_put(a->by_uid, a->pods[i - 1]->spec->pod->uid, a->pods[i - 1]);
                        return;
                }
}

/* Every manager lets go of what the pod holds. */
void agent_pod_forget(Agent *a, LcPod *p) {
        if (!p->admitted)
                return;
        p->admitted = false;
        agent_managers_pod_removed(a, p);
}

/* probes and hooks: a removed pod's spec stays until its kill job takes it
 * (its preStop hooks); at most GONE_SPECS_MAX */
#define GONE_SPECS_MAX 256
static void keep_gone_spec(Agent *a, LcPod *p) {
        WorkerSpec **n;

        if (!p->observed || a->n_gone_specs >= GONE_SPECS_MAX)
                return;
        n = realloc(a->gone_specs, (a->n_gone_specs + 1) * sizeof(*n));
        if (!n)
                return;
        a->gone_specs = n;
        a->gone_specs[a->n_gone_specs++] = worker_spec_ref(p->spec);
}

WorkerSpec *agent_take_spec(Agent *a, const char *uid) {
        LcPod *p = agent_find_pod(a, uid);

        if (p)
                return worker_spec_ref(p->spec);
        for (size_t i = 0; i < a->n_gone_specs; i++)
                if (strcmp(a->gone_specs[i]->pod->uid, uid) == 0) {
                        WorkerSpec *s = a->gone_specs[i];

                        a->gone_specs[i] = a->gone_specs[--a->n_gone_specs];
                        return s;
                }
        return NULL;
}

void agent_remove_unwanted(Agent *a) {
        size_t i = 0;

        while (i < a->n_pods) {
                LcPod *p = a->pods[i];

                if (p->wanted || p->busy) {
                        i++;
                        continue;
                }
                /* out of the table before the managers' pod_removed hooks,
                 * which may walk it (LcEnv.pods): a table that still held the
                 * pods freed earlier in this pass was a use-after-free when
                 * two pods went at once */
                memmove(&a->pods[i], &a->pods[i + 1], (a->n_pods - i - 1) * sizeof(*a->pods));
                a->n_pods--;
                unindex(a, p);
                agent_pod_forget(a, p);
                keep_gone_spec(a, p);
                lc_pod_free(p);
        }
}

void agent_pods_free(Agent *a) {
        for (size_t i = 0; i < a->n_pods; i++)
                lc_pod_free(a->pods[i]);
        a->by_uid = cub_hashmap_free(a->by_uid);
        free(a->pods);
        a->pods = NULL;
        a->n_pods = 0;
        for (size_t i = 0; i < a->n_gone_specs; i++)
                worker_spec_unref(a->gone_specs[i]);
        free(a->gone_specs);
}

void agent_apply_qos_groups(Agent *a) {
        CgGroupValues g[3];
        int64_t burstable = 0;
        CubError err = {};

        if (!a->writer)
                return;
        for (size_t i = 0; i < a->n_pods; i++)
                if (a->pods[i]->wanted && a->pods[i]->spec->qos == POD_QOS_BURSTABLE)
                        burstable += a->pods[i]->cpu_request_milli;
        if (burstable == a->qos_burstable_milli)
                return; /* the QoS groups have these values */
        a->qos_burstable_milli = burstable;
        cg_qos_values(burstable, &a->cg, g);
        for (int i = 0; i < 3; i++)
                if (cg_writer_apply(a->writer, &g[i], &err) < 0) {
                        cub_log(LOG_ERR, "%s", err.msg);
                        cub_err_clear(&err);
                        a->qos_burstable_milli = -1; /* written again next time */
                }
}

/* kubelet's rejectPod: phase Failed, the reason, "Pod was rejected: " + message */
void agent_pod_reject(Agent *a, LcPod *p, const char *reason, const char *message) {
        char msg[LC_MESSAGE_MAX + 32];

        (void) api_counter_add(&a->metrics.admission_rejections, reason, 1);
        cub_log(LOG_WARNING, "pod %s/%s rejected: %s: %s", p->spec->pod->namespace_, p->spec->pod->name, reason,
                message);
        (void) snprintf(msg, sizeof(msg), "Pod was rejected: %s", message);
        lc_pod_event(p, true, reason, agent_now_usec(), "%s", msg);
        (void) agent_pod_fail(a, p, reason, msg, 0);
}

bool agent_pod_admit(Agent *a, LcPod *p) {
        const Pod *pod = p->spec->pod;
        LcAdmitResult res;
        size_t refused;

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
        refused = agent_managers_admit(a, p, &res);
        if (refused != SIZE_MAX) {
                /* kubelet counts a failed exclusive-CPU allocation as a pinning error */
                if (refused == 0 && strstr(res.message, "Allocate failed"))
                        a->metrics.cpu_pinning_requests++, a->metrics.cpu_pinning_errors++;
                agent_pod_reject(a, p, res.reason, res.message);
                return false;
        }
        p->admitted = true;
        p->resources_gen = a->resources_gen;
        for (size_t k = 0; p->numa && k < p->n; k++)
                a->metrics.cpu_pinning_requests += p->numa[k] != 0; /* containers given exclusive CPUs */
        /* preemption victims: the sync waits for those whose stop is under way */
        agent_apply_actions(a);
        return p->n_victims == 0;
}

void agent_pod_add(Agent *a, WorkerSpec *spec, uint64_t event_usec) {
        LcPod *p, **np;
        CubError err = {};

        if (lc_pod_new(spec, &p) < 0) {
                worker_spec_unref(spec);
                return;
        }
        worker_spec_unref(spec);
        np = realloc(a->pods, (a->n_pods + 1) * sizeof(*np));
        if (!np) {
                lc_pod_free(p);
                return;
        }
        if (cub_hashmap_put(a->by_uid, spec->pod->uid, p) < 0) {
                lc_pod_free(p);
                return;
        }
        a->pods = np;
        a->pods[a->n_pods++] = p;
        p->wanted = true;
        p->latency.event = event_usec;
        cub_log(LOG_INFO, "pod %s/%s (uid %s) from '%s'", spec->pod->namespace_, spec->pod->name, spec->pod->uid,
                spec->source);
        /* once per pod: a rescan finds the same pod and adds nothing */
        for (size_t i = 0; i < spec->pod->warnings.n; i++) {
                _cleanup_free_ char *w = pod_field_note_format(&spec->pod->warnings.items[i], spec->source);

                if (w)
                        cub_log(LOG_WARNING, "pod %s/%s: %s", spec->pod->namespace_, spec->pod->name, w);
        }
        /* admission before any runtime call; an admitted pod gets its cgroup
         * here and its sync at once: the sync job finds out itself what the
         * runtime has */
        if (!agent_pod_admit(a, p))
                return;
        if (a->writer) {
                if (cg_writer_apply(a->writer, &p->spec->cgroup, &err) < 0)
                        cub_log(LOG_ERR, "pod %s/%s: %s", spec->pod->namespace_, spec->pod->name, err.msg);
                else
                        p->latency.cgroup = agent_now_usec();
        }
        if (a->pool)
                agent_submit_sync(a, p, agent_now_usec());
}

/* Each container's config, init containers first, from the managers; the
 * cpuset is always set (the spec's when no manager set one). NULL with err
 * when a manager could not give a container its share. */
static WorkerContainerConfig *container_configs(Agent *a, const LcPod *p, size_t *ret_k, CubError *err) {
        WorkerContainerConfig *l = calloc(p->n + 1, sizeof(WorkerContainerConfig));

        *ret_k = SIZE_MAX;
        if (!l) {
                (void) cub_err_set(err, ENOMEM, "out of memory");
                return NULL;
        }
        for (size_t k = 0; k < p->n; k++) {
                LcContainerConfig *cfg = &l[k];
                int r = agent_managers_prepare_container(a, p, k, cfg, err);

                if (r >= 0 && !cfg->cpuset)
                        cfg->cpuset =
                                strdup(k < p->spec->pod->n_init_containers
                                               ? p->spec->init_res[k].cpuset_cpus
                                               : p->spec->app_res[k - p->spec->pod->n_init_containers].cpuset_cpus);
                if (r >= 0 && !cfg->cpuset)
                        r = cub_err_set(err, ENOMEM, "out of memory");
                if (r < 0) {
                        *ret_k = k;
                        worker_container_configs_free(l, p->n);
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

        if (!relist_may_sync(p, now, a->rt.network_error))
                return;
        agent_managers_flush(a);
        configs = container_configs(a, p, &k, &err);
        if (!configs) {
                /* no container starts without its managers' share (devices,
                 * mounts): a failed sync, retried by the sync's back-off */
                char msg[CUB_ERR_MSG_MAX + 64];

                (void) snprintf(msg, sizeof(msg), "CreateContainerConfigError: container '%s': %s",
                                k < p->n ? pod_container_at(p->spec->pod, k, NULL)->name : "-", err.msg);
                if (cub_retry_failed(&p->sync_retry, &cub_retry_pod_sync, now, msg, cub_retry_draw()))
                        cub_log(LOG_WARNING, "pod %s/%s: %s", p->spec->pod->namespace_, p->spec->pod->name, msg);
                lc_pod_sync_result(p, -EIO, WORKER_FAIL_CONFIG, k, msg, now);
                return;
        }
        j = worker_job_new(WORKER_SYNC);
        if (!j) {
                worker_container_configs_free(configs, p->n);
                return;
        }
        j->spec = worker_spec_ref(p->spec);
        j->configs = configs;
        p->resources_gen = a->resources_gen;
        j->may_start = calloc(p->n + 1, sizeof(bool));
        for (size_t i = 0; j->may_start && i < p->n; i++)
                j->may_start[i] = now >= p->backoff[i].next_usec;
        p->busy = true;
        worker_pool_submit(a->pool, j);
}

void agent_update_resources(Agent *a) {
        for (size_t i = 0; i < a->n_pods; i++) {
                LcPod *p = a->pods[i];
                WorkerContainerConfig *sets;
                WorkerJob *j;
                CubError err = {};
                size_t k;

                if (!p->admitted || p->terminal || p->busy || !p->observed || p->resources_gen == a->resources_gen)
                        continue;
                sets = container_configs(a, p, &k, &err);
                j = worker_job_new(WORKER_UPDATE);
                if (!sets || !j) {
                        worker_container_configs_free(sets, p->n);
                        worker_job_free(j);
                        continue;
                }
                j->spec = worker_spec_ref(p->spec);
                j->configs = sets;
                p->resources_gen = a->resources_gen;
                p->busy = true;
                worker_pool_submit(a->pool, j);
        }
}

bool agent_pod_fail(Agent *a, LcPod *p, const char *reason, const char *message, int64_t grace) {
        const Pod *pod = p->spec->pod;

        lc_pod_set_failed(p, reason, message, grace);
        agent_pod_forget(a, p);
        /* the pod's containers stop even while a sync job still runs: the
         * relist stops whatever that job started */
        if (a->pool && p->observed)
                agent_submit_kill(a, pod->uid, pod->namespace_, pod->name, p->spec->cgroup.path, grace);
        agent_notify_status(a);
        return agent_is_killing(a, pod->uid);
}

void agent_victim_stopped(Agent *a, const char *uid) {
        uint64_t now = agent_now_usec();

        for (size_t i = 0; i < a->n_pods; i++) {
                LcPod *p = a->pods[i];

                if (lc_pod_drop_victim(p, uid) && p->n_victims == 0)
                        agent_submit_sync(a, p, now);
        }
}
