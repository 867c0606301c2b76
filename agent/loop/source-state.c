/* SPDX-License-Identifier: Apache-2.0 */
/* What the sources left for the others to read, below the sources and the
 * merge: the manifest directory's and the manifest URL's errors (their one
 * writer: cubelet status shows them), whether a pod is the URL's, and
 * kubelet's sourcesReady. The sources (source-dir.c, source-http.c) and
 * the merge (merge.c) call down here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../config/podsrc.h"
#include "../util/log.h"
#include "agent-internal.h"

/* Agent.errs: its view first, then what only this file reads */
typedef struct SourceErrors {
        AgentSourceErrors view;
        AgentError *dir;
        AgentError *url; /* [0]: the last fetch's error ("" if none); then the set's */
        size_t n_url;
} SourceErrors;

static SourceErrors *errs_of(const Agent *a) {
        return (SourceErrors *) a->errs;
}

bool agent_pod_from_url(const Agent *a, const LcPod *p) {
        return a->core.opt.manifest_url && strcmp(p->spec->source, a->core.opt.manifest_url) == 0;
}

bool agent_pod_from_api(const LcPod *p) {
        return strcmp(p->spec->source, AGENT_SOURCE_API) == 0;
}

bool agent_pod_from_dir(const Agent *a, const LcPod *p) {
        return !agent_pod_from_url(a, p) && !agent_pod_from_api(p);
}

bool agent_sources_ready(const Agent *a) {
        const PodsrcHttp *h = a->url ? a->url->source : NULL;

        return (!h || podsrc_http_stats(h)->have_set || podsrc_http_stats(h)->from_cache) &&
               (!a->kube || kube_source_synced(a->kube));
}

bool agent_pod_held(const void *a, const char *uid) {
        const KubeSource *s = ((const Agent *) a)->kube;

        return s && kube_source_holds(s, uid);
}

bool agent_pods_held(const Agent *a) {
        return a->kube && kube_source_n_held(a->kube) > 0;
}

/* ---- the manifest directory's errors ----------------------------------------- */

/* Appends (source, message) to a list of errors: 0, or -ENOMEM with the
 * list unchanged. */
static int error_push(AgentError **l, size_t *n, const char *source, const char *message) {
        AgentError *nl = realloc(*l, (*n + 1) * sizeof(*nl));

        if (!nl)
                return -ENOMEM;
        *l = nl;
        nl[*n].source = strdup(source);
        nl[*n].message = strdup(message);
        if (!nl[*n].source || !nl[*n].message) {
                free(nl[*n].source);
                free(nl[*n].message);
                return -ENOMEM;
        }
        (*n)++;
        return 0;
}

void agent_source_dir_errors_clear(Agent *a) {
        for (size_t k = 0; k < errs_of(a)->view.n_dir; k++) {
                free(errs_of(a)->dir[k].source);
                free(errs_of(a)->dir[k].message);
        }
        free(errs_of(a)->dir);
        errs_of(a)->dir = NULL;
        errs_of(a)->view.n_dir = 0;
}

static bool error_known(Agent *a, const char *message) {
        for (size_t k = 0; k < errs_of(a)->view.n_dir; k++)
                if (strcmp(errs_of(a)->dir[k].message, message) == 0)
                        return true;
        return false;
}

void agent_source_dir_set_errors(Agent *a, const PodsrcSet *set) {
        AgentError *ne = calloc(set->n + 1, sizeof(AgentError));
        size_t n = 0;

        if (!ne)
                return;
        for (size_t i = 0; i < set->n; i++) {
                if (!set->items[i].error)
                        continue;
                if (!error_known(a, set->items[i].error)) {
                        agent_metrics_manifest_error(a);
                        cub_log(LOG_ERR, "%s, skipping this manifest", set->items[i].error);
                }
                ne[n].source = strdup(set->items[i].path);
                ne[n].message = strdup(set->items[i].error);
                n++;
        }
        agent_source_dir_errors_clear(a);
        errs_of(a)->dir = ne;
        errs_of(a)->view.n_dir = n;
}

/* The error of one file: replaced, or dropped when message is NULL. */
void agent_source_dir_file_error(Agent *a, const char *path, const char *message) {
        for (size_t k = 0; k < errs_of(a)->view.n_dir; k++)
                if (strcmp(errs_of(a)->dir[k].source, path) == 0) {
                        if (message && strcmp(errs_of(a)->dir[k].message, message) == 0)
                                return;
                        free(errs_of(a)->dir[k].source);
                        free(errs_of(a)->dir[k].message);
                        errs_of(a)->dir[k] = errs_of(a)->dir[--errs_of(a)->view.n_dir];
                        break;
                }
        if (!message)
                return;
        cub_log(LOG_ERR, "%s, skipping this manifest", message);
        if (error_push(&errs_of(a)->dir, &errs_of(a)->view.n_dir, path, message) >= 0)
                agent_metrics_manifest_error(a);
}

/* ---- the manifest URL's errors ----------------------------------------------- */

static void url_errors_clear(Agent *a, bool fetch_only) {
        size_t k = 0;

        for (size_t i = 0; i < errs_of(a)->n_url; i++) {
                if (fetch_only && i > 0) {
                        errs_of(a)->url[k++] = errs_of(a)->url[i];
                        continue;
                }
                free(errs_of(a)->url[i].source);
                free(errs_of(a)->url[i].message);
        }
        errs_of(a)->n_url = k;
        if (k == 0) {
                free(errs_of(a)->url);
                errs_of(a)->url = NULL;
        }
}

/* Entry 0 is the fetch error ("" when the last fetch was good); then the
 * errors of the set in force (names the body defined twice). */
static void url_error_push(Agent *a, const char *message) {
        (void) error_push(&errs_of(a)->url, &errs_of(a)->n_url, a->core.opt.manifest_url, message);
}

void agent_source_http_fetch_error(Agent *a, const char *message) {
        if (errs_of(a)->n_url == 0)
                url_error_push(a, "");
        if (errs_of(a)->n_url == 0 || strcmp(errs_of(a)->url[0].message, message) == 0)
                return;
        free(errs_of(a)->url[0].message);
        errs_of(a)->url[0].message = strdup(message);
        if (!errs_of(a)->url[0].message)
                url_errors_clear(a, false);
}

void agent_source_http_new_set(Agent *a) {
        url_errors_clear(a, false);
        url_error_push(a, "");
}

void agent_source_http_error(Agent *a, const char *message) {
        cub_log(LOG_ERR, "%s, skipping this pod", message);
        url_error_push(a, message);
}

void agent_source_http_errors_free(Agent *a) {
        if (a->errs)
                url_errors_clear(a, false);
}

int agent_errors_init(Agent *a) {
        SourceErrors *e = calloc(1, sizeof(*e));

        if (!e)
                return -ENOMEM;
        a->errs = &e->view;
        return 0;
}

const AgentError *agent_source_dir_errors(const Agent *a, size_t *ret_n) {
        *ret_n = a->errs->n_dir;
        return errs_of(a)->dir;
}

const AgentError *agent_source_http_errors(const Agent *a, size_t *ret_n) {
        *ret_n = errs_of(a)->n_url;
        return errs_of(a)->url;
}

void agent_errors_free(Agent *a) {
        if (!a->errs)
                return;
        agent_source_dir_errors_clear(a);
        url_errors_clear(a, false);
        free(errs_of(a));
        a->errs = NULL;
}
