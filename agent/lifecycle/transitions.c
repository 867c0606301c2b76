/* SPDX-License-Identifier: Apache-2.0 */
/* The named transitions of a pod's record (lifecycle.h): what the loop
 * tells lifecycle/ about a pod, each a function here, so that lifecycle/
 * is the only writer of LcPod (make lint: LC_POD_READ_ONLY). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/retry.h"
#include "lifecycle.h"

void lc_pod_seen(LcPod *p, int64_t seen_ns, uint64_t event_usec) {
        p->seen_ns = seen_ns;
        p->latency.event = event_usec;
}

void lc_pod_set_wanted(LcPod *p, bool wanted) {
        p->wanted = wanted;
}

void lc_pod_set_file_id(LcPod *p, uint64_t dev, uint64_t ino, int64_t size, int64_t mtime_ns, int64_t ctime_ns) {
        p->file_dev = dev;
        p->file_ino = ino;
        p->file_size = size;
        p->file_mtime_ns = mtime_ns;
        p->file_ctime_ns = ctime_ns;
}

bool lc_pod_set_active_deadline(LcPod *p, int64_t seconds) {
        if (p->active_deadline_s == seconds)
                return false;
        p->active_deadline_s = seconds;
        return true;
}

void lc_pod_admitted(LcPod *p, unsigned gen) {
        p->admitted = true;
        p->resources_gen = gen;
}

bool lc_pod_unadmit(LcPod *p) {
        bool was = p->admitted;

        p->admitted = false;
        return was;
}

void lc_pod_set_numa(LcPod *p, uint64_t *numa) {
        free(p->numa);
        p->numa = numa;
}

void lc_pod_rejected(LcPod *p) {
        p->rejected = true;
}

void lc_pod_set_evicted(LcPod *p, bool evicted) {
        p->evicted = evicted;
}

void lc_pod_api_terminal(LcPod *p, const char *phase, const char *reason, const char *message) {
        lc_pod_set_failed(p, reason ? reason : "", message ? message : "", 0);
        if (phase && strcmp(phase, "Succeeded") == 0)
                p->phase = LC_PHASE_SUCCEEDED;
        p->api_terminal = true;
}

void lc_pod_submitted(LcPod *p, unsigned gen) {
        p->busy = true;
        if (gen)
                p->resources_gen = gen;
}

bool lc_pod_sync_refused(LcPod *p, WorkerFailKind fail, size_t container, const char *error, uint64_t now,
                         uint32_t draw) {
        bool news = cub_retry_failed(&p->sync_retry, &cub_retry_pod_sync, now, error, draw);

        lc_pod_sync_result(p, -EIO, fail, container, error, now);
        return news;
}

LcSyncDone lc_pod_sync_done(LcPod *p, const WorkerJob *j, uint64_t now, uint32_t draw) {
        LcSyncDone d = {};

        p->busy = false;
        if (j->sandbox_requested_usec && !p->latency.sandbox)
                p->latency.sandbox = j->sandbox_requested_usec;
        if (j->containers_started_usec && !p->latency.started)
                p->latency.started = j->containers_started_usec;
        if (j->r >= 0 && p->admitted && !p->started)
                d.started = p->started = true;
        /* one journal line per distinct error, and one when it clears */
        if (j->r < 0)
                d.log_error = cub_retry_failed(&p->sync_retry, &cub_retry_pod_sync, now, j->error, draw);
        else
                d.log_cleared = cub_retry_succeeded(&p->sync_retry);
        lc_pod_pull_events(p, j->pulls, j->n_pulls);
        lc_pod_sync_result(p, j->r, j->fail, j->fail_container, j->error, now);
        /* security context: containers the sync could not create */
        for (size_t k = 0; k < p->n; k++)
                (void) snprintf(p->statuses[k].config_error, sizeof(p->statuses[k].config_error), "%s",
                                k < j->n_config_errors && j->config_errors[k] ? j->config_errors[k] : "");
        return d;
}

void lc_pod_update_done(LcPod *p, bool retry) {
        p->busy = false;
        if (retry)
                p->resources_gen = 0; /* retried at the next relist */
}

void lc_pod_cgroup_written(LcPod *p, uint64_t usec) {
        p->latency.cgroup = usec;
}

void lc_pod_set_observed(LcPod *p, bool observed) {
        p->observed = observed;
}

bool lc_pod_network_wait(LcPod *p, const char *error, uint64_t now) {
        if (!error || !*error || p->spec->pod->host_network) {
                p->network_wait = false;
                return false;
        }
        if (!p->network_wait)
                lc_pod_event(p, true, "NetworkNotReady", now, "network is not ready: %s", error);
        p->network_wait = true;
        return true;
}

bool lc_pod_probe_result(LcPod *p, size_t k, const char *id, bool started, bool ready, int64_t now_s) {
        LcContainerStatus *st;

        if (k >= p->n)
                return false;
        st = &p->statuses[k];
        if (strcmp(st->id, id) != 0)
                return false; /* about a container that is gone */
        st->probe_known = true;
        st->probe_started = started;
        st->probe_ready = ready;
        (void) lc_pod_track_conditions(p, now_s);
        return true;
}

void lc_pod_container_killed(LcPod *p, size_t k, const char *message) {
        if (k < p->n)
                (void) snprintf(p->statuses[k].message, sizeof(p->statuses[k].message), "%.150s", message);
}

void lc_pod_set_spec_want(LcPod *p, WorkerSpec *spec) {
        worker_spec_unref(p->spec_want);
        p->spec_want = spec;
}

void lc_pod_spec_applied(LcPod *p) {
        p->spec_want = worker_spec_unref(p->spec_want);
        p->sync_retry.next_usec = 0;
}
