/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "retry.h"
#include "time.h"

const CubRetryPolicy cub_retry_pod_worker = {
        .base_usec = 10 * CUB_USEC_PER_SEC,
        .max_usec = 300 * CUB_USEC_PER_SEC,
        .factor = 2,
        .jitter_pct = 50,
};

const CubRetryPolicy cub_retry_pod_sync = {
        .base_usec = 10 * CUB_USEC_PER_SEC,
        .max_usec = 10 * CUB_USEC_PER_SEC,
        .factor = 1,
        .jitter_pct = 0,
};

const CubRetryPolicy cub_retry_runtime = {
        .base_usec = 1 * CUB_USEC_PER_SEC,
        .max_usec = 5 * CUB_USEC_PER_SEC,
        .factor = 2,
        .jitter_pct = 0,
};

uint64_t cub_retry_delay(const CubRetryPolicy *policy, unsigned failures, uint32_t draw) {
        uint64_t d = policy->base_usec, spread;

        for (unsigned i = 1; i < failures && d < policy->max_usec; i++)
                d = policy->factor > 1 && d <= UINT64_MAX / policy->factor ? d * policy->factor : policy->max_usec;
        if (d > policy->max_usec)
                d = policy->max_usec;
        if (policy->jitter_pct == 0 || d == 0)
                return d;
        /* d × (1 - j) + draw/2^32 × 2 d j, with j = jitter_pct / 100 */
        spread = d / 100 * policy->jitter_pct + d % 100 * policy->jitter_pct / 100;
        return d - spread + (uint64_t) (((unsigned __int128) (2 * spread) * draw) >> 32);
}

bool cub_retry_failed(CubRetry *r, const CubRetryPolicy *policy, uint64_t now, const char *error, uint32_t draw) {
        bool changed = r->failures == 0 || strcmp(r->error, error ? error : "") != 0;

        if (r->failures == 0)
                r->first_failure_usec = now;
        if (r->failures < UINT32_MAX)
                r->failures++;
        r->next_usec = now + cub_retry_delay(policy, r->failures, draw);
        (void) snprintf(r->error, sizeof(r->error), "%s", error ? error : "");
        return changed;
}

bool cub_retry_succeeded(CubRetry *r) {
        bool was_failing = r->failures > 0;

        r->failures = 0;
        r->next_usec = 0;
        r->first_failure_usec = 0;
        r->error[0] = '\0';
        return was_failing;
}

uint32_t cub_retry_draw(void) {
        uint32_t v = 0;

        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t) sizeof(v))
                v = (uint32_t) cub_now_usec(CLOCK_MONOTONIC) * 2654435761u;
        return v;
}
