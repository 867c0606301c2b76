/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * proto/grpcx: a small transport over the gRPC core C API (grpc/grpc.h,
 * Debian's 1.51) carrying protobuf-c messages over unix sockets:
 *   - a client channel with unary calls (deadline, optional wait-for-ready),
 *   - a server with unary and server-streaming methods (a bounded number of
 *     stream threads, a health check, and a queue that hands work from the
 *     handlers' threads to the owner's event loop).
 * Only proto/, cri/ and deviceplugin/ include this header; protobuf-c types
 * never reach the rest of the agent.
 *
 * Errors: calls return 0 or a negative errno mapped from the gRPC status
 * (UNAVAILABLE → -ECONNREFUSED, DEADLINE_EXCEEDED → -ETIMEDOUT, NOT_FOUND →
 * -ENOENT, UNIMPLEMENTED → -EOPNOTSUPP, INVALID_ARGUMENT → -EINVAL,
 * ALREADY_EXISTS → -EEXIST, CANCELLED → -ECANCELED, other → -EIO); the
 * message names the peer, the method, the status name and code, and the
 * peer's details.
 */

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>

#include "../agent/util/err.h"

/* gRPC status codes cubelet uses by name. */
enum {
        GRPCX_OK = 0,
        GRPCX_CANCELLED = 1,
        GRPCX_UNKNOWN = 2,
        GRPCX_INVALID_ARGUMENT = 3,
        GRPCX_DEADLINE_EXCEEDED = 4,
        GRPCX_NOT_FOUND = 5,
        GRPCX_ALREADY_EXISTS = 6,
        GRPCX_RESOURCE_EXHAUSTED = 8,
        GRPCX_FAILED_PRECONDITION = 9,
        GRPCX_UNIMPLEMENTED = 12,
        GRPCX_INTERNAL = 13,
        GRPCX_UNAVAILABLE = 14,
};

const char *grpcx_status_name(int code);
int grpcx_status_to_errno(int code);

/* ---- client ------------------------------------------------------------- */

/* The grpc.health.v1 statuses (HealthCheckResponse.ServingStatus). */
enum {
        GRPCX_HEALTH_UNKNOWN = 0,
        GRPCX_HEALTH_SERVING = 1,
        GRPCX_HEALTH_NOT_SERVING = 2,
        GRPCX_HEALTH_SERVICE_UNKNOWN = 3,
};
const char *grpcx_health_status_name(int status);

/* grpc.health.v1.Health/Check of service ("" = the server) at target (a new
 * channel, no wait for ready), within timeout_usec: 0 with the serving
 * status in *ret_status, or a negative errno as grpcx_unary() and the gRPC
 * status code in *ret_code (-1 when the call did not get one). Blocking:
 * the probe threads call it. */
int grpcx_health_check(const char *target, const char *service, uint64_t timeout_usec, int *ret_status, int *ret_code,
                       CubError *err);

typedef struct GrpcxChannel GrpcxChannel;

/* target: "unix:///path" or "unix:/path" (a bare absolute path is taken as
 * unix://path); "ipv4:IP:PORT", "ipv6:[IP]:PORT" or "dns:HOST:PORT" for the
 * grpc probes. The channel reconnects by itself (100 ms..3 s backoff). */
int grpcx_channel_new(const char *target, GrpcxChannel **ret, CubError *err);
GrpcxChannel *grpcx_channel_free(GrpcxChannel *c);
static inline void grpcx_channel_freep(GrpcxChannel **c) {
        if (*c)
                grpcx_channel_free(*c);
}
const char *grpcx_channel_target(const GrpcxChannel *c);

/*
 * One unary call. On success *ret is the unpacked response (free with
 * protobuf_c_message_free_unpacked(*ret, NULL)); an empty reply unpacks as
 * the message's defaults. ret_status (optional) receives the gRPC status
 * code, also on failure. Thread-safe: each call has its own queue.
 */
int grpcx_unary(GrpcxChannel *c, const char *method, const ProtobufCMessage *req,
                const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec, bool wait_for_ready,
                ProtobufCMessage **ret, int *ret_status, CubError *err);

/*
 * A client-side server-streaming call (proto/grpcx-client-stream.c): one
 * request, then messages read one at a time until the server ends the call.
 * timeout_usec: the call's deadline (UINT64_MAX: none, as for ListAndWatch);
 * wait_for_ready: wait (until the deadline) for the socket to accept.
 * grpcx_stream_call_read() blocks until the next message: 1 with *ret (free
 * with protobuf_c_message_free_unpacked(*ret, NULL)), 0 when the server ended
 * the call with OK, or a negative errno for the call's status (as
 * grpcx_unary()). A unary method can be called this way too (one message,
 * then 0), which makes it cancellable. One thread reads; any thread may call
 * grpcx_stream_call_cancel() (the read then ends with -ECANCELED);
 * grpcx_stream_call_free() cancels a call still running and frees it.
 */
typedef struct GrpcxClientStream GrpcxClientStream;

int grpcx_stream_call_start(GrpcxChannel *c, const char *method, const ProtobufCMessage *req, uint64_t timeout_usec,
                            bool wait_for_ready, GrpcxClientStream **ret, CubError *err);
int grpcx_stream_call_read(GrpcxClientStream *s, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret,
                           CubError *err);
void grpcx_stream_call_cancel(GrpcxClientStream *s);
GrpcxClientStream *grpcx_stream_call_free(GrpcxClientStream *s);
static inline void grpcx_stream_call_freep(GrpcxClientStream **s) {
        if (*s)
                grpcx_stream_call_free(*s);
}

/* ---- server ------------------------------------------------------------- */

typedef struct GrpcxServer GrpcxServer;
typedef struct GrpcxStream GrpcxStream;

/*
 * A method handler. Unary: fill *ret_resp with a message the server packs
 * and then releases through free_resp (may be NULL for static replies).
 * Streaming: runs on its own thread and sends with grpcx_stream_send() until
 * it returns or the client goes away (grpcx_stream_send() then fails with
 * -ECANCELED). Return GRPCX_OK or a status code, with details.
 */
typedef struct GrpcxMethod {
        const char *path; /* "/v1beta1.DevicePlugin/Allocate" */
        const ProtobufCMessageDescriptor *request;
        int (*unary)(void *userdata, const ProtobufCMessage *req, ProtobufCMessage **ret_resp, char *details,
                     size_t details_size);
        int (*stream)(void *userdata, const ProtobufCMessage *req, GrpcxStream *s, char *details, size_t details_size);
        void (*free_resp)(void *userdata, ProtobufCMessage *resp);
} GrpcxMethod;

/* Stream handlers running at once; one more is answered RESOURCE_EXHAUSTED
 * ("<method>: too many open streams (16, the limit is 16)"). */
#define GRPCX_SERVER_MAX_STREAMS 16

/*
 * Threads and the locking rule:
 *   - unary handlers all run on the server's serving thread, one at a time:
 *     they never run concurrently with each other, and while one runs no
 *     other unary call and no new stream is served (keep them short);
 *   - each stream handler runs on a thread of its own, concurrently with the
 *     other stream handlers and with the unary handlers;
 *   - so userdata is shared by up to GRPCX_SERVER_MAX_STREAMS + 1 threads:
 *     a handler touches only what it owns (its request, its reply, its
 *     GrpcxStream) and state that is immutable while the server runs, or
 *     takes a lock of the owner's that it never holds across a grpcx call;
 *   - state owned by the owner's event loop (sd-event sources, the agent's
 *     pods) is reached only through grpcx_server_post(), which runs a function
 *     on the loop's thread;
 *   - a GrpcxStream is used only by its own handler's thread: the
 *     grpcx_stream_*() calls refuse any other (send/wait: -EPERM; cancelled:
 *     true);
 *   - handlers never call grpcx_server_stop() (it joins their threads).
 */

/*
 * Binds addr ("unix:/path", "unix:///path" or "/path") and starts serving on
 * a thread of its own, as described above. A request that does not decode is
 * answered INVALID_ARGUMENT, an unknown method UNIMPLEMENTED. A finished
 * stream's thread is joined as soon as it ends (by a reaper thread).
 */
int grpcx_server_start(const char *addr, const GrpcxMethod *methods, size_t n_methods, void *userdata,
                       GrpcxServer **ret, CubError *err);
/* Answers pending grpcx_server_post() calls -ECANCELED, cancels every call,
 * joins every handler's thread (the stream threads included), frees the server. */
GrpcxServer *grpcx_server_stop(GrpcxServer *s);

/* Stream handlers running now (at most GRPCX_SERVER_MAX_STREAMS). */
unsigned grpcx_server_n_streams(GrpcxServer *s);

/*
 * Health. Every method keeps one request armed in gRPC, armed again as each
 * call arrives. When gRPC refuses that (grpc_server_request_registered_call
 * or grpc_server_request_call failing), the method's calls wait in gRPC
 * unserved until a request is armed: the serving thread retries (10 ms, doubling up to 1 s) and, meanwhile,
 * grpcx_server_check() fails with -EIO and a message naming the method
 * ("gRPC server 'unix:/p.sock': /v1beta1.DevicePlugin/Allocate is not
 * served: ..., retrying"). It returns 0 again once every method is armed.
 * Each change of that answer also wakes the dispatch fd, so a loop that
 * calls grpcx_server_check() after grpcx_server_dispatch() sees it at once.
 */
int grpcx_server_check(GrpcxServer *s, CubError *err);

/*
 * Handing work to the owner's event loop (sd-event or any poll loop):
 *
 *   sd_event_add_io(e, &src, grpcx_server_dispatch_fd(s), EPOLLIN, on_grpcx, s);
 *   static int on_grpcx(sd_event_source *src, int fd, uint32_t revents, void *s) {
 *           (void) grpcx_server_dispatch(s);
 *           ... grpcx_server_check(s, &err) ...
 *           return 0;
 *   }
 *
 * A handler calls grpcx_server_post(s, fn, arg): fn(userdata, arg) (userdata:
 * the server's) then runs on the thread that calls grpcx_server_dispatch(),
 * and post returns fn's result once it did. Posts run in order, one at a
 * time. Post fails with -ECANCELED when grpcx_server_stop() comes first
 * (queued posts are answered then; fn does not run), -EDEADLK on the loop's
 * own thread (the last one that dispatched), -EINVAL without fn. It blocks
 * the handler until the loop answers: keep fn short and the loop running.
 *
 * grpcx_server_dispatch_fd(): a non-blocking eventfd owned by the server,
 * readable while posts may be queued. grpcx_server_dispatch() clears it and
 * runs the queued posts; returns how many ran. fn never calls
 * grpcx_server_stop(); the owner drops its io source before calling it (stop
 * closes the fd).
 */
int grpcx_server_post(GrpcxServer *s, int (*fn)(void *userdata, void *arg), void *arg);
int grpcx_server_dispatch_fd(const GrpcxServer *s);
int grpcx_server_dispatch(GrpcxServer *s);

/*
 * Stream calls, from the handler's own thread only. grpcx_stream_send()
 * waits until the message is handed to the transport (flow control included)
 * and fails with -ECANCELED once the call is over: the client cancelled or
 * disconnected, its deadline passed, or grpcx_server_stop() runs.
 * grpcx_stream_cancelled() checks that without blocking;
 * grpcx_stream_wait() blocks up to timeout_usec (UINT64_MAX: forever) and
 * returns -ECANCELED as soon as the call is over, 0 on timeout. A handler
 * with nothing to send waits there, so that stop never waits on it.
 */
int grpcx_stream_send(GrpcxStream *s, const ProtobufCMessage *msg, CubError *err);
bool grpcx_stream_cancelled(GrpcxStream *s);
int grpcx_stream_wait(GrpcxStream *s, uint64_t timeout_usec);
