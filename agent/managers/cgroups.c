/* SPDX-License-Identifier: Apache-2.0 */
/* mgr_cgroups: the pod cgroups and the QoS-level groups (agent/cgroup),
 * kubelet's pod container manager and QoS container manager, through the
 * loop's CgWriter (LcEnv.writer; none: nothing is written).
 *
 *  - admit, the last of the table: a pod every other manager admitted gets
 *    its pod cgroup at once, before the loop submits its first sync job
 *    (which writes it again: the runtime's sandbox goes below it). A pod
 *    that waits for preemption victims or a hold is written by its sync
 *    alone, so is an evicted pod admitted again (LcPod.attempt > 0). When
 *    the write succeeded, LC_ACTION_CGROUP_WRITTEN hands the time to the
 *    loop (LcLatency.cgroup); the loop applies it right after this admit,
 *    before the sync job.
 *  - pods_changed: the burstable group's cpu follows the sum of the cpu
 *    requests of the Burstable pods a source wants, and with MemoryQoS
 *    the memory.min of kubepods and of the burstable group the sums of the
 *    memory requests (setMemoryQoS); the three groups are written again
 *    when a sum changed, and after a failed write. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cgroup/cgroup.h"
#include "../util/log.h"
#include "../util/time.h"
#include "managers.h"

/* What the QoS groups are computed from (kubelet's activePods). */
typedef struct QosSums {
        int64_t burstable_milli;   /* the Burstable pods' cpu requests */
        int64_t burstable_memory;  /* the Burstable pods' memory requests (MemoryQoS) */
        int64_t guaranteed_memory; /* the Guaranteed pods' memory requests (MemoryQoS) */
} QosSums;

typedef struct Cgroups {
        const LcEnv *env;
        QosSums written; /* what the QoS groups were last given (burstable_milli -1: nothing) */
} Cgroups;

static int cgroups_new(const LcEnv *env, void **ret, CubError *err) {
        Cgroups *m = calloc(1, sizeof(*m));

        if (!m)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->env = env;
        m->written.burstable_milli = -1; /* nothing written yet */
        *ret = m;
        return 0;
}

static void cgroups_free(void *userdata) {
        free(userdata);
}

/* never refuses: it only writes the cgroup of a pod the others admitted */
static int cgroups_admit(void *userdata, const LcPod *p, LcAdmitResult *ret, CubError *err) {
        Cgroups *m = userdata;
        const Pod *pod = p->spec->pod;
        LcAction act = { .kind = LC_ACTION_CGROUP_WRITTEN };
        CubError werr = {};

        (void) ret; /* admitted as the loop set it */
        (void) err;
        if (!m->env->writer || p->n_victims > 0 || p->attempt > 0)
                return 0;
        if (cg_writer_apply(m->env->writer, &p->spec->cgroup, &werr) < 0) {
                cub_log(LOG_ERR, "pod %s/%s: %s", pod->namespace_, pod->name, werr.msg);
                return 0;
        }
        act.usec = cub_now_usec(CLOCK_MONOTONIC);
        (void) snprintf(act.uid, sizeof(act.uid), "%s", pod->uid);
        m->env->act(m->env->loop, &act);
        return 0;
}

static void cgroups_pods_changed(void *userdata) {
        Cgroups *m = userdata;
        CgGroupValues g[3];
        QosSums sums = {};
        CubError err = {};
        const LcPod *const *pods;
        size_t n;

        if (!m->env->writer)
                return;
        pods = m->env->pods(m->env->loop, &n);
        for (size_t i = 0; i < n; i++) {
                const LcPod *p = pods[i];

                /* kubelet's GetActivePods: admitted, not finished (a rejected
                 * pod asking for 64 CPUs is not in it; the kubelet oracle) */
                if (!p->wanted || !p->admitted || p->terminal || p->phase == LC_PHASE_SUCCEEDED ||
                    p->phase == LC_PHASE_FAILED)
                        continue;
                if (p->spec->qos == POD_QOS_BURSTABLE) {
                        sums.burstable_milli += p->cpu_request_milli;
                        sums.burstable_memory += p->memory_request;
                } else if (p->spec->qos == POD_QOS_GUARANTEED)
                        sums.guaranteed_memory += p->memory_request;
        }
        if (!m->env->cg->memory_qos)
                sums.burstable_memory = sums.guaranteed_memory = 0;
        if (memcmp(&sums, &m->written, sizeof(sums)) == 0)
                return; /* the QoS groups have these values */
        m->written = sums;
        cg_qos_values(sums.burstable_milli, m->env->cg, g);
        cg_qos_memory_min(sums.guaranteed_memory, sums.burstable_memory, m->env->cg, g);
        for (int i = 0; i < 3; i++)
                if (cg_writer_apply(m->env->writer, &g[i], &err) < 0) {
                        cub_log(LOG_ERR, "%s", err.msg);
                        cub_err_clear(&err);
                        m->written.burstable_milli = -1; /* written again next time */
                }
}

const LcManagerVtable mgr_cgroups = {
        .name = "cgroups",
        .new = cgroups_new,
        .free = cgroups_free,
        .admit = cgroups_admit,
        .pods_changed = cgroups_pods_changed,
};
