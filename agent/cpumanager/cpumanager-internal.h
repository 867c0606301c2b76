/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the .c files of agent/cpumanager and its unit tests only. */

#include <stdatomic.h>
#include <stdint.h>

#include "cpumanager.h"

/*
 * A topology turned into dense unit indices, built once per state (and once
 * per cpumgr_take_by_topology() call on a bare CpumgrTopology). Immutable
 * after cpumgr_index_new(); shared by a state and its clones through the
 * reference count.
 */
typedef enum CpumgrLevel {
        CPUMGR_LEVEL_NUMA,
        CPUMGR_LEVEL_SOCKET,
        CPUMGR_LEVEL_CORE,
        _CPUMGR_LEVEL_MAX,
} CpumgrLevel;

typedef struct CpumgrIndex {
        atomic_uint n_ref;
        CpumgrTopology topo; /* owned copy, ascending by cpu */
        CpumgrSet all;
        size_t n_units[_CPUMGR_LEVEL_MAX];
        /* per level: the unit's id (numa/socket/core id) and its number of CPUs */
        unsigned *unit_id[_CPUMGR_LEVEL_MAX];
        uint16_t *unit_total[_CPUMGR_LEVEL_MAX];
        /* per CPU index (position in topo.cpus): its unit at each level */
        uint16_t *cpu_unit[_CPUMGR_LEVEL_MAX];
        /* per level: the CPU indices of unit u, ascending, are
         * unit_cpus[unit_start[u] .. unit_start[u + 1] - 1] */
        uint16_t *unit_start[_CPUMGR_LEVEL_MAX];
        uint16_t *unit_cpus[_CPUMGR_LEVEL_MAX];
        /* cpu number -> index in topo.cpus, or UINT16_MAX */
        uint16_t pos[CPUMGR_MAX_CPUS];
} CpumgrIndex;

int cpumgr_index_new(const CpumgrTopology *t, CpumgrIndex **ret, CubError *err);
CpumgrIndex *cpumgr_index_ref(CpumgrIndex *idx);
CpumgrIndex *cpumgr_index_unref(CpumgrIndex *idx);
/* takeByTopologyNUMAPacked on a prepared index; allocation-free. */
int cpumgr_index_take(const CpumgrIndex *idx, const CpumgrSet *available, unsigned n, CpumgrSet *ret, CubError *err);

/* One exclusive assignment; the strings live in the state's arena. */
typedef struct CpumgrEntry {
        uint32_t uid_off;
        uint32_t name_off;
        CpumgrSet cpus;
} CpumgrEntry;

struct CpumgrState {
        CpumgrPolicy policy;
        CpumgrIndex *idx;
        CpumgrSet reserved;
        CpumgrSet shared; /* defaultCpuSet */
        CpumgrEntry *entries;
        size_t n_entries, cap_entries;
        char *strs; /* NUL-terminated strings, referenced by offset */
        size_t strs_len, strs_cap;
};

static inline const char *cpumgr_entry_uid(const CpumgrState *s, const CpumgrEntry *e) {
        return s->strs + e->uid_off;
}
static inline const char *cpumgr_entry_name(const CpumgrState *s, const CpumgrEntry *e) {
        return s->strs + e->name_off;
}

/* Appends an assignment (no pool update); -ENOMEM. */
int cpumgr_entry_add(CpumgrState *s, const char *pod_uid, const char *container, const CpumgrSet *cpus, CubError *err);
CpumgrEntry *cpumgr_entry_find(const CpumgrState *s, const char *pod_uid, const char *container);
/* Drops every assignment; the shared pool becomes all CPUs. */
void cpumgr_state_reset(CpumgrState *s);
/* The union of every assignment's CPUs. */
void cpumgr_assigned(const CpumgrState *s, CpumgrSet *ret);
