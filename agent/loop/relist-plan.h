/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A relist in three steps. The pods' records take in what the runtime holds
 * (relist-apply.c: lifecycle/'s lc_pod_observe). Then the decisions, one
 * pure function of (the pod table, what the runtime holds, the kill table,
 * now) that changes nothing (relist-plan.c, relist_decide): which pods get
 * a sync job, which wait for the runtime's network, what is to be stopped,
 * which waiting stops are gone, whether the pods are steady. Then one
 * applier (relist-apply.c) applies them to the pods and the kill table and
 * returns the jobs to submit (RelistPlan); the loop (agent/loop/jobs.c)
 * submits them through submit.c. No I/O; unit tests run it on a fake clock
 * (tests/unit/agent/loop).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lifecycle/lifecycle.h"
#include "../util/cleanup.h"
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
        /* uid → its entry of observed (relist_plan makes it for the other steps) */
        const CubHashmap *observed_by_uid;
} RelistInput;

/* Whether p's sync job may start at now: admitted, not terminal, no victim
 * still stopping, no job in flight, its retry due (else NO), and the
 * runtime's network ready unless p is on the host's network (else NETWORK).
 * Pure. */
typedef enum RelistGate {
        RELIST_GATE_NO,
        RELIST_GATE_SYNC,
        RELIST_GATE_NETWORK,
} RelistGate;
RelistGate relist_sync_gate(const LcPod *p, uint64_t now, const char *network_error);

/* The decisions of one relist, after the observations (needs_sync[i]: pod
 * i asked for a sync). Pure: the pods and the kill table are only read. */
typedef struct RelistDecisions {
        LcPod **sync; /* pods whose sync job starts now */
        size_t n_sync;
        LcPod **net_wait; /* pods whose sync waits for the runtime's network */
        size_t n_net_wait;
        const WorkerObserved **stop; /* what the runtime holds that is to be stopped, with its grace */
        int64_t *stop_grace;
        size_t n_stop;
        const char **gone; /* uids of waiting stops the runtime no longer holds anything of */
        size_t n_gone;
        bool pods_steady;  /* every pod steady, or waiting for its sync's retry */
        uint64_t sync_due; /* the earliest retry of a failed sync, UINT64_MAX: none */
} RelistDecisions;
int relist_decide(const RelistInput *in, const bool *needs_sync, const KillTable *kills, RelistDecisions *ret);
void relist_decisions_done(RelistDecisions *d);

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

/* relist-apply.c: relist_sync_gate applied to p (a pod that waits for the
 * network gets kubelet's event once, lc_pod_network_wait) */
bool relist_may_sync(LcPod *p, uint64_t now, const char *network_error);

/* The three steps: observes each pod, decides, applies the decisions (the
 * kill table gets the new stops and the due retries, in flight from here)
 * and fills plan. 0 or -ENOMEM; submit the plan and call
 * relist_plan_done() either way (cut short by -ENOMEM, it still holds the
 * stops it put in flight). */
int relist_plan(const RelistInput *in, KillTable *kills, RelistPlan *plan);
void relist_plan_done(RelistPlan *plan);
