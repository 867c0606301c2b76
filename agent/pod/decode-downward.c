/* SPDX-License-Identifier: Apache-2.0 */
/* The items of a downwardAPI volume and of a projected volume's downwardAPI
 * sources (DownwardAPIVolumeFile): their decoding, and the API server's
 * checks of each item's path, mode, fieldRef (the fields a volume may
 * expose) and resourceFieldRef (container, resource, divisor)
 * (validateDownwardAPIVolumeFile). decode-volumes.c calls both. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

void pod_downward_file_done(PodDownwardFile *f) {
        free(f->path);
        free(f->field_path);
        free(f->resource_container);
        free(f->resource);
        free(f->divisor_text);
        free(f->field_api_version);
        free(f->audience);
        free(f->ref_name);
        free(f->key);
}

static const PodField field_ref_fields[] = {
        POD_STR("apiVersion", PodDownwardFile, field_api_version),
        POD_STR_REQ("fieldPath", PodDownwardFile, field_path),
        {},
};

static const PodField resource_ref_fields[] = {
        POD_STR("containerName", PodDownwardFile, resource_container),
        POD_STR_REQ("resource", PodDownwardFile, resource),
        { .name = "divisor", .decode = pod_dec_quantity, .offset = offsetof(PodDownwardFile, divisor_text) },
        {},
};

static const PodField downward_file_fields[] = {
        POD_STR_REQ("path", PodDownwardFile, path),
        { .name = "fieldRef", .decode = pod_dec_inline, .sub = field_ref_fields },
        { .name = "resourceFieldRef", .decode = pod_dec_inline, .sub = resource_ref_fields },
        { .name = "mode",
          .decode = pod_dec_int32,
          .offset = offsetof(PodDownwardFile, mode),
          .set_offset = offsetof(PodDownwardFile, mode_set) },
        {},
};

static bool is_volume_field_path(const char *fp) {
        static const char *const ok[] = { "metadata.name",        "metadata.namespace", "metadata.labels",
                                          "metadata.annotations", "metadata.uid",       NULL };

        for (const char *const *o = ok; *o; o++)
                if (strcmp(fp, *o) == 0)
                        return true;
        /* metadata.labels['key'] and metadata.annotations['key'] */
        if ((strncmp(fp, "metadata.labels['", 17) == 0 || strncmp(fp, "metadata.annotations['", 22) == 0) &&
            strlen(fp) > 2 && strcmp(fp + strlen(fp) - 2, "']") == 0)
                return true;
        return false;
}

static bool is_volume_resource(const char *r) {
        static const char *const ok[] = { "limits.cpu",
                                          "limits.memory",
                                          "limits.ephemeral-storage",
                                          "requests.cpu",
                                          "requests.memory",
                                          "requests.ephemeral-storage",
                                          NULL };

        for (const char *const *o = ok; *o; o++)
                if (strcmp(r, *o) == 0)
                        return true;
        return false;
}

static bool container_exists(const Pod *pod, const char *name) {
        for (size_t i = 0; i < pod->n_containers; i++)
                if (strcmp(pod->containers[i].name, name) == 0)
                        return true;
        for (size_t i = 0; i < pod->n_init_containers; i++)
                if (strcmp(pod->init_containers[i].name, name) == 0)
                        return true;
        return false;
}

static int check_mode(PodDec *d, const char *suffix, int32_t mode) {
        if (mode < 0 || mode > 0777)
                return pod_dec_fail(d, 0, suffix,
                                    "Invalid value: %" PRId32 ": must be a number between 0 and 0777 "
                                    "(octal), both inclusive",
                                    mode);
        return 0;
}

/* the items of a downwardAPI volume or projection, at d's path (".items") */
int pod_check_downward_items(PodDec *d, const Pod *pod, json_t *arr, PodDownwardFile *items, size_t n) {
        for (size_t i = 0; i < n; i++) {
                PodDownwardFile *f = &items[i];
                size_t old = pod_dec_push(d, ".items[%zu]", i);
                int r = 0, saved = d->line, line = pod_tree_line(d->tree, json_array_get(arr, i));

                if (line > 0)
                        d->line = line;

                if (!*f->path)
                        r = pod_dec_fail(d, 0, ".path", "Required value");
                if (r == 0)
                        r = pod_check_local_path(d, ".path", f->path);
                for (size_t k = 0; r == 0 && k < i; k++)
                        if (strcmp(items[k].path, f->path) == 0)
                                r = pod_dec_fail(d, 0, ".path", "Duplicate value: \"%s\"", f->path);
                if (r == 0 && f->mode_set)
                        r = check_mode(d, ".mode", f->mode);
                if (r == 0 && f->field_path && f->resource)
                        r = pod_dec_fail(d, 0, NULL,
                                         "Invalid value: \"resource\": fieldRef and resourceFieldRef can "
                                         "not be specified simultaneously");
                if (r == 0 && !f->field_path && !f->resource)
                        r = pod_dec_fail(d, 0, NULL,
                                         "Required value: one of fieldRef and resourceFieldRef is "
                                         "required");
                if (r == 0 && f->field_path && !is_volume_field_path(f->field_path))
                        r = pod_dec_fail(d, 0, ".fieldRef.fieldPath",
                                         "Unsupported value: \"%s\": supported values: \"metadata.annotations\", "
                                         "\"metadata.labels\", \"metadata.name\", \"metadata.namespace\", "
                                         "\"metadata.uid\"",
                                         f->field_path);
                if (r == 0 && f->field_api_version && strcmp(f->field_api_version, "v1") != 0)
                        r = pod_dec_fail(d, 0, ".fieldRef.apiVersion",
                                         "Unsupported value: \"%s\": supported values: "
                                         "\"v1\"",
                                         f->field_api_version);
                if (r == 0 && f->resource) {
                        if (!f->resource_container || !*f->resource_container)
                                r = pod_dec_fail(d, 0, ".resourceFieldRef.containerName", "Required value");
                        else if (!container_exists(pod, f->resource_container))
                                r = pod_dec_fail(d, 0, ".resourceFieldRef.containerName",
                                                 "Invalid value: \"%s\": must be the name of a container of the pod",
                                                 f->resource_container);
                        else if (!is_volume_resource(f->resource))
                                r = pod_dec_fail(d, 0, ".resourceFieldRef.resource",
                                                 "Unsupported value: \"%s\": supported values: \"limits.cpu\", "
                                                 "\"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", "
                                                 "\"requests.ephemeral-storage\", \"requests.memory\"",
                                                 f->resource);
                        if (r == 0 && f->divisor_text)
                                r = pod_parse_quantity_at(d, ".resourceFieldRef.divisor", f->divisor_text, &f->divisor);
                }
                d->line = saved;
                pod_dec_pop(d, old);
                if (r < 0)
                        return r;
        }
        return 0;
}

int pod_decode_downward_items(PodDec *d, json_t *obj, PodVolume *v) {
        json_t *items = json_object_get(obj, "items");
        PodDownwardFile *more = NULL;
        size_t n = 0;
        PodField f = { .name = "items",
                       .decode = pod_dec_object_array,
                       .offset = 0,
                       .count_offset = sizeof(PodDownwardFile *),
                       .elem_size = sizeof(PodDownwardFile),
                       .sub = downward_file_fields };
        struct {
                PodDownwardFile *items;
                size_t n;
        } tmp = {};
        size_t old;
        int r;

        if (!items || json_is_null(items))
                return 0;
        old = pod_dec_push(d, ".items");
        r = pod_dec_object_array(d, items, &tmp.items, &f);
        pod_dec_pop(d, old);
        n = tmp.n;
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        pod_downward_file_done(&tmp.items[i]);
                free(tmp.items);
                return r;
        }
        /* append to the volume's list (projected volumes gather every source) */
        more = realloc(v->items, (v->n_items + n + 1) * sizeof(*more));
        if (!more) {
                for (size_t i = 0; i < n; i++)
                        pod_downward_file_done(&tmp.items[i]);
                free(tmp.items);
                return cub_err_set(d->err, ENOMEM, "out of memory");
        }
        if (n > 0)
                memcpy(more + v->n_items, tmp.items, n * sizeof(*more));
        v->items = more;
        v->n_items += n;
        free(tmp.items);
        return 0;
}
