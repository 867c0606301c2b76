/* SPDX-License-Identifier: Apache-2.0 */
/* Volumes: spec.volumes[] (hostPath, emptyDir, downwardAPI, projected with
 * downwardAPI sources), the containers' volumeMounts[] and the pod's
 * securityContext.fsGroup / fsGroupChangePolicy, with the API server's
 * validation messages (ValidateVolumes, ValidateVolumeMounts). The field
 * table (fields-table.c) refuses every other volume source. The downwardAPI
 * items, shared by both volume kinds, are in decode-downward.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

/* ---- destructors -------------------------------------------------------- */

void pod_volumes_done(Pod *pod) {
        for (size_t i = 0; i < pod->n_volumes; i++) {
                PodVolume *v = &pod->volumes[i];

                free(v->name);
                free(v->host_path);
                free(v->host_path_type);
                free(v->medium);
                for (size_t k = 0; k < v->n_items; k++)
                        pod_downward_file_done(&v->items[k]);
                free(v->items);
        }
        free(pod->volumes);
        pod->volumes = NULL;
        pod->n_volumes = 0;
        free(pod->fs_group_change_policy);
        pod->fs_group_change_policy = NULL;
}

/* ---- tables ------------------------------------------------------------- */

static const char *const host_path_types[] = {
        "", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice", NULL
};
static const char *const propagations[] = { "None", "HostToContainer", "Bidirectional", NULL };
static const char *const fs_group_policies[] = { "OnRootMismatch", "Always", NULL };

/* a quantity given as a string or a number */
int pod_dec_quantity(PodDec *d, json_t *v, void *dst, const PodField *f) {
        char **s = dst;
        char text[64];

        (void) f;
        if (json_is_null(v))
                return 0;
        if (json_is_string(v))
                (void) snprintf(text, sizeof(text), "%s", json_string_value(v));
        else if (json_is_integer(v))
                (void) snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        else
                return pod_dec_fail(d, 0, NULL, "Invalid type: expected quantity (string or number), got %s",
                                    pod_json_type_name(v));
        free(*s);
        *s = strdup(text);
        return *s ? 0 : cub_err_set(d->err, ENOMEM, "out of memory");
}

static const PodField mount_fields[] = {
        POD_STR_REQ("name", PodVolumeMount, name),
        POD_STR("mountPath", PodVolumeMount, mount_path),
        { .name = "readOnly", .decode = pod_dec_bool, .offset = offsetof(PodVolumeMount, read_only) },
        POD_STR("subPath", PodVolumeMount, sub_path),
        POD_STR("subPathExpr", PodVolumeMount, sub_path_expr),
        POD_ENUM("mountPropagation", PodVolumeMount, mount_propagation, propagations),
        {},
};

static const PodField mounts_field = {
        .name = "volumeMounts",
        .decode = pod_dec_object_array,
        .offset = offsetof(PodContainer, volume_mounts),
        .count_offset = offsetof(PodContainer, n_volume_mounts),
        .elem_size = sizeof(PodVolumeMount),
        .sub = mount_fields,
};

/* a container's volumeMounts, freed as their table decoded them */
void pod_container_volumes_done(PodContainer *c) {
        pod_fields_done((const PodField[]){ mounts_field, {} }, c);
}

/* ---- checks --------------------------------------------------------------- */

/* validation.ValidatePathNoBacksteps: no ".." element */
static bool has_backsteps(const char *p) {
        const char *s = p;

        while (*s) {
                const char *e = strchr(s, '/');
                size_t n = e ? (size_t) (e - s) : strlen(s);

                if (n == 2 && s[0] == '.' && s[1] == '.')
                        return true;
                if (!e)
                        break;
                s = e + 1;
        }
        return false;
}

/* validateLocalDescendingPath */
int pod_check_local_path(PodDec *d, const char *suffix, const char *p) {
        if (p[0] == '/')
                return pod_dec_fail(d, 0, suffix, "Invalid value: \"%s\": must be a relative path", p);
        if (has_backsteps(p))
                return pod_dec_fail(d, 0, suffix, "Invalid value: \"%s\": must not contain '..'", p);
        return 0;
}

int pod_parse_quantity_at(PodDec *d, const char *suffix, const char *text, CubQuantity *ret) {
        CubError qerr = {};

        if (cub_quantity_parse(text, ret, &qerr) < 0)
                return pod_dec_fail(d, 0, suffix, "%s", qerr.msg);
        return 0;
}

static int get_mode(PodDec *d, json_t *obj, const char *key, int32_t *mode) {
        json_t *m = json_object_get(obj, key);
        size_t old;
        int r = 0;

        if (!m || json_is_null(m))
                return 0;
        old = pod_dec_push(d, ".%s", key);
        if (!json_is_integer(m))
                r = pod_dec_fail(d, pod_tree_line(d->tree, m), NULL, "Invalid type: expected number, got %s",
                                 pod_json_type_name(m));
        else if (json_integer_value(m) < 0 || json_integer_value(m) > 0777)
                r = pod_dec_fail(d, pod_tree_line(d->tree, m), NULL,
                                 "Invalid value: %" JSON_INTEGER_FORMAT ": must be a number between 0 and 0777 "
                                 "(octal), both inclusive",
                                 json_integer_value(m));
        else
                *mode = (int32_t) json_integer_value(m);
        pod_dec_pop(d, old);
        return r;
}

static int decode_volume(PodDec *d, const Pod *pod, json_t *obj, PodVolume *v) {
        static const char *const sources[] = { "hostPath",  "emptyDir", "downwardAPI", "projected",
                                               "configMap", "secret",   NULL };
        json_t *name = json_object_get(obj, "name"), *src = NULL;
        const char *kind = NULL;
        size_t old;
        int r = 0, n = 0;

        if (!json_is_string(name) || !*json_string_value(name))
                return pod_dec_fail(d, 0, ".name", "Required value");
        v->name = strdup(json_string_value(name));
        v->default_mode = 0644;
        v->host_path_type = strdup("");
        v->medium = strdup("");
        if (!v->name || !v->host_path_type || !v->medium)
                return cub_err_set(d->err, ENOMEM, "out of memory");
        if (!pod_dns1123_label(v->name))
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "name"), ".name",
                                    "Invalid value: \"%s\": a lowercase RFC 1123 label must consist of lower case "
                                    "alphanumeric characters or '-', and must start and end with an alphanumeric "
                                    "character",
                                    v->name);
        for (const char *const *s = sources; *s; s++) {
                json_t *x = json_object_get(obj, *s);

                if (x && !json_is_null(x)) {
                        if (n++ == 0) {
                                kind = *s;
                                src = x;
                        }
                }
        }
        /* another source (nfs, secret, ...) is the field table's refusal */
        v->kind = _POD_VOLUME_KIND_INVALID;
        if (n == 0) {
                const char *k;
                json_t *x;

                json_object_foreach(obj, k, x) if (strcmp(k, "name") != 0) return 0;
                return pod_dec_fail(d, 0, NULL, "Required value: must specify a volume type");
        }
        if (n > 1)
                return pod_dec_fail(d, 0, NULL, "Forbidden: may not specify more than 1 volume type");
        old = pod_dec_push(d, ".%s", kind);
        if (!json_is_object(src)) {
                r = pod_dec_fail(d, 0, NULL, "Invalid type: expected object, got %s", pod_json_type_name(src));
                goto out;
        }
        if (strcmp(kind, "hostPath") == 0) {
                static const PodField hp[] = {
                        POD_STR_REQ("path", PodVolume, host_path),
                        POD_ENUM("type", PodVolume, host_path_type, host_path_types),
                        {},
                };

                v->kind = POD_VOLUME_HOST_PATH;
                r = pod_dec_fields(d, src, v, hp, NULL);
                if (r == 0 && !*v->host_path)
                        r = pod_dec_fail(d, 0, ".path", "Required value");
                if (r == 0 && has_backsteps(v->host_path))
                        r = pod_dec_fail(d, 0, ".path", "Invalid value: \"%s\": must not contain '..'", v->host_path);
                if (r == 0 && v->host_path[0] != '/')
                        r = pod_dec_fail(d, 0, ".path", "Invalid value: \"%s\": cubelet needs an absolute host path",
                                         v->host_path);
        } else if (strcmp(kind, "emptyDir") == 0) {
                _cleanup_free_ char *limit = NULL;
                PodField ed[] = {
                        { .name = "medium", .decode = pod_dec_string, .offset = offsetof(PodVolume, medium) },
                        {},
                };
                json_t *sl = json_object_get(src, "sizeLimit");

                v->kind = POD_VOLUME_EMPTY_DIR;
                r = pod_dec_fields(d, src, v, ed, NULL);
                if (r == 0 && *v->medium && strcmp(v->medium, "Memory") != 0) {
                        size_t o2 = pod_dec_push(d, ".medium");

                        r = pod_dec_fail(d, pod_dec_field_line(d, src, "medium"), NULL,
                                         strncmp(v->medium, "HugePages", 9) == 0
                                                 ? "Unsupported value: \"%s\": not supported by cubelet"
                                                 : "Unsupported value: \"%s\": supported values: \"\", \"Memory\"",
                                         v->medium);
                        pod_dec_pop(d, o2);
                }
                if (r == 0 && sl && !json_is_null(sl)) {
                        size_t o2 = pod_dec_push(d, ".sizeLimit");
                        PodField q = { .name = "sizeLimit" };

                        r = pod_dec_quantity(d, sl, &limit, &q);
                        if (r == 0)
                                r = pod_parse_quantity_at(d, NULL, limit, &v->size_limit);
                        v->size_limit_set = r == 0;
                        pod_dec_pop(d, o2);
                }
        } else if (strcmp(kind, "configMap") == 0 || strcmp(kind, "secret") == 0) {
                bool secret = kind[0] == 's';

                if (!d->api) {
                        v->kind = _POD_VOLUME_KIND_INVALID; /* refused by the field table */
                        goto out;
                }
                v->kind = secret ? POD_VOLUME_SECRET : POD_VOLUME_CONFIG_MAP;
                r = get_mode(d, src, "defaultMode", &v->default_mode);
                if (r == 0)
                        r = pod_decode_key_items(d, src, v, secret ? POD_PROJECTION_SECRET : POD_PROJECTION_CONFIG_MAP,
                                                 secret ? "secretName" : "name");
        } else if (strcmp(kind, "downwardAPI") == 0) {
                v->kind = POD_VOLUME_DOWNWARD_API;
                r = get_mode(d, src, "defaultMode", &v->default_mode);
                if (r == 0)
                        r = pod_decode_downward_items(d, src, v);
                if (r == 0)
                        r = pod_check_downward_items(d, pod, json_object_get(src, "items"), v->items, v->n_items);
        } else {
                json_t *srcs = json_object_get(src, "sources"), *e;
                size_t i;

                v->kind = POD_VOLUME_PROJECTED;
                r = get_mode(d, src, "defaultMode", &v->default_mode);
                if (r == 0 && srcs && !json_is_null(srcs) && !json_is_array(srcs))
                        r = pod_dec_fail(d, 0, ".sources", "Invalid type: expected array, got %s",
                                         pod_json_type_name(srcs));
                json_array_foreach(srcs, i, e) {
                        json_t *dw = json_is_object(e) ? json_object_get(e, "downwardAPI") : NULL;
                        size_t o2, first = v->n_items;

                        if (r < 0)
                                break;
                        if (!json_is_object(e))
                                continue; /* the field table refuses it */
                        if (dw && json_is_object(dw)) {
                                o2 = pod_dec_push(d, ".sources[%zu].downwardAPI", i);
                                r = pod_decode_downward_items(d, dw, v);
                                if (r == 0)
                                        r = pod_check_downward_items(d, pod, json_object_get(dw, "items"),
                                                                     v->items ? v->items + first : NULL,
                                                                     v->n_items - first);
                        } else {
                                /* serviceAccountToken, configMap (API pods); others: the field table */
                                o2 = pod_dec_push(d, ".sources[%zu]", i);
                                r = pod_decode_projection_api(d, e, v);
                        }
                        /* a path given by two sources ("": every key of a ConfigMap) */
                        for (size_t k = first; r == 0 && k < v->n_items; k++)
                                for (size_t j = 0; r == 0 && j < first && *v->items[k].path; j++)
                                        if (strcmp(v->items[j].path, v->items[k].path) == 0)
                                                r = pod_dec_fail(d, 0, NULL,
                                                                 "Invalid value: \"%s\": conflicting duplicate paths",
                                                                 v->items[k].path);
                        pod_dec_pop(d, o2);
                }
        }
out:
        pod_dec_pop(d, old);
        return r;
}

static const PodVolume *find_volume(const Pod *pod, const char *name) {
        for (size_t i = 0; i < pod->n_volumes; i++)
                if (pod->volumes[i].name && strcmp(pod->volumes[i].name, name) == 0)
                        return &pod->volumes[i];
        return NULL;
}

static bool container_privileged(json_t *cobj) {
        json_t *sc = json_object_get(cobj, "securityContext");
        json_t *p = json_is_object(sc) ? json_object_get(sc, "privileged") : NULL;

        return json_is_true(p);
}

static int decode_mounts(PodDec *d, const Pod *pod, json_t *list, PodContainer *cs, size_t n) {
        size_t i;
        json_t *cobj;

        if (!json_is_array(list))
                return 0;
        json_array_foreach(list, i, cobj) {
                json_t *vm = json_is_object(cobj) ? json_object_get(cobj, "volumeMounts") : NULL;
                PodContainer *c;
                size_t old;
                int r = 0;

                if (i >= n)
                        break;
                if (!vm || json_is_null(vm))
                        continue;
                c = &cs[i];
                old = pod_dec_push(d, "[%zu].volumeMounts", i);
                r = pod_dec_object_array(d, vm, &c->volume_mounts, &mounts_field);
                for (size_t k = 0; r == 0 && k < c->n_volume_mounts; k++) {
                        PodVolumeMount *m = &c->volume_mounts[k];
                        size_t o2 = pod_dec_push(d, "[%zu]", k);
                        int saved = d->line, line = pod_tree_line(d->tree, json_array_get(vm, k));

                        if (line > 0)
                                d->line = line;
                        if (!*m->name)
                                r = pod_dec_fail(d, line, ".name", "Required value");
                        else if (!find_volume(pod, m->name))
                                r = pod_dec_fail(d, line, ".name", "Not found: \"%s\"", m->name);
                        else if (!m->mount_path || !*m->mount_path)
                                r = pod_dec_fail(d, line, ".mountPath", "Required value");
                        for (size_t j = 0; r == 0 && j < k; j++)
                                if (strcmp(c->volume_mounts[j].mount_path, m->mount_path) == 0)
                                        r = pod_dec_fail(d, line, ".mountPath", "Invalid value: \"%s\": must be unique",
                                                         m->mount_path);
                        if (r == 0 && m->sub_path && *m->sub_path)
                                r = pod_check_local_path(d, ".subPath", m->sub_path);
                        if (r == 0 && m->sub_path_expr && *m->sub_path_expr && m->sub_path && *m->sub_path)
                                r = pod_dec_fail(
                                        d, line, ".subPathExpr",
                                        "Invalid value: \"%s\": subPathExpr and subPath are mutually exclusive",
                                        m->sub_path_expr);
                        if (r == 0 && m->sub_path_expr && *m->sub_path_expr)
                                r = pod_check_local_path(d, ".subPathExpr", m->sub_path_expr);
                        if (r == 0 && m->mount_propagation && strcmp(m->mount_propagation, "Bidirectional") == 0 &&
                            !container_privileged(cobj))
                                r = pod_dec_fail(d, line, ".mountPropagation",
                                                 "Forbidden: Bidirectional mount propagation is available only to "
                                                 "privileged containers");
                        d->line = saved;
                        pod_dec_pop(d, o2);
                }
                pod_dec_pop(d, old);
                if (r < 0)
                        return r;
        }
        return 0;
}

int pod_decode_volumes(PodDec *d, json_t *root, Pod *pod) {
        json_t *spec = json_object_get(root, "spec"), *vols, *sc, *v;
        size_t old, i;
        int r = 0;

        if (!json_is_object(spec))
                return 0;
        vols = json_object_get(spec, "volumes");
        if (json_is_array(vols) && json_array_size(vols) > 0) {
                pod->volumes = calloc(json_array_size(vols) + 1, sizeof(PodVolume));
                if (!pod->volumes)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
                json_array_foreach(vols, i, v) {
                        size_t o2 = pod_dec_push(d, ".spec.volumes[%zu]", i);
                        int saved = d->line, line = pod_tree_line(d->tree, v);

                        if (line > 0)
                                d->line = line;
                        pod->n_volumes = i + 1;
                        /* not an object: the field check notes it */
                        if (json_is_object(v))
                                r = decode_volume(d, pod, v, &pod->volumes[i]);
                        for (size_t k = 0; r == 0 && pod->volumes[i].name && k < i; k++)
                                if (pod->volumes[k].name && strcmp(pod->volumes[k].name, pod->volumes[i].name) == 0)
                                        r = pod_dec_fail(d, pod_dec_field_line(d, v, "name"), ".name",
                                                         "Duplicate value: \"%s\"", pod->volumes[i].name);
                        d->line = saved;
                        pod_dec_pop(d, o2);
                        if (r < 0)
                                return r;
                }
        }
        old = pod_dec_push(d, ".spec.containers");
        r = decode_mounts(d, pod, json_object_get(spec, "containers"), pod->containers, pod->n_containers);
        pod_dec_pop(d, old);
        if (r < 0)
                return r;
        old = pod_dec_push(d, ".spec.initContainers");
        r = decode_mounts(d, pod, json_object_get(spec, "initContainers"), pod->init_containers,
                          pod->n_init_containers);
        pod_dec_pop(d, old);
        if (r < 0)
                return r;
        sc = json_object_get(spec, "securityContext");
        if (json_is_object(sc)) {
                static const PodField fs[] = {
                        { .name = "fsGroup",
                          .decode = pod_dec_int64,
                          .offset = offsetof(Pod, fs_group),
                          .set_offset = offsetof(Pod, fs_group_set) },
                        POD_ENUM("fsGroupChangePolicy", Pod, fs_group_change_policy, fs_group_policies),
                        {},
                };

                old = pod_dec_push(d, ".spec.securityContext");
                r = pod_dec_fields(d, sc, pod, fs, NULL);
                if (r == 0 && pod->fs_group_set && (pod->fs_group < 0 || pod->fs_group > INT32_MAX))
                        r = pod_dec_fail(d, pod_dec_field_line(d, sc, "fsGroup"), ".fsGroup",
                                         "Invalid value: %" PRId64 ": must be between 0 and 2147483647, inclusive",
                                         pod->fs_group);
                pod_dec_pop(d, old);
        }
        return r;
}
