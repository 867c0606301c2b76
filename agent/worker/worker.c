/* SPDX-License-Identifier: Apache-2.0 */
/* The pool and the three jobs: relist, sync one pod, kill one pod. */
#include "worker.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/parse.h"
#include "../util/time.h"

/* the pod's group must be empty before its rmdir: at most this long */
#define WORKER_CGROUP_EMPTY_TIMEOUT_USEC (5 * CUB_USEC_PER_SEC)

struct WorkerPool {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        WorkerJob *queue_head, *queue_tail;
        WorkerJob *done_head, *done_tail;
        bool stopping;
        pthread_t *threads;
        unsigned n_threads;
        int efd;
        CriClient *cri;
        CgWriter *cg;
};

static uint64_t now_usec(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

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
        s->init_res = calloc(pod->n_init_containers + 1, sizeof(CgContainerResources));
        s->app_res = calloc(pod->n_containers + 1, sizeof(CgContainerResources));
        s->source = strdup(source ? source : "");
        if (asprintf(&s->log_dir, "%s/%s_%s_%s", log_root, pod->namespace_, pod->name, pod->uid) < 0)
                s->log_dir = NULL;
        if (!s->init_res || !s->app_res || !s->source || !s->log_dir) {
                worker_spec_unref(s);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < pod->n_init_containers; i++)
                cg_container_resources(pod, s->qos, &pod->init_containers[i], o, &s->init_res[i]);
        for (size_t i = 0; i < pod->n_containers; i++)
                cg_container_resources(pod, s->qos, &pod->containers[i], o, &s->app_res[i]);
        *ret = s;
        return 0;
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

static void container_done(WorkerContainer *c) {
        free(c->id);
        free(c->name);
        free(c->reason);
}

void worker_observed_free(WorkerObserved *o, size_t n) {
        for (size_t i = 0; o && i < n; i++) {
                free(o[i].uid);
                free(o[i].name);
                free(o[i].namespace_);
                free(o[i].config_hash);
                free(o[i].cgroup);
                for (size_t k = 0; k < o[i].n_containers; k++)
                        container_done(&o[i].containers[k]);
                free(o[i].containers);
        }
        free(o);
}

WorkerJob *worker_job_free(WorkerJob *j) {
        if (!j)
                return NULL;
        worker_spec_unref(j->spec);
        free(j->may_start);
        if (j->cpusets && j->spec)
                for (size_t i = 0; i < j->spec->pod->n_init_containers + j->spec->pod->n_containers; i++)
                        free(j->cpusets[i]);
        free(j->cpusets);
        free(j->uid);
        free(j->cgroup);
        worker_observed_free(j->observed, j->n_observed);
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

static char *xstrdup(const char *s) {
        return strdup(s ? s : "");
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

/* Adds the NULL-terminated key/value pairs after l; -E2BIG (and err set)
 * when they do not fit. */
__attribute__((sentinel)) static int labels_set(WorkerLabels *l, CubError *err, ...) {
        const char *k;
        va_list ap;
        int r = 0;

        va_start(ap, err);
        while (r >= 0 && (k = va_arg(ap, const char *))) {
                const char *v = va_arg(ap, const char *);

                r = worker_labels_add(l, k, v);
                if (r < 0)
                        r = cub_err_set(err, E2BIG, "label '%s': more than %d labels", k, WORKER_LABELS_MAX);
        }
        va_end(ap);
        return r;
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

/* RELIST: every sandbox and container carrying cubelet's label, grouped by
 * pod UID; the latest attempt of each container, with its exit status. */
static int job_relist(WorkerPool *p, WorkerJob *j, CubError *err) {
        static const char *const selector[] = { WORKER_LABEL_MANAGED, "true", NULL };
        CriSandbox *sb = NULL;
        CriContainer *ct = NULL;
        size_t n_sb = 0, n_ct = 0;
        WorkerObserved *obs;
        size_t n_obs = 0;
        int r;

        r = cri_list_pod_sandboxes(p->cri, selector, &sb, &n_sb, err);
        if (r < 0)
                return r;
        r = cri_list_containers(p->cri, NULL, selector, &ct, &n_ct, err);
        if (r < 0) {
                cri_sandboxes_free(sb, n_sb);
                return r;
        }
        obs = calloc(n_sb + 1, sizeof(WorkerObserved));
        if (!obs) {
                r = cub_err_set(err, ENOMEM, "out of memory");
                goto out;
        }
        for (size_t i = 0; i < n_sb; i++) {
                const char *uid = cri_kv_get(sb[i].labels, WORKER_LABEL_UID);
                WorkerObserved *o = NULL;

                if (!uid)
                        continue;
                for (size_t k = 0; k < n_obs; k++)
                        if (strcmp(obs[k].uid, uid) == 0)
                                o = &obs[k];
                if (!o) {
                        o = &obs[n_obs++];
                        o->uid = xstrdup(uid);
                        o->attempt = sb[i].attempt;
                }
                if (sb[i].state == CRI_SANDBOX_READY)
                        o->ready = true;
                if (!o->config_hash || sb[i].attempt >= o->attempt) {
                        free(o->name);
                        free(o->namespace_);
                        free(o->config_hash);
                        free(o->cgroup);
                        o->name = xstrdup(cri_kv_get(sb[i].labels, WORKER_LABEL_NAME));
                        o->namespace_ = xstrdup(cri_kv_get(sb[i].labels, WORKER_LABEL_NAMESPACE));
                        o->config_hash = xstrdup(cri_kv_get(sb[i].labels, WORKER_LABEL_HASH));
                        o->cgroup = xstrdup(cri_kv_get(sb[i].labels, WORKER_LABEL_CGROUP));
                        o->grace = worker_label_int(sb[i].labels, WORKER_LABEL_GRACE, 30);
                        o->attempt = sb[i].attempt;
                }
        }
        for (size_t i = 0; i < n_ct; i++) {
                const char *uid = cri_kv_get(ct[i].labels, WORKER_LABEL_UID);
                WorkerObserved *o = NULL;
                WorkerContainer *c = NULL;

                for (size_t k = 0; uid && k < n_obs; k++)
                        if (strcmp(obs[k].uid, uid) == 0)
                                o = &obs[k];
                if (!o)
                        continue;
                for (size_t k = 0; k < o->n_containers; k++)
                        if (strcmp(o->containers[k].name, ct[i].name) == 0)
                                c = &o->containers[k];
                if (c && c->attempt > ct[i].attempt)
                        continue;
                if (!c) {
                        WorkerContainer *nc = realloc(o->containers, (o->n_containers + 1) * sizeof(*nc));
                        if (!nc) {
                                r = cub_err_set(err, ENOMEM, "out of memory");
                                goto out;
                        }
                        o->containers = nc;
                        c = &nc[o->n_containers++];
                } else
                        container_done(c);
                *c = (WorkerContainer){
                        .id = xstrdup(ct[i].id),
                        .name = xstrdup(ct[i].name),
                        .init = cri_kv_get(ct[i].labels, WORKER_LABEL_INIT) &&
                                strcmp(cri_kv_get(ct[i].labels, WORKER_LABEL_INIT), "true") == 0,
                        .attempt = ct[i].attempt,
                        .state = ct[i].state,
                        .reason = xstrdup(""),
                };
        }
        /* exit codes and reasons of the containers that ended */
        for (size_t k = 0; k < n_obs; k++)
                for (size_t i = 0; i < obs[k].n_containers; i++) {
                        WorkerContainer *c = &obs[k].containers[i];
                        CriContainerStatus st;
                        CubError e = {};

                        /* running containers need nothing more: only ended ones are asked for
                         * their exit code, reason and times (a status call per running container
                         * and relist cost a third of a CPU with 110 pods) */
                        if (c->state != CRI_CONTAINER_EXITED)
                                continue;
                        if (cri_container_status(p->cri, c->id, &st, &e) < 0)
                                continue; /* gone meanwhile: the next relist sees it */
                        c->state = st.state;
                        c->exit_code = st.exit_code;
                        c->started_at = st.started_at;
                        c->finished_at = st.finished_at;
                        free(c->reason);
                        c->reason = TAKE_PTR(st.reason);
                        cri_container_status_done(&st);
                }
        j->observed = TAKE_PTR(obs);
        j->n_observed = n_obs;
        r = 0;
out:
        worker_observed_free(obs, n_obs);
        cri_sandboxes_free(sb, n_sb);
        cri_containers_free(ct, n_ct);
        return r;
}

/* Stops and removes every container of a sandbox (grace split over them,
 * at least 2 s each, as kubelet's minimum; grace 0 is SIGKILL at once),
 * then the sandbox. */
static int teardown_sandbox(WorkerPool *p, const char *sandbox_id, int64_t grace, CubError *err) {
        CriContainer *ct = NULL;
        size_t n = 0;
        uint64_t deadline = now_usec() + (uint64_t) (grace > 0 ? grace : 0) * 1000000ULL;
        int r;

        r = cri_list_containers(p->cri, sandbox_id, NULL, &ct, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                int64_t left = (int64_t) ((deadline > now_usec() ? deadline - now_usec() : 0) / 1000000ULL);

                if (ct[i].state == CRI_CONTAINER_RUNNING || ct[i].state == CRI_CONTAINER_CREATED) {
                        /* grace 0 (a hard eviction) kills at once: the memory is needed now;
                         * otherwise at least kubelet's 2 s */
                        r = cri_stop_container(p->cri, ct[i].id, grace <= 0 ? 0 : left < 2 ? 2 : left, err);
                        if (r < 0)
                                goto out;
                }
                r = cri_remove_container(p->cri, ct[i].id, err);
                if (r < 0)
                        goto out;
        }
        r = cri_stop_pod_sandbox(p->cri, sandbox_id, err);
        if (r >= 0)
                r = cri_remove_pod_sandbox(p->cri, sandbox_id, err);
out:
        cri_containers_free(ct, n);
        return r;
}

static int kill_uid(WorkerPool *p, const char *uid, const char *keep_hash, int64_t grace, uint32_t *ret_attempt,
                    bool *ret_have_ready, char **ret_ready_id, CubError *err) {
        const char *selector[] = { WORKER_LABEL_UID, uid, NULL };
        CriSandbox *sb = NULL;
        size_t n = 0;
        int r;

        r = cri_list_pod_sandboxes(p->cri, selector, &sb, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                const char *hash = cri_kv_get(sb[i].labels, WORKER_LABEL_HASH);

                if (ret_attempt && sb[i].attempt >= *ret_attempt)
                        *ret_attempt = sb[i].attempt + 1;
                if (keep_hash && sb[i].state == CRI_SANDBOX_READY && hash && strcmp(hash, keep_hash) == 0 &&
                    !*ret_have_ready) {
                        *ret_have_ready = true;
                        *ret_ready_id = strdup(sb[i].id);
                        continue;
                }
                r = teardown_sandbox(p, sb[i].id, grace, err);
                if (r < 0)
                        break;
        }
        cri_sandboxes_free(sb, n);
        return r;
}

static int job_kill(WorkerPool *p, WorkerJob *j, CubError *err) {
        int r;

        r = kill_uid(p, j->uid, NULL, j->grace, NULL, NULL, NULL, err);
        if (r < 0)
                return r;
        /* the last tasks may still be exiting: wait for the kernel's
         * 'populated 0' in cgroup.events, then rmdir */
        if (j->cgroup && *j->cgroup && p->cg)
                r = cg_writer_remove_wait(p->cg, j->cgroup, WORKER_CGROUP_EMPTY_TIMEOUT_USEC, err);
        return r;
}

static int ensure_image(WorkerPool *p, const char *image, CubError *err) {
        bool present = false;
        int r;

        r = cri_image_status(p->cri, image, &present, NULL, err);
        if (r < 0 || present)
                return r;
        /* PullImage always contacts the registry: only when the image is missing */
        return cri_pull_image(p->cri, image, NULL, err);
}

static CriSeccompType seccomp_of(const PodSeccomp *c, const PodSeccomp *pod, const char **ret_local) {
        const PodSeccomp *s = c && c->type ? c : pod;

        *ret_local = NULL;
        if (!s || !s->type)
                return CRI_SECCOMP_UNSET;
        if (strcmp(s->type, "RuntimeDefault") == 0)
                return CRI_SECCOMP_RUNTIME_DEFAULT;
        if (strcmp(s->type, "Unconfined") == 0)
                return CRI_SECCOMP_UNCONFINED;
        *ret_local = s->localhost_profile;
        return CRI_SECCOMP_LOCALHOST;
}

typedef struct SyncCtx {
        WorkerPool *p;
        const WorkerSpec *s;
        char *const *cpusets; /* per container, init first; NULL = the spec's */
        const char *sandbox_id;
        const CriSandboxConfig *sbc;
        char grace[DECIMAL_STR_MAX(int64_t)];
        char cgroup_parent[sizeof(((CgGroupValues *) NULL)->path) + 1];
        uint64_t containers_started_usec; /* the last StartContainer that returned OK */
} SyncCtx;

/* The CRI resources of a container: the spec's, with this cpuset. */
static CriResources cri_resources(const CgContainerResources *res, const char *cpuset) {
        return (CriResources){
                .cpu_period = res->cpu_period,
                .cpu_quota = res->cpu_quota,
                .cpu_shares = res->cpu_shares,
                .memory_limit_in_bytes = res->memory_limit_in_bytes,
                .oom_score_adj = res->oom_score_adj,
                .cpuset_cpus = cpuset,
        };
}

/* The resources of the pod's container idx, in pod_container_at()'s order. */
static const CgContainerResources *resources_at(const WorkerSpec *s, size_t idx) {
        return idx < s->pod->n_init_containers ? &s->init_res[idx] : &s->app_res[idx - s->pod->n_init_containers];
}

/* Creates and starts container idx (attempt), removing old_id first. */
static int start_container(SyncCtx *x, size_t idx, uint32_t attempt, const char *old_id, CubError *err) {
        const Pod *pod = x->s->pod;
        bool init;
        const PodContainer *c = pod_container_at(pod, idx, &init);
        const CgContainerResources *res = resources_at(x->s, idx);
        const char *cpuset = x->cpusets ? x->cpusets[idx] : res->cpuset_cpus;
        WorkerLabels labels = {};
        const char **envs;
        _cleanup_free_ char *log_path = NULL, *id = NULL;
        CriContainerConfig cfg;
        int r;

        if (old_id) {
                r = cri_remove_container(x->p->cri, old_id, err);
                if (r < 0)
                        return r;
        }
        r = ensure_image(x->p, c->image, err);
        if (r < 0)
                return cub_err_wrap(err, "container '%s': image '%s'", c->name, c->image);
        r = labels_set(&labels, err, WORKER_LABEL_MANAGED, "true", WORKER_LABEL_UID, pod->uid, WORKER_LABEL_NAME,
                       pod->name, WORKER_LABEL_NAMESPACE, pod->namespace_, WORKER_LABEL_CONTAINER, c->name,
                       WORKER_LABEL_INIT, init ? "true" : "false", NULL);
        if (r < 0)
                return cub_err_wrap(err, "container '%s'", c->name);
        envs = calloc(2 * c->n_env + 1, sizeof(char *));
        if (!envs)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0, k = 0; i < c->n_env; i++) {
                envs[k++] = c->env[i].name;
                envs[k++] = c->env[i].value ? c->env[i].value : "";
        }
        if (asprintf(&log_path, "%s/%u.log", c->name, attempt) < 0)
                log_path = NULL;
        cfg = (CriContainerConfig){
                .name = c->name,
                .attempt = attempt,
                .image = c->image,
                .command = (const char *const *) c->command.items,
                .args = (const char *const *) c->args.items,
                .working_dir = c->working_dir,
                .envs = envs,
                .labels = labels.kv,
                .log_path = log_path,
                .resources = cri_resources(res, cpuset),
        };
        cfg.seccomp = seccomp_of(&c->seccomp, &pod->seccomp, &cfg.seccomp_localhost);
        r = cri_create_container(x->p->cri, x->sandbox_id, &cfg, x->sbc, &id, err);
        free(envs);
        if (r < 0)
                return cub_err_wrap(err, "container '%s': create", c->name);
        r = cri_start_container(x->p->cri, id, err);
        if (r < 0)
                return cub_err_wrap(err, "container '%s': start", c->name);
        x->containers_started_usec = now_usec();
        return 0;
}

/* One container of the pod: started when it never ran, restarted when it
 * ended and may; *ret_blocks as worker_container_action() says. */
static int sync_container(SyncCtx *x, const CriContainer *ct, size_t n_ct, size_t idx, bool may_start, bool *ret_blocks,
                          CubError *err) {
        const Pod *pod = x->s->pod;
        bool init;
        const PodContainer *c = pod_container_at(pod, idx, &init);
        bool sidecar = init && pod_container_is_sidecar(c);
        const CriContainer *latest = NULL;
        CriContainerStatus st = {};
        WorkerAction a;
        int r;

        for (size_t k = 0; k < n_ct; k++)
                if (strcmp(ct[k].name, c->name) == 0 && (!latest || ct[k].attempt > latest->attempt))
                        latest = &ct[k];
        if (!latest || latest->state == CRI_CONTAINER_RUNNING || latest->state == CRI_CONTAINER_CREATED) {
                a = worker_container_action(init, sidecar, pod->restart_policy, may_start, latest != NULL,
                                            latest ? latest->state : CRI_CONTAINER_UNKNOWN, 0, ret_blocks);
                return a == WORKER_ACTION_START ? start_container(x, idx, 0, NULL, err) : 0;
        }
        /* it ended: its exit code decides */
        r = cri_container_status(x->p->cri, latest->id, &st, err);
        if (r < 0)
                return r;
        a = worker_container_action(init, sidecar, pod->restart_policy, may_start, true, latest->state, st.exit_code,
                                    ret_blocks);
        cri_container_status_done(&st);
        if (a == WORKER_ACTION_RESTART)
                return start_container(x, idx, latest->attempt + 1, latest->id, err);
        return 0;
}

static int job_sync(WorkerPool *p, WorkerJob *j, CubError *err) {
        const WorkerSpec *s = j->spec;
        const Pod *pod = s->pod;
        const char *hash = pod->config_hash ? pod->config_hash : pod->uid;
        WorkerLabels labels = {};
        _cleanup_free_ char *sandbox_id = NULL;
        CriContainer *ct = NULL;
        CriSandboxConfig sbc;
        SyncCtx x = { .p = p, .s = s, .cpusets = j->cpusets };
        uint32_t attempt = 0;
        bool have_ready = false, blocked = false;
        size_t n_ct = 0;
        const char *local;
        int r;

        j->sandbox_requested_usec = 0;
        j->containers_started_usec = 0;
        if (p->cg) {
                r = cg_writer_apply(p->cg, &s->cgroup, err);
                if (r < 0)
                        return r;
        }
        (void) snprintf(x.grace, sizeof(x.grace), "%" PRId64, pod->termination_grace_period_seconds);
        (void) snprintf(x.cgroup_parent, sizeof(x.cgroup_parent), "/%s", s->cgroup.path);
        r = labels_set(&labels, err, WORKER_LABEL_MANAGED, "true", WORKER_LABEL_UID, pod->uid, WORKER_LABEL_NAME,
                       pod->name, WORKER_LABEL_NAMESPACE, pod->namespace_, WORKER_LABEL_HASH, hash, WORKER_LABEL_CGROUP,
                       s->cgroup.path, WORKER_LABEL_GRACE, x.grace, NULL);
        if (r < 0)
                return cub_err_wrap(err, "sandbox");

        /* keep the ready sandbox of this spec; tear down stale ones (spec changed, not ready) */
        r = kill_uid(p, pod->uid, hash, pod->termination_grace_period_seconds, &attempt, &have_ready, &sandbox_id, err);
        if (r < 0)
                return r;
        sbc = (CriSandboxConfig){
                .name = pod->name,
                .uid = pod->uid,
                .namespace_ = pod->namespace_,
                .attempt = attempt,
                .hostname = pod->name,
                .log_directory = s->log_dir,
                .labels = labels.kv,
                .annotations = NULL,
                .cgroup_parent = x.cgroup_parent,
                /* CNI arrives later: every pod shares the node's network for now */
                .host_network = true,
        };
        sbc.seccomp = seccomp_of(NULL, &pod->seccomp, &local);
        sbc.seccomp_localhost = local;
        if (!have_ready) {
                uint64_t sent = now_usec();

                r = cri_run_pod_sandbox(p->cri, &sbc, &sandbox_id, err);
                if (r < 0)
                        return cub_err_wrap(err, "sandbox");
                j->sandbox_requested_usec = sent;
        }
        x.sandbox_id = sandbox_id;
        x.sbc = &sbc;

        r = cri_list_containers(p->cri, sandbox_id, NULL, &ct, &n_ct, err);
        if (r < 0)
                return r;
        /* init containers in order, then the app containers; an init container
         * that has not succeeded yet holds back the ones after it, sidecars keep
         * running beside the rest */
        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers && !blocked; i++) {
                r = sync_container(&x, ct, n_ct, i, !j->may_start || j->may_start[i], &blocked, err);
                if (r < 0)
                        break;
        }
        cri_containers_free(ct, n_ct);
        j->containers_started_usec = x.containers_started_usec;
        return r < 0 ? r : 0;
}

/* The CPU manager's reconcile: running containers of the pod get their
 * current cpuset (the shared pool changes as exclusive pods come and go). */
static int job_update(WorkerPool *p, WorkerJob *j, CubError *err) {
        const WorkerSpec *s = j->spec;
        const Pod *pod = s->pod;
        const char *selector[] = { WORKER_LABEL_UID, pod->uid, NULL };
        CriContainer *ct = NULL;
        size_t n = 0;
        int r;

        if (!j->cpusets)
                return 0;
        r = cri_list_containers(p->cri, NULL, selector, &ct, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                const CgContainerResources *res = NULL;
                const char *cpuset = NULL;
                CriResources cr;

                if (ct[i].state != CRI_CONTAINER_RUNNING && ct[i].state != CRI_CONTAINER_CREATED)
                        continue;
                for (size_t k = 0; k < pod->n_init_containers + pod->n_containers; k++)
                        if (strcmp(pod_container_at(pod, k, NULL)->name, ct[i].name) == 0) {
                                res = resources_at(s, k);
                                cpuset = j->cpusets[k];
                        }
                if (!res || !cpuset || !*cpuset)
                        continue;
                /* containerd keeps the fields left at 0; send them all again anyway */
                cr = cri_resources(res, cpuset);
                r = cri_update_container_resources(p->cri, ct[i].id, &cr, err);
                if (r < 0) {
                        (void) cub_err_wrap(err, "container '%s': update cpuset '%s'", ct[i].name, cpuset);
                        break;
                }
        }
        cri_containers_free(ct, n);
        return r;
}

/* ---- the pool ------------------------------------------------------------- */

static void *worker_main(void *arg) {
        WorkerPool *p = arg;

        for (;;) {
                WorkerJob *j;
                CubError err = {};
                uint64_t one = 1;

                pthread_mutex_lock(&p->lock);
                while (!p->queue_head && !p->stopping)
                        pthread_cond_wait(&p->cond, &p->lock);
                if (!p->queue_head) {
                        pthread_mutex_unlock(&p->lock);
                        return NULL;
                }
                j = p->queue_head;
                p->queue_head = j->next;
                if (!p->queue_head)
                        p->queue_tail = NULL;
                j->next = NULL;
                pthread_mutex_unlock(&p->lock);

                j->started_usec = now_usec();
                switch (j->kind) {
                case WORKER_RELIST:
                        j->r = job_relist(p, j, &err);
                        break;
                case WORKER_SYNC:
                        j->r = job_sync(p, j, &err);
                        break;
                case WORKER_KILL:
                        j->r = job_kill(p, j, &err);
                        break;
                case WORKER_UPDATE:
                        j->r = job_update(p, j, &err);
                        break;
                default:
                        j->r = cub_err_set(&err, EINVAL, "unknown job");
                }
                j->finished_usec = now_usec();
                if (j->r < 0)
                        (void) snprintf(j->error, sizeof(j->error), "%s", err.msg);

                pthread_mutex_lock(&p->lock);
                if (p->done_tail)
                        p->done_tail->next = j;
                else
                        p->done_head = j;
                p->done_tail = j;
                pthread_mutex_unlock(&p->lock);
                (void) !write(p->efd, &one, sizeof(one));
        }
}

int worker_pool_new(unsigned n_threads, CriClient *cri, CgWriter *cg, WorkerPool **ret, int *ret_fd, CubError *err) {
        WorkerPool *p;

        p = calloc(1, sizeof(*p));
        if (!p)
                return cub_err_set(err, ENOMEM, "out of memory");
        p->cri = cri;
        p->cg = cg;
        p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        p->threads = calloc(n_threads, sizeof(pthread_t));
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
        for (unsigned i = 0; i < n_threads; i++) {
                if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0)
                        break;
                p->n_threads++;
        }
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
        if (p->queue_tail)
                p->queue_tail->next = j;
        else
                p->queue_head = j;
        p->queue_tail = j;
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
        free(p);
        return NULL;
}
