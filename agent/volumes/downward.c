/* SPDX-License-Identifier: Apache-2.0 */
/* The pure parts: volume directories, downward API values in kubelet's
 * format, the tmpfs size rule and $(VAR) expansion. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/strbuf.h"
#include "volumes.h"

int vol_pod_dir(const VolRoots *roots, const char *uid, char *buf, size_t size, CubError *err) {
        int n = snprintf(buf, size, "%s/%s/volumes", roots->pods_dir, uid);

        if (n < 0 || (size_t) n >= size)
                return cub_err_set(err, ENAMETOOLONG, "pod %s: volume directory name too long", uid);
        return 0;
}

int vol_path(const VolRoots *roots, const char *uid, const PodVolume *v, char *buf, size_t size, CubError *err) {
        const char *plugin;
        int n;

        switch (v->kind) {
        case POD_VOLUME_HOST_PATH:
                n = snprintf(buf, size, "%s", v->host_path);
                goto done;
        case POD_VOLUME_EMPTY_DIR:
                plugin = VOL_DIR_EMPTY_DIR;
                break;
        case POD_VOLUME_DOWNWARD_API:
                plugin = VOL_DIR_DOWNWARD_API;
                break;
        case POD_VOLUME_PROJECTED:
                plugin = VOL_DIR_PROJECTED;
                break;
        case POD_VOLUME_CONFIG_MAP:
                plugin = VOL_DIR_CONFIG_MAP;
                break;
        case POD_VOLUME_SECRET:
                plugin = VOL_DIR_SECRET;
                break;
        default:
                return cub_err_set(err, EINVAL, "volume \"%s\": unknown kind", v->name);
        }
        n = snprintf(buf, size, "%s/%s/volumes/%s/%s", roots->pods_dir, uid, plugin, v->name);
done:
        if (n < 0 || (size_t) n >= size)
                return cub_err_set(err, ENAMETOOLONG, "volume \"%s\": path too long", v->name);
        return 0;
}

/* ---- FormatMap ------------------------------------------------------------------ */

static void buf_quote(CubStrBuf *b, const char *s) {
        cub_strbuf_add(b, "\"", 1);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                char esc[8];

                switch (*p) {
                case '"':
                        cub_strbuf_str(b, "\\\"");
                        break;
                case '\\':
                        cub_strbuf_str(b, "\\\\");
                        break;
                case '\a':
                        cub_strbuf_str(b, "\\a");
                        break;
                case '\b':
                        cub_strbuf_str(b, "\\b");
                        break;
                case '\f':
                        cub_strbuf_str(b, "\\f");
                        break;
                case '\n':
                        cub_strbuf_str(b, "\\n");
                        break;
                case '\r':
                        cub_strbuf_str(b, "\\r");
                        break;
                case '\t':
                        cub_strbuf_str(b, "\\t");
                        break;
                case '\v':
                        cub_strbuf_str(b, "\\v");
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f) {
                                (void) snprintf(esc, sizeof(esc), "\\x%02x", *p);
                                cub_strbuf_str(b, esc);
                        } else
                                cub_strbuf_add(b, (const char *) p, 1);
                }
        }
        cub_strbuf_add(b, "\"", 1);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

char *vol_format_map(const PodStringMap *m) {
        _cleanup_free_ const char **keys = NULL;
        CubStrBuf b = {};

        cub_strbuf_str(&b, "");
        keys = calloc(m->n + 1, sizeof(*keys));
        if (!keys) {
                free(b.s);
                return NULL;
        }
        for (size_t i = 0; i < m->n; i++)
                keys[i] = m->keys[i];
        qsort(keys, m->n, sizeof(*keys), cmp_str);
        for (size_t i = 0; i < m->n; i++) {
                const char *value = "";

                for (size_t k = 0; k < m->n; k++)
                        if (strcmp(m->keys[k], keys[i]) == 0)
                                value = m->values[k];
                if (i > 0)
                        cub_strbuf_str(&b, "\n");
                cub_strbuf_str(&b, keys[i]);
                cub_strbuf_str(&b, "=");
                buf_quote(&b, value);
        }
        if (b.oom) {
                free(b.s);
                return NULL;
        }
        return b.s;
}

/* ---- resources ------------------------------------------------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) {
        if (b <= 0)
                return 0;
        return a / b + (a % b != 0 && a > 0);
}

int vol_resource_value(const PodContainer *c, const char *resource, CubQuantity divisor, const VolNode *node, char *buf,
                       size_t size, CubError *err) {
        const char *dot = strchr(resource, '.');
        bool limit, cpu;
        const char *name;
        CubQuantity q = {};
        int64_t v;
        bool have;

        if (!dot)
                return cub_err_set(err, EINVAL, "unsupported container resource : %s", resource);
        limit = strncmp(resource, "limits.", 7) == 0;
        if (!limit && strncmp(resource, "requests.", 9) != 0)
                return cub_err_set(err, EINVAL, "unsupported container resource : %s", resource);
        name = dot + 1;
        if (strcmp(name, "cpu") != 0 && strcmp(name, "memory") != 0 && strcmp(name, "ephemeral-storage") != 0)
                return cub_err_set(err, EINVAL, "unsupported container resource : %s", resource);
        cpu = strcmp(name, "cpu") == 0;
        if (cub_quantity_is_zero(divisor))
                divisor = (CubQuantity){ .units = 1 };
        if (limit) {
                have = pod_resource_get(&c->limits, name, &q);
                if (!have) {
                        /* MergeContainerResourceLimits: node allocatable */
                        int64_t a = cpu                           ? node->cpu_milli
                                    : strcmp(name, "memory") == 0 ? node->memory
                                                                  : node->ephemeral_storage;

                        q = cpu ? cub_quantity_from_milli(a) : cub_quantity_from_units(a);
                }
        } else {
                have = pod_resource_get(&c->requests, name, &q);
                if (!have)
                        (void) pod_resource_get(&c->limits, name, &q); /* requests default to limits */
        }
        if (cpu)
                v = ceil_div(cub_quantity_milli(q), cub_quantity_milli(divisor));
        else
                v = ceil_div(cub_quantity_value(q), cub_quantity_value(divisor));
        (void) snprintf(buf, size, "%" PRId64, v);
        return 0;
}

static const PodContainer *find_container(const Pod *pod, const char *name) {
        for (size_t i = 0; i < pod->n_containers; i++)
                if (strcmp(pod->containers[i].name, name) == 0)
                        return &pod->containers[i];
        for (size_t i = 0; i < pod->n_init_containers; i++)
                if (strcmp(pod->init_containers[i].name, name) == 0)
                        return &pod->init_containers[i];
        return NULL;
}

/* metadata.labels['key'] → key (malloc'd), NULL when fp is not of that form */
static char *subscript(const char *fp, const char *prefix) {
        size_t n = strlen(prefix), len = strlen(fp);

        if (strncmp(fp, prefix, n) != 0 || len < n + 2 || strcmp(fp + len - 2, "']") != 0)
                return NULL;
        return strndup(fp + n, len - n - 2);
}

static const char *map_get(const PodStringMap *m, const char *key) {
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->keys[i], key) == 0)
                        return m->values[i];
        return NULL;
}

int vol_downward_value(const Pod *pod, const PodDownwardFile *f, const VolNode *node, char **ret, CubError *err) {
        char buf[64];

        if (f->field_path) {
                const char *fp = f->field_path, *v = NULL;
                _cleanup_free_ char *key = NULL;

                if (strcmp(fp, "metadata.name") == 0)
                        v = pod->name;
                else if (strcmp(fp, "metadata.namespace") == 0)
                        v = pod->namespace_;
                else if (strcmp(fp, "metadata.uid") == 0)
                        v = pod->uid;
                else if (strcmp(fp, "metadata.labels") == 0)
                        *ret = vol_format_map(&pod->labels);
                else if (strcmp(fp, "metadata.annotations") == 0)
                        *ret = vol_format_map(&pod->annotations);
                else if ((key = subscript(fp, "metadata.labels['")))
                        v = map_get(&pod->labels, key);
                else if ((key = subscript(fp, "metadata.annotations['")))
                        v = map_get(&pod->annotations, key);
                else
                        return cub_err_set(err, EINVAL, "unsupported fieldPath: %s", fp);
                if (strcmp(fp, "metadata.labels") == 0 || strcmp(fp, "metadata.annotations") == 0)
                        return *ret ? 0 : cub_err_set(err, ENOMEM, "out of memory");
                *ret = strdup(v ? v : "");
                return *ret ? 0 : cub_err_set(err, ENOMEM, "out of memory");
        }
        if (f->resource) {
                const PodContainer *c = find_container(pod, f->resource_container ? f->resource_container : "");
                VolNode n = *node;
                int r;

                if (!c)
                        return cub_err_set(err, EINVAL, "container %s not found", f->resource_container);
                /* a limit not set: the pod-level one, else node allocatable */
                pod_downward_allocatable(pod, &n.cpu_milli, &n.memory);
                r = vol_resource_value(c, f->resource, f->divisor, &n, buf, sizeof(buf), err);
                if (r < 0)
                        return r;
                *ret = strdup(buf);
                return *ret ? 0 : cub_err_set(err, ENOMEM, "out of memory");
        }
        return cub_err_set(err, EINVAL, "%s: neither fieldRef nor resourceFieldRef", f->path);
}

/* ---- tmpfs size ------------------------------------------------------------------- */

int64_t vol_tmpfs_size(const PodVolume *v, int64_t pod_memory_limit, int64_t node_allocatable_memory) {
        int64_t size = node_allocatable_memory;

        if (pod_memory_limit > 0 && pod_memory_limit <= size)
                size = pod_memory_limit;
        if (v->size_limit_set) {
                int64_t l = cub_quantity_value(v->size_limit);

                if (l > 0 && l <= size)
                        size = l;
        }
        return size;
}

/* ---- $(VAR) ------------------------------------------------------------------------ */

static const char *env_get(char *const *envs, const char *key, size_t n) {
        for (size_t i = 0; envs && envs[i] && envs[i + 1]; i += 2)
                if (strlen(envs[i]) == n && strncmp(envs[i], key, n) == 0)
                        return envs[i + 1];
        return NULL;
}

int vol_expand(const char *expr, char *const *envs, char **ret, CubError *err) {
        CubStrBuf b = {}, missing = {};
        char **names = NULL;
        size_t n_names = 0;

        cub_strbuf_str(&b, "");
        for (const char *p = expr; *p; p++) {
                if (p[0] == '$' && p[1] == '$') {
                        cub_strbuf_add(&b, "$", 1);
                        p++;
                } else if (p[0] == '$' && p[1] == '(') {
                        const char *close = strchr(p + 2, ')');
                        const char *v;

                        if (!close) { /* not a reference: kept as written */
                                cub_strbuf_str(&b, p);
                                break;
                        }
                        v = env_get(envs, p + 2, (size_t) (close - p - 2));
                        if (!v || !*v) {
                                char **nn = realloc(names, (n_names + 1) * sizeof(*nn));

                                if (nn) {
                                        names = nn;
                                        names[n_names] = strndup(p + 2, (size_t) (close - p - 2));
                                        if (names[n_names])
                                                n_names++;
                                }
                        } else
                                cub_strbuf_str(&b, v);
                        p = close;
                } else
                        cub_strbuf_add(&b, p, 1);
        }
        if (n_names > 0) {
                qsort(names, n_names, sizeof(*names), cmp_str);
                cub_strbuf_str(&missing, "");
                for (size_t i = 0; i < n_names; i++)
                        if (i == 0 || strcmp(names[i], names[i - 1]) != 0) {
                                if (missing.n > 0)
                                        cub_strbuf_str(&missing, ", ");
                                cub_strbuf_str(&missing, names[i]);
                        }
                for (size_t i = 0; i < n_names; i++)
                        free(names[i]);
                free(names);
                free(b.s);
                (void) cub_err_set(err, EINVAL, "missing value for %s", missing.s ? missing.s : "?");
                free(missing.s);
                return -EINVAL;
        }
        free(names);
        if (b.oom) {
                free(b.s);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret = b.s;
        return 0;
}
