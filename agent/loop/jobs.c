/* SPDX-License-Identifier: Apache-2.0 */
/* The worker's finished jobs, applied on the loop: a relist updates each
 * pod's status from what the runtime holds and submits (submit.c) the
 * syncs and kills that converge it; a sync, kill, stop or update job ends
 * its pod's busy state and records what it did. The one writer of
 * AgentRuntime; the relist job is the one it submits itself. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "../../cri/cri.h"
#include "../util/cleanup.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "../util/time.h"
#include "agent-internal.h"
#include "relist-plan.h"

/* ---- the runtime: relist and jobs ------------------------------------------ */

/* the relist timer fires within relist_usec from now */

/* the relist timer fires at `at` at the latest (UINT64_MAX: no change) */
/* How the loop follows the runtime: this file's object (Agent.rt), written
 * here alone (the relist, the worker's results); the others read the view
 * (agent_runtime). */
typedef struct AgentRuntime {
        AgentRuntimeView view;       /* first: Agent.rt points to it, and so to the object */
        char version[256];           /* agent_runtime_version */
        char error[CUB_ERR_MSG_MAX]; /* agent_runtime_error */
        CubRetry retry;              /* the relist while the runtime is away (cub_retry_runtime) */
        uint64_t status_asked_usec;  /* CRI Status, asked every 5 s with a relist */
        bool relist_busy, relist_again;
        /* the evented relist: containerd's event stream, whether the last
         * relist found every pod settled, and until when (CLOCK_MONOTONIC
         * µs) relists stay at relist_usec after an event */
        CriEvents *events;
        sd_event_source *events_src;
        bool relist_steady;
        uint64_t relist_hot_until;
        uint64_t next_due; /* the earliest retry of a stop or a failed sync (CLOCK_MONOTONIC µs), UINT64_MAX: none */
        sd_event_source *relist_timer;
        bool trim_pending; /* pods came or went: give freed memory back once things are quiet */
} AgentRuntime;

/* the object of Agent.rt, its view being its first member */
static AgentRuntime *rt_of(const Agent *a) {
        return (AgentRuntime *) a->rt;
}

static void relist_timer_at(Agent *a, uint64_t at) {
        uint64_t next = 0;

        if (at != UINT64_MAX && rt_of(a)->relist_timer &&
            sd_event_source_get_time(rt_of(a)->relist_timer, &next) >= 0 && next > at)
                (void) sd_event_source_set_time(rt_of(a)->relist_timer, at);
}

uint64_t agent_relist_period(Agent *a, uint64_t now) {
        /* the runtime away: the relist is its retry, on the policy */
        if (rt_of(a)->retry.failures > 0 && rt_of(a)->retry.next_usec > now)
                return rt_of(a)->retry.next_usec - now;
        if (!rt_of(a)->events || !rt_of(a)->relist_steady || now < rt_of(a)->relist_hot_until ||
            cri_events_state(rt_of(a)->events, NULL, NULL, 0) != CRI_EVENTS_SUBSCRIBED ||
            a->core.opt.events_relist_usec <= a->core.opt.relist_usec)
                return a->core.opt.relist_usec;
        return a->core.opt.events_relist_usec;
}

/* A runtime event (or the stream's loss or return): relist now, and on the
 * short period for the next 10 s (at least two and a half periods), since
 * the CRI plugin applies the same event to its own state meanwhile and the
 * first relists may not see it: containerd 1.6 marks a container exited
 * only once its task is deleted, which took over 2.5 s in a loaded guest
 * (21-recovery's kill -9 was seen only at the 60 s relist in a CI run). */
#define EVENT_HOT_USEC (10 * CUB_USEC_PER_SEC)
static int on_runtime_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Agent *a = userdata;
        uint64_t now = agent_now_usec();

        (void) s;
        (void) fd;
        (void) revents;
        if (cri_events_take(rt_of(a)->events) == 0)
                return 0;
        rt_of(a)->relist_hot_until = now + 2 * a->core.opt.relist_usec + a->core.opt.relist_usec / 2;
        if (rt_of(a)->relist_hot_until < now + EVENT_HOT_USEC)
                rt_of(a)->relist_hot_until = now + EVENT_HOT_USEC;
        relist_timer_at(a, now + a->core.opt.relist_usec);
        agent_request_relist(a);
        return 0;
}

void agent_events_attach(Agent *a) {
        CubError err = {};

        if (a->core.opt.events_relist_usec == 0)
                return;
        if (cri_events_start(a->core.cri, CRI_EVENTS_NAMESPACE, &rt_of(a)->events, &err) < 0 ||
            sd_event_add_io(a->core.event, &rt_of(a)->events_src, cri_events_fd(rt_of(a)->events), EPOLLIN,
                            on_runtime_event, a) < 0) {
                cub_log(LOG_WARNING, "runtime events: %s; relisting every %.1f s",
                        err.msg[0] ? err.msg : "cannot watch the stream", (double) a->core.opt.relist_usec / 1e6);
                rt_of(a)->events = cri_events_free(rt_of(a)->events);
                return;
        }
        (void) sd_event_source_set_description(rt_of(a)->events_src, "runtime-events");
}

void agent_events_detach(Agent *a) {
        if (!a->rt)
                return;
        rt_of(a)->events_src = sd_event_source_disable_unref(rt_of(a)->events_src);
        rt_of(a)->events = cri_events_free(rt_of(a)->events);
}

/* The runtime's conditions: while NetworkReady is false, pods on the pod
 * network wait (no RunPodSandbox) with kubelet's message, host-network pods
 * start, /readyz and cubelet status say why. */
static void on_runtime_status(Agent *a, const CriRuntimeStatus *st) {
        char error[sizeof(a->rt->network_error)] = "";

        if (!st->network_ready)
                (void) snprintf(error, sizeof(error),
                                "container runtime network not ready: NetworkReady=false reason:%s message:%s",
                                st->reason, st->message);
        if (strcmp(error, a->rt->network_error) == 0)
                return;
        if (*error)
                cub_log(LOG_WARNING, "%s; pods on the pod network wait", error);
        else
                cub_log(LOG_INFO, "the runtime's network is ready");
        (void) snprintf(a->rt->network_error, sizeof(a->rt->network_error), "%s", error);
        agent_api_set_network(a, error);
}

static void on_relist(Agent *a, WorkerJob *j) {
        uint64_t now = agent_now_usec();
        RelistInput in;
        RelistPlan plan;
        bool busy = false;

        if (j->r < 0) {
                if (a->rt->state != AGENT_RUNTIME_DOWN || strcmp(rt_of(a)->error, j->error) != 0)
                        cub_log(LOG_ERR, "runtime: %s; retrying", j->error);
                a->rt->state = AGENT_RUNTIME_DOWN;
                (void) snprintf(rt_of(a)->error, sizeof(rt_of(a)->error), "%s", j->error);
                /* the next relist waits for the policy (1 s doubling to 5 s),
                 * not the relist period: nothing to see until it is back */
                (void) cub_retry_failed(&rt_of(a)->retry, &cub_retry_runtime, now, j->error, 0);
                if (rt_of(a)->relist_timer)
                        (void) sd_event_source_set_time(rt_of(a)->relist_timer, rt_of(a)->retry.next_usec);
                agent_notify_status(a);
                return;
        }
        (void) cub_retry_succeeded(&rt_of(a)->retry);
        if (a->rt->state == AGENT_RUNTIME_DOWN)
                cub_log(LOG_INFO, "runtime '%s' is back", cri_client_endpoint(a->core.cri));
        if (j->status_known)
                on_runtime_status(a, &j->status);
        a->rt->state = AGENT_RUNTIME_READY;
        rt_of(a)->error[0] = '\0';

        /* the decisions (agent/loop/relist-plan.c), then the jobs they start */
        in = (RelistInput){ .pods = a->table.pods,
                            .n_pods = a->table.n_pods,
                            .by_uid = a->table.by_uid,
                            .observed = j->observed,
                            .n_observed = j->n_observed,
                            .sources_ready = agent_sources_ready(a),
                            .held = agent_pod_held,
                            .held_ctx = a,
                            .network_error = a->rt->network_error,
                            .now = now };
        if (agent_stops_plan(a, &in, &plan) < 0 && !plan.sync) {
                cub_log(LOG_ERR, "relist: out of memory");
                return;
        }
        for (size_t i = 0; i < plan.n_sync; i++)
                agent_submit_sync(a, plan.sync[i], now);
        for (size_t i = 0; i < plan.n_kill; i++)
                agent_submit_kill_entry(a, plan.kill[i], plan.kill_new[i]);
        agent_resizes_retry(a); /* what waits for room, or for its actuation again */
        rt_of(a)->relist_steady = plan.steady;
        rt_of(a)->next_due = plan.next_due;
        relist_plan_done(&plan);
        a->rt->n_running = 0;
        for (size_t i = 0; i < a->table.n_pods; i++) {
                LcPod *p = a->table.pods[i];

                for (size_t k = 0; p->wanted && p->admitted && !p->terminal && k < p->n; k++)
                        if (p->statuses[k].oom_killed_now)
                                cub_log(LOG_WARNING, "pod %s/%s: container '%s' was OOM-killed (restart %u)",
                                        p->spec->pod->namespace_, p->spec->pod->name,
                                        pod_container_at(p->spec->pod, k, NULL)->name, p->statuses[k].restarts);
                /* probes and hooks: the pod conditions' transitions */
                (void) lc_pod_track_conditions(p, (int64_t) (cub_now_usec(CLOCK_REALTIME) / CUB_USEC_PER_SEC));
                a->rt->n_running += p->phase == LC_PHASE_RUNNING;
                busy = busy || p->busy;
        }
        /* activeDeadlineSeconds: the pods past it fail; the relist timer fires by the next */
        for (size_t i = 0; i < a->table.n_pods; i++) {
                LcPod *p = a->table.pods[i];
                uint64_t at = lc_pod_deadline_usec(p);

                agent_pod_check_deadline(a, p, now);
                if (at > now && p->wanted && !p->terminal)
                        relist_timer_at(a, at);
        }
        /* a stop waiting for its retry: the relist timer fires by then */
        relist_timer_at(a, rt_of(a)->next_due);
        if (!rt_of(a)->relist_steady)
                relist_timer_at(a, now + a->core.opt.relist_usec);
        if (!busy && kill_table_in_flight(agent_kills(a)) == 0 && rt_of(a)->trim_pending) {
                /* a burst of pods is over: hand its freed heap back (0.2-0.8 MB
                 * with 110-250 pods, measured in the bench) */
                (void) malloc_trim(0);
                rt_of(a)->trim_pending = false;
        }
        agent_update_resources(a);
        if (!a->rt->notified_ready) {
                (void) sd_notify(false, "READY=1");
                a->rt->notified_ready = true;
                cub_log(LOG_INFO, "ready: %zu pods from '%s', runtime '%s'", a->table.n_pods, a->core.opt.manifest_dir,
                        cri_client_endpoint(a->core.cri));
        }
        agent_notify_status(a);
}

void agent_request_relist(Agent *a) {
        WorkerJob *j;

        if (rt_of(a)->relist_busy) {
                rt_of(a)->relist_again = true;
                return;
        }
        j = worker_job_new(WORKER_RELIST);
        if (!j)
                return;
        j->first = !a->rt->notified_ready;
        /* kubelet asks the runtime's status every 5 s (updateRuntimeUp) */
        if (agent_now_usec() - rt_of(a)->status_asked_usec >= 5 * CUB_USEC_PER_SEC || !rt_of(a)->status_asked_usec) {
                j->want_status = true;
                rt_of(a)->status_asked_usec = agent_now_usec();
        }
        rt_of(a)->relist_busy = true;
        rt_of(a)->relist_again = false;
        worker_pool_submit(a->core.pool, j);
}

/* The pod a SYNC or UPDATE job was made for (its spec, not only its UID). */
static LcPod *job_pod(Agent *a, const WorkerJob *j) {
        LcPod *p = agent_find_pod(a, j->spec->pod->uid);

        if (p && p->spec == j->spec)
                return p;
        /* an older copy of an edited pod */
        for (size_t i = 0; i < a->table.n_pods; i++)
                if (a->table.pods[i]->spec == j->spec)
                        return a->table.pods[i];
        return NULL;
}

/* A sync that failed before it made anything in the runtime (no sandbox,
 * no container started): a relist would find what the last one found, and
 * a pod retrying every 10 s would cost one each time; the periodic relist
 * and containerd's events see whatever else changed. */
static bool changed_nothing(const WorkerJob *j) {
        if (j->r >= 0 || j->sandbox_requested_usec || j->containers_started_usec)
                return false;
        switch (j->fail) {
        case WORKER_FAIL_POD_CGROUP:
        case WORKER_FAIL_SANDBOX:
        case WORKER_FAIL_IMAGE_PULL:
        case WORKER_FAIL_IMAGE_NEVER_PULL:
        case WORKER_FAIL_CONFIG:
                return true;
        default:
                return false;
        }
}

static void on_sync_done(Agent *a, WorkerJob *j) {
        LcPod *p = job_pod(a, j);
        bool updated;

        if (p) {
                agent_metrics_job(a, p, j);
                LcSyncDone d = lc_pod_sync_done(p, j, agent_now_usec(), cub_retry_draw());

                if (d.started)
                        agent_managers_pod_started(a, p);
                /* one journal line per distinct error, and one when it clears */
                if (d.log_error)
                        cub_log(LOG_WARNING, "pod %s/%s: %s", j->spec->pod->namespace_, j->spec->pod->name, j->error);
                else if (d.log_cleared)
                        cub_log(LOG_INFO, "pod %s/%s: synced again", j->spec->pod->namespace_, j->spec->pod->name);
        }
        updated = p && agent_pod_spec_apply(a, p); /* a spec update that waited for the job */
        agent_remove_unwanted(a);
        if (!changed_nothing(j) || updated)
                agent_request_relist(a);
        else
                agent_notify_status(a);
}

/* ---- the runtime's stops ---------------------------------------------------- */

int agent_runtime_init(Agent *a) {
        AgentRuntime *rt = calloc(1, sizeof(*rt));

        if (!rt)
                return -ENOMEM;
        rt->next_due = UINT64_MAX;
        a->rt = &rt->view;
        return 0;
}

void agent_runtime_set_version(Agent *a, const char *name, const char *version, const char *api_version) {
        (void) snprintf(rt_of(a)->version, sizeof(rt_of(a)->version), "%s %s (CRI %s)", name, version, api_version);
}

uint64_t agent_relist_due(const Agent *a) {
        uint64_t at = 0;

        if (!rt_of(a)->relist_timer || sd_event_source_get_time(rt_of(a)->relist_timer, &at) < 0)
                return 0;
        return at;
}

const char *agent_runtime_version(const Agent *a) {
        return rt_of(a)->version;
}

const char *agent_runtime_error(const Agent *a) {
        return rt_of(a)->error;
}

void agent_pods_trim_later(Agent *a) {
        rt_of(a)->trim_pending = true;
}

static int on_relist_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Agent *a = userdata;

        (void) sd_event_source_set_time(s, usec + agent_relist_period(a, usec));
        agent_request_relist(a);
        return 0;
}

int agent_relist_attach(Agent *a) {
        int r = sd_event_add_time_relative(a->core.event, &rt_of(a)->relist_timer, CLOCK_MONOTONIC,
                                           a->core.opt.relist_usec, 0, on_relist_timer, a);

        if (r < 0)
                return r;
        (void) sd_event_source_set_description(rt_of(a)->relist_timer, "relist");
        (void) sd_event_source_set_enabled(rt_of(a)->relist_timer, SD_EVENT_ON);
        return 0;
}

void agent_runtime_free(Agent *a) {
        if (!a->rt)
                return;
        sd_event_source_disable_unref(rt_of(a)->relist_timer);
        free(rt_of(a));
        a->rt = NULL;
}

CriEvents *agent_runtime_events(const Agent *a) {
        return rt_of(a)->events;
}

const CubRetry *agent_runtime_retry(const Agent *a) {
        return &rt_of(a)->retry;
}

/* A kill job came back. A failed one waits in the kill table for the pod
 * worker's back-off (10 s ± 50 %, doubling, 5 min): no relist, no retry
 * before then, one journal line per distinct error and one when it clears. */
static void on_kill_done(Agent *a, WorkerJob *j) {
        uint64_t now = agent_now_usec();
        KillEntry *e = kill_table_find(agent_kills(a), j->uid);
        _cleanup_free_ char *what = NULL;
        unsigned attempts = 0;

        if (asprintf(&what, "%s/%s (uid %s)", e ? e->namespace_ : "", e ? e->name : "", j->uid) < 0)
                what = NULL;
        /* a pod of the table (rejected, evicted, preempted) keeps the event */
        if (j->r < 0 && agent_find_pod(a, j->uid))
                lc_pod_event(agent_find_pod(a, j->uid), true, "FailedKillPod", now, "error killing pod: %s", j->error);
        /* a pod of the table keeps its containers' last state (kubelet keeps the stopped containers) */
        if (j->r >= 0 && j->n_observed == 1 && agent_find_pod(a, j->uid) && agent_find_pod(a, j->uid)->terminal)
                lc_pod_observe_final(agent_find_pod(a, j->uid), &j->observed[0]);
        switch (agent_stops_done(a, j, now, &attempts)) {
        case KILL_FAILED_NEW:
                e = kill_table_find(agent_kills(a), j->uid);
                cub_log(LOG_WARNING, "stopping pod %s: %s; retrying in %.0f s (attempt %u)", what ? what : j->uid,
                        j->error, e ? (double) (e->retry.next_usec - now) / 1e6 : 0.0, attempts);
                break;
        case KILL_FAILED_AGAIN:
                break;
        case KILL_DONE_RECOVERED:
                cub_log(LOG_INFO, "pod %s removed after %u attempts", what ? what : j->uid, attempts);
                agent_pod_stopped(a, j->uid);
                agent_request_relist(a);
                break;
        case KILL_DONE:
        case KILL_UNKNOWN:
                cub_log(LOG_INFO, "pod uid %s removed", j->uid);
                agent_pod_stopped(a, j->uid);
                agent_request_relist(a);
                break;
        }
        /* the next retry: the relist timer fires by then */
        rt_of(a)->next_due = kill_table_next_due(agent_kills(a));
        relist_timer_at(a, rt_of(a)->next_due);
}

int agent_on_worker(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Agent *a = userdata;
        WorkerJob *j;

        (void) s;
        (void) fd;
        (void) revents;
        j = worker_pool_take(a->core.pool);
        while (j) {
                WorkerJob *next = j->next;
                LcPod *p;

                switch (j->kind) {
                case WORKER_RELIST:
                        rt_of(a)->relist_busy = false;
                        on_relist(a, j);
                        if (rt_of(a)->relist_again)
                                agent_request_relist(a);
                        break;
                case WORKER_SYNC:
                        on_sync_done(a, j);
                        break;
                case WORKER_KILL:
                        agent_metrics_job(a, NULL, j);
                        on_kill_done(a, j);
                        break;
                case WORKER_STOP_CONTAINER:
                        /* probes and hooks: a container killed for its probe */
                        if (j->r < 0)
                                cub_log(LOG_WARNING, "pod %s/%s: stopping container %s: %s", j->spec->pod->namespace_,
                                        j->spec->pod->name, j->container_id, j->error);
                        agent_request_relist(a);
                        break;
                case WORKER_UPDATE:
                        p = job_pod(a, j);
                        if (p) {
                                agent_metrics_job(a, p, j);
                                lc_pod_update_done(p, !j->resize && j->r < 0);
                                if (j->resize) {
                                        agent_resize_done(a, p, j);
                                } else if (j->r < 0) {
                                        cub_log(LOG_WARNING, "pod %s/%s: %s", j->spec->pod->namespace_,
                                                j->spec->pod->name, j->error);
                                }
                                if (agent_pod_spec_apply(a, p)) /* a spec update that waited for the job */
                                        agent_request_relist(a);
                        }
                        agent_remove_unwanted(a);
                        break;
                default:
                        break;
                }
                worker_job_free(j);
                j = next;
        }
        agent_resizes_retry(a); /* a resize that waited for its pod's job */
        agent_apply_actions(a);
        return 0;
}
