/* SPDX-License-Identifier: Apache-2.0 */
/* The RELIST job: what the runtime holds of cubelet's pods. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "worker-internal.h"

static char *xstrdup(const char *s) {
        return strdup(s ? s : "");
}

/* RELIST: every sandbox and container carrying cubelet's label, grouped by
 * pod UID; the latest attempt of each container, with its exit status. */
int worker_job_relist(WorkerPool *p, WorkerJob *j, CubError *err) {
        static const char *const selector[] = { WORKER_LABEL_MANAGED, "true", NULL };
        CubError serr = {};
        CriSandbox *sb = NULL;
        CriContainer *ct = NULL;
        size_t n_sb = 0, n_ct = 0;
        WorkerObserved *obs;
        size_t n_obs = 0;
        int r;

        r = cri_list_pod_sandboxes(p->cri, selector, &sb, &n_sb, err);
        if (r < 0)
                return r;
        /* kubelet's runtime state: RuntimeReady and NetworkReady (a failed
         * Status leaves the last known conditions as they were) */
        if (j->want_status)
                j->status_known = cri_runtime_status(p->cri, &j->status, &serr) >= 0;
        r = cri_list_containers(p->cri, NULL, selector, &ct, &n_ct, err);
        if (r < 0) {
                cri_sandboxes_free(sb, n_sb);
                return r;
        }
        obs = calloc(n_sb + 1, sizeof(WorkerObserved));
        if (!obs) {
                r = cub_err_set(err, ENOMEM, "out of memory");
                goto out;
        }
        for (size_t i = 0; i < n_sb; i++) {
                const char *uid = cri_kv_get(sb[i].labels, WORKER_LABEL_UID);
                WorkerObserved *o = NULL;

                if (!uid)
                        continue;
                for (size_t k = 0; k < n_obs; k++)
                        if (strcmp(obs[k].uid, uid) == 0)
                                o = &obs[k];
                if (!o) {
                        o = &obs[n_obs++];
                        o->uid = xstrdup(uid);
                        o->attempt = sb[i].attempt;
                }
                if (sb[i].state == CRI_SANDBOX_READY)
                        o->ready = true;
                if (!o->config_hash || sb[i].attempt >= o->attempt) {
                        free(o->name);
                        free(o->namespace_);
                        free(o->config_hash);
                        free(o->cgroup);
                        o->name = xstrdup(cri_kv_get(sb[i].labels, WORKER_LABEL_NAME));
                        o->namespace_ = xstrdup(cri_kv_get(sb[i].labels, WORKER_LABEL_NAMESPACE));
                        o->config_hash = xstrdup(cri_kv_get(sb[i].labels, WORKER_LABEL_HASH));
                        o->cgroup = xstrdup(cri_kv_get(sb[i].labels, WORKER_LABEL_CGROUP));
                        o->grace = worker_label_int(sb[i].labels, WORKER_LABEL_GRACE, 30);
                        o->attempt = sb[i].attempt;
                }
        }
        /* network: the pod IP of each pod's newest ready sandbox (cached per sandbox) */
        worker_sandbox_ips_prune(p, sb, n_sb);
        for (size_t k = 0; k < n_obs; k++) {
                const CriSandbox *best = NULL;
                CubError e = {};

                for (size_t i = 0; i < n_sb; i++) {
                        const char *uid = cri_kv_get(sb[i].labels, WORKER_LABEL_UID);

                        if (uid && strcmp(uid, obs[k].uid) == 0 && sb[i].state == CRI_SANDBOX_READY &&
                            (!best || sb[i].attempt > best->attempt))
                                best = &sb[i];
                }
                if (best && worker_sandbox_ip(p, best->id, &obs[k].pod_ip, &e) < 0)
                        obs[k].pod_ip_unknown = true;
        }
        for (size_t i = 0; i < n_ct; i++) {
                const char *uid = cri_kv_get(ct[i].labels, WORKER_LABEL_UID);
                WorkerObserved *o = NULL;
                WorkerContainer *c = NULL;

                for (size_t k = 0; uid && k < n_obs; k++)
                        if (strcmp(obs[k].uid, uid) == 0)
                                o = &obs[k];
                if (!o)
                        continue;
                for (size_t k = 0; k < o->n_containers; k++)
                        if (strcmp(o->containers[k].name, ct[i].name) == 0)
                                c = &o->containers[k];
                if (c && c->attempt > ct[i].attempt)
                        continue;
                if (!c) {
                        WorkerContainer *nc = realloc(o->containers, (o->n_containers + 1) * sizeof(*nc));
                        if (!nc) {
                                r = cub_err_set(err, ENOMEM, "out of memory");
                                goto out;
                        }
                        o->containers = nc;
                        c = &nc[o->n_containers++];
                } else
                        worker_container_done(c);
                *c = (WorkerContainer){
                        .id = xstrdup(ct[i].id),
                        .name = xstrdup(ct[i].name),
                        .init = cri_kv_get(ct[i].labels, WORKER_LABEL_INIT) &&
                                strcmp(cri_kv_get(ct[i].labels, WORKER_LABEL_INIT), "true") == 0,
                        .attempt = ct[i].attempt,
                        .state = ct[i].state,
                        /* probes and hooks: a running container's StartedAt, as near as
                         * ListContainers says (its creation; initialDelaySeconds counts
                         * from it); an ended one gets its own below */
                        .started_at = ct[i].created_at,
                        .reason = xstrdup(""),
                        .devices = cri_kv_get(ct[i].labels, WORKER_LABEL_DEVICES)
                                           ? xstrdup(cri_kv_get(ct[i].labels, WORKER_LABEL_DEVICES))
                                           : NULL,
                };
        }
        /* exit codes and reasons of the containers that ended */
        for (size_t k = 0; k < n_obs; k++)
                for (size_t i = 0; i < obs[k].n_containers; i++) {
                        WorkerContainer *c = &obs[k].containers[i];
                        CriContainerStatus st;
                        CubError e = {};

                        /* running containers need nothing more: only ended ones are asked for
                         * their exit code, reason and times (a status call per running container
                         * and relist cost a third of a CPU with 110 pods) */
                        if (c->state != CRI_CONTAINER_EXITED)
                                continue;
                        if (cri_container_status(p->cri, c->id, &st, &e) < 0)
                                continue; /* gone meanwhile: the next relist sees it */
                        c->state = st.state;
                        c->exit_code = st.exit_code;
                        c->started_at = st.started_at;
                        c->finished_at = st.finished_at;
                        c->message = worker_term_message_of(&st);
                        free(c->reason);
                        c->reason = TAKE_PTR(st.reason);
                        cri_container_status_done(&st);
                }
        j->observed = TAKE_PTR(obs);
        j->n_observed = n_obs;
        r = 0;
out:
        worker_observed_free(obs, n_obs);
        cri_sandboxes_free(sb, n_sb);
        cri_containers_free(ct, n_ct);
        return r;
}
