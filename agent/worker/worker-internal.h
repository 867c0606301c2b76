/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the agent/worker sources (worker.c, relist.c, sync.c,
 * container-config.c, kill.c, ...) and their unit tests only. */

#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "../probes/probes.h"
#include "../util/cleanup.h"
#include "../util/time.h"
#include "worker.h"

struct WorkerPool {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        WorkerJob *queue_head, *queue_tail;
        WorkerJob *done_head, *done_tail;
        bool stopping;
        pthread_t *threads; /* max_threads slots, n_threads started */
        unsigned n_threads, base_threads, max_threads;
        unsigned n_idle;     /* threads waiting for a job */
        unsigned n_queued;   /* jobs not yet taken */
        unsigned n_stopping; /* threads in a stop (a kill or a container's stop: a grace period) */
        int efd;
        CriClient *cri;
        CgWriter *cg;
        bool runtime_checked;   /* __atomic: the runtime's cgroup driver matched */
        WorkerNodeEnv node_env; /* env sources */
        /* network (set before any job runs, read-only after) */
        char *pods_dir;
        char **cluster_dns;
        char *cluster_domain;
        char *resolv_conf;
        char *host_ip;
        char **sandbox_ips; /* under lock: flat sandbox id, pod IP ("" none) list, pruned by relist */
};

static inline uint64_t worker_now_usec(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

void worker_container_done(WorkerContainer *c);

/* The jobs, run on a pool thread: 0 or -errno with err filled. */
int worker_job_relist(WorkerPool *p, WorkerJob *j, CubError *err);
int worker_job_sync(WorkerPool *p, WorkerJob *j, CubError *err);
int worker_job_kill(WorkerPool *p, WorkerJob *j, CubError *err);
int worker_job_update(WorkerPool *p, WorkerJob *j, CubError *err);
/* sync.c: adds the NULL-terminated key/value pairs after l; -E2BIG (and
 * err set) when they do not fit */
__attribute__((sentinel)) int worker_labels_set(WorkerLabels *l, CubError *err, ...);

/* env sources: "IPv4,IPv6", the node's addresses (worker_host_ips) */
#define WORKER_HOST_IPS_MAX (2 * 46 + 2)

/* A SYNC job's context (sync.c), shared with the container's config
 * (container-config.c). */
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

/* container-config.c: container idx's CRI config (attempt; image_ref: the
 * image as pulled, NULL or "": the spec's) into *w, its storage owned by w;
 * a config error (CreateContainerConfigError) is noted on the job. */
typedef struct WorkerCriConfig {
        CriContainerConfig cfg;
        WorkerLabels labels;
        const char **envs;
        char **pod_env, **command, **args;
        CriDevice *devices;
        CriMount *mounts;
        int64_t *groups;
        char *log_path, *username, *term_file;
        CriSELinux selinux;
        char seccomp_path[PATH_MAX];
        const char *unified[CG_UNIFIED_KV_MAX];
} WorkerCriConfig;
int worker_container_config(SyncCtx *x, size_t idx, uint32_t attempt, const char *image_ref, WorkerCriConfig *w,
                            CubError *err);
void worker_cri_config_done(WorkerCriConfig *w);
/* container-config.c: the CRI resources of a container (the spec's, with this cpuset;
 * the unified map in kv points into res), and the resources of the pod's
 * container idx in pod_container_at()'s order */
CriResources worker_cri_resources(const CgContainerResources *res, const char *cpuset,
                                  const char *kv[static CG_UNIFIED_KV_MAX]);
const CgContainerResources *worker_resources_at(const WorkerSpec *s, size_t idx);
/* probes and hooks (kill.c) */
int worker_job_stop_container(WorkerPool *p, WorkerJob *j, CubError *err);
/* Runs the preStop hook of container c (id) within grace seconds; returns
 * the grace left for StopContainer (kubelet's minimum of 2 s). */
int64_t worker_pre_stop(WorkerPool *p, const Pod *pod, const PodContainer *c, const char *id, const char *pod_ip,
                        int64_t grace);
/* A hook's target: the handler h of container c (id) in the pod at pod_ip
 * (NULL or "": the node's loopback), with timeout_s. */
void worker_hook_target(const PodContainer *c, const PodHandler *h, const char *id, const char *pod_ip,
                        int64_t timeout_s, ProbeTarget *ret);

/* kubelet's termination ordering (kuberuntime_termination_order.go) for
 * the n containers to stop, by name: with sidecars, a sidecar's stop waits
 * for every app container and for each sidecar after it in the spec (until
 * its grace period has passed); the others stop at once, together.
 * prereq[i * n + k] (n * n, filled): container i waits for container k.
 * No pod (NULL), or a name not in its spec: no order. */
void worker_stop_order(const Pod *pod, const char *const *names, size_t n, bool *prereq);

/* Tears down the sandboxes of pod uid; with keep_hash, the first ready one
 * of that config hash is kept and its id returned in *ret_ready_id, and
 * *ret_attempt is set past every attempt seen. */
/* final (NULL: not wanted): what each container stopped ended with (its
 * last state: exit code, reason, times, termination message), the newest
 * attempt per name */
int worker_kill_uid(WorkerPool *p, const Pod *pod, const char *uid, const char *keep_hash, int64_t grace,
                    WorkerObserved *final, uint32_t *ret_attempt, bool *ret_have_ready, char **ret_ready_id,
                    CubError *err);

/* network (network.c): the pod IP of a sandbox, from the pool's cache or
 * PodSandboxStatus (NULL: none); remember/prune keep the cache. */
int worker_sandbox_ip(WorkerPool *p, const char *sandbox_id, char **ret_ip, CubError *err);
void worker_sandbox_ip_remember(WorkerPool *p, const char *sandbox_id, const char *ip);
void worker_sandbox_ips_prune(WorkerPool *p, const CriSandbox *sb, size_t n);
void worker_network_done(WorkerPool *p);

/* network (network.c): a pod's share of the sandbox config and its
 * /etc/hosts, per SYNC */
typedef struct WorkerPodNet {
        char *hostname, *domain, *kernel_hostname;
        PodDns dns;
        CriPortMapping *ports;
        size_t n_ports;
        char *hosts_path;
        char *pod_ip;
} WorkerPodNet;

/* Hostname, DNS and port mappings into sbc (which then points into n). */
int worker_pod_net_prepare(WorkerPool *p, const Pod *pod, WorkerPodNet *n, CriSandboxConfig *sbc, CubError *err);
/* After RunPodSandbox or for the kept sandbox: the pod IP and the hosts file. */
int worker_pod_net_started(WorkerPool *p, const Pod *pod, const char *sandbox_id, WorkerPodNet *n, CubError *err);
void worker_pod_net_done(WorkerPodNet *n);

/* image.c: kubelet's EnsureImageExists for container (index, init first):
 * Always pulls at every container start, IfNotPresent when the image is
 * missing, Never not at all; each pull or image found present noted on j
 * (NULL: not noted); auths: the pull secrets' credentials to try (none:
 * without); *ret_kind: what a failure is (image pull, never pull); *ret_ref:
 * the image's ID as the runtime resolved it (ImageStatus, or PullImage's
 * image_ref; NULL when it gave none), which kubelet creates the container
 * from. */
int worker_ensure_image(WorkerPool *p, WorkerJob *j, size_t container, const char *image, const char *policy,
                        const WorkerPullAuth *auths, size_t n_auths, WorkerFailKind *ret_kind, char **ret_ref,
                        CubError *err);

/* secctx.c: the seccomp profile of a container (c) or its pod, Unconfined
 * when neither has one, a Localhost one written into buf as its absolute
 * path under POD_SECCOMP_ROOT (*ret_local: buf or NULL); the supplemental groups of
 * the pod's sandbox and containers, fsGroup first (*ret NULL when none;
 * -ENOMEM). */
CriSeccompType worker_seccomp_of(const PodSeccomp *c, const PodSeccomp *pod, char *buf, size_t size,
                                 const char **ret_local);
int worker_pod_groups(const Pod *pod, int64_t **ret, size_t *ret_n);
/* a PodSELinux as the CRI's SELinuxOption in buf (NULL when not set) */
const CriSELinux *worker_selinux_of(const PodSELinux *s, CriSELinux *buf);
/* env sources: the node's first IPv4 address that is up and not loopback,
 * and "IPv4,IPv6" with its first global IPv6 one (hostips.c) */
void worker_host_ips(char host_ip[static 46], char host_ips[static WORKER_HOST_IPS_MAX]);

/* termination messages (termmsg.c): a new empty file for a container of pod
 * uid, <pods_dir>/<uid>/containers/<name>/<8 hex digits>, mode 0666; the
 * message of an ended container (NULL: none), from its file, else with
 * fallback its log's tail, after the runtime's message; the pod's files
 * removed */
int worker_term_file(const char *pods_dir, const char *uid, const char *container, char **ret_path, CubError *err);
char *worker_term_message(const char *host_path, bool fallback, const char *log_path, const char *runtime_message);
/* the message of ended container st, as its labels say (file, policy) */
char *worker_term_message_of(const CriContainerStatus *st);
void worker_term_remove(const char *pods_dir, const char *uid);
