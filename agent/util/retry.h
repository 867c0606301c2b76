/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * One retry policy for every retry of the agent: a pod's kill, its sync, the
 * relist while the runtime is away, the runtime's event stream. Each
 * retrying thing keeps a CubRetry of its own (its key: the pod, the runtime,
 * the stream) and asks the policy when its next attempt may start. Pure: the caller gives the time
 * (CLOCK_MONOTONIC µs) and the random draw, so a unit test runs it on a
 * fake clock.
 */

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

typedef struct CubRetryPolicy {
        uint64_t base_usec;  /* the wait after the first failure */
        uint64_t max_usec;   /* the cap of the wait (before jitter) */
        unsigned factor;     /* each further failure multiplies the wait: 2 doubles, 1 keeps it */
        unsigned jitter_pct; /* the wait is spread uniformly over ±jitter_pct % */
} CubRetryPolicy;

/* kubelet's pod worker after a failed sync or kill (pod_workers.go
 * backOffPeriod 10 s, jitter factor 0.5), doubling, capped at 5 min */
extern const CubRetryPolicy cub_retry_pod_worker;
/* kubelet's pod worker after a failed sync: the sync is asked for again
 * after backOffPeriod (10 s), not at the next relist, and not later (a
 * sandbox or image that failed comes up within 10 s of the fault's end) */
extern const CubRetryPolicy cub_retry_pod_sync;
/* the relist while the runtime cannot be reached: 1 s (kubelet's relist
 * period), doubling, capped at 5 s (kubelet's runtime health check,
 * updateRuntimeUp); the event stream's return relists at once */
extern const CubRetryPolicy cub_retry_runtime;

typedef struct CubRetry {
        unsigned failures;           /* in a row; 0: the last attempt succeeded (or none failed) */
        uint64_t next_usec;          /* no attempt before this; 0: one may start now */
        uint64_t first_failure_usec; /* of this run of failures */
        char error[CUB_ERR_MSG_MAX]; /* the last failure's, "" when none */
} CubRetry;

/* The wait after the failures-th failure in a row (failures ≥ 1) for a
 * draw in [0, 2^32): base × factor^(failures-1), capped, then spread by the
 * jitter (draw 0: -jitter, draw 2^32-1: +jitter). */
uint64_t cub_retry_delay(const CubRetryPolicy *policy, unsigned failures, uint32_t draw);

/* An attempt failed at now with error: the next one waits the policy's
 * delay. Returns whether error differs from the previous failure's (or is
 * the first of a run): the caller logs it then, and only then. */
bool cub_retry_failed(CubRetry *r, const CubRetryPolicy *policy, uint64_t now, const char *error, uint32_t draw);

/* An attempt succeeded. Returns whether it ends a run of failures (the
 * caller logs that the error cleared). */
bool cub_retry_succeeded(CubRetry *r);

static inline bool cub_retry_due(const CubRetry *r, uint64_t now) {
        return now >= r->next_usec;
}

/* A random draw for cub_retry_failed() (getrandom, never blocks). */
uint32_t cub_retry_draw(void);
