/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's pure core: replica IDs, what Allocate hands out, which
 * devices GetPreferredAllocation prefers, which XIDs make a GPU unhealthy.
 * No I/O here; deviceplugin/gpu/server.c and the unit tests call it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/cleanup.h"
#include "agent/util/parse.h"
#include "deviceplugin/gpu/gpu-internal.h"

const char *const gpu_control_nodes[3] = { "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools" };

int gpu_id_parse(const char *id, char *ret_uuid, size_t uuid_size, int *ret_replica) {
        const char *sep = strstr(id, GPU_REPLICA_SEP);
        size_t len = sep ? (size_t) (sep - id) : strlen(id);
        int replica = -1;

        if (len == 0 || len >= uuid_size)
                return -EINVAL;
        if (sep) {
                const char *k = sep + strlen(GPU_REPLICA_SEP);
                int32_t v;

                if (k[0] == '\0' || strspn(k, "0123456789") != strlen(k) || (k[0] == '0' && k[1] != '\0'))
                        return -EINVAL;
                if (cub_safe_atoi32(k, &v) < 0 || v >= GPU_REPLICAS_MAX)
                        return -EINVAL;
                replica = (int) v;
        }
        memcpy(ret_uuid, id, len);
        ret_uuid[len] = '\0';
        *ret_replica = replica;
        return 0;
}

int gpu_id_format(const char *uuid, int replica, char *buf, size_t size) {
        int n;

        if (replica < 0)
                n = snprintf(buf, size, "%s", uuid);
        else
                n = snprintf(buf, size, "%s" GPU_REPLICA_SEP "%d", uuid, replica);
        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        return 0;
}

int gpu_id_lookup(const GpuDevice *devs, size_t n_devs, unsigned replicas, const char *id, size_t *ret_index) {
        char uuid[GPU_UUID_MAX];
        int replica;

        if (gpu_id_parse(id, uuid, sizeof(uuid), &replica) < 0)
                return -ENOENT;
        if (replicas >= 2 ? (replica < 0 || (unsigned) replica >= replicas) : replica >= 0)
                return -ENOENT;
        for (size_t i = 0; i < n_devs; i++)
                if (strcmp(devs[i].uuid, uuid) == 0) {
                        *ret_index = i;
                        return 0;
                }
        return -ENOENT;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

int gpu_visible_devices(const GpuDevice *devs, const size_t *idx, size_t n_idx, char **ret) {
        _cleanup_free_ const char **uuids = NULL;
        size_t len = 1, n = 0;
        char *s, *p;

        uuids = calloc(n_idx ? n_idx : 1, sizeof(*uuids));
        if (!uuids)
                return -ENOMEM;
        for (size_t i = 0; i < n_idx; i++)
                uuids[i] = devs[idx[i]].uuid;
        qsort(uuids, n_idx, sizeof(*uuids), cmp_str);
        for (size_t i = 0; i < n_idx; i++)
                if (i == 0 || strcmp(uuids[i], uuids[n - 1]) != 0) {
                        uuids[n++] = uuids[i];
                        len += strlen(uuids[i]) + 1;
                }
        s = p = malloc(len);
        if (!s)
                return -ENOMEM;
        *p = '\0';
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(uuids[i]);

                if (i > 0)
                        *p++ = ',';
                memcpy(p, uuids[i], l + 1);
                p += l;
        }
        *ret = s;
        return 0;
}

void gpu_alloc_done(GpuAlloc *a) {
        free(a->visible);
        for (size_t i = 0; i < a->n_paths; i++)
                free(a->paths[i]);
        free(a->paths);
        *a = (GpuAlloc){ 0 };
}

static int cmp_minor(const void *a, const void *b, void *devs_) {
        const GpuDevice *devs = devs_;
        unsigned x = devs[*(const size_t *) a].minor, y = devs[*(const size_t *) b].minor;

        return x < y ? -1 : x > y;
}

int gpu_alloc_container(const GpuDevice *devs, size_t n_devs, unsigned replicas, const char *const *ids, size_t n_ids,
                        const bool control_present[3], GpuAlloc *ret, CubError *err) {
        _cleanup_free_ size_t *idx = NULL;
        _cleanup_(gpu_alloc_done) GpuAlloc a = { 0 };
        size_t n_distinct = 0;
        int r;

        if (n_ids == 0)
                return cub_err_set(err, EINVAL, "no device IDs requested");
        idx = calloc(n_ids, sizeof(*idx));
        if (!idx)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < n_ids; i++) {
                if (gpu_id_lookup(devs, n_devs, replicas, ids[i], &idx[i]) < 0)
                        return cub_err_set(err, EINVAL, "unknown device ID '%s'", ids[i]);
                if (!devs[idx[i]].healthy)
                        return cub_err_set(err, EINVAL, "device '%s' is unhealthy", ids[i]);
        }
        r = gpu_visible_devices(devs, idx, n_ids, &a.visible);
        if (r < 0)
                return cub_err_set(err, -r, "out of memory");

        /* the distinct GPUs, by minor number */
        qsort_r(idx, n_ids, sizeof(*idx), cmp_minor, (void *) devs);
        for (size_t i = 0; i < n_ids; i++)
                if (i == 0 || idx[i] != idx[n_distinct - 1])
                        idx[n_distinct++] = idx[i];
        a.paths = calloc(n_distinct + ELEMENTSOF(gpu_control_nodes), sizeof(*a.paths));
        if (!a.paths)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < n_distinct; i++) {
                if (asprintf(&a.paths[a.n_paths], "/dev/nvidia%u", devs[idx[i]].minor) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
                a.n_paths++;
        }
        for (size_t i = 0; i < ELEMENTSOF(gpu_control_nodes); i++) {
                if (!control_present[i])
                        continue;
                a.paths[a.n_paths] = strdup(gpu_control_nodes[i]);
                if (!a.paths[a.n_paths])
                        return cub_err_set(err, ENOMEM, "out of memory");
                a.n_paths++;
        }
        *ret = a;
        a = (GpuAlloc){ 0 };
        return 0;
}

/* ---- GetPreferredAllocation ------------------------------------------------- */

typedef struct Cand {
        const char *id;
        size_t dev;
        int replica;
} Cand;

typedef struct Pick {
        size_t *cands; /* indexes into the candidates, in choice order */
        size_t n;
        size_t n_gpus; /* distinct GPUs, the must-include ones counted */
        unsigned *idx; /* the new GPUs' NVML indexes, ascending */
        size_t n_idx;
} Pick;

static void pick_done(Pick *p) {
        free(p->cands);
        free(p->idx);
        *p = (Pick){ 0 };
}

static int cmp_unsigned(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;

        return x < y ? -1 : x > y;
}

/* a better than b: fewer GPUs, then the lower indexes */
static bool pick_better(const Pick *a, const Pick *b) {
        if (a->n_gpus != b->n_gpus)
                return a->n_gpus < b->n_gpus;
        for (size_t i = 0; i < a->n_idx && i < b->n_idx; i++)
                if (a->idx[i] != b->idx[i])
                        return a->idx[i] < b->idx[i];
        return false;
}

/* Takes `want` candidates of GPU d not taken yet, lowest replica first. */
static void take_from(const Cand *c, size_t n_c, bool *taken, size_t d, size_t want, Pick *p) {
        while (want > 0) {
                size_t best = SIZE_MAX;

                for (size_t i = 0; i < n_c; i++)
                        if (!taken[i] && c[i].dev == d && (best == SIZE_MAX || c[i].replica < c[best].replica))
                                best = i;
                if (best == SIZE_MAX)
                        return;
                taken[best] = true;
                p->cands[p->n++] = best;
                want--;
        }
}

/* Chooses `want` of the candidates on `node` (-2: any node). */
static int pick(const GpuDevice *devs, size_t n_devs, const Cand *c, size_t n_c, const bool *must_gpu, int node,
                size_t want, Pick *ret) {
        _cleanup_free_ bool *taken = NULL, *used = NULL;
        _cleanup_free_ size_t *count = NULL;
        _cleanup_(pick_done) Pick p = { 0 };

        taken = calloc(n_c ? n_c : 1, sizeof(*taken));
        used = calloc(n_devs ? n_devs : 1, sizeof(*used));
        count = calloc(n_devs ? n_devs : 1, sizeof(*count));
        p.cands = calloc(n_c ? n_c : 1, sizeof(*p.cands));
        p.idx = calloc(n_devs ? n_devs : 1, sizeof(*p.idx));
        if (!taken || !used || !count || !p.cands || !p.idx)
                return -ENOMEM;
        for (size_t i = 0; i < n_c; i++)
                if (node != -2 && devs[c[i].dev].numa != node)
                        taken[i] = true; /* not in this pool */
        for (size_t d = 0; d < n_devs; d++)
                if (must_gpu[d]) {
                        used[d] = true;
                        p.n_gpus++;
                }
        /* replicas of the GPUs the must-include IDs hold cost no new GPU */
        for (size_t d = 0; d < n_devs && p.n < want; d++)
                if (used[d])
                        take_from(c, n_c, taken, d, want - p.n, &p);
        while (p.n < want) {
                size_t k = want - p.n, fit = SIZE_MAX, most = SIZE_MAX;

                for (size_t d = 0; d < n_devs; d++)
                        count[d] = 0;
                for (size_t i = 0; i < n_c; i++)
                        if (!taken[i])
                                count[c[i].dev]++;
                for (size_t d = 0; d < n_devs; d++) {
                        if (used[d] || count[d] == 0)
                                continue;
                        if (count[d] >= k && (fit == SIZE_MAX || devs[d].index < devs[fit].index))
                                fit = d;
                        if (most == SIZE_MAX || count[d] > count[most] ||
                            (count[d] == count[most] && devs[d].index < devs[most].index))
                                most = d;
                }
                if (most == SIZE_MAX)
                        return -ENOSPC;
                if (fit != SIZE_MAX)
                        most = fit;
                used[most] = true;
                p.n_gpus++;
                p.idx[p.n_idx++] = devs[most].index;
                take_from(c, n_c, taken, most, k, &p);
        }
        qsort(p.idx, p.n_idx, sizeof(*p.idx), cmp_unsigned);
        *ret = p;
        p = (Pick){ 0 };
        return 0;
}

static bool in_list(const char *const *l, size_t n, const char *s) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(l[i], s) == 0)
                        return true;
        return false;
}

int gpu_preferred(const GpuDevice *devs, size_t n_devs, unsigned replicas, const char *const *available,
                  size_t n_available, const char *const *must, size_t n_must, int size, const char ***ret,
                  CubError *err) {
        _cleanup_free_ const char **out = NULL;
        _cleanup_free_ Cand *c = NULL;
        _cleanup_free_ bool *must_gpu = NULL;
        _cleanup_(pick_done) Pick best = { 0 };
        size_t n_c = 0, n_out = 0, want;
        int must_node = -2; /* -2: no must-include yet, -3: not all on one node */
        int r;

        if (size <= 0)
                return cub_err_set(err, EINVAL, "allocation size %d is not positive", size);
        out = calloc((size_t) size, sizeof(*out));
        c = calloc(n_available ? n_available : 1, sizeof(*c));
        must_gpu = calloc(n_devs ? n_devs : 1, sizeof(*must_gpu));
        if (!out || !c || !must_gpu)
                return cub_err_set(err, ENOMEM, "out of memory");

        for (size_t i = 0; i < n_must; i++) {
                size_t d;

                if (in_list(must, i, must[i]))
                        continue;
                if (gpu_id_lookup(devs, n_devs, replicas, must[i], &d) < 0)
                        return cub_err_set(err, EINVAL, "unknown device ID '%s'", must[i]);
                if (n_out == (size_t) size)
                        return cub_err_set(err, EINVAL, "%zu must-include devices exceed the allocation size %d",
                                           n_must, size);
                out[n_out++] = must[i];
                must_gpu[d] = true;
                if (must_node == -2)
                        must_node = devs[d].numa >= 0 ? devs[d].numa : -3;
                else if (must_node != devs[d].numa)
                        must_node = -3;
        }
        for (size_t i = 0; i < n_available; i++) {
                size_t d;
                char uuid[GPU_UUID_MAX];
                int replica;

                if (gpu_id_lookup(devs, n_devs, replicas, available[i], &d) < 0)
                        return cub_err_set(err, EINVAL, "unknown device ID '%s'", available[i]);
                if (in_list(must, n_must, available[i]) || in_list(available, i, available[i]))
                        continue;
                (void) gpu_id_parse(available[i], uuid, sizeof(uuid), &replica);
                c[n_c++] = (Cand){ .id = available[i], .dev = d, .replica = replica };
        }
        want = (size_t) size - n_out;
        if (want > n_c)
                return cub_err_set(err, EINVAL, "cannot choose %d devices: %zu must-include and %zu more available",
                                   size, n_out, n_c);

        if (want > 0) {
                /* the NUMA nodes that can hold the whole allocation, lowest first */
                for (int node = 0; must_node != -3; node++) {
                        _cleanup_(pick_done) Pick p = { 0 };
                        size_t on_node = 0;
                        bool any_higher = false;

                        for (size_t i = 0; i < n_c; i++) {
                                if (devs[c[i].dev].numa == node)
                                        on_node++;
                                if (devs[c[i].dev].numa > node)
                                        any_higher = true;
                        }
                        if ((must_node == -2 || must_node == node) && on_node >= want) {
                                r = pick(devs, n_devs, c, n_c, must_gpu, node, want, &p);
                                if (r == -ENOMEM)
                                        return cub_err_set(err, ENOMEM, "out of memory");
                                if (r >= 0 && (!best.cands || pick_better(&p, &best))) {
                                        pick_done(&best);
                                        best = p;
                                        p = (Pick){ 0 };
                                }
                        }
                        if (!any_higher)
                                break;
                }
                if (!best.cands) {
                        r = pick(devs, n_devs, c, n_c, must_gpu, /* node= */ -2, want, &best);
                        if (r < 0)
                                return cub_err_set(err, -r, "cannot choose %d devices", size);
                }
                for (size_t i = 0; i < best.n; i++)
                        out[n_out++] = c[best.cands[i]].id;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* ---- health ----------------------------------------------------------------- */

/* application-caused XIDs, as NVIDIA's plugin ignores them, and 94 (a
 * contained ECC error: the application is killed, the GPU stays usable) */
const unsigned long long gpu_default_ignored_xids[GPU_DEFAULT_IGNORED_XIDS] = { 13, 31, 43, 45, 68, 94, 109 };

void gpu_xid_policy_default(GpuXidPolicy *p) {
        *p = (GpuXidPolicy){ .n_ignored = GPU_DEFAULT_IGNORED_XIDS };
        memcpy(p->ignored, gpu_default_ignored_xids, sizeof(gpu_default_ignored_xids));
}

static bool ignored(const GpuXidPolicy *p, unsigned long long xid) {
        for (size_t i = 0; i < p->n_ignored; i++)
                if (p->ignored[i] == xid)
                        return true;
        return false;
}

/* 0, or -E2BIG when the list is full */
static int add_ignored(GpuXidPolicy *p, unsigned long long xid) {
        if (ignored(p, xid))
                return 0;
        if (p->n_ignored >= GPU_XIDS_MAX)
                return -E2BIG;
        p->ignored[p->n_ignored++] = xid;
        return 0;
}

static int unignore(GpuXidPolicy *p, unsigned long long xid) {
        for (size_t i = 0; i < p->n_ignored; i++)
                if (p->ignored[i] == xid) {
                        p->ignored[i] = p->ignored[--p->n_ignored];
                        break;
                }
        return 0;
}

/* each number of a comma list to fn; what names the list in errors */
static int each_xid(const char *list, const char *what, GpuXidPolicy *p, int (*fn)(GpuXidPolicy *, unsigned long long),
                    CubError *err) {
        _cleanup_free_ char *copy = strdup(list);
        char *save = NULL;

        if (!copy)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                uint64_t v;

                t += strspn(t, " ");
                t[strcspn(t, " ")] = '\0';
                if (cub_safe_atou64(t, &v) < 0 || v == 0)
                        return cub_err_set(err, EINVAL, "%s '%s': '%s' is not an XID (a number from 1)", what, list, t);
                if (fn(p, v) < 0)
                        return cub_err_set(err, E2BIG, "%s '%s': more than %d XIDs", what, list, GPU_XIDS_MAX);
        }
        return 0;
}

int gpu_xid_policy_parse(GpuXidPolicy *p, const char *list, CubError *err) {
        GpuXidPolicy q = { .off = p->off };
        int r;

        if (strcmp(list, "none") != 0) {
                r = each_xid(list, "--health-ignore-xids", &q, add_ignored, err);
                if (r < 0)
                        return r;
        }
        *p = q;
        return 0;
}

int gpu_xid_policy_env(GpuXidPolicy *p, const char *disable, const char *enable, CubError *err) {
        int r;

        if (disable && disable[0]) {
                if (strcmp(disable, "all") == 0 || strcmp(disable, "xids") == 0)
                        p->off = true;
                else if ((r = each_xid(disable, "DP_DISABLE_HEALTHCHECKS", p, add_ignored, err)) < 0)
                        return r;
        }
        if (enable && enable[0]) {
                if (strcmp(enable, "all") == 0 || strcmp(enable, "xids") == 0)
                        p->n_ignored = 0;
                else if ((r = each_xid(enable, "DP_ENABLE_HEALTHCHECKS", p, unignore, err)) < 0)
                        return r;
        }
        return 0;
}

bool gpu_xid_is_critical(const GpuXidPolicy *p, unsigned long long event_type, unsigned long long xid) {
        if (p->off || !(event_type & GPU_EVENT_XID_CRITICAL))
                return false;
        return !ignored(p, xid);
}
