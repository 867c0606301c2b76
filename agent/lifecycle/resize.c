/* SPDX-License-Identifier: Apache-2.0 */
/* In-place resize's record on the pod (LcResize, KEP-1287): its named
 * transitions. The decisions (what fits, when to actuate) are the loop's
 * (agent/loop/resize.c); what they change of the pod is written here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/time.h"
#include "lifecycle.h"

void lc_resize_restored(LcPod *p, bool in_progress, uint64_t now, int64_t now_s) {
        /* the source's pod comes again (the directory's rescan decodes the
         * file again): if it differs from the allocation, it waits as the
         * want */
        p->file_dev = p->file_ino = 0;
        p->resize.in_progress = in_progress;
        if (in_progress) {
                p->resize.started_usec = now;
                p->resize.progress_since = now_s;
        }
}

void lc_resize_withdraw(LcPod *p) {
        p->resize.want = worker_spec_unref(p->resize.want);
        p->resize.pending[0] = p->resize.message[0] = '\0';
        p->resize.next_usec = 0;
        p->resize.pending_since = 0;
}

void lc_resize_want(LcPod *p, WorkerSpec *spec) {
        lc_resize_withdraw(p);
        p->resize.want = spec;
}

bool lc_resize_pending(LcPod *p, const char *reason, const char *message, uint64_t next_usec, int64_t now_s) {
        bool changed = strcmp(p->resize.pending, reason) != 0 || strcmp(p->resize.message, message) != 0;

        if (strcmp(p->resize.pending, reason) != 0)
                p->resize.pending_since = now_s;
        (void) snprintf(p->resize.pending, sizeof(p->resize.pending), "%.15s", reason);
        (void) snprintf(p->resize.message, sizeof(p->resize.message), "%s", message);
        p->resize.next_usec = next_usec;
        return changed;
}

void lc_resize_allocating(LcPod *p, const bool *restart) {
        free(p->resize.restart);
        p->resize.restart = calloc(p->n + 1, sizeof(bool));
        if (p->resize.restart && restart)
                memcpy(p->resize.restart, restart, p->n * sizeof(bool));
        if (!p->resize.actual)
                p->resize.actual = worker_spec_ref(p->spec);
}

void lc_resize_allocated(LcPod *p, uint64_t now, int64_t now_s) {
        lc_resize_withdraw(p);
        p->resize.in_progress = true;
        p->resize.progress_since = now_s;
        p->resize.error[0] = '\0';
        p->resize.tries = 0;
        p->resize.started_usec = now;
}

void lc_resize_retry_at(LcPod *p, uint64_t next_usec) {
        p->resize.next_usec = next_usec;
}

bool lc_resize_failed(LcPod *p, const char *error, uint64_t now, uint64_t max_usec) {
        bool news = strcmp(p->resize.error, error) != 0;
        uint64_t wait;

        (void) snprintf(p->resize.error, sizeof(p->resize.error), "%s", error);
        p->resize.tries++;
        wait = CUB_USEC_PER_SEC << (p->resize.tries < 6 ? p->resize.tries : 6);
        p->resize.next_usec = now + (wait < max_usec ? wait : max_usec);
        return news;
}

void lc_resize_actuated(LcPod *p) {
        free(p->resize.restart);
        p->resize.restart = NULL;
        p->resize.in_progress = false;
        p->resize.actual = worker_spec_unref(p->resize.actual);
        p->resize.error[0] = '\0';
        p->resize.tries = 0;
}
