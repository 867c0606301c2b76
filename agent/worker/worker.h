/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/worker: pod workers. A small pool of threads runs the blocking CRI
 * sequences — relist, sync one pod, kill one pod — and hands each finished
 * job back to the event loop through an eventfd. Workers never touch the
 * loop's state: a job carries an immutable, refcounted WorkerSpec in and
 * its result out.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../cri/cri.h"
#include "../cgroup/cgroup.h"
#include "../pod/pod.h"
#include "../util/err.h"

/* cubelet's labels on sandboxes and containers */
#define WORKER_LABEL_MANAGED "cubelet.io/managed"
#define WORKER_LABEL_UID "cubelet.io/pod-uid"
#define WORKER_LABEL_NAME "cubelet.io/pod-name"
#define WORKER_LABEL_NAMESPACE "cubelet.io/pod-namespace"
#define WORKER_LABEL_HASH "cubelet.io/config-hash"
#define WORKER_LABEL_CGROUP "cubelet.io/cgroup"
#define WORKER_LABEL_GRACE "cubelet.io/grace-period"
#define WORKER_LABEL_CONTAINER "cubelet.io/container-name"
#define WORKER_LABEL_INIT "cubelet.io/init"
/* the device IDs a container was created with: "res=id,id;res2=id" */
/* kubelet's own labels (pkg/kubelet/types/labels.go), set beside cubelet's so
 * that crictl, log shippers and cAdvisor-style tools name the pod and the
 * container of what cubelet runs as they do kubelet's */
#define WORKER_LABEL_K8S_POD_NAME "io.kubernetes.pod.name"
#define WORKER_LABEL_K8S_POD_NAMESPACE "io.kubernetes.pod.namespace"
#define WORKER_LABEL_K8S_POD_UID "io.kubernetes.pod.uid"
#define WORKER_LABEL_K8S_CONTAINER_NAME "io.kubernetes.container.name"
#define WORKER_LABEL_DEVICES "cubelet.io/devices"
/* termination messages (agent/worker/termmsg.c): the host file mounted at
 * the container's terminationMessagePath; the policy when it is
 * FallbackToLogsOnError */
#define WORKER_LABEL_TERM_FILE "cubelet.io/termination-message-file"
#define WORKER_LABEL_TERM_POLICY "cubelet.io/termination-message-policy"

/* A desired pod, immutable once built; shared by the loop and jobs. */
typedef struct WorkerSpec {
        int ref;
        Pod *pod;
        PodQOSClass qos;
        CgGroupValues cgroup;
        CgContainerResources *init_res; /* one per init container */
        CgContainerResources *app_res;  /* one per app container */
        char *log_dir;
        char *source;
} WorkerSpec;

/* Takes ownership of pod. */
int worker_spec_new(Pod *pod, const char *source, const CgOptions *o, const char *log_root, WorkerSpec **ret,
                    CubError *err);
WorkerSpec *worker_spec_ref(WorkerSpec *s);
/* its containers: init, app and ephemeral (pod_container_at's range; a job's configs have as many) */
size_t worker_spec_containers(const WorkerSpec *s);
WorkerSpec *worker_spec_unref(WorkerSpec *s);

typedef struct WorkerContainer {
        char *id;
        char *name;
        bool init;
        uint32_t attempt;
        CriContainerState state;
        int32_t exit_code;
        char *reason;
        int64_t started_at;  /* unix ns */
        int64_t finished_at; /* unix ns */
        char *devices;       /* its WORKER_LABEL_DEVICES, NULL when none */
        char *message;       /* ended: the runtime's message and the termination message; NULL: none */
} WorkerContainer;

/* What the runtime holds for one pod UID (all its sandboxes). */
typedef struct WorkerObserved {
        char *uid;
        char *name;
        char *namespace_;
        char *config_hash;           /* of the newest sandbox */
        char *cgroup;                /* from the sandbox label */
        int64_t grace;               /* from the sandbox label */
        bool ready;                  /* a READY sandbox exists */
        uint32_t attempt;            /* of the newest sandbox */
        WorkerContainer *containers; /* latest attempt per container name */
        size_t n_containers;
        /* network */
        char *pod_ip;        /* of the newest ready sandbox; NULL: none or host network */
        bool pod_ip_unknown; /* the runtime did not answer for that sandbox: keep the IP known */
} WorkerObserved;

/* A host device or mount handed to a container (owned strings). */
typedef struct WorkerDevice {
        char *container_path;
        char *host_path;
        char *permissions;
} WorkerDevice;

typedef struct WorkerMount {
        char *container_path;
        char *host_path;
        bool readonly;
        /* volumes */
        CriMountPropagation propagation;
} WorkerMount;

/* An image pull secret's credentials for a registry (owned). */
typedef struct WorkerPullAuth {
        char *username;
        char *password;
} WorkerPullAuth;

/* A container's share of the CRI container config from the managers; every
 * member owned, NULL/0 = nothing. */
typedef struct WorkerContainerConfig {
        char *cpuset; /* NULL: the spec's */
        WorkerDevice *devices;
        size_t n_devices;
        WorkerMount *mounts; /* before the pod's own volume mounts */
        size_t n_mounts;
        char **envs;        /* flat key, value, ..., NULL: before the pod's env (the pod's win) */
        char **annotations; /* flat key, value, ..., NULL */
        char **labels;      /* flat key, value, ..., NULL: extra container labels */
        /* the pod's env from the API server (the loop's, at submit time):
         * envFrom's keys (flat, prefixed, NULL-terminated: first in the
         * env, seen by $(VAR)); each env entry's configMapKeyRef or
         * secretKeyRef value (n_env_refs = the container's n_env; NULL: not
         * such an entry, or an optional one that is missing); env_error:
         * the CreateContainerConfigError message when a value cannot be
         * had (kubelet's: `secret "creds" not found`) */
        char **env_from;
        /* the Services' variables (kube_service_env: flat, NULL-terminated;
         * NULL: none, as on a node without an API server) */
        char **service_env;
        char **env_refs;
        size_t n_env_refs;
        char *env_error;
        /* the image pull secrets' credentials for its image, in the order
         * kubelet tries them (the loop's, at submit time); none: pulled
         * without */
        WorkerPullAuth *pull_auths;
        size_t n_pull_auths;
        /* called on the worker thread right before CreateContainer (the
         * device plugins' PreStartContainer, as kubelet's
         * generateContainerConfig): a failure fails the sync as
         * CreateContainerConfigError; NULL = none. pre_create_free(ud)
         * when the config goes. One owner: the device manager. */
        int (*pre_create)(void *ud, CubError *err);
        void (*pre_create_free)(void *ud);
        void *pre_create_ud;
} WorkerContainerConfig;

void worker_container_config_done(WorkerContainerConfig *c);
void worker_container_configs_free(WorkerContainerConfig *c, size_t n);
/* Appends a key/value pair to a flat, NULL-terminated list (copies); read
 * with cri_kv_get(), freed with cri_strv_free(). */
int worker_kv_push(char ***l, const char *key, const char *value);

/* What a SYNC job failed at (the loop maps it to kubelet's waiting reasons
 * and events in one place: agent/lifecycle/reasons.c). */
typedef enum WorkerFailKind {
        WORKER_FAIL_NONE,
        WORKER_FAIL_SYNC,             /* listing what the runtime holds: FailedSync */
        WORKER_FAIL_POD_CGROUP,       /* the pod cgroup: FailedCreatePodContainer */
        WORKER_FAIL_KILL,             /* a stale sandbox would not stop: FailedKillPod */
        WORKER_FAIL_SANDBOX,          /* RunPodSandbox, the pod network: FailedCreatePodSandBox */
        WORKER_FAIL_IMAGE_PULL,       /* ErrImagePull, then ImagePullBackOff */
        WORKER_FAIL_IMAGE_NEVER_PULL, /* ErrImageNeverPull */
        WORKER_FAIL_CONFIG,           /* CreateContainerConfigError */
        WORKER_FAIL_CREATE,           /* CreateContainerError */
        WORKER_FAIL_START,            /* RunContainerError */
        WORKER_FAIL_POST_START,       /* PostStartHookError */
        _WORKER_FAIL_MAX,
} WorkerFailKind;

typedef enum WorkerJobKind {
        WORKER_RELIST,
        WORKER_SYNC,
        WORKER_KILL,
        WORKER_UPDATE,         /* UpdateContainerResources with new cpusets on running containers */
        WORKER_STOP_CONTAINER, /* probes and hooks: one container killed (preStop, then StopContainer) */
        _WORKER_JOB_MAX,
        _WORKER_JOB_INVALID = -22,
} WorkerJobKind;

/* SYNC: an image the job made sure of (kubelet's Pulling and Pulled events) */
typedef struct WorkerPull {
        size_t container;                     /* its index, init containers first */
        bool pulled;                          /* PullImage was called; false: the image was there */
        bool ok;                              /* ... and it succeeded */
        uint64_t started_usec, finished_usec; /* CLOCK_MONOTONIC */
        uint64_t size;                        /* bytes (ImageStatus after the pull), 0: unknown */
} WorkerPull;

typedef struct WorkerJob {
        WorkerJobKind kind;
        /* SYNC */
        WorkerSpec *spec;
        bool *may_start; /* per container, init containers first; NULL = all may */
        /* SYNC and UPDATE: each container's config from the managers at
         * submit time (init containers first); NULL = the spec's alone */
        WorkerContainerConfig *configs;
        /* UPDATE of an in-place resize: the pod cgroup too, every running
         * container (but those with skip[k]: restarted for it), and no
         * memory limit below the usage it would cut */
        bool resize;
        bool *skip;
        /* KILL */
        char *uid;
        char *cgroup;
        int64_t grace;
        /* probes and hooks: STOP_CONTAINER's container (and spec); KILL's
         * spec when the loop still has it (NULL: no preStop hooks) */
        char *container_id;
        size_t container;
        /* result */
        int r;
        char error[CUB_ERR_MSG_MAX];
        WorkerFailKind fail;   /* SYNC: what it failed at (the first failure) */
        size_t fail_container; /* ... the container's index (init first), SIZE_MAX: the pod */
        char lost_sandbox[80]; /* SYNC: a sandbox listed ready whose task the runtime had lost ("": none) */
        WorkerPull *pulls;     /* SYNC: the images made sure of, in order */
        size_t n_pulls;
        WorkerObserved *observed; /* RELIST */
        size_t n_observed;
        /* RELIST with want_status: the runtime's conditions (CRI Status),
         * status_known when the call answered */
        bool want_status, status_known;
        bool first; /* queued ahead of the others (the agent's first relist) */
        CriRuntimeStatus status;
        uint64_t started_usec, finished_usec;
        /* SYNC latencies, CLOCK_MONOTONIC µs like started_usec: when this job
         * sent RunPodSandbox (0 when it created no sandbox: a ready one was
         * kept, or RunPodSandbox failed), and when its last StartContainer
         * returned OK (0 when it started no container). */
        uint64_t sandbox_requested_usec;
        uint64_t containers_started_usec;
        /* security context: SYNC result, per container (init first) the
         * CreateContainerConfigError message of one that could not be created
         * (runAsNonRoot), NULL for the others; NULL = none at all */
        char **config_errors;
        size_t n_config_errors;
        char *pod_ip; /* network: SYNC, the pod IP of its sandbox (NULL: none or host network); STOP_CONTAINER: the
                         target of its preStop httpGet */
        struct WorkerJob *next;
} WorkerJob;

WorkerJob *worker_job_new(WorkerJobKind kind);
WorkerJob *worker_job_free(WorkerJob *j);
void worker_observed_free(WorkerObserved *o, size_t n);
const WorkerContainer *worker_observed_container(const WorkerObserved *o, const char *name);

typedef struct WorkerPool WorkerPool;

/* The pool starts n_threads threads and grows, up to WORKER_POOL_MAX, by a
 * thread for each stop (a kill, a container's stop) that runs or is queued
 * while no thread is idle: a stop holds its thread for the pod's grace
 * period, and kubelet's pod workers (one goroutine per pod) never make one
 * pod wait on another's stop. Worker threads inherit the
 * caller's signal mask. *ret_fd becomes readable when finished jobs wait in
 * worker_pool_take(). */
#define WORKER_POOL_MAX 32
int worker_pool_new(unsigned n_threads, CriClient *cri, CgWriter *cg, WorkerPool **ret, int *ret_fd, CubError *err);
void worker_pool_submit(WorkerPool *p, WorkerJob *j);
/* The runtime's cgroup driver against the writer's (containerd's CRI Status
 * "config": the default runtime's SystemdCgroup): -EINVAL with one message
 * naming both on a mismatch. A runtime that does not say, or cannot be
 * asked now, passes (asked again before the next sandbox); a match is
 * remembered. Any thread. */
int worker_pool_check_runtime(WorkerPool *p, CubError *err);
/* env sources: what the sync builds a container's env from (node name,
 * node allocatable); the host's addresses are read at each sync. Call
 * before the first job. */
typedef struct WorkerNodeEnv {
        char *node_name;
        int64_t alloc_cpu_milli, alloc_memory, alloc_ephemeral_storage;
} WorkerNodeEnv;
int worker_pool_set_node_env(WorkerPool *p, const WorkerNodeEnv *e);
/* Finished jobs, oldest first (a list through ->next); clears the eventfd. */
WorkerJob *worker_pool_take(WorkerPool *p);
WorkerPool *worker_pool_free(WorkerPool *p);

/* network: the node's settings for the pod network (sync.c), strings
 * copied: the pod's /etc/hosts goes to <pods_dir>/<uid>/etc-hosts. */
typedef struct WorkerNetwork {
        const char *pods_dir;
        const char *const *cluster_dns; /* NULL-terminated; NULL = none */
        const char *cluster_domain;     /* NULL or "" = none */
        const char *resolv_conf;        /* NULL = /etc/resolv.conf, "" = none */
        const char *host_ip;            /* the node's IP (hostNetwork pods' podIP) */
} WorkerNetwork;

int worker_pool_set_network(WorkerPool *p, const WorkerNetwork *n, CubError *err);
/* The pod's hosts file path (malloc'd) and its removal with the pod. */
char *worker_hosts_path(const char *pods_dir, const char *uid);
void worker_hosts_remove(const char *pods_dir, const char *uid);

/* Whether a container that ended this way is started again. */
bool worker_should_restart(const char *restart_policy, int32_t exit_code);

/* ---- pure helpers of the sync (unit-tested) -------------------------------- */

/* What a SYNC does with one container, given its latest attempt. */
typedef enum WorkerAction {
        WORKER_ACTION_NONE,    /* leave it: running, succeeded, or ended and not restarted */
        WORKER_ACTION_START,   /* never ran: attempt 0 */
        WORKER_ACTION_RESTART, /* ended: remove it, start the next attempt */
        _WORKER_ACTION_MAX,
        _WORKER_ACTION_INVALID = -22,
} WorkerAction;

/* init: an init container (sidecar: one with restartPolicy Always);
 * may_start: the restart back-off allows it now; exists: an attempt was
 * seen, with state and exit_code (the exit code only counts once it ended).
 * *ret_blocks says whether the containers after it must wait: an init
 * container that is not a sidecar and has not succeeded yet. */
WorkerAction worker_container_action(bool init, bool sidecar, const char *restart_policy, bool may_start, bool exists,
                                     CriContainerState state, int32_t exit_code, bool *ret_blocks);

/* The integer value of a label; dflt when it is missing, empty, not a
 * number or out of range. */
int64_t worker_label_int(char *const *labels, const char *key, int64_t dflt);

/* A bounded, NULL-terminated flat key/value list for CRI labels. */
#define WORKER_LABELS_MAX 16
typedef struct WorkerLabels {
        const char *kv[2 * WORKER_LABELS_MAX + 1];
        size_t n; /* entries used in kv (2 per label) */
} WorkerLabels;

/* -E2BIG when the list is full (it is left as it was). */
int worker_labels_add(WorkerLabels *l, const char *key, const char *value);

/* The sandbox's labels or annotations as kubelet gives them (newPodLabels,
 * newPodAnnotations): the pod's map, then own (NULL: none), whose keys win.
 * *ret is a NULL-terminated flat list to free() (the strings are borrowed). */
int worker_sandbox_kv(const PodStringMap *pod, const WorkerLabels *own, const char ***ret);
