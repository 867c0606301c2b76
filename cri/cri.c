/* SPDX-License-Identifier: Apache-2.0 */
/* The CRI client: typed configs → runtime.v1 messages → grpcx unary calls,
 * and replies back into cubelet's own structs. */
#include "cri.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/util/cleanup.h"
#include "../proto/grpcx.h"
#include "proto/cri/api.pb-c.h"

#define RT "/runtime.v1.RuntimeService/"
#define IMG "/runtime.v1.ImageService/"
#define PULL_TIMEOUT_USEC (600ULL * 1000000ULL)

struct CriClient {
        GrpcxChannel *channel;
        uint64_t timeout_usec;
};

/* ---- a bump list of allocations freed together after a call ------------ */

typedef struct Arena {
        void **ptrs;
        size_t n;
        bool failed;
} Arena;

static void *arena_alloc(Arena *a, size_t size) {
        void **np;
        void *p;

        if (a->failed)
                return NULL;
        p = calloc(1, size ? size : 1);
        np = p ? realloc(a->ptrs, (a->n + 1) * sizeof(void *)) : NULL;
        if (!np) {
                free(p);
                a->failed = true;
                return NULL;
        }
        a->ptrs = np;
        a->ptrs[a->n++] = p;
        return p;
}

static void arena_done(Arena *a) {
        for (size_t i = 0; i < a->n; i++)
                free(a->ptrs[i]);
        free(a->ptrs);
        *a = (Arena){};
}

static size_t strv_len(const char *const *l) {
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

static char *s_or_empty(const char *s) {
        return (char *) (s ? s : "");
}

#define DEFINE_MAP_BUILDER(fn, Entry, INIT)                                 \
        static Entry **fn(Arena *a, const char *const *kv, size_t *ret_n) { \
                size_t n = strv_len(kv) / 2;                                \
                Entry **arr;                                                \
                                                                            \
                *ret_n = 0;                                                 \
                if (n == 0)                                                 \
                        return NULL;                                        \
                arr = arena_alloc(a, n * sizeof(Entry *));                  \
                for (size_t i = 0; arr && i < n; i++) {                     \
                        Entry *e = arena_alloc(a, sizeof(Entry));           \
                        if (!e)                                             \
                                return NULL;                                \
                        *e = (Entry) INIT;                                  \
                        e->key = (char *) kv[2 * i];                        \
                        e->value = (char *) kv[2 * i + 1];                  \
                        arr[i] = e;                                         \
                }                                                           \
                *ret_n = arr ? n : 0;                                       \
                return arr;                                                 \
        }

DEFINE_MAP_BUILDER(sandbox_labels, Runtime__V1__PodSandboxConfig__LabelsEntry,
                   RUNTIME__V1__POD_SANDBOX_CONFIG__LABELS_ENTRY__INIT)
DEFINE_MAP_BUILDER(sandbox_annotations, Runtime__V1__PodSandboxConfig__AnnotationsEntry,
                   RUNTIME__V1__POD_SANDBOX_CONFIG__ANNOTATIONS_ENTRY__INIT)
DEFINE_MAP_BUILDER(container_labels, Runtime__V1__ContainerConfig__LabelsEntry,
                   RUNTIME__V1__CONTAINER_CONFIG__LABELS_ENTRY__INIT)
DEFINE_MAP_BUILDER(container_annotations, Runtime__V1__ContainerConfig__AnnotationsEntry,
                   RUNTIME__V1__CONTAINER_CONFIG__ANNOTATIONS_ENTRY__INIT)
DEFINE_MAP_BUILDER(sandbox_selector, Runtime__V1__PodSandboxFilter__LabelSelectorEntry,
                   RUNTIME__V1__POD_SANDBOX_FILTER__LABEL_SELECTOR_ENTRY__INIT)
DEFINE_MAP_BUILDER(container_selector, Runtime__V1__ContainerFilter__LabelSelectorEntry,
                   RUNTIME__V1__CONTAINER_FILTER__LABEL_SELECTOR_ENTRY__INIT)
DEFINE_MAP_BUILDER(unified_map, Runtime__V1__LinuxContainerResources__UnifiedEntry,
                   RUNTIME__V1__LINUX_CONTAINER_RESOURCES__UNIFIED_ENTRY__INIT)

/* ---- replies → our structs ---------------------------------------------- */

void cri_strv_free(char **l) {
        for (size_t i = 0; l && l[i]; i++)
                free(l[i]);
        free(l);
}

const char *cri_kv_get(char *const *kv, const char *key) {
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2)
                if (strcmp(kv[i], key) == 0)
                        return kv[i + 1];
        return NULL;
}

/* Sets entry i of a flat key/value list; -ENOMEM leaves the list freeable
 * with cri_strv_free() (it ends at the first NULL). */
static int kv_set(char **l, size_t i, const char *key, const char *value) {
        l[2 * i] = strdup(s_or_empty(key));
        if (!l[2 * i])
                return -ENOMEM;
        l[2 * i + 1] = strdup(s_or_empty(value));
        return l[2 * i + 1] ? 0 : -ENOMEM;
}

/* A protobuf map of a reply (entries of one generated type) copied into a
 * flat list; one function per entry type, so the compiler checks that each
 * has string key and value fields. */
#define DEFINE_MAP_COPIER(fn, Entry)                                                \
        static char **fn(Entry *const *entries, size_t n) {                         \
                char **l = calloc(2 * n + 1, sizeof(char *));                       \
                                                                                    \
                for (size_t i = 0; l && i < n; i++)                                 \
                        if (kv_set(l, i, entries[i]->key, entries[i]->value) < 0) { \
                                cri_strv_free(l);                                   \
                                return NULL;                                        \
                        }                                                           \
                return l;                                                           \
        }

DEFINE_MAP_COPIER(copy_sandbox_labels, Runtime__V1__PodSandbox__LabelsEntry)
DEFINE_MAP_COPIER(copy_sandbox_status_labels, Runtime__V1__PodSandboxStatus__LabelsEntry)
DEFINE_MAP_COPIER(copy_container_labels, Runtime__V1__Container__LabelsEntry)
DEFINE_MAP_COPIER(copy_container_status_labels, Runtime__V1__ContainerStatus__LabelsEntry)

static char *dup_or_empty(const char *s) {
        return strdup(s ? s : "");
}

/* ---- client ------------------------------------------------------------- */

int cri_client_new(const char *endpoint, uint64_t timeout_usec, CriClient **ret, CubError *err) {
        CriClient *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = grpcx_channel_new(endpoint ? endpoint : CRI_DEFAULT_ENDPOINT, &c->channel, err);
        if (r < 0) {
                free(c);
                return r;
        }
        c->timeout_usec = timeout_usec ? timeout_usec : CRI_DEFAULT_TIMEOUT_USEC;
        *ret = c;
        return 0;
}

CriClient *cri_client_free(CriClient *c) {
        if (!c)
                return NULL;
        grpcx_channel_free(c->channel);
        free(c);
        return NULL;
}

const char *cri_client_endpoint(const CriClient *c) {
        return grpcx_channel_target(c->channel);
}

static int call(CriClient *c, const char *method, const void *req, const ProtobufCMessageDescriptor *d,
                uint64_t timeout, void *ret, CubError *err) {
        return grpcx_unary(c->channel, method, req, d, timeout ? timeout : c->timeout_usec, false,
                           (ProtobufCMessage **) ret, NULL, err);
}

static void free_msg(void *m) {
        if (m)
                protobuf_c_message_free_unpacked(m, NULL);
}

int cri_version(CriClient *c, CriVersion *ret, CubError *err) {
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        Runtime__V1__VersionResponse *resp = NULL;
        int r;

        req.version = (char *) "v1";
        r = call(c, RT "Version", &req, &runtime__v1__version_response__descriptor, 0, &resp, err);
        if (r < 0)
                return r;
        (void) snprintf(ret->runtime_name, sizeof(ret->runtime_name), "%s", s_or_empty(resp->runtime_name));
        (void) snprintf(ret->runtime_version, sizeof(ret->runtime_version), "%s", s_or_empty(resp->runtime_version));
        (void) snprintf(ret->runtime_api_version, sizeof(ret->runtime_api_version), "%s",
                        s_or_empty(resp->runtime_api_version));
        free_msg(resp);
        return 0;
}

static Runtime__V1__SecurityProfile *seccomp_profile(Arena *a, CriSeccompType t, const char *localhost) {
        Runtime__V1__SecurityProfile *p;

        if (t == CRI_SECCOMP_UNSET)
                return NULL;
        p = arena_alloc(a, sizeof(*p));
        if (!p)
                return NULL;
        *p = (Runtime__V1__SecurityProfile) RUNTIME__V1__SECURITY_PROFILE__INIT;
        p->profile_type = t == CRI_SECCOMP_UNCONFINED  ? RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined
                          : t == CRI_SECCOMP_LOCALHOST ? RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost
                                                       : RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault;
        p->localhost_ref = s_or_empty(t == CRI_SECCOMP_LOCALHOST ? localhost : NULL);
        return p;
}

static Runtime__V1__PodSandboxConfig *sandbox_config(Arena *a, const CriSandboxConfig *cfg) {
        Runtime__V1__PodSandboxConfig *sc = arena_alloc(a, sizeof(*sc));
        Runtime__V1__PodSandboxMetadata *md = arena_alloc(a, sizeof(*md));
        Runtime__V1__LinuxPodSandboxConfig *lx = arena_alloc(a, sizeof(*lx));
        Runtime__V1__LinuxSandboxSecurityContext *sec = arena_alloc(a, sizeof(*sec));
        Runtime__V1__NamespaceOption *ns = arena_alloc(a, sizeof(*ns));

        if (!sc || !md || !lx || !sec || !ns)
                return NULL;
        *md = (Runtime__V1__PodSandboxMetadata) RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
        md->name = s_or_empty(cfg->name);
        md->uid = s_or_empty(cfg->uid);
        md->namespace_ = s_or_empty(cfg->namespace_);
        md->attempt = cfg->attempt;
        *ns = (Runtime__V1__NamespaceOption) RUNTIME__V1__NAMESPACE_OPTION__INIT;
        ns->network = cfg->host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
        ns->pid = RUNTIME__V1__NAMESPACE_MODE__CONTAINER;
        ns->ipc = RUNTIME__V1__NAMESPACE_MODE__POD;
        *sec = (Runtime__V1__LinuxSandboxSecurityContext) RUNTIME__V1__LINUX_SANDBOX_SECURITY_CONTEXT__INIT;
        sec->namespace_options = ns;
        sec->seccomp = seccomp_profile(a, cfg->seccomp, cfg->seccomp_localhost);
        *lx = (Runtime__V1__LinuxPodSandboxConfig) RUNTIME__V1__LINUX_POD_SANDBOX_CONFIG__INIT;
        lx->cgroup_parent = s_or_empty(cfg->cgroup_parent);
        lx->security_context = sec;
        *sc = (Runtime__V1__PodSandboxConfig) RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;
        sc->metadata = md;
        /* a host-network sandbox has no UTS namespace: runc refuses a hostname */
        sc->hostname = s_or_empty(cfg->host_network ? NULL : cfg->hostname);
        sc->log_directory = s_or_empty(cfg->log_directory);
        sc->labels = sandbox_labels(a, cfg->labels, &sc->n_labels);
        sc->annotations = sandbox_annotations(a, cfg->annotations, &sc->n_annotations);
        sc->linux = lx;
        return a->failed ? NULL : sc;
}

int cri_run_pod_sandbox(CriClient *c, const CriSandboxConfig *cfg, char **ret_id, CubError *err) {
        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__RunPodSandboxResponse *resp = NULL;
        Arena a = {};
        int r;

        req.config = sandbox_config(&a, cfg);
        if (!req.config) {
                arena_done(&a);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        r = call(c, RT "RunPodSandbox", &req, &runtime__v1__run_pod_sandbox_response__descriptor, 0, &resp, err);
        arena_done(&a);
        if (r < 0)
                return r;
        *ret_id = dup_or_empty(resp->pod_sandbox_id);
        free_msg(resp);
        return *ret_id ? 0 : cub_err_set(err, ENOMEM, "out of memory");
}

/* The reply of a call whose request carries only an id: NOT_FOUND counts as
 * success for the idempotent ones, and err stays untouched on success. */
static int by_id(CriClient *c, const char *method, const ProtobufCMessage *req,
                 const ProtobufCMessageDescriptor *resp_d, bool not_found_ok, CubError *err) {
        ProtobufCMessage *resp = NULL;
        CubError e = {};
        int r;

        r = call(c, method, req, resp_d, 0, &resp, &e);
        if (r == -ENOENT && not_found_ok)
                return 0;
        if (r < 0) {
                if (err)
                        *err = e;
                return r;
        }
        free_msg(resp);
        return 0;
}

int cri_stop_pod_sandbox(CriClient *c, const char *id, CubError *err) {
        Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;

        req.pod_sandbox_id = (char *) id;
        return by_id(c, RT "StopPodSandbox", &req.base, &runtime__v1__stop_pod_sandbox_response__descriptor,
                     /* not_found_ok= */ true, err);
}

int cri_remove_pod_sandbox(CriClient *c, const char *id, CubError *err) {
        Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;

        req.pod_sandbox_id = (char *) id;
        return by_id(c, RT "RemovePodSandbox", &req.base, &runtime__v1__remove_pod_sandbox_response__descriptor,
                     /* not_found_ok= */ true, err);
}

int cri_start_container(CriClient *c, const char *id, CubError *err) {
        Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;

        req.container_id = (char *) id;
        return by_id(c, RT "StartContainer", &req.base, &runtime__v1__start_container_response__descriptor,
                     /* not_found_ok= */ false, err);
}

int cri_remove_container(CriClient *c, const char *id, CubError *err) {
        Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;

        req.container_id = (char *) id;
        return by_id(c, RT "RemoveContainer", &req.base, &runtime__v1__remove_container_response__descriptor,
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
                .id = dup_or_empty(id),
                .name = dup_or_empty(md ? md->name : NULL),
                .uid = dup_or_empty(md ? md->uid : NULL),
                .namespace_ = dup_or_empty(md ? md->namespace_ : NULL),
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
        r = call(c, RT "PodSandboxStatus", &req, &runtime__v1__pod_sandbox_status_response__descriptor, 0, &resp, err);
        if (r < 0)
                return r;
        if (!resp->status)
                r = cub_err_set(err, EBADMSG, "'%s': PodSandboxStatus of '%s': reply has no status",
                                cri_client_endpoint(c), id);
        else if (fill_sandbox(ret, resp->status->id, resp->status->metadata, resp->status->state,
                              resp->status->created_at,
                              copy_sandbox_status_labels(resp->status->labels, resp->status->n_labels)) < 0)
                r = cub_err_set(err, ENOMEM, "out of memory");
        free_msg(resp);
        return r;
}

int cri_list_pod_sandboxes(CriClient *c, const char *const *label_selector, CriSandbox **ret, size_t *ret_n,
                           CubError *err) {
        Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__PodSandboxFilter filter = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
        Runtime__V1__ListPodSandboxResponse *resp = NULL;
        CriSandbox *out;
        Arena a = {};
        int r;

        if (label_selector) {
                filter.label_selector = sandbox_selector(&a, label_selector, &filter.n_label_selector);
                req.filter = &filter;
        }
        r = a.failed ? cub_err_set(err, ENOMEM, "out of memory")
                     : call(c, RT "ListPodSandbox", &req, &runtime__v1__list_pod_sandbox_response__descriptor, 0, &resp,
                            err);
        arena_done(&a);
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
                free_msg(resp);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret_n = resp->n_items;
        *ret = out;
        free_msg(resp);
        return 0;
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

static Runtime__V1__LinuxContainerResources *resources(Arena *a, const CriResources *res) {
        Runtime__V1__LinuxContainerResources *r = arena_alloc(a, sizeof(*r));

        if (!r)
                return NULL;
        *r = (Runtime__V1__LinuxContainerResources) RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
        r->cpu_period = res->cpu_period;
        r->cpu_quota = res->cpu_quota;
        r->cpu_shares = res->cpu_shares;
        r->memory_limit_in_bytes = res->memory_limit_in_bytes;
        r->oom_score_adj = res->oom_score_adj;
        r->cpuset_cpus = s_or_empty(res->cpuset_cpus);
        r->unified = unified_map(a, res->unified, &r->n_unified);
        return r;
}

static char **strv_arg(const char *const *l, size_t *ret_n) {
        *ret_n = strv_len(l);
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
        size_t n_env = strv_len(cfg->envs) / 2;
        Arena a = {};
        int r;

        cc = arena_alloc(&a, sizeof(*cc));
        md = arena_alloc(&a, sizeof(*md));
        img = arena_alloc(&a, sizeof(*img));
        lx = arena_alloc(&a, sizeof(*lx));
        sec = arena_alloc(&a, sizeof(*sec));
        ns = arena_alloc(&a, sizeof(*ns));
        if (a.failed)
                goto oom;
        *md = (Runtime__V1__ContainerMetadata) RUNTIME__V1__CONTAINER_METADATA__INIT;
        md->name = s_or_empty(cfg->name);
        md->attempt = cfg->attempt;
        *img = (Runtime__V1__ImageSpec) RUNTIME__V1__IMAGE_SPEC__INIT;
        img->image = s_or_empty(cfg->image);
        *ns = (Runtime__V1__NamespaceOption) RUNTIME__V1__NAMESPACE_OPTION__INIT;
        ns->network =
                sandbox && sandbox->host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
        ns->pid = RUNTIME__V1__NAMESPACE_MODE__CONTAINER;
        ns->ipc = RUNTIME__V1__NAMESPACE_MODE__POD;
        *sec = (Runtime__V1__LinuxContainerSecurityContext) RUNTIME__V1__LINUX_CONTAINER_SECURITY_CONTEXT__INIT;
        sec->namespace_options = ns;
        sec->seccomp = seccomp_profile(&a, cfg->seccomp, cfg->seccomp_localhost);
        {
                /* containerd clears runc's defaults: send kubelet's lists */
                static const char *const masked[] = { "/proc/acpi",        "/proc/kcore",
                                                      "/proc/keys",        "/proc/latency_stats",
                                                      "/proc/timer_list",  "/proc/timer_stats",
                                                      "/proc/sched_debug", "/proc/scsi",
                                                      "/sys/firmware",     NULL };
                static const char *const readonly[] = { "/proc/asound", "/proc/bus",           "/proc/fs", "/proc/irq",
                                                        "/proc/sys",    "/proc/sysrq-trigger", NULL };
                sec->masked_paths = strv_arg(masked, &sec->n_masked_paths);
                sec->readonly_paths = strv_arg(readonly, &sec->n_readonly_paths);
        }
        *lx = (Runtime__V1__LinuxContainerConfig) RUNTIME__V1__LINUX_CONTAINER_CONFIG__INIT;
        lx->resources = resources(&a, &cfg->resources);
        lx->security_context = sec;
        *cc = (Runtime__V1__ContainerConfig) RUNTIME__V1__CONTAINER_CONFIG__INIT;
        cc->metadata = md;
        cc->image = img;
        cc->command = strv_arg(cfg->command, &cc->n_command);
        cc->args = strv_arg(cfg->args, &cc->n_args);
        cc->working_dir = s_or_empty(cfg->working_dir);
        if (n_env > 0) {
                cc->envs = arena_alloc(&a, n_env * sizeof(*cc->envs));
                for (size_t i = 0; cc->envs && i < n_env; i++) {
                        Runtime__V1__KeyValue *kv = arena_alloc(&a, sizeof(*kv));
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
                cc->mounts = arena_alloc(&a, cfg->n_mounts * sizeof(*cc->mounts));
                for (size_t i = 0; cc->mounts && i < cfg->n_mounts; i++) {
                        Runtime__V1__Mount *m = arena_alloc(&a, sizeof(*m));
                        if (!m)
                                break;
                        *m = (Runtime__V1__Mount) RUNTIME__V1__MOUNT__INIT;
                        m->container_path = s_or_empty(cfg->mounts[i].container_path);
                        m->host_path = s_or_empty(cfg->mounts[i].host_path);
                        m->readonly = cfg->mounts[i].readonly;
                        cc->mounts[i] = m;
                }
                cc->n_mounts = cfg->n_mounts;
        }
        if (cfg->n_devices > 0) {
                cc->devices = arena_alloc(&a, cfg->n_devices * sizeof(*cc->devices));
                for (size_t i = 0; cc->devices && i < cfg->n_devices; i++) {
                        Runtime__V1__Device *d = arena_alloc(&a, sizeof(*d));
                        if (!d)
                                break;
                        *d = (Runtime__V1__Device) RUNTIME__V1__DEVICE__INIT;
                        d->container_path = s_or_empty(cfg->devices[i].container_path);
                        d->host_path = s_or_empty(cfg->devices[i].host_path);
                        d->permissions = s_or_empty(cfg->devices[i].permissions ? cfg->devices[i].permissions : "rwm");
                        cc->devices[i] = d;
                }
                cc->n_devices = cfg->n_devices;
        }
        cc->labels = container_labels(&a, cfg->labels, &cc->n_labels);
        cc->annotations = container_annotations(&a, cfg->annotations, &cc->n_annotations);
        cc->log_path = s_or_empty(cfg->log_path);
        cc->linux = lx;
        req.pod_sandbox_id = (char *) sandbox_id;
        req.config = cc;
        req.sandbox_config = sandbox ? sandbox_config(&a, sandbox) : NULL;
        if (a.failed)
                goto oom;
        r = call(c, RT "CreateContainer", &req, &runtime__v1__create_container_response__descriptor, 0, &resp, err);
        arena_done(&a);
        if (r < 0)
                return r;
        *ret_id = dup_or_empty(resp->container_id);
        free_msg(resp);
        return *ret_id ? 0 : cub_err_set(err, ENOMEM, "out of memory");
oom:
        arena_done(&a);
        return cub_err_set(err, ENOMEM, "out of memory");
}

int cri_stop_container(CriClient *c, const char *id, int64_t timeout_s, CubError *err) {
        Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
        Runtime__V1__StopContainerResponse *resp = NULL;
        int r;

        req.container_id = (char *) id;
        req.timeout = timeout_s;
        /* the call lasts as long as the grace period: give it that much more */
        r = call(c, RT "StopContainer", &req, &runtime__v1__stop_container_response__descriptor,
                 c->timeout_usec + (uint64_t) (timeout_s > 0 ? timeout_s : 0) * 1000000ULL, &resp, err);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        free_msg(resp);
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
        Arena a = {};
        int r;

        if (sandbox_id || label_selector) {
                filter.pod_sandbox_id = s_or_empty(sandbox_id);
                filter.label_selector = container_selector(&a, label_selector, &filter.n_label_selector);
                req.filter = &filter;
        }
        r = a.failed ? cub_err_set(err, ENOMEM, "out of memory")
                     : call(c, RT "ListContainers", &req, &runtime__v1__list_containers_response__descriptor, 0, &resp,
                            err);
        arena_done(&a);
        if (r < 0)
                return r;
        out = calloc(resp->n_containers + 1, sizeof(CriContainer));
        for (size_t i = 0; out && i < resp->n_containers; i++) {
                const Runtime__V1__Container *p = resp->containers[i];
                CriContainer *o = &out[i];

                *o = (CriContainer){
                        .id = dup_or_empty(p->id),
                        .sandbox_id = dup_or_empty(p->pod_sandbox_id),
                        .name = dup_or_empty(p->metadata ? p->metadata->name : NULL),
                        .attempt = p->metadata ? p->metadata->attempt : 0,
                        .image = dup_or_empty(p->image ? p->image->image : NULL),
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
                free_msg(resp);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret_n = resp->n_containers;
        *ret = out;
        free_msg(resp);
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
        r = call(c, RT "ContainerStatus", &req, &runtime__v1__container_status_response__descriptor, 0, &resp, err);
        if (r < 0)
                return r;
        s = resp->status;
        if (!s) {
                free_msg(resp);
                return cub_err_set(err, EBADMSG, "'%s': ContainerStatus of '%s': reply has no status",
                                   cri_client_endpoint(c), id);
        }
        o = (CriContainerStatus){
                .id = dup_or_empty(s->id),
                .name = dup_or_empty(s->metadata ? s->metadata->name : NULL),
                .attempt = s->metadata ? s->metadata->attempt : 0,
                .state = state_from(s->state),
                .created_at = s->created_at,
                .started_at = s->started_at,
                .finished_at = s->finished_at,
                .exit_code = s->exit_code,
                .reason = dup_or_empty(s->reason),
                .message = dup_or_empty(s->message),
                .image = dup_or_empty(s->image ? s->image->image : NULL),
                .log_path = dup_or_empty(s->log_path),
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
        o.cpuset_cpus = dup_or_empty(s->resources && s->resources->linux ? s->resources->linux->cpuset_cpus : NULL);
        free_msg(resp);
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
        Arena a = {};
        int r;

        req.container_id = (char *) id;
        req.linux = resources(&a, res);
        r = a.failed ? cub_err_set(err, ENOMEM, "out of memory")
                     : call(c, RT "UpdateContainerResources", &req,
                            &runtime__v1__update_container_resources_response__descriptor, 0, &resp, err);
        arena_done(&a);
        if (r < 0)
                return r;
        free_msg(resp);
        return 0;
}

/* ---- images ------------------------------------------------------------- */

int cri_image_status(CriClient *c, const char *image, bool *ret_present, char **ret_id, CubError *err) {
        Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__ImageStatusResponse *resp = NULL;
        int r;

        spec.image = (char *) image;
        req.image = &spec;
        r = call(c, IMG "ImageStatus", &req, &runtime__v1__image_status_response__descriptor, 0, &resp, err);
        if (r < 0)
                return r;
        *ret_present = resp->image != NULL;
        if (ret_id) {
                *ret_id = resp->image ? dup_or_empty(resp->image->id) : NULL;
                if (resp->image && !*ret_id) {
                        free_msg(resp);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        free_msg(resp);
        return 0;
}

int cri_pull_image(CriClient *c, const char *image, char **ret_ref, CubError *err) {
        Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__PullImageResponse *resp = NULL;
        int r;

        spec.image = (char *) image;
        req.image = &spec;
        r = call(c, IMG "PullImage", &req, &runtime__v1__pull_image_response__descriptor, PULL_TIMEOUT_USEC, &resp,
                 err);
        if (r < 0)
                return r;
        if (ret_ref) {
                *ret_ref = dup_or_empty(resp->image_ref);
                if (!*ret_ref) {
                        free_msg(resp);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        free_msg(resp);
        return 0;
}
