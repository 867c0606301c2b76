/* SPDX-License-Identifier: Apache-2.0 */
/* Inputs beside pods: a KubeletConfiguration, decoded with the fields
 * cubelet reads named and the others listed as ignored. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/duration.h"
#include "../util/fileio.h"
#include "../util/time.h"
#include "pod-internal.h"

#define POD_INPUT_MAX (4 * 1024 * 1024)

/* ---- KubeletConfiguration ----------------------------------------------- */

static const char *const config_kinds[] = { "KubeletConfiguration", NULL };
static const char *const cgroup_drivers[] = { "cgroupfs", "systemd", NULL };

static const int cgroup_driver_values[] = { POD_CGROUP_DRIVER_CGROUPFS, POD_CGROUP_DRIVER_SYSTEMD };
static const char *const cpu_manager_policies[] = { "none", "static", NULL };
static const char *const eviction_policies[] = { "cubelet", "kubelet", NULL };
static const char *const offline_modes[] = { "keep", "start", NULL };

const char *pod_cgroup_driver_to_string(PodCgroupDriver d) {
        return d == POD_CGROUP_DRIVER_CGROUPFS ? "cgroupfs" : d == POD_CGROUP_DRIVER_SYSTEMD ? "systemd" : NULL;
}

PodCgroupDriver pod_cgroup_driver_from_string(const char *s) {
        for (size_t i = 0; s && cgroup_drivers[i]; i++)
                if (strcmp(s, cgroup_drivers[i]) == 0)
                        return (PodCgroupDriver) cgroup_driver_values[i];
        return POD_CGROUP_DRIVER_UNSET;
}

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

/* a Go duration (metav1.Duration): a string that time.ParseDuration takes */
static int dec_duration(PodDec *d, json_t *v, void *dst, const PodField *f) {
        PodDuration *t = dst;
        CubError derr = {};

        (void) f;
        if (json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return pod_dec_fail(d, 0, NULL, "Invalid type: expected a duration string (\"20s\"), got %s",
                                    pod_json_type_name(v));
        if (cub_duration_parse_signed(json_string_value(v), &t->usec, &derr) < 0)
                return pod_dec_fail(d, 0, NULL, "Invalid value: %s", derr.msg);
        t->set = true;
        return 0;
}

/* An eviction map (signal -> value) into the eviction configuration, by
 * eviction/'s setter fn, whose message names the field, the signal and the
 * value ("evictionHard[memory.available]: invalid quantity ..."). */
typedef int (*EvictMapFn)(EvictConfig *c, const char *signal, const char *value, CubError *err);

static int dec_eviction_map(PodDec *d, json_t *v, EvictConfig *c, EvictMapFn fn) {
        const char *k;
        json_t *e;

        if (!json_is_object(v))
                return pod_dec_fail(d, 0, NULL, "Invalid type: expected object of strings, got %s",
                                    pod_json_type_name(v));
        json_object_foreach(v, k, e) {
                CubError eerr = {};
                int l = pod_tree_line(d->tree, e);

                if (!json_is_string(e)) {
                        size_t old = pod_dec_push(d, "[%s]", k);
                        int r = pod_dec_fail(d, l, NULL, "Invalid type: expected string, got %s",
                                             pod_json_type_name(e));

                        pod_dec_pop(d, old);
                        return r;
                }
                if (fn(c, k, json_string_value(e), &eerr) >= 0)
                        continue;
                if (d->tree->yaml && l > 0)
                        return cub_err_set(d->err, EINVAL, "%s:%d: %s", d->tree->source, l, eerr.msg);
                return cub_err_set(d->err, EINVAL, "%s: %s", d->tree->source, eerr.msg);
        }
        return 0;
}

/* evictionHard given, even empty: kubelet's defaults do not apply */
static int dec_eviction_hard(PodDec *d, json_t *v, void *dst, const PodField *f) {
        (void) f;
        evict_config_set_hard_given(dst);
        return dec_eviction_map(d, v, dst, evict_config_add_hard);
}

static int dec_eviction_soft(PodDec *d, json_t *v, void *dst, const PodField *f) {
        (void) f;
        return dec_eviction_map(d, v, dst, evict_config_add_soft);
}

static int dec_eviction_grace_period(PodDec *d, json_t *v, void *dst, const PodField *f) {
        (void) f;
        return dec_eviction_map(d, v, dst, evict_config_set_soft_grace_period);
}

static int dec_eviction_min_reclaim(PodDec *d, json_t *v, void *dst, const PodField *f) {
        (void) f;
        return dec_eviction_map(d, v, dst, evict_config_set_min_reclaim);
}

/* cubelet.psiMemoryTrigger: the kernel's text ("some 150000 1000000"),
 * written to memory.pressure as it is, checked here as eviction/ checks it */
static int dec_psi_trigger(PodDec *d, json_t *v, void *dst, const PodField *f) {
        CubError perr = {};
        int r = pod_dec_string(d, v, dst, f);

        if (r < 0 || evict_psi_trigger_validate(*(char **) dst, &perr) >= 0)
                return r;
        return pod_dec_fail(d, 0, NULL, "Invalid value: %s", perr.msg);
}

/* a quantity ("10Mi") that must be positive */
static int dec_positive_quantity(PodDec *d, json_t *v, void *dst, const PodField *f) {
        CubQuantity q;
        CubError qerr = {};

        (void) f;
        if (json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return pod_dec_fail(d, 0, NULL, "Invalid type: expected a quantity string (\"10Mi\"), got %s",
                                    pod_json_type_name(v));
        if (cub_quantity_parse(json_string_value(v), &q, &qerr) < 0)
                return pod_dec_fail(d, 0, NULL, "Invalid value: %s", qerr.msg);
        if (cub_quantity_value(q) <= 0)
                return pod_dec_fail(d, 0, NULL, "Invalid value: \"%s\": must be positive", json_string_value(v));
        *(CubQuantity *) dst = q;
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
          .decode = dec_duration,
          .offset = offsetof(PodKubeletConfig, static_pod_url_timeout) },
        { .name = "evictionPolicy",
          .decode = pod_dec_enum,
          .offset = offsetof(PodKubeletConfig, eviction_policy),
          .allowed = eviction_policies },
        { .name = "evictionSamplePeriod",
          .decode = dec_duration,
          .offset = offsetof(PodKubeletConfig, eviction_sample_period) },
        { .name = "psiMemoryTrigger",
          .offset = offsetof(PodKubeletConfig, psi_memory_trigger),
          .decode = dec_psi_trigger,
          .done = pod_field_string_done },
        { .name = "stateDir", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, state_dir) },
        { .name = "socket", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, socket_path) },
        { .name = "nodeName", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, node_name) },
        { .name = "cgroupMount", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, cgroup_mount) },
        { .name = "devicePluginDir",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, device_plugin_dir) },
        { .name = "cniConfDir", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, cni_conf_dir) },
        { .name = "offlinePods",
          .decode = pod_dec_enum,
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
                                           .decode = pod_dec_enum,
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
static const int swap_behavior_values[] = { POD_SWAP_NO_SWAP, POD_SWAP_NO_SWAP, POD_SWAP_LIMITED };
static const PodField memory_swap_fields[] = { { .name = "swapBehavior",
                                                 .decode = pod_dec_enum,
                                                 .offset = offsetof(PodKubeletConfig, swap_behavior),
                                                 .allowed = swap_behaviors,
                                                 .values = swap_behavior_values },
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
        { .name = "kind", .decode = pod_dec_enum, .offset = offsetof(PodKubeletConfig, kind), .allowed = config_kinds },
        { .name = "podPidsLimit", .decode = pod_dec_int64, .offset = offsetof(PodKubeletConfig, pod_pids_limit) },
        { .name = "cpuCFSQuota", .decode = pod_dec_bool, .offset = offsetof(PodKubeletConfig, cpu_cfs_quota) },
        { .name = "cgroupDriver",
          .decode = pod_dec_enum,
          .offset = offsetof(PodKubeletConfig, cgroup_driver),
          .allowed = cgroup_drivers,
          .values = cgroup_driver_values },
        { .name = "kubeReserved", .decode = pod_dec_resources, .offset = offsetof(PodKubeletConfig, kube_reserved) },
        { .name = "systemReserved",
          .decode = pod_dec_resources,
          .offset = offsetof(PodKubeletConfig, system_reserved) },
        { .name = "staticPodPath", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, static_pod_path) },
        { .name = "staticPodURL", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, static_pod_url) },
        { .name = "staticPodURLHeader",
          .decode = dec_header_map,
          .offset = offsetof(PodKubeletConfig, static_pod_url_header),
          .done = pod_field_strv_done },
        { .name = "httpCheckFrequency",
          .decode = dec_duration,
          .offset = offsetof(PodKubeletConfig, http_check_frequency) },
        { .name = "fileCheckFrequency",
          .decode = dec_duration,
          .offset = offsetof(PodKubeletConfig, file_check_frequency) },
        { .name = "containerRuntimeEndpoint",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, runtime_endpoint) },
        { .name = "maxPods", .decode = pod_dec_int64, .offset = offsetof(PodKubeletConfig, max_pods) },
        { .name = "cpuManagerPolicy",
          .decode = pod_dec_enum,
          .offset = offsetof(PodKubeletConfig, cpu_manager_policy),
          .allowed = cpu_manager_policies },
        { .name = "cpuManagerReconcilePeriod",
          .decode = dec_duration,
          .offset = offsetof(PodKubeletConfig, cpu_manager_reconcile_period) },
        { .name = "memorySwap", .decode = pod_dec_inline, .sub = memory_swap_fields },
        { .name = "featureGates", .decode = dec_feature_gates, .offset = offsetof(PodKubeletConfig, memory_qos) },
        { .name = "memoryThrottlingFactor",
          .decode = dec_throttling_factor,
          .offset = offsetof(PodKubeletConfig, memory_throttling_factor) },
        { .name = "reservedSystemCPUs",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, reserved_system_cpus) },
        { .name = "evictionHard", .decode = dec_eviction_hard, .offset = offsetof(PodKubeletConfig, eviction) },
        { .name = "evictionSoft", .decode = dec_eviction_soft, .offset = offsetof(PodKubeletConfig, eviction) },
        { .name = "evictionSoftGracePeriod",
          .decode = dec_eviction_grace_period,
          .offset = offsetof(PodKubeletConfig, eviction) },
        { .name = "evictionMinimumReclaim",
          .decode = dec_eviction_min_reclaim,
          .offset = offsetof(PodKubeletConfig, eviction) },
        { .name = "evictionMaxPodGracePeriod",
          .decode = pod_dec_int64,
          .offset = offsetof(PodKubeletConfig, eviction_max_pod_grace_period) },
        { .name = "evictionPressureTransitionPeriod",
          .decode = dec_duration,
          .offset = offsetof(PodKubeletConfig, eviction_pressure_transition_period) },
        /* network */
        { .name = "podCIDR", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, pod_cidr) },
        { .name = "clusterDNS", .decode = pod_dec_strv, .offset = offsetof(PodKubeletConfig, cluster_dns) },
        { .name = "clusterDomain", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, cluster_domain) },
        { .name = "resolvConf", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, resolv_conf) },
        { .name = "cubelet", .decode = pod_dec_inline, .sub = cubelet_fields },
        /* security context */
        { .name = "cgroupsPerQOS", .decode = pod_dec_bool, .offset = offsetof(PodKubeletConfig, cgroups_per_qos) },
        { .name = "cgroupRoot", .decode = pod_dec_string, .offset = offsetof(PodKubeletConfig, cgroup_root) },
        { .name = "enforceNodeAllocatable",
          .decode = pod_dec_strv,
          .offset = offsetof(PodKubeletConfig, enforce_node_allocatable),
          .set_offset = offsetof(PodKubeletConfig, enforce_node_allocatable_set) },
        { .name = "allowedUnsafeSysctls",
          .decode = pod_dec_strv,
          .offset = offsetof(PodKubeletConfig, allowed_unsafe_sysctls) },
        /* the API server */
        { .name = "registerNode", .decode = pod_dec_bool, .offset = offsetof(PodKubeletConfig, register_node) },
        { .name = "nodeStatusUpdateFrequency",
          .decode = dec_duration,
          .offset = offsetof(PodKubeletConfig, node_status_update_frequency) },
        { .name = "nodeStatusReportFrequency",
          .decode = dec_duration,
          .offset = offsetof(PodKubeletConfig, node_status_report_frequency) },
        { .name = "nodeLeaseDurationSeconds",
          .decode = pod_dec_int64,
          .offset = offsetof(PodKubeletConfig, node_lease_duration_seconds) },
        /* graceful node shutdown */
        { .name = "shutdownGracePeriod",
          .decode = dec_duration,
          .offset = offsetof(PodKubeletConfig, shutdown_grace_period) },
        { .name = "shutdownGracePeriodCriticalPods",
          .decode = dec_duration,
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
          .decode = dec_positive_quantity,
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
                                 .container_log_max_size = { .units = 10 * 1024 * 1024 },
                                 .memory_throttling_factor = 0.9,
                                 .http_check_frequency = { .usec = 20 * (int64_t) CUB_USEC_PER_SEC },
                                 .file_check_frequency = { .usec = 20 * (int64_t) CUB_USEC_PER_SEC },
                                 .static_pod_url_timeout = { .usec = 10 * (int64_t) CUB_USEC_PER_SEC },
                                 .cpu_manager_reconcile_period = { .usec = 10 * (int64_t) CUB_USEC_PER_SEC },
                                 .eviction_pressure_transition_period = { .usec = 300 * (int64_t) CUB_USEC_PER_SEC },
                                 .eviction_sample_period = { .usec = (int64_t) CUB_USEC_PER_SEC },
                                 .node_status_update_frequency = { .usec = 10 * (int64_t) CUB_USEC_PER_SEC },
                                 .node_status_report_frequency = { .usec = 300 * (int64_t) CUB_USEC_PER_SEC },
                                 .cgroups_per_qos = true,
                                 .enforce_pods = true };
        /* kubelet's default thresholds, which cannot fail */
        evict_config_init(&c->eviction);
        (void) evict_config_finish(&c->eviction, /* enforce_pods_allocatable= */ true, &(CubError){});
}

void pod_kubelet_config_done(PodKubeletConfig *c) {
        pod_fields_done(config_fields, c);
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
        evict_config_init(&c.eviction); /* the file's thresholds, finished by the check */
        r = pod_dec_fields(&d, tree.root, &c, config_fields, NULL);
        /* security context: kubelet refuses to start on a pattern that is not a namespaced sysctl */
        for (size_t i = 0; r >= 0 && i < c.allowed_unsafe_sysctls.n; i++) {
                r = pod_sysctl_pattern_check(c.allowed_unsafe_sysctls.items[i], err);
                if (r < 0)
                        r = cub_err_wrap(err, "%s: allowedUnsafeSysctls[%zu]", source, i);
        }
        if (r >= 0)
                r = pod_kubelet_config_check(&c, source, err);
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
