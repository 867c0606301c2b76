/* SPDX-License-Identifier: Apache-2.0 */
/* Table-driven field decoding from a jansson tree into typed structs
 * (systemd's sd_json_dispatch idea). Every failure names the source, the
 * YAML line when known and the field path. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

const char *pod_json_type_name(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "object";
        case JSON_ARRAY:
                return "array";
        case JSON_STRING:
                return "string";
        case JSON_INTEGER:
        case JSON_REAL:
                return "number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "boolean";
        default:
                return "null";
        }
}

size_t pod_dec_push(PodDec *d, const char *fmt, ...) {
        size_t old = d->path_len;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(d->path + d->path_len, sizeof(d->path) - d->path_len, fmt, ap);
        va_end(ap);
        if (n > 0) {
                d->path_len += (size_t) n;
                if (d->path_len >= sizeof(d->path))
                        d->path_len = sizeof(d->path) - 1;
        }
        return old;
}

void pod_dec_pop(PodDec *d, size_t len) {
        d->path_len = len;
        d->path[len] = '\0';
}

int pod_dec_fail(PodDec *d, int line, const char *suffix, const char *fmt, ...) {
        char what[CUB_ERR_MSG_MAX];
        const char *path = d->path[0] == '.' ? d->path + 1 : d->path;
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        if (line <= 0)
                line = d->line;
        if (!suffix)
                suffix = "";
        if (*path == '\0' && *suffix == '.')
                suffix++;
        if (d->tree->yaml && line > 0)
                return cub_err_set(d->err, EINVAL, "%s:%d: %s%s: %s", d->tree->source, line, path, suffix, what);
        return cub_err_set(d->err, EINVAL, "%s: %s%s: %s", d->tree->source, path, suffix, what);
}

int pod_dec_field_line(PodDec *d, json_t *obj, const char *name) {
        json_t *v = obj ? json_object_get(obj, name) : NULL;
        int l = pod_tree_line(d->tree, v);
        return l > 0 ? l : d->line;
}

static int type_error(PodDec *d, json_t *v, const char *expected) {
        return pod_dec_fail(d, 0, NULL, "Invalid type: expected %s, got %s", expected, pod_json_type_name(v));
}

/* the index of v in f->allowed, or a failure naming the supported values */
static int allowed_index(PodDec *d, json_t *v, const PodField *f, size_t *ret) {
        char list[512] = "";
        size_t len = 0, i = 0;
        bool ok = false;

        for (const char *const *a = f->allowed; *a; a++, i++) {
                if (!ok && strcmp(*a, json_string_value(v)) == 0) {
                        ok = true;
                        *ret = i;
                }
                len += (size_t) snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s\"%s\"",
                                         a == f->allowed ? "" : ", ", *a);
                if (len >= sizeof(list))
                        len = sizeof(list) - 1;
        }
        if (!ok)
                return pod_dec_fail(d, 0, NULL, "Unsupported value: \"%s\": supported values: %s", json_string_value(v),
                                    list);
        return 0;
}

int pod_dec_string(PodDec *d, json_t *v, void *dst, const PodField *f) {
        char **s = dst;
        size_t i;
        int r;

        if (json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return type_error(d, v, "string");
        if (f->allowed && (r = allowed_index(d, v, f, &i)) < 0)
                return r;
        free(*s);
        *s = strdup(json_string_value(v));
        if (!*s)
                return cub_err_set(d->err, ENOMEM, "out of memory");
        return 0;
}

int pod_dec_enum(PodDec *d, json_t *v, void *dst, const PodField *f) {
        size_t i;
        int r;

        if (json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return type_error(d, v, "string");
        r = allowed_index(d, v, f, &i);
        if (r < 0)
                return r;
        *(int *) dst = f->values ? f->values[i] : (int) i;
        return 0;
}

int pod_dec_bool(PodDec *d, json_t *v, void *dst, const PodField *f) {
        (void) f;
        if (json_is_null(v))
                return 0;
        if (!json_is_boolean(v))
                return type_error(d, v, "boolean");
        *(bool *) dst = json_is_true(v);
        return 0;
}

int pod_dec_int64(PodDec *d, json_t *v, void *dst, const PodField *f) {
        (void) f;
        if (json_is_null(v))
                return 0;
        if (!json_is_integer(v))
                return type_error(d, v, "integer");
        *(int64_t *) dst = json_integer_value(v);
        return 0;
}

int pod_dec_int32(PodDec *d, json_t *v, void *dst, const PodField *f) {
        json_int_t i;

        (void) f;
        if (json_is_null(v))
                return 0;
        if (!json_is_integer(v))
                return type_error(d, v, "integer");
        i = json_integer_value(v);
        if (i < INT32_MIN || i > INT32_MAX)
                return pod_dec_fail(d, 0, NULL,
                                    "Invalid value: %" JSON_INTEGER_FORMAT ": out of range for a 32-bit integer", i);
        *(int32_t *) dst = (int32_t) i;
        return 0;
}

int pod_dec_strv(PodDec *d, json_t *v, void *dst, const PodField *f) {
        PodStrv *sv = dst;
        size_t i, n;
        json_t *e;

        (void) f;
        if (json_is_null(v))
                return 0;
        if (!json_is_array(v))
                return type_error(d, v, "array of strings");
        n = json_array_size(v);
        pod_strv_done(sv);
        sv->items = calloc(n + 1, sizeof(char *));
        if (!sv->items)
                return cub_err_set(d->err, ENOMEM, "out of memory");
        json_array_foreach(v, i, e) {
                if (!json_is_string(e)) {
                        size_t old = pod_dec_push(d, "[%zu]", i);
                        int saved = d->line, r, l = pod_tree_line(d->tree, e);

                        if (l > 0)
                                d->line = l;
                        r = type_error(d, e, "string");
                        d->line = saved;
                        pod_dec_pop(d, old);
                        return r;
                }
                sv->items[i] = strdup(json_string_value(e));
                if (!sv->items[i])
                        return cub_err_set(d->err, ENOMEM, "out of memory");
                sv->n = i + 1;
        }
        return 0;
}

int pod_dec_string_map(PodDec *d, json_t *v, void *dst, const PodField *f) {
        PodStringMap *m = dst;
        const char *k;
        json_t *e;
        size_t n;

        (void) f;
        if (json_is_null(v))
                return 0;
        if (!json_is_object(v))
                return type_error(d, v, "object of strings");
        pod_string_map_done(m);
        n = json_object_size(v);
        m->keys = calloc(n + 1, sizeof(char *));
        m->values = calloc(n + 1, sizeof(char *));
        if (!m->keys || !m->values)
                return cub_err_set(d->err, ENOMEM, "out of memory");
        json_object_foreach(v, k, e) {
                if (!json_is_string(e)) {
                        size_t old = pod_dec_push(d, "[%s]", k);
                        int saved = d->line, r, l = pod_tree_line(d->tree, e);

                        if (l > 0)
                                d->line = l;
                        r = type_error(d, e, "string");
                        d->line = saved;
                        pod_dec_pop(d, old);
                        return r;
                }
                m->keys[m->n] = strdup(k);
                m->values[m->n] = strdup(json_string_value(e));
                m->n++;
                if (!m->keys[m->n - 1] || !m->values[m->n - 1])
                        return cub_err_set(d->err, ENOMEM, "out of memory");
        }
        return 0;
}

/* Text of a number or string quantity value; false for other types. */
static bool json_quantity_text(const json_t *v, char *buf, size_t size) {
        if (json_is_string(v)) {
                (void) snprintf(buf, size, "%s", json_string_value(v));
                return true;
        }
        if (json_is_integer(v)) {
                (void) snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                return true;
        }
        if (json_is_real(v)) {
                double x = json_real_value(v);

                /* the shortest text that reads back as the same double */
                for (int prec = 1; prec <= 17; prec++) {
                        (void) snprintf(buf, size, "%.*g", prec, x);
                        if (strtod(buf, NULL) == x)
                                break;
                }
                /* "1e+06" → "1e6": the quantity grammar takes e<signed int> */
                return true;
        }
        return false;
}

int pod_dec_resources(PodDec *d, json_t *v, void *dst, const PodField *f) {
        PodResourceList *l = dst;
        const char *k;
        json_t *e;
        size_t n;

        (void) f;
        if (json_is_null(v))
                return 0;
        if (!json_is_object(v))
                return type_error(d, v, "object of quantities");
        pod_resource_list_done(l);
        n = json_object_size(v);
        l->items = calloc(n + 1, sizeof(PodResource));
        if (!l->items)
                return cub_err_set(d->err, ENOMEM, "out of memory");
        json_object_foreach(v, k, e) {
                char text[128];
                size_t old = pod_dec_push(d, "[%s]", k);
                int saved = d->line, r = 0, line = pod_tree_line(d->tree, e);
                CubError qerr = {};

                if (line > 0)
                        d->line = line;
                if (!json_quantity_text(e, text, sizeof(text)))
                        r = type_error(d, e, "quantity (string or number)");
                else if (cub_quantity_parse(text, &l->items[l->n].q, &qerr) < 0)
                        r = pod_dec_fail(d, 0, NULL, "%s", qerr.msg);
                d->line = saved;
                pod_dec_pop(d, old);
                if (r < 0)
                        return r;
                l->items[l->n].name = strdup(k);
                if (!l->items[l->n].name)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
                l->n++;
        }
        return 0;
}

int pod_dec_inline(PodDec *d, json_t *v, void *dst, const PodField *f) {
        if (json_is_null(v))
                return 0;
        if (!json_is_object(v))
                return type_error(d, v, "object");
        if (f->set_offset)
                *(bool *) ((char *) dst - f->offset + f->set_offset) = true;
        /* inline: the sub-table's offsets are relative to the parent struct */
        return pod_dec_fields(d, v, (char *) dst - f->offset, f->sub, f->post);
}

int pod_dec_object(PodDec *d, json_t *v, void *dst, const PodField *f) {
        if (json_is_null(v))
                return 0;
        if (!json_is_object(v))
                return type_error(d, v, "object");
        return pod_dec_fields(d, v, dst, f->sub, f->post);
}

int pod_dec_object_array(PodDec *d, json_t *v, void *dst, const PodField *f) {
        void **items = dst;
        size_t *count;
        size_t i, n;
        json_t *e;
        char *base;

        if (json_is_null(v))
                return 0;
        if (!json_is_array(v))
                return type_error(d, v, "array");
        count = (size_t *) ((char *) dst - f->offset + f->count_offset);
        n = json_array_size(v);
        base = calloc(n + 1, f->elem_size);
        if (!base)
                return cub_err_set(d->err, ENOMEM, "out of memory");
        *items = base;
        *count = 0;
        json_array_foreach(v, i, e) {
                size_t old = pod_dec_push(d, "[%zu]", i);
                int saved = d->line, r, line = pod_tree_line(d->tree, e);

                if (line > 0)
                        d->line = line;
                *count = i + 1;
                if (!json_is_object(e))
                        r = type_error(d, e, "object");
                else
                        r = pod_dec_fields(d, e, base + i * f->elem_size, f->sub, f->post);
                d->line = saved;
                pod_dec_pop(d, old);
                if (r < 0)
                        return r;
        }
        return 0;
}

void pod_field_string_done(void *dst) {
        free(*(char **) dst);
        *(char **) dst = NULL;
}

void pod_field_strv_done(void *dst) {
        pod_strv_done(dst);
}

void pod_fields_done(const PodField *fields, void *base) {
        for (const PodField *f = fields; f->name; f++) {
                void *dst = (char *) base + f->offset;

                if (f->done)
                        f->done(dst);
                else if (f->decode == pod_dec_string) {
                        free(*(char **) dst);
                        *(char **) dst = NULL;
                } else if (f->decode == pod_dec_strv)
                        pod_strv_done(dst);
                else if (f->decode == pod_dec_string_map)
                        pod_string_map_done(dst);
                else if (f->decode == pod_dec_resources)
                        pod_resource_list_done(dst);
                else if (f->decode == pod_dec_inline)
                        pod_fields_done(f->sub, base);
                else if (f->decode == pod_dec_object)
                        pod_fields_done(f->sub, dst);
                else if (f->decode == pod_dec_object_array) {
                        char *items = *(char **) dst;
                        size_t *n = (size_t *) ((char *) base + f->count_offset);

                        for (size_t i = 0; items && i < *n; i++)
                                pod_fields_done(f->sub, items + i * f->elem_size);
                        free(items);
                        *(char **) dst = NULL;
                        *n = 0;
                }
        }
}

int pod_dec_fields(PodDec *d, json_t *obj, void *base, const PodField *fields, PodPostFn post) {
        int saved = d->line, r = 0, line = pod_tree_line(d->tree, obj);

        if (line > 0)
                d->line = line;
        for (const PodField *f = fields; f && f->name; f++) {
                json_t *v = json_object_get(obj, f->name);
                size_t old;
                int vline;

                if (!v || json_is_null(v)) {
                        if (f->flags & POD_FIELD_REQUIRED) {
                                old = pod_dec_push(d, ".%s", f->name);
                                r = pod_dec_fail(d, 0, NULL, "Required value");
                                pod_dec_pop(d, old);
                                goto out;
                        }
                        continue;
                }
                old = pod_dec_push(d, ".%s", f->name);
                vline = pod_tree_line(d->tree, v);
                if (vline > 0)
                        d->line = vline;
                if (f->set_offset && f->decode != pod_dec_inline)
                        *(bool *) ((char *) base + f->set_offset) = true;
                r = f->decode(d, v, (char *) base + f->offset, f);
                d->line = line > 0 ? line : saved;
                pod_dec_pop(d, old);
                if (r < 0)
                        goto out;
        }
        if (post)
                r = post(d, obj, base);
out:
        d->line = saved;
        return r;
}

/* ---- destructors of the generic containers --------------------------------- */

void pod_strv_done(PodStrv *v) {
        for (size_t i = 0; v->items && i < v->n; i++)
                free(v->items[i]);
        free(v->items);
        *v = (PodStrv){};
}

void pod_string_map_done(PodStringMap *m) {
        for (size_t i = 0; i < m->n; i++) {
                free(m->keys[i]);
                free(m->values[i]);
        }
        free(m->keys);
        free(m->values);
        *m = (PodStringMap){};
}
