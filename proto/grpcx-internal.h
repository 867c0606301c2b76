/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the proto transport sources and their unit tests only. */

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <protobuf-c/protobuf-c.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grpcx.h"

/* A protobuf-c message packed into a new byte buffer (the caller destroys it). */
grpc_byte_buffer *grpcx_pack(const ProtobufCMessage *m);
/* bb decoded as d; NULL when bb is missing or does not decode. */
ProtobufCMessage *grpcx_unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *d);
/* The channel's gRPC core channel (grpcx-client-stream.c). */
grpc_channel *grpcx_channel_core(GrpcxChannel *c);

/* Stream threads started and not joined yet (0 once the reaper caught up). */
unsigned grpcx_server_n_stream_threads(GrpcxServer *s);
/* Fault injection for the unit tests: the next n request arms fail as if
 * gRPC refused them (GRPC_CALL_ERROR). */
void grpcx_server_inject_arm_failures(GrpcxServer *s, unsigned n);

/* ---- the server: grpcx-server.c, grpcx-stream.c, grpcx-post.c -------------- */

#define GRPCX_DETAILS_MAX 512
#define GRPCX_REARM_BACKOFF_MIN_USEC (10 * 1000)
#define GRPCX_REARM_BACKOFF_MAX_USEC (1000 * 1000)
#define GRPCX_HEALTH_MAX 512

typedef enum GrpcxTagKind {
        GRPCX_TAG_REQUEST, /* GrpcxSlot: a registered method's call arrived */
        GRPCX_TAG_UNKNOWN, /* GrpcxUnknownSlot: a call to an unregistered method */
        GRPCX_TAG_REPLY,   /* GrpcxReply: a unary reply (or UNIMPLEMENTED) batch is done */
        GRPCX_TAG_SHUTDOWN,
} GrpcxTagKind;

typedef struct GrpcxSlot {
        GrpcxTagKind kind;
        GrpcxServer *server;
        GrpcxMethod method; /* method.path points at path */
        char *path;
        void *registered;
        bool armed;
        int arm_error; /* the grpc_call_error of the last failed arm */
        grpc_call *call;
        gpr_timespec deadline;
        grpc_metadata_array md;
        grpc_byte_buffer *payload;
        grpc_completion_queue *call_cq; /* streaming: the next stream's pluck queue */
} GrpcxSlot;

typedef struct GrpcxUnknownSlot {
        GrpcxTagKind kind;
        bool armed;
        int arm_error;
        grpc_call *call;
        grpc_call_details details;
        grpc_metadata_array md;
} GrpcxUnknownSlot;

typedef struct GrpcxReply {
        GrpcxTagKind kind;
        grpc_call *call;
        grpc_byte_buffer *message;
        grpc_slice details;
        int cancelled;
} GrpcxReply;

struct GrpcxStream {
        GrpcxServer *server;
        const GrpcxSlot *slot;
        grpc_call *call;
        grpc_completion_queue *cq;
        grpc_byte_buffer *payload;
        int close_cancelled;
        bool closed;                          /* RECV_CLOSE_ON_SERVER completed (or never started) */
        bool sent_initial_md;                 /* SEND_INITIAL_METADATA went out with the first message */
        pthread_t self;                       /* set by the stream thread itself: its checks, the reaper's join */
        GrpcxStream *next;                    /* on s->finished */
        char tag_close, tag_send, tag_status; /* their addresses are the pluck tags */
};

/* A grpcx_server_post() waiting for the loop; lives on the poster's stack
 * until done is set under s->lock. */
typedef struct GrpcxPost {
        int (*fn)(void *userdata, void *arg);
        void *arg;
        int r;
        bool done;
        struct GrpcxPost *next;
} GrpcxPost;

struct GrpcxServer {
        char *addr;
        void *userdata;
        bool grpc_initialized;
        grpc_server *server;
        grpc_completion_queue *cq;
        bool started;
        bool thread_started;
        pthread_t thread;
        atomic_bool stopping;
        GrpcxTagKind shutdown_tag;
        GrpcxSlot *slots;
        size_t n_slots;
        GrpcxUnknownSlot unknown;
        uint64_t rearm_backoff_usec; /* serving thread only: 0 while every request is armed */
        atomic_uint inject_arm_failures;

        bool lock_initialized;
        pthread_mutex_t lock;
        pthread_cond_t reap_cond; /* a stream thread ended, or the reaper may quit */
        pthread_cond_t post_cond; /* a post was answered */
        unsigned n_live;          /* stream handlers admitted and not returned */
        unsigned n_threads;       /* stream threads started and not joined */
        GrpcxStream *finished;    /* ended stream threads, for the reaper */
        bool reaper_started;
        bool reaper_quit;
        pthread_t reaper;

        int post_fd; /* eventfd: readable while posts may be queued */
        GrpcxPost *posts, **posts_tail;
        bool posts_closed;
        bool loop_thread_set;
        pthread_t loop_thread; /* the last thread that ran grpcx_server_dispatch() */

        bool unhealthy;
        char health[GRPCX_HEALTH_MAX];
};

static inline gpr_timespec grpcx_forever(void) {
        return gpr_inf_future(GPR_CLOCK_REALTIME);
}

/* usec from now; forever when it does not fit */
static inline gpr_timespec grpcx_deadline_in(uint64_t usec) {
        if (usec >= (uint64_t) INT64_MAX)
                return grpcx_forever();
        return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_micros((int64_t) usec, GPR_TIMESPAN));
}

/* grpcx-server.c: a handler's request that is missing or does not decode, in details. */
void grpcx_bad_request(const GrpcxMethod *m, bool missing, char *details, size_t size);
/* Handlers return a gRPC status code; anything else is their bug, reported as UNKNOWN. */
grpc_status_code grpcx_checked_status(const GrpcxMethod *m, int status, char *details, size_t size);

/* grpcx-stream.c: shuts a pluck queue down, drains and destroys it. */
void grpcx_drain_pluck_queue(grpc_completion_queue *cq);
/* Runs a streaming call's handler on a thread of its own, or refuses the call;
 * takes ownership of call, payload and cq. Serving thread only. */
void grpcx_serve_stream(GrpcxServer *s, const GrpcxSlot *slot, grpc_call *call, grpc_byte_buffer *payload,
                        grpc_completion_queue *cq);
/* The reaper thread's main: joins stream threads as soon as they end. */
void *grpcx_reaper_main(void *arg);

/* grpcx-post.c: refuses new posts and answers the queued ones -ECANCELED. */
void grpcx_close_posts(GrpcxServer *s);
/* The serving thread, after every arm attempt: records the first method left
 * unserved (or none) and wakes the loop when that changes. */
void grpcx_health_update(GrpcxServer *s);
