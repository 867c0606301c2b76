/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * kubelet's status manager for the API server's pods (status_manager.go):
 * each pod's status PATCHed (strategic merge, metadata.uid as the
 * precondition) when it differs from what was last sent; a terminal phase
 * is never sent back to a running one; once a deleted pod's containers are
 * stopped, the final DELETE with gracePeriodSeconds 0 and the UID
 * precondition. One request per pod at a time; a failed one is sent again
 * at the next set.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../util/err.h"
#include "client.h"

typedef struct KubeStatus KubeStatus;

int kube_status_new(KubeClient *c, KubeStatus **ret, CubError *err);
KubeStatus *kube_status_free(KubeStatus *s);
/* The pod's status as the node sees it now (a v1 PodStatus), rendered
 * from key (what it depends on: api_pod_status_key; NULL: unknown). */
void kube_status_set(KubeStatus *s, const char *ns, const char *name, const char *uid, const json_t *status,
                     const char *key, size_t key_len);
/* Whether the status last set from this key is the one the API server has
 * and nothing waits to be sent: the status tick need not render it again.
 * A resync that finds the API's status changed by someone forgets the key. */
bool kube_status_unchanged(const KubeStatus *s, const char *uid, const char *key, size_t key_len);
/* Whether a pod status's phase is Succeeded or Failed (never left again) */
bool kube_status_terminal(const json_t *status);
/* The deleted pod's containers are stopped: the final DELETE, once. */
/* kubelet's 10 s resync: when the API server's status of the pod
 * (api_status, from the watch) says something else than what was sent
 * (someone wrote it), it is sent again with the next kube_status_set().
 * Returns whether it differed. */
bool kube_status_reconcile(KubeStatus *s, const char *uid, const json_t *api_status);
void kube_status_delete(KubeStatus *s, const char *ns, const char *name, const char *uid);
/* A mirror pod (key: "NS/NAME"): POST it unless one is in flight or was
 * posted in the last 10 s (the watch shows it, or a failure was logged). */
void kube_status_create(KubeStatus *s, const char *key, const char *ns, const json_t *pod);
/* Forgets the pods whose UID is not a key of keep. */
void kube_status_prune(KubeStatus *s, const json_t *keep);
/* For `cubelet status`: patches, deletes, failures, resyncs, renders (the
 * statuses set: rendered because what they depend on changed), the last
 * error. */
json_t *kube_status_json(const KubeStatus *s);
