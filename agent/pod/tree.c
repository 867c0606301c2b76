/* SPDX-License-Identifier: Apache-2.0 */
/* Manifest text → jansson tree. JSON through jansson itself; YAML through
 * libyaml's event parser, with kubelet's YAML 1.1 scalar resolution (its
 * booleans and octal integers) and a side table of source lines for error
 * messages. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "pod-internal.h"

#define TREE_MAX_DEPTH 64
#define TREE_MAX_NODES 1000000

static int tree_note_line(PodTree *t, const json_t *node, int line) {
        if (t->n_lines == t->cap_lines) {
                size_t ncap = t->cap_lines ? t->cap_lines * 2 : 64;
                PodTreeLine *n = realloc(t->lines, ncap * sizeof(*n));

                if (!n)
                        return -ENOMEM;
                t->lines = n;
                t->cap_lines = ncap;
        }
        t->lines[t->n_lines++] = (PodTreeLine){ .node = node, .line = line };
        return 0;
}

static int tree_note_key_line(PodTree *t, const json_t *obj, const char *key, int line) {
        if (t->n_key_lines == t->cap_key_lines) {
                size_t ncap = t->cap_key_lines ? t->cap_key_lines * 2 : 64;
                PodTreeKeyLine *n = realloc(t->key_lines, ncap * sizeof(*n));

                if (!n)
                        return -ENOMEM;
                t->key_lines = n;
                t->cap_key_lines = ncap;
        }
        t->key_lines[t->n_key_lines] = (PodTreeKeyLine){ .obj = obj, .key = strdup(key), .line = line };
        if (!t->key_lines[t->n_key_lines].key)
                return -ENOMEM;
        t->n_key_lines++;
        return 0;
}

static int key_line_cmp(const void *a, const void *b) {
        const PodTreeKeyLine *x = a, *y = b;
        uintptr_t ox = (uintptr_t) x->obj, oy = (uintptr_t) y->obj;

        if (ox != oy)
                return ox < oy ? -1 : 1;
        return strcmp(x->key, y->key);
}

int pod_tree_key_line(const PodTree *t, const json_t *obj, const char *key) {
        PodTreeKeyLine k = { .obj = obj, .key = (char *) key };
        const PodTreeKeyLine *hit;

        if (!t || !obj || !key || t->n_key_lines == 0)
                return 0;
        hit = bsearch(&k, t->key_lines, t->n_key_lines, sizeof(PodTreeKeyLine), key_line_cmp);
        return hit ? hit->line : 0;
}

static int line_cmp(const void *a, const void *b) {
        uintptr_t x = (uintptr_t) ((const PodTreeLine *) a)->node, y = (uintptr_t) ((const PodTreeLine *) b)->node;

        return x < y ? -1 : x > y;
}

int pod_tree_line(const PodTree *t, const json_t *node) {
        PodTreeLine key = { .node = node };
        const PodTreeLine *hit;

        if (!t || !node || t->n_lines == 0)
                return 0;
        hit = bsearch(&key, t->lines, t->n_lines, sizeof(PodTreeLine), line_cmp);
        return hit ? hit->line : 0;
}

void pod_tree_done(PodTree *t) {
        if (!t)
                return;
        json_decref(t->root);
        free(t->lines);
        for (size_t i = 0; i < t->n_key_lines; i++)
                free(t->key_lines[i].key);
        free(t->key_lines);
        *t = (PodTree){};
}

/* ---- YAML --------------------------------------------------------------- */

typedef struct Anchor {
        char *name;
        json_t *node;
        size_t size;
} Anchor;

typedef struct YamlLoader {
        yaml_parser_t parser;
        PodTree *tree;
        Anchor *anchors;
        size_t n_anchors;
        size_t nodes;
        CubError *err;
} YamlLoader;

static bool match_all(const char *s, const char *set) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!strchr(set, *s))
                        return false;
        return true;
}

static bool is_yaml_float(const char *s) {
        const char *p = s;
        bool digits = false;

        if (*p == '+' || *p == '-')
                p++;
        while (*p >= '0' && *p <= '9')
                p++, digits = true;
        if (*p == '.') {
                p++;
                while (*p >= '0' && *p <= '9')
                        p++, digits = true;
        }
        if (!digits)
                return false;
        if (*p == 'e' || *p == 'E') {
                p++;
                if (*p == '+' || *p == '-')
                        p++;
                if (!(*p >= '0' && *p <= '9'))
                        return false;
                while (*p >= '0' && *p <= '9')
                        p++;
        }
        return *p == '\0';
}

/* s, all of it, as a long long in base; false when it is not one or too big */
static bool parse_ll(const char *s, int base, long long *ret) {
        char *end;

        errno = 0;
        *ret = strtoll(s, &end, base);
        return errno == 0 && *end == '\0';
}

/* kubelet's YAML 1.1 booleans (go-yaml v2's resolve table, which
 * utilyaml.ToJSON hands on as JSON booleans): 1 true, 0 false, -1 neither */
static int yaml11_bool(const char *s) {
        static const char *const trues[] = { "true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON" };
        static const char *const falses[] = {
                "false", "False", "FALSE", "n", "N", "no", "No", "NO", "off", "Off", "OFF"
        };

        for (size_t i = 0; i < ELEMENTSOF(trues); i++)
                if (strcmp(s, trues[i]) == 0)
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(falses); i++)
                if (strcmp(s, falses[i]) == 0)
                        return 0;
        return -1;
}

/* Plain scalars as kubelet's reader (go-yaml v2, YAML 1.1) resolves them:
 * its booleans (`yes`, `on`, `y`, ...), nulls, octal integers with a
 * leading 0 (below), and the YAML 1.2 core schema's forms beside. */
static json_t *resolve_plain(const char *s) {
        static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
        int b = yaml11_bool(s);

        for (size_t i = 0; i < ELEMENTSOF(nulls); i++)
                if (strcmp(s, nulls[i]) == 0)
                        return json_null();
        if (b >= 0)
                return json_boolean(b);
        {
                const char *p = s + (*s == '-' || *s == '+');
                /* A leading 0 is octal, as kubelet's YAML 1.1 reader (go-yaml v2,
                 * strconv.ParseInt base 0) has it: `defaultMode: 0440` is 288;
                 * an octal value too big for int64 is read as decimal */
                long long v;

                if (p[0] == '0' && p[1] != '\0' && match_all(p + 1, "01234567") && parse_ll(s, 8, &v))
                        return json_integer(v);
                if (match_all(p, "0123456789"))
                        return parse_ll(s, 10, &v) ? json_integer(v) : json_real(strtod(s, NULL));
        }
        if ((strncmp(s, "0x", 2) == 0 && match_all(s + 2, "0123456789abcdefABCDEF")) ||
            (strncmp(s, "0o", 2) == 0 && match_all(s + 2, "01234567"))) {
                char *end;
                unsigned long long v;

                errno = 0;
                v = strtoull(s + 2, &end, s[1] == 'x' ? 16 : 8);
                if (errno == 0 && *end == '\0' && v <= (unsigned long long) INT64_MAX)
                        return json_integer((json_int_t) v);
        }
        if (is_yaml_float(s))
                return json_real(strtod(s, NULL));
        return json_string(s);
}

static int yaml_fail(YamlLoader *l, int e, const yaml_mark_t *mark, const char *what) {
        return cub_err_set(l->err, e, "%s:%zu:%zu: invalid YAML: %s", l->tree->source, mark->line + 1, mark->column + 1,
                           what);
}

static int yaml_parser_fail(YamlLoader *l) {
        const yaml_parser_t *p = &l->parser;
        char what[512];

        if (p->context)
                (void) snprintf(what, sizeof(what), "%s %s", p->problem ? p->problem : "error", p->context);
        else
                (void) snprintf(what, sizeof(what), "%s", p->problem ? p->problem : "parse error");
        return yaml_fail(l, EINVAL, &p->problem_mark, what);
}

static int yaml_next(YamlLoader *l, yaml_event_t *ev) {
        if (!yaml_parser_parse(&l->parser, ev))
                return yaml_parser_fail(l);
        return 0;
}

static int yaml_node(YamlLoader *l, yaml_event_t *ev, int depth, json_t **ret, size_t *ret_size);

static int register_anchor(YamlLoader *l, const yaml_char_t *name, json_t *node, size_t size) {
        Anchor *na;

        if (!name)
                return 0;
        na = realloc(l->anchors, (l->n_anchors + 1) * sizeof(*na));
        if (!na)
                return -ENOMEM;
        l->anchors = na;
        na[l->n_anchors].name = strdup((const char *) name);
        if (!na[l->n_anchors].name)
                return -ENOMEM;
        na[l->n_anchors].node = json_incref(node);
        na[l->n_anchors].size = size;
        l->n_anchors++;
        return 0;
}

static int yaml_collection(YamlLoader *l, yaml_event_t *start, int depth, json_t **ret, size_t *ret_size) {
        bool is_map = start->type == YAML_MAPPING_START_EVENT;
        yaml_event_type_t end = is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
        _cleanup_(json_decrefp) json_t *node = is_map ? json_object() : json_array();
        _cleanup_(json_decrefp) json_t *merges = NULL;
        size_t size = 1;
        int line = (int) start->start_mark.line + 1;
        int r;

        if (!node)
                return cub_err_set(l->err, ENOMEM, "%s: out of memory", l->tree->source);
        if (depth > TREE_MAX_DEPTH)
                return yaml_fail(l, E2BIG, &start->start_mark, "nesting is too deep");
        r = tree_note_line(l->tree, node, line);
        if (r < 0)
                return cub_err_set(l->err, ENOMEM, "%s: out of memory", l->tree->source);

        for (;;) {
                yaml_event_t ev;
                _cleanup_(json_decrefp) json_t *key = NULL, *value = NULL;
                size_t sub = 0;
                int kline = line;

                r = yaml_next(l, &ev);
                if (r < 0)
                        return r;
                if (ev.type == end) {
                        yaml_event_delete(&ev);
                        break;
                }
                if (is_map) {
                        kline = (int) ev.start_mark.line + 1;
                        if (ev.type != YAML_SCALAR_EVENT) {
                                r = yaml_fail(l, EINVAL, &ev.start_mark, "a mapping key must be a scalar");
                                yaml_event_delete(&ev);
                                return r;
                        }
                        key = json_stringn((const char *) ev.data.scalar.value, ev.data.scalar.length);
                        /* a plain key kubelet's reader takes for a boolean is "true" or "false"
                         * (sigs.k8s.io/yaml's JSON keys: `on:` is "true") */
                        if (key && ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev.data.scalar.tag &&
                            yaml11_bool(json_string_value(key)) >= 0) {
                                int kb = yaml11_bool(json_string_value(key));

                                json_decref(key);
                                key = json_string(kb ? "true" : "false");
                        }
                        yaml_event_delete(&ev);
                        if (!key)
                                return cub_err_set(l->err, EINVAL, "%s:%d: invalid YAML: key is not valid UTF-8",
                                                   l->tree->source, kline);
                        if (json_object_get(node, json_string_value(key)))
                                return cub_err_set(l->err, EINVAL, "%s:%d: invalid YAML: duplicate key \"%s\"",
                                                   l->tree->source, kline, json_string_value(key));
                        r = yaml_next(l, &ev);
                        if (r < 0)
                                return r;
                }
                r = yaml_node(l, &ev, depth + 1, &value, &sub);
                yaml_event_delete(&ev);
                if (r < 0)
                        return r;
                size += sub;
                if (size > TREE_MAX_NODES)
                        return cub_err_set(l->err, E2BIG, "%s:%d: invalid YAML: document is too large", l->tree->source,
                                           line);
                if (is_map && strcmp(json_string_value(key), "<<") == 0) {
                        /* YAML merge key (go-yaml applies it): keys of the mapping(s) come in below
                         * unless this mapping sets them itself */
                        if (!json_is_object(value) && !json_is_array(value))
                                return cub_err_set(l->err, EINVAL,
                                                   "%s:%d: invalid YAML: a merge key '<<' needs a mapping or a list "
                                                   "of mappings",
                                                   l->tree->source, kline);
                        if (!merges)
                                merges = json_array();
                        if (!merges || json_array_append_new(merges, TAKE_PTR(value)) < 0)
                                return cub_err_set(l->err, ENOMEM, "%s: out of memory", l->tree->source);
                        continue;
                }
                if (is_map) {
                        r = json_object_set_new(node, json_string_value(key), TAKE_PTR(value));
                        if (r >= 0)
                                r = tree_note_key_line(l->tree, node, json_string_value(key), kline);
                } else
                        r = json_array_append_new(node, TAKE_PTR(value));
                if (r < 0)
                        return cub_err_set(l->err, ENOMEM, "%s: out of memory", l->tree->source);
        }
        for (size_t i = 0; merges && i < json_array_size(merges); i++) {
                json_t *m = json_array_get(merges, i), *src, *v;
                const char *k;
                size_t n = json_is_array(m) ? json_array_size(m) : 1;

                for (size_t e = 0; e < n; e++) {
                        src = json_is_array(m) ? json_array_get(m, e) : m;
                        if (!json_is_object(src))
                                return cub_err_set(l->err, EINVAL,
                                                   "%s:%d: invalid YAML: a merge key '<<' needs a mapping or a list "
                                                   "of mappings",
                                                   l->tree->source, line);
                        json_object_foreach(src, k, v) {
                                if (!json_object_get(node, k) && json_object_set(node, k, v) < 0)
                                        return cub_err_set(l->err, ENOMEM, "%s: out of memory", l->tree->source);
                        }
                }
        }
        r = register_anchor(l, is_map ? start->data.mapping_start.anchor : start->data.sequence_start.anchor, node,
                            size);
        if (r < 0)
                return cub_err_set(l->err, ENOMEM, "%s: out of memory", l->tree->source);
        *ret_size = size;
        *ret = TAKE_PTR(node);
        return 0;
}

static int yaml_node(YamlLoader *l, yaml_event_t *ev, int depth, json_t **ret, size_t *ret_size) {
        switch (ev->type) {
        case YAML_SCALAR_EVENT: {
                const char *text = (const char *) ev->data.scalar.value;
                const char *tag = (const char *) ev->data.scalar.tag;
                json_t *node;

                if (strlen(text) != ev->data.scalar.length)
                        return yaml_fail(l, EINVAL, &ev->start_mark, "NUL byte in a scalar");
                if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !(tag && strcmp(tag, YAML_STR_TAG) == 0))
                        node = resolve_plain(text);
                else
                        node = json_string(text);
                if (!node)
                        return yaml_fail(l, EINVAL, &ev->start_mark, "scalar is not valid UTF-8");
                if (!json_is_null(node) && !json_is_boolean(node) &&
                    tree_note_line(l->tree, node, (int) ev->start_mark.line + 1) < 0) {
                        json_decref(node);
                        return cub_err_set(l->err, ENOMEM, "%s: out of memory", l->tree->source);
                }
                if (register_anchor(l, ev->data.scalar.anchor, node, 1) < 0) {
                        json_decref(node);
                        return cub_err_set(l->err, ENOMEM, "%s: out of memory", l->tree->source);
                }
                *ret = node;
                *ret_size = 1;
                return 0;
        }
        case YAML_ALIAS_EVENT:
                for (size_t i = l->n_anchors; i > 0; i--)
                        if (strcmp(l->anchors[i - 1].name, (const char *) ev->data.alias.anchor) == 0) {
                                *ret = json_incref(l->anchors[i - 1].node);
                                *ret_size = l->anchors[i - 1].size;
                                return 0;
                        }
                return cub_err_set(l->err, EINVAL, "%s:%zu:%zu: invalid YAML: unknown anchor \"%s\"", l->tree->source,
                                   ev->start_mark.line + 1, ev->start_mark.column + 1,
                                   (const char *) ev->data.alias.anchor);
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
                return yaml_collection(l, ev, depth, ret, ret_size);
        default:
                return yaml_fail(l, EINVAL, &ev->start_mark, "unexpected event");
        }
}

static int load_yaml(const char *buf, size_t len, PodTree *t, CubError *err) {
        YamlLoader l = { .tree = t, .err = err };
        _cleanup_(json_decrefp) json_t *root = NULL;
        yaml_event_t ev;
        size_t size;
        int r, docs = 0;

        if (!yaml_parser_initialize(&l.parser))
                return cub_err_set(err, ENOMEM, "%s: out of memory", t->source);
        yaml_parser_set_input_string(&l.parser, (const unsigned char *) buf, len);

        for (;;) {
                r = yaml_next(&l, &ev);
                if (r < 0)
                        goto finish;
                if (ev.type == YAML_STREAM_END_EVENT) {
                        yaml_event_delete(&ev);
                        break;
                }
                if (ev.type == YAML_DOCUMENT_START_EVENT) {
                        int line = (int) ev.start_mark.line + 1;
                        _cleanup_(json_decrefp) json_t *doc = NULL;

                        yaml_event_delete(&ev);
                        r = yaml_next(&l, &ev);
                        if (r < 0)
                                goto finish;
                        r = yaml_node(&l, &ev, 0, &doc, &size);
                        yaml_event_delete(&ev);
                        if (r < 0)
                                goto finish;
                        if (docs > 0 && !json_is_null(doc)) {
                                r = cub_err_set(err, EINVAL,
                                                "%s:%d: a second YAML document starts here; a manifest file holds "
                                                "exactly one pod",
                                                t->source, line);
                                goto finish;
                        }
                        if (docs == 0)
                                root = TAKE_PTR(doc);
                        docs++;
                        continue;
                }
                yaml_event_delete(&ev);
        }
        r = 0;
        if (!root || json_is_null(root))
                r = cub_err_set(err, ENODATA, "%s: empty manifest", t->source);
        else
                t->root = TAKE_PTR(root);
finish:
        for (size_t i = 0; i < l.n_anchors; i++) {
                free(l.anchors[i].name);
                json_decref(l.anchors[i].node);
        }
        free(l.anchors);
        yaml_parser_delete(&l.parser);
        return r;
}

/* ---- JSON --------------------------------------------------------------- */

static int load_json(const char *buf, size_t len, PodTree *t, CubError *err) {
        json_error_t jerr;
        json_t *root;

        root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
                return cub_err_set(err, EINVAL, "%s:%d:%d: invalid JSON: %s", t->source, jerr.line, jerr.column,
                                   jerr.text);
        t->root = root;
        return 0;
}

static bool looks_like_json(const char *buf, size_t len, const char *source) {
        size_t sl = source ? strlen(source) : 0;

        if (sl >= 5 && strcmp(source + sl - 5, ".json") == 0)
                return true;
        for (size_t i = 0; i < len; i++) {
                if (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r')
                        continue;
                return buf[i] == '{';
        }
        return false;
}

int pod_tree_load(const char *buf, size_t len, const char *source, PodFormat fmt, PodTree *ret, CubError *err) {
        PodTree t = { .source = source ? source : "<input>" };
        int r;

        if (fmt == POD_FORMAT_AUTO)
                fmt = looks_like_json(buf, len, source) ? POD_FORMAT_JSON : POD_FORMAT_YAML;
        t.yaml = fmt == POD_FORMAT_YAML;
        r = t.yaml ? load_yaml(buf, len, &t, err) : load_json(buf, len, &t, err);
        if (r < 0) {
                pod_tree_done(&t);
                return r;
        }
        if (t.n_lines > 1)
                qsort(t.lines, t.n_lines, sizeof(PodTreeLine), line_cmp);
        if (t.n_key_lines > 1)
                qsort(t.key_lines, t.n_key_lines, sizeof(PodTreeKeyLine), key_line_cmp);
        if (!json_is_object(t.root)) {
                r = cub_err_set(err, EINVAL, "%s: the manifest must be an object (a v1 Pod), got %s", t.source,
                                pod_json_type_name(t.root));
                pod_tree_done(&t);
                return r;
        }
        *ret = t;
        return 0;
}

int pod_doc_load(const char *buf, size_t len, const char *source, json_t **ret, CubError *err) {
        PodTree t;
        int r;

        r = pod_tree_load(buf, len, source, POD_FORMAT_AUTO, &t, err);
        if (r < 0)
                return r;
        *ret = json_incref(t.root);
        pod_tree_done(&t);
        return 0;
}
