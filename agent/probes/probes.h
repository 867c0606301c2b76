/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/probes: container probes (startup, liveness, readiness) as kubelet
 * 1.28-1.31's prober runs them.
 *
 *  - ProbeState: the pure state machine of one probe of one container
 *    (initial result, initialDelaySeconds, startup gating, success and
 *    failure thresholds, liveness/startup on hold after a failure until the
 *    container is a new one). No clock of its own: callers pass the time.
 *  - ProbeRunner: runs probes without blocking the sd-event loop or each
 *    other: tcpSocket as a non-blocking connect with an sd-event io source
 *    and timer, httpGet through libcurl's multi interface on the loop
 *    (agent/config's curl glue), exec through CRI ExecSync and grpc through
 *    grpc.health.v1 Health/Check (gRPC core, proto/grpcx) on a few probe
 *    threads whose results come back through an eventfd.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../../cri/cri.h"
#include "../pod/pod.h"
#include "../util/err.h"

typedef enum ProbeKind {
        PROBE_STARTUP,
        PROBE_LIVENESS,
        PROBE_READINESS,
        _PROBE_KIND_MAX,
        _PROBE_KIND_INVALID = -22,
} ProbeKind;

typedef enum ProbeResult {
        PROBE_RESULT_UNKNOWN,
        PROBE_RESULT_SUCCESS,
        PROBE_RESULT_FAILURE,
        _PROBE_RESULT_MAX,
        _PROBE_RESULT_INVALID = -22,
} ProbeResult;

const char *probe_kind_to_string(ProbeKind k);     /* "Startup", "Liveness", "Readiness" */
const char *probe_result_to_string(ProbeResult r); /* "Unknown", "Success", "Failure" */

/* ---- the state machine ----------------------------------------------------- */

typedef struct ProbeState {
        ProbeKind kind;
        int32_t initial_delay_s, success_threshold, failure_threshold;
        ProbeResult result; /* as reported to the pod's status */
        ProbeResult last;   /* the last probe's result */
        int32_t run;        /* how many times in a row `last` came */
        bool on_hold;       /* liveness/startup failed: no probe until a new container */
        char container_id[80];
} ProbeState;

/* The initial result of a probe of that kind: liveness Success, readiness
 * Failure, startup Unknown (kubelet's worker initialValue). */
ProbeResult probe_initial_result(ProbeKind k);
void probe_state_init(ProbeState *s, ProbeKind kind, const PodProbe *p);
/* The container probed is now id (NULL or "": none): a new one starts
 * over at the initial result. Returns whether the result changed. */
bool probe_state_set_container(ProbeState *s, const char *id);
/* Whether a probe runs at this tick: the container runs, has run
 * initialDelaySeconds (running_for_s since its StartedAt), and the startup
 * probe gates the others (started: the container's `started`). */
bool probe_state_due(const ProbeState *s, bool running, int64_t running_for_s, bool started);
/* A probe's result (UNKNOWN: the prober errored, thrown away as kubelet
 * does). Returns whether the reported result changed. */
bool probe_state_record(ProbeState *s, ProbeResult r);

/* A container's started and ready from its probes (NULL: no such probe). */
bool probe_container_started(bool running, const ProbeState *startup);
bool probe_container_ready(bool running, bool started, const ProbeState *readiness);

/* kubelet's first-run jitter: a random part of the period, only while the
 * prober is younger than the period (after a restart). */
uint64_t probe_first_delay_usec(uint64_t period_usec, uint64_t prober_age_usec, uint64_t random);

/* ---- the runner -------------------------------------------------------------- */

/* One probe (or hook) to run: what the handler needs, resolved. */
typedef struct ProbeTarget {
        PodHandlerKind kind;
        const char *container_id;     /* exec */
        const char *const *command;   /* exec */
        const char *host;             /* httpGet, tcpSocket, grpc: an IP or name */
        int32_t port;                 /* resolved */
        const char *scheme, *path;    /* httpGet */
        const PodHTTPHeader *headers; /* httpGet */
        size_t n_headers;
        int64_t timeout_s;
        int64_t sleep_s;          /* sleep (hooks) */
        const char *grpc_service; /* grpc: NULL = "" */
} ProbeTarget;

typedef struct ProbeRunner ProbeRunner;
typedef struct ProbeCall ProbeCall;

/* The result of one probe: SUCCESS, FAILURE, or UNKNOWN when the prober
 * itself failed (output says why). Called on the loop, never inside
 * probe_run(). */
typedef void (*ProbeDoneFn)(void *userdata, ProbeResult r, const char *output);

int probe_runner_new(sd_event *e, CriClient *cri, unsigned exec_threads, ProbeRunner **ret, CubError *err);
ProbeRunner *probe_runner_free(ProbeRunner *r);
/* Starts a probe; *ret (may be NULL) lets the caller cancel it. */
int probe_run(ProbeRunner *r, const ProbeTarget *t, ProbeDoneFn fn, void *userdata, ProbeCall **ret, CubError *err);
/* fn will not be called for it. */
void probe_cancel(ProbeCall *c);

/* Blocking: runs a lifecycle hook's exec/httpGet/sleep on the calling
 * thread (the pod worker's), at most timeout_s. 0, or -errno with the
 * message kubelet gives (the command's output, the HTTP status). */
int probe_run_hook(CriClient *cri, const ProbeTarget *t, CubError *err);
