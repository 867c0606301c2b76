/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grpcx client streams: a server-streaming call read one message at a time
 * on a pluck queue of its own (the device manager's ListAndWatch). Two
 * batches start with the call: the request (initial metadata, the message,
 * the half-close, the server's initial metadata) and the status; each read
 * is one RECV_MESSAGE batch. A read that gets no message means the server
 * ended the call: the status batch then tells how.
 */
#include "grpcx-internal.h"
#include "grpcx.h"

#include <errno.h>
#include <grpc/grpc.h>
#include <grpc/support/alloc.h>
#include <stdlib.h>
#include <string.h>

struct GrpcxClientStream {
        char *target;
        char *method;
        grpc_completion_queue *cq;
        grpc_call *call;
        grpc_byte_buffer *send;
        grpc_metadata_array imd, tmd;
        grpc_status_code status;
        grpc_slice details;
        const char *error_string;
        bool send_done, status_done;
        char tag_send, tag_status, tag_recv; /* their addresses are the pluck tags */
};

static void stream_pluck(GrpcxClientStream *s, void *tag, bool *done) {
        if (*done)
                return;
        (void) grpc_completion_queue_pluck(s->cq, tag, grpcx_forever(), NULL);
        *done = true;
}

int grpcx_stream_call_start(GrpcxChannel *c, const char *method, const ProtobufCMessage *req, uint64_t timeout_usec,
                            bool wait_for_ready, GrpcxClientStream **ret, CubError *err) {
        GrpcxClientStream *s;
        gpr_timespec deadline = grpcx_deadline_in(timeout_usec);
        grpc_op ops[4], sops[1];
        grpc_call_error ce;

        s = calloc(1, sizeof(*s));
        if (!s)
                return cub_err_set(err, ENOMEM, "out of memory");
        s->target = strdup(grpcx_channel_target(c));
        s->method = strdup(method);
        if (!s->target || !s->method) {
                free(s->target);
                free(s->method);
                free(s);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        s->details = grpc_empty_slice();
        s->status = GRPC_STATUS_UNKNOWN;
        grpc_metadata_array_init(&s->imd);
        grpc_metadata_array_init(&s->tmd);
        s->cq = grpc_completion_queue_create_for_pluck(NULL);
        s->call = grpc_channel_create_call(grpcx_channel_core(c), NULL, GRPC_PROPAGATE_DEFAULTS, s->cq,
                                           grpc_slice_from_static_string(s->method), NULL, deadline, NULL);
        s->send = grpcx_pack(req);

        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[0].flags = wait_for_ready ? GRPC_INITIAL_METADATA_WAIT_FOR_READY : 0;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = s->send;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->imd;
        ce = grpc_call_start_batch(s->call, ops, 4, &s->tag_send, NULL);
        if (ce != GRPC_CALL_OK) {
                s->send_done = s->status_done = true;
                (void) grpcx_stream_call_free(s);
                return cub_err_set(err, EIO, "'%s': %s: cannot start the call (grpc_call_error %d)",
                                   grpcx_channel_target(c), method, (int) ce);
        }
        memset(sops, 0, sizeof(sops));
        sops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        sops[0].data.recv_status_on_client.trailing_metadata = &s->tmd;
        sops[0].data.recv_status_on_client.status = &s->status;
        sops[0].data.recv_status_on_client.status_details = &s->details;
        sops[0].data.recv_status_on_client.error_string = &s->error_string;
        ce = grpc_call_start_batch(s->call, sops, 1, &s->tag_status, NULL);
        if (ce != GRPC_CALL_OK) {
                s->status_done = true;
                (void) grpcx_stream_call_free(s);
                return cub_err_set(err, EIO, "'%s': %s: cannot start the call (grpc_call_error %d)",
                                   grpcx_channel_target(c), method, (int) ce);
        }
        *ret = s;
        return 0;
}

/* The call is over: its status as the return value and message. */
static int stream_status(GrpcxClientStream *s, CubError *err) {
        char *d;
        int r;

        stream_pluck(s, &s->tag_send, &s->send_done);
        stream_pluck(s, &s->tag_status, &s->status_done);
        if (s->status == GRPC_STATUS_OK)
                return 0;
        d = grpc_slice_to_c_string(s->details);
        r = cub_err_set(err, -grpcx_status_to_errno((int) s->status), "'%s': %s: %s (%d): %s", s->target, s->method,
                        grpcx_status_name((int) s->status), (int) s->status,
                        d && *d ? d : (s->error_string ? s->error_string : "no details"));
        gpr_free(d);
        return r;
}

int grpcx_stream_call_read(GrpcxClientStream *s, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret,
                           CubError *err) {
        grpc_byte_buffer *recv = NULL;
        ProtobufCMessage *m;
        grpc_op op;
        grpc_event ev;

        if (s->status_done)
                return stream_status(s, err);
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &recv;
        if (grpc_call_start_batch(s->call, &op, 1, &s->tag_recv, NULL) != GRPC_CALL_OK)
                return stream_status(s, err);
        ev = grpc_completion_queue_pluck(s->cq, &s->tag_recv, grpcx_forever(), NULL);
        if (ev.type != GRPC_OP_COMPLETE || !ev.success || !recv) {
                if (recv)
                        grpc_byte_buffer_destroy(recv);
                return stream_status(s, err);
        }
        m = grpcx_unpack(recv, desc);
        grpc_byte_buffer_destroy(recv);
        if (!m) {
                (void) grpc_call_cancel(s->call, NULL);
                return cub_err_set(err, EBADMSG, "'%s': %s: malformed %s in the stream", s->target, s->method,
                                   desc->name);
        }
        *ret = m;
        return 1;
}

void grpcx_stream_call_cancel(GrpcxClientStream *s) {
        if (s && s->call)
                (void) grpc_call_cancel(s->call, NULL);
}

GrpcxClientStream *grpcx_stream_call_free(GrpcxClientStream *s) {
        if (!s)
                return NULL;
        if (s->call) {
                if (!s->status_done)
                        (void) grpc_call_cancel(s->call, NULL);
                stream_pluck(s, &s->tag_send, &s->send_done);
                stream_pluck(s, &s->tag_status, &s->status_done);
                grpc_call_unref(s->call);
        }
        if (s->cq)
                grpcx_drain_pluck_queue(s->cq);
        if (s->send)
                grpc_byte_buffer_destroy(s->send);
        grpc_slice_unref(s->details);
        gpr_free((void *) s->error_string);
        grpc_metadata_array_destroy(&s->imd);
        grpc_metadata_array_destroy(&s->tmd);
        free(s->target);
        free(s->method);
        free(s);
        return NULL;
}
