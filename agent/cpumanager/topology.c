/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU topology (from /sys or given), kubelet's takeByTopologyNUMAPacked
 * (cpu_assignment.go) and the reserved set (policy_static.go).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/parse.h"
#include "cpumanager-internal.h"

#define NO_POS UINT16_MAX
#define SYSFS_FILE_MAX (64 * 1024)

/* ---- topology ------------------------------------------------------------ */

void cpumgr_topology_done(CpumgrTopology *t) {
        if (!t)
                return;
        free(t->cpus);
        t->cpus = NULL;
        t->n = 0;
}

void cpumgr_topology_all(const CpumgrTopology *t, CpumgrSet *ret) {
        CpumgrSet s = {};

        for (size_t i = 0; i < t->n; i++)
                cpumgr_set_add(&s, t->cpus[i].cpu);
        *ret = s;
}

static int cmp_cpu(const void *a, const void *b) {
        const CpumgrCpu *x = a, *y = b;

        return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

int cpumgr_topology_from_cpus(const CpumgrCpu *cpus, size_t n, CpumgrTopology *ret, CubError *err) {
        _cleanup_free_ CpumgrCpu *copy = NULL;

        if (n > CPUMGR_MAX_CPUS)
                return cub_err_set(err, ERANGE, "topology: %zu cpus, at most %d supported", n, CPUMGR_MAX_CPUS);
        if (n > 0) {
                copy = malloc(n * sizeof(*copy));
                if (!copy)
                        return cub_err_set(err, ENOMEM, "topology: out of memory");
                memcpy(copy, cpus, n * sizeof(*copy));
                qsort(copy, n, sizeof(*copy), cmp_cpu);
        }
        for (size_t i = 0; i < n; i++) {
                if (copy[i].cpu >= CPUMGR_MAX_CPUS)
                        return cub_err_set(err, ERANGE, "topology: cpu %u above %d", copy[i].cpu, CPUMGR_MAX_CPUS - 1);
                if (i > 0 && copy[i].cpu == copy[i - 1].cpu)
                        return cub_err_set(err, EINVAL, "topology: cpu %u listed twice", copy[i].cpu);
        }
        ret->cpus = TAKE_PTR(copy);
        ret->n = n;
        return 0;
}

/* Reads a small sysfs file, trailing blanks stripped. */
static int read_sys(const char *path, char **ret, CubError *err) {
        char *data = NULL;
        size_t size = 0;
        int r;

        r = cub_read_file(path, SYSFS_FILE_MAX, &data, &size, err);
        if (r < 0)
                return r;
        while (size > 0 && (data[size - 1] == '\n' || data[size - 1] == ' ' || data[size - 1] == '\t'))
                data[--size] = '\0';
        *ret = data;
        return 0;
}

/* An integer sysfs attribute; ENOENT → def. Negative values (a package id of
 * -1 on some platforms) read as def too. */
static int read_sys_id(const char *path, unsigned def, unsigned *ret, CubError *err) {
        _cleanup_free_ char *text = NULL;
        int64_t v;
        int r;

        r = read_sys(path, &text, err);
        if (r == -ENOENT) {
                *ret = def;
                return 0;
        }
        if (r < 0)
                return r;
        if (cub_safe_atoi64(text, &v) < 0 || v > UINT32_MAX)
                return cub_err_set(err, EINVAL, "'%s': invalid id '%.32s'", path, text);
        *ret = v < 0 ? def : (unsigned) v;
        return 0;
}

static int read_numa(const char *sys_root, CpumgrCpu *cpus, size_t n, const uint16_t *pos, CubError *err) {
        _cleanup_free_ char *dir_path = NULL;
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (asprintf(&dir_path, "%s/devices/system/node", sys_root) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        d = opendir(dir_path);
        if (!d)
                return errno == ENOENT ? 0 : cub_err_set(err, errno, "'%s': %m", dir_path);
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL, *text = NULL;
                CpumgrSet set;
                int64_t node;

                if (strncmp(de->d_name, "node", 4) != 0 || cub_safe_atoi64(de->d_name + 4, &node) < 0 || node < 0 ||
                    node > UINT32_MAX)
                        continue;
                if (asprintf(&path, "%s/%s/cpulist", dir_path, de->d_name) < 0) {
                        r = cub_err_set(err, ENOMEM, "out of memory");
                        break;
                }
                r = read_sys(path, &text, err);
                if (r == -ENOENT) {
                        r = 0;
                        continue;
                }
                if (r < 0)
                        break;
                r = cpumgr_set_parse(text, &set, err);
                if (r < 0) {
                        (void) cub_err_wrap_errno(err, r, "'%s'", path);
                        break;
                }
                for (unsigned c = 0; c < CPUMGR_MAX_CPUS; c++)
                        if (cpumgr_set_has(&set, c) && pos[c] != NO_POS)
                                cpus[pos[c]].numa = (unsigned) node;
        }
        (void) closedir(d);
        (void) n;
        return r;
}

int cpumgr_topology_from_sys(const char *sys_root, CpumgrTopology *ret, CubError *err) {
        _cleanup_free_ char *online_path = NULL, *online = NULL;
        _cleanup_free_ CpumgrCpu *cpus = NULL;
        _cleanup_free_ unsigned *core_id = NULL;
        uint16_t pos[CPUMGR_MAX_CPUS];
        CpumgrSet set;
        size_t n = 0;
        int r;

        if (asprintf(&online_path, "%s/devices/system/cpu/online", sys_root) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = read_sys(online_path, &online, err);
        if (r < 0)
                return r;
        r = cpumgr_set_parse(online, &set, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "'%s'", online_path);
        if (cpumgr_set_is_empty(&set))
                return cub_err_set(err, EINVAL, "'%s': no online cpus", online_path);

        cpus = calloc(cpumgr_set_count(&set), sizeof(*cpus));
        core_id = calloc(cpumgr_set_count(&set), sizeof(*core_id));
        if (!cpus || !core_id)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (unsigned c = 0; c < CPUMGR_MAX_CPUS; c++) {
                _cleanup_free_ char *p_core = NULL, *p_pkg = NULL;

                pos[c] = NO_POS;
                if (!cpumgr_set_has(&set, c))
                        continue;
                if (asprintf(&p_core, "%s/devices/system/cpu/cpu%u/topology/core_id", sys_root, c) < 0 ||
                    asprintf(&p_pkg, "%s/devices/system/cpu/cpu%u/topology/physical_package_id", sys_root, c) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
                cpus[n].cpu = c;
                /* without topology files every CPU is its own core in socket 0 */
                r = read_sys_id(p_core, c, &core_id[n], err);
                if (r >= 0)
                        r = read_sys_id(p_pkg, 0, &cpus[n].socket, err);
                if (r < 0)
                        return r;
                pos[c] = (uint16_t) n;
                n++;
        }
        r = read_numa(sys_root, cpus, n, pos, err);
        if (r < 0)
                return r;

        /* kubelet's core id: the lowest CPU among the threads of a physical
         * core, i.e. of the CPUs sharing (NUMA node, socket, core_id). */
        for (size_t i = 0; i < n; i++) {
                cpus[i].core = cpus[i].cpu;
                for (size_t j = 0; j < i; j++)
                        if (core_id[j] == core_id[i] && cpus[j].socket == cpus[i].socket &&
                            cpus[j].numa == cpus[i].numa) {
                                cpus[i].core = cpus[j].core;
                                break;
                        }
        }
        ret->cpus = TAKE_PTR(cpus);
        ret->n = n;
        return 0;
}

/* ---- the index ----------------------------------------------------------- */

static unsigned cpu_unit_id(const CpumgrCpu *c, CpumgrLevel l) {
        return l == CPUMGR_LEVEL_NUMA ? c->numa : l == CPUMGR_LEVEL_SOCKET ? c->socket : c->core;
}

static int cmp_unsigned(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;

        return x < y ? -1 : x > y;
}

CpumgrIndex *cpumgr_index_ref(CpumgrIndex *idx) {
        if (idx)
                atomic_fetch_add(&idx->n_ref, 1);
        return idx;
}

CpumgrIndex *cpumgr_index_unref(CpumgrIndex *idx) {
        if (!idx || atomic_fetch_sub(&idx->n_ref, 1) > 1)
                return NULL;
        for (size_t l = 0; l < _CPUMGR_LEVEL_MAX; l++) {
                free(idx->unit_id[l]);
                free(idx->unit_total[l]);
                free(idx->cpu_unit[l]);
                free(idx->unit_start[l]);
                free(idx->unit_cpus[l]);
        }
        cpumgr_topology_done(&idx->topo);
        free(idx);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(CpumgrIndex *, cpumgr_index_unref);

int cpumgr_index_new(const CpumgrTopology *t, CpumgrIndex **ret, CubError *err) {
        _cleanup_(cpumgr_index_unrefp) CpumgrIndex *idx = NULL;
        _cleanup_free_ unsigned *ids = NULL;
        size_t n = t->n;
        int r;

        idx = calloc(1, sizeof(*idx));
        if (!idx)
                return cub_err_set(err, ENOMEM, "out of memory");
        atomic_init(&idx->n_ref, 1);
        r = cpumgr_topology_from_cpus(t->cpus, t->n, &idx->topo, err);
        if (r < 0)
                return r;
        cpumgr_topology_all(&idx->topo, &idx->all);
        for (size_t c = 0; c < CPUMGR_MAX_CPUS; c++)
                idx->pos[c] = NO_POS;
        for (size_t i = 0; i < n; i++)
                idx->pos[idx->topo.cpus[i].cpu] = (uint16_t) i;

        ids = malloc((n ? n : 1) * sizeof(*ids));
        if (!ids)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (CpumgrLevel l = 0; l < _CPUMGR_LEVEL_MAX; l++) {
                size_t nu = 0;

                for (size_t i = 0; i < n; i++)
                        ids[i] = cpu_unit_id(&idx->topo.cpus[i], l);
                qsort(ids, n, sizeof(*ids), cmp_unsigned);
                for (size_t i = 0; i < n; i++)
                        if (nu == 0 || ids[nu - 1] != ids[i])
                                ids[nu++] = ids[i];
                idx->n_units[l] = nu;
                idx->unit_id[l] = malloc((nu ? nu : 1) * sizeof(unsigned));
                idx->unit_total[l] = calloc(nu ? nu : 1, sizeof(uint16_t));
                idx->cpu_unit[l] = malloc((n ? n : 1) * sizeof(uint16_t));
                idx->unit_start[l] = calloc(nu + 1, sizeof(uint16_t));
                idx->unit_cpus[l] = malloc((n ? n : 1) * sizeof(uint16_t));
                if (!idx->unit_id[l] || !idx->unit_total[l] || !idx->cpu_unit[l] || !idx->unit_start[l] ||
                    !idx->unit_cpus[l])
                        return cub_err_set(err, ENOMEM, "out of memory");
                memcpy(idx->unit_id[l], ids, nu * sizeof(unsigned));
                for (size_t i = 0; i < n; i++) {
                        unsigned id = cpu_unit_id(&idx->topo.cpus[i], l);
                        const unsigned *hit = bsearch(&id, ids, nu, sizeof(*ids), cmp_unsigned);
                        uint16_t u = (uint16_t) (hit - ids);

                        idx->cpu_unit[l][i] = u;
                        idx->unit_total[l][u]++;
                }
                /* the CPUs of each unit, ascending (CSR layout) */
                for (size_t u = 0; u < nu; u++)
                        idx->unit_start[l][u + 1] = (uint16_t) (idx->unit_start[l][u] + idx->unit_total[l][u]);
                {
                        uint16_t fill[CPUMGR_MAX_CPUS];

                        memcpy(fill, idx->unit_start[l], nu * sizeof(uint16_t));
                        for (size_t i = 0; i < n; i++)
                                idx->unit_cpus[l][fill[idx->cpu_unit[l][i]]++] = (uint16_t) i;
                }
        }
        *ret = TAKE_PTR(idx);
        return 0;
}

/* ---- takeByTopologyNUMAPacked -------------------------------------------- */

typedef struct Acc {
        const CpumgrIndex *idx;
        CpumgrLevel levels[_CPUMGR_LEVEL_MAX]; /* top, middle, core */
        uint16_t avail[_CPUMGR_LEVEL_MAX][CPUMGR_MAX_CPUS];
        bool free_cpu[CPUMGR_MAX_CPUS]; /* by CPU index */
        uint16_t order[_CPUMGR_LEVEL_MAX][CPUMGR_MAX_CPUS];
        size_t n_order[_CPUMGR_LEVEL_MAX];
        bool seen[CPUMGR_MAX_CPUS];
        unsigned need;
        CpumgrSet result;
} Acc;

/* Sorts units by ascending available CPUs, ties by ascending id (the dense
 * index follows the id). Insertion sort: lists are short and mostly sorted. */
static void sort_units(const Acc *a, CpumgrLevel l, uint16_t *v, size_t n) {
        for (size_t i = 1; i < n; i++) {
                uint16_t x = v[i];
                size_t j = i;

                while (j > 0 && (a->avail[l][v[j - 1]] > a->avail[l][x] ||
                                 (a->avail[l][v[j - 1]] == a->avail[l][x] && v[j - 1] > x))) {
                        v[j] = v[j - 1];
                        j--;
                }
                v[j] = x;
        }
}

/*
 * Fills a->order[0..depth]: the units with a free CPU at each level of the
 * hierarchy, each level enumerated inside the sorted units of the level
 * above (sortAvailableNUMANodes/Sockets/Cores of numaFirst/socketsFirst).
 */
static void compute_order(Acc *a, size_t depth) {
        const CpumgrIndex *idx = a->idx;
        CpumgrLevel top = a->levels[0];
        size_t n = 0;

        for (size_t u = 0; u < idx->n_units[top]; u++)
                if (a->avail[top][u] > 0)
                        a->order[0][n++] = (uint16_t) u;
        sort_units(a, top, a->order[0], n);
        a->n_order[0] = n;

        for (size_t d = 1; d <= depth; d++) {
                CpumgrLevel pl = a->levels[d - 1], cl = a->levels[d];

                n = 0;
                memset(a->seen, 0, idx->n_units[cl] * sizeof(bool));
                for (size_t k = 0; k < a->n_order[d - 1]; k++) {
                        uint16_t p = a->order[d - 1][k];
                        size_t first = n;

                        for (size_t j = idx->unit_start[pl][p]; j < idx->unit_start[pl][p + 1]; j++) {
                                uint16_t i = idx->unit_cpus[pl][j], c = idx->cpu_unit[cl][i];

                                if (!a->free_cpu[i] || a->seen[c])
                                        continue;
                                a->seen[c] = true;
                                a->order[d][n++] = c;
                        }
                        sort_units(a, cl, a->order[d] + first, n - first);
                }
                a->n_order[d] = n;
        }
}

static void take_cpu(Acc *a, uint16_t i) {
        const CpumgrIndex *idx = a->idx;

        a->free_cpu[i] = false;
        for (CpumgrLevel l = 0; l < _CPUMGR_LEVEL_MAX; l++)
                a->avail[l][idx->cpu_unit[l][i]]--;
        cpumgr_set_add(&a->result, idx->topo.cpus[i].cpu);
        a->need--;
}

/* takeFullNUMANodes / takeFullSockets / takeFullCores. */
static void take_full(Acc *a, size_t depth) {
        const CpumgrIndex *idx = a->idx;
        CpumgrLevel l = a->levels[depth];

        compute_order(a, depth);
        for (size_t k = 0; k < a->n_order[depth] && a->need > 0; k++) {
                uint16_t u = a->order[depth][k];

                if (a->avail[l][u] != idx->unit_total[l][u] || a->need < idx->unit_total[l][u])
                        continue;
                for (size_t j = idx->unit_start[l][u]; j < idx->unit_start[l][u + 1]; j++)
                        take_cpu(a, idx->unit_cpus[l][j]);
        }
}

/* takeRemainingCPUs: core by core in sorted order, CPU ids ascending. */
static void take_remaining(Acc *a) {
        const CpumgrIndex *idx = a->idx;
        size_t depth = _CPUMGR_LEVEL_MAX - 1;

        compute_order(a, depth);
        for (size_t k = 0; k < a->n_order[depth]; k++) {
                uint16_t u = a->order[depth][k];

                for (size_t j = idx->unit_start[CPUMGR_LEVEL_CORE][u]; j < idx->unit_start[CPUMGR_LEVEL_CORE][u + 1];
                     j++) {
                        uint16_t i = idx->unit_cpus[CPUMGR_LEVEL_CORE][j];

                        if (!a->free_cpu[i])
                                continue;
                        take_cpu(a, i);
                        if (a->need == 0)
                                return;
                }
        }
}

int cpumgr_index_take(const CpumgrIndex *idx, const CpumgrSet *available, unsigned n, CpumgrSet *ret, CubError *err) {
        Acc a;
        CpumgrSet usable = *available;
        unsigned n_usable;

        cpumgr_set_intersect(&usable, &idx->all);
        n_usable = cpumgr_set_count(&usable);
        if (n == 0) {
                *ret = (CpumgrSet){};
                return 0;
        }
        if (n > n_usable)
                return cub_err_set(err, ENOSPC,
                                   "not enough cpus available to satisfy request: requested=%u, available=%u", n,
                                   cpumgr_set_count(available));

        a.idx = idx;
        a.need = n;
        a.result = (CpumgrSet){};
        /* NUMA-first when NUMA nodes hold one or more sockets */
        if (idx->n_units[CPUMGR_LEVEL_SOCKET] >= idx->n_units[CPUMGR_LEVEL_NUMA]) {
                a.levels[0] = CPUMGR_LEVEL_NUMA;
                a.levels[1] = CPUMGR_LEVEL_SOCKET;
        } else {
                a.levels[0] = CPUMGR_LEVEL_SOCKET;
                a.levels[1] = CPUMGR_LEVEL_NUMA;
        }
        a.levels[2] = CPUMGR_LEVEL_CORE;
        for (CpumgrLevel l = 0; l < _CPUMGR_LEVEL_MAX; l++)
                memset(a.avail[l], 0, idx->n_units[l] * sizeof(uint16_t));
        for (size_t i = 0; i < idx->topo.n; i++) {
                a.free_cpu[i] = cpumgr_set_has(&usable, idx->topo.cpus[i].cpu);
                if (a.free_cpu[i])
                        for (CpumgrLevel l = 0; l < _CPUMGR_LEVEL_MAX; l++)
                                a.avail[l][idx->cpu_unit[l][i]]++;
        }

        for (size_t depth = 0; depth < _CPUMGR_LEVEL_MAX && a.need > 0; depth++)
                take_full(&a, depth);
        if (a.need > 0)
                take_remaining(&a);
        if (a.need > 0) /* cannot happen: n <= usable */
                return cub_err_set(err, ENOSPC, "failed to allocate cpus");
        *ret = a.result;
        return 0;
}

int cpumgr_take_by_topology(const CpumgrTopology *t, const CpumgrSet *available, unsigned n, CpumgrSet *ret,
                            CubError *err) {
        _cleanup_(cpumgr_index_unrefp) CpumgrIndex *idx = NULL;
        int r;

        r = cpumgr_index_new(t, &idx, err);
        if (r < 0)
                return r;
        return cpumgr_index_take(idx, available, n, ret, err);
}

/* ---- reserved CPUs ------------------------------------------------------- */

int cpumgr_reserved(const CpumgrTopology *t, const char *reserved_cpus_list, int64_t reserved_milli, CpumgrSet *ret,
                    CubError *err) {
        CpumgrSet all, set;
        int r;

        cpumgr_topology_all(t, &all);
        if (reserved_cpus_list && reserved_cpus_list[strspn(reserved_cpus_list, " \t\n")] != '\0') {
                CpumgrSet extra;
                char buf[CPUMGR_SET_STR_MAX];

                r = cpumgr_set_parse(reserved_cpus_list, &set, err);
                if (r < 0)
                        return cub_err_wrap_errno(err, r, "reservedSystemCPUs");
                extra = set;
                cpumgr_set_subtract(&extra, &all);
                if (!cpumgr_set_is_empty(&extra))
                        return cub_err_set(err, EINVAL, "reservedSystemCPUs '%.64s': cpus '%s' not on this node",
                                           reserved_cpus_list, cpumgr_set_format(&extra, buf, sizeof(buf)));
                *ret = set;
                return 0;
        }
        if (reserved_milli <= 0) {
                *ret = (CpumgrSet){};
                return 0;
        }
        if (reserved_milli > (int64_t) CPUMGR_MAX_CPUS * 1000)
                return cub_err_set(err, ERANGE, "reserved cpu %" PRId64 "m: more than %d cpus", reserved_milli,
                                   CPUMGR_MAX_CPUS);
        r = cpumgr_take_by_topology(t, &all, (unsigned) ((reserved_milli + 999) / 1000), &set, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "reserving %" PRId64 "m cpu", reserved_milli);
        *ret = set;
        return 0;
}
