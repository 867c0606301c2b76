/* SPDX-License-Identifier: Apache-2.0 */
/* The API server's data in its pods' volumes and env: what the
 * ServiceAccount admission plugin adds to every pod (kube-api-access-*: a
 * token bound to the pod, the kube-root-ca.crt ConfigMap, the namespace),
 * configMap and secret volumes and projections, and env from ConfigMaps
 * and Secrets (envFrom, configMapKeyRef, secretKeyRef). The data is
 * projected.c's; a new pod waits out of the set until its data is here
 * (kubelet's pod waits in ContainerCreating for its volumes), a running
 * pod's volume is written again by the volume manager when a token is
 * renewed or a ConfigMap or Secret changed. A container's env is resolved
 * by the loop when it is created (agent/loop/cluster-env.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source.h"

/* 1 here (*ret NULL: it does not exist), 0 asked for, < 0 failing */
static int keys(KubeSource *s, const Pod *pod, bool secret, const char *name, const json_t **ret, CubError *err) {
        *ret = NULL;
        return kube_projected_keys(kube_source_projected(s), secret, pod->namespace_, name, ret, err);
}

/* kubelet waits for the Services' first list before it makes an API pod's
 * env (a static pod's is made from what is there); a list that fails with
 * the last set in the state directory (a node started offline) uses that */
bool kube_source_services_wanted(const KubeSource *s, const Pod *pod) {
        const KubeServices *sv = kube_source_services(s);

        return !pod_is_static(pod) && !kube_services_synced(sv) &&
               !(kube_services_failing(sv) && kube_services_cached(sv));
}

bool kube_source_env_ready(KubeSource *s, const Pod *pod) {
        /* held while the list is on its way; one that fails shows as kubelet's error */
        bool ready = !kube_source_services_wanted(s, pod) || kube_services_failing(kube_source_services(s));

        for (size_t i = 0; i < pod->image_pull_secrets.n; i++) {
                const json_t *o;
                CubError err = {};

                if (keys(s, pod, true, pod->image_pull_secrets.items[i], &o, &err) == 0)
                        ready = false;
        }
        for (size_t k = 0; k < pod->n_init_containers + pod->n_containers; k++) {
                const PodContainer *c = pod_container_at(pod, k, NULL);
                const json_t *o;
                CubError err = {};

                /* every one asked for at once; only what is on its way holds the pod */
                for (size_t i = 0; i < c->n_env_from; i++)
                        if (keys(s, pod, c->env_from[i].secret, c->env_from[i].name, &o, &err) == 0)
                                ready = false;
                for (size_t i = 0; i < c->n_env; i++)
                        if ((c->env[i].kind == POD_ENV_CONFIG_MAP_KEY || c->env[i].kind == POD_ENV_SECRET_KEY) &&
                            keys(s, pod, c->env[i].kind == POD_ENV_SECRET_KEY, c->env[i].ref_name, &o, &err) == 0)
                                ready = false;
        }
        return ready;
}

/* ret: 1 here, 0 asked for, < 0 failing; data (borrowed) */
static int want(KubeSource *s, const Pod *pod, const PodDownwardFile *f, const char **token, const json_t **cm,
                CubError *err) {
        if (f->source == POD_PROJECTION_SERVICE_ACCOUNT) {
                KubeTokenKey k = { .ns = pod->namespace_,
                                   .pod = pod->name,
                                   .uid = pod->uid,
                                   .service_account = pod->service_account_name ?: pod->service_account,
                                   .audience = f->audience,
                                   .expiration_seconds = f->expiration_seconds };

                return kube_projected_token(kube_source_projected(s), &k, token, err);
        }
        return kube_projected_keys(kube_source_projected(s), f->source == POD_PROJECTION_SECRET, pod->namespace_,
                                   f->ref_name, cm, err);
}

/* every item's files can be had: the token, an existing ConfigMap or
 * Secret with the keys asked for (a missing one that is not optional waits,
 * as kubelet's pod waits in ContainerCreating until it is created); and
 * every ConfigMap and Secret of the env has been answered for */
bool kube_source_volumes_ready(KubeSource *s, const Pod *pod, char *why, size_t size) {
        bool ready = true;

        if (size)
                why[0] = 0;
        if (!s)
                return true;
        ready = kube_source_env_ready(s, pod);
        for (size_t i = 0; i < pod->n_volumes; i++)
                for (size_t k = 0; k < pod->volumes[i].n_items; k++) {
                        const PodDownwardFile *f = &pod->volumes[i].items[k];
                        VolApiFile *files = NULL;
                        size_t n = 0;
                        CubError err = {};

                        if (f->source == POD_PROJECTION_DOWNWARD_API)
                                continue;
                        /* every one asked for at once */
                        if (kube_source_api_files(s, pod, f, &files, &n, &err) < 0) {
                                /* kubelet's FailedMount text; not for what is merely on its way */
                                if (size && !why[0] && err.code != EAGAIN)
                                        (void) snprintf(why, size, "MountVolume.SetUp failed for volume \"%s\" : %s",
                                                        pod->volumes[i].name, err.msg);
                                ready = false;
                        } else
                                vol_api_files_free(files, n);
                }
        return ready;
}

static int add(VolApiFile **files, size_t *n, const char *path, const char *data, size_t size, CubError *err) {
        VolApiFile *more = realloc(*files, (*n + 1) * sizeof(**files));

        if (!more)
                return cub_err_set(err, ENOMEM, "out of memory");
        *files = more;
        more[*n] = (VolApiFile){ .path = strdup(path), .data = malloc(size + 1), .size = size };
        if (more[*n].data) {
                memcpy(more[*n].data, data, size);
                more[*n].data[size] = '\0';
        }
        if (!more[*n].path || !more[*n].data) {
                free(more[*n].path);
                free(more[*n].data);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        (*n)++;
        return 0;
}

int kube_source_api_files(KubeSource *s, const Pod *pod, const PodDownwardFile *f, VolApiFile **ret, size_t *ret_n,
                          CubError *err) {
        const char *token = NULL, *key;
        const json_t *cm = NULL, *v;
        VolApiFile *files = NULL;
        size_t n = 0;
        bool secret;
        int r;

        if (!s)
                return cub_err_set(err, ENOTSUP, "no API server (--kubeconfig)");
        r = want(s, pod, f, &token, &cm, err);
        if (r == 0)
                r = cub_err_set(err, EAGAIN, "not yet received from the API server");
        if (r < 0)
                return f->source == POD_PROJECTION_SERVICE_ACCOUNT ? cub_err_wrap(err, "failed to fetch token: ") : r;
        r = 0; /* want()'s 1: here */
        secret = f->source == POD_PROJECTION_SECRET;
        if (f->source == POD_PROJECTION_SERVICE_ACCOUNT)
                r = add(&files, &n, f->path, token, strlen(token), err);
        else if (!cm) {
                /* kubelet's messages (configmap.go, secret.go, projected.go collectData) */
                if (!f->optional)
                        r = cub_err_set(err, ENOENT, "%s \"%s\" not found", secret ? "secret" : "configmap",
                                        f->ref_name);
        } else if (!f->key) {
                json_object_foreach((json_t *) cm, key, v) {
                        if (r == 0 && json_is_string(v))
                                r = add(&files, &n, key, json_string_value(v), json_string_length(v), err);
                }
        } else if (json_is_string(v = json_object_get(cm, f->key)))
                r = add(&files, &n, f->path, json_string_value(v), json_string_length(v), err);
        else if (!f->optional)
                r = secret ? cub_err_set(err, ENOENT, "references non-existent secret key: %s", f->key)
                           : cub_err_set(err, ENOENT, "configmap references non-existent config key: %s", f->key);
        if (r < 0) {
                vol_api_files_free(files, n);
                return r;
        }
        *ret = files;
        *ret_n = n;
        return 0;
}

uint64_t kube_source_generation(const KubeSource *s) {
        return s ? kube_projected_generation(kube_source_projected(s)) : 0;
}
