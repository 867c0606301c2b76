/* SPDX-License-Identifier: Apache-2.0 */
/* grpcx client: channel and unary calls over gRPC core. */
#include "grpcx.h"
#include "grpcx-internal.h"

#include <errno.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct GrpcxChannel {
        char *target;
        grpc_channel *channel;
};

const char *grpcx_status_name(int code) {
        static const char *const names[] = {
                "OK",        "CANCELLED",       "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
                "NOT_FOUND", "ALREADY_EXISTS",  "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
                "ABORTED",   "OUT_OF_RANGE",    "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
                "DATA_LOSS", "UNAUTHENTICATED",
        };

        if (code < 0 || (size_t) code >= sizeof(names) / sizeof(names[0]))
                return "UNKNOWN";
        return names[code];
}

int grpcx_status_to_errno(int code) {
        switch (code) {
        case GRPCX_OK:
                return 0;
        case GRPCX_CANCELLED:
                return -ECANCELED;
        case GRPCX_INVALID_ARGUMENT:
                return -EINVAL;
        case GRPCX_DEADLINE_EXCEEDED:
                return -ETIMEDOUT;
        case GRPCX_NOT_FOUND:
                return -ENOENT;
        case GRPCX_ALREADY_EXISTS:
                return -EEXIST;
        case GRPCX_UNIMPLEMENTED:
                return -EOPNOTSUPP;
        case GRPCX_UNAVAILABLE:
                return -ECONNREFUSED;
        default:
                return -EIO;
        }
}

int grpcx_channel_new(const char *target, GrpcxChannel **ret, CubError *err) {
        grpc_channel_credentials *creds;
        GrpcxChannel *c;
        grpc_arg args[4] = {
                { .type = GRPC_ARG_INTEGER,
                  .key = (char *) GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                  .value.integer = 16 << 20 },
                { .type = GRPC_ARG_INTEGER,
                  .key = (char *) GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                  .value.integer = 100 },
                { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, .value.integer = 3000 },
                { .type = GRPC_ARG_STRING,
                  .key = (char *) GRPC_ARG_DEFAULT_AUTHORITY,
                  .value.string = (char *) "localhost" },
        };
        grpc_channel_args cargs = { .num_args = 4, .args = args };

        if (!target || !*target)
                return cub_err_set(err, EINVAL, "empty gRPC target");
        c = calloc(1, sizeof(*c));
        if (!c)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (target[0] == '/' ? asprintf(&c->target, "unix://%s", target) < 0 : !(c->target = strdup(target))) {
                free(c);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        /* unix sockets; TCP ("ipv4:", "ipv6:", "dns:") for the grpc probes */
        if (strncmp(c->target, "unix:", 5) != 0 && strncmp(c->target, "ipv4:", 5) != 0 &&
            strncmp(c->target, "ipv6:", 5) != 0 && strncmp(c->target, "dns:", 4) != 0) {
                int r = cub_err_set(err, EINVAL, "gRPC target '%s': only unix sockets are supported", target);
                free(c->target);
                free(c);
                return r;
        }
        grpc_init();
        creds = grpc_insecure_credentials_create();
        c->channel = grpc_channel_create(c->target, creds, &cargs);
        grpc_channel_credentials_release(creds);
        if (!c->channel) {
                free(c->target);
                free(c);
                grpc_shutdown();
                return cub_err_set(err, EIO, "gRPC target '%s': cannot create a channel", target);
        }
        *ret = c;
        return 0;
}

GrpcxChannel *grpcx_channel_free(GrpcxChannel *c) {
        if (!c)
                return NULL;
        grpc_channel_destroy(c->channel);
        free(c->target);
        free(c);
        grpc_shutdown();
        return NULL;
}

const char *grpcx_channel_target(const GrpcxChannel *c) {
        return c->target;
}

grpc_channel *grpcx_channel_core(GrpcxChannel *c) {
        return c->channel;
}

grpc_byte_buffer *grpcx_pack(const ProtobufCMessage *m) {
        size_t n = protobuf_c_message_get_packed_size(m);
        grpc_slice s = grpc_slice_malloc(n);
        grpc_byte_buffer *bb;

        (void) protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
        bb = grpc_raw_byte_buffer_create(&s, 1);
        grpc_slice_unref(s);
        return bb;
}

ProtobufCMessage *grpcx_unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *d) {
        grpc_byte_buffer_reader r;
        ProtobufCMessage *m;
        grpc_slice all;

        if (!bb || !grpc_byte_buffer_reader_init(&r, bb))
                return NULL;
        all = grpc_byte_buffer_reader_readall(&r);
        grpc_byte_buffer_reader_destroy(&r);
        m = protobuf_c_message_unpack(d, NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
        grpc_slice_unref(all);
        return m;
}

int grpcx_unary(GrpcxChannel *c, const char *method, const ProtobufCMessage *req,
                const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec, bool wait_for_ready,
                ProtobufCMessage **ret, int *ret_status, CubError *err) {
        grpc_completion_queue *cq;
        grpc_call *call;
        grpc_byte_buffer *send, *recv = NULL;
        grpc_metadata_array imd, tmd;
        grpc_status_code status = GRPC_STATUS_UNKNOWN;
        grpc_slice details = grpc_empty_slice();
        const char *error_string = NULL;
        grpc_op ops[6];
        gpr_timespec deadline;
        grpc_call_error ce;
        int r = 0;

        cq = grpc_completion_queue_create_for_pluck(NULL);
        deadline = grpcx_deadline_in(timeout_usec);
        call = grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                        grpc_slice_from_static_string(method), NULL, deadline, NULL);
        send = grpcx_pack(req);
        grpc_metadata_array_init(&imd);
        grpc_metadata_array_init(&tmd);
        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[0].flags = wait_for_ready ? GRPC_INITIAL_METADATA_WAIT_FOR_READY : 0;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = send;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &imd;
        ops[4].op = GRPC_OP_RECV_MESSAGE;
        ops[4].data.recv_message.recv_message = &recv;
        ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        ops[5].data.recv_status_on_client.trailing_metadata = &tmd;
        ops[5].data.recv_status_on_client.status = &status;
        ops[5].data.recv_status_on_client.status_details = &details;
        ops[5].data.recv_status_on_client.error_string = &error_string;

        ce = grpc_call_start_batch(call, ops, 6, (void *) 1, NULL);
        if (ce != GRPC_CALL_OK)
                r = cub_err_set(err, EIO, "runtime '%s': %s: cannot start the call (grpc_call_error %d)", c->target,
                                method, (int) ce);
        else
                (void) grpc_completion_queue_pluck(cq, (void *) 1, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

        if (r == 0 && status != GRPC_STATUS_OK) {
                char *d = grpc_slice_to_c_string(details);

                r = cub_err_set(err, -grpcx_status_to_errno((int) status), "'%s': %s: %s (%d): %s", c->target, method,
                                grpcx_status_name((int) status), (int) status,
                                d && *d ? d : (error_string ? error_string : "no details"));
                gpr_free(d);
        } else if (r == 0) {
                /* no message at all reads as the empty message */
                ProtobufCMessage *m = recv ? grpcx_unpack(recv, resp_desc)
                                           : protobuf_c_message_unpack(resp_desc, NULL, 0, (const uint8_t *) "");

                if (!m)
                        r = cub_err_set(err, EBADMSG, "'%s': %s: malformed %s in the reply", c->target, method,
                                        resp_desc->name);
                else
                        *ret = m;
        }
        if (ret_status)
                *ret_status = ce == GRPC_CALL_OK ? (int) status : GRPCX_INTERNAL;

        grpc_slice_unref(details);
        gpr_free((void *) error_string);
        grpc_byte_buffer_destroy(send);
        if (recv)
                grpc_byte_buffer_destroy(recv);
        grpc_metadata_array_destroy(&imd);
        grpc_metadata_array_destroy(&tmd);
        grpc_call_unref(call);
        grpc_completion_queue_shutdown(cq);
        while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(cq);
        return r;
}
