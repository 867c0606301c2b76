/* SPDX-License-Identifier: Apache-2.0 */
/* The device manager's part of the statuses (devices-status.h). */

#include <jansson.h>
#include <string.h>

#include "devices-status.h"

const char *devices_health_of(const DpManager *dp, const char *resource, const char *id) {
        const DpResource *r = dp_manager_find(dp, resource);

        if (!r || !r->connected)
                return "Unknown";
        for (size_t i = 0; i < r->n_devices; i++)
                if (strcmp(r->devices[i].id, id) == 0)
                        return r->devices[i].healthy ? "Healthy" : "Unhealthy";
        return "Unknown";
}

void *devices_resources_status(const DpManager *dp, const char *pod_uid, const char *container) {
        json_t *l = NULL;

        for (size_t i = 0; i < dp_manager_n_allocations(dp); i++) {
                const DpAllocation *al = dp_manager_allocation(dp, i);
                json_t *res;

                if (strcmp(al->pod_uid, pod_uid) != 0 || strcmp(al->container, container) != 0)
                        continue;
                if (!l && !(l = json_array()))
                        return NULL;
                res = json_array();
                for (size_t j = 0; res && j < al->n_ids; j++)
                        json_array_append_new(res, json_pack("{s:s,s:s}", "resourceID", al->ids[j], "health",
                                                             devices_health_of(dp, al->resource, al->ids[j])));
                json_array_append_new(l, json_pack("{s:s,s:o*}", "name", al->resource, "resources", res));
        }
        return l;
}

void devices_status_pod(const DpManager *dp, const LcPod *p, void *json_pod) {
        json_t *cs = json_object_get(json_pod, "containers"), *c;
        size_t k;

        json_array_foreach(cs, k, c) {
                const char *name = json_string_value(json_object_get(c, "name"));
                json_t *devs = json_object();

                for (size_t i = 0; name && devs && i < dp_manager_n_allocations(dp); i++) {
                        const DpAllocation *al = dp_manager_allocation(dp, i);
                        json_t *ids;

                        if (strcmp(al->pod_uid, p->spec->pod->uid) != 0 || strcmp(al->container, name) != 0)
                                continue;
                        ids = json_array();
                        for (size_t j = 0; ids && j < al->n_ids; j++)
                                json_array_append_new(ids, json_string(al->ids[j]));
                        json_object_set_new(devs, al->resource, ids);
                }
                if (devs && json_object_size(devs) > 0) {
                        json_object_set_new(c, "devices", devs);
                        json_object_set_new(c, "allocatedResourcesStatus",
                                            devices_resources_status(dp, p->spec->pod->uid, name));
                } else
                        json_decref(devs);
        }
}

void devices_status_node(const DpManager *dp, void *json_doc) {
        json_t *l = json_array();

        if (!l)
                return;
        for (size_t i = 0; i < dp_manager_n_resources(dp); i++) {
                const DpResource *r = dp_manager_resource(dp, i);
                json_t *unhealthy = json_array(), *o;

                for (size_t j = 0; unhealthy && j < r->n_devices; j++)
                        if (!r->devices[j].healthy || !r->connected)
                                json_array_append_new(unhealthy, json_string(r->devices[j].id));
                o = json_pack("{s:s,s:s,s:b,s:I,s:I,s:o*}", "name", r->name, "endpoint", r->endpoint ? r->endpoint : "",
                              "connected", r->connected, "capacity", (json_int_t) dp_resource_capacity(r),
                              "allocatable", (json_int_t) dp_resource_allocatable(r), "unhealthy", unhealthy);
                if (o && *r->last_error)
                        json_object_set_new(o, "error", json_string(r->last_error));
                json_array_append_new(l, o);
        }
        json_object_set_new(json_doc, "devicePlugins",
                            json_pack("{s:s,s:s,s:o}", "dir", dp_manager_dir(dp), "checkpointNote",
                                      dp_manager_checkpoint_note(dp), "resources", l));
}
