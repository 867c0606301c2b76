/* SPDX-License-Identifier: Apache-2.0 */
/* The CRI client, containers: configs → runtime.v1 messages, replies → CriContainer. */
#include "cri-internal.h"
#include "cri.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CRI_DEFINE_MAP_BUILDER(container_labels, Runtime__V1__ContainerConfig__LabelsEntry,
                       RUNTIME__V1__CONTAINER_CONFIG__LABELS_ENTRY__INIT)
CRI_DEFINE_MAP_BUILDER(container_annotations, Runtime__V1__ContainerConfig__AnnotationsEntry,
                       RUNTIME__V1__CONTAINER_CONFIG__ANNOTATIONS_ENTRY__INIT)
CRI_DEFINE_MAP_BUILDER(container_selector, Runtime__V1__ContainerFilter__LabelSelectorEntry,
                       RUNTIME__V1__CONTAINER_FILTER__LABEL_SELECTOR_ENTRY__INIT)
CRI_DEFINE_MAP_BUILDER(unified_map, Runtime__V1__LinuxContainerResources__UnifiedEntry,
                       RUNTIME__V1__LINUX_CONTAINER_RESOURCES__UNIFIED_ENTRY__INIT)

CRI_DEFINE_MAP_COPIER(copy_container_labels, Runtime__V1__Container__LabelsEntry)
CRI_DEFINE_MAP_COPIER(copy_container_status_labels, Runtime__V1__ContainerStatus__LabelsEntry)

int cri_start_container(CriClient *c, const char *id, CubError *err) {
        Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;

        req.container_id = (char *) id;
        return cri_by_id(c, CRI_RT "StartContainer", &req.base, &runtime__v1__start_container_response__descriptor,
                         /* not_found_ok= */ false, err);
}

int cri_remove_container(CriClient *c, const char *id, CubError *err) {
        Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;

        req.container_id = (char *) id;
        return cri_by_id(c, CRI_RT "RemoveContainer", &req.base, &runtime__v1__remove_container_response__descriptor,
                         /* not_found_ok= */ true, err);
}

/* ---- containers --------------------------------------------------------- */

const char *cri_container_state_to_string(CriContainerState s) {
        switch (s) {
        case CRI_CONTAINER_CREATED:
                return "Created";
        case CRI_CONTAINER_RUNNING:
                return "Running";
        case CRI_CONTAINER_EXITED:
                return "Exited";
        default:
                return "Unknown";
        }
}

static CriContainerState state_from(int s) {
        switch (s) {
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED:
                return CRI_CONTAINER_CREATED;
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING:
                return CRI_CONTAINER_RUNNING;
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED:
                return CRI_CONTAINER_EXITED;
        default:
                return CRI_CONTAINER_UNKNOWN;
        }
}

static Runtime__V1__LinuxContainerResources *resources(CriArena *a, const CriResources *res) {
        Runtime__V1__LinuxContainerResources *r = cri_arena_alloc(a, sizeof(*r));

        if (!r)
                return NULL;
        *r = (Runtime__V1__LinuxContainerResources) RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
        r->cpu_period = res->cpu_period;
        r->cpu_quota = res->cpu_quota;
        r->cpu_shares = res->cpu_shares;
        r->memory_limit_in_bytes = res->memory_limit_in_bytes;
        r->memory_swap_limit_in_bytes = res->memory_swap_limit_in_bytes;
        r->oom_score_adj = res->oom_score_adj;
        r->cpuset_cpus = cri_s_or_empty(res->cpuset_cpus);
        r->unified = unified_map(a, res->unified, &r->n_unified);
        return r;
}

static char **strv_arg(const char *const *l, size_t *ret_n) {
        *ret_n = cri_strv_len(l);
        return (char **) l;
}

int cri_create_container(CriClient *c, const char *sandbox_id, const CriContainerConfig *cfg,
                         const CriSandboxConfig *sandbox, char **ret_id, CubError *err) {
        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        Runtime__V1__CreateContainerResponse *resp = NULL;
        Runtime__V1__ContainerConfig *cc;
        Runtime__V1__ContainerMetadata *md;
        Runtime__V1__ImageSpec *img;
        Runtime__V1__LinuxContainerConfig *lx;
        Runtime__V1__LinuxContainerSecurityContext *sec;
        Runtime__V1__NamespaceOption *ns;
        size_t n_env = cri_strv_len(cfg->envs) / 2;
        CriArena a = {};
        int r;

        cc = cri_arena_alloc(&a, sizeof(*cc));
        md = cri_arena_alloc(&a, sizeof(*md));
        img = cri_arena_alloc(&a, sizeof(*img));
        lx = cri_arena_alloc(&a, sizeof(*lx));
        sec = cri_arena_alloc(&a, sizeof(*sec));
        ns = cri_arena_alloc(&a, sizeof(*ns));
        if (a.failed)
                goto oom;
        *md = (Runtime__V1__ContainerMetadata) RUNTIME__V1__CONTAINER_METADATA__INIT;
        md->name = cri_s_or_empty(cfg->name);
        md->attempt = cfg->attempt;
        *img = (Runtime__V1__ImageSpec) RUNTIME__V1__IMAGE_SPEC__INIT;
        img->image = cri_s_or_empty(cfg->image);
        img->user_specified_image = cri_s_or_empty(cfg->user_image);
        *ns = (Runtime__V1__NamespaceOption) RUNTIME__V1__NAMESPACE_OPTION__INIT;
        ns->network =
                sandbox && sandbox->host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
        if (cri_namespaces_set(&a, ns, sandbox) < 0)
                goto oom;
        if (cfg->pid_target_id) {
                ns->pid = RUNTIME__V1__NAMESPACE_MODE__TARGET;
                ns->target_id = (char *) cfg->pid_target_id;
        }
        *sec = (Runtime__V1__LinuxContainerSecurityContext) RUNTIME__V1__LINUX_CONTAINER_SECURITY_CONTEXT__INIT;
        sec->namespace_options = ns;
        sec->seccomp = cri_seccomp_profile(&a, cfg->seccomp, cfg->seccomp_localhost);
        {
                /* containerd clears runc's defaults: send kubelet's lists, in
                 * its order (1.34's pkg/securitycontext/util.go; the kubelet
                 * oracle compares them) */
                static const char *const masked[] = { "/proc/asound",
                                                      "/proc/acpi",
                                                      "/proc/interrupts",
                                                      "/proc/kcore",
                                                      "/proc/keys",
                                                      "/proc/latency_stats",
                                                      "/proc/timer_list",
                                                      "/proc/timer_stats",
                                                      "/proc/sched_debug",
                                                      "/proc/scsi",
                                                      "/sys/firmware",
                                                      "/sys/devices/virtual/powercap",
                                                      NULL };
                static const char *const readonly[] = { "/proc/bus",           "/proc/fs", "/proc/irq", "/proc/sys",
                                                        "/proc/sysrq-trigger", NULL };
                /* procMount Unmasked: kubelet's empty lists, which containerd reads as none */
                if (!cfg->proc_unmasked) {
                        sec->masked_paths = strv_arg(masked, &sec->n_masked_paths);
                        sec->readonly_paths = strv_arg(readonly, &sec->n_readonly_paths);
                }
        }
        /* security context */
        sec->privileged = cfg->privileged;
        if (cfg->cap_add || cfg->cap_drop) {
                Runtime__V1__Capability *cap = cri_arena_alloc(&a, sizeof(*cap));

                if (cap) {
                        *cap = (Runtime__V1__Capability) RUNTIME__V1__CAPABILITY__INIT;
                        cap->add_capabilities = strv_arg(cfg->cap_add, &cap->n_add_capabilities);
                        cap->drop_capabilities = strv_arg(cfg->cap_drop, &cap->n_drop_capabilities);
                }
                sec->capabilities = cap;
        }
        sec->run_as_user = cfg->run_as_user_set ? cri_int64_value(&a, cfg->run_as_user) : NULL;
        sec->run_as_group = cfg->run_as_group_set ? cri_int64_value(&a, cfg->run_as_group) : NULL;
        sec->run_as_username = cri_s_or_empty(cfg->run_as_username);
        sec->readonly_rootfs = cfg->readonly_rootfs;
        sec->supplemental_groups = (int64_t *) cfg->supplemental_groups;
        sec->n_supplemental_groups = cfg->n_supplemental_groups;
        sec->no_new_privs = cfg->no_new_privs;
        sec->selinux_options = cri_selinux_option(&a, cfg->selinux);
        *lx = (Runtime__V1__LinuxContainerConfig) RUNTIME__V1__LINUX_CONTAINER_CONFIG__INIT;
        lx->resources = resources(&a, &cfg->resources);
        lx->security_context = sec;
        *cc = (Runtime__V1__ContainerConfig) RUNTIME__V1__CONTAINER_CONFIG__INIT;
        cc->metadata = md;
        cc->image = img;
        cc->command = strv_arg(cfg->command, &cc->n_command);
        cc->args = strv_arg(cfg->args, &cc->n_args);
        cc->working_dir = cri_s_or_empty(cfg->working_dir);
        cc->stdin = cfg->stdin_;
        cc->stdin_once = cfg->stdin_once;
        cc->tty = cfg->tty;
        if (n_env > 0) {
                cc->envs = cri_arena_alloc(&a, n_env * sizeof(*cc->envs));
                for (size_t i = 0; cc->envs && i < n_env; i++) {
                        Runtime__V1__KeyValue *kv = cri_arena_alloc(&a, sizeof(*kv));
                        if (!kv)
                                break;
                        *kv = (Runtime__V1__KeyValue) RUNTIME__V1__KEY_VALUE__INIT;
                        kv->key = (char *) cfg->envs[2 * i];
                        kv->value = (char *) cfg->envs[2 * i + 1];
                        cc->envs[i] = kv;
                }
                cc->n_envs = n_env;
        }
        if (cfg->n_mounts > 0) {
                cc->mounts = cri_arena_alloc(&a, cfg->n_mounts * sizeof(*cc->mounts));
                for (size_t i = 0; cc->mounts && i < cfg->n_mounts; i++) {
                        Runtime__V1__Mount *m = cri_arena_alloc(&a, sizeof(*m));
                        if (!m)
                                break;
                        *m = (Runtime__V1__Mount) RUNTIME__V1__MOUNT__INIT;
                        m->container_path = cri_s_or_empty(cfg->mounts[i].container_path);
                        m->host_path = cri_s_or_empty(cfg->mounts[i].host_path);
                        m->readonly = cfg->mounts[i].readonly;
                        /* volumes */
                        m->propagation = (Runtime__V1__MountPropagation) cfg->mounts[i].propagation;
                        cc->mounts[i] = m;
                }
                cc->n_mounts = cfg->n_mounts;
        }
        if (cfg->n_devices > 0) {
                cc->devices = cri_arena_alloc(&a, cfg->n_devices * sizeof(*cc->devices));
                for (size_t i = 0; cc->devices && i < cfg->n_devices; i++) {
                        Runtime__V1__Device *d = cri_arena_alloc(&a, sizeof(*d));
                        if (!d)
                                break;
                        *d = (Runtime__V1__Device) RUNTIME__V1__DEVICE__INIT;
                        d->container_path = cri_s_or_empty(cfg->devices[i].container_path);
                        d->host_path = cri_s_or_empty(cfg->devices[i].host_path);
                        d->permissions =
                                cri_s_or_empty(cfg->devices[i].permissions ? cfg->devices[i].permissions : "rwm");
                        cc->devices[i] = d;
                }
                cc->n_devices = cfg->n_devices;
        }
        cc->labels = container_labels(&a, cfg->labels, &cc->n_labels);
        cc->annotations = container_annotations(&a, cfg->annotations, &cc->n_annotations);
        cc->log_path = cri_s_or_empty(cfg->log_path);
        cc->linux = lx;
        req.pod_sandbox_id = (char *) sandbox_id;
        req.config = cc;
        req.sandbox_config = sandbox ? cri_sandbox_config(&a, sandbox) : NULL;
        if (a.failed)
                goto oom;
        r = cri_call(c, CRI_RT "CreateContainer", &req, &runtime__v1__create_container_response__descriptor, 0, &resp,
                     err);
        cri_arena_done(&a);
        if (r < 0)
                return r;
        *ret_id = cri_dup_or_empty(resp->container_id);
        cri_free_msg(resp);
        return *ret_id ? 0 : cub_err_set(err, ENOMEM, "out of memory");
oom:
        cri_arena_done(&a);
        return cub_err_set(err, ENOMEM, "out of memory");
}

int cri_stop_container(CriClient *c, const char *id, int64_t timeout_s, CubError *err) {
        Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
        Runtime__V1__StopContainerResponse *resp = NULL;
        int r;

        req.container_id = (char *) id;
        req.timeout = timeout_s;
        /* the call lasts as long as the grace period: give it that much more */
        r = cri_call(c, CRI_RT "StopContainer", &req, &runtime__v1__stop_container_response__descriptor,
                     c->timeout_usec + (uint64_t) (timeout_s > 0 ? timeout_s : 0) * 1000000ULL, &resp, err);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        cri_free_msg(resp);
        return 0;
}

void cri_container_done(CriContainer *ct) {
        if (!ct)
                return;
        free(ct->id);
        free(ct->sandbox_id);
        free(ct->name);
        free(ct->image);
        cri_strv_free(ct->labels);
        *ct = (CriContainer){};
}

void cri_containers_free(CriContainer *ct, size_t n) {
        for (size_t i = 0; ct && i < n; i++)
                cri_container_done(&ct[i]);
        free(ct);
}

int cri_list_containers(CriClient *c, const char *sandbox_id, const char *const *label_selector, CriContainer **ret,
                        size_t *ret_n, CubError *err) {
        Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        Runtime__V1__ContainerFilter filter = RUNTIME__V1__CONTAINER_FILTER__INIT;
        Runtime__V1__ListContainersResponse *resp = NULL;
        CriContainer *out;
        CriArena a = {};
        int r;

        if (sandbox_id || label_selector) {
                filter.pod_sandbox_id = cri_s_or_empty(sandbox_id);
                filter.label_selector = container_selector(&a, label_selector, &filter.n_label_selector);
                req.filter = &filter;
        }
        r = a.failed ? cub_err_set(err, ENOMEM, "out of memory")
                     : cri_call(c, CRI_RT "ListContainers", &req, &runtime__v1__list_containers_response__descriptor, 0,
                                &resp, err);
        cri_arena_done(&a);
        if (r < 0)
                return r;
        out = calloc(resp->n_containers + 1, sizeof(CriContainer));
        for (size_t i = 0; out && i < resp->n_containers; i++) {
                const Runtime__V1__Container *p = resp->containers[i];
                CriContainer *o = &out[i];

                *o = (CriContainer){
                        .id = cri_dup_or_empty(p->id),
                        .sandbox_id = cri_dup_or_empty(p->pod_sandbox_id),
                        .name = cri_dup_or_empty(p->metadata ? p->metadata->name : NULL),
                        .attempt = p->metadata ? p->metadata->attempt : 0,
                        .image = cri_dup_or_empty(p->image ? p->image->image : NULL),
                        .state = state_from(p->state),
                        .created_at = p->created_at,
                        .labels = copy_container_labels(p->labels, p->n_labels),
                };
                if (!o->id || !o->sandbox_id || !o->name || !o->image || !o->labels) {
                        cri_containers_free(out, i + 1);
                        out = NULL;
                }
        }
        if (!out) {
                cri_free_msg(resp);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret_n = resp->n_containers;
        *ret = out;
        cri_free_msg(resp);
        return 0;
}

void cri_container_status_done(CriContainerStatus *s) {
        if (!s)
                return;
        free(s->id);
        free(s->name);
        free(s->reason);
        free(s->message);
        free(s->image);
        free(s->log_path);
        free(s->cpuset_cpus);
        cri_strv_free(s->labels);
        *s = (CriContainerStatus){};
}

int cri_container_status(CriClient *c, const char *id, CriContainerStatus *ret, CubError *err) {
        Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
        Runtime__V1__ContainerStatusResponse *resp = NULL;
        const Runtime__V1__ContainerStatus *s;
        CriContainerStatus o;
        int r;

        req.container_id = (char *) id;
        r = cri_call(c, CRI_RT "ContainerStatus", &req, &runtime__v1__container_status_response__descriptor, 0, &resp,
                     err);
        if (r < 0)
                return r;
        s = resp->status;
        if (!s) {
                cri_free_msg(resp);
                return cub_err_set(err, EBADMSG, "'%s': ContainerStatus of '%s': reply has no status",
                                   cri_client_endpoint(c), id);
        }
        o = (CriContainerStatus){
                .id = cri_dup_or_empty(s->id),
                .name = cri_dup_or_empty(s->metadata ? s->metadata->name : NULL),
                .attempt = s->metadata ? s->metadata->attempt : 0,
                .state = state_from(s->state),
                .created_at = s->created_at,
                .started_at = s->started_at,
                .finished_at = s->finished_at,
                .exit_code = s->exit_code,
                .reason = cri_dup_or_empty(s->reason),
                .message = cri_dup_or_empty(s->message),
                .image = cri_dup_or_empty(s->image ? s->image->image : NULL),
                .log_path = cri_dup_or_empty(s->log_path),
                .labels = copy_container_status_labels(s->labels, s->n_labels),
        };
        if (s->resources && s->resources->linux) {
                const Runtime__V1__LinuxContainerResources *lr = s->resources->linux;

                o.has_resources = true;
                o.cpu_period = lr->cpu_period;
                o.cpu_quota = lr->cpu_quota;
                o.cpu_shares = lr->cpu_shares;
                o.memory_limit_in_bytes = lr->memory_limit_in_bytes;
        }
        o.cpuset_cpus = cri_dup_or_empty(s->resources && s->resources->linux ? s->resources->linux->cpuset_cpus : NULL);
        cri_free_msg(resp);
        if (!o.id || !o.name || !o.reason || !o.message || !o.image || !o.log_path || !o.labels || !o.cpuset_cpus) {
                cri_container_status_done(&o);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret = o;
        return 0;
}

int cri_update_container_resources(CriClient *c, const char *id, const CriResources *res, CubError *err) {
        Runtime__V1__UpdateContainerResourcesRequest req = RUNTIME__V1__UPDATE_CONTAINER_RESOURCES_REQUEST__INIT;
        Runtime__V1__UpdateContainerResourcesResponse *resp = NULL;
        CriArena a = {};
        int r;

        req.container_id = (char *) id;
        req.linux = resources(&a, res);
        r = a.failed ? cub_err_set(err, ENOMEM, "out of memory")
                     : cri_call(c, CRI_RT "UpdateContainerResources", &req,
                                &runtime__v1__update_container_resources_response__descriptor, 0, &resp, err);
        cri_arena_done(&a);
        if (r < 0)
                return r;
        cri_free_msg(resp);
        return 0;
}

void cri_container_stats_free(CriContainerStats *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                free(l[i].id);
        free(l);
}

int cri_list_container_stats(CriClient *c, CriContainerStats **ret, size_t *ret_n, CubError *err) {
        Runtime__V1__ListContainerStatsRequest req = RUNTIME__V1__LIST_CONTAINER_STATS_REQUEST__INIT;
        Runtime__V1__ListContainerStatsResponse *resp = NULL;
        CriContainerStats *out;
        size_t n = 0;
        int r;

        r = cri_call(c, CRI_RT "ListContainerStats", &req, &runtime__v1__list_container_stats_response__descriptor, 0,
                     &resp, err);
        if (r < 0)
                return r;
        out = calloc(resp->n_stats + 1, sizeof(CriContainerStats));
        for (size_t i = 0; out && i < resp->n_stats; i++) {
                const Runtime__V1__ContainerStats *s = resp->stats[i];
                const Runtime__V1__FilesystemUsage *w = s ? s->writable_layer : NULL;

                if (!s || !s->attributes)
                        continue;
                out[n].id = cri_dup_or_empty(s->attributes->id);
                if (!out[n].id) {
                        cri_container_stats_free(out, n);
                        out = NULL;
                        break;
                }
                if (w && w->used_bytes) {
                        out[n].writable_layer_set = true;
                        out[n].writable_layer_used_bytes = w->used_bytes->value;
                }
                n++;
        }
        cri_free_msg(resp);
        if (!out)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret = out;
        *ret_n = n;
        return 0;
}
