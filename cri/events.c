/* SPDX-License-Identifier: Apache-2.0 */
/*
 * containerd's event stream (containerd.services.events.v1.Events/Subscribe,
 * served on the same socket as the CRI): the evented half of the relist.
 * containerd 1.6 has no CRI GetContainerEvents, so a relist every second was
 * the only way to see a container end; with this stream the agent relists
 * when the runtime says something changed, and rarely otherwise.
 *
 * One thread holds the call and reads it; the loop only sees an eventfd that
 * counts the events it should relist for (a (re)subscription counts too: the
 * events missed meanwhile are unknown). The thread never touches the agent.
 * A stream that ends is subscribed again after a back-off (1 s doubling to
 * 30 s); a runtime without the service (UNIMPLEMENTED) is tried again every
 * 5 minutes and the agent keeps relisting on its timer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../agent/util/cleanup.h"
#include "../agent/util/log.h"
#include "../agent/util/retry.h"
#include "../agent/util/time.h"
#include "cri-internal.h"
#include "cri.h"
#include "proto/containerd/events.pb-c.h"

#define EVENTS_METHOD "/containerd.services.events.v1.Events/Subscribe"
/* the stream's reconnects: the agent's one retry policy (agent/util/retry.h),
 * 1 s doubling to 30 s; a runtime without the Events service is asked again
 * after 5 minutes */
static const CubRetryPolicy events_retry = {
        .base_usec = 1 * CUB_USEC_PER_SEC,
        .max_usec = 30 * CUB_USEC_PER_SEC,
        .factor = 2,
        .jitter_pct = 0,
};
#define UNSUPPORTED_RETRY_SEC 300
#define STREAM_PROVEN_USEC (5 * CUB_USEC_PER_SEC) /* a stream that lived this long worked */

struct CriEvents {
        GrpcxChannel *channel; /* the CRI client's: one connection */
        char *ns;
        int fd; /* eventfd: the loop's side */
        pthread_t thread;
        bool thread_started;
        pthread_mutex_t lock; /* everything below */
        pthread_cond_t cond;
        bool stopping;
        GrpcxClientStream *call;
        CriEventsState state;
        char error[CUB_ERR_MSG_MAX];
        char logged[CUB_ERR_MSG_MAX]; /* the failure last logged; "" when none is outstanding */
        uint64_t n_events;            /* wanted events read, for status */
};

const char *cri_events_state_to_string(CriEventsState s) {
        static const char *const names[_CRI_EVENTS_STATE_MAX] = {
                [CRI_EVENTS_CONNECTING] = "connecting",
                [CRI_EVENTS_SUBSCRIBED] = "subscribed",
                [CRI_EVENTS_UNSUPPORTED] = "unsupported",
        };

        return s >= 0 && s < _CRI_EVENTS_STATE_MAX ? names[s] : NULL;
}

/* whether an Envelope asks for a relist: a task's exit, start or OOM kill,
 * or a container deleted, in namespace ns */
static bool envelope_wanted(const char *ns, const Containerd__Services__Events__V1__Envelope *e) {
        const Containerd__Services__Events__V1__TaskExit *te;
        const char *t = e->topic;
        bool exec;

        if (!e->namespace_ || strcmp(e->namespace_, ns) != 0 || !t)
                return false;
        if (strcmp(t, "/tasks/oom") == 0 || strcmp(t, "/tasks/start") == 0 || strcmp(t, "/containers/delete") == 0)
                return true;
        if (strcmp(t, "/tasks/exit") != 0)
                return false;
        if (!e->event || e->event->value.len == 0)
                return true;
        /* an exec's exit (ExecSync, exec probes) changes no container: its id
         * is the exec's, not the container's */
        te = containerd__services__events__v1__task_exit__unpack(NULL, e->event->value.len, e->event->value.data);
        if (!te)
                return true;
        exec = te->id && *te->id && te->container_id && strcmp(te->id, te->container_id) != 0;
        containerd__services__events__v1__task_exit__free_unpacked((Containerd__Services__Events__V1__TaskExit *) te,
                                                                   NULL);
        return !exec;
}

bool cri_event_wanted(const char *ns, const uint8_t *envelope, size_t len) {
        Containerd__Services__Events__V1__Envelope *e =
                containerd__services__events__v1__envelope__unpack(NULL, len, envelope);
        bool wanted;

        if (!e)
                return false;
        wanted = envelope_wanted(ns, e);
        containerd__services__events__v1__envelope__free_unpacked(e, NULL);
        return wanted;
}

static void events_signal(CriEvents *e) {
        uint64_t one = 1;

        (void) !write(e->fd, &one, sizeof(one));
}

/* The journal hears of a failure once per distinct error, and of a
 * subscription only when no failure is outstanding: a call on a dead socket
 * starts and fails at once, so each back-off would otherwise log both lines
 * (every 30 s while the runtime is down). A stream that delivers an event,
 * or that lived a while, clears the failure (stream_proven). */
static void set_state(CriEvents *e, CriEventsState st, const char *error) {
        pthread_mutex_lock(&e->lock);
        if (st == CRI_EVENTS_SUBSCRIBED) {
                if (e->state != st && !e->logged[0])
                        cub_log(LOG_INFO, "runtime events: subscribing to %s on '%s' (namespace %s)", EVENTS_METHOD,
                                grpcx_channel_target(e->channel), e->ns);
        } else if (error && !e->stopping && strcmp(e->logged, error) != 0) {
                cub_log(LOG_WARNING, "runtime events: %s; relisting on the timer%s", error,
                        st == CRI_EVENTS_UNSUPPORTED ? ", trying again in 5 minutes" : " until the stream is back");
                (void) snprintf(e->logged, sizeof(e->logged), "%s", error);
        }
        e->state = st;
        (void) snprintf(e->error, sizeof(e->error), "%s", error ? error : "");
        pthread_mutex_unlock(&e->lock);
}

static void stream_proven(CriEvents *e, bool say) {
        pthread_mutex_lock(&e->lock);
        if (e->logged[0] && say)
                cub_log(LOG_INFO, "runtime events: the stream on '%s' is back", grpcx_channel_target(e->channel));
        e->logged[0] = '\0';
        pthread_mutex_unlock(&e->lock);
}

/* waits sec seconds or until stopping; returns whether stopping */
static bool wait_or_stop(CriEvents *e, unsigned sec) {
        struct timespec ts;
        bool stop;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += sec;
        pthread_mutex_lock(&e->lock);
        while (!e->stopping && pthread_cond_timedwait(&e->cond, &e->lock, &ts) != ETIMEDOUT)
                ;
        stop = e->stopping;
        pthread_mutex_unlock(&e->lock);
        return stop;
}

static int subscribe(CriEvents *e, CubError *err) {
        /* filters are ORed; the fields of one are ANDed */
        char f_exit[128], f_oom[128], f_start[128], f_delete[128];
        char *filters[] = { f_exit, f_oom, f_start, f_delete };
        Containerd__Services__Events__V1__SubscribeRequest req =
                CONTAINERD__SERVICES__EVENTS__V1__SUBSCRIBE_REQUEST__INIT;
        int r;

        (void) snprintf(f_exit, sizeof(f_exit), "namespace==\"%s\",topic==\"/tasks/exit\"", e->ns);
        (void) snprintf(f_oom, sizeof(f_oom), "namespace==\"%s\",topic==\"/tasks/oom\"", e->ns);
        (void) snprintf(f_start, sizeof(f_start), "namespace==\"%s\",topic==\"/tasks/start\"", e->ns);
        (void) snprintf(f_delete, sizeof(f_delete), "namespace==\"%s\",topic==\"/containers/delete\"", e->ns);
        req.filters = filters;
        req.n_filters = sizeof(filters) / sizeof(filters[0]);
        pthread_mutex_lock(&e->lock);
        if (e->stopping)
                r = cub_err_set(err, ECANCELED, "stopping");
        else
                r = grpcx_stream_call_start(e->channel, EVENTS_METHOD, &req.base, UINT64_MAX,
                                            /* wait_for_ready= */ false, &e->call, err);
        pthread_mutex_unlock(&e->lock);
        return r;
}

static void call_end(CriEvents *e) {
        GrpcxClientStream *s;

        pthread_mutex_lock(&e->lock);
        s = TAKE_PTR(e->call);
        pthread_mutex_unlock(&e->lock);
        (void) grpcx_stream_call_free(s);
}

static void *events_main(void *arg) {
        CriEvents *e = arg;
        CubRetry retry = {};

        for (;;) {
                CubError err = {};
                uint64_t now;
                unsigned wait;
                int r;

                r = subscribe(e, &err);
                if (r >= 0) {
                        uint64_t t0 = cub_now_usec(CLOCK_MONOTONIC);

                        set_state(e, CRI_EVENTS_SUBSCRIBED, NULL);
                        events_signal(e); /* what happened before the subscription is unknown */
                        for (;;) {
                                ProtobufCMessage *m = NULL;

                                r = grpcx_stream_call_read(
                                        e->call, &containerd__services__events__v1__envelope__descriptor, &m, &err);
                                if (r <= 0)
                                        break;
                                stream_proven(e, true); /* the stream works */
                                (void) cub_retry_succeeded(&retry);
                                if (envelope_wanted(e->ns, (const Containerd__Services__Events__V1__Envelope *) m)) {
                                        pthread_mutex_lock(&e->lock);
                                        e->n_events++;
                                        pthread_mutex_unlock(&e->lock);
                                        events_signal(e);
                                }
                                protobuf_c_message_free_unpacked(m, NULL);
                        }
                        call_end(e);
                        if (cub_now_usec(CLOCK_MONOTONIC) - t0 >= STREAM_PROVEN_USEC)
                                stream_proven(e, false); /* its end is news */
                        if (r == 0)
                                (void) cub_err_set(&err, EPIPE, "'%s': %s: the runtime ended the stream",
                                                   grpcx_channel_target(e->channel), EVENTS_METHOD);
                }
                if (r == -ECANCELED && wait_or_stop(e, 0))
                        break;
                set_state(e, r == -EOPNOTSUPP ? CRI_EVENTS_UNSUPPORTED : CRI_EVENTS_CONNECTING, err.msg);
                events_signal(e); /* the loop goes back to its short relist */
                now = cub_now_usec(CLOCK_MONOTONIC);
                (void) cub_retry_failed(&retry, &events_retry, now, err.msg, 0);
                wait = r == -EOPNOTSUPP
                               ? UNSUPPORTED_RETRY_SEC
                               : (unsigned) ((retry.next_usec - now + CUB_USEC_PER_SEC - 1) / CUB_USEC_PER_SEC);
                if (wait_or_stop(e, wait))
                        break;
        }
        return NULL;
}

int cri_events_start(CriClient *c, const char *ns, CriEvents **ret, CubError *err) {
        CriEvents *e;
        pthread_condattr_t ca;

        e = calloc(1, sizeof(*e));
        if (!e)
                return cub_err_set(err, ENOMEM, "out of memory");
        e->channel = c->channel;
        e->ns = strdup(ns);
        e->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (!e->ns || e->fd < 0) {
                int r = e->fd < 0 ? cub_err_set(err, errno, "runtime events: eventfd: %m")
                                  : cub_err_set(err, ENOMEM, "out of memory");
                if (e->fd >= 0)
                        close(e->fd);
                free(e->ns);
                free(e);
                return r;
        }
        (void) pthread_mutex_init(&e->lock, NULL);
        (void) pthread_condattr_init(&ca);
        (void) pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        (void) pthread_cond_init(&e->cond, &ca);
        (void) pthread_condattr_destroy(&ca);
        e->state = CRI_EVENTS_CONNECTING;
        if (pthread_create(&e->thread, NULL, events_main, e) != 0) {
                cri_events_free(e);
                return cub_err_set(err, EAGAIN, "runtime events: cannot start the stream's thread");
        }
        (void) pthread_setname_np(e->thread, "cub-events");
        e->thread_started = true;
        *ret = e;
        return 0;
}

CriEvents *cri_events_free(CriEvents *e) {
        if (!e)
                return NULL;
        pthread_mutex_lock(&e->lock);
        e->stopping = true;
        if (e->call)
                grpcx_stream_call_cancel(e->call);
        pthread_cond_broadcast(&e->cond);
        pthread_mutex_unlock(&e->lock);
        if (e->thread_started)
                (void) pthread_join(e->thread, NULL);
        (void) grpcx_stream_call_free(e->call);
        pthread_cond_destroy(&e->cond);
        pthread_mutex_destroy(&e->lock);
        if (e->fd >= 0)
                close(e->fd);
        free(e->ns);
        free(e);
        return NULL;
}

int cri_events_fd(const CriEvents *e) {
        return e->fd;
}

uint64_t cri_events_take(CriEvents *e) {
        uint64_t n = 0;

        if (read(e->fd, &n, sizeof(n)) != (ssize_t) sizeof(n))
                return 0;
        return n;
}

CriEventsState cri_events_state(CriEvents *e, uint64_t *ret_events, char *error, size_t n_error) {
        CriEventsState s;

        pthread_mutex_lock(&e->lock);
        s = e->state;
        if (ret_events)
                *ret_events = e->n_events;
        if (error && n_error > 0)
                (void) snprintf(error, n_error, "%s", e->error);
        pthread_mutex_unlock(&e->lock);
        return s;
}
