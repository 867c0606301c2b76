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

static const PodField node_status_fields[] = {
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

static const PodField cubelet_fields[] = {
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
        {},
};

static const PodField config_fields[] = {
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
        { .name = "containerRuntimeEndpoint",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, runtime_endpoint) },
        { .name = "maxPods", .decode = pod_dec_int64, .offset = offsetof(PodKubeletConfig, max_pods) },
        { .name = "cpuManagerPolicy",
          .decode = pod_dec_string,
          .offset = offsetof(PodKubeletConfig, cpu_manager_policy),
          .allowed = cpu_manager_policies },
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
        { .name = "cubelet", .decode = pod_dec_inline, .sub = cubelet_fields },
        {},
};

void pod_kubelet_config_init(PodKubeletConfig *c) {
        *c = (PodKubeletConfig){ .pod_pids_limit = -1, .cpu_cfs_quota = true, .max_pods = 110 };
}

void pod_kubelet_config_done(PodKubeletConfig *c) {
        free(c->cgroup_driver);
        free(c->static_pod_path);
        free(c->runtime_endpoint);
        free(c->state_dir);
        free(c->socket_path);
        free(c->node_name);
        free(c->cgroup_mount);
        pod_resource_list_done(&c->kube_reserved);
        pod_resource_list_done(&c->system_reserved);
        free(c->cpu_manager_policy);
        free(c->reserved_system_cpus);
        pod_string_map_done(&c->eviction_hard);
        pod_string_map_done(&c->eviction_soft);
        pod_string_map_done(&c->eviction_soft_grace_period);
        pod_string_map_done(&c->eviction_minimum_reclaim);
        free(c->eviction_pressure_transition_period);
        free(c->eviction_policy);
        free(c->eviction_sample_period);
        free(c->psi_memory_trigger);
        free(c->device_plugin_dir);
        pod_strv_done(&c->ignored);
        pod_kubelet_config_init(c);
}

int pod_kubelet_config_decode(const char *buf, size_t len, const char *source, PodKubeletConfig *ret, CubError *err) {
        PodKubeletConfig c;
        PodTree tree;
        PodDec d = { .err = err };
        const char *key;
        json_t *v;
        int r;

        r = pod_tree_load(buf, len, source, POD_FORMAT_AUTO, &tree, err);
        if (r < 0)
                return r;
        d.tree = &tree;
        pod_kubelet_config_init(&c);
        r = pod_dec_fields(&d, tree.root, &c, config_fields, NULL);
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
                c.ignored.items = calloc(json_object_size(tree.root) + 1, sizeof(char *));
                if (!c.ignored.items)
                        r = cub_err_set(err, ENOMEM, "out of memory");
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
