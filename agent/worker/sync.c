/* SPDX-License-Identifier: Apache-2.0 */
/* The SYNC job (sandbox and containers of one pod, as its spec says) and
 * the UPDATE job (the CPU manager's cpusets of running containers). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "worker-internal.h"

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

/* kubelet's EnsureImageExists: Always pulls at every container start,
 * IfNotPresent when the image is missing, Never not at all. */
static int ensure_image(WorkerPool *p, const char *image, const char *policy, CubError *err) {
        bool present = false;
        int r;

        if (policy && strcmp(policy, "Always") == 0)
                return cri_pull_image(p->cri, image, NULL, err);
        r = cri_image_status(p->cri, image, &present, NULL, err);
        if (r < 0 || present)
                return r;
        if (policy && strcmp(policy, "Never") == 0)
                return cub_err_set(err, ENOENT,
                                   "ErrImageNeverPull: Container image \"%s\" is not present with pull "
                                   "policy of Never",
                                   image);
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
        const WorkerContainerConfig *configs; /* per container, init first; NULL = the spec's alone */
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
        const WorkerContainerConfig *mc = x->configs ? &x->configs[idx] : NULL;
        const char *cpuset = mc && mc->cpuset ? mc->cpuset : res->cpuset_cpus;
        WorkerLabels labels = {};
        const char **envs;
        size_t n_menv = 0;
        _cleanup_free_ char *log_path = NULL, *id = NULL;
        _cleanup_free_ CriDevice *devices = NULL;
        _cleanup_free_ CriMount *mounts = NULL;
        CriContainerConfig cfg;
        int r;

        if (old_id) {
                r = cri_remove_container(x->p->cri, old_id, err);
                if (r < 0)
                        return r;
        }
        r = ensure_image(x->p, c->image, c->image_pull_policy, err);
        if (r < 0)
                return cub_err_wrap(err, "container '%s': image '%s'", c->name, c->image);
        r = labels_set(&labels, err, WORKER_LABEL_MANAGED, "true", WORKER_LABEL_UID, pod->uid, WORKER_LABEL_NAME,
                       pod->name, WORKER_LABEL_NAMESPACE, pod->namespace_, WORKER_LABEL_CONTAINER, c->name,
                       WORKER_LABEL_INIT, init ? "true" : "false", NULL);
        for (size_t i = 0; r >= 0 && mc && mc->labels && mc->labels[i] && mc->labels[i + 1]; i += 2)
                r = worker_labels_add(&labels, mc->labels[i], mc->labels[i + 1]);
        if (r < 0)
                return cub_err_wrap(err, "container '%s'", c->name);
        while (mc && mc->envs && mc->envs[n_menv])
                n_menv++;
        envs = calloc(n_menv + 2 * c->n_env + 1, sizeof(char *));
        if (!envs)
                return cub_err_set(err, ENOMEM, "out of memory");
        /* the managers' first: containerd lets a later duplicate win, so the pod's own env wins */
        for (size_t i = 0; i < n_menv; i++)
                envs[i] = mc->envs[i];
        for (size_t i = 0, k = n_menv; i < c->n_env; i++) {
                envs[k++] = c->env[i].name;
                envs[k++] = c->env[i].value ? c->env[i].value : "";
        }
        if (mc && mc->n_devices > 0) {
                devices = calloc(mc->n_devices, sizeof(CriDevice));
                for (size_t i = 0; devices && i < mc->n_devices; i++)
                        devices[i] = (CriDevice){ .container_path = mc->devices[i].container_path,
                                                  .host_path = mc->devices[i].host_path,
                                                  .permissions = mc->devices[i].permissions };
        }
        if (mc && mc->n_mounts > 0) {
                mounts = calloc(mc->n_mounts, sizeof(CriMount));
                for (size_t i = 0; mounts && i < mc->n_mounts; i++)
                        mounts[i] = (CriMount){ .container_path = mc->mounts[i].container_path,
                                                .host_path = mc->mounts[i].host_path,
                                                .readonly = mc->mounts[i].readonly };
        }
        if ((mc && mc->n_devices > 0 && !devices) || (mc && mc->n_mounts > 0 && !mounts)) {
                free(envs);
                return cub_err_set(err, ENOMEM, "out of memory");
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
                .annotations = mc ? (const char *const *) mc->annotations : NULL,
                .log_path = log_path,
                .resources = cri_resources(res, cpuset),
                .mounts = mounts,
                .n_mounts = mounts ? mc->n_mounts : 0,
                .devices = devices,
                .n_devices = devices ? mc->n_devices : 0,
        };
        cfg.seccomp = seccomp_of(&c->seccomp, &pod->seccomp, &cfg.seccomp_localhost);
        r = cri_create_container(x->p->cri, x->sandbox_id, &cfg, x->sbc, &id, err);
        free(envs);
        if (r < 0)
                return cub_err_wrap(err, "container '%s': create", c->name);
        r = cri_start_container(x->p->cri, id, err);
        if (r < 0)
                return cub_err_wrap(err, "container '%s': start", c->name);
        x->containers_started_usec = worker_now_usec();
        /* probes and hooks: postStart right after StartContainer; when it
         * fails the container is killed (kubelet's FailedPostStartHook) and
         * restarted per restartPolicy */
        if (c->lifecycle.post_start_set) {
                ProbeTarget t;
                CubError herr = {};
                int64_t grace;

                worker_hook_target(c, &c->lifecycle.post_start, id, 0, &t);
                if (probe_run_hook(x->p->cri, &t, &herr) < 0) {
                        grace = worker_pre_stop(x->p, pod, c, id, pod->termination_grace_period_seconds);
                        (void) cri_stop_container(x->p->cri, id, grace, NULL);
                        return cub_err_set(err, EIO, "container '%s': PostStartHookError: %s", c->name, herr.msg);
                }
        }
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

int worker_job_sync(WorkerPool *p, WorkerJob *j, CubError *err) {
        const WorkerSpec *s = j->spec;
        const Pod *pod = s->pod;
        const char *hash = pod->config_hash ? pod->config_hash : pod->uid;
        WorkerLabels labels = {};
        _cleanup_free_ char *sandbox_id = NULL;
        CriContainer *ct = NULL;
        CriSandboxConfig sbc;
        SyncCtx x = { .p = p, .s = s, .configs = j->configs };
        uint32_t attempt = 0;
        bool have_ready = false, blocked = false;
        size_t n_ct = 0;
        const char *local;
        int r;

        j->sandbox_requested_usec = 0;
        j->containers_started_usec = 0;
        /* a driver mismatch with the runtime creates no sandbox at all */
        r = worker_pool_check_runtime(p, err);
        if (r < 0)
                return r;
        if (p->cg) {
                r = cg_writer_apply(p->cg, &s->cgroup, err);
                if (r < 0)
                        return r;
        }
        (void) snprintf(x.grace, sizeof(x.grace), "%" PRId64, pod->termination_grace_period_seconds);
        r = cg_cgroup_parent(p->cg ? cg_writer_driver(p->cg) : CG_DRIVER_CGROUPFS, s->cgroup.path, x.cgroup_parent,
                             sizeof(x.cgroup_parent), err);
        if (r < 0)
                return r;
        r = labels_set(&labels, err, WORKER_LABEL_MANAGED, "true", WORKER_LABEL_UID, pod->uid, WORKER_LABEL_NAME,
                       pod->name, WORKER_LABEL_NAMESPACE, pod->namespace_, WORKER_LABEL_HASH, hash, WORKER_LABEL_CGROUP,
                       s->cgroup.path, WORKER_LABEL_GRACE, x.grace, NULL);
        if (r < 0)
                return cub_err_wrap(err, "sandbox");

        /* keep the ready sandbox of this spec; tear down stale ones (spec changed, not ready) */
        r = worker_kill_uid(p, NULL, pod->uid, hash, pod->termination_grace_period_seconds, &attempt, &have_ready,
                            &sandbox_id, err);
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
                uint64_t sent = worker_now_usec();

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
int worker_job_update(WorkerPool *p, WorkerJob *j, CubError *err) {
        const WorkerSpec *s = j->spec;
        const Pod *pod = s->pod;
        const char *selector[] = { WORKER_LABEL_UID, pod->uid, NULL };
        CriContainer *ct = NULL;
        size_t n = 0;
        int r;

        if (!j->configs)
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
                                cpuset = j->configs[k].cpuset;
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
