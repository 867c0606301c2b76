/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"

void cg_options_init(CgOptions *o) {
        long page = sysconf(_SC_PAGESIZE);

        *o = (CgOptions){ .driver = CG_DRIVER_CGROUPFS,
                          .enforce_cpu_limits = true,
                          .pod_pids_limit = -1,
                          .memory_throttling_factor = 0.9,
                          .page_size = page > 0 ? page : 4096,
                          .per_qos = true };
}

static const char *const driver_names[_CG_DRIVER_MAX] = {
        [CG_DRIVER_CGROUPFS] = "cgroupfs",
        [CG_DRIVER_SYSTEMD] = "systemd",
};

const char *cg_driver_to_string(CgDriverKind d) {
        return d >= 0 && d < _CG_DRIVER_MAX ? driver_names[d] : NULL;
}

CgDriverKind cg_driver_from_string(const char *s) {
        for (int i = 0; s && i < _CG_DRIVER_MAX; i++)
                if (strcmp(driver_names[i], s) == 0)
                        return (CgDriverKind) i;
        return _CG_DRIVER_INVALID;
}

uint64_t cg_shares_to_weight(uint64_t shares) {
        if (shares < CG_MIN_SHARES)
                shares = CG_MIN_SHARES;
        if (shares >= CG_MAX_SHARES)
                return 10000;
        return 1 + ((shares - 2) * 9999) / 262142;
}

uint64_t cg_milli_cpu_to_shares(int64_t milli) {
        int64_t s;

        if (milli <= 0)
                return CG_MIN_SHARES;
        if (milli > INT64_MAX / 1024)
                return CG_MAX_SHARES;
        s = milli * 1024 / 1000;
        if (s < CG_MIN_SHARES)
                return CG_MIN_SHARES;
        if (s > CG_MAX_SHARES)
                return CG_MAX_SHARES;
        return (uint64_t) s;
}

int64_t cg_milli_cpu_to_quota(int64_t milli, int64_t period) {
        int64_t q;

        if (milli <= 0)
                return 0;
        if (milli > INT64_MAX / period)
                return INT64_MAX / 1000;
        q = milli * period / 1000;
        return q < CG_MIN_QUOTA ? CG_MIN_QUOTA : q;
}

const char *cg_group_get(const CgGroupValues *g, const char *file) {
        for (size_t i = 0; i < g->n_files; i++)
                if (strcmp(g->files[i].name, file) == 0)
                        return g->files[i].value;
        return NULL;
}

/* v < 0 writes "max" */
static void put(CgGroupValues *g, const char *name, int64_t v) {
        CgFile *f = &g->files[g->n_files++];

        f->name = name;
        if (v >= 0)
                (void) snprintf(f->value, sizeof(f->value), "%" PRId64, v);
        else
                (void) snprintf(f->value, sizeof(f->value), "max");
}

static void put_cpu_max(CgGroupValues *g, int64_t quota) {
        CgFile *f = &g->files[g->n_files++];

        f->name = "cpu.max";
        if (quota > 0)
                (void) snprintf(f->value, sizeof(f->value), "%" PRId64 " %d", quota, CG_QUOTA_PERIOD);
        else
                (void) snprintf(f->value, sizeof(f->value), "max %d", CG_QUOTA_PERIOD);
}

void cg_pod_cpu_unlimited(CgGroupValues *g) {
        for (size_t i = 0; i < g->n_files; i++)
                if (strcmp(g->files[i].name, "cpu.max") == 0)
                        (void) snprintf(g->files[i].value, sizeof(g->files[i].value), "max %d", CG_QUOTA_PERIOD);
}

static const char *qos_leaf(PodQOSClass qos) {
        return qos == POD_QOS_BURSTABLE ? "burstable" : qos == POD_QOS_BESTEFFORT ? "besteffort" : NULL;
}

int cg_pod_path(const char *uid, PodQOSClass qos, CgDriverKind driver, char *buf, size_t size, CubError *err) {
        const char *leaf = qos_leaf(qos);
        int n;

        if (!uid || !*uid || strchr(uid, '/'))
                return cub_err_set(err, EINVAL, "pod UID '%s' cannot name a cgroup", uid ? uid : "");
        if (driver == CG_DRIVER_SYSTEMD) {
                char u[256];
                size_t i;

                if (strlen(uid) >= sizeof(u))
                        return cub_err_set(err, ENAMETOOLONG, "cgroup path for pod UID '%s' is too long", uid);
                for (i = 0; uid[i]; i++) {
                        /* systemd's unit name characters; '-' separates slices */
                        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:", uid[i]))
                                return cub_err_set(err, EINVAL, "pod UID '%s' cannot name a systemd slice", uid);
                        u[i] = uid[i] == '-' ? '_' : uid[i];
                }
                u[i] = '\0';
                if (leaf)
                        n = snprintf(buf, size, "kubepods.slice/kubepods-%s.slice/kubepods-%s-pod%s.slice", leaf, leaf,
                                     u);
                else
                        n = snprintf(buf, size, "kubepods.slice/kubepods-pod%s.slice", u);
        } else if (leaf)
                n = snprintf(buf, size, "kubepods/%s/pod%s", leaf, uid);
        else
                n = snprintf(buf, size, "kubepods/pod%s", uid);
        if (n < 0 || (size_t) n >= size)
                return cub_err_set(err, ENAMETOOLONG, "cgroup path for pod UID '%s' is too long", uid);
        return 0;
}

int cg_pod_values(const Pod *pod, const PodEffective *eff, PodQOSClass qos, const CgOptions *o, CgGroupValues *ret,
                  CubError *err) {
        CgGroupValues g = {};
        CubQuantity req_cpu, lim_cpu, lim_mem, req_mem = {};
        int64_t quota;
        int r;

        if (!o->per_qos) { /* cgroupsPerQOS: false: the runtime's group below cgroupRoot, nothing written */
                const char *parent = o->pods_parent ? o->pods_parent : "";

                while (*parent == '/')
                        parent++;
                if (snprintf(ret->path, sizeof(ret->path), "%s", parent) >= (int) sizeof(ret->path))
                        return cub_err_set(err, ENAMETOOLONG, "cgroupRoot '%s': too long", parent);
                ret->n_files = 0;
                return 0;
        }
        r = cg_pod_path(pod->uid, qos, o->driver, g.path, sizeof(g.path), err);
        if (r < 0)
                return r;
        (void) pod_resource_get(&eff->requests, "cpu", &req_cpu);
        (void) pod_resource_get(&eff->limits, "cpu", &lim_cpu);
        (void) pod_resource_get(&eff->limits, "memory", &lim_mem);

        quota = cg_milli_cpu_to_quota(cub_quantity_milli(lim_cpu), CG_QUOTA_PERIOD);
        if (!o->enforce_cpu_limits)
                quota = 0;

        switch (qos) {
        case POD_QOS_GUARANTEED:
                put(&g, "cpu.weight",
                    (int64_t) cg_shares_to_weight(cg_milli_cpu_to_shares(cub_quantity_milli(req_cpu))));
                put_cpu_max(&g, quota);
                put(&g, "memory.max", cub_quantity_value(lim_mem));
                break;
        case POD_QOS_BURSTABLE:
                put(&g, "cpu.weight",
                    (int64_t) cg_shares_to_weight(cg_milli_cpu_to_shares(cub_quantity_milli(req_cpu))));
                put_cpu_max(&g, eff->cpu_limits_declared ? quota : 0);
                if (eff->memory_limits_declared && !cub_quantity_is_zero(lim_mem))
                        put(&g, "memory.max", cub_quantity_value(lim_mem));
                else
                        put(&g, "memory.max", -1);
                break;
        default:
                put(&g, "cpu.weight", (int64_t) cg_shares_to_weight(CG_MIN_SHARES));
                put_cpu_max(&g, 0);
                put(&g, "memory.max", -1);
                break;
        }
        if (o->pod_pids_limit > 0)
                put(&g, "pids.max", o->pod_pids_limit);
        else
                put(&g, "pids.max", -1);
        (void) pod_resource_get(&eff->requests, "memory", &req_mem);
        cg_pod_memory_min(cub_quantity_value(req_mem), o, &g);
        *ret = g;
        return 0;
}

static int64_t memory_request(const PodContainer *c) {
        CubQuantity q;

        (void) pod_resource_get(&c->requests, "memory", &q);
        return cub_quantity_value(q);
}

static int64_t burstable_adj(int64_t mem_request, uint64_t capacity) {
        __int128 x;

        if (capacity == 0)
                return 1000;
        x = (__int128) 1000 * mem_request / (__int128) capacity;
        return 1000 - (int64_t) (x > 2000 ? 2000 : x);
}

/* a + b, saturating */
static int64_t add_sat(int64_t a, int64_t b) {
        int64_t r;

        return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

/* pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust (1.34): with a
 * pod-level memory request, each container's request counts with an equal
 * share of what the pod requests beyond its containers */
static int64_t oom_score_adj(const Pod *pod, PodQOSClass qos, const PodContainer *c, uint64_t capacity) {
        int64_t adj, extra;

        if (pod_is_node_critical(pod))
                return -997;
        if (qos == POD_QOS_GUARANTEED)
                return -997;
        if (qos == POD_QOS_BESTEFFORT)
                return 1000;
        extra = pod_remaining_memory_request_per_container(pod);
        adj = burstable_adj(add_sat(memory_request(c), extra), capacity);
        if (pod_container_is_sidecar(c) && pod->n_containers > 0) {
                /* sidecars are not killed before the containers they serve (1.31) */
                int64_t min_req = memory_request(&pod->containers[0]);

                for (size_t i = 1; i < pod->n_containers; i++)
                        if (memory_request(&pod->containers[i]) < min_req)
                                min_req = memory_request(&pod->containers[i]);
                min_req = add_sat(min_req, extra);
                if (burstable_adj(min_req, capacity) < adj)
                        adj = burstable_adj(min_req, capacity);
        }
        if (adj < 3)
                return 3;
        if (adj == 1000)
                return 999;
        return adj;
}

void cg_container_resources(const Pod *pod, PodQOSClass qos, const PodContainer *c, const CgOptions *o,
                            CgContainerResources *ret) {
        CubQuantity req_cpu;
        /* kuberuntime_container_linux.go getCPULimit/getMemoryLimit: a
         * container without a limit of its own gets the pod-level one */
        CubQuantity lim_cpu = pod_container_limit(pod, c, "cpu"), lim_mem = pod_container_limit(pod, c, "memory");
        /* since 1.27 the limit gives the shares only when no request is given at all: an explicit 0 gives 2 */
        bool has_req = pod_resource_get(&c->requests, "cpu", &req_cpu);

        *ret = (CgContainerResources){
                .cpu_shares = (int64_t) cg_milli_cpu_to_shares(cub_quantity_milli(has_req ? req_cpu : lim_cpu)),
                .cpu_quota =
                        o->enforce_cpu_limits ? cg_milli_cpu_to_quota(cub_quantity_milli(lim_cpu), CG_QUOTA_PERIOD) : 0,
                .cpu_period = o->enforce_cpu_limits ? CG_QUOTA_PERIOD : 0,
                .memory_limit_in_bytes = cub_quantity_value(lim_mem),
                .oom_score_adj = oom_score_adj(pod, qos, c, o->memory_capacity),
                .cgroup_v1 = o->cgroup_v1,
        };
        cg_container_swap(pod, qos, c, o, ret->memory_swap_max, sizeof(ret->memory_swap_max));
        /* swapConfigurationHelper.ConfigureNoSwap on cgroup v1 (every container there: swap is
         * configured only on v2): memory+swap = memory, no swap above the limit */
        if (o->cgroup_v1 && o->swap_controller)
                ret->memory_swap_limit_in_bytes = ret->memory_limit_in_bytes;
        cg_container_memory_qos(c, o, ret);
}

int cg_swap_for_burstable(int64_t request, int64_t capacity, int64_t swap, int64_t *ret) {
        double proportion;

        if (capacity <= 0 || request > capacity)
                return -EINVAL;
        /* Go's float64 arithmetic, then int64() truncating toward zero */
        proportion = (double) request / (double) capacity;
        *ret = (int64_t) (proportion * (double) swap);
        return 0;
}

static int64_t clamp_u64(uint64_t v) {
        return v > (uint64_t) INT64_MAX ? INT64_MAX : (int64_t) v;
}

void cg_container_swap(const Pod *pod, PodQOSClass qos, const PodContainer *c, const CgOptions *o, char *buf,
                       size_t size) {
        CubQuantity req = {}, lim = {};
        int64_t swap = 0;
        bool no_memory;

        buf[0] = '\0';
        if (!o->swap_controller)
                return;
        /* GetContainerSwapBehavior: the container's own memory request and
         * limit (absent reads as 0), the pod's QoS class */
        (void) pod_resource_get(&c->requests, "memory", &req);
        (void) pod_resource_get(&c->limits, "memory", &lim);
        no_memory = cub_quantity_is_zero(req) && cub_quantity_is_zero(lim);
        if (o->swap_limited && !pod_is_critical(pod) && qos == POD_QOS_BURSTABLE && !no_memory &&
            cub_quantity_cmp(req, lim) != 0) {
                /* ConfigureLimitedSwap: an error from the formula disallows swap */
                if (cg_swap_for_burstable(cub_quantity_value(req), clamp_u64(o->memory_capacity),
                                          clamp_u64(o->swap_capacity), &swap) < 0)
                        swap = 0;
        }
        (void) snprintf(buf, size, "%" PRId64, swap);
}

void cg_qos_values(int64_t burstable_cpu_milli, const CgOptions *o, CgGroupValues ret[3]) {
        bool sd = o->driver == CG_DRIVER_SYSTEMD;

        for (int i = 0; i < 3; i++)
                ret[i] = (CgGroupValues){};
        (void) snprintf(ret[0].path, sizeof(ret[0].path), "%s", sd ? "kubepods.slice" : "kubepods");
        (void) snprintf(ret[1].path, sizeof(ret[1].path), "%s",
                        sd ? "kubepods.slice/kubepods-burstable.slice" : "kubepods/burstable");
        (void) snprintf(ret[2].path, sizeof(ret[2].path), "%s",
                        sd ? "kubepods.slice/kubepods-besteffort.slice" : "kubepods/besteffort");

        if (o->kubepods_cpu_milli > 0)
                put(&ret[0], "cpu.weight",
                    (int64_t) cg_shares_to_weight(cg_milli_cpu_to_shares(o->kubepods_cpu_milli)));
        if (o->kubepods_memory > 0)
                put(&ret[0], "memory.max", o->kubepods_memory);
        if (o->kubepods_pids > 0)
                put(&ret[0], "pids.max", o->kubepods_pids);
        put(&ret[1], "cpu.weight", (int64_t) cg_shares_to_weight(cg_milli_cpu_to_shares(burstable_cpu_milli)));
        put(&ret[2], "cpu.weight", (int64_t) cg_shares_to_weight(CG_MIN_SHARES));
}
