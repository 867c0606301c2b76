/* SPDX-License-Identifier: Apache-2.0 */
/* The KILL job and the teardown of a pod's sandboxes, which sync.c also
 * uses for the stale ones. */
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <stdio.h>

#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/time.h"
#include "worker-internal.h"

/* the pod's group must be empty before its rmdir: at most this long */
#define WORKER_CGROUP_EMPTY_TIMEOUT_USEC (5 * CUB_USEC_PER_SEC)

/* ---- probes and hooks: preStop, and one container stopped ---------------------- */

void worker_hook_target(const PodContainer *c, const PodHandler *h, const char *id, const char *pod_ip,
                        int64_t timeout_s, ProbeTarget *ret) {
        *ret = (ProbeTarget){ .kind = h->kind, .container_id = id, .timeout_s = timeout_s };
        switch (h->kind) {
        case POD_HANDLER_EXEC:
                ret->command = (const char *const *) h->exec.command.items;
                break;
        case POD_HANDLER_HTTP_GET:
                /* kubelet's: the pod's IP unless the handler names a host (a
                 * host-network pod, or an IP not known yet: the node's loopback) */
                ret->host = h->http_get.host ? h->http_get.host : pod_ip && *pod_ip ? pod_ip : "127.0.0.1";
                ret->scheme = h->http_get.scheme;
                ret->path = h->http_get.path;
                ret->headers = h->http_get.headers;
                ret->n_headers = h->http_get.n_headers;
                if (pod_port_resolve(c, &h->http_get.port, &ret->port) < 0)
                        ret->port = 0;
                break;
        case POD_HANDLER_SLEEP:
                ret->sleep_s = h->sleep.seconds;
                break;
        default:
                break;
        }
}

int64_t worker_pre_stop(WorkerPool *p, const Pod *pod, const PodContainer *c, const char *id, const char *pod_ip,
                        int64_t grace) {
        uint64_t start = worker_now_usec();
        int64_t used;
        ProbeTarget t;
        CubError err = {};

        if (!c || !c->lifecycle.pre_stop_set || grace <= 0)
                return grace;
        worker_hook_target(c, &c->lifecycle.pre_stop, id, pod_ip, grace, &t);
        if (probe_run_hook(p->cri, &t, &err) < 0)
                cub_log(LOG_WARNING, "pod %s/%s: container '%s': PreStop hook failed: %s", pod->namespace_, pod->name,
                        c->name, err.msg);
        used = (int64_t) ((worker_now_usec() - start) / 1000000ULL);
        /* kubelet: what is left of the grace period, at least 2 s */
        return grace - used < 2 ? 2 : grace - used;
}

static const PodContainer *container_named(const Pod *pod, const char *name) {
        for (size_t k = 0; pod && name && k < pod->n_init_containers + pod->n_containers; k++) {
                const PodContainer *c = pod_container_at(pod, k, NULL);

                if (strcmp(c->name, name) == 0)
                        return c;
        }
        return NULL;
}

int worker_job_stop_container(WorkerPool *p, WorkerJob *j, CubError *err) {
        const Pod *pod = j->spec->pod;
        const PodContainer *c = j->container < pod->n_init_containers + pod->n_containers
                                        ? pod_container_at(pod, j->container, NULL)
                                        : NULL;
        int64_t grace = worker_pre_stop(p, pod, c, j->container_id, j->pod_ip, j->grace);

        return cri_stop_container(p->cri, j->container_id, grace, err);
}

/* Stops and removes every container of a sandbox (grace split over them,
 * at least 2 s each, as kubelet's minimum; grace 0 is SIGKILL at once),
 * then the sandbox; pod (NULL: unknown) gives the preStop hooks. */
static int teardown_sandbox(WorkerPool *p, const Pod *pod, const char *sandbox_id, int64_t grace, CubError *err) {
        CriContainer *ct = NULL;
        size_t n = 0;
        uint64_t deadline = worker_now_usec() + (uint64_t) (grace > 0 ? grace : 0) * 1000000ULL;
        _cleanup_free_ char *pod_ip = NULL;
        int r;

        r = cri_list_containers(p->cri, sandbox_id, NULL, &ct, &n, err);
        if (r < 0)
                return r;
        /* the preStop httpGet hooks' target (network) */
        if (pod && !pod->host_network)
                (void) worker_sandbox_ip(p, sandbox_id, &pod_ip, NULL);
        for (size_t i = 0; i < n; i++) {
                int64_t left =
                        (int64_t) ((deadline > worker_now_usec() ? deadline - worker_now_usec() : 0) / 1000000ULL);

                if (ct[i].state == CRI_CONTAINER_RUNNING || ct[i].state == CRI_CONTAINER_CREATED) {
                        /* grace 0 (a hard eviction) kills at once: the memory is needed now;
                         * otherwise at least kubelet's 2 s, after the preStop hook */
                        if (grace > 0 && ct[i].state == CRI_CONTAINER_RUNNING)
                                left = worker_pre_stop(p, pod, container_named(pod, ct[i].name), ct[i].id, pod_ip,
                                                       left < 2 ? 2 : left);
                        r = cri_stop_container(p->cri, ct[i].id, grace <= 0 ? 0 : left < 2 ? 2 : left, err);
                        if (r < 0)
                                goto out;
                }
                r = cri_remove_container(p->cri, ct[i].id, err);
                if (r < 0)
                        goto out;
        }
        r = cri_stop_pod_sandbox(p->cri, sandbox_id, err);
        if (r >= 0)
                r = cri_remove_pod_sandbox(p->cri, sandbox_id, err);
out:
        cri_containers_free(ct, n);
        return r;
}

int worker_kill_uid(WorkerPool *p, const Pod *pod, const char *uid, const char *keep_hash, int64_t grace,
                    uint32_t *ret_attempt, bool *ret_have_ready, char **ret_ready_id, CubError *err) {
        const char *selector[] = { WORKER_LABEL_UID, uid, NULL };
        CriSandbox *sb = NULL;
        size_t n = 0;
        int r;

        r = cri_list_pod_sandboxes(p->cri, selector, &sb, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                const char *hash = cri_kv_get(sb[i].labels, WORKER_LABEL_HASH);

                if (ret_attempt && sb[i].attempt >= *ret_attempt)
                        *ret_attempt = sb[i].attempt + 1;
                if (keep_hash && sb[i].state == CRI_SANDBOX_READY && hash && strcmp(hash, keep_hash) == 0 &&
                    !*ret_have_ready) {
                        *ret_have_ready = true;
                        *ret_ready_id = strdup(sb[i].id);
                        continue;
                }
                r = teardown_sandbox(p, pod, sb[i].id, grace, err);
                if (r < 0)
                        break;
        }
        cri_sandboxes_free(sb, n);
        return r;
}

int worker_job_kill(WorkerPool *p, WorkerJob *j, CubError *err) {
        int r;

        r = worker_kill_uid(p, j->spec ? j->spec->pod : NULL, j->uid, NULL, j->grace, NULL, NULL, NULL, err);
        if (r < 0)
                return r;
        worker_hosts_remove(p->pods_dir, j->uid); /* network */
        /* the last tasks may still be exiting: wait for the kernel's
         * 'populated 0' in cgroup.events, then rmdir */
        if (j->cgroup && *j->cgroup && p->cg)
                r = cg_writer_remove_wait(p->cg, j->cgroup, WORKER_CGROUP_EMPTY_TIMEOUT_USEC, err);
        return r;
}
