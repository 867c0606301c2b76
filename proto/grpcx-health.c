/* SPDX-License-Identifier: Apache-2.0 */
/* A client of grpc.health.v1.Health/Check (the grpc probes). */
#include <errno.h>
#include <stdlib.h>

#include "grpcx.h"
#include "proto/grpc/health.pb-c.h"

const char *grpcx_health_status_name(int status) {
        static const char *const names[] = { "UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" };

        return status >= 0 && status < 4 ? names[status] : "UNKNOWN";
}

int grpcx_health_check(const char *target, const char *service, uint64_t timeout_usec, int *ret_status, int *ret_code,
                       CubError *err) {
        Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
        Grpc__Health__V1__HealthCheckResponse *resp = NULL;
        GrpcxChannel *c = NULL;
        int r, code = -1;

        if (ret_code)
                *ret_code = -1;
        r = grpcx_channel_new(target, &c, err);
        if (r < 0)
                return r;
        req.service = (char *) (service ? service : "");
        r = grpcx_unary(c, "/grpc.health.v1.Health/Check", &req.base,
                        &grpc__health__v1__health_check_response__descriptor, timeout_usec, false,
                        (ProtobufCMessage **) &resp, &code, err);
        grpcx_channel_free(c);
        if (ret_code)
                *ret_code = code;
        if (r < 0)
                return r;
        *ret_status = resp->status;
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        return 0;
}
