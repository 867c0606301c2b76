/* SPDX-License-Identifier: Apache-2.0 */
/* The kubeconfig: current-context → its cluster and user, as client-go
 * reads them (clientcmd's types: clusters[].cluster, users[].user,
 * contexts[].context). Errors name the file and the field. */
#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../pod/pod.h"
#include "../util/base64.h"
#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "kubeconfig.h"

#define KUBECONFIG_MAX (4u << 20)
#define CREDENTIAL_FILE_MAX (1u << 20)

void kube_config_done(KubeConfig *c) {
        if (!c)
                return;
        free(c->path);
        free(c->context);
        free(c->cluster_name);
        free(c->user);
        free(c->server);
        free(c->ca.data);
        free(c->cert.data);
        if (c->key.data) {
                explicit_bzero(c->key.data, c->key.len);
                free(c->key.data);
        }
        if (c->token) {
                explicit_bzero(c->token, strlen(c->token));
                free(c->token);
        }
        *c = (KubeConfig){};
}

/* the entry of list (clusters, users, contexts) named name: its inner object */
static json_t *named(const json_t *root, const char *list, const char *inner, const char *name, const char *path,
                     CubError *err) {
        json_t *l = json_object_get(root, list), *e;
        size_t i;

        if (!json_is_array(l)) {
                cub_err_set(err, EINVAL, "%s: %s: expected a list", path, list);
                return NULL;
        }
        json_array_foreach(l, i, e) {
                json_t *n = json_object_get(e, "name"), *o = json_object_get(e, inner);

                if (!json_is_string(n) || strcmp(json_string_value(n), name) != 0)
                        continue;
                if (!json_is_object(o)) {
                        cub_err_set(err, EINVAL, "%s: %s[%zu].%s: expected an object", path, list, i, inner);
                        return NULL;
                }
                return o;
        }
        cub_err_set(err, ENOENT, "%s: %s: no entry named '%s'", path, list, name);
        return NULL;
}

static int get_str(const json_t *o, const char *key, const char *field, const char *path, const char **ret,
                   CubError *err) {
        json_t *v = json_object_get(o, key);

        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return cub_err_set(err, EINVAL, "%s: %s.%s: expected a string", path, field, key);
        *ret = json_string_value(v);
        return 0;
}

/* key-data (base64) or key (a file, relative to dir): the bytes */
static int read_credential(const json_t *o, const char *key, const char *field, const char *path, const char *dir,
                           KubeBlob *ret, CubError *err) {
        _cleanup_free_ char *data_key = NULL, *file = NULL;
        const char *data, *name;
        char *buf;
        size_t len;
        int r;

        if (asprintf(&data_key, "%s-data", key) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        if ((r = get_str(o, data_key, field, path, &data, err)) < 0 || (r = get_str(o, key, field, path, &name, err)) < 0)
                return r;
        if (data) {
                r = cub_base64_decode(data, strlen(data), &ret->data, &ret->len);
                if (r < 0)
                        return cub_err_set(err, -r, "%s: %s.%s: %s", path, field, data_key,
                                           r == -ENOMEM ? "out of memory" : "not base64");
                return 0;
        }
        if (!name || !*name)
                return 0;
        if (name[0] != '/' && asprintf(&file, "%s/%s", dir, name) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = cub_read_file(file ? file : name, CREDENTIAL_FILE_MAX, &buf, &len, err);
        if (r < 0)
                return cub_err_wrap(err, "%s: %s.%s", path, field, key);
        ret->data = (uint8_t *) buf;
        ret->len = len;
        return 0;
}

static int load_user(const json_t *u, const char *path, const char *dir, KubeConfig *c, CubError *err) {
        const char *token, *token_file;
        int r;

        if ((r = read_credential(u, "client-certificate", "user", path, dir, &c->cert, err)) < 0 ||
            (r = read_credential(u, "client-key", "user", path, dir, &c->key, err)) < 0 ||
            (r = get_str(u, "token", "user", path, &token, err)) < 0 ||
            (r = get_str(u, "tokenFile", "user", path, &token_file, err)) < 0)
                return r;
        if (!c->cert.data != !c->key.data)
                return cub_err_set(err, EINVAL, "%s: user '%s': a client certificate needs its key, and the other way",
                                   path, c->user);
        if (token && *token) {
                if (!(c->token = strdup(token)))
                        return cub_err_set(err, ENOMEM, "out of memory");
        } else if (token_file && *token_file) {
                KubeBlob b = {};
                json_t *o = json_pack("{s:s}", "t", token_file);

                if (!o)
                        return cub_err_set(err, ENOMEM, "out of memory");
                r = read_credential(o, "t", "user", path, dir, &b, err);
                json_decref(o);
                if (r < 0)
                        return cub_err_wrap(err, "tokenFile");
                b.data[strcspn((char *) b.data, "\r\n")] = 0;
                c->token = (char *) b.data;
        }
        return 0;
}

int kube_config_decode(const char *buf, size_t len, const char *path, KubeConfig *ret, CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *dir_buf = NULL;
        KubeConfig c = {};
        const char *ctx_name, *s, *dir;
        json_t *ctx = NULL, *cl = NULL, *u = NULL, *v;
        int r;

        r = pod_doc_load(buf, len, path, &root, err);
        if (r < 0)
                return r;
        if (!(dir_buf = strdup(path)) || !(c.path = strdup(path))) {
                free(c.path);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        dir = dirname(dir_buf);
        r = get_str(root, "current-context", "", path, &ctx_name, err);
        if (r >= 0 && (!ctx_name || !*ctx_name))
                r = cub_err_set(err, EINVAL, "%s: current-context: not set", path);
        if (r >= 0 && !(ctx = named(root, "contexts", "context", ctx_name, path, err)))
                r = -EINVAL;
        if (r >= 0 && !(c.context = strdup(ctx_name)))
                r = cub_err_set(err, ENOMEM, "out of memory");
        if (r >= 0 && (r = get_str(ctx, "cluster", "context", path, &s, err)) >= 0 &&
            (!s || !(c.cluster_name = strdup(s))))
                r = cub_err_set(err, s ? ENOMEM : EINVAL, "%s: context '%s': no cluster", path, ctx_name);
        if (r >= 0 && (r = get_str(ctx, "user", "context", path, &s, err)) >= 0 && (!s || !(c.user = strdup(s))))
                r = cub_err_set(err, s ? ENOMEM : EINVAL, "%s: context '%s': no user", path, ctx_name);
        if (r >= 0 && !(cl = named(root, "clusters", "cluster", c.cluster_name, path, err)))
                r = -EINVAL;
        if (r >= 0 && (r = get_str(cl, "server", "cluster", path, &s, err)) >= 0 &&
            (!s || strncmp(s, "https://", 8) != 0))
                r = cub_err_set(err, EINVAL, "%s: cluster '%s': server: expected an https:// URL, got '%s'", path,
                                c.cluster_name, s ? s : "");
        if (r >= 0 && !(c.server = strdup(s)))
                r = cub_err_set(err, ENOMEM, "out of memory");
        if (r >= 0) {
                size_t n = strlen(c.server);

                while (n > 8 && c.server[n - 1] == '/')
                        c.server[--n] = 0;
                v = json_object_get(cl, "insecure-skip-tls-verify");
                c.insecure = json_is_true(v);
                r = read_credential(cl, "certificate-authority", "cluster", path, dir, &c.ca, err);
        }
        if (r >= 0 && !(u = named(root, "users", "user", c.user, path, err)))
                r = -EINVAL;
        if (r >= 0)
                r = load_user(u, path, dir, &c, err);
        if (r < 0) {
                kube_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

int kube_config_load(const char *path, KubeConfig *ret, CubError *err) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = cub_read_file(path, KUBECONFIG_MAX, &buf, &len, err);
        if (r < 0)
                return r;
        return kube_config_decode(buf, len, path, ret, err);
}
