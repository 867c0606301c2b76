/* SPDX-License-Identifier: Apache-2.0 */
/* Specs, jobs and the pool: the threads that run the jobs of relist.c,
 * sync.c and kill.c and hand them back through the eventfd. */
#include "worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../cpumanager/cpumanager.h"
#include "../util/cleanup.h"
#include "../util/parse.h"
#include "worker-internal.h"

/* ---- specs ---------------------------------------------------------------- */

int worker_spec_new(Pod *pod, const char *source, const CgOptions *o, const char *log_root, WorkerSpec **ret,
                    CubError *err) {
        WorkerSpec *s;
        PodEffective eff;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s) {
                pod_free(pod);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        s->ref = 1;
        s->pod = pod;
        s->qos = pod_qos_class(pod);
        r = pod_effective(pod, &eff, err);
        if (r < 0) {
                worker_spec_unref(s);
                return r;
        }
        r = cg_pod_values(pod, &eff, s->qos, o, &s->cgroup, err);
        pod_effective_done(&eff);
        if (r < 0) {
                worker_spec_unref(s);
                return r;
        }
        cpumgr_unquota_pod(pod, s->qos, o, &s->cgroup);
        s->init_res = calloc(pod->n_init_containers + 1, sizeof(CgContainerResources));
        /* the ephemeral containers' after the app containers' (worker_resources_at) */
        s->app_res = calloc(pod->n_containers + pod->n_ephemeral_containers + 1, sizeof(CgContainerResources));
        s->source = strdup(source ? source : "");
        if (asprintf(&s->log_dir, "%s/%s_%s_%s", log_root, pod->namespace_, pod->name, pod->uid) < 0)
                s->log_dir = NULL;
        if (!s->init_res || !s->app_res || !s->source || !s->log_dir) {
                worker_spec_unref(s);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < pod->n_init_containers; i++) {
                cg_container_resources(pod, s->qos, &pod->init_containers[i], o, &s->init_res[i]);
                cpumgr_unquota_container(s->qos, &pod->init_containers[i], o, &s->init_res[i]);
        }
        for (size_t i = 0; i < pod->n_containers; i++) {
                cg_container_resources(pod, s->qos, &pod->containers[i], o, &s->app_res[i]);
                cpumgr_unquota_container(s->qos, &pod->containers[i], o, &s->app_res[i]);
        }
        for (size_t i = 0; i < pod->n_ephemeral_containers; i++)
                cg_container_resources(pod, s->qos, &pod->ephemeral_containers[i], o,
                                       &s->app_res[pod->n_containers + i]);
        *ret = s;
        return 0;
}

size_t worker_spec_containers(const WorkerSpec *s) {
        return s->pod->n_init_containers + s->pod->n_containers + s->pod->n_ephemeral_containers;
}

WorkerSpec *worker_spec_ref(WorkerSpec *s) {
        if (s)
                __atomic_add_fetch(&s->ref, 1, __ATOMIC_SEQ_CST);
        return s;
}

WorkerSpec *worker_spec_unref(WorkerSpec *s) {
        if (!s || __atomic_sub_fetch(&s->ref, 1, __ATOMIC_SEQ_CST) > 0)
                return NULL;
        pod_free(s->pod);
        free(s->init_res);
        free(s->app_res);
        free(s->log_dir);
        free(s->source);
        free(s);
        return NULL;
}

/* ---- jobs ----------------------------------------------------------------- */

WorkerJob *worker_job_new(WorkerJobKind kind) {
        WorkerJob *j = calloc(1, sizeof(*j));

        if (j)
                j->kind = kind;
        return j;
}

void worker_container_done(WorkerContainer *c) {
        free(c->id);
        free(c->name);
        free(c->reason);
        free(c->devices);
        free(c->message);
}

int worker_kv_push(char ***l, const char *key, const char *value) {
        size_t n = 0;
        char **nl;

        while (*l && (*l)[n])
                n++;
        nl = realloc(*l, (n + 3) * sizeof(char *));
        if (!nl)
                return -ENOMEM;
        *l = nl;
        nl[n] = strdup(key);
        nl[n + 1] = strdup(value ? value : "");
        nl[n + 2] = NULL;
        if (!nl[n] || !nl[n + 1]) {
                free(nl[n]);
                free(nl[n + 1]);
                nl[n] = NULL;
                return -ENOMEM;
        }
        return 0;
}

void worker_container_configs_free(WorkerContainerConfig *c, size_t n) {
        for (size_t i = 0; c && i < n; i++)
                worker_container_config_done(&c[i]);
        free(c);
}

void worker_container_config_done(WorkerContainerConfig *c) {
        if (!c)
                return;
        if (c->pre_create_free && c->pre_create_ud)
                c->pre_create_free(c->pre_create_ud);
        c->pre_create_ud = NULL;
        free(c->cpuset);
        for (size_t i = 0; i < c->n_devices; i++) {
                free(c->devices[i].container_path);
                free(c->devices[i].host_path);
                free(c->devices[i].permissions);
        }
        free(c->devices);
        for (size_t i = 0; i < c->n_mounts; i++) {
                free(c->mounts[i].container_path);
                free(c->mounts[i].host_path);
        }
        free(c->mounts);
        cri_strv_free(c->envs);
        cri_strv_free(c->annotations);
        cri_strv_free(c->labels);
        cri_strv_free(c->env_from);
        cri_strv_free(c->service_env);
        for (size_t i = 0; c->env_refs && i < c->n_env_refs; i++)
                free(c->env_refs[i]);
        free(c->env_refs);
        free(c->env_error);
        for (size_t i = 0; i < c->n_pull_auths; i++) {
                free(c->pull_auths[i].username);
                free(c->pull_auths[i].password);
        }
        free(c->pull_auths);
        *c = (WorkerContainerConfig){};
}

void worker_observed_free(WorkerObserved *o, size_t n) {
        for (size_t i = 0; o && i < n; i++) {
                free(o[i].uid);
                free(o[i].name);
                free(o[i].namespace_);
                free(o[i].config_hash);
                free(o[i].cgroup);
                free(o[i].pod_ip);
                for (size_t k = 0; k < o[i].n_containers; k++)
                        worker_container_done(&o[i].containers[k]);
                free(o[i].containers);
        }
        free(o);
}

WorkerJob *worker_job_free(WorkerJob *j) {
        if (!j)
                return NULL;
        /* the configs' count comes from the spec: before the job's reference
         * goes, which may be the last one (the pod was removed meanwhile) */
        if (j->configs && j->spec)
                worker_container_configs_free(j->configs, worker_spec_containers(j->spec));
        worker_spec_unref(j->spec);
        free(j->may_start);
        free(j->skip);
        free(j->uid);
        free(j->cgroup);
        free(j->pod_ip);
        free(j->container_id);
        worker_observed_free(j->observed, j->n_observed);
        for (size_t i = 0; j->config_errors && i < j->n_config_errors; i++)
                free(j->config_errors[i]);
        free(j->config_errors);
        free(j->pulls);
        free(j);
        return NULL;
}

const WorkerContainer *worker_observed_container(const WorkerObserved *o, const char *name) {
        for (size_t i = 0; o && i < o->n_containers; i++)
                if (strcmp(o->containers[i].name, name) == 0)
                        return &o->containers[i];
        return NULL;
}

bool worker_should_restart(const char *restart_policy, int32_t exit_code) {
        if (!restart_policy || strcmp(restart_policy, "Always") == 0)
                return true;
        if (strcmp(restart_policy, "OnFailure") == 0)
                return exit_code != 0;
        return false;
}

int64_t worker_label_int(char *const *labels, const char *key, int64_t dflt) {
        const char *v = cri_kv_get(labels, key);
        int64_t x;

        if (!v || cub_safe_atoi64(v, &x) < 0)
                return dflt;
        return x;
}

int worker_labels_add(WorkerLabels *l, const char *key, const char *value) {
        if (l->n + 2 >= ELEMENTSOF(l->kv))
                return -E2BIG;
        l->kv[l->n++] = key;
        l->kv[l->n++] = value;
        l->kv[l->n] = NULL;
        return 0;
}

int worker_sandbox_kv(const PodStringMap *pod, const WorkerLabels *own, const char ***ret) {
        size_t n_own = own ? own->n : 0, k = 0;
        const char **kv = calloc(2 * (pod ? pod->n : 0) + n_own + 1, sizeof(char *));

        if (!kv)
                return -ENOMEM;
        /* the pod's own first; a key cubelet sets itself is cubelet's (kubelet's
         * newPodLabels overrides the pod's io.kubernetes.pod.* the same way) */
        for (size_t i = 0; pod && i < pod->n; i++) {
                if (own && cri_kv_get((char *const *) own->kv, pod->keys[i]))
                        continue;
                kv[k++] = pod->keys[i];
                kv[k++] = pod->values[i];
        }
        for (size_t i = 0; i < n_own; i++)
                kv[k++] = own->kv[i];
        kv[k] = NULL;
        *ret = kv;
        return 0;
}

WorkerAction worker_container_action(bool init, bool sidecar, const char *restart_policy, bool may_start, bool exists,
                                     CriContainerState state, int32_t exit_code, bool *ret_blocks) {
        /* an init container that is not a sidecar holds the rest back until it succeeded */
        bool gate = init && !sidecar;

        *ret_blocks = gate;
        if (!exists)
                return WORKER_ACTION_START;
        if (state == CRI_CONTAINER_RUNNING || state == CRI_CONTAINER_CREATED)
                return WORKER_ACTION_NONE;
        if (gate && exit_code == 0) {
                *ret_blocks = false;
                return WORKER_ACTION_NONE;
        }
        /* a failed init container follows the pod's policy; a sidecar always restarts */
        if (may_start && ((init && sidecar) || worker_should_restart(restart_policy, exit_code)))
                return WORKER_ACTION_RESTART;
        return WORKER_ACTION_NONE;
}

/* ---- the pool ------------------------------------------------------------- */

static bool is_stop(const WorkerJob *j) {
        return j->kind == WORKER_KILL || j->kind == WORKER_STOP_CONTAINER;
}

static void *worker_main(void *arg) {
        WorkerPool *p = arg;

        for (;;) {
                WorkerJob *j;
                CubError err = {};
                uint64_t one = 1;

                pthread_mutex_lock(&p->lock);
                p->n_idle++;
                while (!p->queue_head && !p->stopping)
                        pthread_cond_wait(&p->cond, &p->lock);
                p->n_idle--;
                if (!p->queue_head) {
                        pthread_mutex_unlock(&p->lock);
                        return NULL;
                }
                j = p->queue_head;
                p->queue_head = j->next;
                if (!p->queue_head)
                        p->queue_tail = NULL;
                p->n_queued--;
                p->n_stopping += is_stop(j);
                j->next = NULL;
                pthread_mutex_unlock(&p->lock);

                j->started_usec = worker_now_usec();
                switch (j->kind) {
                case WORKER_RELIST:
                        j->r = worker_job_relist(p, j, &err);
                        break;
                case WORKER_SYNC:
                        j->r = worker_job_sync(p, j, &err);
                        /* the runtime listed the sandbox ready but had lost its task (its processes
                         * killed while cubelet was down, the exit not seen yet): stopped, and the sync
                         * made again at once with a new sandbox, not after the retry's 10 s */
                        if (j->r < 0 && *j->lost_sandbox && cri_stop_pod_sandbox(p->cri, j->lost_sandbox, NULL) >= 0) {
                                err = (CubError){};
                                j->fail = WORKER_FAIL_NONE;
                                j->fail_container = SIZE_MAX;
                                j->lost_sandbox[0] = '\0';
                                j->r = worker_job_sync(p, j, &err);
                        }
                        break;
                case WORKER_KILL:
                        j->r = worker_job_kill(p, j, &err);
                        break;
                case WORKER_UPDATE:
                        j->r = worker_job_update(p, j, &err);
                        break;
                case WORKER_STOP_CONTAINER:
                        j->r = worker_job_stop_container(p, j, &err);
                        break;
                default:
                        j->r = cub_err_set(&err, EINVAL, "unknown job");
                }
                j->finished_usec = worker_now_usec();
                if (j->r < 0)
                        (void) snprintf(j->error, sizeof(j->error), "%s", err.msg);

                pthread_mutex_lock(&p->lock);
                p->n_stopping -= is_stop(j);
                if (p->done_tail)
                        p->done_tail->next = j;
                else
                        p->done_head = j;
                p->done_tail = j;
                pthread_mutex_unlock(&p->lock);
                (void) !write(p->efd, &one, sizeof(one));
        }
}

int worker_pool_check_runtime(WorkerPool *p, CubError *err) {
        _cleanup_free_ char *config = NULL;
        CubError e = {};
        int r;

        if (!p->cg || __atomic_load_n(&p->runtime_checked, __ATOMIC_ACQUIRE))
                return 0;
        r = cri_status_info(p->cri, "config", &config, &e);
        if (r < 0 && r != -EOPNOTSUPP)
                return 0; /* not reachable now: the sandbox call says so */
        if (r >= 0 && config) {
                r = cg_check_runtime(cg_writer_driver(p->cg), config, &e);
                if (r == -EINVAL) {
                        if (err)
                                *err = e;
                        return r;
                }
        }
        /* matched, or a runtime whose config does not say */
        __atomic_store_n(&p->runtime_checked, true, __ATOMIC_RELEASE);
        return 0;
}

/* A thread more, under the lock; false when none can be started. */
static bool pool_grow(WorkerPool *p) {
        if (p->n_threads >= p->max_threads || pthread_create(&p->threads[p->n_threads], NULL, worker_main, p) != 0)
                return false;
        (void) pthread_setname_np(p->threads[p->n_threads], "cub-worker");
        p->n_threads++;
        return true;
}

int worker_pool_new(unsigned n_threads, CriClient *cri, CgWriter *cg, WorkerPool **ret, int *ret_fd, CubError *err) {
        WorkerPool *p;

        p = calloc(1, sizeof(*p));
        if (!p)
                return cub_err_set(err, ENOMEM, "out of memory");
        p->cri = cri;
        p->cg = cg;
        p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        p->base_threads = n_threads;
        p->max_threads = n_threads > WORKER_POOL_MAX ? n_threads : WORKER_POOL_MAX;
        p->threads = calloc(p->max_threads, sizeof(pthread_t));
        if (p->efd < 0 || !p->threads) {
                int r = cub_err_set(err, p->efd < 0 ? errno : ENOMEM, "worker pool: %s",
                                    p->efd < 0 ? strerror(errno) : "out of memory");
                if (p->efd >= 0)
                        close(p->efd);
                free(p->threads);
                free(p);
                return r;
        }
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        pthread_mutex_lock(&p->lock);
        while (p->n_threads < n_threads && pool_grow(p))
                ;
        pthread_mutex_unlock(&p->lock);
        if (p->n_threads == 0) {
                worker_pool_free(p);
                return cub_err_set(err, EAGAIN, "worker pool: cannot start threads");
        }
        *ret = p;
        *ret_fd = p->efd;
        return 0;
}

void worker_pool_submit(WorkerPool *p, WorkerJob *j) {
        j->next = NULL;
        pthread_mutex_lock(&p->lock);
        if (j->first && p->queue_head) {
                /* the agent's first relist: READY=1 waits on it, never behind
                 * a burst of syncs (71 pods at the start under emulation: 90 s,
                 * past systemd's start timeout; the kubelet oracle saw it).
                 * Later ones queue as the rest: a relist a second ahead of
                 * every sync starves them under load */
                j->next = p->queue_head;
                p->queue_head = j;
        } else if (p->queue_tail) {
                p->queue_tail->next = j;
                p->queue_tail = j;
        } else {
                p->queue_head = p->queue_tail = j;
        }
        /* more jobs waiting than idle threads: a thread more for each stop
         * that runs or is this job (a stop sits in its grace period; up to
         * the cap), so that no pod waits on another pod's stop and a stop
         * never waits on syncs; syncs alone keep the base count (a burst
         * of pods does not start all at once under one core) */
        if (++p->n_queued > p->n_idle && p->n_threads < p->base_threads + p->n_stopping + is_stop(j) && !p->stopping)
                (void) pool_grow(p);
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->lock);
}

WorkerJob *worker_pool_take(WorkerPool *p) {
        WorkerJob *j;
        uint64_t v;

        (void) !read(p->efd, &v, sizeof(v));
        pthread_mutex_lock(&p->lock);
        j = p->done_head;
        p->done_head = p->done_tail = NULL;
        pthread_mutex_unlock(&p->lock);
        return j;
}

WorkerPool *worker_pool_free(WorkerPool *p) {
        if (!p)
                return NULL;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        /* queued jobs that never ran are dropped */
        while (p->queue_head) {
                WorkerJob *j = p->queue_head;
                p->queue_head = j->next;
                worker_job_free(j);
        }
        p->queue_tail = NULL;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 0; i < p->n_threads; i++)
                pthread_join(p->threads[i], NULL);
        while (p->done_head) {
                WorkerJob *j = p->done_head;
                p->done_head = j->next;
                worker_job_free(j);
        }
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        close(p->efd);
        free(p->threads);
        free(p->node_env.node_name);
        worker_network_done(p);
        free(p);
        return NULL;
}

int worker_pool_set_node_env(WorkerPool *p, const WorkerNodeEnv *e) {
        char *name = strdup(e->node_name ? e->node_name : "");

        if (!name)
                return -ENOMEM;
        free(p->node_env.node_name);
        p->node_env = *e;
        p->node_env.node_name = name;
        return 0;
}
