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
