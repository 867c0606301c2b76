/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The node in the API server, as kubelet keeps it (kubelet_node_status.go,
 * nodelease.go): registration (POST, and on 409 the existing Node), the
 * status PATCHed when it changed or every report period, the Lease in
 * kube-node-lease renewed every leaseDuration/4. The agent gives the Node
 * as it sees it now (KubeNodeFn, without times); this file adds the
 * heartbeat and transition times, keeps the Node's UID, and retries every
 * request on the agent's one retry policy (200 ms doubling to 7 s, as
 * kubelet's registration and lease controller).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../util/err.h"
#include "client.h"

typedef struct KubeNodeOptions {
        const char *name;
        bool register_node;    /* --register-node (default true) */
        uint64_t update_usec;  /* nodeStatusUpdateFrequency, 10 s */
        uint64_t report_usec;  /* nodeStatusReportFrequency, 5 min */
        int64_t lease_seconds; /* nodeLeaseDurationSeconds, 40 */
} KubeNodeOptions;

/* The Node as the agent sees it now: {metadata: {labels, annotations},
 * spec: {taints}, status: {capacity, allocatable, conditions (type, status,
 * reason, message), addresses, nodeInfo, daemonEndpoints}}; a new reference. */
typedef json_t *(*KubeNodeFn)(void *userdata);

typedef struct KubeNode KubeNode;

int kube_node_new(sd_event *e, KubeClient *c, const KubeNodeOptions *o, KubeNodeFn fn, void *userdata, KubeNode **ret,
                  CubError *err);
KubeNode *kube_node_free(KubeNode *n);
/* Registers (or finds) the node, then keeps its status and Lease. */
int kube_node_start(KubeNode *n, CubError *err);
/* The agent's view changed (a condition, a resource): the status goes out
 * now rather than at the next update period. */
void kube_node_changed(KubeNode *n);
bool kube_node_registered(const KubeNode *n);
/* the conditions of the Node the API server had when this node found it
 * existing (a restart: kubelet's status and events start from them); NULL
 * when the node made it, or before */
const json_t *kube_node_api_conditions(const KubeNode *n);
/* the Node's UID once registered ("" before) */
const char *kube_node_uid(const KubeNode *n);
/* For `cubelet status`: registered, uid, the last status and lease times,
 * the failing request's error. A new reference. */
json_t *kube_node_status_json(const KubeNode *n);

/* --node-labels as kubelet checks them (labels.c): a key of the
 * kubernetes.io or k8s.io namespaces outside kubelet's allowed set and
 * prefixes (kube_node_label_forbidden) is -EINVAL with kubelet's message;
 * an item without '=' too. NULL list: 0. */
int kube_node_labels_check(const char *list, CubError *err);
bool kube_node_label_forbidden(const char *key);
/* --node-labels: key=value pairs, comma-separated, into labels */
void kube_node_labels_add(json_t *labels, const char *list);
/* --register-with-taints: key[=value]:Effect, comma-separated, as a list of v1 Taints */
json_t *kube_node_taints_parse(const char *list);
