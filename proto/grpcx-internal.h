/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the proto transport sources and their unit tests only. */

#include <grpc/byte_buffer.h>
#include <protobuf-c/protobuf-c.h>

#include "grpcx.h"

/* A protobuf-c message packed into a new byte buffer (the caller destroys it). */
grpc_byte_buffer *grpcx_pack(const ProtobufCMessage *m);
/* bb decoded as d; NULL when bb is missing or does not decode. */
ProtobufCMessage *grpcx_unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *d);

/* Stream threads started and not joined yet (0 once the reaper caught up). */
unsigned grpcx_server_n_stream_threads(GrpcxServer *s);
/* Fault injection for the unit tests: the next n request arms fail as if
 * gRPC refused them (GRPC_CALL_ERROR). */
void grpcx_server_inject_arm_failures(GrpcxServer *s, unsigned n);
