/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The status publisher (--kubeconfig): what the node tells the API server,
 * beside its pods' source (source.h). It owns the connection (client.h),
 * the Node and its Lease (node.h), each API pod's status and the final
 * DELETE of a deleted one (status.h), the static pods' mirror pods, and
 * the pods' and the node's events (events.h).
 *
 * Each second it asks the loop for its snapshot (KubePubSnapshot: the pod
 * table, read-only for the call, and how /pods renders it, as api/ gets
 * its own) and publishes from it and the source's set. A pod's status is
 * rendered only when the bytes it depends on changed (api_pod_status_key)
 * and sent only when the rendering differs from what the API server has:
 * steady pods cost a key each, no render, no request.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../api/pods.h"
#include "../lifecycle/lifecycle.h"
#include "../util/err.h"
#include "client.h"
#include "node.h"
#include "source.h"

typedef struct KubePublisher KubePublisher;

/* The loop's pods for one tick: valid until the hook's caller returns. */
typedef struct KubePubSnapshot {
        const LcPod *const *pods;
        size_t n_pods;
        ApiPodsInfo info;
} KubePubSnapshot;

typedef struct KubePublisherHooks {
        /* the Node as the agent sees it (KubeNodeFn) */
        json_t *(*node)(void *userdata);
        void (*snapshot)(void *userdata, KubePubSnapshot *ret);
        /* whether the pod of uid is still being stopped (its final DELETE waits) */
        bool (*stopping)(void *userdata, const char *uid);
        void *userdata;
} KubePublisherHooks;

/* Takes client (freed with the publisher); starts the Node's registration. */
int kube_publisher_new(sd_event *e, KubeClient *client, const KubeNodeOptions *o, const KubePublisherHooks *h,
                       KubePublisher **ret, CubError *err);
/* the pods' source whose set the tick publishes against (borrowed; its tick is the publisher's) */
void kube_publisher_set_source(KubePublisher *p, KubeSource *source);
KubePublisher *kube_publisher_free(KubePublisher *p);
KubeClient *kube_publisher_client(KubePublisher *p);
/* the node's conditions or resources changed: its status goes out now */
void kube_publisher_node_changed(KubePublisher *p);
/* kubelet's recordNodeStatusEvent: one Normal event per reason, counted */
void kube_publisher_node_event(KubePublisher *p, const char *reason, const char *message);
/* the Node's conditions as the hook rendered them: their changes as
 * kubelet's node events (NodeReady, NodeHasSufficientMemory, ...) */
void kube_publisher_node_conditions(KubePublisher *p, const json_t *conds);
/* For `cubelet status`: the Node's, the requests, the pods' status and
 * events, the status tick's own CPU (NULL before the Node is known). */
json_t *kube_publisher_status_json(KubePublisher *p);
