/* SPDX-License-Identifier: Apache-2.0 */
/* The KILL job and the teardown of a pod's sandboxes, which sync.c also
 * uses for the stale ones. */
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

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

/* The pod's container named name: its index in pod_container_at()'s order,
 * or -1 (no pod, or a name the spec does not have). */
static ssize_t spec_index(const Pod *pod, const char *name) {
        for (size_t k = 0; pod && name && k < pod->n_init_containers + pod->n_containers; k++)
                if (strcmp(pod_container_at(pod, k, NULL)->name, name) == 0)
                        return (ssize_t) k;
        return -1;
}

static const PodContainer *container_named(const Pod *pod, const char *name) {
        ssize_t k = spec_index(pod, name);

        return k < 0 ? NULL : pod_container_at(pod, (size_t) k, NULL);
}

int worker_job_stop_container(WorkerPool *p, WorkerJob *j, CubError *err) {
        const Pod *pod = j->spec->pod;
        const PodContainer *c = j->container < pod->n_init_containers + pod->n_containers
                                        ? pod_container_at(pod, j->container, NULL)
                                        : NULL;
        int64_t grace = worker_pre_stop(p, pod, c, j->container_id, j->pod_ip, j->grace);

        return cri_stop_container(p->cri, j->container_id, grace, err);
}

void worker_stop_order(const Pod *pod, const char *const *names, size_t n, bool *prereq) {
        memset(prereq, 0, n * n * sizeof(*prereq));
        for (size_t i = 0; i < n; i++) {
                ssize_t si = spec_index(pod, names[i]);

                if (si < 0 || (size_t) si >= pod->n_init_containers ||
                    !pod_container_is_sidecar(pod_container_at(pod, (size_t) si, NULL)))
                        continue;
                for (size_t k = 0; k < n; k++) {
                        ssize_t sk = spec_index(pod, names[k]);

                        /* every app container; each sidecar after this one */
                        if (k != i && sk >= 0 &&
                            ((size_t) sk >= pod->n_init_containers ||
                             (sk > si && pod_container_is_sidecar(pod_container_at(pod, (size_t) sk, NULL)))))
                                prereq[i * n + k] = true;
                }
        }
}

/* The stops of one sandbox's containers, each on a thread of its own. */
typedef struct StopAll {
        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC: a container has stopped */
        WorkerPool *p;
        const Pod *pod;
        const char *pod_ip;
        int64_t grace;
        const CriContainer *const *ct; /* the n to stop */
        size_t n;
        const bool *prereq; /* worker_stop_order() */
        bool *stopped;
} StopAll;

typedef struct StopOne {
        StopAll *all;
        size_t i;
        pthread_t thread;
        bool threaded;
        int r;
        CubError err;
} StopOne;

/* kubelet's waitForTurn: until every container that i waits for has
 * stopped, for at most left seconds; the whole seconds waited. */
static int64_t wait_turn(StopAll *a, size_t i, int64_t left) {
        /* (at most 2^32 s, ~136 years: no wrap in microseconds for any grace period) */
        uint64_t start = worker_now_usec(),
                 until = start + (uint64_t) (left < INT64_C(1) << 32 ? left : INT64_C(1) << 32) * CUB_USEC_PER_SEC;
        struct timespec ts = { .tv_sec = (time_t) (until / CUB_USEC_PER_SEC),
                               .tv_nsec = (long) (until % CUB_USEC_PER_SEC * CUB_NSEC_PER_USEC) };
        bool ready = false;

        pthread_mutex_lock(&a->lock);
        while (!ready) {
                ready = true;
                for (size_t k = 0; k < a->n && ready; k++)
                        ready = !a->prereq[i * a->n + k] || a->stopped[k];
                if (!ready && pthread_cond_timedwait(&a->cond, &a->lock, &ts) == ETIMEDOUT)
                        break;
        }
        pthread_mutex_unlock(&a->lock);
        return (int64_t) ((worker_now_usec() - start) / CUB_USEC_PER_SEC);
}

/* kubelet's killContainer: the preStop hook, the container's turn, then
 * StopContainer with what is left of the grace period, at least 2 s (grace
 * 0, a hard eviction, kills at once: the memory is needed now). */
static void *stop_one(void *userdata) {
        StopOne *o = userdata;
        StopAll *a = o->all;
        const CriContainer *c = a->ct[o->i];
        int64_t left = a->grace;

        if (a->grace > 0 && c->state == CRI_CONTAINER_RUNNING)
                left = worker_pre_stop(a->p, a->pod, container_named(a->pod, c->name), c->id, a->pod_ip, left);
        if (a->grace > 0)
                left -= wait_turn(a, o->i, left);
        o->r = cri_stop_container(a->p->cri, c->id, a->grace <= 0 ? 0 : left < 2 ? 2 : left, &o->err);
        if (o->r >= 0) {
                pthread_mutex_lock(&a->lock);
                a->stopped[o->i] = true;
                pthread_cond_broadcast(&a->cond);
                pthread_mutex_unlock(&a->lock);
        }
        return NULL;
}

static bool to_stop(const CriContainer *c) {
        return c->state == CRI_CONTAINER_RUNNING || c->state == CRI_CONTAINER_CREATED;
}

/* The running and created containers of ct stopped at once, as kubelet's
 * killContainersWithSyncResult does; sidecars in kubelet's termination
 * order. The first failure, in ct's order. */
static int stop_all(WorkerPool *p, const Pod *pod, const char *pod_ip, int64_t grace, const CriContainer *ct,
                    size_t n_ct, CubError *err) {
        _cleanup_free_ const CriContainer **run = NULL;
        _cleanup_free_ const char **names = NULL;
        _cleanup_free_ bool *prereq = NULL, *stopped = NULL;
        _cleanup_free_ StopOne *one = NULL;
        pthread_condattr_t ca;
        StopAll a = { .p = p, .pod = pod, .pod_ip = pod_ip, .grace = grace };
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; i < n_ct; i++)
                n += to_stop(&ct[i]);
        if (n == 0)
                return 0;
        run = calloc(n, sizeof(*run));
        names = calloc(n, sizeof(*names));
        stopped = calloc(n, sizeof(*stopped));
        one = calloc(n, sizeof(*one));
        prereq = calloc(n * n, sizeof(*prereq));
        if (!run || !names || !stopped || !one || !prereq)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < n_ct; i++)
                if (to_stop(&ct[i])) {
                        names[a.n] = ct[i].name;
                        run[a.n++] = &ct[i];
                }
        worker_stop_order(pod, names, a.n, prereq);
        a.ct = run;
        a.prereq = prereq;
        a.stopped = stopped;
        pthread_mutex_init(&a.lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&a.cond, &ca);
        pthread_condattr_destroy(&ca);
        for (size_t i = 0; i < a.n; i++) {
                one[i] = (StopOne){ .all = &a, .i = i };
                /* one alone, or no thread to be had: here (a wait for its
                 * turn still ends with the grace period) */
                one[i].threaded = a.n > 1 && pthread_create(&one[i].thread, NULL, stop_one, &one[i]) == 0;
                if (!one[i].threaded)
                        (void) stop_one(&one[i]);
        }
        for (size_t i = 0; i < a.n; i++) {
                if (one[i].threaded)
                        pthread_join(one[i].thread, NULL);
                if (one[i].r < 0 && r == 0) {
                        r = one[i].r;
                        if (err)
                                *err = one[i].err;
                }
        }
        pthread_cond_destroy(&a.cond);
        pthread_mutex_destroy(&a.lock);
        return r;
}

/* Stops every container of a sandbox (stop_all), removes them, then the
 * sandbox; pod (NULL: unknown) gives the preStop hooks and the order. */
/* What the stopped containers ct ended with, into o: kubelet keeps a
 * stopped container (and so its last state) until its GC; cubelet removes
 * it, and hands its state to the loop instead. The newest attempt per name. */
static void record_final(WorkerPool *p, const CriContainer *ct, size_t n, WorkerObserved *o) {
        for (size_t i = 0; o && i < n; i++) {
                CriContainerStatus st;
                CubError e = {};
                WorkerContainer *c = NULL;
                char *id, *name;

                for (size_t k = 0; k < o->n_containers && !c; k++)
                        if (strcmp(o->containers[k].name, ct[i].name) == 0)
                                c = &o->containers[k];
                if (c && c->attempt > ct[i].attempt)
                        continue;
                if (cri_container_status(p->cri, ct[i].id, &st, &e) < 0)
                        continue;
                id = strdup(ct[i].id);
                name = strdup(ct[i].name);
                if (st.state != CRI_CONTAINER_EXITED || !id || !name) {
                        free(id);
                        free(name);
                        cri_container_status_done(&st);
                        continue;
                }
                if (c)
                        worker_container_done(c);
                else {
                        WorkerContainer *nc = realloc(o->containers, (o->n_containers + 1) * sizeof(*nc));

                        if (!nc) {
                                free(id);
                                free(name);
                                cri_container_status_done(&st);
                                return;
                        }
                        o->containers = nc;
                        c = &nc[o->n_containers++];
                }
                *c = (WorkerContainer){ .id = id,
                                        .name = name,
                                        .attempt = ct[i].attempt,
                                        .state = CRI_CONTAINER_EXITED,
                                        .exit_code = st.exit_code,
                                        .started_at = st.started_at,
                                        .finished_at = st.finished_at,
                                        .message = worker_term_message_of(&st) };
                c->reason = TAKE_PTR(st.reason);
                cri_container_status_done(&st);
        }
}

static int teardown_sandbox(WorkerPool *p, const Pod *pod, const char *sandbox_id, int64_t grace, WorkerObserved *final,
                            CubError *err) {
        CriContainer *ct = NULL;
        size_t n = 0;
        _cleanup_free_ char *pod_ip = NULL;
        int r;

        r = cri_list_containers(p->cri, sandbox_id, NULL, &ct, &n, err);
        if (r < 0)
                return r;
        /* the preStop httpGet hooks' target (network) */
        if (pod && !pod->host_network)
                (void) worker_sandbox_ip(p, sandbox_id, &pod_ip, NULL);
        r = stop_all(p, pod, pod_ip, grace, ct, n, err);
        if (r >= 0)
                record_final(p, ct, n, final);
        /* the containers removed as a courtesy: a container whose task
         * ended while containerd was away reads "still running" until
         * containerd has applied the exit, and such a refusal must not cost
         * the pod its sync's back-off (kubelet leaves the removal to its
         * garbage collector). RemovePodSandbox, after StopPodSandbox has
         * stopped them all, removes whatever is left. */
        for (size_t i = 0; i < n && r >= 0; i++) {
                CubError rerr = {};

                if (cri_remove_container(p->cri, ct[i].id, &rerr) < 0)
                        cub_log(LOG_DEBUG, "sandbox %.12s: container %.12s left to RemovePodSandbox: %s", sandbox_id,
                                ct[i].id, rerr.msg);
        }
        if (r >= 0)
                r = cri_stop_pod_sandbox(p->cri, sandbox_id, err);
        if (r >= 0)
                r = cri_remove_pod_sandbox(p->cri, sandbox_id, err);
        cri_containers_free(ct, n);
        return r;
}

int worker_kill_uid(WorkerPool *p, const Pod *pod, const char *uid, const char *keep_hash, int64_t grace,
                    WorkerObserved *final, uint32_t *ret_attempt, bool *ret_have_ready, char **ret_ready_id,
                    CubError *err) {
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
                /* a sync replaces it: why, as kubelet's "No ready sandbox
                 * for pod can be found. Need to start a new one" */
                if (keep_hash)
                        cub_log(LOG_INFO, "pod %s/%s: sandbox %.12s %s: stopped, a new one follows",
                                sb[i].namespace_ ? sb[i].namespace_ : "", sb[i].name ? sb[i].name : uid, sb[i].id,
                                sb[i].state != CRI_SANDBOX_READY        ? "is not ready in the runtime"
                                : !hash || strcmp(hash, keep_hash) != 0 ? "has another spec hash"
                                                                        : "is a second ready one");
                r = teardown_sandbox(p, pod, sb[i].id, grace, final, err);
                if (r < 0)
                        break;
        }
        cri_sandboxes_free(sb, n);
        return r;
}

int worker_job_kill(WorkerPool *p, WorkerJob *j, CubError *err) {
        int r;

        /* the containers' last state: a pod of the table (failed, evicted) shows it, as kubelet's */
        j->observed = calloc(1, sizeof(WorkerObserved));
        if (j->observed) {
                j->n_observed = 1;
                j->observed->uid = strdup(j->uid);
        }
        r = worker_kill_uid(p, j->spec ? j->spec->pod : NULL, j->uid, NULL, j->grace, j->observed, NULL, NULL, NULL,
                            err);
        if (r < 0)
                return r;
        worker_term_remove(p->pods_dir, j->uid);
        worker_hosts_remove(p->pods_dir, j->uid); /* network */
        /* the last tasks may still be exiting: wait for the kernel's
         * 'populated 0' in cgroup.events, then rmdir */
        if (j->cgroup && *j->cgroup && p->cg)
                r = cg_writer_remove_wait(p->cg, j->cgroup, WORKER_CGROUP_EMPTY_TIMEOUT_USEC, err);
        return r;
}
