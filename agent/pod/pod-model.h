/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/pod's bottom header: the v1 Pod model (what pod.h gathers with the
 * parts that have a header of their own, each of which includes this one
 * alone, so that pod/'s headers form no include circle). The v1 Pod model. Manifests (JSON via jansson, YAML via
 * libyaml) are decoded here into typed structs; no parser node leaves this
 * module. Also: resource quantities, API defaulting, validation, QoS class,
 * effective pod requests/limits and static-pod naming. Pure: no I/O except
 * pod_load_file().
 *
 * Formulas and behaviours follow kubelet 1.28-1.31 (shared/kubelet-facts.md),
 * pod-level resources kubelet 1.34's (docs/pod-level-resources.md).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "../util/quantity.h"

/* ---- The model ---------------------------------------------------------- */

typedef struct PodResource {
        char *name;
        CubQuantity q;
} PodResource;

/* Resource names kept in the order of the manifest. */
typedef struct PodResourceList {
        PodResource *items;
        size_t n;
} PodResourceList;

typedef struct PodStringMap {
        char **keys;
        char **values;
        size_t n;
} PodStringMap;

typedef struct PodStrv {
        char **items;
        size_t n;
} PodStrv;

/* env sources: env[].valueFrom.fieldRef / resourceFieldRef (decode-env.c, env.c) */
typedef enum PodEnvSourceKind {
        POD_ENV_VALUE,          /* value (or nothing: "") */
        POD_ENV_FIELD_REF,      /* valueFrom.fieldRef */
        POD_ENV_RESOURCE_FIELD, /* valueFrom.resourceFieldRef */
        POD_ENV_CONFIG_MAP_KEY, /* valueFrom.configMapKeyRef (pods of the API server) */
        POD_ENV_SECRET_KEY,     /* valueFrom.secretKeyRef (pods of the API server) */
        _POD_ENV_SOURCE_MAX,
        _POD_ENV_SOURCE_INVALID = -22,
} PodEnvSourceKind;
/* network */
typedef struct PodHostAlias {
        char *ip;
        PodStrv hostnames;
} PodHostAlias;

typedef struct PodDnsOption {
        char *name;
        char *value; /* NULL: no value */
} PodDnsOption;

typedef struct PodDnsConfig {
        PodStrv nameservers;
        PodStrv searches;
        PodDnsOption *options;
        size_t n_options;
} PodDnsConfig;

typedef struct PodEnvVar {
        char *name;
        char *value; /* NULL for valueFrom */
        /* env sources */
        PodEnvSourceKind kind;
        bool value_from_set, field_ref_set, resource_ref_set;
        char *field_api_version;  /* fieldRef.apiVersion, defaulted to "v1" */
        char *field_path;         /* fieldRef.fieldPath */
        char *resource_container; /* resourceFieldRef.containerName, NULL = this container */
        char *resource;           /* resourceFieldRef.resource */
        char *divisor_text;       /* resourceFieldRef.divisor as written, NULL = 1 */
        CubQuantity divisor;      /* zero = 1 */
        /* configMapKeyRef / secretKeyRef: the ConfigMap's or Secret's name, the key */
        bool config_map_ref_set, secret_ref_set, ref_optional;
        char *ref_name, *ref_key;
} PodEnvVar;

/* envFrom[]: every key of a ConfigMap or Secret, prefixed (pods of the API server) */
typedef struct PodEnvFrom {
        char *prefix; /* "" when not set */
        bool config_map_set, secret_set;
        bool secret; /* secretRef, else configMapRef */
        char *name;
        bool optional;
} PodEnvFrom;

typedef struct PodPort {
        char *name;
        int32_t container_port;
        int32_t host_port;
        char *host_ip;
        char *protocol; /* defaulted to "TCP" */
} PodPort;

typedef struct PodSeccomp {
        char *type; /* RuntimeDefault, Unconfined, Localhost, or NULL */
        char *localhost_profile;
} PodSeccomp;

/* security context */

typedef struct PodSysctl {
        char *name;
        char *value;
} PodSysctl;

/*
 * The securityContext of one level, pod or container (seccomp stays in
 * PodSeccomp). *_set tells a field present from an absent one, as
 * kubelet's pointers do: a container's field overrides the pod's only when
 * set. Pod level: run_as_*, supplemental_groups, sysctls; container level:
 * run_as_* and the rest.
 */
typedef struct PodSELinux {
        char *user, *role, *type, *level;
        bool set; /* seLinuxOptions present: the container's replaces the pod's whole */
} PodSELinux;

typedef struct PodSecurity {
        int64_t run_as_user;
        bool run_as_user_set;
        int64_t run_as_group;
        bool run_as_group_set;
        bool run_as_non_root;
        bool run_as_non_root_set;
        bool privileged;
        bool privileged_set;
        PodStrv cap_add; /* capabilities.add, as written ("NET_ADMIN") */
        PodStrv cap_drop;
        bool read_only_root_fs;
        bool read_only_root_fs_set;
        bool allow_privilege_escalation;
        bool allow_privilege_escalation_set;
        char *proc_mount; /* "Default", "Unmasked" or NULL */
        int64_t *supplemental_groups;
        size_t n_supplemental_groups;
        PodSysctl *sysctls;
        size_t n_sysctls;
        PodSELinux selinux;
} PodSecurity;
/* volumes */
typedef struct PodVolumeMount {
        char *name;
        char *mount_path;
        bool read_only;
        char *sub_path;          /* NULL when not set */
        char *sub_path_expr;     /* NULL when not set */
        char *mount_propagation; /* None (default), HostToContainer, Bidirectional */
} PodVolumeMount;

typedef enum PodVolumeKind {
        POD_VOLUME_HOST_PATH,
        POD_VOLUME_EMPTY_DIR,
        POD_VOLUME_DOWNWARD_API,
        POD_VOLUME_PROJECTED,  /* items of every source in one list (serviceAccountToken,
                                * configMap and secret sources: pods from the API server only) */
        POD_VOLUME_CONFIG_MAP, /* configMap: items of one ConfigMap (API pods) */
        POD_VOLUME_SECRET,     /* secret: items of one Secret, on tmpfs (API pods) */
        _POD_VOLUME_KIND_MAX,
        _POD_VOLUME_KIND_INVALID = -22,
} PodVolumeKind;

/* Where a projected file's content comes from. */
typedef enum PodProjectionSource {
        POD_PROJECTION_DOWNWARD_API,    /* fieldRef / resourceFieldRef */
        POD_PROJECTION_SERVICE_ACCOUNT, /* serviceAccountToken: a TokenRequest of the API server */
        POD_PROJECTION_CONFIG_MAP,      /* configMap: a key of a ConfigMap (every key: key NULL, path "") */
        POD_PROJECTION_SECRET,          /* secret: a key of a Secret (every key: key NULL, path "") */
} PodProjectionSource;

/* One file of a downwardAPI volume (or projection). */
typedef struct PodDownwardFile {
        PodProjectionSource source;
        char *path;
        char *field_path;         /* fieldRef.fieldPath, NULL for resourceFieldRef */
        char *resource_container; /* resourceFieldRef.containerName */
        char *resource;           /* resourceFieldRef.resource: limits.cpu, requests.memory, ... */
        CubQuantity divisor;      /* 0 = 1 */
        int32_t mode;
        bool mode_set;
        /* serviceAccountToken */
        char *audience; /* NULL: the API server's own */
        int64_t expiration_seconds;
        /* configMap, secret */
        char *ref_name; /* the ConfigMap's or Secret's name */
        char *key;      /* NULL: every key of it */
        bool optional;
        /* decoding only */
        char *divisor_text;
        char *field_api_version;
} PodDownwardFile;

typedef struct PodVolume {
        char *name;
        PodVolumeKind kind;
        char *host_path;      /* hostPath.path */
        char *host_path_type; /* hostPath.type, "" when not set */
        char *medium;         /* emptyDir.medium, "" or "Memory" */
        CubQuantity size_limit;
        bool size_limit_set;
        PodDownwardFile *items;
        size_t n_items;
        int32_t default_mode; /* defaulted to 0644 */
} PodVolume;
/* probes and hooks: PodHandler, PodProbe, PodLifecycle */
#include "probe.h"

typedef struct PodContainer {
        char *name;
        char *image;
        char *image_pull_policy; /* defaulted */
        PodStrv command;
        PodStrv args;
        PodEnvVar *env;
        size_t n_env;
        PodEnvFrom *env_from;
        size_t n_env_from;
        char *working_dir;
        char *termination_message_path;   /* defaulted to /dev/termination-log */
        char *termination_message_policy; /* File (the default) or FallbackToLogsOnError */
        PodPort *ports;
        size_t n_ports;
        PodResourceList requests;
        PodResourceList limits;
        char *restart_policy; /* init containers: "Always" makes a sidecar */
        PodSeccomp seccomp;
        /* security context */
        PodSecurity security;
        /* volumes */
        PodVolumeMount *volume_mounts;
        size_t n_volume_mounts;
        /* probes and hooks */
        PodProbe liveness_probe, readiness_probe, startup_probe;
        bool liveness_probe_set, readiness_probe_set, startup_probe_set;
        PodLifecycle lifecycle;
        /* resizePolicy: a resize of cpu / memory restarts the container
         * (RestartContainer); false: NotRequired, the default */
        bool resize_restart_cpu, resize_restart_memory;
        /* stdin, stdinOnce, tty: handed to the runtime as kubelet hands them */
        bool stdin_, stdin_once, tty;
        /* an ephemeral container's targetContainerName: it joins that container's
         * process namespace (NULL: the pod's) */
        char *target_container_name;
} PodContainer;

/* probes and hooks */
/* The port number of a probe's or hook's port: the number, or the
 * containerPort of the container's port of that name; -ENOENT when there
 * is none. */
int pod_port_resolve(const PodContainer *c, const PodPortRef *port, int32_t *ret);

typedef struct PodNodeSelectorRequirement {
        char *key;
        char *op; /* In, NotIn, Exists, DoesNotExist, Gt, Lt */
        PodStrv values;
} PodNodeSelectorRequirement;

typedef struct PodNodeSelectorTerm {
        PodNodeSelectorRequirement *match_expressions;
        size_t n_match_expressions;
        PodNodeSelectorRequirement *match_fields;
        size_t n_match_fields;
} PodNodeSelectorTerm;

typedef struct PodToleration {
        char *key;
        char *op; /* Equal (default) or Exists */
        char *value;
        char *effect; /* NULL = every effect */
        int64_t toleration_seconds;
        bool toleration_seconds_set;
} PodToleration;

/*
 * A field the manifest sets that cubelet refuses or accepts with a warning
 * (agent/pod/fields.c has the one table of every v1 Pod field).
 */
typedef struct PodFieldNote {
        char *path;       /* "spec.volumes[0].nfs" */
        const char *what; /* "not supported by cubelet" (static text) */
        int line;         /* YAML line, 0 when unknown */
} PodFieldNote;

typedef struct PodFieldNotes {
        PodFieldNote *items;
        size_t n;
} PodFieldNotes;

typedef struct Pod {
        /* metadata */
        char *name;
        char *namespace_; /* defaulted to "default" */
        char *uid;
        char *config_hash; /* static pods: md5 of content, node and source (changes with any edit) */
        PodStringMap labels;
        PodStringMap annotations;
        /* spec */
        PodContainer *containers;
        size_t n_containers;
        PodContainer *init_containers;
        size_t n_init_containers;
        /* an API pod's spec.ephemeralContainers (kubectl debug), added while it
         * runs: each started once, never restarted, not in the pod's hash;
         * pod_container_at() counts them after the app containers */
        PodContainer *ephemeral_containers;
        size_t n_ephemeral_containers;
        char *restart_policy;                     /* defaulted to "Always" */
        int64_t termination_grace_period_seconds; /* defaulted to 30 */
        bool termination_grace_period_seconds_set;
        int64_t active_deadline_seconds; /* 0: none; an API pod's may change while it runs */
        PodStrv readiness_gates;         /* spec.readinessGates[].conditionType */
        PodStrv gate_status; /* an API pod's: the status of each gate's condition ("": none), not in the hash */
        int32_t priority;    /* from spec.priority or the built-in class */
        bool priority_set;
        char *priority_class_name;
        char *preemption_policy; /* defaulted to "PreemptLowerPriority" */
        char *node_name;
        PodStringMap node_selector;
        PodNodeSelectorTerm *affinity_terms; /* requiredDuringSchedulingIgnoredDuringExecution */
        size_t n_affinity_terms;
        bool affinity_required_set;
        PodToleration *tolerations;
        size_t n_tolerations;
        bool host_network;
        PodResourceList overhead;
        /* spec.resources (pod-level resources, resources.h): present (an
         * object, {} included), its requests and limits after defaulting */
        bool resources_set;
        PodResourceList resources_requests, resources_limits;
        PodSeccomp seccomp;
        /* security context */
        PodSecurity security;
        bool host_pid;
        bool host_ipc;
        bool share_process_namespace;
        /* volumes */
        PodVolume *volumes;
        size_t n_volumes;
        int64_t fs_group;
        bool fs_group_set;
        char *fs_group_change_policy; /* Always (default) or OnRootMismatch; NULL when not set */
        /* env sources */
        char *service_account_name, *service_account; /* spec.serviceAccountName, the deprecated serviceAccount */
        PodStrv image_pull_secrets;                   /* spec.imagePullSecrets[].name (pods of the API server) */
        bool enable_service_links, enable_service_links_set; /* not set: true (pod_service_links) */
        /* a pod of the API server whose status.phase is already Succeeded or
         * Failed: that phase, its reason and message (else NULL) */
        char *api_phase, *api_reason, *api_message;
        /* network */
        char *hostname;  /* spec.hostname, NULL = the pod's name */
        char *subdomain; /* spec.subdomain */
        bool set_hostname_as_fqdn;
        char *dns_policy; /* defaulted to "ClusterFirst" */
        PodDnsConfig dns_config;
        bool dns_config_set;
        PodHostAlias *host_aliases;
        size_t n_host_aliases;
        /* fields of the manifest cubelet does not implement: refused ones
         * (the pod must not run: reason POD_REFUSED_REASON) and ignored ones
         * (a warning, once) */
        PodFieldNotes refused;
        PodFieldNotes warnings;
} Pod;

/* The reason of a pod that sets a refused field. */
#define POD_REFUSED_REASON "UnsupportedField"

Pod *pod_free(Pod *pod);
static inline void pod_freep(Pod **p) {
        if (*p)
                pod_free(*p);
}

/* ---- Decoding ---------------------------------------------------------- */

typedef enum PodFormat {
        POD_FORMAT_AUTO, /* ".json" name or a leading '{' → JSON, else YAML */
        POD_FORMAT_JSON,
        POD_FORMAT_YAML,
        _POD_FORMAT_MAX,
        _POD_FORMAT_INVALID = -22,
} PodFormat;

/*
 * Decodes one v1 Pod from buf. `source` names the input in messages, which
 * read "<source>:<line>: <field path>: <what>" for YAML and
 * "<source>: <field path>: <what>" for JSON. The pod is defaulted and
 * validated. Every field set is checked against the field table: a field
 * cubelet refuses (or an unknown one) lands in pod->refused, one it ignores
 * in pod->warnings; the decoding itself still succeeds, and callers that run
 * or plan the pod must check pod->refused (pod_refused_message()).
 */
int pod_decode(const char *buf, size_t len, const char *source, PodFormat fmt, Pod **ret, CubError *err);
/* Decodes a Pod of the API server (JSON): as pod_decode(), and what the API
 * server provides is accepted, not refused (projected serviceAccountToken,
 * configMap and secret sources, configMap and secret volumes, env from
 * ConfigMaps and Secrets). */
int pod_decode_api(const char *buf, size_t len, const char *source, Pod **ret, CubError *err);
/* Whether a volume of the pod has files the API server provides. */
bool pod_has_api_projection(const Pod *pod);
/* ... or env from a ConfigMap or Secret (envFrom, configMapKeyRef, secretKeyRef), or pull secrets */
bool pod_has_api_data(const Pod *pod);
/* a downwardAPI or projected volume: files the volume manager writes */
bool pod_has_items(const Pod *pod);
/* Reads a file (at most 1 MiB) and decodes it; source = path. */
int pod_load_file(const char *path, Pod **ret, CubError *err);
/* Any object document (YAML or JSON, as a manifest: a kubeconfig, say) as a
 * jansson tree; errors name the source and line. */
int pod_doc_load(const char *buf, size_t len, const char *source, json_t **ret, CubError *err);

/*
 * The notes as one line, "<path>: <what>; <path>: <what>...". With a
 * source, the line starts "<source>:<line>: " (YAML, the first note's line)
 * or "<source>: " as decoding errors do. NULL when out of memory; "" for no
 * notes.
 */
char *pod_field_notes_join(const PodFieldNotes *n, const char *source);
/* One note as "<source>:<line>: <path>: <what>" (source may be NULL). */
char *pod_field_note_format(const PodFieldNote *note, const char *source);
void pod_field_notes_done(PodFieldNotes *n);

/* ---- Semantics --------------------------------------------------------- */

/* QoS class and effective requests/limits: resources.h. */

bool pod_container_is_sidecar(const PodContainer *c);
/*
 * The k-th container of the pod, init containers first, each list in the
 * manifest's order (k < n_init_containers + n_containers), then the
 * ephemeral containers (k < that + n_ephemeral_containers); *ret_init (may
 * be NULL) tells whether it is an init container.
 */
const PodContainer *pod_container_at(const Pod *pod, size_t k, bool *ret_init);

/* The priority of system-cluster-critical (scheduling.SystemCriticalPriority);
 * a pod at or above it is critical. system-node-critical is 1000 more. */
#define POD_PRIORITY_CRITICAL INT32_C(2000000000)
/* Built-in PriorityClass value; false for other names. */
bool pod_builtin_priority(const char *class_name, int32_t *ret);
/* kubelet's IsStaticPod: a config.source annotation other than "api". */
bool pod_is_static(const Pod *pod);
/* spec.enableServiceLinks, true when not set: the pod's namespace's Services in its env */
bool pod_service_links(const Pod *pod);
/* kubelet's IsCriticalPod: static, or priority >= POD_PRIORITY_CRITICAL. */
bool pod_is_critical(const Pod *pod);
/* IsCriticalPod and priorityClassName system-node-critical. */
bool pod_is_node_critical(const Pod *pod);

/*
 * Static pod treatment (kubelet applyDefaults): name becomes
 * "<name>-<lowercase node name>", nodeName is set, the annotations
 * kubernetes.io/config.source/hash are added, and — when the manifest has
 * no metadata.uid — the UID becomes 32 hex digits of
 * md5(canonical content || "host:<node>" || "file:<source>") (or
 * "url:<source>" for http). `canonical` is the sorted compact JSON of the
 * manifest (see pod_decode_static()).
 */
typedef enum PodSourceKind {
        POD_SOURCE_FILE,
        POD_SOURCE_HTTP,
        _POD_SOURCE_MAX,
        _POD_SOURCE_INVALID = -22,
} PodSourceKind;

/* The UID of a static pod without metadata.uid: the 32 hex digits of the
 * md5 above, NUL-terminated. */
#define POD_UID_DERIVED_MAX 33
int pod_static_uid(const char *canonical, const char *node_name, PodSourceKind kind, const char *source,
                   char ret_uid[static POD_UID_DERIVED_MAX], CubError *err);
int pod_apply_static(Pod *pod, const char *canonical, const char *node_name, PodSourceKind kind, const char *source,
                     CubError *err);
/* Decodes like pod_decode(), then applies pod_apply_static() with the
 * canonical content (sorted compact JSON of the manifest) and uid_source
 * (the absolute path or URL) for the UID hash. */
int pod_decode_static(const char *buf, size_t len, const char *source, PodFormat fmt, const char *node_name,
                      PodSourceKind kind, const char *uid_source, Pod **ret, CubError *err);
/* The body of a manifest URL: a v1 Pod, or a v1 PodList (kind "PodList")
 * whose items are decoded as pod_decode_static() does, errors naming
 * "items[i].<field>". All or nothing: the first bad item fails the list.
 * *ret holds *ret_n pods (pod_list_free()). */
int pod_decode_static_list(const char *buf, size_t len, const char *source, PodFormat fmt, const char *node_name,
                           PodSourceKind kind, const char *uid_source, Pod ***ret, size_t *ret_n, CubError *err);
void pod_list_free(Pod **pods, size_t n);
