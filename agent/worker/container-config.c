/* SPDX-License-Identifier: Apache-2.0 */
/* A container's CRI config, as the sync makes it before CreateContainer:
 * its labels, its env (the managers', then the pod's with valueFrom
 * resolved and $(VAR) expanded), command and args, devices and mounts (the
 * managers', /etc/hosts, the termination message file), resources,
 * seccomp and the security context kubelet determines. A container that
 * cannot be made as its spec says is a CreateContainerConfigError, noted
 * on the job for its status. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/log.h"
#include "worker-internal.h"

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

static bool mounts_have(const CriMount *m, size_t n, const char *container_path) {
        for (size_t i = 0; i < n; i++)
                if (m[i].container_path && strcmp(m[i].container_path, container_path) == 0)
                        return true;
        return false;
}

int worker_container_config(SyncCtx *x, size_t idx, uint32_t attempt, const char *image_ref, WorkerCriConfig *w,
                            CubError *err) {
        const Pod *pod = x->s->pod;
        bool init;
        const PodContainer *c = pod_container_at(pod, idx, &init);
        const CgContainerResources *res = worker_resources_at(x->s, idx);
        const WorkerContainerConfig *mc = x->configs ? &x->configs[idx] : NULL;
        const char *cpuset = mc && mc->cpuset ? mc->cpuset : res->cpuset_cpus;
        size_t n_menv = 0, n_penv = 0, n_mounts;
        int r;

        x->stage = WORKER_FAIL_CREATE;
        r = worker_labels_set(&w->labels, err, WORKER_LABEL_MANAGED, "true", WORKER_LABEL_UID, pod->uid,
                              WORKER_LABEL_NAME, pod->name, WORKER_LABEL_NAMESPACE, pod->namespace_,
                              WORKER_LABEL_CONTAINER, c->name, WORKER_LABEL_INIT, init ? "true" : "false",
                              WORKER_LABEL_K8S_POD_NAME, pod->name, WORKER_LABEL_K8S_POD_NAMESPACE, pod->namespace_,
                              WORKER_LABEL_K8S_POD_UID, pod->uid, WORKER_LABEL_K8S_CONTAINER_NAME, c->name, NULL);
        for (size_t i = 0; r >= 0 && mc && mc->labels && mc->labels[i] && mc->labels[i + 1]; i += 2)
                r = worker_labels_add(&w->labels, mc->labels[i], mc->labels[i + 1]);
        /* termination messages: the container's own file (kubelet's makeMounts: a file that
         * cannot be made costs the message, not the container) */
        if (r >= 0 && c->termination_message_path && *c->termination_message_path && x->p->pods_dir) {
                CubError e = {};

                if (worker_term_file(x->p->pods_dir, pod->uid, c->name, &w->term_file, &e) < 0)
                        cub_log(LOG_WARNING, "pod %s/%s: container '%s': %s", pod->namespace_, pod->name, c->name,
                                e.msg);
                else
                        r = worker_labels_add(&w->labels, WORKER_LABEL_TERM_FILE, w->term_file);
        }
        if (r >= 0 && c->termination_message_policy &&
            strcmp(c->termination_message_policy, "FallbackToLogsOnError") == 0)
                r = worker_labels_add(&w->labels, WORKER_LABEL_TERM_POLICY, c->termination_message_policy);
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
                r = pod_env_resolve(pod, c, &ectx, &w->pod_env, err);
                if (r < 0 && pod_container_has_api_env(c))
                        return config_error(x, idx, c->name, err->msg, err);
                if (r < 0)
                        return cub_err_wrap(err, "CreateContainerConfigError: container '%s'", c->name);
        }
        while (w->pod_env[n_penv])
                n_penv++;
        w->envs = calloc(n_menv + n_penv + 1, sizeof(char *));
        if (!w->envs)
                return cub_err_set(err, ENOMEM, "out of memory");
        /* the managers' first: containerd lets a later duplicate win, so the pod's own env wins */
        for (size_t i = 0; i < n_menv; i++)
                w->envs[i] = mc->envs[i];
        for (size_t i = 0, k = n_menv; i < n_penv; i++)
                w->envs[k++] = w->pod_env[i];
        /* command and args see the whole env, the managers' (devices) included */
        r = pod_env_expand_command(c, (char *const *) w->envs, &w->command, &w->args, err);
        if (r < 0)
                return r;
        if (mc && mc->n_devices > 0) {
                w->devices = calloc(mc->n_devices, sizeof(CriDevice));
                for (size_t i = 0; w->devices && i < mc->n_devices; i++)
                        w->devices[i] = (CriDevice){ .container_path = mc->devices[i].container_path,
                                                     .host_path = mc->devices[i].host_path,
                                                     .permissions = mc->devices[i].permissions };
        }
        n_mounts = mc ? mc->n_mounts : 0;
        if (n_mounts > 0 || x->hosts_path || w->term_file) {
                w->mounts = calloc(n_mounts + 2, sizeof(CriMount));
                for (size_t i = 0; w->mounts && i < n_mounts; i++)
                        w->mounts[i] = (CriMount){ .container_path = mc->mounts[i].container_path,
                                                   .host_path = mc->mounts[i].host_path,
                                                   .readonly = mc->mounts[i].readonly,
                                                   .propagation = mc->mounts[i].propagation };
                /* network: the pod's /etc/hosts, unless a volume mounts one (kubelet's makeMounts) */
                if (w->mounts && x->hosts_path && !mounts_have(w->mounts, n_mounts, "/etc/hosts"))
                        w->mounts[n_mounts++] =
                                (CriMount){ .container_path = "/etc/hosts", .host_path = x->hosts_path };
                if (w->mounts && w->term_file)
                        w->mounts[n_mounts++] =
                                (CriMount){ .container_path = c->termination_message_path, .host_path = w->term_file };
        }
        if ((mc && mc->n_devices > 0 && !w->devices) || (n_mounts > 0 && !w->mounts))
                return cub_err_set(err, ENOMEM, "out of memory");
        if (asprintf(&w->log_path, "%s/%u.log", c->name, attempt) < 0)
                w->log_path = NULL;
        w->cfg = (CriContainerConfig){
                .name = c->name,
                .attempt = attempt,
                .image = image_ref && *image_ref ? image_ref : c->image,
                .user_image = c->image,
                .command = (const char *const *) w->command,
                .args = (const char *const *) w->args,
                .working_dir = c->working_dir,
                .envs = w->envs,
                .labels = w->labels.kv,
                .annotations = mc ? (const char *const *) mc->annotations : NULL,
                .log_path = w->log_path,
                .resources = worker_cri_resources(res, cpuset, w->unified),
                .mounts = w->mounts,
                .n_mounts = w->mounts ? n_mounts : 0,
                .devices = w->devices,
                .n_devices = w->devices ? mc->n_devices : 0,
                .stdin_ = c->stdin_,
                .stdin_once = c->stdin_once,
                .tty = c->tty,
        };
        /* an ephemeral container's targetContainerName: that container's process namespace */
        for (size_t k = 0; c->target_container_name && k < x->n_ct; k++)
                if (strcmp(x->ct[k].name, c->target_container_name) == 0 && x->ct[k].state == CRI_CONTAINER_RUNNING)
                        w->cfg.pid_target_id = x->ct[k].id;
        w->cfg.seccomp = worker_seccomp_of(&c->seccomp, &pod->seccomp, w->seccomp_path, sizeof(w->seccomp_path),
                                           &w->cfg.seccomp_localhost);
        x->stage = WORKER_FAIL_CONFIG;
        return security_config(x, idx, c, &w->cfg, &w->username, &w->groups, &w->selinux, err);
}

void worker_cri_config_done(WorkerCriConfig *w) {
        free(w->envs);
        pod_env_strv_free(w->pod_env);
        pod_env_strv_free(w->command);
        pod_env_strv_free(w->args);
        free(w->devices);
        free(w->mounts);
        free(w->groups);
        free(w->log_path);
        free(w->username);
        free(w->term_file);
        *w = (WorkerCriConfig){};
}
