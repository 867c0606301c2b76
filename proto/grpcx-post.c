/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grpcx server, the owner's side: work posted to the owner's event loop, the
 * eventfd that wakes it, and the health report it reads. The design is
 * described in grpcx-server.c.
 */
#include "grpcx-internal.h"
#include "grpcx.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../agent/util/cleanup.h"

static void grpcx_wake_loop(GrpcxServer *s) {
        uint64_t one = 1;

        /* EAGAIN only when the counter is near overflow: the fd is readable then anyway */
        (void) !write(s->post_fd, &one, sizeof(one));
}

int grpcx_server_post(GrpcxServer *s, int (*fn)(void *userdata, void *arg), void *arg) {
        GrpcxPost p = { .fn = fn, .arg = arg };

        if (!fn)
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        if (s->posts_closed) {
                pthread_mutex_unlock(&s->lock);
                return -ECANCELED;
        }
        if (s->loop_thread_set && pthread_equal(pthread_self(), s->loop_thread)) {
                pthread_mutex_unlock(&s->lock);
                return -EDEADLK;
        }
        *s->posts_tail = &p;
        s->posts_tail = &p.next;
        grpcx_wake_loop(s);
        while (!p.done)
                pthread_cond_wait(&s->post_cond, &s->lock);
        pthread_mutex_unlock(&s->lock);
        return p.r;
}

int grpcx_server_dispatch_fd(const GrpcxServer *s) {
        return s->post_fd;
}

int grpcx_server_dispatch(GrpcxServer *s) {
        GrpcxPost *list;
        uint64_t v;
        int n = 0;

        /* non-blocking: EAGAIN when nothing was posted since the last read */
        (void) !read(s->post_fd, &v, sizeof(v));

        pthread_mutex_lock(&s->lock);
        s->loop_thread = pthread_self();
        s->loop_thread_set = true;
        list = TAKE_PTR(s->posts);
        s->posts_tail = &s->posts;
        pthread_mutex_unlock(&s->lock);

        while (list) {
                GrpcxPost *p = list;
                int r;

                list = p->next; /* p is gone once done is set */
                r = p->fn(s->userdata, p->arg);
                pthread_mutex_lock(&s->lock);
                p->r = r;
                p->done = true;
                pthread_cond_broadcast(&s->post_cond);
                pthread_mutex_unlock(&s->lock);
                n++;
        }
        return n;
}

/* Refuses new posts and answers the queued ones -ECANCELED. */
void grpcx_close_posts(GrpcxServer *s) {
        pthread_mutex_lock(&s->lock);
        s->posts_closed = true;
        while (s->posts) {
                GrpcxPost *p = s->posts;

                s->posts = p->next;
                p->r = -ECANCELED;
                p->done = true;
        }
        s->posts_tail = &s->posts;
        pthread_cond_broadcast(&s->post_cond);
        pthread_mutex_unlock(&s->lock);
}

/* ---- health ------------------------------------------------------------------ */

int grpcx_server_check(GrpcxServer *s, CubError *err) {
        char msg[GRPCX_HEALTH_MAX];
        bool unhealthy;

        pthread_mutex_lock(&s->lock);
        unhealthy = s->unhealthy;
        if (unhealthy)
                memcpy(msg, s->health, sizeof(msg));
        pthread_mutex_unlock(&s->lock);
        if (unhealthy)
                return cub_err_set(err, EIO, "%s", msg);
        return 0;
}

void grpcx_server_inject_arm_failures(GrpcxServer *s, unsigned n) {
        atomic_store(&s->inject_arm_failures, n);
}

/* Called by the serving thread after every arm attempt: records the first
 * method left unserved (or none) and wakes the loop when that changes. */
void grpcx_health_update(GrpcxServer *s) {
        char msg[GRPCX_HEALTH_MAX] = "";
        bool unhealthy = false;

        for (size_t i = 0; i < s->n_slots && !unhealthy; i++)
                if (!s->slots[i].armed) {
                        unhealthy = true;
                        (void) snprintf(msg, sizeof(msg),
                                        "gRPC server '%s': %s is not served: cannot request its calls "
                                        "(grpc_call_error %d), retrying",
                                        s->addr, s->slots[i].path, s->slots[i].arm_error);
                }
        if (!unhealthy && !s->unknown.armed) {
                unhealthy = true;
                (void) snprintf(msg, sizeof(msg),
                                "gRPC server '%s': calls to unknown methods are not answered: cannot request them "
                                "(grpc_call_error %d), retrying",
                                s->addr, s->unknown.arm_error);
        }
        s->rearm_backoff_usec =
                unhealthy ? (s->rearm_backoff_usec ? s->rearm_backoff_usec : GRPCX_REARM_BACKOFF_MIN_USEC) : 0;

        pthread_mutex_lock(&s->lock);
        if (unhealthy != s->unhealthy || strcmp(msg, s->health) != 0) {
                s->unhealthy = unhealthy;
                memcpy(s->health, msg, sizeof(msg));
                grpcx_wake_loop(s);
        }
        pthread_mutex_unlock(&s->lock);
}
