/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdint.h>

#include "err.h"

/* Go's time.ParseDuration ("1m30s", "90s", "500ms", "1.5h", "0") to µs,
 * truncating below 1µs, with Go's messages. Negative durations are -ERANGE.
 * Every duration of the configuration goes through it (the eviction
 * thresholds' grace periods, the shutdown periods, the status and probe
 * periods of cmd-run.c). */
int cub_duration_parse(const char *s, uint64_t *ret_usec, CubError *err);
/* The same, a negative duration too (Go's metav1.Duration of a
 * KubeletConfiguration: its checks refuse what is out of range). */
int cub_duration_parse_signed(const char *s, int64_t *ret_usec, CubError *err);
/* Go's time.Duration.String() of usec: "0s", "250\u00b5s", "1.5ms", "20s",
 * "5m0s", "1h0m0s", "-1s" (as kubelet's messages print a duration). */
void cub_duration_format(int64_t usec, char *buf, size_t size);
#define CUB_DURATION_MAX 40
