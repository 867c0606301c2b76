/* SPDX-License-Identifier: Apache-2.0 */
/* Inputs beside pods: a v1 Node and a KubeletConfiguration. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util/fileio.h"
#include "pod-internal.h"

#define POD_INPUT_MAX (4 * 1024 * 1024)

PodNode *pod_node_free(PodNode *n) {
        if (!n)
                return NULL;
        free(n->name);
        pod_string_map_done(&n->labels);
        pod_resource_list_done(&n->capacity);
        pod_resource_list_done(&n->allocatable);
        for (size_t i = 0; i < n->n_taints; i++) {
                free(n->taints[i].key);
                free(n->taints[i].value);
                free(n->taints[i].effect);
        }
        free(n->taints);
        for (size_t i = 0; i < n->n_conditions; i++) {
                free(n->conditions[i].type);
                free(n->conditions[i].status);
        }
        free(n->conditions);
        free(n->topology);
        free(n);
        return NULL;
}

static const char *const taint_effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute", NULL };
static const char *const node_kinds[] = { "Node", NULL };

static const PodField taint_fields[] = {
        { .name = "key", .decode = pod_dec_string, .offset = offsetof(PodTaint, key), .flags = POD_FIELD_REQUIRED },
        { .name = "value", .decode = pod_dec_string, .offset = offsetof(PodTaint, value) },
        { .name = "effect",
          .decode = pod_dec_string,
          .offset = offsetof(PodTaint, effect),
          .allowed = taint_effects,
          .flags = POD_FIELD_REQUIRED },
        {},
};

static const PodField node_meta_fields[] = {
        { .name = "name", .decode = pod_dec_string, .offset = offsetof(PodNode, name), .flags = POD_FIELD_REQUIRED },
        { .name = "labels", .decode = pod_dec_string_map, .offset = offsetof(PodNode, labels) },
        {},
};

static const PodField node_spec_fields[] = {
        { .name = "taints",
          .decode = pod_dec_object_array,
          .offset = offsetof(PodNode, taints),
          .count_offset = offsetof(PodNode, n_taints),
          .elem_size = sizeof(PodTaint),
          .sub = taint_fields },
        {},
};

static const char *const condition_statuses[] = { "True", "False", "Unknown", NULL };

static const PodField condition_fields[] = {
        { .name = "type",
          .decode = pod_dec_string,
          .offset = offsetof(PodNodeCondition, type),
          .flags = POD_FIELD_REQUIRED },
        { .name = "status",
          .decode = pod_dec_string,
          .offset = offsetof(PodNodeCondition, status),
          .allowed = condition_statuses,
          .flags = POD_FIELD_REQUIRED },
        {},
};

static const PodField swap_status_fields[] = {
        { .name = "capacity",
          .decode = pod_dec_int64,
          .offset = offsetof(PodNode, swap_capacity),
          .set_offset = offsetof(PodNode, swap_set) },
        {},
};
static const PodField node_info_fields[] = {
        { .name = "swap", .decode = pod_dec_inline, .sub = swap_status_fields },
        {},
};

static const PodField node_status_fields[] = {
        { .name = "nodeInfo", .decode = pod_dec_inline, .sub = node_info_fields },
        { .name = "capacity", .decode = pod_dec_resources, .offset = offsetof(PodNode, capacity) },
        { .name = "allocatable", .decode = pod_dec_resources, .offset = offsetof(PodNode, allocatable) },
        { .name = "conditions",
          .decode = pod_dec_object_array,
          .offset = offsetof(PodNode, conditions),
          .count_offset = offsetof(PodNode, n_conditions),
          .elem_size = sizeof(PodNodeCondition),
          .sub = condition_fields },
        {},
};

static const PodField cpu_info_fields[] = {
        { .name = "cpu", .decode = pod_dec_int32, .offset = offsetof(PodCpuInfo, cpu), .flags = POD_FIELD_REQUIRED },
        { .name = "core", .decode = pod_dec_int32, .offset = offsetof(PodCpuInfo, core), .flags = POD_FIELD_REQUIRED },
        { .name = "socket", .decode = pod_dec_int32, .offset = offsetof(PodCpuInfo, socket) },
        { .name = "numa", .decode = pod_dec_int32, .offset = offsetof(PodCpuInfo, numa) },
        {},
};

static const PodField node_fields[] = {
        { .name = "kind", .decode = pod_dec_string, .offset = offsetof(PodNode, name), .allowed = node_kinds },
        { .name = "metadata", .decode = pod_dec_inline, .sub = node_meta_fields, .flags = POD_FIELD_REQUIRED },
        { .name = "spec", .decode = pod_dec_inline, .sub = node_spec_fields },
        { .name = "status", .decode = pod_dec_inline, .sub = node_status_fields },
        { .name = "topology",
          .decode = pod_dec_object_array,
          .offset = offsetof(PodNode, topology),
          .count_offset = offsetof(PodNode, n_topology),
          .elem_size = sizeof(PodCpuInfo),
          .sub = cpu_info_fields },
        {},
};

int pod_node_decode(const char *buf, size_t len, const char *source, PodNode **ret, CubError *err) {
        _cleanup_(pod_node_freep) PodNode *n = NULL;
        PodTree tree;
        PodDec d = { .err = err };
        int r;

        r = pod_tree_load(buf, len, source, POD_FORMAT_AUTO, &tree, err);
        if (r < 0)
                return r;
        d.tree = &tree;
        n = calloc(1, sizeof(PodNode));
        if (!n)
                r = cub_err_set(err, ENOMEM, "out of memory");
        else
                r = pod_dec_fields(&d, tree.root, n, node_fields, NULL);
        pod_tree_done(&tree);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(n);
        return 0;
}

int pod_node_load_file(const char *path, PodNode **ret, CubError *err) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = cub_read_file(path, POD_INPUT_MAX, &buf, &len, err);
        if (r < 0)
                return r;
        return pod_node_decode(buf, len, path, ret, err);
}

/* ---- KubeletConfiguration ----------------------------------------------- */

static const char *const config_kinds[] = { "KubeletConfiguration", NULL };
static const char *const cgroup_drivers[] = { "cgroupfs", "systemd", NULL };

static const char *const cpu_manager_policies[] = { "none", "static", NULL };
static const char *const eviction_policies[] = { "cubelet", "kubelet", NULL };
static const char *const offline_modes[] = { "keep", "start", NULL };

/* staticPodURLHeader: a map of header name -> list of values, kept as
 * "Name: value" lines */
static int dec_header_map(PodDec *d, json_t *v, void *dst, const PodField *f) {
        PodStrv *sv = dst;
        const char *k;
        json_t *l, *e;
        size_t n = 0, i;

        (void) f;
        if (json_is_null(v))
                return 0;
        if (!json_is_object(v))
                return pod_dec_fail(d, 0, NULL, "Invalid type: expected object of string lists, got %s",
                                    pod_json_type_name(v));
        json_object_foreach(v, k, l) n += json_is_array(l) ? json_array_size(l) : 1;
        pod_strv_done(sv);
        sv->items = calloc(n + 1, sizeof(char *));
        if (!sv->items)
                return cub_err_set(d->err, ENOMEM, "out of memory");
        json_object_foreach(v, k, l) {
                if (!json_is_array(l) || *k == '\0' || strpbrk(k, ": \t\r\n"))
                        return pod_dec_fail(d, pod_tree_line(d->tree, l), NULL,
                                            "[%s]: Invalid value: expected a header name and a list of values", k);
                json_array_foreach(l, i, e) {
                        if (!json_is_string(e) || strpbrk(json_string_value(e), "\r\n"))
                                return pod_dec_fail(d, pod_tree_line(d->tree, e), NULL,
                                                    "[%s][%zu]: Invalid value: expected a one-line string", k, i);
                        if (asprintf(&sv->items[sv->n], "%s: %s", k, json_string_value(e)) < 0) {
                                sv->items[sv->n] = NULL;
                                return cub_err_set(d->err, ENOMEM, "out of memory");
                        }
                        sv->n++;
                }
        }
        return 0;
}

static const PodField cubelet_fields[] = {
        { .name = "staticPodURLCAFile",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, static_pod_url_ca_file) },
        { .name = "staticPodURLClientCert",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, static_pod_url_client_cert) },
        { .name = "staticPodURLClientKey",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, static_pod_url_client_key) },
        { .name = "staticPodURLTimeout",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, static_pod_url_timeout) },
        { .name = "evictionPolicy",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, eviction_policy),
          .allowed = eviction_policies },
        { .name = "evictionSamplePeriod",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, eviction_sample_period) },
        { .name = "psiMemoryTrigger",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, psi_memory_trigger) },
        { .name = "stateDir", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, state_dir) },
        { .name = "socket", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, socket_path) },
        { .name = "nodeName", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, node_name) },
        { .name = "cgroupMount", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, cgroup_mount) },
        { .name = "devicePluginDir",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, device_plugin_dir) },
        { .name = "cniConfDir", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, cni_conf_dir) },
        { .name = "offlinePods",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, offline_pods),
          .allowed = offline_modes },
        {},
};

static const PodField x509_fields[] = {
        { .name = "clientCAFile", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, client_ca_file) },
        {},
};
static const PodField anonymous_fields[] = {
        { .name = "enabled", .decode = pod_dec_bool, .offset = offsetof(PodKubeletConfig, anonymous_auth) },
        {},
};
static const PodField webhook_fields[] = {
        { .name = "enabled", .decode = pod_dec_bool, .offset = offsetof(PodKubeletConfig, webhook_authn) },
        {},
};
static const PodField authn_fields[] = { { .name = "x509", .decode = pod_dec_inline, .sub = x509_fields },
                                         { .name = "anonymous", .decode = pod_dec_inline, .sub = anonymous_fields },
                                         { .name = "webhook", .decode = pod_dec_inline, .sub = webhook_fields },
                                         {} };
static const char *const authz_modes[] = { "Webhook", "AlwaysAllow", NULL };
static const PodField authz_fields[] = { { .name = "mode",
                                           .decode = pod_dec_string,
                                           .offset = offsetof(PodKubeletConfig, authorization_mode),
                                           .allowed = authz_modes },
                                         {} };

static const PodField shutdown_priority_fields[] = {
        { .name = "priority", .decode = pod_dec_int32, .offset = offsetof(PodShutdownPriority, priority) },
        { .name = "shutdownGracePeriodSeconds",
          .decode = pod_dec_int64,
          .offset = offsetof(PodShutdownPriority, grace_s) },
        {}
};

static const char *const swap_behaviors[] = { "", "NoSwap", "LimitedSwap", NULL };
static const PodField memory_swap_fields[] = { { .name = "swapBehavior",
                                                 .decode = pod_dec_string,
                                                 .offset = offsetof(PodKubeletConfig, swap_behavior),
                                                 .allowed = swap_behaviors },
                                               {} };

/* featureGates: kubelet's map of gate name -> boolean. The gates cubelet
 * reads; pod_kubelet_config_decode lists the others in ignored. */
static const char *const feature_gates[] = { "MemoryQoS", NULL };

static bool feature_gate_known(const char *name) {
        for (const char *const *g = feature_gates; *g; g++)
                if (strcmp(*g, name) == 0)
                        return true;
        return false;
}

static int dec_feature_gates(PodDec *d, json_t *v, void *dst, const PodField *f) {
        PodKubeletConfig *c = (PodKubeletConfig *) ((char *) dst - f->offset);
        const char *k;
        json_t *e;

        if (json_is_null(v))
                return 0;
        if (!json_is_object(v))
                return pod_dec_fail(d, 0, NULL, "Invalid type: expected object of booleans, got %s",
                                    pod_json_type_name(v));
        json_object_foreach(v, k, e) {
                if (!json_is_boolean(e)) {
                        size_t old = pod_dec_push(d, "[%s]", k);
                        int r = pod_dec_fail(d, pod_tree_line(d->tree, e), NULL,
                                             "Invalid type: expected boolean, got %s", pod_json_type_name(e));

                        pod_dec_pop(d, old);
                        return r;
                }
                if (strcmp(k, "MemoryQoS") == 0)
                        c->memory_qos = json_is_true(e);
        }
        return 0;
}

/* memoryThrottlingFactor: a number; validation.go: > 0 and <= 1.0 */
static int dec_throttling_factor(PodDec *d, json_t *v, void *dst, const PodField *f) {
        double x;

        (void) f;
        if (json_is_null(v))
                return 0;
        if (!json_is_number(v))
                return pod_dec_fail(d, 0, NULL, "Invalid type: expected number, got %s", pod_json_type_name(v));
        x = json_number_value(v);
        if (!(x > 0 && x <= 1.0))
                return pod_dec_fail(d, 0, NULL,
                                    "Invalid value: %g: must be greater than 0 and less than or equal to 1.0", x);
        *(double *) dst = x;
        return 0;
}

static const PodField config_fields[] = {
        { .name = "readOnlyPort",
          .decode = pod_dec_int64,
          .offset = offsetof(PodKubeletConfig, read_only_port),
          .set_offset = offsetof(PodKubeletConfig, read_only_port_set) },
        { .name = "port", .decode = pod_dec_int64, .offset = offsetof(PodKubeletConfig, port) },
        { .name = "authorization", .decode = pod_dec_inline, .sub = authz_fields },
        { .name = "address", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, address) },
        { .name = "tlsCertFile", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, tls_cert_file) },
        { .name = "tlsPrivateKeyFile",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, tls_private_key_file) },
        { .name = "authentication", .decode = pod_dec_inline, .sub = authn_fields },
        { .name = "kind",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, cgroup_driver),
          .allowed = config_kinds },
        { .name = "podPidsLimit", .decode = pod_dec_int64, .offset = offsetof(PodKubeletConfig, pod_pids_limit) },
        { .name = "cpuCFSQuota", .decode = pod_dec_bool, .offset = offsetof(PodKubeletConfig, cpu_cfs_quota) },
        { .name = "cgroupDriver",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, cgroup_driver),
          .allowed = cgroup_drivers },
        { .name = "kubeReserved", .decode = pod_dec_resources, .offset = offsetof(PodKubeletConfig, kube_reserved) },
        { .name = "systemReserved",
          .decode = pod_dec_resources,
          .offset = offsetof(PodKubeletConfig, system_reserved) },
        { .name = "staticPodPath", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, static_pod_path) },
        { .name = "staticPodURL", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, static_pod_url) },
        { .name = "staticPodURLHeader",
          .decode = dec_header_map,
          .offset = offsetof(PodKubeletConfig, static_pod_url_header) },
        { .name = "httpCheckFrequency",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, http_check_frequency) },
        { .name = "fileCheckFrequency",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, file_check_frequency) },
        { .name = "containerRuntimeEndpoint",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, runtime_endpoint) },
        { .name = "maxPods", .decode = pod_dec_int64, .offset = offsetof(PodKubeletConfig, max_pods) },
        { .name = "cpuManagerPolicy",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, cpu_manager_policy),
          .allowed = cpu_manager_policies },
        { .name = "memorySwap", .decode = pod_dec_inline, .sub = memory_swap_fields },
        { .name = "featureGates", .decode = dec_feature_gates, .offset = offsetof(PodKubeletConfig, memory_qos) },
        { .name = "memoryThrottlingFactor",
          .decode = dec_throttling_factor,
          .offset = offsetof(PodKubeletConfig, memory_throttling_factor) },
        { .name = "reservedSystemCPUs",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, reserved_system_cpus) },
        { .name = "evictionHard",
          .decode = pod_dec_string_map,
          .offset = offsetof(PodKubeletConfig, eviction_hard),
          .set_offset = offsetof(PodKubeletConfig, eviction_hard_set) },
        { .name = "evictionSoft", .decode = pod_dec_string_map, .offset = offsetof(PodKubeletConfig, eviction_soft) },
        { .name = "evictionSoftGracePeriod",
          .decode = pod_dec_string_map,
          .offset = offsetof(PodKubeletConfig, eviction_soft_grace_period) },
        { .name = "evictionMinimumReclaim",
          .decode = pod_dec_string_map,
          .offset = offsetof(PodKubeletConfig, eviction_minimum_reclaim) },
        { .name = "evictionMaxPodGracePeriod",
          .decode = pod_dec_int64,
          .offset = offsetof(PodKubeletConfig, eviction_max_pod_grace_period) },
        { .name = "evictionPressureTransitionPeriod",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, eviction_pressure_transition_period) },
        /* network */
        { .name = "podCIDR", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, pod_cidr) },
        { .name = "clusterDNS", .decode = pod_dec_strv, .offset = offsetof(PodKubeletConfig, cluster_dns) },
        { .name = "clusterDomain", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, cluster_domain) },
        { .name = "resolvConf", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, resolv_conf) },
        { .name = "cubelet", .decode = pod_dec_inline, .sub = cubelet_fields },
        /* security context */
        { .name = "allowedUnsafeSysctls",
          .decode = pod_dec_strv,
          .offset = offsetof(PodKubeletConfig, allowed_unsafe_sysctls) },
        /* the API server */
        { .name = "registerNode", .decode = pod_dec_bool, .offset = offsetof(PodKubeletConfig, register_node) },
        { .name = "nodeStatusUpdateFrequency",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, node_status_update_frequency) },
        { .name = "nodeStatusReportFrequency",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, node_status_report_frequency) },
        { .name = "nodeLeaseDurationSeconds",
          .decode = pod_dec_int64,
          .offset = offsetof(PodKubeletConfig, node_lease_duration_seconds) },
        /* graceful node shutdown */
        { .name = "shutdownGracePeriod",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, shutdown_grace_period) },
        { .name = "shutdownGracePeriodCriticalPods",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, shutdown_grace_period_critical_pods) },
        { .name = "shutdownGracePeriodByPodPriority",
          .decode = pod_dec_object_array,
          .offset = offsetof(PodKubeletConfig, shutdown_by_priority),
          .count_offset = offsetof(PodKubeletConfig, n_shutdown_by_priority),
          .elem_size = sizeof(PodShutdownPriority),
          .sub = shutdown_priority_fields },
        /* logs */
        { .name = "podLogsDir", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, pod_logs_dir) },
        { .name = "containerLogMaxSize",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, container_log_max_size) },
        { .name = "containerLogMaxFiles",
          .decode = pod_dec_int64,
          .offset = offsetof(PodKubeletConfig, container_log_max_files) },
        {},
};

void pod_kubelet_config_init(PodKubeletConfig *c) {
        *c = (PodKubeletConfig){ .pod_pids_limit = -1,
                                 .cpu_cfs_quota = true,
                                 .max_pods = 110,
                                 .read_only_port = 10255,
                                 .port = 10250,
                                 .webhook_authn = true,
                                 .register_node = true,
                                 .node_lease_duration_seconds = 40,
                                 .container_log_max_files = 5,
                                 .memory_throttling_factor = 0.9 };
}

void pod_kubelet_config_done(PodKubeletConfig *c) {
        free(c->cgroup_driver);
        free(c->static_pod_path);
        free(c->pod_logs_dir), free(c->container_log_max_size); /* logs */
        free(c->runtime_endpoint);
        free(c->authorization_mode);
        free(c->state_dir);
        free(c->socket_path);
        free(c->node_name);
        free(c->cgroup_mount);
        pod_resource_list_done(&c->kube_reserved);
        pod_resource_list_done(&c->system_reserved);
        free(c->cpu_manager_policy);
        free(c->reserved_system_cpus);
        free(c->swap_behavior);
        pod_string_map_done(&c->eviction_hard);
        pod_string_map_done(&c->eviction_soft);
        pod_string_map_done(&c->eviction_soft_grace_period);
        pod_string_map_done(&c->eviction_minimum_reclaim);
        free(c->eviction_pressure_transition_period);
        free(c->eviction_policy);
        free(c->eviction_sample_period);
        free(c->psi_memory_trigger);
        free(c->device_plugin_dir);
        free(c->address);
        free(c->tls_cert_file);
        free(c->tls_private_key_file);
        free(c->client_ca_file);
        free(c->static_pod_url);
        pod_strv_done(&c->static_pod_url_header);
        free(c->http_check_frequency);
        free(c->file_check_frequency);
        free(c->static_pod_url_ca_file);
        free(c->static_pod_url_client_cert);
        free(c->static_pod_url_client_key);
        free(c->static_pod_url_timeout);
        pod_strv_done(&c->allowed_unsafe_sysctls);
        free(c->pod_cidr);
        pod_strv_done(&c->cluster_dns);
        free(c->cluster_domain);
        free(c->resolv_conf);
        free(c->cni_conf_dir);
        free(c->offline_pods);
        free(c->node_status_update_frequency);
        free(c->node_status_report_frequency);
        free(c->shutdown_grace_period);
        free(c->shutdown_grace_period_critical_pods);
        free(c->shutdown_by_priority);
        pod_strv_done(&c->ignored);
        pod_kubelet_config_init(c);
}

int pod_kubelet_config_decode(const char *buf, size_t len, const char *source, PodKubeletConfig *ret, CubError *err) {
        PodKubeletConfig c;
        PodTree tree;
        PodDec d = { .err = err };
        const char *key;
        json_t *v, *gates;
        int r;

        r = pod_tree_load(buf, len, source, POD_FORMAT_AUTO, &tree, err);
        if (r < 0)
                return r;
        d.tree = &tree;
        gates = json_object_get(tree.root, "featureGates");
        pod_kubelet_config_init(&c);
        r = pod_dec_fields(&d, tree.root, &c, config_fields, NULL);
        /* security context: kubelet refuses to start on a pattern that is not a namespaced sysctl */
        for (size_t i = 0; r >= 0 && i < c.allowed_unsafe_sysctls.n; i++) {
                r = pod_sysctl_pattern_check(c.allowed_unsafe_sysctls.items[i], err);
                if (r < 0)
                        r = cub_err_wrap(err, "%s: allowedUnsafeSysctls[%zu]", source, i);
        }
        /* "kind" was decoded into cgroup_driver for checking only; absent
         * stays NULL: the default depends on the host (cg_driver_default()) */
        if (r >= 0) {
                json_t *drv = json_object_get(tree.root, "cgroupDriver");

                free(c.cgroup_driver);
                c.cgroup_driver = NULL;
                if (json_is_string(drv)) {
                        c.cgroup_driver = strdup(json_string_value(drv));
                        if (!c.cgroup_driver)
                                r = cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        if (r >= 0) {
                c.ignored.items = calloc(json_object_size(tree.root) + json_object_size(gates) + 1, sizeof(char *));
                if (!c.ignored.items)
                        r = cub_err_set(err, ENOMEM, "out of memory");
        }
        /* the feature gates cubelet does not read, as "featureGates.<name>" */
        if (r >= 0)
                json_object_foreach(gates, key, v) {
                        if (feature_gate_known(key))
                                continue;
                        if (asprintf(&c.ignored.items[c.ignored.n], "featureGates.%s", key) < 0) {
                                c.ignored.items[c.ignored.n] = NULL;
                                r = cub_err_set(err, ENOMEM, "out of memory");
                                break;
                        }
                        c.ignored.n++;
                }
        if (r >= 0)
                json_object_foreach(tree.root, key, v) {
                        bool known = strcmp(key, "apiVersion") == 0;

                        for (const PodField *f = config_fields; f->name; f++)
                                if (strcmp(f->name, key) == 0)
                                        known = true;
                        if (known)
                                continue;
                        c.ignored.items[c.ignored.n] = strdup(key);
                        if (!c.ignored.items[c.ignored.n++]) {
                                r = cub_err_set(err, ENOMEM, "out of memory");
                                break;
                        }
                }
        pod_tree_done(&tree);
        if (r < 0) {
                pod_kubelet_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

int pod_kubelet_config_load_file(const char *path, PodKubeletConfig *ret, CubError *err) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = cub_read_file(path, POD_INPUT_MAX, &buf, &len, err);
        if (r < 0)
                return r;
        return pod_kubelet_config_decode(buf, len, path, ret, err);
}
