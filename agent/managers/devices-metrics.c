/* SPDX-License-Identifier: Apache-2.0 */
/* The device manager's kubelet_device_plugin_* metrics (devices-metrics.h). */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "devices-metrics.h"

static struct DevicesMetric *metric_of(DevicesMetrics *x, const char *resource) {
        struct DevicesMetric *n;

        for (size_t i = 0; i < x->n; i++)
                if (strcmp(x->items[i].resource, resource) == 0)
                        return &x->items[i];
        n = realloc(x->items, (x->n + 1) * sizeof(*n));
        if (!n)
                return NULL;
        x->items = n;
        n = &x->items[x->n];
        *n = (struct DevicesMetric){
                .resource = strdup(resource),
                .alloc = { .bounds = api_default_buckets, .n_bounds = ELEMENTSOF(api_default_buckets) },
        };
        if (!n->resource)
                return NULL;
        x->n++;
        return n;
}

void devices_metrics_registrations(DevicesMetrics *x, const DpManager *dp) {
        for (size_t i = 0; i < dp_manager_n_resources(dp); i++) {
                const DpResource *r = dp_manager_resource(dp, i);
                struct DevicesMetric *m;

                if (r->registered_usec == 0 || !(m = metric_of(x, r->name)) ||
                    m->seen_registered_usec == r->registered_usec)
                        continue;
                m->seen_registered_usec = r->registered_usec;
                m->registrations++;
        }
}

void devices_metrics_observe(DevicesMetrics *x, const char *resource, uint64_t usec) {
        struct DevicesMetric *m = metric_of(x, resource);

        if (m)
                api_histogram_observe(&m->alloc, (double) usec / 1e6);
}

static void forget_ids(struct DevicesMetric *m) {
        for (size_t i = 0; i < m->n_ids; i++)
                free(m->ids[i]);
        free(m->ids);
        free(m->healthy);
        m->ids = NULL;
        m->healthy = NULL;
        m->n_ids = 0;
}

void devices_metrics_health(DevicesMetrics *x, const DpManager *dp) {
        for (size_t i = 0; i < dp_manager_n_resources(dp); i++) {
                const DpResource *r = dp_manager_resource(dp, i);
                struct DevicesMetric *m = metric_of(x, r->name);
                char **ids;
                bool *healthy;

                if (!m)
                        continue;
                for (size_t j = 0; j < r->n_devices; j++)
                        for (size_t k = 0; k < m->n_ids; k++)
                                if (strcmp(m->ids[k], r->devices[j].id) == 0 &&
                                    m->healthy[k] != r->devices[j].healthy) {
                                        if (r->devices[j].healthy)
                                                m->to_healthy++;
                                        else
                                                m->to_unhealthy++;
                                }
                ids = calloc(r->n_devices + 1, sizeof(*ids));
                healthy = calloc(r->n_devices + 1, sizeof(*healthy));
                if (!ids || !healthy) {
                        free(ids);
                        free(healthy);
                        continue;
                }
                forget_ids(m);
                m->ids = ids;
                m->healthy = healthy;
                for (size_t j = 0; j < r->n_devices; j++)
                        if ((m->ids[m->n_ids] = strdup(r->devices[j].id)))
                                m->healthy[m->n_ids++] = r->devices[j].healthy;
        }
}

void devices_metrics_render(const DevicesMetrics *x, FILE *f) {
        char label[256];

        api_metrics_family(f, "kubelet_device_plugin_registration_total", "counter",
                           "Cumulative number of device plugin registrations. Broken down by resource name.");
        for (size_t i = 0; i < x->n; i++) {
                fputs("kubelet_device_plugin_registration_total{resource_name=\"", f);
                api_metrics_put_label(f, x->items[i].resource);
                fprintf(f, "\"} %" PRIu64 "\n", x->items[i].registrations);
        }
        api_metrics_family(f, "kubelet_device_plugin_alloc_duration_seconds", "histogram",
                           "Duration in seconds to serve a device plugin Allocation request. Broken down by "
                           "resource name.");
        for (size_t i = 0; i < x->n; i++) {
                /* resource names are DNS-1123 qualified names: nothing to escape */
                (void) snprintf(label, sizeof(label), "resource_name=\"%s\"", x->items[i].resource);
                api_metrics_histogram(f, "kubelet_device_plugin_alloc_duration_seconds", label, &x->items[i].alloc);
        }
        api_metrics_family(f, "cubelet_device_plugin_devices", "gauge",
                           "Devices a device plugin lists, by resource name and health.");
        for (size_t i = 0; i < x->n; i++) {
                size_t ok = 0;

                for (size_t k = 0; k < x->items[i].n_ids; k++)
                        ok += x->items[i].healthy[k];
                fprintf(f, "cubelet_device_plugin_devices{resource_name=\"%s\",health=\"Healthy\"} %zu\n",
                        x->items[i].resource, ok);
                fprintf(f, "cubelet_device_plugin_devices{resource_name=\"%s\",health=\"Unhealthy\"} %zu\n",
                        x->items[i].resource, x->items[i].n_ids - ok);
        }
        api_metrics_family(f, "cubelet_device_health_changes_total", "counter",
                           "Devices that turned Healthy or Unhealthy, by resource name and the new health.");
        for (size_t i = 0; i < x->n; i++) {
                fprintf(f, "cubelet_device_health_changes_total{resource_name=\"%s\",health=\"Healthy\"} %" PRIu64 "\n",
                        x->items[i].resource, x->items[i].to_healthy);
                fprintf(f,
                        "cubelet_device_health_changes_total{resource_name=\"%s\",health=\"Unhealthy\"} %" PRIu64 "\n",
                        x->items[i].resource, x->items[i].to_unhealthy);
        }
}

void devices_metrics_done(DevicesMetrics *x) {
        for (size_t i = 0; i < x->n; i++) {
                free(x->items[i].resource);
                forget_ids(&x->items[i]);
        }
        free(x->items);
        *x = (DevicesMetrics){};
}
