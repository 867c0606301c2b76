/* SPDX-License-Identifier: Apache-2.0 */
/* mgr_shutdown: graceful node shutdown (agent/shutdown), kubelet's
 * nodeshutdown manager. With shutdownGracePeriod (or
 * shutdownGracePeriodByPodPriority) set, it makes sure logind's
 * InhibitDelayMaxSec covers the period (a drop-in that sorts last and a
 * reload), holds a delay inhibitor lock, and on PrepareForShutdown(true)
 * stops the pods group by group, lowest priority first, each pod with
 * min(its terminationGracePeriodSeconds, the group's period), as Failed
 * with kubelet's reason and message; a group ends when its pods have
 * stopped or its period has passed; then the lock goes and the node shuts
 * down. PrepareForShutdown(false) ends the sequence (the pods stopped
 * stay Failed) and takes the lock again. While the node
 * shuts down, new pods are rejected (NodeShutdown). Without a bus or
 * logind the start is retried with back-off.
 *
 * Beyond kubelet: a shutdown that does not go through logind (`systemctl
 * start poweroff.target`, an isolate, anything that has systemd start
 * shutdown.target itself) sends no PrepareForShutdown; systemd stops
 * cubelet's unit with SIGTERM. When systemd's SystemState is then
 * "stopping", the same sequence runs before cubelet exits, with the unit's
 * stop timeout extended to cover it (EXTEND_TIMEOUT_USEC). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "../shutdown/shutdown.h"
#include "../util/log.h"
#include "../util/retry.h"
#include "../util/time.h"
#include "managers.h"

/* logind away: again after 1 s (kubelet's dbusReconnectPeriod), doubling to 5 min */
static const CubRetryPolicy retry_logind = {
        .base_usec = CUB_USEC_PER_SEC, .max_usec = 300 * CUB_USEC_PER_SEC, .factor = 2, .jitter_pct = 10
};

typedef struct Shutdown {
        const LcEnv *env;
        ShutdownPlan plan;
        int64_t period_s;
        Logind *logind;
        int lock_fd; /* the delay inhibitor lock, -1 when not held */
        sd_event_source *retry_timer, *group_timer;
        CubRetry retry;
        bool shutting_down;
        bool quit_when_done; /* a SIGTERM waits for the sequence's end */
        size_t group;        /* the group being stopped (plan.n: all done) */
        char **pending;      /* UIDs of its pods not stopped yet */
        size_t n_pending;
        uint64_t started_usec, ended_usec; /* CLOCK_REALTIME µs of the last shutdown */
        char error[CUB_ERR_MSG_MAX];
} Shutdown;

/* after the sequence, for cubelet's exit (its jobs in flight end first) */
#define SHUTDOWN_EXIT_USEC (30 * CUB_USEC_PER_SEC)

static void start_group(Shutdown *m, size_t g);

static void pending_clear(Shutdown *m) {
        for (size_t i = 0; i < m->n_pending; i++)
                free(m->pending[i]);
        free(m->pending);
        m->pending = NULL;
        m->n_pending = 0;
}

static void release_lock(Shutdown *m) {
        if (m->lock_fd < 0)
                return;
        (void) close(m->lock_fd);
        m->lock_fd = -1;
}

static int on_group_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Shutdown *m = userdata;

        (void) s;
        (void) usec;
        cub_log(LOG_WARNING, "graceful node shutdown: %zu pods of priority group %d still stopping after %llds",
                m->n_pending, m->plan.groups[m->group].priority, (long long) m->plan.groups[m->group].grace_s);
        start_group(m, m->group + 1);
        return 0;
}

/* Stops the pods of group g (the first with pods from g on); after the
 * last, releases the lock. */
static void start_group(Shutdown *m, size_t g) {
        size_t n_pods;
        const LcPod *const *pods = m->env->pods(m->env->loop, &n_pods);
        int r;

        pending_clear(m);
        m->group_timer = sd_event_source_disable_unref(m->group_timer);
        m->pending = calloc(n_pods + 1, sizeof(char *)); /* the UIDs of one group at a time */
        for (; g < m->plan.n; g++) {
                const ShutdownGroup *grp = &m->plan.groups[g];

                for (size_t i = 0; m->pending && i < n_pods; i++) {
                        const LcPod *p = pods[i];
                        const Pod *pod = p->spec->pod;
                        LcAction act = { .kind = LC_ACTION_FAIL };

                        if (p->terminal || p->phase == LC_PHASE_SUCCEEDED || p->phase == LC_PHASE_FAILED ||
                            shutdown_group_of(&m->plan, pod->priority) != g)
                                continue;
                        (void) snprintf(act.uid, sizeof(act.uid), "%s", pod->uid);
                        (void) snprintf(act.reason, sizeof(act.reason), "%s", SHUTDOWN_REASON);
                        (void) snprintf(act.message, sizeof(act.message), "%s", SHUTDOWN_MESSAGE);
                        act.grace = shutdown_pod_grace(grp->grace_s, pod->termination_grace_period_seconds);
                        m->pending[m->n_pending] = strdup(pod->uid);
                        if (m->pending[m->n_pending])
                                m->n_pending++;
                        cub_log(LOG_INFO, "graceful node shutdown: stopping pod %s (priority %d, grace %llds)",
                                pod->name, pod->priority, (long long) act.grace);
                        m->env->act(m->env->loop, &act);
                }
                if (m->n_pending == 0)
                        continue; /* kubelet does not wait for an empty group */
                m->group = g;
                r = sd_event_add_time_relative(m->env->event, &m->group_timer, CLOCK_MONOTONIC,
                                               (uint64_t) grp->grace_s * CUB_USEC_PER_SEC, 0, on_group_timer, m);
                if (r < 0)
                        cub_log(LOG_ERR, "graceful node shutdown: group timer: %s", strerror(-r));
                return;
        }
        m->group = m->plan.n;
        m->ended_usec = cub_now_usec(CLOCK_REALTIME);
        cub_log(LOG_INFO, "graceful node shutdown: every pod stopped; releasing the inhibitor lock, the node "
                          "shuts down");
        release_lock(m);
        if (m->quit_when_done) {
                /* cubelet's own exit waits for the jobs in flight (a stop
                 * whose group's period ran out): time for that too */
                (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%llu", (unsigned long long) SHUTDOWN_EXIT_USEC);
                m->env->quit(m->env->loop);
        }
}

static void begin(Shutdown *m) {
        m->shutting_down = true;
        m->started_usec = cub_now_usec(CLOCK_REALTIME);
        m->ended_usec = 0;
        start_group(m, 0);
}

static void on_prepare(bool start, void *userdata) {
        Shutdown *m = userdata;
        CubError err = {};

        cub_log(LOG_INFO, "graceful node shutdown: logind says %s",
                start ? "the node shuts down (PrepareForShutdown true)" : "the shutdown was cancelled");
        if (!start) {
                /* the pods already stopped stay Failed; the groups not
                 * reached are left alone, and the new lock is kept */
                m->shutting_down = false;
                pending_clear(m);
                m->group_timer = sd_event_source_disable_unref(m->group_timer);
                m->group = m->plan.n;
                if (m->lock_fd < 0 && logind_inhibit(m->logind, &m->lock_fd, &err) < 0)
                        cub_log(LOG_ERR, "graceful node shutdown: %s", err.msg);
                return;
        }
        if (m->shutting_down)
                return;
        begin(m);
}

/* the groups still to stop, from the current one: their periods' sum */
static int64_t period_left(const Shutdown *m) {
        int64_t s = 0;

        for (size_t g = m->group; g < m->plan.n; g++)
                s += m->plan.groups[g].grace_s;
        return s;
}

/* a SIGTERM waits for the sequence: the stop timeout covers left seconds of
 * it, then cubelet's exit */
static void hold_exit(Shutdown *m, int64_t left_s) {
        m->quit_when_done = true;
        (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%llu",
                          (unsigned long long) (left_s + 5) * CUB_USEC_PER_SEC + SHUTDOWN_EXIT_USEC);
}

static bool shutdown_terminate(void *userdata) {
        Shutdown *m = userdata;
        CubError err = {};
        bool stopping = false;

        if (m->period_s <= 0)
                return false;
        if (m->shutting_down) {
                if (m->group >= m->plan.n)
                        return false; /* done: the lock is released */
                cub_log(LOG_INFO, "graceful node shutdown: SIGTERM while pods stop; exiting once they have");
                hold_exit(m, period_left(m));
                return true;
        }
        if (logind_system_stopping(m->logind, &stopping, &err) < 0)
                cub_log(LOG_WARNING, "graceful node shutdown: SIGTERM: %s; exiting", err.msg);
        if (!stopping)
                return false; /* `systemctl stop cubelet`: the pods keep running */
        cub_log(LOG_INFO, "graceful node shutdown: systemd stops the system without logind's "
                          "PrepareForShutdown; stopping the pods before exiting");
        hold_exit(m, m->period_s);
        begin(m); /* quits at once when no pod is left */
        return true;
}

/* connects, makes InhibitDelayMaxSec cover the period, takes the lock */
static int logind_start(Shutdown *m, CubError *err) {
        uint64_t delay;
        int r;

        if (!m->logind) {
                r = logind_open(m->env->event, on_prepare, m, &m->logind, err);
                if (r < 0)
                        return r;
        }
        r = logind_inhibit_delay(m->logind, &delay, err);
        if (r >= 0 && (int64_t) (delay / CUB_USEC_PER_SEC) < m->period_s) {
                r = logind_override_delay(m->logind, SHUTDOWN_LOGIND_DIR, SHUTDOWN_LOGIND_DROPIN, m->period_s, err);
                if (r >= 0)
                        r = logind_inhibit_delay(m->logind, &delay, err);
                if (r >= 0 && (int64_t) (delay / CUB_USEC_PER_SEC) < m->period_s)
                        r = cub_err_set(err, EINVAL,
                                        "node shutdown manager was unable to update logind InhibitDelayMaxSec to "
                                        "%llds (shutdownGracePeriod), current value of InhibitDelayMaxSec (%llds) "
                                        "is less than requested shutdownGracePeriod",
                                        (long long) m->period_s, (long long) (delay / CUB_USEC_PER_SEC));
        }
        if (r >= 0 && m->lock_fd < 0)
                r = logind_inhibit(m->logind, &m->lock_fd, err);
        if (r < 0)
                m->logind = logind_free(m->logind);
        return r;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Shutdown *m = userdata;
        CubError err = {};
        uint64_t now = cub_now_usec(CLOCK_MONOTONIC);

        (void) usec;
        if (logind_start(m, &err) >= 0) {
                if (cub_retry_succeeded(&m->retry))
                        cub_log(LOG_INFO, "graceful node shutdown: logind answers again");
                m->error[0] = '\0';
                cub_log(LOG_INFO, "graceful node shutdown: holding a delay inhibitor lock for %llds",
                        (long long) m->period_s);
                return sd_event_source_set_enabled(s, SD_EVENT_OFF);
        }
        if (cub_retry_failed(&m->retry, &retry_logind, now, err.msg, (uint32_t) random()))
                cub_log(LOG_ERR, "graceful node shutdown: %s (retried with back-off)", err.msg);
        (void) snprintf(m->error, sizeof(m->error), "%s", err.msg);
        (void) sd_event_source_set_time(s, m->retry.next_usec);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int shutdown_new(const LcEnv *env, void **ret, CubError *err) {
        Shutdown *m = calloc(1, sizeof(*m));
        int r;

        if (!m)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->env = env;
        m->lock_fd = -1;
        r = shutdown_plan(env->kc, &m->plan, err);
        if (r < 0) {
                free(m);
                return r;
        }
        m->period_s = shutdown_period_requested(&m->plan);
        m->group = m->plan.n;
        *ret = m;
        return 0;
}

static void shutdown_attach(void *userdata) {
        Shutdown *m = userdata;
        int r;

        if (m->period_s <= 0)
                return; /* off, as kubelet's managerStub */
        r = sd_event_add_time(m->env->event, &m->retry_timer, CLOCK_MONOTONIC, 0, 0, on_retry, m);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->retry_timer, SD_EVENT_ONESHOT);
        if (r < 0)
                cub_log(LOG_ERR, "graceful node shutdown: timer: %s", strerror(-r));
}

static int shutdown_admit(void *userdata, const LcPod *p, LcAdmitResult *ret, CubError *err) {
        Shutdown *m = userdata;

        (void) p;
        (void) err;
        *ret = (LcAdmitResult){ .admit = !m->shutting_down };
        if (m->shutting_down) {
                (void) snprintf(ret->reason, sizeof(ret->reason), "%s", SHUTDOWN_NOT_ADMITTED_REASON);
                (void) snprintf(ret->message, sizeof(ret->message), "%s", SHUTDOWN_NOT_ADMITTED_MESSAGE);
        }
        return 0;
}

static void shutdown_pod_stopped(void *userdata, const char *uid) {
        Shutdown *m = userdata;

        for (size_t i = 0; i < m->n_pending; i++)
                if (strcmp(m->pending[i], uid) == 0) {
                        free(m->pending[i]);
                        m->pending[i] = m->pending[--m->n_pending];
                        if (m->n_pending == 0)
                                start_group(m, m->group + 1);
                        return;
                }
}

static void shutdown_node_status(void *userdata, void *json_doc) {
        Shutdown *m = userdata;
        json_t *groups, *o;

        if (m->period_s <= 0)
                return;
        groups = json_array();
        for (size_t i = 0; groups && i < m->plan.n; i++)
                json_array_append_new(groups,
                                      json_pack("{s:i,s:I}", "priority", (int) m->plan.groups[i].priority,
                                                "shutdownGracePeriodSeconds", (json_int_t) m->plan.groups[i].grace_s));
        o = json_pack("{s:I,s:o,s:b,s:b,s:s}", "periodSeconds", (json_int_t) m->period_s, "groups", groups,
                      "inhibitorLock", m->lock_fd >= 0, "shuttingDown", m->shutting_down, "error", m->error);
        if (o && m->started_usec)
                json_object_set_new(o, "startedUnixMicros", json_integer((json_int_t) m->started_usec));
        if (o && m->ended_usec)
                json_object_set_new(o, "endedUnixMicros", json_integer((json_int_t) m->ended_usec));
        json_object_set_new(json_doc, "gracefulShutdown", o);
}

static void shutdown_free(void *userdata) {
        Shutdown *m = userdata;

        m->retry_timer = sd_event_source_disable_unref(m->retry_timer);
        m->group_timer = sd_event_source_disable_unref(m->group_timer);
        m->logind = logind_free(m->logind);
        release_lock(m);
        pending_clear(m);
        shutdown_plan_done(&m->plan);
        free(m);
}

const LcManagerVtable mgr_shutdown = {
        .name = "shutdown",
        .new = shutdown_new,
        .free = shutdown_free,
        .attach = shutdown_attach,
        .admit = shutdown_admit,
        .pod_stopped = shutdown_pod_stopped,
        .node_status = shutdown_node_status,
        .terminate = shutdown_terminate,
};
