/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "killtable.h"

static void entry_free(KillEntry *e) {
        if (!e)
                return;
        free(e->uid);
        free(e->namespace_);
        free(e->name);
        free(e->cgroup);
        free(e);
}

void kill_table_free(KillTable *t) {
        for (size_t i = 0; i < t->n; i++)
                entry_free(t->entries[i]);
        free(t->entries);
        t->entries = NULL;
        t->n = 0;
}

static size_t index_of(const KillTable *t, const char *uid) {
        for (size_t i = 0; i < t->n; i++)
                if (strcmp(t->entries[i]->uid, uid) == 0)
                        return i;
        return SIZE_MAX;
}

KillEntry *kill_table_find(const KillTable *t, const char *uid) {
        size_t i = index_of(t, uid);

        return i == SIZE_MAX ? NULL : t->entries[i];
}

static void remove_at(KillTable *t, size_t i) {
        entry_free(t->entries[i]);
        t->entries[i] = t->entries[--t->n];
}

static KillEntry *entry_new(const char *uid, const char *namespace_, const char *name, const char *cgroup,
                            int64_t grace) {
        KillEntry *e = calloc(1, sizeof(*e));

        if (!e)
                return NULL;
        e->uid = strdup(uid);
        e->namespace_ = strdup(namespace_ ? namespace_ : "");
        e->name = strdup(name ? name : "");
        e->cgroup = cgroup ? strdup(cgroup) : NULL;
        e->grace = grace;
        if (!e->uid || !e->namespace_ || !e->name || (cgroup && !e->cgroup)) {
                entry_free(e);
                return NULL;
        }
        return e;
}

KillEntry *kill_table_want(KillTable *t, const char *uid, const char *namespace_, const char *name, const char *cgroup,
                           int64_t grace, uint64_t now, bool *ret_new) {
        KillEntry *e = kill_table_find(t, uid);

        if (ret_new)
                *ret_new = false;
        if (!e) {
                KillEntry **n = realloc(t->entries, (t->n + 1) * sizeof(*n));

                if (!n)
                        return NULL;
                t->entries = n;
                e = entry_new(uid, namespace_, name, cgroup, grace);
                if (!e)
                        return NULL;
                t->entries[t->n++] = e;
                if (ret_new)
                        *ret_new = true;
        } else {
                if (e->in_flight || !cub_retry_due(&e->retry, now))
                        return NULL;
                if (!e->cgroup && cgroup)
                        e->cgroup = strdup(cgroup);
                /* a shorter grace (a second delete, an eviction) wins, as kubelet's */
                if (grace < e->grace)
                        e->grace = grace;
        }
        e->in_flight = true;
        e->attempts++;
        return e;
}

KillOutcome kill_table_done(KillTable *t, const char *uid, int r, const char *error, uint64_t now, uint32_t draw,
                            unsigned *ret_attempts) {
        size_t i = index_of(t, uid);
        KillEntry *e;

        if (i == SIZE_MAX)
                return KILL_UNKNOWN;
        e = t->entries[i];
        e->in_flight = false;
        if (ret_attempts)
                *ret_attempts = e->attempts;
        if (r >= 0) {
                bool recovered = cub_retry_succeeded(&e->retry);

                remove_at(t, i);
                return recovered ? KILL_DONE_RECOVERED : KILL_DONE;
        }
        return cub_retry_failed(&e->retry, &cub_retry_pod_worker, now, error, draw) ? KILL_FAILED_NEW
                                                                                    : KILL_FAILED_AGAIN;
}

bool kill_table_gone(KillTable *t, const char *uid) {
        size_t i = index_of(t, uid);

        if (i == SIZE_MAX || t->entries[i]->in_flight)
                return false;
        remove_at(t, i);
        return true;
}

uint64_t kill_table_next_due(const KillTable *t) {
        uint64_t next = UINT64_MAX;

        for (size_t i = 0; i < t->n; i++)
                if (!t->entries[i]->in_flight && t->entries[i]->retry.next_usec < next)
                        next = t->entries[i]->retry.next_usec;
        return next;
}

size_t kill_table_in_flight(const KillTable *t) {
        size_t n = 0;

        for (size_t i = 0; i < t->n; i++)
                n += t->entries[i]->in_flight;
        return n;
}
