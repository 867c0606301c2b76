/* SPDX-License-Identifier: Apache-2.0 */
/* The API server's data in its pods' volumes and env: what the
 * ServiceAccount admission plugin adds to every pod (kube-api-access-*: a
 * token bound to the pod, the kube-root-ca.crt ConfigMap, the namespace),
 * configMap and secret volumes and projections, and env from ConfigMaps
 * and Secrets (envFrom, configMapKeyRef, secretKeyRef). The data is the
 * cluster layer's (agent/cluster/projected.c); a new pod waits out of the
 * set until its data is here (kubelet's pod waits in ContainerCreating for
 * its volumes), a running pod's volume is written again by the volume
 * manager when a token is renewed or a ConfigMap or Secret changed. A
 * container's env is taken once, when it is created (as kubelet's). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../volumes/volumes.h"
#include "agent-internal.h"

/* ret: 1 here, 0 asked for, < 0 failing; data (borrowed) */
static int want(Agent *a, const Pod *pod, const PodDownwardFile *f, const char **token, const json_t **cm,
                CubError *err) {
        if (f->source == POD_PROJECTION_SERVICE_ACCOUNT) {
                KubeTokenKey k = { .ns = pod->namespace_,
                                   .pod = pod->name,
                                   .uid = pod->uid,
                                   .service_account = pod->service_account_name ?: pod->service_account,
                                   .audience = f->audience,
                                   .expiration_seconds = f->expiration_seconds };

                return kube_projected_token(a->cluster.projected, &k, token, err);
        }
        return kube_projected_keys(a->cluster.projected, f->source == POD_PROJECTION_SECRET, pod->namespace_,
                                   f->ref_name, cm, err);
}

/* every item's files can be had: the token, an existing ConfigMap or
 * Secret with the keys asked for (a missing one that is not optional waits,
 * as kubelet's pod waits in ContainerCreating until it is created); and
 * every ConfigMap and Secret of the env has been answered for */
bool agent_cluster_volumes_ready(Agent *a, const Pod *pod, char *why, size_t size) {
        bool ready = true;

        if (size)
                why[0] = 0;
        if (!a->cluster.projected)
                return true;
        ready = agent_cluster_env_ready(a, pod);
        for (size_t i = 0; i < pod->n_volumes; i++)
                for (size_t k = 0; k < pod->volumes[i].n_items; k++) {
                        const PodDownwardFile *f = &pod->volumes[i].items[k];
                        VolApiFile *files = NULL;
                        size_t n = 0;
                        CubError err = {};

                        if (f->source == POD_PROJECTION_DOWNWARD_API)
                                continue;
                        /* every one asked for at once */
                        if (agent_cluster_api_files(a, pod, f, &files, &n, &err) < 0) {
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

int agent_cluster_api_files(void *loop, const Pod *pod, const PodDownwardFile *f, VolApiFile **ret, size_t *ret_n,
                            CubError *err) {
        Agent *a = loop;
        const char *token = NULL, *key;
        const json_t *cm = NULL, *v;
        VolApiFile *files = NULL;
        size_t n = 0;
        bool secret;
        int r;

        if (!a->cluster.projected)
                return cub_err_set(err, ENOTSUP, "no API server (--kubeconfig)");
        r = want(a, pod, f, &token, &cm, err);
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

uint64_t agent_cluster_api_generation(void *loop) {
        Agent *a = loop;

        /* and the pods' labels and annotations: their downward API files */
        return (a->cluster.projected ? kube_projected_generation(a->cluster.projected) : 0) +
               a->cluster.meta_generation;
}
