/* SPDX-License-Identifier: Apache-2.0 */
/* When to sample next: the sample period while the signals hold still, a
 * tenth of it while one falls fast enough to cross its threshold within two
 * periods. A node far from its thresholds, or one that holds steady just
 * above them, costs what a fixed period costs; a ramp towards a threshold
 * is seen within a tenth of a period of crossing it instead of within a
 * period (the eviction issue's onset -> decision). */
#include "eviction-internal.h"

uint64_t evict_sample_delay_usec(const EvictConfig *c, const EvictObservations *prev, const EvictObservations *cur,
                                 uint64_t period_usec) {
        uint64_t fast = period_usec / EVICT_FAST_SAMPLE_DIVISOR;

        /* a round a PSI trigger forced right after another: too short a
         * base for a rate */
        if (!prev || !cur || cur->time_usec < prev->time_usec + fast / 2 || fast == 0)
                return period_usec;
        for (size_t i = 0; i < c->n_thresholds; i++) {
                const EvictThreshold *t = &c->thresholds[i];
                const EvictSignalObservation *a = &prev->signals[t->signal], *b = &cur->signals[t->signal];
                uint64_t want, fall, headroom;

                if (!a->present || !b->present || b->available >= a->available)
                        continue;
                want = evict_value_quantity(&t->value, b->capacity);
                if (b->available <= want)
                        continue; /* met: the rounds that follow are the victim's, at the period */
                headroom = b->available - want;
                /* the fall over one period at the last interval's rate */
                fall = (uint64_t) ((double) (a->available - b->available) * (double) period_usec /
                                   (double) (cur->time_usec - prev->time_usec));
                if (headroom / 2 < fall)
                        return fast;
        }
        return period_usec;
}
