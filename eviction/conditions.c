/* SPDX-License-Identifier: Apache-2.0 */
/* The synchronize state machine: thresholds met (with min-reclaim while a
 * threshold is being resolved), first-observed times, grace periods and the
 * node conditions with their transition period. Pure: the clock is an
 * argument. */
#include <string.h>

#include "eviction-internal.h"

void evict_state_init(EvictState *s) {
        *s = (EvictState){};
}

/* kubelet's thresholdsMet for one threshold. */
static bool threshold_met(const EvictThreshold *t, const EvictSignalObservation *o, bool enforce_min_reclaim) {
        uint64_t q;

        if (!o->present)
                return false;
        q = evict_value_quantity(&t->value, o->capacity);
        if (enforce_min_reclaim && t->min_reclaim_set) {
                uint64_t mr = evict_value_quantity(&t->min_reclaim, o->capacity);

                q = q > UINT64_MAX - mr ? UINT64_MAX : q + mr;
        }
        return q > o->available; /* strictly: equality is not met */
}

void evict_state_update(EvictState *s, const EvictConfig *c, const EvictObservations *obs, uint64_t now_usec) {
        bool observed[_EVICT_CONDITION_MAX] = {};

        for (size_t i = 0; i < c->n_thresholds && i < EVICT_THRESHOLDS_MAX; i++) {
                const EvictThreshold *t = &c->thresholds[i];
                const EvictSignalObservation *o = &obs->signals[t->signal];
                bool met = threshold_met(t, o, /* enforce_min_reclaim= */ false);

                /* thresholds that drove eviction last time stay met until
                 * their minimum reclaim is satisfied */
                if (!met && s->active[i])
                        met = threshold_met(t, o, /* enforce_min_reclaim= */ true);
                if (met && !s->met[i])
                        s->first_observed_usec[i] = now_usec;
                if (!met)
                        s->first_observed_usec[i] = 0;
                s->met[i] = met;
                s->active[i] = met && now_usec >= s->first_observed_usec[i] &&
                               now_usec - s->first_observed_usec[i] >= t->grace_usec;
                if (met)
                        observed[evict_signal_condition(t->signal)] = true;
        }
        for (size_t i = c->n_thresholds; i < EVICT_THRESHOLDS_MAX; i++)
                s->met[i] = s->active[i] = false;

        for (int k = 0; k < _EVICT_CONDITION_MAX; k++) {
                bool status;

                if (observed[k]) {
                        s->condition_observed[k] = true;
                        s->condition_last_observed_usec[k] = now_usec;
                }
                /* True while met, and until the transition period has passed
                 * since it was last observed (kubelet's
                 * nodeConditionsObservedSince) */
                status = observed[k] || (s->condition_observed[k] && now_usec >= s->condition_last_observed_usec[k] &&
                                         now_usec - s->condition_last_observed_usec[k] < c->transition_usec);
                if (status != s->condition[k] && (s->updated || status))
                        s->condition_transition_usec[k] = now_usec;
                s->condition[k] = status;
        }
        s->last_update_usec = now_usec;
        s->updated = true;
}

bool evict_state_any_active(const EvictState *s, const EvictConfig *c) {
        for (size_t i = 0; i < c->n_thresholds && i < EVICT_THRESHOLDS_MAX; i++)
                if (s->active[i])
                        return true;
        return false;
}

void evict_state_condition(const EvictState *s, EvictCondition c, EvictConditionInfo *ret) {
        bool status = c >= 0 && c < _EVICT_CONDITION_MAX && s->condition[c];

        *ret = (EvictConditionInfo){
                .type = c,
                .status = status,
                .name = evict_condition_to_string(c),
                .reason = evict_condition_reason(c, status),
                .message = evict_condition_message(c, status),
                .last_transition_usec = c >= 0 && c < _EVICT_CONDITION_MAX ? s->condition_transition_usec[c] : 0,
        };
}

size_t evict_state_met(const EvictState *s, const EvictConfig *c, const EvictObservations *obs,
                       EvictMet ret[static EVICT_THRESHOLDS_MAX]) {
        size_t n = 0;

        for (size_t i = 0; i < c->n_thresholds && i < EVICT_THRESHOLDS_MAX; i++) {
                const EvictThreshold *t = &c->thresholds[i];
                const EvictSignalObservation *o = &obs->signals[t->signal];

                if (!s->met[i])
                        continue;
                ret[n++] = (EvictMet){
                        .threshold = t,
                        .quantity = evict_value_quantity(&t->value, o->capacity),
                        .available = o->available,
                        .first_observed_usec = s->first_observed_usec[i],
                        .active = s->active[i],
                };
        }
        return n;
}
