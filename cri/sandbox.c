/* SPDX-License-Identifier: Apache-2.0 */
/* The CRI client, pod sandboxes: configs → runtime.v1 messages, replies → CriSandbox. */
#include "cri-internal.h"
#include "cri.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CRI_DEFINE_MAP_BUILDER(sandbox_labels, Runtime__V1__PodSandboxConfig__LabelsEntry,
                       RUNTIME__V1__POD_SANDBOX_CONFIG__LABELS_ENTRY__INIT)
CRI_DEFINE_MAP_BUILDER(sandbox_annotations, Runtime__V1__PodSandboxConfig__AnnotationsEntry,
                       RUNTIME__V1__POD_SANDBOX_CONFIG__ANNOTATIONS_ENTRY__INIT)
CRI_DEFINE_MAP_BUILDER(sandbox_selector, Runtime__V1__PodSandboxFilter__LabelSelectorEntry,
                       RUNTIME__V1__POD_SANDBOX_FILTER__LABEL_SELECTOR_ENTRY__INIT)

CRI_DEFINE_MAP_BUILDER(sandbox_sysctls, Runtime__V1__LinuxPodSandboxConfig__SysctlsEntry,
                       RUNTIME__V1__LINUX_POD_SANDBOX_CONFIG__SYSCTLS_ENTRY__INIT)

/* security context: kubelet's NamespacesForPod, for the sandbox and each
 * container; the user namespace is the node's, said explicitly as kubelet
 * does (hostUsers unset or true) */
int cri_namespaces_set(CriArena *a, Runtime__V1__NamespaceOption *ns, const CriSandboxConfig *cfg) {
        Runtime__V1__UserNamespace *u = cri_arena_alloc(a, sizeof(*u));

        if (!u)
                return -ENOMEM;
        *u = (Runtime__V1__UserNamespace) RUNTIME__V1__USER_NAMESPACE__INIT;
        u->mode = RUNTIME__V1__NAMESPACE_MODE__NODE;
        ns->userns_options = u;
        ns->pid = cfg && cfg->host_pid    ? RUNTIME__V1__NAMESPACE_MODE__NODE
                  : cfg && cfg->share_pid ? RUNTIME__V1__NAMESPACE_MODE__POD
                                          : RUNTIME__V1__NAMESPACE_MODE__CONTAINER;
        ns->ipc = cfg && cfg->host_ipc ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
        return 0;
}

Runtime__V1__Int64Value *cri_int64_value(CriArena *a, int64_t v) {
        Runtime__V1__Int64Value *p = cri_arena_alloc(a, sizeof(*p));

        if (!p)
                return NULL;
        *p = (Runtime__V1__Int64Value) RUNTIME__V1__INT64_VALUE__INIT;
        p->value = v;
        return p;
}

CRI_DEFINE_MAP_COPIER(copy_sandbox_labels, Runtime__V1__PodSandbox__LabelsEntry)
CRI_DEFINE_MAP_COPIER(copy_sandbox_status_labels, Runtime__V1__PodSandboxStatus__LabelsEntry)

Runtime__V1__SecurityProfile *cri_seccomp_profile(CriArena *a, CriSeccompType t, const char *localhost) {
        Runtime__V1__SecurityProfile *p;

        if (t == CRI_SECCOMP_UNSET)
                return NULL;
        p = cri_arena_alloc(a, sizeof(*p));
        if (!p)
                return NULL;
        *p = (Runtime__V1__SecurityProfile) RUNTIME__V1__SECURITY_PROFILE__INIT;
        p->profile_type = t == CRI_SECCOMP_UNCONFINED  ? RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined
                          : t == CRI_SECCOMP_LOCALHOST ? RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost
                                                       : RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault;
        p->localhost_ref = cri_s_or_empty(t == CRI_SECCOMP_LOCALHOST ? localhost : NULL);
        return p;
}

Runtime__V1__SELinuxOption *cri_selinux_option(CriArena *a, const CriSELinux *sel) {
        Runtime__V1__SELinuxOption *o;

        if (!sel || !(o = cri_arena_alloc(a, sizeof(*o))))
                return NULL;
        *o = (Runtime__V1__SELinuxOption) RUNTIME__V1__SELINUX_OPTION__INIT;
        o->user = cri_s_or_empty(sel->user);
        o->role = cri_s_or_empty(sel->role);
        o->type = cri_s_or_empty(sel->type);
        o->level = cri_s_or_empty(sel->level);
        return o;
}

Runtime__V1__PodSandboxConfig *cri_sandbox_config(CriArena *a, const CriSandboxConfig *cfg) {
        Runtime__V1__PodSandboxConfig *sc = cri_arena_alloc(a, sizeof(*sc));
        Runtime__V1__PodSandboxMetadata *md = cri_arena_alloc(a, sizeof(*md));
        Runtime__V1__LinuxPodSandboxConfig *lx = cri_arena_alloc(a, sizeof(*lx));
        Runtime__V1__LinuxSandboxSecurityContext *sec = cri_arena_alloc(a, sizeof(*sec));
        Runtime__V1__NamespaceOption *ns = cri_arena_alloc(a, sizeof(*ns));

        if (!sc || !md || !lx || !sec || !ns)
                return NULL;
        *md = (Runtime__V1__PodSandboxMetadata) RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
        md->name = cri_s_or_empty(cfg->name);
        md->uid = cri_s_or_empty(cfg->uid);
        md->namespace_ = cri_s_or_empty(cfg->namespace_);
        md->attempt = cfg->attempt;
        *ns = (Runtime__V1__NamespaceOption) RUNTIME__V1__NAMESPACE_OPTION__INIT;
        ns->network = cfg->host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
        if (cri_namespaces_set(a, ns, cfg) < 0)
                return NULL;
        *sec = (Runtime__V1__LinuxSandboxSecurityContext) RUNTIME__V1__LINUX_SANDBOX_SECURITY_CONTEXT__INIT;
        sec->namespace_options = ns;
        sec->seccomp = cri_seccomp_profile(a, cfg->seccomp, cfg->seccomp_localhost);
        /* security context */
        sec->privileged = cfg->privileged;
        sec->run_as_user = cfg->run_as_user_set ? cri_int64_value(a, cfg->run_as_user) : NULL;
        sec->run_as_group = cfg->run_as_group_set ? cri_int64_value(a, cfg->run_as_group) : NULL;
        sec->supplemental_groups = (int64_t *) cfg->supplemental_groups;
        sec->n_supplemental_groups = cfg->n_supplemental_groups;
        sec->selinux_options = cri_selinux_option(a, cfg->selinux);
        *lx = (Runtime__V1__LinuxPodSandboxConfig) RUNTIME__V1__LINUX_POD_SANDBOX_CONFIG__INIT;
        lx->cgroup_parent = cri_s_or_empty(cfg->cgroup_parent);
        lx->security_context = sec;
        lx->sysctls = sandbox_sysctls(a, cfg->sysctls, &lx->n_sysctls);
        *sc = (Runtime__V1__PodSandboxConfig) RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;
        sc->metadata = md;
        /* a host-network sandbox has no UTS namespace: runc refuses a hostname */
        sc->hostname = cri_s_or_empty(cfg->host_network ? NULL : cfg->hostname);
        sc->log_directory = cri_s_or_empty(cfg->log_directory);
        sc->labels = sandbox_labels(a, cfg->labels, &sc->n_labels);
        sc->annotations = sandbox_annotations(a, cfg->annotations, &sc->n_annotations);
        sc->linux = lx;
        /* network */
        if (cri_sandbox_network(a, cfg, sc) < 0)
                return NULL;
        return a->failed ? NULL : sc;
}

int cri_run_pod_sandbox(CriClient *c, const CriSandboxConfig *cfg, char **ret_id, CubError *err) {
        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__RunPodSandboxResponse *resp = NULL;
        CriArena a = {};
        int r;

        req.config = cri_sandbox_config(&a, cfg);
        if (!req.config) {
                cri_arena_done(&a);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        r = cri_call(c, CRI_RT "RunPodSandbox", &req, &runtime__v1__run_pod_sandbox_response__descriptor, 0, &resp,
                     err);
        cri_arena_done(&a);
        if (r < 0)
                return r;
        *ret_id = cri_dup_or_empty(resp->pod_sandbox_id);
        cri_free_msg(resp);
        return *ret_id ? 0 : cub_err_set(err, ENOMEM, "out of memory");
}

int cri_stop_pod_sandbox(CriClient *c, const char *id, CubError *err) {
        Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;

        req.pod_sandbox_id = (char *) id;
        return cri_by_id(c, CRI_RT "StopPodSandbox", &req.base, &runtime__v1__stop_pod_sandbox_response__descriptor,
                         /* not_found_ok= */ true, err);
}

int cri_remove_pod_sandbox(CriClient *c, const char *id, CubError *err) {
        Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;

        req.pod_sandbox_id = (char *) id;
        return cri_by_id(c, CRI_RT "RemovePodSandbox", &req.base, &runtime__v1__remove_pod_sandbox_response__descriptor,
                         /* not_found_ok= */ true, err);
}

void cri_sandbox_done(CriSandbox *s) {
        if (!s)
                return;
        free(s->id);
        free(s->name);
        free(s->uid);
        free(s->namespace_);
        cri_strv_free(s->labels);
        *s = (CriSandbox){};
}

void cri_sandboxes_free(CriSandbox *s, size_t n) {
        for (size_t i = 0; s && i < n; i++)
                cri_sandbox_done(&s[i]);
        free(s);
}

/* Takes labels (a flat list from one of the copiers, NULL when that failed). */
static int fill_sandbox(CriSandbox *s, const char *id, const Runtime__V1__PodSandboxMetadata *md, int state,
                        int64_t created, char **labels) {
        *s = (CriSandbox){
                .id = cri_dup_or_empty(id),
                .name = cri_dup_or_empty(md ? md->name : NULL),
                .uid = cri_dup_or_empty(md ? md->uid : NULL),
                .namespace_ = cri_dup_or_empty(md ? md->namespace_ : NULL),
                .attempt = md ? md->attempt : 0,
                .state = state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY ? CRI_SANDBOX_READY
                                                                                : CRI_SANDBOX_NOTREADY,
                .created_at = created,
                .labels = labels,
        };
        if (!s->id || !s->name || !s->uid || !s->namespace_ || !s->labels) {
                cri_sandbox_done(s);
                return -ENOMEM;
        }
        return 0;
}

int cri_pod_sandbox_status(CriClient *c, const char *id, CriSandbox *ret, CubError *err) {
        Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
        Runtime__V1__PodSandboxStatusResponse *resp = NULL;
        int r;

        req.pod_sandbox_id = (char *) id;
        r = cri_call(c, CRI_RT "PodSandboxStatus", &req, &runtime__v1__pod_sandbox_status_response__descriptor, 0,
                     &resp, err);
        if (r < 0)
                return r;
        if (!resp->status)
                r = cub_err_set(err, EBADMSG, "'%s': PodSandboxStatus of '%s': reply has no status",
                                cri_client_endpoint(c), id);
        else if (fill_sandbox(ret, resp->status->id, resp->status->metadata, resp->status->state,
                              resp->status->created_at,
                              copy_sandbox_status_labels(resp->status->labels, resp->status->n_labels)) < 0)
                r = cub_err_set(err, ENOMEM, "out of memory");
        cri_free_msg(resp);
        return r;
}

int cri_list_pod_sandboxes(CriClient *c, const char *const *label_selector, CriSandbox **ret, size_t *ret_n,
                           CubError *err) {
        Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__PodSandboxFilter filter = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
        Runtime__V1__ListPodSandboxResponse *resp = NULL;
        CriSandbox *out;
        CriArena a = {};
        int r;

        if (label_selector) {
                filter.label_selector = sandbox_selector(&a, label_selector, &filter.n_label_selector);
                req.filter = &filter;
        }
        r = a.failed ? cub_err_set(err, ENOMEM, "out of memory")
                     : cri_call(c, CRI_RT "ListPodSandbox", &req, &runtime__v1__list_pod_sandbox_response__descriptor,
                                0, &resp, err);
        cri_arena_done(&a);
        if (r < 0)
                return r;
        out = calloc(resp->n_items + 1, sizeof(CriSandbox));
        for (size_t i = 0; out && i < resp->n_items; i++) {
                const Runtime__V1__PodSandbox *p = resp->items[i];

                if (fill_sandbox(&out[i], p->id, p->metadata, p->state, p->created_at,
                                 copy_sandbox_labels(p->labels, p->n_labels)) < 0) {
                        cri_sandboxes_free(out, i);
                        out = NULL;
                }
        }
        if (!out) {
                cri_free_msg(resp);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret_n = resp->n_items;
        *ret = out;
        cri_free_msg(resp);
        return 0;
}
