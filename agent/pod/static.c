/* SPDX-License-Identifier: Apache-2.0 */
/* Static pod treatment, as kubelet's config/common.go applyDefaults. */
#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

static int md5_hex(const char *a, const char *b, const char *c, char out[static POD_UID_DERIVED_MAX]) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        int ok;

        if (!ctx)
                return -ENOMEM;
        ok = EVP_DigestInit_ex(ctx, EVP_md5(), NULL) && EVP_DigestUpdate(ctx, a, strlen(a)) &&
             EVP_DigestUpdate(ctx, b, strlen(b)) && EVP_DigestUpdate(ctx, c, strlen(c)) &&
             EVP_DigestFinal_ex(ctx, md, &mdlen);
        EVP_MD_CTX_free(ctx);
        if (!ok || mdlen != 16)
                return -EIO;
        for (unsigned i = 0; i < 16; i++)
                (void) snprintf(out + 2 * i, 3, "%02x", md[i]);
        return 0;
}

static int map_set(PodStringMap *m, const char *k, const char *v) {
        char **nk, **nv;

        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->keys[i], k) == 0) {
                        char *dup = strdup(v);
                        if (!dup)
                                return -ENOMEM;
                        free(m->values[i]);
                        m->values[i] = dup;
                        return 0;
                }
        nk = realloc(m->keys, (m->n + 2) * sizeof(char *));
        if (!nk)
                return -ENOMEM;
        m->keys = nk;
        nv = realloc(m->values, (m->n + 2) * sizeof(char *));
        if (!nv)
                return -ENOMEM;
        m->values = nv;
        m->keys[m->n] = strdup(k);
        m->values[m->n] = strdup(v);
        if (!m->keys[m->n] || !m->values[m->n]) {
                free(m->keys[m->n]);
                free(m->values[m->n]);
                return -ENOMEM;
        }
        m->n++;
        m->keys[m->n] = m->values[m->n] = NULL;
        return 0;
}

int pod_static_uid(const char *canonical, const char *node_name, PodSourceKind kind, const char *source,
                   char ret_uid[static POD_UID_DERIVED_MAX], CubError *err) {
        _cleanup_free_ char *src = NULL, *host = NULL;
        int r;

        if (asprintf(&src, "%s:%s", kind == POD_SOURCE_HTTP ? "url" : "file", source) < 0 ||
            asprintf(&host, "host:%s", node_name) < 0) {
                src = NULL;
                host = NULL;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        r = md5_hex(canonical ? canonical : "", kind == POD_SOURCE_HTTP ? "" : host, src, ret_uid);
        if (r < 0)
                return cub_err_set(err, -r, "%s: computing the pod UID failed", source);
        return 0;
}

int pod_apply_static(Pod *pod, const char *canonical, const char *node_name, PodSourceKind kind, const char *source,
                     CubError *err) {
        _cleanup_free_ char *name = NULL, *lower = NULL;
        char uid[POD_UID_DERIVED_MAX];
        int r;

        lower = strdup(node_name);
        if (!lower)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (char *p = lower; *p; p++)
                *p = (char) tolower((unsigned char) *p);
        if (asprintf(&name, "%s-%s", pod->name, lower) < 0) {
                name = NULL;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        if (!pod_dns1123_subdomain(name))
                return cub_err_set(err, EINVAL,
                                   "%s: metadata.name: Invalid value: \"%s\": the static pod name (name-node) is not a "
                                   "lowercase RFC 1123 subdomain of at most 253 characters",
                                   source, name);

        r = pod_static_uid(canonical, node_name, kind, source, uid, err);
        if (r < 0)
                return r;
        free(pod->config_hash);
        pod->config_hash = strdup(uid);
        if (!pod->config_hash || (!pod->uid && !(pod->uid = strdup(uid))))
                return cub_err_set(err, ENOMEM, "out of memory");
        free(pod->name);
        pod->name = TAKE_PTR(name);
        free(pod->node_name);
        pod->node_name = strdup(node_name);
        if (!pod->node_name)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = map_set(&pod->annotations, "kubernetes.io/config.source", kind == POD_SOURCE_HTTP ? "http" : "file");
        if (r >= 0)
                r = map_set(&pod->annotations, "kubernetes.io/config.hash", pod->uid);
        if (r < 0)
                return cub_err_set(err, ENOMEM, "out of memory");

        if (kind == POD_SOURCE_FILE) {
                /* static file pods tolerate NoExecute taints (AddOrUpdateTolerationInPod: a toleration
                 * with the same key, operator, value and effect is replaced, not duplicated) */
                PodToleration *t;

                for (size_t i = 0; i < pod->n_tolerations; i++) {
                        PodToleration *o = &pod->tolerations[i];

                        if ((!o->key || !*o->key) && o->op && strcmp(o->op, "Exists") == 0 &&
                            (!o->value || !*o->value) && o->effect && strcmp(o->effect, "NoExecute") == 0) {
                                o->toleration_seconds = 0;
                                o->toleration_seconds_set = false;
                                return 0;
                        }
                }
                t = realloc(pod->tolerations, (pod->n_tolerations + 1) * sizeof(PodToleration));

                if (!t)
                        return cub_err_set(err, ENOMEM, "out of memory");
                pod->tolerations = t;
                t[pod->n_tolerations] = (PodToleration){ .op = strdup("Exists"), .effect = strdup("NoExecute") };
                pod->n_tolerations++;
                if (!t[pod->n_tolerations - 1].op || !t[pod->n_tolerations - 1].effect)
                        return cub_err_set(err, ENOMEM, "out of memory");
        }
        return 0;
}
