/* SPDX-License-Identifier: Apache-2.0 */
/* env sources: the decoding of env[].valueFrom (fieldRef, resourceFieldRef)
 * with the API server's validation (ValidateEnv: validateEnvVarValueFrom,
 * validateObjectFieldSelector, validateContainerResourceFieldSelector and
 * validateContainerResourceDivisor, their messages); configMapKeyRef,
 * secretKeyRef and envFrom, which only pods of the API server have (the
 * field table refuses them in a static pod). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "pod-internal.h"

/* the labels podshelper.ConvertDownwardAPIFieldLabel converts (v1) */
static const char *const convertible_paths[] = {
        "metadata.annotations",
        "metadata.labels",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.schedulerName",
        "status.phase",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
        NULL,
};
static const char *const resource_paths[] = {
        "limits.cpu",   "limits.ephemeral-storage",   "limits.memory",
        "requests.cpu", "requests.ephemeral-storage", "requests.memory",
        NULL,
};
static const char *const memory_divisors[] = {
        "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei", NULL,
};

static bool in_list(const char *const *l, const char *s, size_t n) {
        for (; *l; l++)
                if (strlen(*l) == n && strncmp(*l, s, n) == 0)
                        return true;
        return false;
}

static bool env_field_known(const char *s, size_t n) {
        const char *a;

        for (size_t i = 0; (a = pod_env_field_path(i)); i++)
                if (strlen(a) == n && strncmp(a, s, n) == 0)
                        return true;
        return false;
}

static int dec_divisor(PodDec *d, json_t *v, void *dst, const PodField *f) {
        char **text = dst, buf[64];

        (void) f;
        if (json_is_null(v))
                return 0;
        if (json_is_string(v))
                (void) snprintf(buf, sizeof(buf), "%s", json_string_value(v));
        else if (json_is_integer(v))
                (void) snprintf(buf, sizeof(buf), "%lld", (long long) json_integer_value(v));
        else
                return pod_dec_fail(d, 0, NULL, "Invalid type: expected quantity (string or number), got %s",
                                    pod_json_type_name(v));
        free(*text);
        *text = strdup(buf);
        return *text ? 0 : cub_err_set(d->err, ENOMEM, "out of memory");
}

static const PodField field_ref_fields[] = {
        POD_STR("apiVersion", PodEnvVar, field_api_version),
        POD_STR("fieldPath", PodEnvVar, field_path),
        {},
};

static const PodField key_ref_fields[] = {
        POD_STR("name", PodEnvVar, ref_name),
        POD_STR("key", PodEnvVar, ref_key),
        { .name = "optional", .decode = pod_dec_bool, .offset = offsetof(PodEnvVar, ref_optional) },
        {},
};

static const PodField resource_ref_fields[] = {
        POD_STR("containerName", PodEnvVar, resource_container),
        POD_STR("resource", PodEnvVar, resource),
        { .name = "divisor",
          .decode = dec_divisor,
          .offset = offsetof(PodEnvVar, divisor_text),
          .done = pod_field_string_done },
        {},
};

const PodField pod_env_source_fields[] = {
        { .name = "fieldRef",
          .decode = pod_dec_inline,
          .sub = field_ref_fields,
          .set_offset = offsetof(PodEnvVar, field_ref_set) },
        { .name = "resourceFieldRef",
          .decode = pod_dec_inline,
          .sub = resource_ref_fields,
          .set_offset = offsetof(PodEnvVar, resource_ref_set) },
        /* pods of the API server; the field table refuses them in a static pod */
        { .name = "configMapKeyRef",
          .decode = pod_dec_inline,
          .sub = key_ref_fields,
          .set_offset = offsetof(PodEnvVar, config_map_ref_set) },
        { .name = "secretKeyRef",
          .decode = pod_dec_inline,
          .sub = key_ref_fields,
          .set_offset = offsetof(PodEnvVar, secret_ref_set) },
        {},
};

/* valueFrom: a value of the wrong type is left to the field walker, which
 * names it with the other notes */
int pod_env_dec_value_from(PodDec *d, json_t *v, void *dst, const PodField *f) {
        if (!json_is_object(v))
                return 0;
        return pod_dec_inline(d, v, dst, f);
}

static int check_field_ref(PodDec *d, json_t *vf, PodEnvVar *e) {
        json_t *fr = json_object_get(vf, "fieldRef");
        const char *p;
        size_t prefix, n;
        int line = pod_dec_field_line(d, fr, "fieldPath");

        if (!e->field_api_version) {
                e->field_api_version = strdup("v1"); /* the API's defaulting */
                if (!e->field_api_version)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
        }
        if (!*e->field_api_version)
                return pod_dec_fail(d, line, ".valueFrom.fieldRef.apiVersion", "Required value");
        if (!e->field_path || !*e->field_path)
                return pod_dec_fail(d, line, ".valueFrom.fieldRef.fieldPath", "Required value");
        p = e->field_path;
        if (strcmp(e->field_api_version, "v1") != 0)
                return pod_dec_fail(d, line, ".valueFrom.fieldRef.fieldPath",
                                    "Invalid value: \"%s\": error converting fieldPath: unsupported pod version: %s", p,
                                    e->field_api_version);
        n = strlen(p);
        /* SplitMaybeSubscriptedPath */
        if (n > 2 && strcmp(p + n - 2, "']") == 0 && strstr(p, "['") && strstr(p, "['") != p) {
                const char *key = strstr(p, "['") + 2;

                prefix = (size_t) (key - 2 - p);
                if (!((prefix == 15 && strncmp(p, "metadata.labels", 15) == 0) ||
                      (prefix == 20 && strncmp(p, "metadata.annotations", 20) == 0)))
                        return pod_dec_fail(d, line, ".valueFrom.fieldRef.fieldPath",
                                            "Invalid value: \"%s\": error converting fieldPath: field label does not "
                                            "support subscript: %s",
                                            p, p);
                if (key >= p + n - 2)
                        return pod_dec_fail(d, line, ".valueFrom.fieldRef",
                                            "Invalid value: \"\": name part must be non-empty");
                return 0;
        }
        if (!in_list(convertible_paths, p, n))
                return pod_dec_fail(d, line, ".valueFrom.fieldRef.fieldPath",
                                    "Invalid value: \"%s\": error converting fieldPath: field label not supported: %s",
                                    p, p);
        if (!env_field_known(p, n)) {
                char list[512] = "";
                size_t len = 0;
                const char *a;

                /* (env.c's table: the paths it has a value for) */
                for (size_t i = 0; (a = pod_env_field_path(i)); i++)
                        len += (size_t) snprintf(list + len, sizeof(list) - len, "%s\"%s\"", i ? ", " : "", a);
                return pod_dec_fail(d, line, ".valueFrom.fieldRef.fieldPath",
                                    "Unsupported value: \"%s\": supported values: %s", p, list);
        }
        return 0;
}

static int check_resource_ref(PodDec *d, json_t *vf, PodEnvVar *e) {
        json_t *rr = json_object_get(vf, "resourceFieldRef");
        int line = pod_dec_field_line(d, rr, "resource");
        const char *r = e->resource;
        bool cpu, storage;
        CubError qerr = {};

        if (!r || !*r)
                return pod_dec_fail(d, line, ".valueFrom.resourceFieldRef.resource", "Required value");
        if (!in_list(resource_paths, r, strlen(r))) {
                char list[512] = "";
                size_t len = 0;

                for (const char *const *a = resource_paths; *a; a++)
                        len += (size_t) snprintf(list + len, sizeof(list) - len, "%s\"%s\"",
                                                 a == resource_paths ? "" : ", ", *a);
                return pod_dec_fail(d, line, ".valueFrom.resourceFieldRef.resource",
                                    "Unsupported value: \"%s\": supported values: %s", r, list);
        }
        if (!e->divisor_text)
                return 0;
        line = pod_dec_field_line(d, rr, "divisor");
        if (cub_quantity_parse(e->divisor_text, &e->divisor, &qerr) < 0)
                return pod_dec_fail(d, line, ".valueFrom.resourceFieldRef.divisor", "%s", qerr.msg);
        if (cub_quantity_is_zero(e->divisor))
                return 0;
        cpu = strstr(r, ".cpu") != NULL;
        storage = strstr(r, "ephemeral-storage") != NULL;
        if (cpu) {
                int64_t m = cub_quantity_milli(e->divisor);

                if (m != 1 && m != 1000)
                        return pod_dec_fail(d, line, ".valueFrom.resourceFieldRef.divisor",
                                            "Invalid value: \"%s\": only divisor's values 1m and 1 are supported with "
                                            "the cpu resource",
                                            r);
        } else if (!in_list(memory_divisors, e->divisor_text, strlen(e->divisor_text)))
                return pod_dec_fail(d, line, ".valueFrom.resourceFieldRef.divisor",
                                    "Invalid value: \"%s\": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, "
                                    "1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the %s resource",
                                    r, storage ? "local ephemeral storage" : "memory");
        return 0;
}

/* ConfigMapKeySelector / SecretKeySelector: a name and a key (IsConfigMapKey) */
static int check_key_ref(PodDec *d, json_t *vf, PodEnvVar *e) {
        const char *sel = e->kind == POD_ENV_CONFIG_MAP_KEY ? ".valueFrom.configMapKeyRef" : ".valueFrom.secretKeyRef";
        json_t *ref = json_object_get(vf, sel + strlen(".valueFrom."));
        char path[64];

        if (!e->ref_name || !*e->ref_name) {
                (void) snprintf(path, sizeof(path), "%s.name", sel);
                return pod_dec_fail(d, pod_dec_field_line(d, ref, "name"), path, "Required value");
        }
        (void) snprintf(path, sizeof(path), "%s.key", sel);
        if (!e->ref_key || !*e->ref_key)
                return pod_dec_fail(d, pod_dec_field_line(d, ref, "key"), path, "Required value");
        if (!pod_config_key_valid(e->ref_key))
                return pod_dec_fail(d, pod_dec_field_line(d, ref, "key"), path,
                                    "Invalid value: \"%s\": a valid config key must consist of alphanumeric "
                                    "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
                                    "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                                    e->ref_key);
        return 0;
}

bool pod_config_key_valid(const char *k) {
        size_t n = strlen(k);

        if (n == 0 || n > 253 || strcmp(k, ".") == 0 || strcmp(k, "..") == 0 || strncmp(k, "..", 2) == 0)
                return false;
        for (; *k; k++)
                if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') || *k == '-' ||
                      *k == '_' || *k == '.'))
                        return false;
        return true;
}

int pod_env_var_post(PodDec *d, json_t *obj, PodEnvVar *e) {
        json_t *vf = json_object_get(obj, "valueFrom");
        int n_sources = 0;

        if (!vf || json_is_null(vf))
                return 0;
        if (!json_is_object(vf))
                return 0; /* the decoder said so already */
        n_sources = e->field_ref_set + e->resource_ref_set + e->config_map_ref_set + e->secret_ref_set;
        if (e->value && *e->value)
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "valueFrom"), ".valueFrom",
                                    "Invalid value: \"\": may not be specified when `value` is not empty");
        if (n_sources == 0)
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "valueFrom"), ".valueFrom",
                                    "Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, "
                                    "`configMapKeyRef` or `secretKeyRef`");
        if (n_sources > 1)
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "valueFrom"), ".valueFrom",
                                    "Invalid value: \"\": may not have more than one field specified at a time");
        if (e->field_ref_set) {
                e->kind = POD_ENV_FIELD_REF;
                return check_field_ref(d, vf, e);
        }
        if (e->resource_ref_set) {
                e->kind = POD_ENV_RESOURCE_FIELD;
                return check_resource_ref(d, vf, e);
        }
        e->kind = e->config_map_ref_set ? POD_ENV_CONFIG_MAP_KEY : POD_ENV_SECRET_KEY;
        return check_key_ref(d, vf, e);
}

/* envFrom[]: validateEnvFrom (one source, a name; a prefix of an env var name's characters) */
static const PodField env_from_ref_fields[] = {
        POD_STR("name", PodEnvFrom, name),
        { .name = "optional", .decode = pod_dec_bool, .offset = offsetof(PodEnvFrom, optional) },
        {},
};

const PodField pod_env_from_fields[] = {
        POD_STR("prefix", PodEnvFrom, prefix),
        { .name = "configMapRef",
          .decode = pod_dec_inline,
          .sub = env_from_ref_fields,
          .set_offset = offsetof(PodEnvFrom, config_map_set) },
        { .name = "secretRef",
          .decode = pod_dec_inline,
          .sub = env_from_ref_fields,
          .set_offset = offsetof(PodEnvFrom, secret_set) },
        {},
};

int pod_env_from_post(PodDec *d, json_t *obj, void *base) {
        PodEnvFrom *e = base;
        int line = pod_dec_field_line(d, obj, e->secret_set ? "secretRef" : "configMapRef");

        if (!e->prefix && !(e->prefix = strdup("")))
                return cub_err_set(d->err, ENOMEM, "out of memory");
        if (e->config_map_set + e->secret_set == 0)
                return pod_dec_fail(d, line, NULL,
                                    "Invalid value: \"\": must specify one of: `configMapRef` or "
                                    "`secretRef`");
        if (e->config_map_set + e->secret_set > 1)
                return pod_dec_fail(d, line, NULL,
                                    "Invalid value: \"\": may not have more than one field specified at a time");
        e->secret = e->secret_set;
        if (!e->name || !*e->name)
                return pod_dec_fail(d, line, e->secret ? ".secretRef.name" : ".configMapRef.name", "Required value");
        if (*e->prefix && !pod_env_name_valid(e->prefix))
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "prefix"), ".prefix",
                                    "Invalid value: \"%s\": a valid environment variable name must consist "
                                    "only of printable ASCII characters other than '='",
                                    e->prefix);
        return 0;
}

void pod_env_value_from_done(void *e) {
        pod_fields_done(pod_env_source_fields, e);
}
