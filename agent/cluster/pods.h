/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pods bound to this node, from the API server (kubelet's
 * config/apiserver.go, a reflector): list with fieldSelector
 * spec.nodeName=NODE, then watch from the list's resourceVersion with
 * bookmarks; a watch that ends is started again from the last version, a
 * 410 Gone (the version is too old) lists again, a failure waits for the
 * retry policy (1 s doubling to 30 s, as client-go's reflector backs off).
 * After the first list and each event, fn gets the whole set.
 */

#include <jansson.h>
#include <stdbool.h>
#include <systemd/sd-event.h>

#include "../util/err.h"
#include "client.h"

typedef struct KubePods KubePods;

/* pods: metadata.uid → the v1 Pod, as the API server last gave it
 * (borrowed for the call) */
typedef void (*KubePodsFn)(void *userdata, const json_t *pods);

int kube_pods_new(sd_event *e, KubeClient *c, const char *node_name, KubePodsFn fn, void *userdata, KubePods **ret,
                  CubError *err);
KubePods *kube_pods_free(KubePods *p);
/* Keeps the set in dir's KUBE_PODS_FILE (pods-cache.h) whenever its pods
 * change. With offline_start (cubelet.offlinePods: start), a first list
 * that fails hands fn the file's pods, once, until a list answers; keep
 * (false) is kubelet's behaviour: nothing runs before the first list.
 * Before kube_pods_start. */
#define KUBE_PODS_FILE "api_pods"
int kube_pods_set_cache(KubePods *p, const char *dir, bool offline_start, CubError *err);
void kube_pods_start(KubePods *p);
/* uid → Pod, as last listed or watched (borrowed) */
const json_t *kube_pods_set(const KubePods *p);
/* the first list arrived (kubelet's sourcesReady for the API source) */
bool kube_pods_synced(const KubePods *p);
/* For `cubelet status`: synced, pods, resourceVersion, lists, watches, events, the error. */
json_t *kube_pods_status_json(const KubePods *p);
