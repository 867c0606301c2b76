/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * core/v1 Events for the API server's pods, as kubelet's recorder writes
 * them: a POST for a new reason and message (source {component: kubelet,
 * host: NODE}), a PATCH of count and lastTimestamp when it happens again;
 * at most KUBE_EVENTS_BURST requests in flight, the rest wait for the next
 * record (kubelet's eventRecordQPS/eventBurst keep a client from flooding
 * the API server the same way).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../util/err.h"
#include "client.h"

#define KUBE_EVENTS_BURST 100

typedef struct KubeEvents KubeEvents;

typedef struct KubeEventInput {
        const char *kind;           /* NULL: "Pod"; "Node": ns "default", pod and uid the node's name */
        const char *ns, *pod, *uid; /* the involved Pod (or Node) */
        bool warning;
        const char *reason, *message;
        unsigned count;
        int64_t first_unix, last_unix;
} KubeEventInput;

int kube_events_new(KubeClient *c, const char *node_name, KubeEvents **ret, CubError *err);
KubeEvents *kube_events_free(KubeEvents *ev);
/* The event as the pod holds it now: sent when new, patched when its count grew. */
void kube_events_record(KubeEvents *ev, const KubeEventInput *in);
/* Forgets the events of pods whose UID is not a key of keep (the node's stay). */
void kube_events_prune(KubeEvents *ev, const json_t *keep);
json_t *kube_events_status_json(const KubeEvents *ev);
