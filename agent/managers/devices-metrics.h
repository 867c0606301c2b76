/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The device manager's part of /metrics, kubelet's names:
 * kubelet_device_plugin_registration_total{resource_name} (a Register seen
 * by the loop counts once) and kubelet_device_plugin_alloc_duration_seconds
 * {resource_name} (kubelet times one Allocate call per container and
 * resource; cubelet times the pod's whole allocation pass and observes it
 * for each container and resource); cubelet's own
 * cubelet_device_plugin_devices and cubelet_device_health_changes_total.
 * Loop thread only.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../../deviceplugin/deviceplugin.h"
#include "../api/metrics.h"

typedef struct DevicesMetrics {
        struct DevicesMetric {
                char *resource;
                uint64_t registrations, seen_registered_usec;
                ApiHistogram alloc;
                /* the last health seen of each device; the changes since start */
                char **ids;
                bool *healthy;
                size_t n_ids;
                uint64_t to_healthy, to_unhealthy;
        } * items;
        size_t n;
} DevicesMetrics;

/* Counts the registrations that happened since the last call. */
void devices_metrics_registrations(DevicesMetrics *x, const DpManager *dp);
void devices_metrics_observe(DevicesMetrics *x, const char *resource, uint64_t usec);
/* Counts the devices whose health changed since the last call (a device
 * seen for the first time is no change): cubelet_device_health_changes_total
 * {resource_name,health}, and cubelet_device_plugin_devices{resource_name,health} */
void devices_metrics_health(DevicesMetrics *x, const DpManager *dp);
void devices_metrics_render(const DevicesMetrics *x, FILE *f);
void devices_metrics_done(DevicesMetrics *x);
