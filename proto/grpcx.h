/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * proto/grpcx: a small transport over the gRPC core C API (grpc/grpc.h,
 * Debian's 1.51) carrying protobuf-c messages over unix sockets:
 *   - a client channel with unary calls (deadline, optional wait-for-ready),
 *   - a server loop with unary and server-streaming methods.
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
        GRPCX_FAILED_PRECONDITION = 9,
        GRPCX_UNIMPLEMENTED = 12,
        GRPCX_INTERNAL = 13,
        GRPCX_UNAVAILABLE = 14,
};

const char *grpcx_status_name(int code);
int grpcx_status_to_errno(int code);

/* ---- client ------------------------------------------------------------- */

typedef struct GrpcxChannel GrpcxChannel;

/* target: "unix:///path" or "unix:/path" (a bare absolute path is taken as
 * unix://path). The channel reconnects by itself (100 ms..3 s backoff). */
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

/*
 * Binds addr ("unix:/path", "unix:///path" or "/path") and starts serving on
 * a thread of its own. Unary handlers run on that thread one at a time (keep
 * them short); each stream gets a thread. A request that does not decode is
 * answered INVALID_ARGUMENT, an unknown method UNIMPLEMENTED.
 */
int grpcx_server_start(const char *addr, const GrpcxMethod *methods, size_t n_methods, void *userdata,
                       GrpcxServer **ret, CubError *err);
/* Cancels every call, waits for handlers to return, frees the server. */
GrpcxServer *grpcx_server_stop(GrpcxServer *s);

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
