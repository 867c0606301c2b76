/* SPDX-License-Identifier: Apache-2.0 */
/* The loop's bottom layer: what every file of the loop may ask, read-only
 * (the clock, the pod of a UID, the sd_notify status line). It calls no
 * other file of the loop. */
#include <systemd/sd-daemon.h>

#include "../util/hashmap.h"
#include "agent-internal.h"

uint64_t agent_now_usec(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

LcPod *agent_find_pod(Agent *a, const char *uid) {
        return cub_hashmap_get(a->table.by_uid, uid);
}

void agent_notify_status(Agent *a) {
        (void) sd_notifyf(false, "STATUS=%zu pods (%zu running), %zu manifest errors%s", a->table.n_pods,
                          a->rt->n_running, a->errs->n_dir,
                          a->rt->state == AGENT_RUNTIME_READY ? "" : ", runtime unavailable");
}
