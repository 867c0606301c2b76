/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* agent/pod: env sources: kubelet's makeEnvironmentVariables (env.c). Included by pod.h; includes pod-model.h alone. */

#include "pod-model.h"

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
        /* what the API server provides (pods of the API server): envFrom's
         * keys, flat and prefixed (NULL-terminated, NULL = none), and the
         * value of each env entry of kind configMapKeyRef or secretKeyRef
         * (ref_values[i] for env[i], n_ref_values = n_env; NULL: an
         * optional one that is missing, the entry left out) */
        const char *const *env_from;
        const char *const *ref_values;
        size_t n_ref_values;
        /* the Services' variables (kubelet's getServiceEnvVarMap: flat,
         * NULL-terminated, NULL = none): seen by $(VAR) after the pod's own
         * env, and appended for each name the pod's env does not set */
        const char *const *service_env;
} PodEnvContext;

/* The i-th fieldRef path env supports (validEnvDownwardAPIFieldPathExpressions,
 * in the API's order); NULL past the last. The decoder validates with it. */
const char *pod_env_field_path(size_t i);
/* The value of a fieldRef path (metadata.name, metadata.labels['k'], ...);
 * -EINVAL naming the path for one env does not support. */
int pod_env_field_value(const Pod *pod, const char *field_path, const PodEnvContext *ctx, char **ret, CubError *err);
/* The env subPathExpr sees when the mounts are resolved (flat key/value,
 * owned; NULL when out of memory): the literal values and the fieldRefs of
 * the pod's metadata and spec (the addresses are not known then: ""). */
char **pod_env_subpath(const Pod *pod, const PodContainer *c);
/* kubelet's ExtractContainerResourceValue on the container with its limits
 * merged with node allocatable: cpu is ceil(milli / divisor milli), memory
 * and ephemeral-storage ceil(value / divisor value); a zero divisor is 1. */
int pod_env_resource_value(const PodContainer *c, const char *resource, CubQuantity divisor, const PodEnvContext *ctx,
                           char **ret, CubError *err);
/* kubelet's expansion.Expand: $(NAME) from the first of the flat,
 * NULL-terminated key/value lists that has it (the last pair of a list with
 * that key wins), "$$" is "$", unknown references and a lone or unclosed
 * "$(" stay as written. NULL when out of memory. */
char *pod_env_expand(const char *in, const char *const *const *maps, size_t n_maps);
/* Container c's env as a flat, NULL-terminated name/value list (owned):
 * envFrom's keys first, then env in manifest order, values expanded
 * against the earlier env and then ctx's service env, valueFrom resolved (a
 * later pair of a name wins, as in the runtime), then each service variable
 * whose name neither sets; a resourceFieldRef limit not set is the pod-level
 * limit when the pod has one (pod_downward_allocatable), else ctx's node
 * allocatable. */
int pod_env_resolve(const Pod *pod, const PodContainer *c, const PodEnvContext *ctx, char ***ret_env, CubError *err);
/* command and args with $(VAR) expanded against env (flat list; later pairs
 * win), as kubelet's ExpandContainerCommandAndArgs. NULL lists stay NULL. */
int pod_env_expand_command(const PodContainer *c, char *const *env, char ***ret_command, char ***ret_args,
                           CubError *err);
void pod_env_strv_free(char **l);
/* IsEnvVarName as 1.34 relaxed it: printable ASCII other than '=', not empty */
bool pod_env_name_valid(const char *k);
/* whether c takes env from the API server (envFrom, configMapKeyRef, secretKeyRef) */
bool pod_container_has_api_env(const PodContainer *c);
