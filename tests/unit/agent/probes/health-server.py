#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# A grpc.health.v1 Health server for test-runner.c (python3-grpcio, messages
# encoded by hand): "" is SERVING, "down" NOT_SERVING, "unimpl" answers
# UNIMPLEMENTED, any other service SERVICE_UNKNOWN. Prints its port.
from concurrent import futures

import grpc

STATUS = {"": b"\x08\x01", "down": b"\x08\x02"}


def check(req, ctx):
    svc = req[2:].decode() if req else ""  # HealthCheckRequest.service (field 1)
    if svc == "unimpl":
        ctx.abort(grpc.StatusCode.UNIMPLEMENTED, "not here")
    return STATUS.get(svc, b"\x08\x03")


handler = grpc.method_handlers_generic_handler(
    "grpc.health.v1.Health", {"Check": grpc.unary_unary_rpc_method_handler(check)})
server = grpc.server(futures.ThreadPoolExecutor(2))
server.add_generic_rpc_handlers((handler,))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
print(port, flush=True)
server.wait_for_termination()
