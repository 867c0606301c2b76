/* SPDX-License-Identifier: Apache-2.0 */
/* A container's env from the API server: envFrom (every key of a ConfigMap
 * or Secret, prefixed) and env[].valueFrom.configMapKeyRef/secretKeyRef, as
 * kubelet's makeEnvironmentVariables takes them, and the Services'
 * variables (kubelet's getServiceEnvVarMap); and the credentials of the
 * pod's image pull secrets for its image (kubelet's keyring). Resolved on
 * the loop when a sync is submitted (the data is the cluster layer's),
 * handed to the worker in the container's config, and used only when the
 * container is created: a changed ConfigMap changes no running container's
 * env. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cluster/pullcreds.h"
#include "../util/cleanup.h"
#include "agent-internal.h"

/* 1 here (*ret NULL: it does not exist), 0 asked for, < 0 failing */
static int keys(Agent *a, const Pod *pod, bool secret, const char *name, const json_t **ret, CubError *err) {
        *ret = NULL;
        return kube_projected_keys(kube_source_projected(a->kube), secret, pod->namespace_, name, ret, err);
}

/* kubelet's words for an object that cannot be had into *ret (1); 0 when
 * it is here or may be left out */
static int unavailable(int r, const json_t *o, bool secret, const char *name, bool optional, const CubError *e,
                       char **ret) {
        if (r > 0 && (o || optional))
                return 0;
        if (r > 0)
                r = asprintf(ret, "%s \"%s\" not found", secret ? "secret" : "configmap", name);
        else if (r == 0)
                r = asprintf(ret, "%s \"%s\": not yet received from the API server", secret ? "secret" : "configmap",
                             name);
        else
                r = asprintf(ret, "%s", e->msg);
        return r < 0 ? -ENOMEM : 1;
}

static int cmp_str(const void *x, const void *y) {
        return strcmp(*(const char *const *) x, *(const char *const *) y);
}

/* envFrom i's pairs appended to *l (its keys sorted, as a deterministic
 * order; a key that is no variable name left out) */
static int append_from(const PodEnvFrom *ef, const json_t *o, char ***l) {
        _cleanup_free_ const char **names = calloc(json_object_size(o) + 1, sizeof(char *));
        size_t m = 0;
        const char *k;
        json_t *v;

        if (!names)
                return -ENOMEM;
        json_object_foreach((json_t *) o, k, v) names[m++] = k;
        qsort(names, m, sizeof(char *), cmp_str);
        for (size_t i = 0; i < m; i++) {
                _cleanup_free_ char *name = NULL;

                if (asprintf(&name, "%s%s", ef->prefix, names[i]) < 0) {
                        name = NULL;
                        return -ENOMEM;
                }
                if (pod_env_name_valid(name) &&
                    worker_kv_push(l, name, json_string_value(json_object_get(o, names[i]))) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* the pull secrets that are here (a missing or failing one is passed over,
 * as kubelet's "Unable to retrieve some image pull secrets") and the
 * credentials of theirs that match the image */
static int pull_auths(Agent *a, const Pod *pod, const PodContainer *c, WorkerContainerConfig *cfg) {
        size_t n = pod->image_pull_secrets.n, m = 0, k = 0;
        _cleanup_free_ const json_t **objs = calloc(n + 1, sizeof(json_t *));
        KubePullCred *creds = NULL;
        int r;

        if (!objs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                CubError e = {};

                if (keys(a, pod, true, pod->image_pull_secrets.items[i], &objs[i], &e) <= 0)
                        objs[i] = NULL;
        }
        r = kube_pull_creds(objs, (const char *const *) pod->image_pull_secrets.items, n, c->image ? c->image : "",
                            &creds, &m, NULL);
        if (r < 0 || m == 0)
                return r;
        cfg->pull_auths = calloc(m, sizeof(*cfg->pull_auths));
        if (!cfg->pull_auths) {
                kube_pull_creds_free(creds, m);
                return -ENOMEM;
        }
        for (; k < m; k++) {
                cfg->pull_auths[k] = (WorkerPullAuth){ .username = creds[k].username, .password = creds[k].password };
                creds[k].username = creds[k].password = NULL;
        }
        cfg->n_pull_auths = m;
        kube_pull_creds_free(creds, m);
        return 0;
}

int agent_cluster_container_env(Agent *a, const Pod *pod, const PodContainer *c, WorkerContainerConfig *cfg) {
        int r = 0;

        if (!a->kube)
                return 0;
        if (pod->image_pull_secrets.n > 0 && (r = pull_auths(a, pod, c, cfg)) < 0)
                return r;
        if (kube_source_services_wanted(a->kube, pod))
                return (cfg->env_error =
                                strdup("services have not yet been read at least once, cannot construct envvars"))
                               ? 0
                               : -ENOMEM;
        {
                CubError e = {};

                r = kube_service_env(kube_services_set(kube_source_services(a->kube)), pod->namespace_,
                                     pod_service_links(pod), &cfg->service_env, &e);
                if (r < 0)
                        return r;
        }
        if (!pod_container_has_api_env(c))
                return 0;
        for (size_t i = 0; i < c->n_env_from && r == 0 && !cfg->env_error; i++) {
                const PodEnvFrom *ef = &c->env_from[i];
                const json_t *o;
                CubError e = {};
                int k = keys(a, pod, ef->secret, ef->name, &o, &e);

                r = unavailable(k, o, ef->secret, ef->name, ef->optional, &e, &cfg->env_error);
                if (r == 0 && o)
                        r = append_from(ef, o, &cfg->env_from);
        }
        if (r >= 0 && !cfg->env_error && c->n_env > 0) {
                cfg->env_refs = calloc(c->n_env, sizeof(char *));
                cfg->n_env_refs = cfg->env_refs ? c->n_env : 0;
                if (!cfg->env_refs)
                        r = -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && cfg->env_refs && !cfg->env_error && i < c->n_env; i++) {
                const PodEnvVar *ev = &c->env[i];
                bool secret = ev->kind == POD_ENV_SECRET_KEY;
                const json_t *o, *v;
                CubError e = {};
                int k;

                if (ev->kind != POD_ENV_CONFIG_MAP_KEY && !secret)
                        continue;
                k = keys(a, pod, secret, ev->ref_name, &o, &e);
                r = unavailable(k, o, secret, ev->ref_name, ev->ref_optional, &e, &cfg->env_error);
                /* a missing key: pod_env_resolve says kubelet's words (or leaves an optional one out) */
                if (r == 0 && o && json_is_string(v = json_object_get(o, ev->ref_key)) &&
                    !(cfg->env_refs[i] = strndup(json_string_value(v), json_string_length(v))))
                        r = -ENOMEM;
        }
        return r < 0 ? r : 0;
}

/* the volume manager's hooks (LcEnv.api_files, api_generation): the source's
 * files of the API server's data */
int agent_cluster_api_files(void *loop, const Pod *pod, const PodDownwardFile *f, VolApiFile **ret, size_t *ret_n,
                            CubError *err) {
        return kube_source_api_files(((Agent *) loop)->kube, pod, f, ret, ret_n, err);
}

uint64_t agent_cluster_api_generation(void *loop) {
        Agent *a = loop;

        /* and the pods' labels and annotations: their downward API files */
        return kube_source_generation(a->kube) + a->table.meta_generation;
}
