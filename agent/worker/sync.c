/* SPDX-License-Identifier: Apache-2.0 */
/* The SYNC job (sandbox and containers of one pod, as its spec says) and
 * the UPDATE job (the CPU manager's cpusets of running containers). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include "../util/cleanup.h"
#include "../util/log.h"
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

typedef struct SyncCtx {
        WorkerPool *p;
        const WorkerSpec *s;
        const WorkerContainerConfig *configs; /* per container, init first; NULL = the spec's alone */
        const char *sandbox_id;
        const CriSandboxConfig *sbc;
        char grace[DECIMAL_STR_MAX(int64_t)];
        char cgroup_parent[sizeof(((CgGroupValues *) NULL)->path) + 1];
        uint64_t containers_started_usec; /* the last StartContainer that returned OK */
        WorkerJob *j;                     /* security context: its config_errors */
        bool config_error;                /* the last start_container() failed so */
        const char *pod_ip;               /* the sandbox's primary IP (network); NULL = unknown → "" */
        const CriContainer *ct;           /* the sandbox's containers (an ephemeral container's target) */
        size_t n_ct;
        /* env sources: the host's addresses, read once per sync */
        char host_ip[INET6_ADDRSTRLEN];
        char host_ips[WORKER_HOST_IPS_MAX];
        const char *hosts_path; /* network: the pod's /etc/hosts, NULL = none mounted */
        /* what the sync is at, for its typed failure (WorkerJob.fail) */
        WorkerFailKind stage;
        size_t stage_container; /* SIZE_MAX: the pod */
} SyncCtx;

/* The sync's first failure, typed (r < 0): what kubelet's reasons and
 * events are made of. Returns r. */
static int failed_at(WorkerJob *j, WorkerFailKind kind, size_t idx, int r) {
        if (r < 0 && j->fail == WORKER_FAIL_NONE) {
                j->fail = kind;
                j->fail_container = idx;
        }
        return r;
}

/* security context: a container that cannot be created as its spec says
 * (CreateContainerConfigError): noted for its status; the others go on */
static int config_error(SyncCtx *x, size_t idx, const char *name, const char *msg, CubError *err) {
        WorkerJob *j = x->j;
        size_t n = worker_spec_containers(x->s);

        if (!j->config_errors) {
                j->config_errors = calloc(n, sizeof(char *));
                if (!j->config_errors)
                        return cub_err_set(err, ENOMEM, "out of memory");
                j->n_config_errors = n;
        }
        free(j->config_errors[idx]);
        j->config_errors[idx] = strdup(msg);
        if (!j->config_errors[idx])
                return cub_err_set(err, ENOMEM, "out of memory");
        x->config_error = true;
        return cub_err_set(err, EPERM, "container '%s': %s: %s", name, POD_CONFIG_ERROR_REASON, msg);
}

/* security context: LinuxContainerSecurityContext as kubelet's
 * determineEffectiveSecurityContext fills it; the image's user when the pod
 * names none; runAsNonRoot checked against it */
static int security_config(SyncCtx *x, size_t idx, const PodContainer *c, CriContainerConfig *cfg, char **ret_username,
                           int64_t **ret_groups, CriSELinux *selinux, CubError *err) {
        const Pod *pod = x->s->pod;
        PodSecurity eff;
        bool uid_set;
        int64_t uid;
        char msg[512];
        int r;

        r = cri_image_user(x->p->cri, c->image, &uid_set, &uid, ret_username, err);
        if (r < 0)
                return cub_err_wrap(err, "container '%s': image '%s'", c->name, c->image);
        if (pod_security_check_non_root(pod, c, uid_set, uid, *ret_username, msg, sizeof(msg)) < 0)
                return config_error(x, idx, c->name, msg, err);
        pod_security_effective(pod, c, &eff);
        cfg->privileged = eff.privileged_set && eff.privileged;
        cfg->cap_add = eff.cap_add.n > 0 ? (const char *const *) eff.cap_add.items : NULL;
        cfg->cap_drop = eff.cap_drop.n > 0 ? (const char *const *) eff.cap_drop.items : NULL;
        if (eff.run_as_user_set) {
                cfg->run_as_user_set = true;
                cfg->run_as_user = eff.run_as_user;
        } else if (uid_set || !*ret_username) {
                /* kubelet's getImageUser: no user at all is uid 0 */
                cfg->run_as_user_set = true;
                cfg->run_as_user = uid_set ? uid : 0;
        } else
                cfg->run_as_username = *ret_username;
        cfg->run_as_group_set = eff.run_as_group_set;
        cfg->run_as_group = eff.run_as_group;
        cfg->readonly_rootfs = eff.read_only_root_fs_set && eff.read_only_root_fs;
        if (worker_pod_groups(pod, ret_groups, &cfg->n_supplemental_groups) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        cfg->supplemental_groups = *ret_groups;
        cfg->no_new_privs = pod_security_no_new_privs(&eff);
        cfg->proc_unmasked = eff.proc_mount && strcmp(eff.proc_mount, "Unmasked") == 0;
        cfg->selinux = worker_selinux_of(&eff.selinux, selinux);
        return 0;
}

/* The CRI resources of a container: the spec's, with this cpuset. The unified map, in kv (it points into res), is
 * cg_container_unified()'s: memory.oom.group, and memory.swap.max, memory.min, memory.high when set. */
CriResources worker_cri_resources(const CgContainerResources *res, const char *cpuset,
                                  const char *kv[static CG_UNIFIED_KV_MAX]) {
        (void) cg_container_unified(res, kv);
        return (CriResources){
                .unified = kv,
                .cpu_period = res->cpu_period,
                .cpu_quota = res->cpu_quota,
                .cpu_shares = res->cpu_shares,
                .memory_limit_in_bytes = res->memory_limit_in_bytes,
                .memory_swap_limit_in_bytes = res->memory_swap_limit_in_bytes,
                .oom_score_adj = res->oom_score_adj,
                .cpuset_cpus = cpuset,
        };
}

/* The resources of the pod's container idx, in pod_container_at()'s order. */
const CgContainerResources *worker_resources_at(const WorkerSpec *s, size_t idx) {
        return idx < s->pod->n_init_containers ? &s->init_res[idx] : &s->app_res[idx - s->pod->n_init_containers];
}

static void pod_env_strvp(char ***l) {
        pod_env_strv_free(*l);
}

static bool mounts_have(const CriMount *m, size_t n, const char *container_path) {
        for (size_t i = 0; i < n; i++)
                if (m[i].container_path && strcmp(m[i].container_path, container_path) == 0)
                        return true;
        return false;
}

/* Creates and starts container idx (attempt), removing old_id first. */
static int start_container(SyncCtx *x, size_t idx, uint32_t attempt, const char *old_id, CubError *err) {
        const Pod *pod = x->s->pod;
        bool init;
        const PodContainer *c = pod_container_at(pod, idx, &init);
        const CgContainerResources *res = worker_resources_at(x->s, idx);
        const WorkerContainerConfig *mc = x->configs ? &x->configs[idx] : NULL;
        const char *cpuset = mc && mc->cpuset ? mc->cpuset : res->cpuset_cpus;
        WorkerLabels labels = {};
        const char **envs;
        size_t n_menv = 0, n_penv = 0, n_mounts;
        _cleanup_free_ char *log_path = NULL, *id = NULL, *username = NULL, *image_ref = NULL, *term_file = NULL;
        _cleanup_(pod_env_strvp) char **pod_env = NULL, **command = NULL, **args = NULL;
        _cleanup_free_ CriDevice *devices = NULL;
        _cleanup_free_ CriMount *mounts = NULL;
        _cleanup_free_ int64_t *groups = NULL;
        char seccomp_path[PATH_MAX];
        CriContainerConfig cfg;
        CriSELinux selinux;
        const char *unified[CG_UNIFIED_KV_MAX];
        int r;

        x->stage = WORKER_FAIL_CREATE;
        x->stage_container = idx;
        if (old_id) {
                r = cri_remove_container(x->p->cri, old_id, err);
                if (r < 0)
                        return r;
        }
        r = worker_ensure_image(x->p, x->j, idx, c->image, c->image_pull_policy, mc ? mc->pull_auths : NULL,
                                mc ? mc->n_pull_auths : 0, &x->stage, &image_ref, err);
        if (r < 0)
                return cub_err_wrap(err, "container '%s': image '%s'", c->name, c->image);
        x->stage = WORKER_FAIL_CREATE;
        r = labels_set(&labels, err, WORKER_LABEL_MANAGED, "true", WORKER_LABEL_UID, pod->uid, WORKER_LABEL_NAME,
                       pod->name, WORKER_LABEL_NAMESPACE, pod->namespace_, WORKER_LABEL_CONTAINER, c->name,
                       WORKER_LABEL_INIT, init ? "true" : "false", WORKER_LABEL_K8S_POD_NAME, pod->name,
                       WORKER_LABEL_K8S_POD_NAMESPACE, pod->namespace_, WORKER_LABEL_K8S_POD_UID, pod->uid,
                       WORKER_LABEL_K8S_CONTAINER_NAME, c->name, NULL);
        for (size_t i = 0; r >= 0 && mc && mc->labels && mc->labels[i] && mc->labels[i + 1]; i += 2)
                r = worker_labels_add(&labels, mc->labels[i], mc->labels[i + 1]);
        /* termination messages: the container's own file (kubelet's makeMounts: a file that
         * cannot be made costs the message, not the container) */
        if (r >= 0 && c->termination_message_path && *c->termination_message_path && x->p->pods_dir) {
                CubError e = {};

                if (worker_term_file(x->p->pods_dir, pod->uid, c->name, &term_file, &e) < 0)
                        cub_log(LOG_WARNING, "pod %s/%s: container '%s': %s", pod->namespace_, pod->name, c->name,
                                e.msg);
                else
                        r = worker_labels_add(&labels, WORKER_LABEL_TERM_FILE, term_file);
        }
        if (r >= 0 && c->termination_message_policy &&
            strcmp(c->termination_message_policy, "FallbackToLogsOnError") == 0)
                r = worker_labels_add(&labels, WORKER_LABEL_TERM_POLICY, c->termination_message_policy);
        if (r < 0)
                return cub_err_wrap(err, "container '%s'", c->name);
        while (mc && mc->envs && mc->envs[n_menv])
                n_menv++;
        /* env sources: valueFrom resolved, $(VAR) expanded (kubelet's makeEnvironmentVariables) */
        {
                const WorkerNodeEnv *ne = &x->p->node_env;
                const char *pod_ip = x->pod_ip ? x->pod_ip : "";
                PodEnvContext ectx = {
                        .node_name = ne->node_name,
                        /* a host-network pod's IP is the node's, as kubelet reports it */
                        .pod_ip = !*pod_ip && pod->host_network ? x->host_ip : pod_ip,
                        .pod_ips = !*pod_ip && pod->host_network ? x->host_ips : NULL,
                        .host_ip = x->host_ip,
                        .host_ips = x->host_ips,
                        .alloc_cpu_milli = ne->alloc_cpu_milli,
                        .alloc_memory = ne->alloc_memory,
                        .alloc_ephemeral_storage = ne->alloc_ephemeral_storage,
                        .env_from = mc ? (const char *const *) mc->env_from : NULL,
                        .service_env = mc ? (const char *const *) mc->service_env : NULL,
                        .ref_values = mc ? (const char *const *) mc->env_refs : NULL,
                        .n_ref_values = mc ? mc->n_env_refs : 0,
                };

                x->stage = WORKER_FAIL_CONFIG;
                /* a ConfigMap or Secret the env names that cannot be had: this
                 * container waits in CreateContainerConfigError, the others go on */
                if (mc && mc->env_error)
                        return config_error(x, idx, c->name, mc->env_error, err);
                r = pod_env_resolve(pod, c, &ectx, &pod_env, err);
                if (r < 0 && pod_container_has_api_env(c))
                        return config_error(x, idx, c->name, err->msg, err);
                if (r < 0)
                        return cub_err_wrap(err, "CreateContainerConfigError: container '%s'", c->name);
        }
        while (pod_env[n_penv])
                n_penv++;
        envs = calloc(n_menv + n_penv + 1, sizeof(char *));
        if (!envs)
                return cub_err_set(err, ENOMEM, "out of memory");
        /* the managers' first: containerd lets a later duplicate win, so the pod's own env wins */
        for (size_t i = 0; i < n_menv; i++)
                envs[i] = mc->envs[i];
        for (size_t i = 0, k = n_menv; i < n_penv; i++)
                envs[k++] = pod_env[i];
        /* command and args see the whole env, the managers' (devices) included */
        r = pod_env_expand_command(c, (char *const *) envs, &command, &args, err);
        if (r < 0) {
                free(envs);
                return r;
        }
        if (mc && mc->n_devices > 0) {
                devices = calloc(mc->n_devices, sizeof(CriDevice));
                for (size_t i = 0; devices && i < mc->n_devices; i++)
                        devices[i] = (CriDevice){ .container_path = mc->devices[i].container_path,
                                                  .host_path = mc->devices[i].host_path,
                                                  .permissions = mc->devices[i].permissions };
        }
        n_mounts = mc ? mc->n_mounts : 0;
        if (n_mounts > 0 || x->hosts_path || term_file) {
                mounts = calloc(n_mounts + 2, sizeof(CriMount));
                for (size_t i = 0; mounts && i < n_mounts; i++)
                        mounts[i] = (CriMount){ .container_path = mc->mounts[i].container_path,
                                                .host_path = mc->mounts[i].host_path,
                                                .readonly = mc->mounts[i].readonly,
                                                .propagation = mc->mounts[i].propagation };
                /* network: the pod's /etc/hosts, unless a volume mounts one (kubelet's makeMounts) */
                if (mounts && x->hosts_path && !mounts_have(mounts, n_mounts, "/etc/hosts"))
                        mounts[n_mounts++] = (CriMount){ .container_path = "/etc/hosts", .host_path = x->hosts_path };
                if (mounts && term_file)
                        mounts[n_mounts++] =
                                (CriMount){ .container_path = c->termination_message_path, .host_path = term_file };
        }
        if ((mc && mc->n_devices > 0 && !devices) || (n_mounts > 0 && !mounts)) {
                free(envs);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        if (asprintf(&log_path, "%s/%u.log", c->name, attempt) < 0)
                log_path = NULL;
        cfg = (CriContainerConfig){
                .name = c->name,
                .attempt = attempt,
                .image = image_ref && *image_ref ? image_ref : c->image,
                .user_image = c->image,
                .command = (const char *const *) command,
                .args = (const char *const *) args,
                .working_dir = c->working_dir,
                .envs = envs,
                .labels = labels.kv,
                .annotations = mc ? (const char *const *) mc->annotations : NULL,
                .log_path = log_path,
                .resources = worker_cri_resources(res, cpuset, unified),
                .mounts = mounts,
                .n_mounts = mounts ? n_mounts : 0,
                .devices = devices,
                .n_devices = devices ? mc->n_devices : 0,
                .stdin_ = c->stdin_,
                .stdin_once = c->stdin_once,
                .tty = c->tty,
        };
        /* an ephemeral container's targetContainerName: that container's process namespace */
        for (size_t k = 0; c->target_container_name && k < x->n_ct; k++)
                if (strcmp(x->ct[k].name, c->target_container_name) == 0 && x->ct[k].state == CRI_CONTAINER_RUNNING)
                        cfg.pid_target_id = x->ct[k].id;
        cfg.seccomp = worker_seccomp_of(&c->seccomp, &pod->seccomp, seccomp_path, sizeof(seccomp_path),
                                        &cfg.seccomp_localhost);
        x->stage = WORKER_FAIL_CONFIG;
        r = security_config(x, idx, c, &cfg, &username, &groups, &selinux, err);
        if (r < 0) {
                free(envs);
                return r;
        }
        if (mc && mc->pre_create && (r = mc->pre_create(mc->pre_create_ud, err)) < 0) {
                free(envs);
                return cub_err_wrap(err, "CreateContainerConfigError: container '%s'", c->name);
        }
        x->stage = WORKER_FAIL_CREATE;
        r = cri_create_container(x->p->cri, x->sandbox_id, &cfg, x->sbc, &id, err);
        free(envs);
        if (r == -ENOENT && strstr(err->msg, "sandbox container task")) /* gone: worker.c syncs again */
                (void) snprintf(x->j->lost_sandbox, sizeof(x->j->lost_sandbox), "%s", x->sandbox_id);
        if (r < 0)
                return cub_err_wrap(err, "container '%s': create", c->name);
        x->stage = WORKER_FAIL_START;
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

                worker_hook_target(c, &c->lifecycle.post_start, id, x->pod_ip, 0, &t);
                x->stage = WORKER_FAIL_POST_START;
                if (probe_run_hook(x->p->cri, &t, &herr) < 0) {
                        grace = worker_pre_stop(x->p, pod, c, id, x->pod_ip, pod->termination_grace_period_seconds);
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
        x->stage = WORKER_FAIL_SYNC;
        x->stage_container = SIZE_MAX;
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

/* The ephemeral containers (kubectl debug) the runtime does not hold yet,
 * started once, before the init containers (kubelet's SyncPod): one that
 * ended is not started again, and one that fails to start holds back
 * neither the pod nor the next sync's try. */
static void sync_ephemeral(SyncCtx *x, const CriContainer *ct, size_t n_ct) {
        const Pod *pod = x->s->pod;
        size_t n = pod->n_init_containers + pod->n_containers;

        for (size_t e = 0; e < pod->n_ephemeral_containers; e++) {
                const PodContainer *c = &pod->ephemeral_containers[e];
                CubError err = {};
                bool held = false;

                for (size_t k = 0; k < n_ct && !held; k++)
                        held = strcmp(ct[k].name, c->name) == 0;
                if (held)
                        continue;
                if (start_container(x, n + e, 0, NULL, &err) < 0)
                        cub_log(LOG_WARNING, "pod %s/%s: ephemeral container '%s': %s", pod->namespace_, pod->name,
                                c->name, err.msg);
                else
                        cub_log(LOG_INFO, "pod %s/%s: ephemeral container '%s' started", pod->namespace_, pod->name,
                                c->name);
        }
        x->stage = WORKER_FAIL_SYNC;
        x->stage_container = SIZE_MAX;
        x->config_error = false;
}

static int sync_pod(SyncCtx *x, WorkerPool *p, WorkerJob *j, CubError *err) {
        const WorkerSpec *s = j->spec;
        const Pod *pod = s->pod;
        const char *hash = pod->config_hash ? pod->config_hash : pod->uid;
        WorkerLabels labels = {};
        _cleanup_free_ char *sandbox_id = NULL;
        _cleanup_free_ const char **sysctls = NULL, **sb_labels = NULL, **sb_annotations = NULL;
        _cleanup_(worker_pod_net_done) WorkerPodNet net = {};
        CriContainer *ct = NULL;
        CriSandboxConfig sbc;
        CriSELinux selinux;
        _cleanup_free_ int64_t *groups = NULL;
        CubError first = {};
        WorkerFailKind first_stage = WORKER_FAIL_NONE;
        size_t first_container = SIZE_MAX;

        *x = (SyncCtx){ .p = p, .s = s, .configs = j->configs, .j = j, .stage_container = SIZE_MAX };
        uint32_t attempt = 0;
        bool have_ready = false, blocked = false;
        size_t n_ct = 0;
        int r;

        j->sandbox_requested_usec = 0;
        j->containers_started_usec = 0;
        /* a driver mismatch with the runtime creates no sandbox at all */
        x->stage = WORKER_FAIL_POD_CGROUP;
        r = worker_pool_check_runtime(p, err);
        if (r < 0)
                return r;
        if (p->cg) {
                r = cg_writer_apply(p->cg, &s->cgroup, err);
                if (r < 0)
                        return r;
        }
        (void) snprintf(x->grace, sizeof(x->grace), "%" PRId64, pod->termination_grace_period_seconds);
        /* no group (cgroupsPerQOS: false, no cgroupRoot): the runtime's default */
        x->cgroup_parent[0] = 0;
        r = *s->cgroup.path ? cg_cgroup_parent(p->cg ? cg_writer_driver(p->cg) : CG_DRIVER_CGROUPFS, s->cgroup.path,
                                               x->cgroup_parent, sizeof(x->cgroup_parent), err)
                            : 0;
        if (r < 0)
                return r;
        r = labels_set(&labels, err, WORKER_LABEL_MANAGED, "true", WORKER_LABEL_UID, pod->uid, WORKER_LABEL_NAME,
                       pod->name, WORKER_LABEL_NAMESPACE, pod->namespace_, WORKER_LABEL_HASH, hash, WORKER_LABEL_CGROUP,
                       s->cgroup.path, WORKER_LABEL_GRACE, x->grace, WORKER_LABEL_K8S_POD_NAME, pod->name,
                       WORKER_LABEL_K8S_POD_NAMESPACE, pod->namespace_, WORKER_LABEL_K8S_POD_UID, pod->uid, NULL);
        if (r < 0)
                return cub_err_wrap(err, "sandbox");

        /* keep the ready sandbox of this spec; tear down stale ones (spec changed, not ready) */
        x->stage = WORKER_FAIL_KILL;
        r = worker_kill_uid(p, NULL, pod->uid, hash, pod->termination_grace_period_seconds, NULL, &attempt, &have_ready,
                            &sandbox_id, err);
        if (r < 0)
                return r;
        x->stage = WORKER_FAIL_SANDBOX;
        if (worker_sandbox_kv(&pod->labels, &labels, &sb_labels) < 0 ||
            worker_sandbox_kv(&pod->annotations, NULL, &sb_annotations) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        sbc = (CriSandboxConfig){
                .name = pod->name,
                .uid = pod->uid,
                .namespace_ = pod->namespace_,
                .attempt = attempt,
                .log_directory = s->log_dir,
                .labels = sb_labels,
                .annotations = sb_annotations,
                .cgroup_parent = x->cgroup_parent,
        };
        /* kubelet's sandbox always runs RuntimeDefault ("allow users to use
         * least privileged seccomp profiles at pod level", #84623) */
        sbc.seccomp = CRI_SECCOMP_RUNTIME_DEFAULT;
        /* security context: kubelet's generatePodSandboxLinuxConfig */
        sbc.host_pid = pod->host_pid;
        sbc.share_pid = pod->share_process_namespace;
        sbc.host_ipc = pod->host_ipc;
        sbc.privileged = pod_security_any_privileged(pod);
        sbc.run_as_user_set = pod->security.run_as_user_set;
        sbc.run_as_user = pod->security.run_as_user;
        sbc.run_as_group_set = pod->security.run_as_group_set;
        sbc.run_as_group = pod->security.run_as_group;
        sbc.selinux = worker_selinux_of(&pod->security.selinux, &selinux);
        if (worker_pod_groups(pod, &groups, &sbc.n_supplemental_groups) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        sbc.supplemental_groups = groups;
        {
                size_t n = pod->security.n_sysctls;
                const char **kv = n ? calloc(2 * n + 1, sizeof(char *)) : NULL;

                if (n && !kv)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (size_t i = 0; i < n; i++) {
                        kv[2 * i] = pod->security.sysctls[i].name;
                        kv[2 * i + 1] = pod->security.sysctls[i].value;
                }
                sysctls = kv;
        }
        sbc.sysctls = sysctls;
        /* network: hostname, DNS, port mappings; after the sandbox its IP and the pod's /etc/hosts */
        r = worker_pod_net_prepare(p, pod, &net, &sbc, err);
        if (r < 0)
                return cub_err_wrap(err, "sandbox");
        if (!have_ready) {
                uint64_t sent = worker_now_usec();

                r = cri_run_pod_sandbox(p->cri, &sbc, &sandbox_id, err);
                if (r < 0)
                        return cub_err_wrap(err, "sandbox");
                j->sandbox_requested_usec = sent;
        }
        r = worker_pod_net_started(p, pod, sandbox_id, &net, err);
        if (r < 0)
                return r;
        if (!have_ready)
                cub_log(LOG_INFO, "pod %s/%s: sandbox %.12s started, IP %s", pod->namespace_, pod->name, sandbox_id,
                        net.pod_ip ? net.pod_ip : "(none)");
        x->pod_ip = net.pod_ip;
        x->hosts_path = net.hosts_path;
        free(j->pod_ip);
        j->pod_ip = net.pod_ip ? strdup(net.pod_ip) : NULL;
        x->sandbox_id = sandbox_id;
        x->sbc = &sbc;
        worker_host_ips(x->host_ip, x->host_ips); /* env sources */

        x->stage = WORKER_FAIL_SYNC;
        r = cri_list_containers(p->cri, sandbox_id, NULL, &ct, &n_ct, err);
        if (r < 0)
                return r;
        x->ct = ct;
        x->n_ct = n_ct;
        sync_ephemeral(x, ct, n_ct);
        /* init containers in order, then the app containers; an init container
         * that has not succeeded yet holds back the ones after it, sidecars keep
         * running beside the rest */
        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers && !blocked; i++) {
                bool init = i < pod->n_init_containers;

                x->config_error = false;
                r = sync_container(x, ct, n_ct, i, !j->may_start || j->may_start[i], &blocked, err);
                /* security context: an app container that cannot be created as
                 * written does not hold back the others (kubelet's SyncPod) */
                if (r < 0 && x->config_error && !init) {
                        if (!first.code) {
                                first = *err;
                                first_stage = x->stage;
                                first_container = x->stage_container;
                        }
                        continue;
                }
                if (r < 0)
                        break;
        }
        if (r >= 0 && first.code) {
                *err = first;
                r = -first.code;
                x->stage = first_stage;
                x->stage_container = first_container;
        }
        cri_containers_free(ct, n_ct);
        j->containers_started_usec = x->containers_started_usec;
        return r < 0 ? r : 0;
}

int worker_job_sync(WorkerPool *p, WorkerJob *j, CubError *err) {
        SyncCtx x;
        int r = sync_pod(&x, p, j, err);

        return failed_at(j, x.stage, x.stage_container, r);
}
