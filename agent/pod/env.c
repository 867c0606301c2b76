/* SPDX-License-Identifier: Apache-2.0 */
/* env sources: a container's env as kubelet builds it (kubelet_pods.go
 * makeEnvironmentVariables): values with $(VAR) expanded against the env
 * before them (third_party/forked/golang/expansion), env[].valueFrom
 * fieldRef (podFieldSelectorRuntimeValue) and resourceFieldRef
 * (ExtractContainerResourceValue with the limits merged with node
 * allocatable), and command/args expanded against the result. Pure: the
 * node's and the pod's addresses come in a PodEnvContext. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/strbuf.h"
#include "pod-internal.h"

void pod_env_strv_free(char **l) {
        for (size_t i = 0; l && l[i]; i++)
                free(l[i]);
        free(l);
}

/* ---- expansion ------------------------------------------------------------ */

static const char *lookup(const char *name, size_t len, const char *const *const *maps, size_t n_maps) {
        for (size_t m = 0; m < n_maps; m++) {
                const char *found = NULL;

                for (size_t i = 0; maps[m] && maps[m][i] && maps[m][i + 1]; i += 2)
                        if (strlen(maps[m][i]) == len && memcmp(maps[m][i], name, len) == 0)
                                found = maps[m][i + 1];
                if (found)
                        return found;
        }
        return NULL;
}

char *pod_env_expand(const char *in, const char *const *const *maps, size_t n_maps) {
        CubStrBuf b = {};
        size_t len = strlen(in), checkpoint = 0;

        cub_strbuf_add(&b, "", 0);
        for (size_t cursor = 0; cursor < len; cursor++) {
                const char *rest;
                size_t advance = 1;

                if (in[cursor] != '$' || cursor + 1 >= len)
                        continue;
                cub_strbuf_add(&b, in + checkpoint, cursor - checkpoint);
                rest = in + cursor + 1;
                if (rest[0] == '$') {
                        cub_strbuf_add(&b, "$", 1); /* escaped operator */
                } else if (rest[0] == '(') {
                        const char *close = strchr(rest + 1, ')');

                        if (close) {
                                size_t n = (size_t) (close - rest - 1);
                                const char *v = lookup(rest + 1, n, maps, n_maps);

                                if (v)
                                        cub_strbuf_add(&b, v, strlen(v));
                                else
                                        cub_strbuf_add(&b, rest - 1, n + 3); /* $(NAME) as written */
                                advance = n + 2;
                        } else
                                cub_strbuf_add(&b, "$(", 2); /* incomplete reference */
                } else {
                        cub_strbuf_add(&b, rest - 1, 2); /* "$x": the operator and the byte */
                }
                cursor += advance;
                checkpoint = cursor + 1;
        }
        if (checkpoint < len)
                cub_strbuf_add(&b, in + checkpoint, len - checkpoint);
        if (b.oom) {
                free(b.s);
                return NULL;
        }
        return b.s;
}

/* ---- fieldRef --------------------------------------------------------------- */

static const char *map_get(const PodStringMap *m, const char *key, size_t len) {
        for (size_t i = 0; i < m->n; i++)
                if (strlen(m->keys[i]) == len && memcmp(m->keys[i], key, len) == 0)
                        return m->values[i];
        return NULL;
}

/* "metadata.labels['k']" → prefix "metadata.labels", key "k" (fieldpath's
 * SplitMaybeSubscriptedPath). */
static bool split_subscript(const char *path, size_t *ret_prefix, const char **ret_key, size_t *ret_key_len) {
        size_t len = strlen(path);
        const char *open;

        if (len < 2 || strcmp(path + len - 2, "']") != 0)
                return false;
        open = strstr(path, "['");
        if (!open || open == path || open + 2 > path + len - 2)
                return false;
        *ret_prefix = (size_t) (open - path);
        *ret_key = open + 2;
        *ret_key_len = (size_t) (path + len - 2 - *ret_key);
        return true;
}

static int dup_ret(const char *v, char **ret, CubError *err) {
        *ret = strdup(v ? v : "");
        return *ret ? 0 : cub_err_set(err, ENOMEM, "out of memory");
}

/* validEnvDownwardAPIFieldPathExpressions, in the API's order, each with
 * what kubelet's podFieldSelectorRuntimeValue gives for it */
static const char *f_name(const Pod *p, const PodEnvContext *c) {
        (void) c;
        return p->name;
}
static const char *f_namespace(const Pod *p, const PodEnvContext *c) {
        (void) c;
        return p->namespace_;
}
static const char *f_uid(const Pod *p, const PodEnvContext *c) {
        (void) c;
        return p->uid;
}
static const char *f_node_name(const Pod *p, const PodEnvContext *c) {
        return p->node_name && *p->node_name ? p->node_name : c->node_name;
}
static const char *f_service_account(const Pod *p, const PodEnvContext *c) {
        (void) c;
        return p->service_account_name ? p->service_account_name : p->service_account;
}
static const char *f_host_ip(const Pod *p, const PodEnvContext *c) {
        (void) p;
        return c->host_ip;
}
static const char *f_host_ips(const Pod *p, const PodEnvContext *c) {
        (void) p;
        return c->host_ips ? c->host_ips : c->host_ip;
}
static const char *f_pod_ip(const Pod *p, const PodEnvContext *c) {
        (void) p;
        return c->pod_ip;
}
static const char *f_pod_ips(const Pod *p, const PodEnvContext *c) {
        (void) p;
        return c->pod_ips ? c->pod_ips : c->pod_ip;
}

static const struct {
        const char *path;
        const char *(*get)(const Pod *p, const PodEnvContext *c);
} env_fields[] = {
        { "metadata.name", f_name },
        { "metadata.namespace", f_namespace },
        { "metadata.uid", f_uid },
        { "spec.nodeName", f_node_name },
        { "spec.serviceAccountName", f_service_account },
        { "status.hostIP", f_host_ip },
        { "status.hostIPs", f_host_ips },
        { "status.podIP", f_pod_ip },
        { "status.podIPs", f_pod_ips },
};

const char *pod_env_field_path(size_t i) {
        return i < ELEMENTSOF(env_fields) ? env_fields[i].path : NULL;
}

int pod_env_field_value(const Pod *pod, const char *path, const PodEnvContext *ctx, char **ret, CubError *err) {
        size_t prefix, klen;
        const char *key;

        if (split_subscript(path, &prefix, &key, &klen)) {
                if (prefix == strlen("metadata.labels") && strncmp(path, "metadata.labels", prefix) == 0)
                        return dup_ret(map_get(&pod->labels, key, klen), ret, err);
                if (prefix == strlen("metadata.annotations") && strncmp(path, "metadata.annotations", prefix) == 0)
                        return dup_ret(map_get(&pod->annotations, key, klen), ret, err);
                return cub_err_set(err, EINVAL, "fieldPath '%s': field label does not support subscript", path);
        }
        for (size_t i = 0; i < ELEMENTSOF(env_fields); i++)
                if (strcmp(path, env_fields[i].path) == 0)
                        return dup_ret(env_fields[i].get(pod, ctx), ret, err);
        return cub_err_set(err, EINVAL, "fieldPath '%s': not supported for env", path);
}

/* ---- subPathExpr ---------------------------------------------------------------- */

char **pod_env_subpath(const Pod *pod, const PodContainer *c) {
        char **l = calloc(2 * c->n_env + 1, sizeof(char *));
        const PodEnvContext ctx = { .node_name = pod->node_name };
        size_t n = 0;

        if (!l)
                return NULL;
        for (size_t i = 0; i < c->n_env; i++) {
                char *v = NULL;

                if (c->env[i].value)
                        v = strdup(c->env[i].value);
                else if (!c->env[i].field_ref_set || pod_env_field_value(pod, c->env[i].field_path, &ctx, &v, NULL) < 0)
                        continue;
                l[n] = strdup(c->env[i].name);
                l[n + 1] = v;
                if (!l[n] || !l[n + 1]) {
                        free(l[n]);
                        free(l[n + 1]);
                        l[n] = l[n + 1] = NULL;
                        pod_env_strv_free(l);
                        return NULL;
                }
                n += 2;
        }
        return l;
}

/* ---- resourceFieldRef -------------------------------------------------------- */

int pod_env_resource_value(const PodContainer *c, const char *resource, CubQuantity divisor, const PodEnvContext *ctx,
                           char **ret, CubError *err) {
        static const struct {
                const char *field;
                const char *name;
                bool limit;
        } table[] = {
                { "limits.cpu", "cpu", true },
                { "limits.memory", "memory", true },
                { "limits.ephemeral-storage", "ephemeral-storage", true },
                { "requests.cpu", "cpu", false },
                { "requests.memory", "memory", false },
                { "requests.ephemeral-storage", "ephemeral-storage", false },
        };
        char buf[32];

        if (cub_quantity_is_zero(divisor))
                divisor = (CubQuantity){ .units = 1 };
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                CubQuantity q;
                bool cpu = strcmp(table[i].name, "cpu") == 0, found;
                double v, d;

                if (strcmp(resource, table[i].field) != 0)
                        continue;
                found = pod_resource_get(table[i].limit ? &c->limits : &c->requests, table[i].name, &q);
                if (cpu) {
                        /* MergeContainerResourceLimits: an unset limit is node allocatable */
                        v = (double) (table[i].limit && !found ? ctx->alloc_cpu_milli : cub_quantity_milli(q));
                        d = (double) cub_quantity_milli(divisor);
                } else {
                        int64_t alloc =
                                strcmp(table[i].name, "memory") == 0 ? ctx->alloc_memory : ctx->alloc_ephemeral_storage;

                        v = (double) (table[i].limit && !found ? alloc : cub_quantity_value(q));
                        d = (double) cub_quantity_value(divisor);
                }
                if (d <= 0)
                        return cub_err_set(err, EINVAL, "resource '%s': divisor must be positive", resource);
                /* int64(math.Ceil(float64(v) / float64(d))), without libm */
                {
                        double ratio = v / d;
                        int64_t t = (int64_t) ratio;

                        if ((double) t < ratio)
                                t++;
                        (void) snprintf(buf, sizeof(buf), "%" PRId64, t);
                }
                return dup_ret(buf, ret, err);
        }
        return cub_err_set(err, EINVAL, "unsupported container resource : %s", resource);
}

/* ---- the env of a container --------------------------------------------------- */

static const PodContainer *find_container(const Pod *pod, const char *name) {
        for (size_t k = 0; k < pod->n_init_containers + pod->n_containers; k++) {
                const PodContainer *c = pod_container_at(pod, k, NULL);

                if (strcmp(c->name, name) == 0)
                        return c;
        }
        return NULL;
}

int pod_env_resolve(const Pod *pod, const PodContainer *c, const PodEnvContext *node_ctx, char ***ret_env,
                    CubError *err) {
        PodEnvContext lctx = *node_ctx, *ctx = &lctx;
        size_t n_from = 0, n_svc = 0, o = 0;
        char **env;
        int r = 0;

        /* a limit not set: the pod-level one, else node allocatable */
        pod_downward_allocatable(pod, &lctx.alloc_cpu_milli, &lctx.alloc_memory);

        while (ctx->env_from && ctx->env_from[n_from] && ctx->env_from[n_from + 1])
                n_from += 2;
        while (ctx->service_env && ctx->service_env[n_svc] && ctx->service_env[n_svc + 1])
                n_svc += 2;
        env = calloc(n_from + 2 * c->n_env + n_svc + 1, sizeof(char *));
        if (!env)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (; o < n_from; o++)
                if (!(env[o] = strdup(ctx->env_from[o]))) {
                        pod_env_strv_free(env);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
        for (size_t i = 0; i < c->n_env && r >= 0; i++) {
                const PodEnvVar *e = &c->env[i];
                char *v = NULL;

                switch (e->kind) {
                case POD_ENV_CONFIG_MAP_KEY:
                case POD_ENV_SECRET_KEY: {
                        const char *rv = i < ctx->n_ref_values && ctx->ref_values ? ctx->ref_values[i] : NULL;

                        if (!rv && !e->ref_optional)
                                r = cub_err_set(err, ENOENT, "couldn't find key %s in %s %s/%s", e->ref_key,
                                                e->kind == POD_ENV_SECRET_KEY ? "Secret" : "ConfigMap", pod->namespace_,
                                                e->ref_name);
                        else if (!rv)
                                continue; /* optional and missing: no such variable */
                        else if (!(v = strdup(rv)))
                                r = cub_err_set(err, ENOMEM, "out of memory");
                        break;
                }
                case POD_ENV_FIELD_REF:
                        r = pod_env_field_value(pod, e->field_path, ctx, &v, err);
                        break;
                case POD_ENV_RESOURCE_FIELD: {
                        const PodContainer *t = e->resource_container && *e->resource_container
                                                        ? find_container(pod, e->resource_container)
                                                        : c;

                        if (!t)
                                r = cub_err_set(err, ENOENT, "container %s not found", e->resource_container);
                        else
                                r = pod_env_resource_value(t, e->resource, e->divisor, ctx, &v, err);
                        break;
                }
                default: {
                        const char *const *maps[] = { (const char *const *) env, ctx->service_env };

                        /* the env so far (tmpEnv), then the services' (kubelet's MappingFuncFor) */
                        v = pod_env_expand(e->value ? e->value : "", maps, ctx->service_env ? 2 : 1);
                        if (!v)
                                r = cub_err_set(err, ENOMEM, "out of memory");
                        break;
                }
                }
                if (r < 0) {
                        /* kubelet's message for a key ref names the key, not the variable */
                        if (e->kind != POD_ENV_CONFIG_MAP_KEY && e->kind != POD_ENV_SECRET_KEY)
                                (void) cub_err_wrap(err, "env '%s'", e->name);
                        break;
                }
                env[o] = strdup(e->name);
                env[o + 1] = v;
                if (!env[o])
                        r = cub_err_set(err, ENOMEM, "out of memory");
                o += 2;
        }
        /* the services' variables that the pod's env does not set */
        for (size_t i = 0; i < n_svc && r >= 0; i += 2) {
                const char *const *maps[] = { (const char *const *) env };

                if (lookup(ctx->service_env[i], strlen(ctx->service_env[i]), maps, 1))
                        continue;
                if (!(env[o] = strdup(ctx->service_env[i])) || !(env[o + 1] = strdup(ctx->service_env[i + 1])))
                        r = cub_err_set(err, ENOMEM, "out of memory");
                o += 2;
        }
        if (r < 0) {
                pod_env_strv_free(env);
                return r;
        }
        *ret_env = env;
        return 0;
}

static int expand_list(const PodStrv *in, char *const *env, char ***ret) {
        char **out;

        *ret = NULL;
        if (!in->items)
                return 0;
        out = calloc(in->n + 1, sizeof(char *));
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < in->n; i++) {
                const char *const *maps[] = { (const char *const *) env };

                out[i] = pod_env_expand(in->items[i], maps, 1);
                if (!out[i]) {
                        pod_env_strv_free(out);
                        return -ENOMEM;
                }
        }
        *ret = out;
        return 0;
}

int pod_env_expand_command(const PodContainer *c, char *const *env, char ***ret_command, char ***ret_args,
                           CubError *err) {
        char **cmd = NULL, **args = NULL;

        if (expand_list(&c->command, env, &cmd) < 0 || expand_list(&c->args, env, &args) < 0) {
                pod_env_strv_free(cmd);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret_command = cmd;
        *ret_args = args;
        return 0;
}

bool pod_env_name_valid(const char *k) {
        if (!*k)
                return false;
        for (; *k; k++)
                if (*k < 32 || *k > 126 || *k == '=')
                        return false;
        return true;
}

bool pod_container_has_api_env(const PodContainer *c) {
        if (c->n_env_from > 0)
                return true;
        for (size_t i = 0; i < c->n_env; i++)
                if (c->env[i].kind == POD_ENV_CONFIG_MAP_KEY || c->env[i].kind == POD_ENV_SECRET_KEY)
                        return true;
        return false;
}
