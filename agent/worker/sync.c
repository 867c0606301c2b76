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

int worker_labels_set(WorkerLabels *l, CubError *err, ...) {
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

/* The sync's first failure, typed (r < 0): what kubelet's reasons and
 * events are made of. Returns r. */
static int failed_at(WorkerJob *j, WorkerFailKind kind, size_t idx, int r) {
        if (r < 0 && j->fail == WORKER_FAIL_NONE) {
                j->fail = kind;
                j->fail_container = idx;
        }
        return r;
}

/* Creates and starts container idx (attempt), removing old_id first. */
static int start_container(SyncCtx *x, size_t idx, uint32_t attempt, const char *old_id, CubError *err) {
        const Pod *pod = x->s->pod;
        const PodContainer *c = pod_container_at(pod, idx, NULL);
        const WorkerContainerConfig *mc = x->configs ? &x->configs[idx] : NULL;
        _cleanup_free_ char *id = NULL, *image_ref = NULL;
        _cleanup_(worker_cri_config_done) WorkerCriConfig w = {};
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
        r = worker_container_config(x, idx, attempt, image_ref, &w, err);
        if (r < 0)
                return r;
        if (mc && mc->pre_create && (r = mc->pre_create(mc->pre_create_ud, err)) < 0)
                return cub_err_wrap(err, "CreateContainerConfigError: container '%s'", c->name);
        x->stage = WORKER_FAIL_CREATE;
        r = cri_create_container(x->p->cri, x->sandbox_id, &w.cfg, x->sbc, &id, err);
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
        r = worker_labels_set(&labels, err, WORKER_LABEL_MANAGED, "true", WORKER_LABEL_UID, pod->uid, WORKER_LABEL_NAME,
                              pod->name, WORKER_LABEL_NAMESPACE, pod->namespace_, WORKER_LABEL_HASH, hash,
                              WORKER_LABEL_CGROUP, s->cgroup.path, WORKER_LABEL_GRACE, x->grace,
                              WORKER_LABEL_K8S_POD_NAME, pod->name, WORKER_LABEL_K8S_POD_NAMESPACE, pod->namespace_,
                              WORKER_LABEL_K8S_POD_UID, pod->uid, NULL);
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
