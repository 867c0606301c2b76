/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/api pods: what the loop renders from its pod table for the HTTP
 * API (called on the loop, the results go into an ApiSnapshot): the v1
 * PodList of /pods in kubelet's shape, the pod and container gauges of
 * /metrics, and the pods' cgroups for /metrics/resource.
 */

#include <stddef.h>
#include <stdint.h>

#include "../lifecycle/lifecycle.h"
#include "http.h"
#include "metrics.h"

typedef struct ApiPodsInfo {
        const char *node_name;
        const char *host_ip;          /* NULL when unknown; every pod shares the node's network */
        const char *runtime;          /* containerID prefix, "containerd" */
        int64_t wall_minus_mono_usec; /* CLOCK_REALTIME - CLOCK_MONOTONIC */
        /* the managers' part of a container's status (a json_t *: the device
         * manager's allocatedResourcesStatus), NULL for none; and a number
         * that changes whenever that part may have (part of the cache's key) */
        void (*container_extra)(void *userdata, const LcPod *p, const char *container, void *json_status);
        void *extra_userdata;
        uint64_t extra_generation;
} ApiPodsInfo;

/* The PodList (malloc'd JSON text), NULL on ENOMEM. */
char *api_pod_list_json(LcPod *const *pods, size_t n, const ApiPodsInfo *info);
/* unix seconds as RFC 3339 in UTC ("2026-11-26T09:20:04Z"); returns buf */
const char *api_rfc3339(int64_t unix_s, char buf[static 32]);

/* Each pod's rendered JSON, kept while its spec and status stay the same
 * (compared byte for byte): a steady node costs the loop a memcmp per pod
 * per snapshot instead of a render. The loop owns it. */
typedef struct ApiPodCache {
        struct ApiPodCacheEntry {
                const WorkerSpec *spec;
                char *key; /* the status bytes it was rendered from */
                size_t key_len;
                char *json;
                bool seen;
        } * items;
        size_t n;
} ApiPodCache;

char *api_pod_list_json_cached(ApiPodCache *c, LcPod *const *pods, size_t n, const ApiPodsInfo *info);
/* The bytes a pod's JSON depends on besides its labels and annotations
 * (malloc'd, *ret_len of them; NULL on ENOMEM): two equal keys, the same
 * status. The cache's, and the cluster status tick's (a pod's status is
 * rendered again only when its key changed). */
char *api_pod_status_key(const LcPod *p, const ApiPodsInfo *info, size_t *ret_len);
void api_pod_cache_done(ApiPodCache *c);
/* One pod, as in the PodList (a json_t *). */
void *api_pod_json(const LcPod *p, const ApiPodsInfo *info);
/* Its status alone (what the API server's status PATCH carries). */
void *api_pod_status_json(const LcPod *p, const ApiPodsInfo *info);
void api_pods_gauges(LcPod *const *pods, size_t n, ApiGauges *g);
int api_snapshot_add_pods(ApiSnapshot *s, LcPod *const *pods, size_t n, const ApiPodsInfo *info);
