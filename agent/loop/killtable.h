/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The kill table: every pod the agent is stopping, until the runtime holds
 * nothing of it. Its one writer is the loop's agent/loop/submit.c. A
 * failed kill stays in the table and is attempted again when the pod
 * worker's retry policy says (agent/util/retry.h): never at once, never
 * because a relist found the sandbox again. Pure: no I/O, the caller gives
 * the time and the random draws.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/retry.h"

typedef struct KillEntry {
        char *uid, *namespace_, *name;
        char *cgroup;      /* the pod cgroup to remove, NULL when unknown */
        int64_t grace;     /* seconds */
        bool in_flight;    /* a kill job of it is in the worker pool */
        unsigned attempts; /* kill jobs submitted */
        CubRetry retry;
} KillEntry;

typedef struct KillTable {
        KillEntry **entries;
        size_t n;
} KillTable;

void kill_table_free(KillTable *t);
KillEntry *kill_table_find(const KillTable *t, const char *uid);

/* uid is to be stopped (cgroup may be NULL). Returns the entry when a kill
 * job is to be submitted now: new, or waiting and due at now; it is then in
 * flight and its attempt counted. NULL otherwise: in flight, waiting for its
 * retry, or out of memory (ret_new tells a new entry; may be NULL). */
KillEntry *kill_table_want(KillTable *t, const char *uid, const char *namespace_, const char *name, const char *cgroup,
                           int64_t grace, uint64_t now, bool *ret_new);

typedef enum KillOutcome {
        KILL_DONE,           /* stopped: the entry is gone */
        KILL_DONE_RECOVERED, /* stopped after failures: the entry is gone (log that it cleared) */
        KILL_FAILED_NEW,     /* failed with an error unlike the last one (log it) */
        KILL_FAILED_AGAIN,   /* failed as before (nothing to log) */
        KILL_UNKNOWN,        /* no entry of uid */
} KillOutcome;

/* The kill job of uid ended with r (< 0: error). On failure the entry
 * waits for the retry policy's delay from now (draw: cub_retry_draw()).
 * ret_attempts: the attempts it took (may be NULL). */
KillOutcome kill_table_done(KillTable *t, const char *uid, int r, const char *error, uint64_t now, uint32_t draw,
                            unsigned *ret_attempts);

/* A relist no longer found uid in the runtime: a waiting entry of it goes
 * (someone else removed the pod). Returns whether one went. */
bool kill_table_gone(KillTable *t, const char *uid);

/* The earliest retry among waiting entries; UINT64_MAX when none waits. */
uint64_t kill_table_next_due(const KillTable *t);
size_t kill_table_in_flight(const KillTable *t);
