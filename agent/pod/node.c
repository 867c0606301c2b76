/* SPDX-License-Identifier: Apache-2.0 */
/* Inputs beside pods: a v1 Node (the KubeletConfiguration: kubelet-config.c). */
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
