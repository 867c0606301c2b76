/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * cri/: a typed C client for the CRI runtime.v1 API over a unix socket
 * (containerd 1.6). No protobuf type leaks out of this folder. Every call
 * returns 0 or a negative errno; the message names the socket, the method,
 * the gRPC status and the runtime's own text. Lists are returned as arrays
 * freed with the matching *_free function.
 *
 * String maps (labels, annotations, envs, label selectors) are flat
 * NULL-terminated arrays of key, value, key, value, ..., NULL.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../agent/util/err.h"

#define CRI_DEFAULT_ENDPOINT "unix:///run/containerd/containerd.sock"
#define CRI_DEFAULT_TIMEOUT_USEC (120ULL * 1000000ULL)

typedef struct CriClient CriClient;

int cri_client_new(const char *endpoint, uint64_t timeout_usec, CriClient **ret, CubError *err);
CriClient *cri_client_free(CriClient *c);
static inline void cri_client_freep(CriClient **c) {
        if (*c)
                cri_client_free(*c);
}
const char *cri_client_endpoint(const CriClient *c);

typedef struct CriVersion {
        char runtime_name[64];
        char runtime_version[64];
        char runtime_api_version[32];
} CriVersion;

int cri_version(CriClient *c, CriVersion *ret, CubError *err);

/* Status: the runtime's conditions RuntimeReady and NetworkReady (a
 * condition the runtime does not give counts as true, as kubelet reads it),
 * with the reason and message of the first that is false. */
typedef struct CriRuntimeStatus {
        bool runtime_ready, network_ready;
        char reason[128];
        char message[512];
} CriRuntimeStatus;

int cri_runtime_status(CriClient *c, CriRuntimeStatus *ret, CubError *err);

/* Status(verbose): the value of one key of the runtime's info map
 * (containerd: "config", its CRI config as JSON), NULL in *ret when the
 * runtime does not give it. */
int cri_status_info(CriClient *c, const char *key, char **ret, CubError *err);

/* ---- sandboxes ---------------------------------------------------------- */

typedef enum CriSeccompType {
        CRI_SECCOMP_UNSET, /* no seccomp profile (kubelet's default without a pod setting) */
        CRI_SECCOMP_RUNTIME_DEFAULT,
        CRI_SECCOMP_UNCONFINED,
        CRI_SECCOMP_LOCALHOST,
        _CRI_SECCOMP_MAX,
        _CRI_SECCOMP_INVALID = -22,
} CriSeccompType;

/* network */
typedef enum CriProtocol {
        CRI_PROTOCOL_TCP,
        CRI_PROTOCOL_UDP,
        CRI_PROTOCOL_SCTP,
        _CRI_PROTOCOL_MAX,
        _CRI_PROTOCOL_INVALID = -22,
} CriProtocol;

typedef struct CriPortMapping {
        CriProtocol protocol;
        int32_t container_port;
        int32_t host_port; /* 0: none (containerd's portmap skips it) */
        const char *host_ip;
} CriPortMapping;

/* SELinuxOption: the labels kubelet passes through (a host without
 * SELinux ignores them); NULL in a config = none */
typedef struct CriSELinux {
        const char *user, *role, *type, *level;
} CriSELinux;

typedef struct CriSandboxConfig {
        const char *name;
        const char *uid;
        const char *namespace_;
        uint32_t attempt;
        const char *hostname; /* ignored (sent empty) with host_network */
        const char *log_directory;
        const char *const *labels;
        const char *const *annotations;
        const char *cgroup_parent;
        bool host_network;
        CriSeccompType seccomp;
        const char *seccomp_localhost; /* absolute path for CRI_SECCOMP_LOCALHOST */
        /* security context: the pod's namespaces (kubelet's NamespacesForPod,
         * the containers get the same), LinuxSandboxSecurityContext and the
         * sysctls; zero = a pid namespace per container, the pod's ipc */
        bool host_pid;   /* pid NODE */
        bool share_pid;  /* pid POD (shareProcessNamespace) */
        bool host_ipc;   /* ipc NODE */
        bool privileged; /* some container is privileged */
        bool run_as_user_set, run_as_group_set;
        int64_t run_as_user, run_as_group;
        const int64_t *supplemental_groups;
        size_t n_supplemental_groups;
        const CriSELinux *selinux;  /* the pod's seLinuxOptions */
        const char *const *sysctls; /* flat key/value list */
        /* network: DNSConfig (NULL-terminated lists; all NULL = the runtime's
         * default, the node's resolv.conf) and port mappings */
        const char *const *dns_servers;
        const char *const *dns_searches;
        const char *const *dns_options;
        const CriPortMapping *port_mappings;
        size_t n_port_mappings;
} CriSandboxConfig;

typedef enum CriSandboxState {
        CRI_SANDBOX_READY,
        CRI_SANDBOX_NOTREADY,
        _CRI_SANDBOX_STATE_MAX,
        _CRI_SANDBOX_STATE_INVALID = -22,
} CriSandboxState;

typedef struct CriSandbox {
        char *id;
        char *name;
        char *uid;
        char *namespace_;
        uint32_t attempt;
        CriSandboxState state;
        int64_t created_at; /* unix ns */
        char **labels;      /* flat key/value list */
} CriSandbox;

int cri_run_pod_sandbox(CriClient *c, const CriSandboxConfig *cfg, char **ret_id, CubError *err);
/* The primary IP of PodSandboxStatus.network (cri/network.c); NULL in
 * *ret_ip when none (host network). */
int cri_pod_sandbox_ip(CriClient *c, const char *sandbox_id, char **ret_ip, CubError *err);
/* Stop and remove treat NOT_FOUND as success (they are idempotent). */
int cri_stop_pod_sandbox(CriClient *c, const char *id, CubError *err);
int cri_remove_pod_sandbox(CriClient *c, const char *id, CubError *err);
int cri_pod_sandbox_status(CriClient *c, const char *id, CriSandbox *ret, CubError *err);
/* label_selector may be NULL: all sandboxes. */
int cri_list_pod_sandboxes(CriClient *c, const char *const *label_selector, CriSandbox **ret, size_t *ret_n,
                           CubError *err);
void cri_sandbox_done(CriSandbox *s);
void cri_sandboxes_free(CriSandbox *s, size_t n);

/* ---- containers --------------------------------------------------------- */

/* LinuxContainerResources; 0 / "" means "not set". */
typedef struct CriResources {
        int64_t cpu_period;
        int64_t cpu_quota;
        int64_t cpu_shares;
        int64_t memory_limit_in_bytes;
        int64_t memory_swap_limit_in_bytes; /* cgroup v1 only */
        int64_t oom_score_adj;
        const char *cpuset_cpus;
        const char *const *unified; /* cgroup v2 files, flat key/value list */
} CriResources;

/* CRI MountPropagation (api.proto, Mount.propagation = 5) */
typedef enum CriMountPropagation {
        CRI_PROPAGATION_PRIVATE = 0,
        CRI_PROPAGATION_HOST_TO_CONTAINER = 1,
        CRI_PROPAGATION_BIDIRECTIONAL = 2,
} CriMountPropagation;

typedef struct CriMount {
        const char *container_path;
        const char *host_path;
        bool readonly;
        /* volumes */
        CriMountPropagation propagation;
} CriMount;

typedef struct CriDevice {
        const char *container_path;
        const char *host_path;
        const char *permissions;
} CriDevice;

typedef struct CriContainerConfig {
        const char *name;
        uint32_t attempt;
        const char *image;      /* what to create it from: kubelet gives the image ID */
        const char *user_image; /* the pod's reference (ImageSpec.user_specified_image) */
        const char *const *command;
        const char *const *args;
        const char *working_dir;
        const char *const *envs;
        const char *const *labels;
        const char *const *annotations;
        const char *log_path; /* relative to the sandbox log directory */
        CriResources resources;
        CriSeccompType seccomp;
        const char *seccomp_localhost;
        const CriMount *mounts;
        size_t n_mounts;
        const CriDevice *devices;
        size_t n_devices;
        /* security context: LinuxContainerSecurityContext (namespaces from
         * the sandbox config) */
        bool privileged;
        const char *const *cap_add; /* NULL-terminated, names as the pod writes them */
        const char *const *cap_drop;
        bool run_as_user_set, run_as_group_set;
        int64_t run_as_user, run_as_group;
        const char *run_as_username; /* the image's non-numeric user, when no uid */
        bool readonly_rootfs;
        const int64_t *supplemental_groups;
        size_t n_supplemental_groups;
        bool no_new_privs;
        bool proc_unmasked;        /* procMount Unmasked: no masked or read-only paths */
        const CriSELinux *selinux; /* the effective seLinuxOptions */
        bool stdin_, stdin_once, tty;
        /* an ephemeral container's target: it joins that container's PID
         * namespace (NamespaceMode TARGET); NULL: the pod's */
        const char *pid_target_id;
} CriContainerConfig;

typedef enum CriContainerState {
        CRI_CONTAINER_CREATED,
        CRI_CONTAINER_RUNNING,
        CRI_CONTAINER_EXITED,
        CRI_CONTAINER_UNKNOWN,
        _CRI_CONTAINER_STATE_MAX,
        _CRI_CONTAINER_STATE_INVALID = -22,
} CriContainerState;

const char *cri_container_state_to_string(CriContainerState s);

typedef struct CriContainer {
        char *id;
        char *sandbox_id;
        char *name;
        uint32_t attempt;
        char *image;
        CriContainerState state;
        int64_t created_at;
        char **labels;
} CriContainer;

typedef struct CriContainerStatus {
        char *id;
        char *name;
        uint32_t attempt;
        CriContainerState state;
        int64_t created_at;
        int64_t started_at;
        int64_t finished_at;
        int32_t exit_code;
        char *reason; /* "Completed", "Error", "OOMKilled", "StartError", ... */
        char *message;
        char *image;
        char *log_path;
        char **labels;
        bool has_resources;
        int64_t cpu_period, cpu_quota, cpu_shares, memory_limit_in_bytes;
        char *cpuset_cpus;
} CriContainerStatus;

int cri_create_container(CriClient *c, const char *sandbox_id, const CriContainerConfig *cfg,
                         const CriSandboxConfig *sandbox, char **ret_id, CubError *err);
int cri_start_container(CriClient *c, const char *id, CubError *err);
/* SIGTERM (or the image's stop signal), SIGKILL after timeout_s. */
int cri_stop_container(CriClient *c, const char *id, int64_t timeout_s, CubError *err);
int cri_remove_container(CriClient *c, const char *id, CubError *err);
/* sandbox_id and label_selector may be NULL. */
int cri_list_containers(CriClient *c, const char *sandbox_id, const char *const *label_selector, CriContainer **ret,
                        size_t *ret_n, CubError *err);
int cri_container_status(CriClient *c, const char *id, CriContainerStatus *ret, CubError *err);
int cri_update_container_resources(CriClient *c, const char *id, const CriResources *res, CubError *err);

/* ListContainerStats (no filter): per container its id and writable layer
 * (ContainerStats.writable_layer); *_set is false when the runtime left a
 * value out. */
typedef struct CriContainerStats {
        char *id;
        bool writable_layer_set;
        uint64_t writable_layer_used_bytes;
} CriContainerStats;

int cri_list_container_stats(CriClient *c, CriContainerStats **ret, size_t *ret_n, CubError *err);
void cri_container_stats_free(CriContainerStats *l, size_t n);
void cri_container_done(CriContainer *ct);
void cri_containers_free(CriContainer *ct, size_t n);
void cri_container_status_done(CriContainerStatus *s);

/* ---- exec and logs (exec.c) ------------------------------------------------ */

typedef struct CriExecResult {
        int32_t exit_code;
        char *out;
        size_t n_out;
        char *err_out;
        size_t n_err;
} CriExecResult;

/* ExecSync: cmd (NULL-terminated) in the container, at most timeout_s
 * seconds (0 = no limit); stdout, stderr (NUL-terminated copies) and the
 * exit code. */
int cri_exec_sync(CriClient *c, const char *container_id, const char *const *cmd, int64_t timeout_s, CriExecResult *ret,
                  CubError *err);
void cri_exec_result_done(CriExecResult *r);
/* ReopenContainerLog: the runtime reopens the container's log file (after
 * log rotation renamed it). */
int cri_reopen_container_log(CriClient *c, const char *container_id, CubError *err);

/* ---- streaming (stream.c) ---------------------------------------------------- */

/* which streams a session carries (kubelet's stdin, stdout, stderr, tty) */
typedef struct CriStreamFlags {
        bool in, out, err, tty;
} CriStreamFlags;

/* Exec, Attach, PortForward: the URL of the runtime's streaming server for
 * one session (*ret_url, malloc'd), which the caller connects to or proxies. */
int cri_exec(CriClient *c, const char *container_id, const char *const *cmd, const CriStreamFlags *f, char **ret_url,
             CubError *err);
int cri_attach(CriClient *c, const char *container_id, const CriStreamFlags *f, char **ret_url, CubError *err);
int cri_port_forward(CriClient *c, const char *sandbox_id, const int32_t *ports, size_t n_ports, char **ret_url,
                     CubError *err);

/* ---- images ------------------------------------------------------------- */

/* security context (cri/image-user.c): the image's user as ImageStatus
 * gives it: *ret_uid_set and *ret_uid for a numeric one, else *ret_username
 * (NULL when neither; kubelet then takes uid 0). -ENOENT when the image is
 * not there. */
int cri_image_user(CriClient *c, const char *image, bool *ret_uid_set, int64_t *ret_uid, char **ret_username,
                   CubError *err);

/* *ret_present tells whether the image is there; ret_id (optional) its ID. */
int cri_image_status(CriClient *c, const char *image, bool *ret_present, char **ret_id, uint64_t *ret_size,
                     CubError *err);
/* PullImage; auth NULL: without credentials (an image pull secret's
 * username, password and registry otherwise) */
typedef struct CriAuth {
        const char *username;
        const char *password;
        const char *server_address;
} CriAuth;
int cri_pull_image(CriClient *c, const char *image, const CriAuth *auth, char **ret_ref, CubError *err);

/* flat key/value list helpers */
void cri_strv_free(char **l);
const char *cri_kv_get(char *const *kv, const char *key);

/* ---- runtime events (cri/events.c) -------------------------------------- */

/* containerd's event stream (Events.Subscribe on the CRI socket; not CRI,
 * containerd 1.6 has no GetContainerEvents): a thread reads it and counts,
 * on an eventfd, each task exit, start or OOM kill and each container
 * deletion in namespace ns (containerd's CRI uses "k8s.io"), execs' exits
 * left out, and each (re)subscription or loss of the stream (events may have
 * been missed). The loop watches cri_events_fd() for reading, drains it with
 * cri_events_take(), and relists. The stream shares c's channel; c must
 * outlive it. */
#define CRI_EVENTS_NAMESPACE "k8s.io"
typedef enum CriEventsState {
        CRI_EVENTS_CONNECTING,  /* not subscribed (yet, or again after a back-off) */
        CRI_EVENTS_SUBSCRIBED,  /* the stream is up */
        CRI_EVENTS_UNSUPPORTED, /* the runtime has no such service (UNIMPLEMENTED) */
        _CRI_EVENTS_STATE_MAX,
        _CRI_EVENTS_STATE_INVALID = -22,
} CriEventsState;
typedef struct CriEvents CriEvents;

int cri_events_start(CriClient *c, const char *ns, CriEvents **ret, CubError *err);
CriEvents *cri_events_free(CriEvents *e);
static inline void cri_events_freep(CriEvents **e) {
        if (*e)
                cri_events_free(*e);
}
int cri_events_fd(const CriEvents *e);
uint64_t cri_events_take(CriEvents *e);
/* the state, the count of wanted events so far, and the last error ("" none) */
CriEventsState cri_events_state(CriEvents *e, uint64_t *ret_events, char *error, size_t n_error);
const char *cri_events_state_to_string(CriEventsState s);
/* pure: whether one packed Envelope asks for a relist (exposed for tests) */
bool cri_event_wanted(const char *ns, const uint8_t *envelope, size_t len);
