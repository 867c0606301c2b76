/* SPDX-License-Identifier: Apache-2.0 */
/* The probe manager: kubelet's prober behind the manager table.
 *
 *  - pod_started: one worker per probe of each container (sidecars
 *    included), each a timer on the loop every periodSeconds (the first
 *    run after kubelet's jitter while cubelet is young); pod_removed stops
 *    them;
 *  - a tick reads the container from the pod table (its id, running, its
 *    StartedAt) and, when agent/probes' state machine says so, starts the
 *    probe through the runner (never blocking the loop, at most one in
 *    flight per worker);
 *  - results become decisions: LC_ACTION_PROBE (the container's started
 *    and ready) and, for a liveness or startup failure,
 *    LC_ACTION_RESTART_CONTAINER with kubelet's message and the probe's
 *    terminationGracePeriodSeconds (else the pod's).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../probes/probes.h"
#include "../util/log.h"
#include "../util/time.h"
#include "managers.h"

typedef struct ProbeWorker ProbeWorker;

typedef struct ProbePod {
        char uid[128];
        WorkerSpec *spec;
        ProbeWorker **workers;
        size_t n_workers;
} ProbePod;

typedef struct Probes {
        const LcEnv *env;
        ProbeRunner *runner;
        uint64_t created_usec;
        ProbePod *pods;
        size_t n_pods;
} Probes;

struct ProbeWorker {
        Probes *m;
        char uid[128];
        WorkerSpec *spec;
        size_t k; /* container index, init containers first */
        ProbeKind kind;
        const PodProbe *probe;
        ProbeState st;
        sd_event_source *timer;
        ProbeCall *call;
        char call_container[80]; /* the container the probe in flight is for */
        bool last_started, last_ready;
        char reported_id[80];       /* the container last reported */
        uint64_t seen_running_usec; /* when this worker first saw container seen_id run (no StartedAt) */
        char seen_id[80];
};

static void worker_free(ProbeWorker *w) {
        if (!w)
                return;
        probe_cancel(w->call);
        sd_event_source_disable_unref(w->timer);
        worker_spec_unref(w->spec);
        free(w);
}

static void pod_done(ProbePod *pp) {
        for (size_t i = 0; i < pp->n_workers; i++)
                worker_free(pp->workers[i]);
        free(pp->workers);
        worker_spec_unref(pp->spec);
}

static void probes_free(void *userdata) {
        Probes *m = userdata;

        if (!m)
                return;
        for (size_t i = 0; i < m->n_pods; i++)
                pod_done(&m->pods[i]);
        free(m->pods);
        probe_runner_free(m->runner);
        free(m);
}

static int probes_new(const LcEnv *env, void **ret, CubError *err) {
        Probes *m = calloc(1, sizeof(*m));
        int r;

        if (!m)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->env = env;
        m->created_usec = cub_now_usec(CLOCK_MONOTONIC);
        r = probe_runner_new(env->event, env->cri, 4, &m->runner, err);
        if (r < 0) {
                free(m);
                return r;
        }
        *ret = m;
        return 0;
}

static const LcPod *find_pod(Probes *m, const char *uid, const WorkerSpec *spec) {
        size_t n;
        const LcPod *const *pods = m->env->pods(m->env->loop, &n);

        for (size_t i = 0; i < n; i++)
                if (pods[i]->spec == spec && strcmp(pods[i]->spec->pod->uid, uid) == 0)
                        return pods[i];
        return NULL;
}

static ProbePod *find_probe_pod(Probes *m, const char *uid) {
        for (size_t i = 0; i < m->n_pods; i++)
                if (strcmp(m->pods[i].uid, uid) == 0)
                        return &m->pods[i];
        return NULL;
}

/* the worker of another kind for the same container */
static const ProbeWorker *sibling(Probes *m, const ProbeWorker *w, ProbeKind kind) {
        ProbePod *pp = find_probe_pod(m, w->uid);

        for (size_t i = 0; pp && i < pp->n_workers; i++)
                if (pp->workers[i]->k == w->k && pp->workers[i]->kind == kind)
                        return pp->workers[i];
        return NULL;
}

/* started and ready of w's container, from its workers; queued as a
 * decision when they changed */
static void report(Probes *m, ProbeWorker *w, const char *container_id) {
        const ProbeWorker *startup = sibling(m, w, PROBE_STARTUP), *readiness = sibling(m, w, PROBE_READINESS);
        bool started = probe_container_started(true, startup ? &startup->st : NULL);
        bool ready = probe_container_ready(true, started, readiness ? &readiness->st : NULL);
        LcAction a = { .kind = LC_ACTION_PROBE, .container = w->k, .started = started, .ready = ready };
        ProbePod *pp = find_probe_pod(m, w->uid);

        /* one report per container: from its first worker */
        for (size_t i = 0; pp && i < pp->n_workers; i++)
                if (pp->workers[i]->k == w->k) {
                        w = pp->workers[i];
                        break;
                }
        if (strcmp(w->reported_id, container_id) == 0 && w->last_started == started && w->last_ready == ready)
                return;
        (void) snprintf(w->reported_id, sizeof(w->reported_id), "%s", container_id);
        w->last_started = started;
        w->last_ready = ready;
        (void) snprintf(a.uid, sizeof(a.uid), "%s", w->uid);
        (void) snprintf(a.container_id, sizeof(a.container_id), "%s", container_id);
        m->env->act(m->env->loop, &a);
}

static void on_result(void *userdata, ProbeResult r, const char *output) {
        ProbeWorker *w = userdata;
        Probes *m = w->m;
        const Pod *pod = w->spec->pod;
        const PodContainer *c = pod_container_at(pod, w->k, NULL);
        char id[80];

        w->call = NULL;
        (void) snprintf(id, sizeof(id), "%s", w->call_container);
        if (strcmp(id, w->st.container_id) != 0)
                return; /* the container changed meanwhile */
        if (r == PROBE_RESULT_UNKNOWN)
                cub_log(LOG_DEBUG, "pod %s/%s: container '%s': %s probe errored: %s", pod->namespace_, pod->name,
                        c->name, probe_kind_to_string(w->kind), output);
        else if (r == PROBE_RESULT_FAILURE)
                cub_log(LOG_INFO, "pod %s/%s: container '%s': %s probe failed: %s", pod->namespace_, pod->name, c->name,
                        probe_kind_to_string(w->kind), output);
        if (r == PROBE_RESULT_FAILURE) {
                /* kubelet's prober records each failure (the count goes up) */
                LcAction ev = { .kind = LC_ACTION_EVENT, .warning = true };

                (void) snprintf(ev.uid, sizeof(ev.uid), "%s", w->uid);
                (void) snprintf(ev.reason, sizeof(ev.reason), "Unhealthy");
                (void) snprintf(ev.message, sizeof(ev.message), "%s probe failed: %s", probe_kind_to_string(w->kind),
                                output);
                m->env->act(m->env->loop, &ev);
        }
        if (!probe_state_record(&w->st, r))
                return;
        if ((w->kind == PROBE_LIVENESS || w->kind == PROBE_STARTUP) && w->st.result == PROBE_RESULT_FAILURE) {
                LcAction a = { .kind = LC_ACTION_RESTART_CONTAINER, .container = w->k };

                a.grace = w->probe->termination_grace_period_seconds_set ? w->probe->termination_grace_period_seconds
                                                                         : pod->termination_grace_period_seconds;
                (void) snprintf(a.uid, sizeof(a.uid), "%s", w->uid);
                (void) snprintf(a.container_id, sizeof(a.container_id), "%s", id);
                (void) snprintf(a.reason, sizeof(a.reason), "Unhealthy");
                (void) snprintf(a.message, sizeof(a.message), "Container %s failed %s probe, will be restarted",
                                c->name, w->kind == PROBE_LIVENESS ? "liveness" : "startup");
                m->env->act(m->env->loop, &a);
                return;
        }
        report(m, w, id);
}

/* kubelet's prober: httpGet, tcpSocket and grpc go to the pod's IP unless
 * the handler names a host; a host-network pod's is the node's (loopback
 * reaches it) */
static ProbeTarget target_of(const ProbeWorker *w, const PodContainer *c, const char *container_id, const char *pod_ip,
                             int32_t port) {
        const PodHandler *h = &w->probe->handler;
        ProbeTarget t = {
                .kind = h->kind, .container_id = container_id, .timeout_s = w->probe->timeout_seconds, .port = port
        };

        switch (h->kind) {
        case POD_HANDLER_EXEC:
                t.command = (const char *const *) h->exec.command.items;
                break;
        case POD_HANDLER_HTTP_GET:
                t.host = h->http_get.host ? h->http_get.host : pod_ip;
                t.scheme = h->http_get.scheme;
                t.path = h->http_get.path;
                t.headers = h->http_get.headers;
                t.n_headers = h->http_get.n_headers;
                break;
        case POD_HANDLER_TCP_SOCKET:
                t.host = h->tcp_socket.host ? h->tcp_socket.host : pod_ip;
                break;
        case POD_HANDLER_GRPC:
                t.host = pod_ip;
                t.grpc_service = h->grpc.service;
                break;
        default:
                break;
        }
        (void) c;
        return t;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        ProbeWorker *w = userdata;
        Probes *m = w->m;
        const LcPod *p;
        const LcContainerStatus *st;
        const PodContainer *c;
        const ProbeWorker *startup;
        bool running, started;
        int64_t running_for = 0;
        int32_t port = 0;
        CubError err = {};

        (void) sd_event_source_set_time(s, usec + (uint64_t) w->probe->period_seconds * CUB_USEC_PER_SEC);
        p = find_pod(m, w->uid, w->spec);
        if (!p || w->k >= p->n)
                return 0;
        st = &p->statuses[w->k];
        c = pod_container_at(p->spec->pod, w->k, NULL);
        running = !p->terminal && st->state == LC_CONTAINER_RUNNING && *st->id;
        if (probe_state_set_container(&w->st, running || st->state == LC_CONTAINER_TERMINATING ? st->id : "")) {
                probe_cancel(w->call);
                w->call = NULL;
        }
        if (running)
                report(m, w, st->id);
        if (w->call)
                return 0; /* the last one has not answered yet */
        if (running && strcmp(w->seen_id, st->id) != 0) {
                (void) snprintf(w->seen_id, sizeof(w->seen_id), "%s", st->id);
                w->seen_running_usec = usec;
        }
        if (st->started_at > 0) {
                int64_t now_ns = (int64_t) cub_now_usec(CLOCK_REALTIME) * 1000;

                running_for = (now_ns - st->started_at) / 1000000000;
        } else if (running)
                running_for = (int64_t) ((usec - w->seen_running_usec) / CUB_USEC_PER_SEC);
        startup = sibling(m, w, PROBE_STARTUP);
        started = probe_container_started(running, startup ? &startup->st : NULL);
        if (!probe_state_due(&w->st, running, running_for, started))
                return 0;
        if (w->probe->handler.kind == POD_HANDLER_HTTP_GET || w->probe->handler.kind == POD_HANDLER_TCP_SOCKET) {
                const PodPortRef *ref = w->probe->handler.kind == POD_HANDLER_HTTP_GET
                                                ? &w->probe->handler.http_get.port
                                                : &w->probe->handler.tcp_socket.port;

                if (pod_port_resolve(c, ref, &port) < 0) {
                        cub_log(LOG_DEBUG, "pod %s: container '%s': %s probe: couldn't find port %s", w->uid, c->name,
                                probe_kind_to_string(w->kind), ref->name ? ref->name : "?");
                        return 0; /* a prober error: the result is thrown away */
                }
        } else if (w->probe->handler.kind == POD_HANDLER_GRPC)
                port = w->probe->handler.grpc.port;
        if (!p->spec->pod->host_network && !*p->pod_ip && w->probe->handler.kind != POD_HANDLER_EXEC) {
                cub_log(LOG_DEBUG, "pod %s: container '%s': %s probe: no pod IP yet", w->uid, c->name,
                        probe_kind_to_string(w->kind));
                return 0; /* a prober error: the result is thrown away */
        }
        {
                ProbeTarget t = target_of(w, c, st->id, p->spec->pod->host_network ? "127.0.0.1" : p->pod_ip, port);

                (void) snprintf(w->call_container, sizeof(w->call_container), "%s", st->id);
                if (probe_run(m->runner, &t, on_result, w, &w->call, &err) < 0) {
                        w->call = NULL;
                        cub_log(LOG_WARNING, "pod %s: container '%s': %s", w->uid, c->name, err.msg);
                }
        }
        return 0;
}

static int add_worker(Probes *m, ProbePod *pp, const LcPod *p, size_t k, ProbeKind kind, const PodProbe *probe) {
        ProbeWorker *w = calloc(1, sizeof(*w)), **n;
        uint64_t rnd = 0,
                 period = (uint64_t) (probe->period_seconds > 0 ? probe->period_seconds : 10) * CUB_USEC_PER_SEC;
        int r;

        if (!w)
                return -ENOMEM;
        n = realloc(pp->workers, (pp->n_workers + 1) * sizeof(*n));
        if (!n) {
                free(w);
                return -ENOMEM;
        }
        pp->workers = n;
        w->m = m;
        w->k = k;
        w->kind = kind;
        w->probe = probe;
        w->spec = worker_spec_ref(p->spec);
        (void) snprintf(w->uid, sizeof(w->uid), "%s", p->spec->pod->uid);
        probe_state_init(&w->st, kind, probe);
        (void) !getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK);
        r = sd_event_add_time_relative(
                m->env->event, &w->timer, CLOCK_MONOTONIC,
                probe_first_delay_usec(period, cub_now_usec(CLOCK_MONOTONIC) - m->created_usec, rnd), CUB_USEC_PER_MSEC,
                on_tick, w);
        if (r < 0) {
                worker_free(w);
                return r;
        }
        (void) sd_event_source_set_description(w->timer, "probe");
        (void) sd_event_source_set_enabled(w->timer, SD_EVENT_ON);
        pp->workers[pp->n_workers++] = w;
        return 0;
}

static void probes_pod_removed(void *userdata, const LcPod *p) {
        Probes *m = userdata;
        ProbePod *pp = find_probe_pod(m, p->spec->pod->uid);

        if (!pp || pp->spec != p->spec)
                return;
        pod_done(pp);
        *pp = m->pods[--m->n_pods];
}

static void probes_pod_started(void *userdata, const LcPod *p) {
        Probes *m = userdata;
        const Pod *pod = p->spec->pod;
        ProbePod *pp, *n;
        bool any = false;
        int r = 0;

        for (size_t k = 0; k < p->n; k++) {
                const PodContainer *c = pod_container_at(pod, k, NULL);

                any = any || c->startup_probe_set || c->liveness_probe_set || c->readiness_probe_set;
        }
        if (!any)
                return;
        pp = find_probe_pod(m, pod->uid);
        if (pp)
                probes_pod_removed(m, p);
        n = realloc(m->pods, (m->n_pods + 1) * sizeof(*n));
        if (!n) {
                cub_log(LOG_ERR, "out of memory starting the probes of pod %s/%s", pod->namespace_, pod->name);
                return;
        }
        m->pods = n;
        pp = &m->pods[m->n_pods++];
        *pp = (ProbePod){ .spec = worker_spec_ref(p->spec) };
        (void) snprintf(pp->uid, sizeof(pp->uid), "%s", pod->uid);
        for (size_t k = 0; r >= 0 && k < p->n; k++) {
                const PodContainer *c = pod_container_at(pod, k, NULL);

                if (c->startup_probe_set)
                        r = add_worker(m, pp, p, k, PROBE_STARTUP, &c->startup_probe);
                if (r >= 0 && c->liveness_probe_set)
                        r = add_worker(m, pp, p, k, PROBE_LIVENESS, &c->liveness_probe);
                if (r >= 0 && c->readiness_probe_set)
                        r = add_worker(m, pp, p, k, PROBE_READINESS, &c->readiness_probe);
        }
        if (r < 0)
                cub_log(LOG_ERR, "pod %s/%s: starting its probes: %s", pod->namespace_, pod->name, strerror(-r));
}

const LcManagerVtable mgr_probes = {
        .name = "probes",
        .new = probes_new,
        .free = probes_free,
        .pod_started = probes_pod_started,
        .pod_removed = probes_pod_removed,
};
