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
}

void devices_metrics_done(DevicesMetrics *x) {
        for (size_t i = 0; i < x->n; i++)
                free(x->items[i].resource);
        free(x->items);
        *x = (DevicesMetrics){};
}
