/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/pod's inputs besides the pod (node.c): the node (capacity,
 * allocatable, labels, taints, conditions, CPU topology) and the
 * KubeletConfiguration file with cubelet's own keys. Included by pod.h; includes pod-model.h and
 * eviction/'s configuration (its thresholds are decoded into it).
 */

#include "../../eviction/eviction.h"
#include "pod-model.h"

/* ---- Node and configuration inputs -------------------------------------- */

typedef struct PodTaint {
        char *key;
        char *value;
        char *effect;
} PodTaint;

typedef struct PodNodeCondition {
        char *type;   /* MemoryPressure, DiskPressure, PIDPressure, Ready, ... */
        char *status; /* "True", "False", "Unknown" */
} PodNodeCondition;

/* One CPU of the node's optional top-level "topology" list (cubelet's
 * extension for `cubelet admit`). */
typedef struct PodCpuInfo {
        int32_t cpu;
        int32_t core;
        int32_t socket;
        int32_t numa;
} PodCpuInfo;

typedef struct PodNode {
        char *name;
        PodStringMap labels;
        PodResourceList capacity;
        PodResourceList allocatable;
        PodTaint *taints;
        size_t n_taints;
        PodNodeCondition *conditions;
        size_t n_conditions;
        PodCpuInfo *topology;
        size_t n_topology;
        int64_t swap_capacity; /* status.nodeInfo.swap.capacity, bytes */
        bool swap_set;         /* status.nodeInfo.swap present */
} PodNode;

PodNode *pod_node_free(PodNode *n);
static inline void pod_node_freep(PodNode **p) {
        if (*p)
                pod_node_free(*p);
}
/* A v1 Node (JSON or YAML). */
int pod_node_load_file(const char *path, PodNode **ret, CubError *err);
int pod_node_decode(const char *buf, size_t len, const char *source, PodNode **ret, CubError *err);

/* one item of shutdownGracePeriodByPodPriority */
typedef struct PodShutdownPriority {
        int32_t priority;
        int64_t grace_s; /* shutdownGracePeriodSeconds */
} PodShutdownPriority;

/* A Go duration of the configuration (metav1.Duration), parsed once by
 * the decoder: µs (negative only where a check allows it), and whether the
 * file set it (else the field's default). Messages print it with
 * cub_duration_format, as kubelet's print a time.Duration. */
typedef struct PodDuration {
        int64_t usec;
        bool set;
} PodDuration;

/* The configuration's enums, as the decoder gives them (0: the default,
 * or for the cgroup driver "not set": the host decides). */
typedef enum PodCgroupDriver {
        POD_CGROUP_DRIVER_UNSET,
        POD_CGROUP_DRIVER_CGROUPFS,
        POD_CGROUP_DRIVER_SYSTEMD,
} PodCgroupDriver;
typedef enum PodCpuManagerPolicy {
        POD_CPU_MANAGER_NONE,
        POD_CPU_MANAGER_STATIC,
} PodCpuManagerPolicy;
typedef enum PodSwapBehavior {
        POD_SWAP_NO_SWAP, /* "NoSwap", or "" */
        POD_SWAP_LIMITED, /* "LimitedSwap" */
} PodSwapBehavior;
typedef enum PodEvictionPolicy {
        POD_EVICTION_CUBELET,
        POD_EVICTION_KUBELET,
} PodEvictionPolicy;
typedef enum PodAuthorizationMode {
        POD_AUTHZ_WEBHOOK,
        POD_AUTHZ_ALWAYS_ALLOW,
} PodAuthorizationMode;
typedef enum PodOfflinePods {
        POD_OFFLINE_KEEP,
        POD_OFFLINE_START,
} PodOfflinePods;
_Static_assert(sizeof(PodCgroupDriver) == sizeof(int) && sizeof(PodOfflinePods) == sizeof(int),
               "pod_dec_enum writes an int");

const char *pod_cgroup_driver_to_string(PodCgroupDriver d);
/* "cgroupfs" or "systemd"; POD_CGROUP_DRIVER_UNSET otherwise */
PodCgroupDriver pod_cgroup_driver_from_string(const char *s);

/* The KubeletConfiguration fields cubelet supports so far. Decoded and
 * checked once (pod_kubelet_config_decode): durations parsed and within
 * their bounds, enums among their values, errors naming the field. */
typedef struct PodKubeletConfig {
        int64_t pod_pids_limit;        /* podPidsLimit, -1 = unlimited */
        bool cpu_cfs_quota;            /* cpuCFSQuota, default true */
        PodCgroupDriver cgroup_driver; /* cgroupDriver; UNSET: the host decides (cubelet run resolves it) */
        int kind;                      /* "kind": checked to be KubeletConfiguration */
        PodResourceList kube_reserved;
        PodResourceList system_reserved;
        char *static_pod_path;  /* staticPodPath */
        char *runtime_endpoint; /* containerRuntimeEndpoint */
        /* cubelet's own settings, under "cubelet:" */
        char *state_dir;
        char *socket_path;
        char *node_name;
        char *cgroup_mount;
        /* admission and the CPU manager */
        int64_t max_pods;                         /* maxPods, default 110 */
        PodCpuManagerPolicy cpu_manager_policy;   /* cpuManagerPolicy: "none" (default) or "static" */
        PodDuration cpu_manager_reconcile_period; /* cpuManagerReconcilePeriod: default 10s, at least 100ms */
        char *reserved_system_cpus;               /* reservedSystemCPUs, a cpu list */
        PodSwapBehavior swap_behavior; /* memorySwap.swapBehavior: "NoSwap" (default, also "") or "LimitedSwap" */
        /* memory QoS (KEP-2570): featureGates.MemoryQoS (default false; the
         * other gates land in ignored as "featureGates.<name>") and
         * memoryThrottlingFactor (default 0.9, in (0, 1] as kubelet's
         * validation.go wants it, else the decode fails naming the field) */
        bool memory_qos;
        double memory_throttling_factor;
        /* eviction: evictionHard, evictionSoft, evictionSoftGracePeriod and
         * evictionMinimumReclaim (signal -> value) decoded into eviction/'s
         * configuration; with evictionMaxPodGracePeriod, the transition
         * period and cubelet.evictionPolicy, finished once by the decode
         * (kubelet's default hard thresholds when evictionHard is absent, a
         * grace period for each soft threshold, allocatableMemory.available);
         * pod_kubelet_config_init's: kubelet's defaults, finished */
        EvictConfig eviction;
        int64_t eviction_max_pod_grace_period;           /* evictionMaxPodGracePeriod, seconds */
        PodDuration eviction_pressure_transition_period; /* default 5m, not negative */
        /* cubelet's own, under "cubelet:" */
        PodEvictionPolicy eviction_policy;  /* evictionPolicy: "cubelet" (default) or "kubelet" */
        PodDuration eviction_sample_period; /* evictionSamplePeriod: default 1s, at least 10ms */
        char *psi_memory_trigger;           /* psiMemoryTrigger, default "some 150000 1000000" */
        char *device_plugin_dir;            /* devicePluginDir, default /var/lib/kubelet/device-plugins; "" = none */
        /* the HTTP API: readOnlyPort (default 10255, 0 = off), address, TLS, authentication.x509.clientCAFile */
        int64_t read_only_port;
        bool read_only_port_set;
        char *address, *tls_cert_file, *tls_private_key_file, *client_ca_file;
        /* the kubelet server (with a kubeconfig): port (default 10250, 0 = off),
         * authentication.anonymous.enabled (false), authentication.webhook.enabled (true),
         * authorization.mode ("Webhook" or "AlwaysAllow") */
        int64_t port;
        bool anonymous_auth, webhook_authn;
        PodAuthorizationMode authorization_mode;
        /* the manifest URL: kubelet's staticPodURL, staticPodURLHeader (as "Name: value" lines, each
         * name's values in order), httpCheckFrequency (default 20s, at least 100ms); cubelet's own
         * under "cubelet:" the TLS files and the timeout (default 10s, at least 1ms) */
        char *static_pod_url;
        PodStrv static_pod_url_header;
        PodDuration http_check_frequency;
        PodDuration file_check_frequency; /* the static pod directory's rescan: default 20s, at least 1s */
        char *static_pod_url_ca_file;
        char *static_pod_url_client_cert;
        char *static_pod_url_client_key;
        PodDuration static_pod_url_timeout;
        /* security context */
        PodStrv allowed_unsafe_sysctls; /* allowedUnsafeSysctls: names and "prefix*" patterns */
        /* logs: podLogsDir (default /var/log/pods), containerLogMaxSize (a quantity, parsed by the
         * decoder: positive, default 10Mi), containerLogMaxFiles (default 5, at least 2: kubelet's check) */
        char *pod_logs_dir;
        CubQuantity container_log_max_size;
        int64_t container_log_max_files;
        /* network: kubelet's podCIDR (standalone mode: the bridge's range), clusterDNS, clusterDomain,
         * resolvConf (NULL = /etc/resolv.conf, "" = none) */
        char *pod_cidr;
        PodStrv cluster_dns;
        char *cluster_domain;
        char *resolv_conf;
        /* cubelet's own cniConfDir: where 10-cubelet.conflist goes, NULL = /etc/cni/net.d, "" = none */
        char *cni_conf_dir;
        /* cubelet's offlinePods: "keep" (the default) or "start" the API pods of the last list when the
         * API server is unreachable at the start */
        PodOfflinePods offline_pods;
        /* the API server: registerNode (default true), nodeStatusUpdateFrequency (default 10s, at
         * least 100ms), nodeStatusReportFrequency (default 5m, at least 1s), nodeLeaseDurationSeconds
         * (default 40) */
        bool register_node;
        PodDuration node_status_update_frequency, node_status_report_frequency;
        int64_t node_lease_duration_seconds;
        /* graceful node shutdown (agent/shutdown): shutdownGracePeriod and
         * shutdownGracePeriodCriticalPods (default 0s; zero or at least
         * 1s, the second no longer than the first: kubelet's checks), or
         * shutdownGracePeriodByPodPriority */
        PodDuration shutdown_grace_period, shutdown_grace_period_critical_pods;
        PodShutdownPriority *shutdown_by_priority;
        size_t n_shutdown_by_priority;
        /* cgroups: kubelet's cgroupsPerQOS (default true: cubelet's kubepods,
         * QoS and pod cgroups; false: none, the runtime puts each pod below
         * cgroupRoot, "" = its own default), enforceNodeAllocatable
         * (default ["pods"]: with cgroupsPerQOS: true it must hold "pods";
         * with false, [] or ["none"]); enforce_pods: whether "pods" is in it */
        bool cgroups_per_qos;
        char *cgroup_root;
        PodStrv enforce_node_allocatable;
        bool enforce_node_allocatable_set;
        bool enforce_pods;
        PodStrv ignored; /* names of fields present but not supported */
} PodKubeletConfig;

void pod_kubelet_config_init(PodKubeletConfig *c);
void pod_kubelet_config_done(PodKubeletConfig *c);
int pod_kubelet_config_load_file(const char *path, PodKubeletConfig *ret, CubError *err);
int pod_kubelet_config_decode(const char *buf, size_t len, const char *source, PodKubeletConfig *ret, CubError *err);
