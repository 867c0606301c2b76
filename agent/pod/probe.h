/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* agent/pod: a container's probes and lifecycle hooks, as decoded
 * (decode-probes.c). Included by pod-model.h before PodContainer. */

#include <stdbool.h>
#include <stdint.h>

/* probes and hooks */
typedef enum PodHandlerKind {
        POD_HANDLER_NONE,
        POD_HANDLER_EXEC,
        POD_HANDLER_HTTP_GET,
        POD_HANDLER_TCP_SOCKET,
        POD_HANDLER_GRPC,
        POD_HANDLER_SLEEP,
        _POD_HANDLER_MAX,
        _POD_HANDLER_INVALID = -22,
} PodHandlerKind;

typedef struct PodHTTPHeader {
        char *name;
        char *value;
} PodHTTPHeader;

/* An IntOrString port: a number, or the name of one of the container's ports. */
typedef struct PodPortRef {
        int32_t number; /* 0 when named */
        char *name;
} PodPortRef;

typedef struct PodExecAction {
        PodStrv command;
} PodExecAction;

typedef struct PodHTTPGetAction {
        char *path; /* defaulted to "/" */
        PodPortRef port;
        char *host;   /* NULL: the pod's IP (the node's with host network) */
        char *scheme; /* defaulted to "HTTP" */
        PodHTTPHeader *headers;
        size_t n_headers;
} PodHTTPGetAction;

typedef struct PodTCPSocketAction {
        PodPortRef port;
        char *host;
} PodTCPSocketAction;

typedef struct PodGRPCAction {
        int32_t port;
        char *service; /* NULL: "" */
} PodGRPCAction;

typedef struct PodSleepAction {
        int64_t seconds;
} PodSleepAction;

/* A probe's or a lifecycle hook's handler: exactly one action is set. */
typedef struct PodHandler {
        PodHandlerKind kind;
        PodExecAction exec;
        PodHTTPGetAction http_get;
        PodTCPSocketAction tcp_socket;
        PodGRPCAction grpc;
        PodSleepAction sleep;
        bool exec_set, http_get_set, tcp_socket_set, grpc_set, sleep_set;
} PodHandler;

typedef struct PodProbe {
        PodHandler handler;
        int32_t initial_delay_seconds;
        int32_t timeout_seconds;   /* defaulted to 1 */
        int32_t period_seconds;    /* defaulted to 10 */
        int32_t success_threshold; /* defaulted to 1 */
        int32_t failure_threshold; /* defaulted to 3 */
        int64_t termination_grace_period_seconds;
        bool termination_grace_period_seconds_set;
} PodProbe;

typedef struct PodLifecycle {
        PodHandler post_start;
        PodHandler pre_stop;
        bool post_start_set, pre_stop_set;
} PodLifecycle;
