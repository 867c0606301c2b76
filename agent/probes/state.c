/* SPDX-License-Identifier: Apache-2.0 */
/* The probe state machine (kubelet's prober worker.doProbe), pure. */
#include <stdio.h>
#include <string.h>

#include "probes.h"

static const char *const kind_names[_PROBE_KIND_MAX] = {
        [PROBE_STARTUP] = "Startup",
        [PROBE_LIVENESS] = "Liveness",
        [PROBE_READINESS] = "Readiness",
};

static const char *const result_names[_PROBE_RESULT_MAX] = {
        [PROBE_RESULT_UNKNOWN] = "Unknown",
        [PROBE_RESULT_SUCCESS] = "Success",
        [PROBE_RESULT_FAILURE] = "Failure",
};

const char *probe_kind_to_string(ProbeKind k) {
        return k >= 0 && k < _PROBE_KIND_MAX ? kind_names[k] : NULL;
}

const char *probe_result_to_string(ProbeResult r) {
        return r >= 0 && r < _PROBE_RESULT_MAX ? result_names[r] : NULL;
}

ProbeResult probe_initial_result(ProbeKind k) {
        switch (k) {
        case PROBE_LIVENESS:
                return PROBE_RESULT_SUCCESS;
        case PROBE_READINESS:
                return PROBE_RESULT_FAILURE;
        default:
                return PROBE_RESULT_UNKNOWN;
        }
}

void probe_state_init(ProbeState *s, ProbeKind kind, const PodProbe *p) {
        *s = (ProbeState){
                .kind = kind,
                .initial_delay_s = p->initial_delay_seconds,
                .success_threshold = p->success_threshold > 0 ? p->success_threshold : 1,
                .failure_threshold = p->failure_threshold > 0 ? p->failure_threshold : 3,
                .result = probe_initial_result(kind),
                .last = PROBE_RESULT_UNKNOWN,
        };
}

bool probe_state_set_container(ProbeState *s, const char *id) {
        ProbeResult before = s->result;

        if (!id)
                id = "";
        if (strcmp(s->container_id, id) == 0)
                return false;
        (void) snprintf(s->container_id, sizeof(s->container_id), "%s", id);
        s->on_hold = false;
        s->run = 0;
        s->last = PROBE_RESULT_UNKNOWN;
        s->result = probe_initial_result(s->kind);
        return s->result != before;
}

bool probe_state_due(const ProbeState *s, bool running, int64_t running_for_s, bool started) {
        if (s->on_hold || !running || !*s->container_id)
                return false;
        if (running_for_s < s->initial_delay_s)
                return false;
        /* startup runs until the container started, the others only after */
        if (s->kind == PROBE_STARTUP)
                return !started;
        return started;
}

bool probe_state_record(ProbeState *s, ProbeResult r) {
        ProbeResult before = s->result;

        if (r == PROBE_RESULT_UNKNOWN)
                return false;
        if (s->last == r)
                s->run++;
        else {
                s->last = r;
                s->run = 1;
        }
        if ((r == PROBE_RESULT_FAILURE && s->run < s->failure_threshold) ||
            (r == PROBE_RESULT_SUCCESS && s->run < s->success_threshold))
                return false;
        s->result = r;
        if ((s->kind == PROBE_LIVENESS || s->kind == PROBE_STARTUP) && r == PROBE_RESULT_FAILURE) {
                /* the container will be restarted: no probe until a new one */
                s->on_hold = true;
                s->run = 0;
                return true; /* every such failure is a decision, even a repeated one */
        }
        return s->result != before;
}

bool probe_container_started(bool running, const ProbeState *startup) {
        if (!running)
                return false;
        return !startup || startup->result == PROBE_RESULT_SUCCESS;
}

bool probe_container_ready(bool running, bool started, const ProbeState *readiness) {
        if (!running || !started)
                return false;
        return !readiness || readiness->result == PROBE_RESULT_SUCCESS;
}

uint64_t probe_first_delay_usec(uint64_t period_usec, uint64_t prober_age_usec, uint64_t random) {
        if (period_usec == 0 || prober_age_usec >= period_usec)
                return 0;
        return random % period_usec;
}
