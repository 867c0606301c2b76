/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's event loop: desired pods from the manifest directory,
 * observed pods from the runtime (relist), and the jobs that converge them. */
#include "agent.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "../cri/cri.h"
#include "agent-internal.h"
#include "api/api.h"
#include "cgroup/cgroup.h"
#include "config/podsrc.h"
#include "node.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/log.h"
#include "worker/worker.h"

uint64_t agent_now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000ULL;
}

uint64_t agent_realtime_msec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000ULL + (uint64_t) ts.tv_nsec / 1000000ULL;
}

static char *dup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

void agent_options_init(AgentOptions *o) {
        *o = (AgentOptions){ .relist_usec = USEC_PER_SEC, .rescan_usec = 20 * USEC_PER_SEC, .workers = 4 };
        pod_kubelet_config_init(&o->kc);
}

void agent_options_done(AgentOptions *o) {
        free(o->manifest_dir);
        free(o->runtime_endpoint);
        free(o->cgroup_root);
        free(o->state_dir);
        free(o->node_name);
        free(o->socket_path);
        free(o->config_path);
        pod_kubelet_config_done(&o->kc);
        *o = (AgentOptions){};
}

/* ---- pods ----------------------------------------------------------------- */

static AgentPod *agent_pod_free(AgentPod *p) {
        if (!p)
                return NULL;
        worker_spec_unref(p->spec);
        for (size_t i = 0; i < p->n_victims; i++)
                free(p->victims[i]);
        free(p->victims);
        free(p->backoff);
        free(p->statuses);
        free(p);
        return NULL;
}

AgentPod *agent_find_pod(Agent *a, const char *uid) {
        for (size_t i = 0; i < a->n_pods; i++)
                if (strcmp(a->pods[i]->spec->pod->uid, uid) == 0)
                        return a->pods[i];
        return NULL;
}

static bool is_killing(Agent *a, const char *uid) {
        for (size_t i = 0; i < a->n_killing; i++)
                if (strcmp(a->killing[i], uid) == 0)
                        return true;
        return false;
}

static void drop_killing(Agent *a, const char *uid) {
        for (size_t i = 0; i < a->n_killing; i++)
                if (strcmp(a->killing[i], uid) == 0) {
                        free(a->killing[i]);
                        a->killing[i] = a->killing[--a->n_killing];
                        return;
                }
}

static void remove_unwanted(Agent *a) {
        size_t k = 0;

        for (size_t i = 0; i < a->n_pods; i++) {
                if (!a->pods[i]->wanted && !a->pods[i]->busy) {
                        agent_admission_forget(a, a->pods[i]);
                        agent_pod_free(a->pods[i]);
                } else
                        a->pods[k++] = a->pods[i];
        }
        a->n_pods = k;
}

static void apply_qos_groups(Agent *a) {
        CgGroupValues g[3];
        int64_t burstable = 0;
        CubError err = {};

        if (!a->writer)
                return;
        for (size_t i = 0; i < a->n_pods; i++) {
                PodEffective eff;
                PodQuantity cpu;

                if (!a->pods[i]->wanted || a->pods[i]->spec->qos != POD_QOS_BURSTABLE)
                        continue;
                if (pod_effective(a->pods[i]->spec->pod, &eff, NULL) < 0)
                        continue;
                (void) pod_resource_get(&eff.requests, "cpu", &cpu);
                burstable += pod_quantity_milli(cpu);
                pod_effective_done(&eff);
        }
        cg_qos_values(burstable, &a->cg, g);
        for (int i = 0; i < 3; i++)
                if (cg_writer_apply(a->writer, &g[i], &err) < 0) {
                        cub_log(LOG_ERR, "%s", err.msg);
                        cub_err_clear(&err);
                }
}

static void set_errors(Agent *a, const PodsrcSet *set) {
        AgentError *ne = calloc(set->n + 1, sizeof(AgentError));
        size_t n = 0;

        if (!ne)
                return;
        for (size_t i = 0; i < set->n; i++) {
                bool known = false;

                if (!set->items[i].error)
                        continue;
                for (size_t k = 0; k < a->n_errors; k++)
                        if (strcmp(a->errors[k].message, set->items[i].error) == 0)
                                known = true;
                if (!known)
                        cub_log(LOG_ERR, "%s, skipping this manifest", set->items[i].error);
                ne[n].source = strdup(set->items[i].path);
                ne[n].message = strdup(set->items[i].error);
                n++;
        }
        for (size_t k = 0; k < a->n_errors; k++) {
                free(a->errors[k].source);
                free(a->errors[k].message);
        }
        free(a->errors);
        a->errors = ne;
        a->n_errors = n;
}

static void request_relist(Agent *a);
static void notify_status(Agent *a);

static void rescan(Agent *a) {
        PodsrcSet set = {};
        CubError err = {};
        bool changed = false, probed = false;

        if (podsrc_dir_scan(a->opt.manifest_dir, a->opt.node_name, &set, &err) < 0) {
                cub_log(LOG_ERR, "%s", err.msg);
                return;
        }
        for (size_t i = 0; i < a->n_pods; i++)
                a->pods[i]->wanted = false;
        /* pods that stay are known first, so that what left frees its
         * resources before new pods are admitted */
        for (size_t i = 0; i < set.n; i++) {
                AgentPod *p = set.items[i].pod ? agent_find_pod(a, set.items[i].pod->uid) : NULL;

                if (p && strcmp(p->spec->pod->config_hash, set.items[i].pod->config_hash) == 0)
                        p->wanted = true;
        }
        for (size_t i = 0; i < a->n_pods; i++)
                if (!a->pods[i]->wanted)
                        agent_admission_forget(a, a->pods[i]);
        for (size_t i = 0; i < set.n; i++) {
                PodsrcEntry *e = &set.items[i];
                AgentPod *p;
                WorkerSpec *spec;

                if (!e->pod)
                        continue;
                p = agent_find_pod(a, e->pod->uid);
                if (p && strcmp(p->spec->pod->config_hash, e->pod->config_hash) == 0) {
                        p->wanted = true;
                        continue;
                }
                if (p && p->wanted)
                        continue; /* a duplicate UID in two files: the first wins */
                if (worker_spec_new(TAKE_PTR(e->pod), e->path, &a->cg, a->log_root, &spec, &err) < 0) {
                        cub_log(LOG_ERR, "%s: %s, skipping this manifest", e->path, err.msg);
                        continue;
                }
                p = calloc(1, sizeof(*p));
                if (p) {
                        p->n = spec->pod->n_init_containers + spec->pod->n_containers;
                        p->backoff = calloc(p->n + 1, sizeof(AgentBackoff));
                        p->statuses = calloc(p->n + 1, sizeof(AgentContainerStatus));
                }
                if (!p || !p->backoff || !p->statuses) {
                        agent_pod_free(p);
                        worker_spec_unref(spec);
                        continue;
                }
                p->spec = spec;
                p->wanted = true;
                (void) snprintf(p->phase, sizeof(p->phase), "Pending");
                {
                        AgentPod **np = realloc(a->pods, (a->n_pods + 1) * sizeof(*np));
                        if (!np) {
                                agent_pod_free(p);
                                continue;
                        }
                        a->pods = np;
                        a->pods[a->n_pods++] = p;
                }
                cub_log(LOG_INFO, "pod %s/%s (uid %s) from '%s'", spec->pod->namespace_, spec->pod->name,
                        spec->pod->uid, spec->source);
                changed = true;
                /* admission before any runtime call; an admitted pod starts at
                 * once: its sync job finds out itself what the runtime has */
                if (!probed) {
                        agent_admission_probe_host(a);
                        probed = true;
                }
                if (agent_admission_admit(a, p) && a->pool)
                        agent_submit_sync(a, p, agent_now_usec());
        }
        for (size_t i = 0; i < a->n_pods; i++)
                if (!a->pods[i]->wanted) {
                        cub_log(LOG_INFO, "pod %s/%s (uid %s) is no longer wanted", a->pods[i]->spec->pod->namespace_,
                                a->pods[i]->spec->pod->name, a->pods[i]->spec->pod->uid);
                        changed = true;
                }
        remove_unwanted(a);
        set_errors(a, &set);
        podsrc_set_done(&set);
        if (changed) {
                apply_qos_groups(a);
                request_relist(a);
        }
}

/* ---- observation ---------------------------------------------------------- */

static const PodContainer *container_at(const Pod *pod, size_t k, bool *ret_init) {
        *ret_init = k < pod->n_init_containers;
        return *ret_init ? &pod->init_containers[k] : &pod->containers[k - pod->n_init_containers];
}

/* Updates back-off and status from what the runtime holds; returns whether
 * the pod needs a sync job now. */
static bool observe(Agent *a, AgentPod *p, const WorkerObserved *o, uint64_t now) {
        const Pod *pod = p->spec->pod;
        bool need = false, init_pending = false, init_failed = false;
        size_t running = 0, succeeded = 0, failed = 0, app = 0;

        (void) a;
        p->observed = o != NULL;
        if (!o || !o->ready || strcmp(o->config_hash, pod->config_hash) != 0) {
                (void) snprintf(p->phase, sizeof(p->phase), "Pending");
                for (size_t k = 0; k < p->n; k++)
                        (void) snprintf(p->statuses[k].state, sizeof(p->statuses[k].state), "Waiting");
                return true;
        }
        for (size_t k = 0; k < p->n; k++) {
                bool init;
                const PodContainer *c = container_at(pod, k, &init);
                const WorkerContainer *wc = worker_observed_container(o, c->name);
                AgentContainerStatus *st = &p->statuses[k];
                AgentBackoff *bo = &p->backoff[k];
                bool sidecar = init && pod_container_is_sidecar(c);
                bool restartable;

                if (!init)
                        app++;
                if (init_pending && !init) {
                        (void) snprintf(st->state, sizeof(st->state), "Waiting");
                        continue;
                }
                if (!wc) {
                        (void) snprintf(st->state, sizeof(st->state), "Waiting");
                        need = true;
                        if (init && !sidecar)
                                init_pending = true;
                        continue;
                }
                st->restarts = wc->attempt;
                st->waiting_backoff = false;
                (void) snprintf(st->id, sizeof(st->id), "%s", wc->id);
                if (wc->state == CRI_CONTAINER_RUNNING || wc->state == CRI_CONTAINER_CREATED) {
                        (void) snprintf(st->state, sizeof(st->state), "%s",
                                        wc->state == CRI_CONTAINER_RUNNING ? "Running" : "Created");
                        if (init && !sidecar)
                                init_pending = true;
                        if (!init)
                                running++;
                        continue;
                }
                /* ended */
                (void) snprintf(st->state, sizeof(st->state), "Terminated");
                st->exit_code = wc->exit_code;
                (void) snprintf(st->reason, sizeof(st->reason), "%s", wc->reason ? wc->reason : "");
                st->terminated_before = true;
                if (wc->finished_at != bo->seen_finished) {
                        /* a new termination: 0 s, 10 s, 20 s, ... 300 s; reset after 10 min of running */
                        bool long_run = wc->finished_at - wc->started_at > BACKOFF_RESET_NSEC;
                        uint64_t delay;

                        bo->seen_finished = wc->finished_at;
                        bo->crashes = long_run ? 1 : bo->crashes + 1;
                        delay = bo->crashes <= 1 ? 0 : BACKOFF_BASE_USEC << (bo->crashes - 2 > 5 ? 5 : bo->crashes - 2);
                        if (delay > BACKOFF_MAX_USEC)
                                delay = BACKOFF_MAX_USEC;
                        bo->next_usec = now + delay;
                        if (wc->reason && strcmp(wc->reason, "OOMKilled") == 0)
                                cub_log(LOG_WARNING, "pod %s/%s: container '%s' was OOM-killed (restart %u)",
                                        pod->namespace_, pod->name, c->name, wc->attempt);
                }
                if (init && !sidecar && wc->exit_code == 0)
                        continue;
                restartable = sidecar || worker_should_restart(pod->restart_policy, wc->exit_code);
                if (init && !sidecar) {
                        init_pending = true;
                        if (!restartable)
                                init_failed = true;
                }
                if (!init) {
                        if (wc->exit_code == 0)
                                succeeded++;
                        else
                                failed++;
                }
                if (restartable) {
                        if (now >= bo->next_usec)
                                need = true;
                        else {
                                st->waiting_backoff = true;
                                (void) snprintf(st->state, sizeof(st->state), "Waiting");
                        }
                        if (!init)
                                running++; /* restarting counts as running, as kubelet's phase does */
                }
        }
        if (init_failed)
                (void) snprintf(p->phase, sizeof(p->phase), "Failed");
        else if (init_pending)
                (void) snprintf(p->phase, sizeof(p->phase), "Pending");
        else if (running > 0)
                (void) snprintf(p->phase, sizeof(p->phase), "Running");
        else if (app > 0 && succeeded == app)
                (void) snprintf(p->phase, sizeof(p->phase), "Succeeded");
        else if (failed > 0)
                (void) snprintf(p->phase, sizeof(p->phase), "Failed");
        else
                (void) snprintf(p->phase, sizeof(p->phase), "Pending");
        return need;
}

void agent_submit_sync(Agent *a, AgentPod *p, uint64_t now) {
        WorkerJob *j;

        if (!p->admitted || p->terminal || p->n_victims > 0 || p->busy)
                return;
        j = worker_job_new(WORKER_SYNC);
        if (!j)
                return;
        j->spec = worker_spec_ref(p->spec);
        j->cpusets = agent_admission_cpusets(a, p);
        p->pool_gen = a->pool_gen;
        j->may_start = calloc(p->n + 1, sizeof(bool));
        for (size_t k = 0; j->may_start && k < p->n; k++)
                j->may_start[k] = now >= p->backoff[k].next_usec;
        p->busy = true;
        worker_pool_submit(a->pool, j);
}

static void submit_kill_uid(Agent *a, const char *uid, const char *ns, const char *name, const char *cgroup,
                            int64_t grace) {
        WorkerJob *j;
        char **nk;

        if (is_killing(a, uid))
                return;
        j = worker_job_new(WORKER_KILL);
        if (!j)
                return;
        j->uid = strdup(uid);
        j->cgroup = dup_or_null(cgroup);
        j->grace = grace;
        nk = realloc(a->killing, (a->n_killing + 1) * sizeof(char *));
        if (!j->uid || !nk || !(nk[a->n_killing] = strdup(uid))) {
                if (nk)
                        a->killing = nk;
                worker_job_free(j);
                return;
        }
        a->killing = nk;
        a->n_killing++;
        cub_log(LOG_INFO, "stopping pod %s/%s (uid %s), grace period %" PRId64 "s", ns, name, uid, grace);
        worker_pool_submit(a->pool, j);
}

static void submit_kill(Agent *a, const WorkerObserved *o) {
        submit_kill_uid(a, o->uid, o->namespace_, o->name, o->cgroup, o->grace);
}

bool agent_pod_fail(Agent *a, AgentPod *p, const char *reason, const char *message, int64_t grace) {
        const Pod *pod = p->spec->pod;

        p->terminal = true;
        p->kill_grace = grace;
        (void) snprintf(p->phase, sizeof(p->phase), "Failed");
        (void) snprintf(p->reason, sizeof(p->reason), "%s", reason);
        (void) snprintf(p->message, sizeof(p->message), "%s", message);
        agent_admission_forget(a, p);
        for (size_t k = 0; k < p->n; k++)
                if (strcmp(p->statuses[k].state, "Running") == 0 || strcmp(p->statuses[k].state, "Created") == 0)
                        (void) snprintf(p->statuses[k].state, sizeof(p->statuses[k].state), "Terminating");
        /* the pod's containers stop even while a sync job still runs: the
         * relist stops whatever that job started */
        if (a->pool && p->observed)
                submit_kill_uid(a, pod->uid, pod->namespace_, pod->name, p->spec->cgroup.path, grace);
        notify_status(a);
        return is_killing(a, pod->uid);
}

void agent_pod_reset(AgentPod *p) {
        p->terminal = p->evicted = false;
        p->reason[0] = p->message[0] = '\0';
        (void) snprintf(p->phase, sizeof(p->phase), "Pending");
        memset(p->backoff, 0, p->n * sizeof(AgentBackoff));
        memset(p->statuses, 0, p->n * sizeof(AgentContainerStatus));
}

static void notify_status(Agent *a) {
        size_t running = 0;

        for (size_t i = 0; i < a->n_pods; i++)
                if (strcmp(a->pods[i]->phase, "Running") == 0)
                        running++;
        (void) sd_notifyf(false, "STATUS=%zu pods (%zu running), %zu manifest errors%s", a->n_pods, running,
                          a->n_errors, a->runtime_ready ? "" : ", runtime unavailable");
}

static void on_relist(Agent *a, WorkerJob *j) {
        uint64_t now = agent_now_usec();

        if (j->r < 0) {
                if (a->runtime_ready || !a->runtime_known || strcmp(a->runtime_error, j->error) != 0)
                        cub_log(LOG_ERR, "runtime: %s; retrying", j->error);
                a->runtime_ready = false;
                a->runtime_known = true;
                (void) snprintf(a->runtime_error, sizeof(a->runtime_error), "%s", j->error);
                notify_status(a);
                return;
        }
        if (!a->runtime_ready && a->runtime_known)
                cub_log(LOG_INFO, "runtime '%s' is back", cri_client_endpoint(a->cri));
        a->runtime_ready = a->runtime_known = true;
        a->runtime_error[0] = '\0';

        for (size_t i = 0; i < a->n_pods; i++) {
                AgentPod *p = a->pods[i];
                const WorkerObserved *o = NULL;

                for (size_t k = 0; k < j->n_observed; k++)
                        if (strcmp(j->observed[k].uid, p->spec->pod->uid) == 0)
                                o = &j->observed[k];
                if (p->busy || !p->wanted)
                        continue;
                if (p->terminal) {
                        /* a rejected, preempted or evicted pod keeps nothing running */
                        p->observed = o != NULL;
                        if (o)
                                submit_kill_uid(a, o->uid, o->namespace_, o->name, o->cgroup, p->kill_grace);
                        continue;
                }
                if (!p->admitted)
                        continue;
                if (observe(a, p, o, now))
                        agent_submit_sync(a, p, now);
        }
        for (size_t k = 0; k < j->n_observed; k++) {
                const WorkerObserved *o = &j->observed[k];
                AgentPod *p = agent_find_pod(a, o->uid);

                if ((p && p->wanted) || is_killing(a, o->uid) || (p && p->busy))
                        continue;
                submit_kill(a, o);
        }
        agent_admission_reconcile(a);
        if (!a->notified_ready) {
                (void) sd_notify(false, "READY=1");
                a->notified_ready = true;
                cub_log(LOG_INFO, "ready: %zu pods from '%s', runtime '%s'", a->n_pods, a->opt.manifest_dir,
                        cri_client_endpoint(a->cri));
        }
        notify_status(a);
}

static void request_relist(Agent *a) {
        WorkerJob *j;

        if (a->relist_busy) {
                a->relist_again = true;
                return;
        }
        j = worker_job_new(WORKER_RELIST);
        if (!j)
                return;
        a->relist_busy = true;
        a->relist_again = false;
        worker_pool_submit(a->pool, j);
}

/* The pod a SYNC or UPDATE job was made for (its spec, not only its UID). */
static AgentPod *job_pod(Agent *a, const WorkerJob *j) {
        for (size_t i = 0; i < a->n_pods; i++)
                if (a->pods[i]->spec == j->spec)
                        return a->pods[i];
        return NULL;
}

/* A preemption victim is gone: pods waiting for it may start. */
static void victim_stopped(Agent *a, const char *uid) {
        uint64_t now = agent_now_usec();

        for (size_t i = 0; i < a->n_pods; i++) {
                AgentPod *p = a->pods[i];

                for (size_t k = 0; k < p->n_victims; k++)
                        if (strcmp(p->victims[k], uid) == 0) {
                                free(p->victims[k]);
                                p->victims[k] = p->victims[--p->n_victims];
                                if (p->n_victims == 0)
                                        agent_submit_sync(a, p, now);
                                break;
                        }
        }
}

static int on_worker(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Agent *a = userdata;
        WorkerJob *j;

        (void) s;
        (void) fd;
        (void) revents;
        j = worker_pool_take(a->pool);
        while (j) {
                WorkerJob *next = j->next;

                switch (j->kind) {
                case WORKER_RELIST:
                        a->relist_busy = false;
                        on_relist(a, j);
                        if (a->relist_again)
                                request_relist(a);
                        break;
                case WORKER_SYNC: {
                        AgentPod *p = job_pod(a, j);

                        if (!p)
                                p = agent_find_pod(a, j->spec->pod->uid);
                        if (p) {
                                p->busy = false;
                                if (j->r >= 0)
                                        agent_admission_confirm(a, p);
                                if (j->r < 0 && strcmp(p->last_error, j->error) != 0)
                                        cub_log(LOG_WARNING, "pod %s/%s: %s", j->spec->pod->namespace_,
                                                j->spec->pod->name, j->error);
                                (void) snprintf(p->last_error, sizeof(p->last_error), "%s", j->r < 0 ? j->error : "");
                        }
                        remove_unwanted(a);
                        request_relist(a);
                        break;
                }
                case WORKER_KILL:
                        drop_killing(a, j->uid);
                        if (j->r < 0)
                                cub_log(LOG_WARNING, "stopping pod uid %s: %s", j->uid, j->error);
                        else {
                                cub_log(LOG_INFO, "pod uid %s removed", j->uid);
                                victim_stopped(a, j->uid);
                                agent_pressure_stopped(a, j->uid);
                        }
                        request_relist(a);
                        break;
                case WORKER_UPDATE: {
                        AgentPod *p = job_pod(a, j);

                        if (p) {
                                p->busy = false;
                                if (j->r < 0) {
                                        p->pool_gen = 0; /* retried at the next relist */
                                        cub_log(LOG_WARNING, "pod %s/%s: %s", j->spec->pod->namespace_,
                                                j->spec->pod->name, j->error);
                                }
                        }
                        remove_unwanted(a);
                        break;
                }
                default:
                        break;
                }
                worker_job_free(j);
                j = next;
        }
        return 0;
}

static int on_relist_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Agent *a = userdata;

        (void) sd_event_source_set_time(s, usec + a->opt.relist_usec);
        request_relist(a);
        return 0;
}

static int on_rescan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Agent *a = userdata;

        (void) sd_event_source_set_time(s, usec + a->opt.rescan_usec);
        rescan(a);
        return 0;
}

static int on_debounce(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        rescan(userdata);
        return 0;
}

static int on_inotify(sd_event_source *s, const struct inotify_event *ev, void *userdata) {
        Agent *a = userdata;

        (void) s;
        if (ev->len > 0 && podsrc_ignored_name(ev->name))
                return 0;
        /* coalesce bursts (editors write, rename and chmod in a row) */
        (void) sd_event_source_set_time_relative(a->debounce_timer, 100 * 1000);
        (void) sd_event_source_set_enabled(a->debounce_timer, SD_EVENT_ONESHOT);
        return 0;
}

/* ---- status --------------------------------------------------------------- */

char *agent_status_json(Agent *a) {
        json_t *doc, *pods = json_array(), *errors = json_array();
        char *text;

        for (size_t i = 0; i < a->n_pods; i++) {
                const AgentPod *p = a->pods[i];
                const Pod *pod = p->spec->pod;
                json_t *cs = json_array();
                uint32_t restarts = 0;

                for (size_t k = 0; k < p->n; k++) {
                        bool init;
                        const PodContainer *c = container_at(pod, k, &init);
                        const AgentContainerStatus *st = &p->statuses[k];
                        json_t *cj =
                                json_pack("{s:s,s:s,s:b,s:s,s:i}", "name", c->name, "id", st->id, "init", init, "state",
                                          st->state[0] ? st->state : "Waiting", "restarts", (int) st->restarts);

                        restarts += st->restarts;
                        if (st->terminated_before)
                                json_object_set_new(
                                        cj, "lastTermination",
                                        json_pack("{s:i,s:s}", "exitCode", (int) st->exit_code, "reason", st->reason));
                        if (st->waiting_backoff)
                                json_object_set_new(cj, "waitingReason", json_string("CrashLoopBackOff"));
                        json_array_append_new(cs, cj);
                }
                {
                        json_t *pj = json_pack(
                                "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s,s:o}", "namespace", pod->namespace_, "name",
                                pod->name, "uid", pod->uid, "source", p->spec->source, "phase", p->phase, "qosClass",
                                pod_qos_to_string(p->spec->qos), "cgroup", p->spec->cgroup.path, "restarts",
                                (int) restarts, "lastError", p->last_error, "containers", cs);

                        if (pj)
                                agent_admission_status(a, pj, p);
                        json_array_append_new(pods, pj);
                }
        }
        for (size_t i = 0; i < a->n_errors; i++)
                json_array_append_new(
                        errors, json_pack("{s:s,s:s}", "source", a->errors[i].source, "message", a->errors[i].message));
        doc = json_pack("{s:s,s:{s:s,s:b,s:s,s:s},s:s,s:o,s:o}", "node", a->opt.node_name, "runtime", "endpoint",
                        cri_client_endpoint(a->cri), "ready", a->runtime_ready, "version", a->runtime_version, "error",
                        a->runtime_error, "manifestDir", a->opt.manifest_dir, "pods", pods, "errors", errors);
        if (!doc)
                return NULL;
        agent_pressure_status(a, doc);
        agent_admission_node_status(a, doc);
        text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(doc);
        return text;
}

static char *render_status(void *userdata) {
        return agent_status_json(userdata);
}

/* ---- lifecycle ------------------------------------------------------------ */

static int copy_options(AgentOptions *dst, const AgentOptions *src) {
        agent_options_init(dst);
        dst->manifest_dir = dup_or_null(src->manifest_dir);
        dst->runtime_endpoint = dup_or_null(src->runtime_endpoint);
        dst->cgroup_root = dup_or_null(src->cgroup_root);
        dst->state_dir = dup_or_null(src->state_dir);
        dst->node_name = dup_or_null(src->node_name);
        dst->socket_path = dup_or_null(src->socket_path);
        dst->relist_usec = src->relist_usec ? src->relist_usec : USEC_PER_SEC;
        dst->rescan_usec = src->rescan_usec ? src->rescan_usec : 20 * USEC_PER_SEC;
        dst->workers = src->workers ? src->workers : 4;
        dst->kc.pod_pids_limit = src->kc.pod_pids_limit;
        dst->kc.cpu_cfs_quota = src->kc.cpu_cfs_quota;
        if (!dst->manifest_dir || !dst->runtime_endpoint || !dst->cgroup_root || !dst->state_dir || !dst->node_name ||
            !dst->socket_path)
                return -ENOMEM;
        return 0;
}

int agent_new(const AgentOptions *opt, Agent **ret, CubError *err) {
        Agent *a;
        CriVersion v;
        PodQuantity q;
        int r, efd;

        a = calloc(1, sizeof(*a));
        if (!a)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = copy_options(&a->opt, opt);
        if (r < 0) {
                r = cub_err_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        a->kc = &opt->kc;
        r = agent_host_node(&a->node, err);
        if (r < 0)
                goto fail;
        cg_options_init(&a->cg);
        a->cg.enforce_cpu_limits = opt->kc.cpu_cfs_quota;
        a->cg.pod_pids_limit = opt->kc.pod_pids_limit;
        a->cg.memory_capacity = a->node.memory_capacity;
        a->cg.cpu_capacity_milli = a->node.cpu_capacity_milli;
        a->cg.kubepods_cpu_milli = a->node.cpu_capacity_milli;
        (void) pod_resource_get(&opt->kc.kube_reserved, "cpu", &q);
        a->cg.kubepods_cpu_milli -= pod_quantity_milli(q);
        (void) pod_resource_get(&opt->kc.system_reserved, "cpu", &q);
        a->cg.kubepods_cpu_milli -= pod_quantity_milli(q);
        a->cg.kubepods_memory = (int64_t) a->node.memory_capacity;
        (void) pod_resource_get(&opt->kc.kube_reserved, "memory", &q);
        a->cg.kubepods_memory -= pod_quantity_value(q);
        (void) pod_resource_get(&opt->kc.system_reserved, "memory", &q);
        a->cg.kubepods_memory -= pod_quantity_value(q);

        if (asprintf(&a->log_root, "%s/pods", a->opt.state_dir) < 0) {
                a->log_root = NULL;
                r = cub_err_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        r = cub_mkdir_p(a->opt.manifest_dir, 0755);
        if (r >= 0)
                r = cub_mkdir_p(a->log_root, 0755);
        if (r < 0) {
                r = cub_err_set(err, -r, "'%s' or '%s': %s", a->opt.manifest_dir, a->log_root, strerror(-r));
                goto fail;
        }
        r = cg_writer_new(a->opt.cgroup_root, &a->writer, err);
        if (r < 0)
                goto fail;
        /* the hard memory threshold sizes allocatable: eviction config first */
        r = agent_pressure_init(a, err);
        if (r < 0)
                goto fail;
        r = agent_admission_init(a, err);
        if (r < 0)
                goto fail;
        r = cri_client_new(a->opt.runtime_endpoint, 0, &a->cri, err);
        if (r < 0)
                goto fail;
        if (cri_version(a->cri, &v, NULL) >= 0)
                (void) snprintf(a->runtime_version, sizeof(a->runtime_version), "%s %s (CRI %s)", v.runtime_name,
                                v.runtime_version, v.runtime_api_version);
        r = worker_pool_new(a->opt.workers, a->cri, a->writer, &a->pool, &efd, err);
        if (r < 0)
                goto fail;

        r = sd_event_new(&a->event);
        if (r < 0) {
                r = cub_err_set(err, -r, "sd-event: %s", strerror(-r));
                goto fail;
        }
        (void) sd_event_add_signal(a->event, NULL, SIGTERM | SD_EVENT_SIGNAL_PROCMASK, NULL, NULL);
        (void) sd_event_add_signal(a->event, NULL, SIGINT | SD_EVENT_SIGNAL_PROCMASK, NULL, NULL);
        (void) sd_event_set_watchdog(a->event, true);
        r = sd_event_add_io(a->event, &a->worker_src, efd, EPOLLIN, on_worker, a);
        if (r >= 0)
                r = sd_event_add_inotify(a->event, &a->inotify_src, a->opt.manifest_dir,
                                         /* a file counts once it is closed after writing or renamed in:
                                          * half-written files are not read */
                                         IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB |
                                                 IN_DELETE_SELF | IN_MOVE_SELF,
                                         on_inotify, a);
        if (r >= 0)
                r = sd_event_add_time_relative(a->event, &a->relist_timer, CLOCK_MONOTONIC, a->opt.relist_usec, 0,
                                               on_relist_timer, a);
        if (r >= 0)
                r = sd_event_add_time_relative(a->event, &a->rescan_timer, CLOCK_MONOTONIC, a->opt.rescan_usec, 0,
                                               on_rescan_timer, a);
        if (r >= 0)
                r = sd_event_add_time_relative(a->event, &a->debounce_timer, CLOCK_MONOTONIC, 100 * 1000, 0,
                                               on_debounce, a);
        if (r < 0) {
                r = cub_err_set(err, -r, "event sources: %s", strerror(-r));
                goto fail;
        }
        (void) sd_event_source_set_description(a->worker_src, "workers");
        (void) sd_event_source_set_description(a->inotify_src, "manifest-dir");
        (void) sd_event_source_set_description(a->relist_timer, "relist");
        (void) sd_event_source_set_description(a->rescan_timer, "rescan");
        (void) sd_event_source_set_description(a->debounce_timer, "manifest-debounce");
        (void) sd_event_source_set_enabled(a->relist_timer, SD_EVENT_ON);
        (void) sd_event_source_set_enabled(a->rescan_timer, SD_EVENT_ON);
        (void) sd_event_source_set_enabled(a->debounce_timer, SD_EVENT_OFF);
        r = api_server_new(a->event, a->opt.socket_path, render_status, a, &a->api, err);
        if (r < 0)
                goto fail;

        apply_qos_groups(a);
        rescan(a);
        agent_admission_settle(a);
        agent_pressure_attach(a);
        request_relist(a);
        *ret = a;
        return 0;
fail:
        agent_free(a);
        return r;
}

int agent_run(Agent *a) {
        int r = sd_event_loop(a->event);

        (void) sd_notify(false, "STOPPING=1");
        return r < 0 ? r : 0;
}

Agent *agent_free(Agent *a) {
        if (!a)
                return NULL;
        a->pool = worker_pool_free(a->pool);
        a->api = api_server_free(a->api);
        agent_pressure_done(a);
        sd_event_source_disable_unref(a->worker_src);
        sd_event_source_disable_unref(a->inotify_src);
        sd_event_source_disable_unref(a->relist_timer);
        sd_event_source_disable_unref(a->rescan_timer);
        sd_event_source_disable_unref(a->debounce_timer);
        sd_event_unref(a->event);
        for (size_t i = 0; i < a->n_pods; i++)
                agent_pod_free(a->pods[i]);
        free(a->pods);
        for (size_t i = 0; i < a->n_errors; i++) {
                free(a->errors[i].source);
                free(a->errors[i].message);
        }
        free(a->errors);
        agent_admission_done(a);
        for (size_t i = 0; i < a->n_killing; i++)
                free(a->killing[i]);
        free(a->killing);
        cri_client_free(a->cri);
        cg_writer_free(a->writer);
        free(a->log_root);
        agent_options_done(&a->opt);
        free(a);
        return NULL;
}
