/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the device manager adds to statuses: a container's devices in
 * `cubelet status`, its allocatedResourcesStatus (KEP-4680: each allocated
 * device with its health) there and in the API's container statuses, and
 * the node's device plugins. Loop thread only; json_t * passed as void *.
 */

#include "../../deviceplugin/deviceplugin.h"
#include "../lifecycle/lifecycle.h"

/* kubelet's ResourceHealthStatus of one allocated device: "Healthy",
 * "Unhealthy", or "Unknown" (its plugin is not connected, or no longer
 * lists it) */
const char *devices_health_of(const DpManager *dp, const char *resource, const char *id);
/* [{name, resources: [{resourceID, health}]}] of the container's
 * allocations, NULL when it has none (a json_t *) */
void *devices_resources_status(const DpManager *dp, const char *pod_uid, const char *container);
/* the "devices" and "allocatedResourcesStatus" of each container of a pod
 * in `cubelet status` */
void devices_status_pod(const DpManager *dp, const LcPod *p, void *json_pod);
/* the node's "devicePlugins" */
void devices_status_node(const DpManager *dp, void *json_doc);
