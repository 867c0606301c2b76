/* SPDX-License-Identifier: Apache-2.0 */
/* The walker of the field table (fields-table.c): every field a manifest
 * sets is looked up; refused and unknown fields go to pod->refused, ignored
 * ones to pod->warnings, each with its path and YAML line. No silent drops. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

#define UNKNOWN_FIELD "unknown field"

static const char *const class_table[_POD_FIELD_CLASS_MAX] = {
        [POD_FIELD_IMPLEMENTED] = "implemented",
        [POD_FIELD_WARN] = "warn",
        [POD_FIELD_REFUSE] = "refuse",
};

const char *pod_field_class_to_string(PodFieldClass c) {
        return c >= 0 && c < _POD_FIELD_CLASS_MAX ? class_table[c] : NULL;
}

static const char *default_what(PodFieldClass c) {
        return c == POD_FIELD_WARN ? "ignored by cubelet" : "not supported by cubelet";
}

/* ---- notes ----------------------------------------------------------------- */

void pod_field_notes_done(PodFieldNotes *n) {
        for (size_t i = 0; i < n->n; i++)
                free(n->items[i].path);
        free(n->items);
        *n = (PodFieldNotes){};
}

static int notes_add(PodFieldNotes *n, const char *path, const char *what, int line) {
        PodFieldNote *items = realloc(n->items, (n->n + 1) * sizeof(PodFieldNote));

        if (!items)
                return -ENOMEM;
        n->items = items;
        items[n->n] = (PodFieldNote){ .path = strdup(path), .what = what, .line = line };
        if (!items[n->n].path)
                return -ENOMEM;
        n->n++;
        return 0;
}

char *pod_field_note_format(const PodFieldNote *note, const char *source) {
        char *s = NULL;
        int r;

        if (!source)
                r = asprintf(&s, "%s: %s", note->path, note->what);
        else if (note->line > 0)
                r = asprintf(&s, "%s:%d: %s: %s", source, note->line, note->path, note->what);
        else
                r = asprintf(&s, "%s: %s: %s", source, note->path, note->what);
        return r < 0 ? NULL : s;
}

char *pod_field_notes_join(const PodFieldNotes *n, const char *source) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < n->n; i++) {
                const PodFieldNote *e = &n->items[i];

                if (i > 0)
                        fputs("; ", f);
                else if (source && e->line > 0)
                        fprintf(f, "%s:%d: ", source, e->line);
                else if (source)
                        fprintf(f, "%s: ", source);
                fprintf(f, "%s: %s", e->path, e->what);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* ---- the walker ---------------------------------------------------------------- */

typedef struct Walk {
        PodDec d; /* path and lines */
        Pod *pod;
        bool api;
} Walk;

/* null, "" and [] say nothing; {} does (emptyDir: {} is a volume). */
static bool is_absent(const json_t *v) {
        return json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0) ||
               (json_is_array(v) && json_array_size(v) == 0);
}

static bool is_inert(const PodFieldRule *r, const json_t *v) {
        char text[64];

        if (!r->inert)
                return false;
        if (json_is_string(v))
                (void) snprintf(text, sizeof(text), "%s", json_string_value(v));
        else if (json_is_boolean(v))
                (void) snprintf(text, sizeof(text), "%s", json_is_true(v) ? "true" : "false");
        else if (json_is_integer(v))
                (void) snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        else
                return false;
        for (const char *const *i = r->inert; *i; i++)
                if (strcmp(*i, text) == 0)
                        return true;
        return false;
}

static const PodFieldRule *rule_find(const PodFieldRule *rules, const char *name) {
        for (const PodFieldRule *r = rules; r && r->name; r++)
                if (strcmp(r->name, name) == 0)
                        return r;
        return NULL;
}

/* obj/key: where the field is named (its line); an element of a list is
 * named by its own line */
static int note(Walk *w, PodFieldNotes *n, const char *what, const json_t *obj, const char *key, const json_t *v) {
        int line = key ? pod_tree_key_line(w->d.tree, obj, key) : 0;

        if (line <= 0)
                line = pod_tree_line(w->d.tree, v);
        const char *path = w->d.path[0] == '.' ? w->d.path + 1 : w->d.path;

        if (notes_add(n, path, what, line > 0 ? line : w->d.line) < 0)
                return cub_err_set(w->d.err, ENOMEM, "out of memory");
        return 0;
}

static int walk_object(Walk *w, json_t *obj, const PodFieldRule *rules);

/* a list's elements, each an object of the rules sub */
static int walk_list(Walk *w, json_t *obj, const char *key, json_t *v, const PodFieldRule *sub) {
        size_t i;
        json_t *e;
        int r2;

        if (!json_is_array(v))
                return note(w, &w->pod->refused, "Invalid type: expected array", obj, key, v);
        json_array_foreach(v, i, e) {
                size_t old = pod_dec_push(&w->d, "[%zu]", i);

                r2 = json_is_object(e) ? walk_object(w, e, sub)
                                       : note(w, &w->pod->refused, "Invalid type: expected object", NULL, NULL, e);
                pod_dec_pop(&w->d, old);
                if (r2 < 0)
                        return r2;
        }
        return 0;
}

static int walk_value(Walk *w, json_t *obj, const char *key, json_t *v, const PodFieldRule *r) {

        if (is_absent(v) || is_inert(r, v))
                return 0;
        /* what a pod of the API server may have: an object, or a list of them (imagePullSecrets) */
        if (w->api && r->api_sub && json_is_array(v))
                return walk_list(w, obj, key, v, r->api_sub);
        if (w->api && r->api_sub) {
                if (!json_is_object(v))
                        return note(w, &w->pod->refused, "Invalid type: expected object", obj, key, v);
                return walk_object(w, v, r->api_sub);
        }
        switch (r->cls) {
        case POD_FIELD_REFUSE:
                return note(w, &w->pod->refused, r->what ? r->what : default_what(r->cls), obj, key, v);
        case POD_FIELD_WARN:
                return note(w, &w->pod->warnings, r->what ? r->what : default_what(r->cls), obj, key, v);
        default:
                break;
        }
        if (r->shape == POD_SHAPE_OBJECT) {
                /* a wrong type of a field the decoder reads is its error,
                 * found before; of one it does not read, it is refused here */
                if (!json_is_object(v))
                        return note(w, &w->pod->refused, "Invalid type: expected object", obj, key, v);
                return walk_object(w, v, r->sub);
        }
        if (r->shape == POD_SHAPE_LIST)
                return walk_list(w, obj, key, v, r->sub);
        return 0;
}

static int walk_object(Walk *w, json_t *obj, const PodFieldRule *rules) {
        int saved = w->d.line, line = pod_tree_line(w->d.tree, obj), r = 0;
        const char *key;
        json_t *v;

        if (line > 0)
                w->d.line = line;
        json_object_foreach(obj, key, v) {
                const PodFieldRule *rule = rule_find(rules, key);
                size_t old = pod_dec_push(&w->d, ".%s", key);

                if (!rule)
                        r = note(w, &w->pod->refused, UNKNOWN_FIELD, obj, key, v);
                else
                        r = walk_value(w, obj, key, v, rule);
                pod_dec_pop(&w->d, old);
                if (r < 0)
                        break;
        }
        w->d.line = saved;
        return r;
}

int pod_fields_check(const PodTree *t, json_t *root, const char *prefix, bool api, Pod *pod, CubError *err) {
        Walk w = { .d = { .tree = t, .err = err }, .pod = pod, .api = api };
        int r;

        pod_field_notes_done(&pod->refused);
        pod_field_notes_done(&pod->warnings);
        if (!json_is_object(root))
                return 0;
        /* a PodList item: its paths start with "items[i]" */
        if (prefix)
                w.d.path_len = (size_t) snprintf(w.d.path, sizeof(w.d.path), "%s", prefix);
        r = walk_object(&w, root, pod_field_table);
        return r < 0 ? r : pod_resize_policy_decode(t, root, prefix, pod, err);
}

/* ---- the table, for the README and the tests ------------------------------------- */

typedef struct Visit {
        PodFieldVisitFn fn;
        void *userdata;
        const PodFieldRule *seen[64];
        size_t n_seen;
} Visit;

static void visit(Visit *v, const PodFieldRule *rules, char *path, size_t len, size_t size) {
        for (const PodFieldRule *r = rules; r->name; r++) {
                bool descend = r->sub != NULL;
                const char *what;
                int n = snprintf(path + len, size - len, "%s%s%s", len ? "." : "", r->name,
                                 r->shape == POD_SHAPE_LIST ? "[]" : "");

                if (n < 0 || (size_t) n >= size - len)
                        continue;
                what = r->what ? r->what : r->cls == POD_FIELD_IMPLEMENTED ? "" : default_what(r->cls);
                v->fn(path, r->cls, what, r->inert, v->userdata);
                for (size_t i = 0; descend && i < v->n_seen; i++)
                        if (v->seen[i] == r->sub)
                                descend = false;
                if (descend && v->n_seen < sizeof(v->seen) / sizeof(v->seen[0])) {
                        v->seen[v->n_seen++] = r->sub;
                        visit(v, r->sub, path, len + (size_t) n, size);
                }
                path[len] = '\0';
        }
}

void pod_field_table_visit(PodFieldVisitFn fn, void *userdata) {
        Visit v = { .fn = fn, .userdata = userdata };
        char path[512] = "";

        visit(&v, pod_field_table, path, 0, sizeof(path));
}
