/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the agent/pod sources and their unit tests only. */

#include <jansson.h>

#include "../util/cleanup.h"
#include "pod.h"

/* A parsed manifest: a jansson tree plus, for YAML, the source line of
 * each node (singletons such as true/null have none). */
typedef struct PodTreeLine {
        const json_t *node;
        int line;
} PodTreeLine;

/* The line of a mapping key (YAML): where a field is named, even when its
 * value (true, a nested block mapping) has no line of its own. */
typedef struct PodTreeKeyLine {
        const json_t *obj;
        char *key;
        int line;
} PodTreeKeyLine;

typedef struct PodTree {
        json_t *root;
        PodTreeLine *lines; /* sorted by node address once loaded */
        size_t n_lines;
        size_t cap_lines;
        PodTreeKeyLine *key_lines; /* sorted by object address, then key */
        size_t n_key_lines;
        size_t cap_key_lines;
        bool yaml;
        const char *source;
} PodTree;

int pod_tree_load(const char *buf, size_t len, const char *source, PodFormat fmt, PodTree *ret, CubError *err);
void pod_tree_done(PodTree *t);
/* Line of node, or 0 when unknown. */
int pod_tree_line(const PodTree *t, const json_t *node);
/* Line of the key `key` of object obj, or 0 when unknown. */
int pod_tree_key_line(const PodTree *t, const json_t *obj, const char *key);

/* Decoding context: field path and line for messages. */
typedef struct PodDec {
        const PodTree *tree;
        char path[512];
        size_t path_len;
        int line;
        CubError *err;
        bool api; /* a pod of the API server (pod_decode_api) */
} PodDec;

typedef struct PodField PodField;
typedef int (*PodDecodeFn)(PodDec *d, json_t *v, void *dst, const PodField *f);
typedef int (*PodPostFn)(PodDec *d, json_t *obj, void *base);

enum {
        POD_FIELD_REQUIRED = 1 << 0,
};

struct PodField {
        const char *name;
        PodDecodeFn decode;
        size_t offset;
        size_t count_offset; /* arrays: where the element count goes */
        size_t elem_size;    /* arrays of objects */
        const PodField *sub; /* objects: their field table (NULL-name terminated) */
        PodPostFn post;      /* objects: checks after all fields are decoded */
        unsigned flags;
        const char *const *allowed; /* enum strings, NULL-terminated */
        const int *values;          /* pod_dec_enum: each allowed string's value (NULL: its index) */
        size_t set_offset;          /* bool set when present; 0 = none */
        /* a field of a decoder of its own that owns memory: how to free it
         * (pod_fields_done knows the generic decoders' own) */
        void (*done)(void *dst);
};

int pod_dec_fail(PodDec *d, int line, const char *suffix, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int pod_dec_fields(PodDec *d, json_t *obj, void *base, const PodField *fields, PodPostFn post);
/* What the table's fields hold in base, freed and zeroed, as the table says
 * they were decoded: strings, string lists and maps, resource lists, inline
 * objects, objects and arrays of objects (their own tables); a field of a
 * decoder of its own with its done. The one free list of a decoded struct. */
/* Frees what the fields of a table decoded into base (and their tables'
 * below them): the generic decoders' own, a custom decoder's through its
 * .done. pod_free() is this over the Pod's tables, with the few members
 * no table decodes. */
void pod_fields_done(const PodField *fields, void *base);
/* .done of a custom decoder that stores a malloc'd string, or a PodStrv */
void pod_field_string_done(void *dst);
void pod_field_strv_done(void *dst);
size_t pod_dec_push(PodDec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pod_dec_pop(PodDec *d, size_t len);
const char *pod_json_type_name(const json_t *v);
/* Line of obj's member name, or the current object's line when unknown. */
int pod_dec_field_line(PodDec *d, json_t *obj, const char *name);

/* Generic field decoders. */
int pod_dec_string(PodDec *d, json_t *v, void *dst, const PodField *f);
/* one of f->allowed into an int (an enum's): f->values[i], or i */
int pod_dec_enum(PodDec *d, json_t *v, void *dst, const PodField *f);
int pod_dec_bool(PodDec *d, json_t *v, void *dst, const PodField *f);
int pod_dec_int32(PodDec *d, json_t *v, void *dst, const PodField *f);
int pod_dec_int64(PodDec *d, json_t *v, void *dst, const PodField *f);
int pod_dec_strv(PodDec *d, json_t *v, void *dst, const PodField *f);
int pod_dec_string_map(PodDec *d, json_t *v, void *dst, const PodField *f);
int pod_dec_resources(PodDec *d, json_t *v, void *dst, const PodField *f);
int pod_dec_inline(PodDec *d, json_t *v, void *dst, const PodField *f);
int pod_dec_object(PodDec *d, json_t *v, void *dst, const PodField *f);
int pod_dec_object_array(PodDec *d, json_t *v, void *dst, const PodField *f);

/* Volumes (decode-volumes.c, decode-downward.c): a quantity given as a
 * string or a number, kept as its text; a quantity's text parsed with the
 * message at suffix; validateLocalDescendingPath (relative, no ".."). */
int pod_dec_quantity(PodDec *d, json_t *v, void *dst, const PodField *f);
int pod_parse_quantity_at(PodDec *d, const char *suffix, const char *text, CubQuantity *ret);
int pod_check_local_path(PodDec *d, const char *suffix, const char *p);
/* A downwardAPI source's items[] into v->items (appended), then checked
 * against the pod (decode-downward.c). */
int pod_decode_downward_items(PodDec *d, json_t *obj, PodVolume *v);
int pod_check_downward_items(PodDec *d, const Pod *pod, json_t *arr, PodDownwardFile *items, size_t n);
void pod_downward_file_done(PodDownwardFile *f);
/* The items of a configMap or secret volume or projection (name_field:
 * "name", a secret volume's "secretName"): each key asked for a file, or
 * one item of every key (key NULL, path ""). decode-projected.c */
int pod_decode_key_items(PodDec *d, json_t *src, PodVolume *v, PodProjectionSource source, const char *name_field);
/* A projected source's serviceAccountToken, configMap and secret,
 * appended to v->items; only when d->api (else the field table refuses them). */
int pod_decode_projection_api(PodDec *d, json_t *src, PodVolume *v);

/* Field table entries for plain and enum strings. */
#define POD_STR(n, T, m) \
        { .name = n, .decode = pod_dec_string, .offset = offsetof(T, m) }
#define POD_STR_REQ(n, T, m) \
        { .name = n, .decode = pod_dec_string, .offset = offsetof(T, m), .flags = POD_FIELD_REQUIRED }
#define POD_ENUM(n, T, m, a) \
        { .name = n, .decode = pod_dec_string, .offset = offsetof(T, m), .allowed = a }
/* a boolean whose absence is not false (set: whether the manifest has it) */
#define POD_BOOL_SET(n, T, m, set) \
        { .name = n, .decode = pod_dec_bool, .offset = offsetof(T, m), .set_offset = offsetof(T, set) }

/* The Container tables and their checks (decode-containers.c), for the
 * Pod tables of decode.c. */
extern const PodField pod_seccomp_fields[];
extern const PodField pod_container_fields[];
extern const PodField pod_init_container_fields[];
int pod_seccomp_post(PodDec *d, json_t *obj, void *base);
int pod_container_post(PodDec *d, json_t *obj, void *base);
int pod_init_container_post(PodDec *d, json_t *obj, void *base);
int pod_ephemeral_container_post(PodDec *d, json_t *obj, void *base);
extern const PodField pod_ephemeral_container_fields[];

/* security context (decode-security.c): the securityContext tables, a
 * second "securityContext" entry of the Pod's spec and of the Container
 * (decoded into .security), and the pod-wide checks */
extern const PodField pod_security_pod_fields[];
extern const PodField pod_security_container_fields[];
int pod_security_pod_post(PodDec *d, json_t *obj, void *base);
int pod_security_container_post(PodDec *d, json_t *obj, void *base);
int pod_security_validate(PodDec *d, json_t *root, Pod *pod);
/* IsValidSysctlName: dot- or slash-separated segments of [-_a-z0-9], each
 * starting and ending alphanumeric, at most 253 bytes (security.c) */
bool pod_sysctl_name_valid(const char *name);
#define POD_SECURITY_POD_FIELD                                                                          \
        {                                                                                               \
                .name = "securityContext", .decode = pod_dec_object, .offset = offsetof(Pod, security), \
                .sub = pod_security_pod_fields, .post = pod_security_pod_post                           \
        }
#define POD_SECURITY_CONTAINER_FIELD                                                                             \
        {                                                                                                        \
                .name = "securityContext", .decode = pod_dec_object, .offset = offsetof(PodContainer, security), \
                .sub = pod_security_container_fields, .post = pod_security_container_post                        \
        }
#define POD_SECURITY_SPEC_FIELDS                                                                    \
        { .name = "hostPID", .decode = pod_dec_bool, .offset = offsetof(Pod, host_pid) },           \
                { .name = "hostIPC", .decode = pod_dec_bool, .offset = offsetof(Pod, host_ipc) }, { \
                .name = "shareProcessNamespace", .decode = pod_dec_bool,                            \
                .offset = offsetof(Pod, share_process_namespace)                                    \
        }
/* env sources (decode-env.c): env[].valueFrom's table, its checks, the free */
extern const PodField pod_env_source_fields[];
int pod_env_var_post(PodDec *d, json_t *obj, PodEnvVar *e);
extern const PodField pod_env_from_fields[];
int pod_env_from_post(PodDec *d, json_t *obj, void *base);
/* IsConfigMapKey: [-._a-zA-Z0-9]+, at most 253, not "." or ".." or "..*" */
bool pod_config_key_valid(const char *k);
int pod_env_dec_value_from(PodDec *d, json_t *v, void *dst, const PodField *f);
/* valueFrom's .done: what pod_env_source_fields decoded into a PodEnvVar */
void pod_env_value_from_done(void *e);
/* network (decode-network.c): the PodSpec entries and their validation (from
 * pod_default_and_validate) */
extern const PodField pod_dns_config_fields[];
extern const PodField pod_host_alias_fields[];
extern const char *const pod_dns_policies[];
#define POD_NETWORK_FIELDS                                                                                    \
        POD_STR("hostname", Pod, hostname), POD_STR("subdomain", Pod, subdomain),                             \
                { .name = "setHostnameAsFQDN",                                                                \
                  .decode = pod_dec_bool,                                                                     \
                  .offset = offsetof(Pod, set_hostname_as_fqdn) },                                            \
                POD_ENUM("dnsPolicy", Pod, dns_policy, pod_dns_policies),                                     \
                { .name = "dnsConfig",                                                                        \
                  .decode = pod_dec_object,                                                                   \
                  .offset = offsetof(Pod, dns_config),                                                        \
                  .set_offset = offsetof(Pod, dns_config_set),                                                \
                  .sub = pod_dns_config_fields },                                                             \
        {                                                                                                     \
                .name = "hostAliases", .decode = pod_dec_object_array, .offset = offsetof(Pod, host_aliases), \
                .count_offset = offsetof(Pod, n_host_aliases), .elem_size = sizeof(PodHostAlias),             \
                .sub = pod_host_alias_fields                                                                  \
        }
int pod_network_validate(PodDec *d, json_t *root, Pod *pod);
/* readiness gates (api-status.c): spec.readinessGates, each conditionType a qualified name */
extern const PodField pod_readiness_gate_fields[];
int pod_readiness_gate_post(PodDec *d, json_t *obj, void *base);
#define POD_READINESS_GATES_FIELD                                                                                 \
        {                                                                                                         \
                .name = "readinessGates", .decode = pod_dec_object_array,                                         \
                .offset = offsetof(Pod, readiness_gates.items), .count_offset = offsetof(Pod, readiness_gates.n), \
                .elem_size = sizeof(char *), .sub = pod_readiness_gate_fields, .post = pod_readiness_gate_post    \
        }
/* probes and hooks (decode-probes.c): the Container fields */
extern const PodField pod_probe_table[];
extern const PodField pod_lifecycle_table[];
int pod_liveness_post(PodDec *d, json_t *obj, void *base);
int pod_readiness_post(PodDec *d, json_t *obj, void *base);
/* init containers that are not sidecars may have no probe or hook */
int pod_probes_check(PodDec *d, json_t *obj, PodContainer *c, bool init);
#define POD_PROBE_FIELDS                                                                                    \
        { .name = "livenessProbe",                                                                          \
          .decode = pod_dec_object,                                                                         \
          .offset = offsetof(PodContainer, liveness_probe),                                                 \
          .set_offset = offsetof(PodContainer, liveness_probe_set),                                         \
          .sub = pod_probe_table,                                                                           \
          .post = pod_liveness_post },                                                                      \
                { .name = "readinessProbe",                                                                 \
                  .decode = pod_dec_object,                                                                 \
                  .offset = offsetof(PodContainer, readiness_probe),                                        \
                  .set_offset = offsetof(PodContainer, readiness_probe_set),                                \
                  .sub = pod_probe_table,                                                                   \
                  .post = pod_readiness_post },                                                             \
                { .name = "startupProbe",                                                                   \
                  .decode = pod_dec_object,                                                                 \
                  .offset = offsetof(PodContainer, startup_probe),                                          \
                  .set_offset = offsetof(PodContainer, startup_probe_set),                                  \
                  .sub = pod_probe_table,                                                                   \
                  .post = pod_liveness_post },                                                              \
        {                                                                                                   \
                .name = "lifecycle", .decode = pod_dec_object, .offset = offsetof(PodContainer, lifecycle), \
                .sub = pod_lifecycle_table                                                                  \
        }

void pod_strv_done(PodStrv *v);
void pod_string_map_done(PodStringMap *m);

/* ---- the field table (fields-table.c) and its walker (fields.c) -------- */

typedef enum PodFieldShape {
        POD_SHAPE_VALUE,  /* a scalar, or a list or map the walker does not enter */
        POD_SHAPE_OBJECT, /* an object with the fields of .sub */
        POD_SHAPE_LIST,   /* a list of objects with the fields of .sub */
} PodFieldShape;

typedef struct PodFieldRule PodFieldRule;
struct PodFieldRule {
        const char *name;
        PodFieldClass cls;
        PodFieldShape shape;
        const PodFieldRule *sub; /* NULL-name terminated */
        const char *what;        /* the note's text; NULL: the class's own */
        /* values (scalars as text: "false", "Default") that mean what an
         * absent field means: no note */
        const char *const *inert;
        /* a pod of the API server: not refused, an object with these fields */
        const PodFieldRule *api_sub;
};

extern const PodFieldRule pod_field_table[];

/* Checks the tree against the table; fills the pod's refused and
 * warnings. Fails only when out of memory. */
int pod_fields_check(const PodTree *t, json_t *root, const char *prefix, bool api, Pod *pod, CubError *err);
/* resizePolicy of every container into its resize_restart_* (resize.c), with
 * validateResizePolicy's checks */
/* A static pod's identity text, what its UID hashes: the manifest as
 * canonical JSON with the resizable resources taken out, and the QoS class
 * when something was (a resize keeps the UID, a QoS change does not);
 * NULL when out of memory (resize.c). */
char *pod_resize_identity(const json_t *root, const Pod *pod);
int pod_resize_policy_decode(const PodTree *t, json_t *root, const char *prefix, Pod *pod, CubError *err);

/* volumes (decode-volumes.c): spec.volumes, the containers' volumeMounts,
 * securityContext.fsGroup/fsGroupChangePolicy; run after the containers */
int pod_decode_volumes(PodDec *d, json_t *root, Pod *pod);
void pod_volumes_done(Pod *pod);
void pod_container_volumes_done(PodContainer *c);

/* pod-level resources (pod-resources.c): spec.resources' table (an inline
 * entry of the spec: requests and limits into the Pod), its defaulting and
 * validation (from pod_default_and_validate, after the containers'); the
 * containers' aggregate of requests or limits (AggregateContainerRequests
 * / AggregateContainerLimits: no pod-level values, no overhead) */
extern const PodField pod_level_resources_fields[];
int pod_level_resources_default_and_validate(PodDec *d, json_t *root, Pod *pod);
int pod_aggregate_containers(const Pod *pod, bool limits, PodResourceList *ret);

/* Defaulting and validation over the decoded struct (defaults.c). */
int pod_default_and_validate(PodDec *d, json_t *root, Pod *pod);
bool pod_dns1123_label(const char *s);
bool pod_dns1123_subdomain(const char *s);

/* A decoded KubeletConfiguration's checks (kubelet-checks.c): the cgroup
 * settings, the durations' bounds, the shutdown fields; kubelet's messages
 * where kubelet checks it, each naming source and field. */
int pod_kubelet_config_check(PodKubeletConfig *c, const char *source, CubError *err);
