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

/* The wall clock's offset from the monotonic one (CLOCK_REALTIME -
 * CLOCK_MONOTONIC, usec) for wall times derived from monotonic ones: *cache
 * keeps the first reading and takes a new one only when the offset moved by
 * more than a second (the wall clock was stepped). Read afresh each time,
 * the offset jitters by the microseconds between the two clock reads, so a
 * derived time in whole seconds would flip between two values from one
 * rendering to the next (and every flip is a status PATCH to the API server). */
static inline int64_t cub_wall_offset_keep(int64_t *cache, int64_t now_offset) {
        int64_t d = now_offset - *cache;

        if (*cache == 0 || d > (int64_t) CUB_USEC_PER_SEC || d < -(int64_t) CUB_USEC_PER_SEC)
                *cache = now_offset;
        return *cache;
}

static inline int64_t cub_wall_minus_mono_usec(int64_t *cache) {
        int64_t mono = (int64_t) cub_now_usec(CLOCK_MONOTONIC);

        return cub_wall_offset_keep(cache, (int64_t) cub_now_usec(CLOCK_REALTIME) - mono);
}
