/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grpcx server streams: the handler threads, their sends and their end, the
 * reaper that joins them. The design is described in grpcx-server.c.
 */
#include "grpcx-internal.h"
#include "grpcx.h"

#include <errno.h>
#include <grpc/grpc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/util/cleanup.h"

void grpcx_drain_pluck_queue(grpc_completion_queue *cq) {
        grpc_completion_queue_shutdown(cq);
        while (grpc_completion_queue_pluck(cq, NULL, grpcx_forever(), NULL).type != GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(cq);
}

static bool grpcx_stream_pluck_close(GrpcxStream *st, gpr_timespec deadline) {
        if (!st->closed && grpc_completion_queue_pluck(st->cq, &st->tag_close, deadline, NULL).type == GRPC_OP_COMPLETE)
                st->closed = true;
        return st->closed;
}

static bool grpcx_stream_own_thread(const GrpcxStream *st) {
        return pthread_equal(pthread_self(), st->self);
}

bool grpcx_stream_cancelled(GrpcxStream *st) {
        if (!grpcx_stream_own_thread(st))
                return true;
        return grpcx_stream_pluck_close(st, gpr_inf_past(GPR_CLOCK_MONOTONIC));
}

int grpcx_stream_wait(GrpcxStream *st, uint64_t timeout_usec) {
        if (!grpcx_stream_own_thread(st))
                return -EPERM;
        return grpcx_stream_pluck_close(st, grpcx_deadline_in(timeout_usec)) ? -ECANCELED : 0;
}

int grpcx_stream_send(GrpcxStream *st, const ProtobufCMessage *msg, CubError *err) {
        grpc_op ops[2], *op = ops;
        grpc_byte_buffer *bb;
        grpc_event ev;

        if (!grpcx_stream_own_thread(st))
                return cub_err_set(err, EPERM, "stream %s: grpcx_stream_send() called off the stream's own thread",
                                   st->slot->path);
        if (st->closed)
                return cub_err_set(err, ECANCELED, "stream %s: the call is over (client went away or server stopping)",
                                   st->slot->path);

        bb = grpcx_pack(msg);
        memset(ops, 0, sizeof(ops));
        if (!st->sent_initial_md) {
                op->op = GRPC_OP_SEND_INITIAL_METADATA;
                op++;
        }
        op->op = GRPC_OP_SEND_MESSAGE;
        op->data.send_message.send_message = bb;
        op++;
        if (grpc_call_start_batch(st->call, ops, (size_t) (op - ops), &st->tag_send, NULL) != GRPC_CALL_OK) {
                grpc_byte_buffer_destroy(bb);
                return cub_err_set(err, EIO, "stream %s: cannot start a send", st->slot->path);
        }
        ev = grpc_completion_queue_pluck(st->cq, &st->tag_send, grpcx_forever(), NULL);
        grpc_byte_buffer_destroy(bb);
        st->sent_initial_md = true;
        if (ev.type != GRPC_OP_COMPLETE || !ev.success) {
                /* The call is dead: its close completes right away. */
                (void) grpcx_stream_pluck_close(st, grpcx_forever());
                return cub_err_set(err, ECANCELED, "stream %s: the call is over (client went away or server stopping)",
                                   st->slot->path);
        }
        return 0;
}

static void grpcx_stream_finish(GrpcxStream *st, grpc_status_code status, const char *details) {
        grpc_slice d = grpc_slice_from_copied_string(details);
        grpc_op ops[2], *op = ops;

        memset(ops, 0, sizeof(ops));
        if (!st->sent_initial_md) {
                op->op = GRPC_OP_SEND_INITIAL_METADATA;
                op++;
        }
        op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        op->data.send_status_from_server.status = status;
        op->data.send_status_from_server.status_details = *details ? &d : NULL;
        op++;
        if (grpc_call_start_batch(st->call, ops, (size_t) (op - ops), &st->tag_status, NULL) == GRPC_CALL_OK)
                (void) grpc_completion_queue_pluck(st->cq, &st->tag_status, grpcx_forever(), NULL);
        else
                (void) grpc_call_cancel(st->call, NULL);
        grpc_slice_unref(d);
        /* After the status (or a cancellation) the close completes. */
        (void) grpcx_stream_pluck_close(st, grpcx_forever());
}

static void *grpcx_stream_main(void *arg) {
        GrpcxStream *st = arg;
        GrpcxServer *s = st->server;
        const GrpcxMethod *m = &st->slot->method;
        char details[GRPCX_DETAILS_MAX] = "";
        grpc_status_code status;
        ProtobufCMessage *req;
        grpc_op op;

        st->self = pthread_self();
        (void) pthread_setname_np(st->self, "grpcx-stream");
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        op.data.recv_close_on_server.cancelled = &st->close_cancelled;
        if (grpc_call_start_batch(st->call, &op, 1, &st->tag_close, NULL) != GRPC_CALL_OK) {
                (void) grpc_call_cancel(st->call, NULL);
                st->closed = true;
        }

        req = grpcx_unpack(st->payload, m->request);
        if (!req) {
                grpcx_bad_request(m, !st->payload, details, sizeof(details));
                status = GRPC_STATUS_INVALID_ARGUMENT;
        } else {
                status = grpcx_checked_status(m, m->stream(s->userdata, req, st, details, sizeof(details)), details,
                                              sizeof(details));
                details[sizeof(details) - 1] = '\0';
                protobuf_c_message_free_unpacked(req, NULL);
        }
        grpcx_stream_finish(st, status, details);

        grpc_call_unref(TAKE_PTR(st->call));
        grpcx_drain_pluck_queue(TAKE_PTR(st->cq));

        /* Hand this thread to the reaper; st and s are not touched after the unlock. */
        pthread_mutex_lock(&s->lock);
        s->n_live--;
        st->next = s->finished;
        s->finished = st;
        pthread_cond_signal(&s->reap_cond);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static GrpcxStream *grpcx_stream_free(GrpcxStream *st) {
        if (!st)
                return NULL;
        if (st->payload)
                grpc_byte_buffer_destroy(st->payload);
        free(st);
        return NULL;
}

/* Joins stream threads as soon as they end; returns once told to quit and no
 * stream thread is left. */
void *grpcx_reaper_main(void *arg) {
        GrpcxServer *s = arg;

        pthread_mutex_lock(&s->lock);
        for (;;) {
                GrpcxStream *list = TAKE_PTR(s->finished);
                unsigned n = 0;

                if (list) {
                        pthread_mutex_unlock(&s->lock);
                        while (list) {
                                GrpcxStream *st = list;

                                list = st->next;
                                (void) pthread_join(st->self, NULL);
                                grpcx_stream_free(st);
                                n++;
                        }
                        pthread_mutex_lock(&s->lock);
                        s->n_threads -= n;
                        continue;
                }
                if (s->reaper_quit && s->n_threads == 0)
                        break;
                pthread_cond_wait(&s->reap_cond, &s->lock);
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static void grpcx_refuse_stream(grpc_call *call, grpc_byte_buffer *payload, grpc_completion_queue *cq,
                                const char *details) {
        if (payload)
                grpc_byte_buffer_destroy(payload);
        (void) grpc_call_cancel_with_status(call, GRPC_STATUS_RESOURCE_EXHAUSTED, details, NULL);
        grpc_call_unref(call);
        grpcx_drain_pluck_queue(cq);
}

void grpcx_serve_stream(GrpcxServer *s, const GrpcxSlot *slot, grpc_call *call, grpc_byte_buffer *payload,
                        grpc_completion_queue *cq) {
        char details[GRPCX_DETAILS_MAX];
        GrpcxStream *st;
        pthread_t thread;
        unsigned n_live;
        int r = ENOMEM;

        pthread_mutex_lock(&s->lock);
        n_live = s->n_live;
        if (n_live < GRPCX_SERVER_MAX_STREAMS) {
                s->n_live++;
                s->n_threads++;
        }
        pthread_mutex_unlock(&s->lock);
        if (n_live >= GRPCX_SERVER_MAX_STREAMS) {
                (void) snprintf(details, sizeof(details), "%s: too many open streams (%u, the limit is %d)", slot->path,
                                n_live, GRPCX_SERVER_MAX_STREAMS);
                grpcx_refuse_stream(call, payload, cq, details);
                return;
        }

        st = calloc(1, sizeof(*st));
        if (st) {
                st->server = s;
                st->slot = slot;
                st->call = call;
                st->cq = cq;
                st->payload = payload;
                /* Once the thread runs, st is its own: it may end, queue st on
                 * s->finished and be joined and freed by the reaper before
                 * pthread_create() even returns here, so st (and the thread's
                 * id) are not touched after this call succeeds. The thread
                 * names itself and keeps its own id for the reaper's join. */
                r = pthread_create(&thread, NULL, grpcx_stream_main, st);
                if (r == 0)
                        return;
                st->payload = NULL;
                grpcx_stream_free(st);
        }
        pthread_mutex_lock(&s->lock);
        s->n_live--;
        s->n_threads--;
        pthread_cond_signal(&s->reap_cond);
        pthread_mutex_unlock(&s->lock);
        (void) snprintf(details, sizeof(details), "%s: cannot start a stream: %s", slot->path, strerror(r));
        grpcx_refuse_stream(call, payload, cq, details);
}

unsigned grpcx_server_n_streams(GrpcxServer *s) {
        unsigned n;

        pthread_mutex_lock(&s->lock);
        n = s->n_live;
        pthread_mutex_unlock(&s->lock);
        return n;
}

unsigned grpcx_server_n_stream_threads(GrpcxServer *s) {
        unsigned n;

        pthread_mutex_lock(&s->lock);
        n = s->n_threads;
        pthread_mutex_unlock(&s->lock);
        return n;
}
