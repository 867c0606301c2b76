/* SPDX-License-Identifier: Apache-2.0 */
/* A projected volume's serviceAccountToken, configMap and secret sources,
 * and the configMap and secret volumes, in a pod of the API server
 * (pod_decode_api): the ServiceAccount admission plugin adds a token and a
 * ConfigMap to every pod (the kube-api-access-* volume). Their content comes
 * from the API server when the pod's volumes are set up; here they become
 * items of the volume (PodDownwardFile with its source), checked as the API
 * server's validateProjectionSources does. A static pod refuses them (the
 * field table). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

/* the API server's defaulting (SetDefaults_ServiceAccountTokenProjection) */
#define TOKEN_EXPIRATION_DEFAULT 3600
/* validateProjectionSources: at least 10 minutes, at most 2^32 s */
#define TOKEN_EXPIRATION_MIN 600
#define TOKEN_EXPIRATION_MAX (INT64_C(1) << 32)

static const PodField token_fields[] = {
        POD_STR("audience", PodDownwardFile, audience),
        { .name = "expirationSeconds",
          .decode = pod_dec_int64,
          .offset = offsetof(PodDownwardFile, expiration_seconds) },
        POD_STR("path", PodDownwardFile, path),
        {},
};

static const PodField key_fields[] = {
        POD_STR_REQ("key", PodDownwardFile, key),
        POD_STR_REQ("path", PodDownwardFile, path),
        { .name = "mode",
          .decode = pod_dec_int32,
          .offset = offsetof(PodDownwardFile, mode),
          .set_offset = offsetof(PodDownwardFile, mode_set) },
        {},
};

static int append(PodDec *d, PodVolume *v, PodDownwardFile *f) {
        PodDownwardFile *more = realloc(v->items, (v->n_items + 2) * sizeof(*more));

        if (!more) {
                pod_downward_file_done(f);
                return cub_err_set(d->err, ENOMEM, "out of memory");
        }
        v->items = more;
        v->items[v->n_items++] = *f;
        return 0;
}

static int token_source(PodDec *d, json_t *src, PodVolume *v) {
        PodDownwardFile f = { .source = POD_PROJECTION_SERVICE_ACCOUNT,
                              .expiration_seconds = TOKEN_EXPIRATION_DEFAULT };
        size_t old = pod_dec_push(d, ".serviceAccountToken");
        int r;

        r = pod_dec_fields(d, src, &f, token_fields, NULL);
        if (r == 0 && (!f.path || !*f.path))
                r = pod_dec_fail(d, 0, ".path", "Required value");
        if (r == 0)
                r = pod_check_local_path(d, ".path", f.path);
        if (r == 0 && f.expiration_seconds < TOKEN_EXPIRATION_MIN)
                r = pod_dec_fail(d, 0, ".expirationSeconds",
                                 "Invalid value: %" PRId64 ": may not specify a duration less than 10 minutes",
                                 f.expiration_seconds);
        if (r == 0 && f.expiration_seconds > TOKEN_EXPIRATION_MAX)
                r = pod_dec_fail(d, 0, ".expirationSeconds",
                                 "Invalid value: %" PRId64 ": may not specify a duration larger than 2^32 seconds",
                                 f.expiration_seconds);
        if (r == 0 && f.audience && !*f.audience) {
                free(f.audience);
                f.audience = NULL;
        }
        pod_dec_pop(d, old);
        if (r < 0) {
                pod_downward_file_done(&f);
                return r;
        }
        return append(d, v, &f);
}

int pod_decode_key_items(PodDec *d, json_t *src, PodVolume *v, PodProjectionSource source, const char *name_field) {
        json_t *name = json_object_get(src, name_field), *opt = json_object_get(src, "optional");
        json_t *items = json_object_get(src, "items"), *it;
        size_t i;
        int r = 0;

        if (!json_is_string(name) || !*json_string_value(name))
                return pod_dec_fail(d, 0, name_field[0] == 'n' ? ".name" : ".secretName", "Required value");
        if (opt && !json_is_null(opt) && !json_is_boolean(opt))
                return pod_dec_fail(d, 0, ".optional", "Invalid type: expected bool, got %s", pod_json_type_name(opt));
        if (items && !json_is_null(items) && !json_is_array(items))
                return pod_dec_fail(d, 0, ".items", "Invalid type: expected array, got %s", pod_json_type_name(items));
        if (!json_is_array(items) || json_array_size(items) == 0) {
                /* every key of the ConfigMap or Secret, each a file of its name */
                PodDownwardFile f = { .source = source,
                                      .path = strdup(""),
                                      .ref_name = strdup(json_string_value(name)),
                                      .optional = json_is_true(opt) };

                if (!f.path || !f.ref_name) {
                        pod_downward_file_done(&f);
                        return cub_err_set(d->err, ENOMEM, "out of memory");
                }
                return append(d, v, &f);
        }
        json_array_foreach(items, i, it) {
                PodDownwardFile f = { .source = source, .optional = json_is_true(opt) };
                size_t o2 = pod_dec_push(d, ".items[%zu]", i);

                if (!json_is_object(it))
                        r = pod_dec_fail(d, 0, NULL, "Invalid type: expected object, got %s", pod_json_type_name(it));
                if (r == 0)
                        r = pod_dec_fields(d, it, &f, key_fields, NULL);
                if (r == 0 && !pod_config_key_valid(f.key))
                        r = pod_dec_fail(d, 0, ".key",
                                         "Invalid value: \"%s\": a valid config key must consist of alphanumeric "
                                         "characters, '-', '_' or '.'",
                                         f.key);
                if (r == 0)
                        r = pod_check_local_path(d, ".path", f.path);
                if (r == 0 && f.mode_set && (f.mode < 0 || f.mode > 0777))
                        r = pod_dec_fail(d, 0, ".mode",
                                         "Invalid value: %" PRId32 ": must be a number between 0 and 0777 "
                                         "(octal), both inclusive",
                                         f.mode);
                if (r == 0 && !(f.ref_name = strdup(json_string_value(name))))
                        r = cub_err_set(d->err, ENOMEM, "out of memory");
                pod_dec_pop(d, o2);
                if (r < 0) {
                        pod_downward_file_done(&f);
                        return r;
                }
                r = append(d, v, &f);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int key_source(PodDec *d, json_t *src, PodVolume *v, PodProjectionSource source, const char *field) {
        size_t old = pod_dec_push(d, ".%s", field);
        int r = pod_decode_key_items(d, src, v, source, "name");

        pod_dec_pop(d, old);
        return r;
}

int pod_decode_projection_api(PodDec *d, json_t *src, PodVolume *v) {
        json_t *tok = json_object_get(src, "serviceAccountToken"), *cm = json_object_get(src, "configMap");
        json_t *sec = json_object_get(src, "secret");
        int r = 0;

        if (!d->api)
                return 0; /* refused by the field table */
        if (tok && json_is_object(tok))
                r = token_source(d, tok, v);
        if (r == 0 && cm && json_is_object(cm))
                r = key_source(d, cm, v, POD_PROJECTION_CONFIG_MAP, "configMap");
        if (r == 0 && sec && json_is_object(sec))
                r = key_source(d, sec, v, POD_PROJECTION_SECRET, "secret");
        return r;
}

bool pod_has_api_projection(const Pod *pod) {
        for (size_t i = 0; i < pod->n_volumes; i++)
                for (size_t k = 0; k < pod->volumes[i].n_items; k++)
                        if (pod->volumes[i].items[k].source != POD_PROJECTION_DOWNWARD_API)
                                return true;
        return false;
}

bool pod_has_items(const Pod *pod) {
        for (size_t i = 0; i < pod->n_volumes; i++)
                if (pod->volumes[i].n_items > 0)
                        return true;
        return false;
}

bool pod_has_api_data(const Pod *pod) {
        if (pod_has_api_projection(pod) || pod->image_pull_secrets.n > 0)
                return true;
        for (size_t k = 0; k < pod->n_init_containers + pod->n_containers; k++)
                if (pod_container_has_api_env(pod_container_at(pod, k, NULL)))
                        return true;
        return false;
}
