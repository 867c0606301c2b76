/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/pod: the v1 Pod model. Manifests (JSON via jansson, YAML via
 * libyaml) are decoded here into typed structs; no parser node leaves this
 * module. Also: resource quantities, API defaulting, validation, QoS class,
 * effective pod requests/limits and static-pod naming. Pure: no I/O except
 * pod_load_file().
 *
 * Formulas and behaviours follow kubelet 1.28-1.31 (shared/kubelet-facts.md).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* ---- Quantities -------------------------------------------------------- */

/*
 * A non-negative resource quantity, rounded up to milli precision as the
 * API defaulting does (SetDefaults_ResourceList: RoundUp(-3)). The value is
 * units + milli/1000 with 0 <= milli < 1000.
 */
typedef struct PodQuantity {
        int64_t units;
        uint16_t milli;
} PodQuantity;

/* Parses the resource.Quantity grammar. -EINVAL on garbage, -ERANGE for a
 * negative or too large value; the message quotes the string. */
int pod_quantity_parse(const char *s, PodQuantity *ret, CubError *err);
/* Quantity.MilliValue() (saturating) and Value() (ceil, saturating). */
int64_t pod_quantity_milli(PodQuantity q);
int64_t pod_quantity_value(PodQuantity q);
int pod_quantity_cmp(PodQuantity a, PodQuantity b);
bool pod_quantity_is_zero(PodQuantity q);
/* a + b; -ERANGE on overflow. */
int pod_quantity_add(PodQuantity a, PodQuantity b, PodQuantity *ret);
/* Canonical text: cpu as "250m"/"2"; bytes and counts as "64Mi", "1G" or a
 * plain integer of Value(). Returns buf. */
#define POD_QUANTITY_STR_MAX 32
const char *pod_quantity_format(PodQuantity q, bool is_cpu, char buf[static POD_QUANTITY_STR_MAX]);

/* ---- The model ---------------------------------------------------------- */

typedef struct PodResource {
        char *name;
        PodQuantity q;
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
        PodQuantity divisor;      /* zero = 1 */
} PodEnvVar;

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
        POD_VOLUME_PROJECTED, /* downwardAPI sources only; items of every source in one list */
        _POD_VOLUME_KIND_MAX,
        _POD_VOLUME_KIND_INVALID = -22,
} PodVolumeKind;

/* One file of a downwardAPI volume (or projection). */
typedef struct PodDownwardFile {
        char *path;
        char *field_path;         /* fieldRef.fieldPath, NULL for resourceFieldRef */
        char *resource_container; /* resourceFieldRef.containerName */
        char *resource;           /* resourceFieldRef.resource: limits.cpu, requests.memory, ... */
        PodQuantity divisor;      /* 0 = 1 */
        int32_t mode;
        bool mode_set;
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
        PodQuantity size_limit;
        bool size_limit_set;
        PodDownwardFile *items;
        size_t n_items;
        int32_t default_mode; /* defaulted to 0644 */
} PodVolume;
/* probes and hooks */
typedef enum PodHandlerKind {
        POD_HANDLER_NONE,
        POD_HANDLER_EXEC,
        POD_HANDLER_HTTP_GET,
        POD_HANDLER_TCP_SOCKET,
        POD_HANDLER_GRPC,
        POD_HANDLER_SLEEP,
        _POD_HANDLER_MAX,
        _POD_HANDLER_INVALID = -22,
} PodHandlerKind;

typedef struct PodHTTPHeader {
        char *name;
        char *value;
} PodHTTPHeader;

/* An IntOrString port: a number, or the name of one of the container's ports. */
typedef struct PodPortRef {
        int32_t number; /* 0 when named */
        char *name;
} PodPortRef;

typedef struct PodExecAction {
        PodStrv command;
} PodExecAction;

typedef struct PodHTTPGetAction {
        char *path; /* defaulted to "/" */
        PodPortRef port;
        char *host;   /* NULL: the pod's IP (the node's with host network) */
        char *scheme; /* defaulted to "HTTP" */
        PodHTTPHeader *headers;
        size_t n_headers;
} PodHTTPGetAction;

typedef struct PodTCPSocketAction {
        PodPortRef port;
        char *host;
} PodTCPSocketAction;

typedef struct PodGRPCAction {
        int32_t port;
        char *service; /* NULL: "" */
} PodGRPCAction;

typedef struct PodSleepAction {
        int64_t seconds;
} PodSleepAction;

/* A probe's or a lifecycle hook's handler: exactly one action is set. */
typedef struct PodHandler {
        PodHandlerKind kind;
        PodExecAction exec;
        PodHTTPGetAction http_get;
        PodTCPSocketAction tcp_socket;
        PodGRPCAction grpc;
        PodSleepAction sleep;
        bool exec_set, http_get_set, tcp_socket_set, grpc_set, sleep_set;
} PodHandler;

typedef struct PodProbe {
        PodHandler handler;
        int32_t initial_delay_seconds;
        int32_t timeout_seconds;   /* defaulted to 1 */
        int32_t period_seconds;    /* defaulted to 10 */
        int32_t success_threshold; /* defaulted to 1 */
        int32_t failure_threshold; /* defaulted to 3 */
        int64_t termination_grace_period_seconds;
        bool termination_grace_period_seconds_set;
} PodProbe;

typedef struct PodLifecycle {
        PodHandler post_start;
        PodHandler pre_stop;
        bool post_start_set, pre_stop_set;
} PodLifecycle;

typedef struct PodContainer {
        char *name;
        char *image;
        char *image_pull_policy; /* defaulted */
        PodStrv command;
        PodStrv args;
        PodEnvVar *env;
        size_t n_env;
        char *working_dir;
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
} PodContainer;

/* probes and hooks */
/* The port number of a probe's or hook's port: the number, or the
 * containerPort of the container's port of that name; -ENOENT when there
 * is none. */
int pod_port_resolve(const PodContainer *c, const PodPortRef *port, int32_t *ret);
void pod_handler_done(PodHandler *h);
void pod_container_probes_done(PodContainer *c);

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
        char *restart_policy;                     /* defaulted to "Always" */
        int64_t termination_grace_period_seconds; /* defaulted to 30 */
        bool termination_grace_period_seconds_set;
        int32_t priority; /* from spec.priority or the built-in class */
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
        char *service_account_name; /* spec.serviceAccountName (else the deprecated serviceAccount) */
        char *service_account;
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
/* Reads a file (at most 1 MiB) and decodes it; source = path. */
int pod_load_file(const char *path, Pod **ret, CubError *err);

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

/* What the field table says, for the README and the tests. */
typedef enum PodFieldClass {
        POD_FIELD_IMPLEMENTED, /* consumed by cubelet */
        POD_FIELD_WARN,        /* accepted, ignored with a warning: changes nothing on one node */
        POD_FIELD_REFUSE,      /* the pod is refused, the field path named */
        _POD_FIELD_CLASS_MAX,
        _POD_FIELD_CLASS_INVALID = -22,
} PodFieldClass;

const char *pod_field_class_to_string(PodFieldClass c);
/* Calls fn for every field of the table, depth first, with its path
 * ("spec.containers[].ports[].hostPort"), its note text ("" for implemented
 * fields) and the values that mean what an absent field means (NULL or
 * NULL-terminated: hostPID "false"); a table shared by two fields
 * (containers, initContainers) is visited under the first only. */
typedef void (*PodFieldVisitFn)(const char *path, PodFieldClass cls, const char *what, const char *const *inert,
                                void *userdata);
void pod_field_table_visit(PodFieldVisitFn fn, void *userdata);

/* ---- env sources (env.c): kubelet's makeEnvironmentVariables ----------- */

/* What kubelet knows of the node and the pod when it builds a container's env. */
typedef struct PodEnvContext {
        const char *node_name; /* spec.nodeName when the pod has none */
        const char *pod_ip;    /* NULL or "" = unknown */
        const char *pod_ips;   /* comma-separated; NULL = pod_ip */
        const char *host_ip;
        const char *host_ips; /* comma-separated; NULL = host_ip */
        /* node allocatable: the limits of a container that sets none */
        int64_t alloc_cpu_milli;
        int64_t alloc_memory;
        int64_t alloc_ephemeral_storage;
} PodEnvContext;

/* The value of a fieldRef path (metadata.name, metadata.labels['k'], ...);
 * -EINVAL naming the path for one env does not support. */
int pod_env_field_value(const Pod *pod, const char *field_path, const PodEnvContext *ctx, char **ret, CubError *err);
/* kubelet's ExtractContainerResourceValue on the container with its limits
 * merged with node allocatable: cpu is ceil(milli / divisor milli), memory
 * and ephemeral-storage ceil(value / divisor value); a zero divisor is 1. */
int pod_env_resource_value(const PodContainer *c, const char *resource, PodQuantity divisor, const PodEnvContext *ctx,
                           char **ret, CubError *err);
/* kubelet's expansion.Expand: $(NAME) from the first of the flat,
 * NULL-terminated key/value lists that has it (the last pair of a list with
 * that key wins), "$$" is "$", unknown references and a lone or unclosed
 * "$(" stay as written. NULL when out of memory. */
char *pod_env_expand(const char *in, const char *const *const *maps, size_t n_maps);
/* Container c's env as a flat, NULL-terminated name/value list (owned),
 * in manifest order: values expanded against the earlier env, valueFrom
 * resolved. */
int pod_env_resolve(const Pod *pod, const PodContainer *c, const PodEnvContext *ctx, char ***ret_env, CubError *err);
/* command and args with $(VAR) expanded against env (flat list; later pairs
 * win), as kubelet's ExpandContainerCommandAndArgs. NULL lists stay NULL. */
int pod_env_expand_command(const PodContainer *c, char *const *env, char ***ret_command, char ***ret_args,
                           CubError *err);
void pod_env_strv_free(char **l);

/* ---- Semantics --------------------------------------------------------- */

typedef enum PodQOSClass {
        POD_QOS_GUARANTEED,
        POD_QOS_BURSTABLE,
        POD_QOS_BESTEFFORT,
        _POD_QOS_MAX,
        _POD_QOS_INVALID = -22,
} PodQOSClass;

const char *pod_qos_to_string(PodQOSClass q);
PodQOSClass pod_qos_class(const Pod *pod);

/* Looks a resource up; returns false (and a zero quantity) when absent. */
bool pod_resource_get(const PodResourceList *l, const char *name, PodQuantity *ret);

/*
 * Effective pod requests and limits (PodRequests/PodLimits with sidecars
 * and overhead), and whether every container, init containers included,
 * declares a cpu / memory limit (ResourceConfigForPod's
 * cpuLimitsDeclared/memoryLimitsDeclared).
 */
typedef struct PodEffective {
        PodResourceList requests;
        PodResourceList limits;
        bool cpu_limits_declared;
        bool memory_limits_declared;
} PodEffective;

int pod_effective(const Pod *pod, PodEffective *ret, CubError *err);
void pod_effective_done(PodEffective *e);
void pod_resource_list_done(PodResourceList *l);

bool pod_container_is_sidecar(const PodContainer *c);
/*
 * The k-th container of the pod, init containers first, each list in the
 * manifest's order (k < n_init_containers + n_containers); *ret_init (may
 * be NULL) tells which list it is in.
 */
const PodContainer *pod_container_at(const Pod *pod, size_t k, bool *ret_init);

/* The priority of system-cluster-critical (scheduling.SystemCriticalPriority);
 * a pod at or above it is critical. system-node-critical is 1000 more. */
#define POD_PRIORITY_CRITICAL INT32_C(2000000000)
/* Built-in PriorityClass value; false for other names. */
bool pod_builtin_priority(const char *class_name, int32_t *ret);
/* kubelet's IsStaticPod: a config.source annotation other than "api". */
bool pod_is_static(const Pod *pod);
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

/* ---- Security context (security.c) ----------------------------------------- */

void pod_security_done(PodSecurity *s);

/*
 * kubelet's DetermineEffectiveSecurityContext: the pod's runAsUser,
 * runAsGroup and runAsNonRoot, each overridden by the container's when set,
 * and the container's other fields. The pod's supplementalGroups and sysctls
 * come along. *ret borrows from pod and c: never pod_security_done() it.
 */
void pod_security_effective(const Pod *pod, const PodContainer *c, PodSecurity *ret);
/* kubelet's AddNoNewPrivileges: allowPrivilegeEscalation set to false. */
bool pod_security_no_new_privs(const PodSecurity *eff);
/* Whether any container, init containers included, is privileged (the
 * sandbox is then privileged too). */
bool pod_security_any_privileged(const Pod *pod);

/*
 * kubelet's verifyRunAsNonRoot against the image's user (ImageStatus: uid
 * when numeric, else username; neither = root). 0 when allowed; -EPERM
 * with kubelet's message in msg otherwise.
 */
/* The image config's User as containerd's ImageStatus reports it: a
 * numeric user (before any ":group") as uid, else its name; "" = neither. */
void pod_image_user_parse(const char *user, bool *ret_uid_set, int64_t *ret_uid, char *name, size_t name_size);
#define POD_CONFIG_ERROR_REASON "CreateContainerConfigError"
int pod_security_check_non_root(const Pod *pod, const PodContainer *c, bool image_uid_set, int64_t image_uid,
                                const char *image_username, char *msg, size_t msg_size);

/* sysctl namespaces as kubelet classifies them (GetNamespace) */
typedef enum PodSysctlNs {
        POD_SYSCTL_NS_UNKNOWN, /* node-level: never allowed in a pod */
        POD_SYSCTL_NS_IPC,
        POD_SYSCTL_NS_NET,
        POD_SYSCTL_NS_UTS,
        _POD_SYSCTL_NS_MAX,
        _POD_SYSCTL_NS_INVALID = -22,
} PodSysctlNs;

#define POD_SYSCTL_FORBIDDEN_REASON "SysctlForbidden"
/* "net/ipv4/tcp_syncookies" → "net.ipv4.tcp_syncookies" (NormalizeName). */
void pod_sysctl_normalize(const char *name, char *buf, size_t size);
/* The namespace of a sysctl, or of a "prefix*" pattern. */
PodSysctlNs pod_sysctl_namespace(const char *name_or_pattern);
/* Whether name is in kubelet's safe set (SafeSysctlAllowlist). */
bool pod_sysctl_is_safe(const char *name);
/* An allowedUnsafeSysctls entry: a sysctl or "prefix*", with a namespace;
 * -EINVAL with kubelet's message otherwise. */
int pod_sysctl_pattern_check(const char *pattern, CubError *err);
/* kubelet's sysctl admit handler for one pod: 0 when every sysctl is
 * allowed, -EPERM with msg "forbidden sysctl: ..." otherwise. */
int pod_sysctl_admit(const Pod *pod, const PodStrv *allowed_unsafe, char *msg, size_t msg_size);

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
} PodNode;

PodNode *pod_node_free(PodNode *n);
static inline void pod_node_freep(PodNode **p) {
        if (*p)
                pod_node_free(*p);
}
/* A v1 Node (JSON or YAML). */
int pod_node_load_file(const char *path, PodNode **ret, CubError *err);
int pod_node_decode(const char *buf, size_t len, const char *source, PodNode **ret, CubError *err);

/* The KubeletConfiguration fields cubelet supports so far. */
typedef struct PodKubeletConfig {
        int64_t pod_pids_limit; /* podPidsLimit, -1 = unlimited */
        bool cpu_cfs_quota;     /* cpuCFSQuota, default true */
        char *cgroup_driver;    /* cgroupDriver: "cgroupfs" or "systemd"; NULL when not set */
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
        int64_t max_pods;           /* maxPods, default 110 */
        char *cpu_manager_policy;   /* cpuManagerPolicy: "none" (default) or "static" */
        char *reserved_system_cpus; /* reservedSystemCPUs, a cpu list */
        /* eviction: kubelet's maps, signal -> value, kept as text for eviction/ to parse */
        PodStringMap eviction_hard; /* evictionHard; NULL items = kubelet's defaults */
        bool eviction_hard_set;
        PodStringMap eviction_soft;                /* evictionSoft */
        PodStringMap eviction_soft_grace_period;   /* evictionSoftGracePeriod, Go durations */
        PodStringMap eviction_minimum_reclaim;     /* evictionMinimumReclaim */
        int64_t eviction_max_pod_grace_period;     /* evictionMaxPodGracePeriod, seconds */
        char *eviction_pressure_transition_period; /* Go duration, default "5m" */
        /* cubelet's own, under "cubelet:" */
        char *eviction_policy;        /* evictionPolicy: "cubelet" (default) or "kubelet" */
        char *eviction_sample_period; /* evictionSamplePeriod: Go duration, default "1s" */
        char *psi_memory_trigger;     /* psiMemoryTrigger, default "some 150000 1000000" */
        char *device_plugin_dir;      /* devicePluginDir, default /var/lib/kubelet/device-plugins; "" = none */
        /* the HTTP API: readOnlyPort (default 10255, 0 = off), address, TLS, authentication.x509.clientCAFile */
        int64_t read_only_port;
        char *address, *tls_cert_file, *tls_private_key_file, *client_ca_file;
        /* the manifest URL: kubelet's staticPodURL, staticPodURLHeader (as "Name: value" lines, each
         * name's values in order), httpCheckFrequency (Go duration, default "20s"); cubelet's own
         * under "cubelet:" the TLS files and the timeout (Go duration, default "10s") */
        char *static_pod_url;
        PodStrv static_pod_url_header;
        char *http_check_frequency;
        char *static_pod_url_ca_file;
        char *static_pod_url_client_cert;
        char *static_pod_url_client_key;
        char *static_pod_url_timeout;
        /* security context */
        PodStrv allowed_unsafe_sysctls; /* allowedUnsafeSysctls: names and "prefix*" patterns */
        /* logs: podLogsDir (default /var/log/pods), containerLogMaxSize (a quantity, default "10Mi"),
         * containerLogMaxFiles (default 5, at least 2) */
        char *pod_logs_dir;
        char *container_log_max_size;
        int64_t container_log_max_files;
        /* network: kubelet's podCIDR (standalone mode: the bridge's range), clusterDNS, clusterDomain,
         * resolvConf (NULL = /etc/resolv.conf, "" = none) */
        char *pod_cidr;
        PodStrv cluster_dns;
        char *cluster_domain;
        char *resolv_conf;
        /* cubelet's own cniConfDir: where 10-cubelet.conflist goes, NULL = /etc/cni/net.d, "" = none */
        char *cni_conf_dir;
        PodStrv ignored; /* names of fields present but not supported */
} PodKubeletConfig;

void pod_kubelet_config_init(PodKubeletConfig *c);
void pod_kubelet_config_done(PodKubeletConfig *c);
int pod_kubelet_config_load_file(const char *path, PodKubeletConfig *ret, CubError *err);
int pod_kubelet_config_decode(const char *buf, size_t len, const char *source, PodKubeletConfig *ret, CubError *err);

/* ---- The pod network (network.c): kubelet's dns.go and hosts file ------- */

/* kubelet 1.28's limits (apis/core/validation, dns.go) */
#define POD_DNS_MAX_NAMESERVERS 3
#define POD_DNS_MAX_SEARCHES 32
#define POD_DNS_MAX_SEARCH_CHARS 2048
#define POD_HOSTNAME_MAX 63
#define POD_FQDN_MAX 64
#define POD_DEFAULT_CIDR "10.88.0.0/16"

/* A resolv.conf (kubelet's parseResolvConf): nameservers, search paths
 * (without a trailing "."; "." dropped), options (a later one of the same
 * name replaces an earlier one). */
typedef struct PodResolvConf {
        PodStrv nameservers;
        PodStrv searches;
        PodStrv options;
} PodResolvConf;

int pod_resolv_conf_parse(const char *text, PodResolvConf *ret, CubError *err);
void pod_resolv_conf_done(PodResolvConf *c);

/* The node's DNS settings: kubelet's clusterDNS, clusterDomain, resolvConf
 * (host NULL: resolvConf is "", kubelet's "no DNS"). */
typedef struct PodDnsNode {
        const char *const *cluster_dns; /* NULL-terminated; NULL = none */
        const char *cluster_domain;     /* NULL or "" = none */
        const PodResolvConf *host;
        const char *const *node_ips; /* for resolvConf "": 127.0.0.1 or ::1 per node IP */
} PodDnsNode;

/* The CRI DNSConfig of a pod (kubelet's GetPodDNS, limits applied);
 * warning: kubelet's event text when a limit dropped entries, else "". */
typedef struct PodDns {
        PodStrv servers;
        PodStrv searches;
        PodStrv options;
        char warning[256];
} PodDns;

int pod_dns_config(const Pod *pod, const PodDnsNode *node, PodDns *ret, CubError *err);
void pod_dns_done(PodDns *d);

/* kubelet's GeneratePodHostNameAndDomain: the hostname (spec.hostname or the
 * pod's name, cut to 63 without a trailing '-'/'.') and the domain
 * ("<subdomain>.<ns>.svc.<clusterDomain>", "" without subdomain). */
int pod_hostname_and_domain(const Pod *pod, const char *cluster_domain, char **ret_hostname, char **ret_domain,
                            CubError *err);
/* The sandbox's kernel hostname (GetNodenameForKernel): the FQDN with
 * setHostnameAsFQDN and a domain (at most 64), else the hostname. */
int pod_kernel_hostname(const Pod *pod, const char *hostname, const char *domain, char **ret, CubError *err);
/* The pod's /etc/hosts (kubelet's managedHostsFileContent; with hostNetwork
 * nodeHostsFileContent of node_hosts, the node's /etc/hosts text). */
char *pod_hosts_file(const Pod *pod, const char *const *pod_ips, const char *hostname, const char *domain,
                     const char *node_hosts);
/* The bridge + host-local + portmap conflist for cidr (JSON text, malloc'd);
 * -EINVAL when cidr is not an IPv4 or IPv6 CIDR. */
int pod_cni_conflist(const char *cidr, char **ret, CubError *err);
bool pod_ip_valid(const char *s);
