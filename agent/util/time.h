/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Time units. cubelet has one time type: uint64_t microseconds (usec), as
 * systemd's usec_t; Go durations and CRI timestamps convert at the edge.
 */

#include <stdint.h>
#include <time.h>

#define CUB_NSEC_PER_USEC UINT64_C(1000)
#define CUB_NSEC_PER_MSEC UINT64_C(1000000)
#define CUB_NSEC_PER_SEC UINT64_C(1000000000)
#define CUB_USEC_PER_MSEC UINT64_C(1000)
#define CUB_USEC_PER_SEC UINT64_C(1000000)
#define CUB_MSEC_PER_SEC UINT64_C(1000)

/* A timespec in microseconds (negative fields, never set by the kernel's
 * clocks, give 0). */
static inline uint64_t cub_timespec_usec(const struct timespec *ts) {
        if (ts->tv_sec < 0 || ts->tv_nsec < 0)
                return 0;
        return (uint64_t) ts->tv_sec * CUB_USEC_PER_SEC + (uint64_t) ts->tv_nsec / CUB_NSEC_PER_USEC;
}

/* Now on `clock` (CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_REALTIME, ...) in
 * microseconds; 0 if the clock cannot be read. */
static inline uint64_t cub_now_usec(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return cub_timespec_usec(&ts);
}
