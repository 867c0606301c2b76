/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The decisions of a relist, as one pure function of (the pod table, what
 * the runtime holds, the kill table, now): which pods get a sync job, which
 * stops start or are attempted again, and whether the node is steady. The
 * loop (agent/loop/jobs.c) applies the plan: submit.c submits the jobs. No I/O; unit
 * tests run it on a fake clock (tests/unit/agent/loop).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lifecycle/lifecycle.h"
#include "../util/hashmap.h"
#include "../worker/worker.h"
#include "killtable.h"

typedef struct RelistInput {
        LcPod *const *pods; /* the pod table, in order */
        size_t n_pods;
        const CubHashmap *by_uid; /* the table's index: the newest pod of each UID */
        const WorkerObserved *observed;
        size_t n_observed;
        bool sources_ready; /* until every source gave its set, nothing found is stopped */
        /* whether a source wants uid but has not handed it over yet (an API
         * pod waiting for its volumes' data): what runs of it is not stopped */
        bool (*held)(const void *ctx, const char *uid);
        const void *held_ctx;
        const char *network_error; /* the runtime's network is not ready ("" or NULL: it is) */
        uint64_t now;              /* CLOCK_MONOTONIC µs */
} RelistInput;

typedef struct RelistPlan {
        LcPod **sync; /* pods whose sync job starts now */
        size_t n_sync;
        KillEntry **kill; /* kill jobs that start now (in flight in the table already) */
        size_t n_kill;
        size_t n_new_kills; /* of those, the first attempts (logged as "stopping pod") */
        bool *kill_new;     /* per kill: its first attempt */
        size_t forgotten;   /* waiting stops dropped: the runtime holds nothing of them any more */
        bool steady;        /* nothing to relist for on time (events and the long timer suffice) */
        uint64_t next_due;  /* the earliest retry of a waiting stop or a failed sync, UINT64_MAX: none */
} RelistPlan;

/* Whether p's sync job may start at now: admitted, not terminal, no
 * victim still stopping, no job in flight, its retry due, and the
 * runtime's network ready unless p is on the host's network (network_error
 * "" or NULL: it is; a pod that waits for it gets kubelet's event once). */
bool relist_may_sync(LcPod *p, uint64_t now, const char *network_error);

/* Observes each pod (lc_pod_observe) and fills plan; the kill table gets
 * the new stops and the due retries (in flight from here). 0 or -ENOMEM;
 * apply the plan and call relist_plan_done() either way (cut short by
 * -ENOMEM, it still holds the stops it put in flight). */
int relist_plan(const RelistInput *in, KillTable *kills, RelistPlan *plan);
void relist_plan_done(RelistPlan *plan);
