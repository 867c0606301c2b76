/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the CPU manager checkpoint restore (cpu_manager_state).
 * Whatever the input, restore must not fail, must leave a consistent state
 * (pool ∪ assignments = all CPUs, pool ∩ assignments = ∅, no reserved CPU
 * assigned) and what it keeps must format and restore back cleanly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cpumanager/cpumanager-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 2 sockets × 2 cores × 2 threads, one NUMA node per socket */
static const CpumgrCpu cpus[] = { { 0, 0, 0, 0 }, { 1, 1, 0, 0 }, { 2, 2, 1, 1 }, { 3, 3, 1, 1 },
                                  { 4, 0, 0, 0 }, { 5, 1, 0, 0 }, { 6, 2, 1, 1 }, { 7, 3, 1, 1 } };

/* pool ∪ assignments = all, pool ∩ assignments = ∅, no reserved CPU
 * assigned, no CPU shared between pods */
static void check(const CpumgrState *s, const CpumgrSet *all) {
        CpumgrSet assigned = {}, x;

        for (size_t i = 0; i < s->n_entries; i++) {
                const CpumgrEntry *e = &s->entries[i];

                if (cpumgr_set_is_empty(&e->cpus))
                        abort();
                x = e->cpus;
                cpumgr_set_intersect(&x, &s->reserved);
                if (!cpumgr_set_is_empty(&x))
                        abort();
                for (size_t j = 0; j < i; j++) {
                        const CpumgrEntry *f = &s->entries[j];

                        if (strcmp(cpumgr_entry_uid(s, e), cpumgr_entry_uid(s, f)) == 0)
                                continue;
                        x = e->cpus;
                        cpumgr_set_intersect(&x, &f->cpus);
                        if (!cpumgr_set_is_empty(&x))
                                abort();
                }
                if (cpumgr_container_cpus(s, cpumgr_entry_uid(s, e), cpumgr_entry_name(s, e)) != &e->cpus)
                        abort();
                cpumgr_set_union(&assigned, &e->cpus);
        }
        x = assigned;
        cpumgr_set_intersect(&x, &s->shared);
        if (!cpumgr_set_is_empty(&x))
                abort();
        cpumgr_set_union(&assigned, &s->shared);
        if (!cpumgr_set_equal(&assigned, all))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        CpumgrTopology t;
        CpumgrSet reserved = {}, all;
        CpumgrState *s = NULL, *back = NULL;
        char note[512], *text = NULL, *again = NULL;
        CubError err = {};

        if (size > 64 * 1024)
                return 0;
        if (cpumgr_topology_from_cpus(cpus, sizeof(cpus) / sizeof(cpus[0]), &t, &err) < 0)
                abort();
        cpumgr_set_add(&reserved, 0);
        if (cpumgr_new(CPUMGR_POLICY_STATIC, &t, &reserved, &s, &err) < 0 ||
            cpumgr_new(CPUMGR_POLICY_STATIC, &t, &reserved, &back, &err) < 0)
                abort();
        cpumgr_topology_all(&t, &all);

        if (cpumgr_checkpoint_restore(s, (const char *) data, size, note, sizeof(note), &err) < 0)
                abort();
        if (cpumgr_checkpoint_format(s, &text, &err) < 0)
                abort();
        /* what was kept restores without a note, and formats the same */
        if (cpumgr_checkpoint_restore(back, text, strlen(text), note, sizeof(note), &err) != 0)
                abort();
        if (cpumgr_checkpoint_format(back, &again, &err) < 0 || strcmp(text, again) != 0)
                abort();
        if (!cpumgr_set_equal(cpumgr_shared_pool(s), cpumgr_shared_pool(back)))
                abort();
        check(s, &all);
        check(back, &all);
        free(text);
        free(again);
        cpumgr_free(s);
        cpumgr_free(back);
        cpumgr_topology_done(&t);
        return 0;
}
