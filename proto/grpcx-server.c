/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grpcx server: unary and server-streaming methods over gRPC core. This file
 * holds setup, the serving thread, requests, unary replies and stop;
 * grpcx-stream.c the streams, their threads and the reaper; grpcx-post.c the
 * posts to the owner's loop, its eventfd and the health report.
 *
 * Threads and queues:
 *   - one completion queue ("notification queue", driven with _next) and one
 *     serving thread. Every method has one outstanding
 *     grpc_server_request_registered_call; calls to unknown methods are caught
 *     by one outstanding grpc_server_request_call and answered UNIMPLEMENTED
 *     (gRPC core itself would leave them pending until their deadline).
 *   - unary calls are bound to the notification queue: the handler runs on the
 *     serving thread and the reply batch completes there too.
 *   - a streaming call is bound to a pluck queue of its own, created when its
 *     request is armed; its handler runs on a thread of its own, which is the
 *     only one that plucks that queue. At most GRPCX_SERVER_MAX_STREAMS
 *     handlers run at once; a stream beyond that is answered
 *     RESOURCE_EXHAUSTED. pthread_create() hands the GrpcxStream to its
 *     thread, which names itself and records its own id; the serving thread
 *     never touches it again. A stream thread that ends queues itself on
 *     `finished` and wakes the reaper thread, which joins it at once and
 *     frees the GrpcxStream.
 *   - a request that cannot be re-armed leaves its method unserved: the server
 *     turns unhealthy (grpcx_server_check()), and the serving thread retries
 *     with a backoff (it waits on the queue with a deadline while a request is
 *     missing) until the method is served again.
 *   - grpcx_server_post(): handlers queue work for the owner's event loop and
 *     block until the loop ran it from grpcx_server_dispatch(); an eventfd
 *     tells the loop that work is queued.
 *
 * Every tag handed to gRPC points at a struct whose first member is a
 * GrpcxTagKind, so one dispatcher serves the whole notification queue.
 *
 * Stop: posts are refused (queued ones answered -ECANCELED),
 * shutdown_and_notify + cancel_all_calls; the serving thread returns when the
 * shutdown tag arrives, stream handlers see -ECANCELED and return, the reaper
 * joins their threads and returns, then the server and the queue are
 * destroyed and grpc_shutdown() comes last.
 *
 * s->lock guards the stream counts and lists, the post queue, the loop's
 * thread and the health report; it is never held across a gRPC call or a
 * handler.
 */
#include "grpcx-internal.h"
#include "grpcx.h"

#include <errno.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../agent/util/cleanup.h"

#define GRPCX_MAX_RECV_MESSAGE (16 << 20)

void grpcx_bad_request(const GrpcxMethod *m, bool missing, char *details, size_t size) {
        if (missing)
                (void) snprintf(details, size, "%s: missing request message (expected %s)", m->path, m->request->name);
        else
                (void) snprintf(details, size, "%s: cannot decode the request as %s", m->path, m->request->name);
}

/* Handlers return a gRPC status code; anything else is their bug, reported as UNKNOWN. */
grpc_status_code grpcx_checked_status(const GrpcxMethod *m, int status, char *details, size_t size) {
        if (status >= GRPC_STATUS_OK && status <= GRPC_STATUS_UNAUTHENTICATED)
                return (grpc_status_code) status;
        (void) snprintf(details, size, "%s: handler returned an invalid status %d", m->path, status);
        return GRPC_STATUS_UNKNOWN;
}

/* ---- replies on the notification queue ----------------------------------- */

static void grpcx_reply_free(GrpcxReply *r) {
        if (r->message)
                grpc_byte_buffer_destroy(r->message);
        grpc_slice_unref(r->details);
        grpc_call_unref(r->call);
        free(r);
}

/* Sends initial metadata, the message (when not NULL), the status and waits
 * for the close; takes ownership of call and message. */
static void grpcx_reply(grpc_call *call, grpc_byte_buffer *message, grpc_status_code status, const char *details) {
        GrpcxReply *r;
        grpc_op ops[4], *op = ops;

        r = calloc(1, sizeof(*r));
        if (!r) {
                if (message)
                        grpc_byte_buffer_destroy(message);
                (void) grpc_call_cancel_with_status(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL);
                grpc_call_unref(call);
                return;
        }
        r->kind = GRPCX_TAG_REPLY;
        r->call = call;
        r->message = message;
        r->details = details && *details ? grpc_slice_from_copied_string(details) : grpc_empty_slice();

        memset(ops, 0, sizeof(ops));
        op->op = GRPC_OP_SEND_INITIAL_METADATA;
        op++;
        if (message) {
                op->op = GRPC_OP_SEND_MESSAGE;
                op->data.send_message.send_message = message;
                op++;
        }
        op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        op->data.send_status_from_server.status = status;
        op->data.send_status_from_server.status_details = details && *details ? &r->details : NULL;
        op++;
        op->op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        op->data.recv_close_on_server.cancelled = &r->cancelled;
        op++;

        if (grpc_call_start_batch(call, ops, (size_t) (op - ops), r, NULL) != GRPC_CALL_OK) {
                (void) grpc_call_cancel(call, NULL);
                grpcx_reply_free(r);
        }
}

static void grpcx_serve_unary(GrpcxServer *s, const GrpcxSlot *slot, grpc_call *call, grpc_byte_buffer *payload) {
        const GrpcxMethod *m = &slot->method;
        char details[GRPCX_DETAILS_MAX] = "";
        ProtobufCMessage *req, *resp = NULL;
        grpc_byte_buffer *message = NULL;
        grpc_status_code status;

        req = grpcx_unpack(payload, m->request);
        if (!req) {
                grpcx_bad_request(m, !payload, details, sizeof(details));
                grpcx_reply(call, NULL, GRPC_STATUS_INVALID_ARGUMENT, details);
                return;
        }

        status = grpcx_checked_status(m, m->unary(s->userdata, req, &resp, details, sizeof(details)), details,
                                      sizeof(details));
        details[sizeof(details) - 1] = '\0';
        protobuf_c_message_free_unpacked(req, NULL);

        if (status == GRPC_STATUS_OK && !resp) {
                (void) snprintf(details, sizeof(details), "%s: handler returned no reply", m->path);
                status = GRPC_STATUS_INTERNAL;
        }
        if (resp) {
                if (status == GRPC_STATUS_OK)
                        message = grpcx_pack(resp);
                if (m->free_resp)
                        m->free_resp(s->userdata, resp);
        }
        grpcx_reply(call, message, status, details);
}

/* ---- requests -------------------------------------------------------------- */

/* The test seam of grpcx_server_inject_arm_failures(). */
static bool grpcx_arm_fault(GrpcxServer *s) {
        unsigned n = atomic_load(&s->inject_arm_failures);

        while (n > 0)
                if (atomic_compare_exchange_weak(&s->inject_arm_failures, &n, n - 1))
                        return true;
        return false;
}

static int grpcx_slot_arm(GrpcxServer *s, GrpcxSlot *slot) {
        grpc_call_error ce;

        grpc_metadata_array_init(&slot->md);
        slot->call = NULL;
        slot->payload = NULL;
        slot->call_cq = slot->method.stream ? grpc_completion_queue_create_for_pluck(NULL) : s->cq;
        ce = grpcx_arm_fault(s)
                     ? GRPC_CALL_ERROR
                     : grpc_server_request_registered_call(s->server, slot->registered, &slot->call, &slot->deadline,
                                                           &slot->md, &slot->payload, slot->call_cq, s->cq, slot);
        if (ce != GRPC_CALL_OK) {
                slot->arm_error = (int) ce;
                grpc_metadata_array_destroy(&slot->md);
                if (slot->method.stream)
                        grpcx_drain_pluck_queue(slot->call_cq);
                slot->call_cq = NULL;
                return -EIO;
        }
        slot->armed = true;
        return 0;
}

static int grpcx_unknown_arm(GrpcxServer *s) {
        GrpcxUnknownSlot *u = &s->unknown;
        grpc_call_error ce;

        u->kind = GRPCX_TAG_UNKNOWN;
        u->call = NULL;
        grpc_call_details_init(&u->details);
        grpc_metadata_array_init(&u->md);
        ce = grpcx_arm_fault(s) ? GRPC_CALL_ERROR
                                : grpc_server_request_call(s->server, &u->call, &u->details, &u->md, s->cq, s->cq, u);
        if (ce != GRPC_CALL_OK) {
                u->arm_error = (int) ce;
                grpc_call_details_destroy(&u->details);
                grpc_metadata_array_destroy(&u->md);
                return -EIO;
        }
        u->armed = true;
        return 0;
}

static void grpcx_on_request(GrpcxServer *s, GrpcxSlot *slot, bool success) {
        grpc_call *call = TAKE_PTR(slot->call);
        grpc_byte_buffer *payload = TAKE_PTR(slot->payload);
        grpc_completion_queue *cq = TAKE_PTR(slot->call_cq);

        slot->armed = false;
        grpc_metadata_array_destroy(&slot->md);

        if (success && call && !atomic_load(&s->stopping)) {
                (void) grpcx_slot_arm(s, slot);
                grpcx_health_update(s);
                if (slot->method.stream)
                        grpcx_serve_stream(s, slot, call, payload, cq);
                else {
                        grpcx_serve_unary(s, slot, call, payload);
                        if (payload)
                                grpc_byte_buffer_destroy(payload);
                }
                return;
        }

        /* Failed request (server shutting down), or a call that raced with stop. */
        if (payload)
                grpc_byte_buffer_destroy(payload);
        if (call) {
                (void) grpc_call_cancel_with_status(call, GRPC_STATUS_UNAVAILABLE, "server stopping", NULL);
                grpc_call_unref(call);
        }
        if (slot->method.stream && cq)
                grpcx_drain_pluck_queue(cq);
}

static void grpcx_on_unknown(GrpcxServer *s, bool success) {
        GrpcxUnknownSlot *u = &s->unknown;
        grpc_call *call = TAKE_PTR(u->call);
        char details[GRPCX_DETAILS_MAX];

        u->armed = false;
        if (success && call) {
                char *method = grpc_slice_to_c_string(u->details.method);

                (void) snprintf(details, sizeof(details), "unknown method %s", method ? method : "(null)");
                gpr_free(method);
        }
        grpc_call_details_destroy(&u->details);
        grpc_metadata_array_destroy(&u->md);

        if (!call)
                return;
        if (!success || atomic_load(&s->stopping)) {
                (void) grpc_call_cancel_with_status(call, GRPC_STATUS_UNAVAILABLE, "server stopping", NULL);
                grpc_call_unref(call);
                return;
        }
        (void) grpcx_unknown_arm(s);
        grpcx_health_update(s);
        grpcx_reply(call, NULL, GRPC_STATUS_UNIMPLEMENTED, details);
}

/* Returns false for the shutdown tag. */
static bool grpcx_dispatch(GrpcxServer *s, const grpc_event *ev) {
        GrpcxTagKind *kind = ev->tag;

        switch (*kind) {
        case GRPCX_TAG_REQUEST:
                grpcx_on_request(s, (GrpcxSlot *) (void *) kind, ev->success);
                return true;
        case GRPCX_TAG_UNKNOWN:
                grpcx_on_unknown(s, ev->success);
                return true;
        case GRPCX_TAG_REPLY:
                grpcx_reply_free((GrpcxReply *) (void *) kind);
                return true;
        case GRPCX_TAG_SHUTDOWN:
                return false;
        }
        return true;
}

/* Arms every request that is missing (after a failed re-arm). */
static void grpcx_rearm(GrpcxServer *s) {
        uint64_t backoff = s->rearm_backoff_usec;

        for (size_t i = 0; i < s->n_slots; i++)
                if (!s->slots[i].armed)
                        (void) grpcx_slot_arm(s, &s->slots[i]);
        if (!s->unknown.armed)
                (void) grpcx_unknown_arm(s);
        grpcx_health_update(s);
        if (s->rearm_backoff_usec)
                s->rearm_backoff_usec =
                        backoff * 2 > GRPCX_REARM_BACKOFF_MAX_USEC ? GRPCX_REARM_BACKOFF_MAX_USEC : backoff * 2;
}

static void *grpcx_serve(void *arg) {
        GrpcxServer *s = arg;

        for (;;) {
                /* while a request is missing, wake up to arm it again */
                gpr_timespec deadline = s->rearm_backoff_usec && !atomic_load(&s->stopping)
                                                ? grpcx_deadline_in(s->rearm_backoff_usec)
                                                : grpcx_forever();
                grpc_event ev = grpc_completion_queue_next(s->cq, deadline, NULL);

                if (ev.type == GRPC_QUEUE_SHUTDOWN)
                        break;
                if (ev.type == GRPC_OP_COMPLETE && !grpcx_dispatch(s, &ev))
                        break;
                if (ev.type == GRPC_QUEUE_TIMEOUT && !atomic_load(&s->stopping))
                        grpcx_rearm(s);
        }
        return NULL;
}

/* ---- start / stop ----------------------------------------------------------- */

GrpcxServer *grpcx_server_stop(GrpcxServer *s) {
        if (!s)
                return NULL;

        atomic_store(&s->stopping, true);
        if (s->lock_initialized)
                grpcx_close_posts(s);
        if (s->server && s->started) {
                grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
                grpc_server_cancel_all_calls(s->server);
                if (s->thread_started)
                        (void) pthread_join(s->thread, NULL);
                else
                        grpcx_serve(s);
        }
        /* No stream starts any more; handlers saw -ECANCELED and return. */
        if (s->reaper_started) {
                pthread_mutex_lock(&s->lock);
                s->reaper_quit = true;
                pthread_cond_signal(&s->reap_cond);
                pthread_mutex_unlock(&s->lock);
                (void) pthread_join(s->reaper, NULL);
        }
        if (s->server)
                grpc_server_destroy(s->server);
        if (s->cq) {
                grpc_completion_queue_shutdown(s->cq);
                for (;;) {
                        grpc_event ev = grpc_completion_queue_next(s->cq, grpcx_forever(), NULL);

                        if (ev.type == GRPC_QUEUE_SHUTDOWN)
                                break;
                        if (ev.type == GRPC_OP_COMPLETE)
                                (void) grpcx_dispatch(s, &ev);
                }
                grpc_completion_queue_destroy(s->cq);
        }
        for (size_t i = 0; i < s->n_slots; i++)
                free(s->slots[i].path);
        free(s->slots);
        free(s->addr);
        if (s->post_fd >= 0)
                (void) close(s->post_fd);
        if (s->lock_initialized) {
                pthread_mutex_destroy(&s->lock);
                pthread_cond_destroy(&s->reap_cond);
                pthread_cond_destroy(&s->post_cond);
        }
        if (s->grpc_initialized)
                grpc_shutdown();
        free(s);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(GrpcxServer *, grpcx_server_stop);

/* The file system path of a "unix:" address, for error messages. */
static const char *grpcx_unix_path(const char *addr) {
        if (strncmp(addr, "unix://", 7) == 0)
                return addr + 7;
        if (strncmp(addr, "unix:", 5) == 0)
                return addr + 5;
        return NULL;
}

/* add_http2_port says only "0" (gRPC logs the cause): find the errno from the file system. */
static int grpcx_listen_errno(const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        struct stat st;

        if (!copy)
                return ENOMEM;
        if (access(dirname(copy), W_OK | X_OK) < 0)
                return errno;
        if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
                return EEXIST; /* gRPC replaces stale sockets only */
        return EADDRNOTAVAIL;
}

static int grpcx_check_methods(const GrpcxMethod *methods, size_t n, CubError *err) {
        for (size_t i = 0; i < n; i++) {
                const GrpcxMethod *m = &methods[i];

                if (!m->path || m->path[0] != '/')
                        return cub_err_set(err, EINVAL, "gRPC method %zu: path '%s' does not start with '/'", i,
                                           m->path ? m->path : "(null)");
                if (!m->request)
                        return cub_err_set(err, EINVAL, "gRPC method %s: no request descriptor", m->path);
                if (!m->unary == !m->stream)
                        return cub_err_set(err, EINVAL, "gRPC method %s: needs exactly one of unary and stream",
                                           m->path);
        }
        return 0;
}

int grpcx_server_start(const char *addr, const GrpcxMethod *methods, size_t n_methods, void *userdata,
                       GrpcxServer **ret, CubError *err) {
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        grpc_server_credentials *creds;
        grpc_arg args[1] = {
                { .type = GRPC_ARG_INTEGER,
                  .key = (char *) GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                  .value.integer = GRPCX_MAX_RECV_MESSAGE },
        };
        grpc_channel_args cargs = { .num_args = 1, .args = args };
        const char *path;
        int port, r;

        if (!addr || !*addr)
                return cub_err_set(err, EINVAL, "gRPC server: empty address");
        r = grpcx_check_methods(methods, n_methods, err);
        if (r < 0)
                return r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return cub_err_set(err, ENOMEM, "out of memory");
        atomic_init(&s->stopping, false);
        atomic_init(&s->inject_arm_failures, 0);
        s->shutdown_tag = GRPCX_TAG_SHUTDOWN;
        s->userdata = userdata;
        s->posts_tail = &s->posts;
        s->post_fd = -1;
        if (pthread_mutex_init(&s->lock, NULL) != 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (pthread_cond_init(&s->reap_cond, NULL) != 0) {
                pthread_mutex_destroy(&s->lock);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        if (pthread_cond_init(&s->post_cond, NULL) != 0) {
                pthread_cond_destroy(&s->reap_cond);
                pthread_mutex_destroy(&s->lock);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        s->lock_initialized = true;
        s->post_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->post_fd < 0) {
                r = errno;
                return cub_err_set(err, r, "gRPC server '%s': cannot create an eventfd: %s", addr, strerror(r));
        }
        if (addr[0] == '/' ? asprintf(&s->addr, "unix:%s", addr) < 0 : !(s->addr = strdup(addr))) {
                s->addr = NULL;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        path = grpcx_unix_path(s->addr);
        if (!path || !*path)
                return cub_err_set(err, EINVAL, "gRPC server address '%s': only unix sockets are supported", addr);
        if (strlen(path) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))
                return cub_err_set(err, ENAMETOOLONG, "gRPC server address '%s': socket path too long", addr);

        s->slots = calloc(n_methods ? n_methods : 1, sizeof(*s->slots));
        if (!s->slots)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < n_methods; i++) {
                GrpcxSlot *slot = &s->slots[i];

                slot->kind = GRPCX_TAG_REQUEST;
                slot->server = s;
                slot->method = methods[i];
                slot->path = strdup(methods[i].path);
                if (!slot->path)
                        return cub_err_set(err, ENOMEM, "out of memory");
                slot->method.path = slot->path;
                s->n_slots++;
        }

        grpc_init();
        s->grpc_initialized = true;
        s->server = grpc_server_create(&cargs, NULL);
        s->cq = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(s->server, s->cq, NULL);
        for (size_t i = 0; i < s->n_slots; i++) {
                s->slots[i].registered = grpc_server_register_method(s->server, s->slots[i].path, NULL,
                                                                     GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
                if (!s->slots[i].registered)
                        return cub_err_set(err, EINVAL, "gRPC server '%s': cannot register method %s (twice?)", s->addr,
                                           s->slots[i].path);
        }

        creds = grpc_insecure_server_credentials_create();
        port = grpc_server_add_http2_port(s->server, s->addr, creds);
        grpc_server_credentials_release(creds);
        if (port == 0) {
                int e = grpcx_listen_errno(path);

                return cub_err_set(err, e, "gRPC server: cannot listen on '%s': %s", s->addr, strerror(e));
        }

        grpc_server_start(s->server);
        s->started = true;
        for (size_t i = 0; i < s->n_slots; i++)
                if (grpcx_slot_arm(s, &s->slots[i]) < 0)
                        return cub_err_set(err, EIO, "gRPC server '%s': cannot request calls for %s", s->addr,
                                           s->slots[i].path);
        if (grpcx_unknown_arm(s) < 0)
                return cub_err_set(err, EIO, "gRPC server '%s': cannot request calls", s->addr);

        r = pthread_create(&s->reaper, NULL, grpcx_reaper_main, s);
        if (r != 0)
                return cub_err_set(err, r, "gRPC server '%s': cannot start the reaper thread: %s", s->addr,
                                   strerror(r));
        s->reaper_started = true;
        (void) pthread_setname_np(s->reaper, "grpcx-reaper");

        r = pthread_create(&s->thread, NULL, grpcx_serve, s);
        if (r != 0)
                return cub_err_set(err, r, "gRPC server '%s': cannot start the serving thread: %s", s->addr,
                                   strerror(r));
        s->thread_started = true;
        (void) pthread_setname_np(s->thread, "grpcx-serve");

        *ret = TAKE_PTR(s);
        return 0;
}
