/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the proto transport sources and their unit tests only. */

#include <grpc/byte_buffer.h>
#include <protobuf-c/protobuf-c.h>

/* A protobuf-c message packed into a new byte buffer (the caller destroys it). */
grpc_byte_buffer *grpcx_pack(const ProtobufCMessage *m);
/* bb decoded as d; NULL when bb is missing or does not decode. */
ProtobufCMessage *grpcx_unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *d);
