/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/cgroup: the cgroup v2 values kubelet would write (pure), for the
 * kubepods hierarchy, each pod, and per container the CRI
 * LinuxContainerResources. Formulas: pkg/kubelet/cm/helpers_linux.go,
 * cgroup_manager_linux.go, qos_container_manager_linux.go,
 * kuberuntime_container_linux.go and pkg/kubelet/qos/policy.go.
 */

#include <stdbool.h>
#include <stdint.h>

#include "../pod/pod.h"
#include "../util/err.h"

#define CG_QUOTA_PERIOD 100000
#define CG_MIN_SHARES 2
#define CG_MAX_SHARES 262144
#define CG_MIN_QUOTA 1000

typedef enum CgDriverKind {
        CG_DRIVER_CGROUPFS,
        CG_DRIVER_SYSTEMD,
        _CG_DRIVER_MAX,
        _CG_DRIVER_INVALID = -22,
} CgDriverKind;

typedef struct CgOptions {
        CgDriverKind driver;
        bool enforce_cpu_limits;    /* cpuCFSQuota */
        int64_t pod_pids_limit;     /* podPidsLimit; <= 0 = not written */
        uint64_t memory_capacity;   /* node memory capacity in bytes (oom_score_adj) */
        int64_t cpu_capacity_milli; /* node cpu capacity (kubepods); 0 = unknown */
        int64_t kubepods_cpu_milli; /* capacity - kube/system reserved */
        int64_t kubepods_memory;    /* capacity - kube/system reserved; 0 = unknown */
        int64_t kubepods_pids;      /* max pids - kube/system reserved "pid"; 0 = not written */
        bool cpu_static;            /* cpuManagerPolicy static: exclusive CPUs run without a CFS quota */
        bool swap_limited;          /* memorySwap.swapBehavior LimitedSwap (else NoSwap) */
        bool swap_controller;       /* memory.swap.max exists in the agent's own cgroup (cgroup v2) */
        uint64_t swap_capacity;     /* SwapTotal, bytes */
        /* featureGates.MemoryQoS (off by default, as kubelet's): memory.min of
         * the pod and QoS groups and of each container, memory.high of each
         * container (KEP-2570) */
        bool memory_qos;
        double memory_throttling_factor; /* memoryThrottlingFactor, in (0, 1]; default 0.9 */
        int64_t page_size;               /* memory.high is a multiple of it (Go's os.Getpagesize()) */
        /* cgroupsPerQOS (default true); false: no kubepods, QoS or pod
         * cgroup of cubelet's, each pod's group is pods_parent (cgroupRoot,
         * NULL or "" = none: the runtime's default) with no file written */
        bool per_qos;
        const char *pods_parent;
        /* /sys/fs/cgroup is no cgroup2 mount (a v1 or hybrid host, possible
         * with cgroupsPerQOS: false alone): kubelet sends no unified keys
         * there (memory.oom.group, swap, MemoryQoS are cgroup v2's) */
        bool cgroup_v1;
} CgOptions;

void cg_options_init(CgOptions *o);

/* The one place that maps cgroup v1 cpu.shares to cgroup v2 cpu.weight
 * (the linear map kubelet and runc 1.1 use): 1 + (shares - 2) * 9999 / 262142. */
uint64_t cg_shares_to_weight(uint64_t shares);
uint64_t cg_milli_cpu_to_shares(int64_t milli);
/* 0 = no quota. */
int64_t cg_milli_cpu_to_quota(int64_t milli, int64_t period);

#define CG_FILE_VALUE_MAX 48
#define CG_FILES_MAX 6

typedef struct CgFile {
        const char *name;
        char value[CG_FILE_VALUE_MAX];
} CgFile;

/* One cgroup: its path relative to the cgroup root, and the files in the
 * documented write order. Files kubelet leaves alone carry the value the
 * kernel shows for them ("max"). */
typedef struct CgGroupValues {
        char path[512];
        CgFile files[CG_FILES_MAX];
        size_t n_files;
} CgGroupValues;

const char *cg_group_get(const CgGroupValues *g, const char *file);

/* "kubepods/burstable/pod<uid>" (cgroupfs) or the systemd slice path. */
int cg_pod_path(const char *uid, PodQOSClass qos, CgDriverKind driver, char *buf, size_t size, CubError *err);

/* pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod (1.34) over eff,
 * pod_effective()'s result: pod-level resources are already in it. With
 * o->memory_qos, memory.min (the pod's memory request, when not 0) comes
 * last, as libcontainer writes the unified map after the other files. */
int cg_pod_values(const Pod *pod, const PodEffective *eff, PodQOSClass qos, const CgOptions *o, CgGroupValues *ret,
                  CubError *err);
/* The pod cgroup's cpu.max set to "max <period>" (a pod with exclusive CPUs
 * under DisableCPUQuotaWithExclusiveCPUs: cpumgr_unquota_pod). */
void cg_pod_cpu_unlimited(CgGroupValues *g);

typedef struct CgContainerResources {
        int64_t cpu_shares;
        int64_t cpu_quota;
        int64_t cpu_period;
        int64_t memory_limit_in_bytes;
        int64_t oom_score_adj;
        char cpuset_cpus[128];
        int64_t memory_swap_limit_in_bytes; /* cgroup v1 with memsw: = the memory limit (kubelet's NoSwap) */
        char memory_swap_max[24];           /* unified "memory.swap.max"; "" = not sent (no swap controller) */
        char memory_min[24];                /* unified "memory.min" (MemoryQoS); "" = not sent */
        char memory_high[24];               /* unified "memory.high" (MemoryQoS); "" = not sent */
        bool cgroup_v1; /* the runtime's cgroups are v1 (CgOptions.cgroup_v1): no unified map at all */
} CgContainerResources;

/* ---- memory QoS (KEP-2570; memory-qos.c) ----------------------------------
 * kuberuntime_container_linux.go generateLinuxContainerResources, its
 * enforceMemoryQoS block (1.34): memory.high for a request and a limit
 * (0 = none) and the node's allocatable memory (capacity - kube/system
 * reserved, GetNodeAllocatableAbsolute; 0 = unknown):
 *   int64(math.Floor(req + (above - req) * factor) / pageSize) * pageSize
 * in float64, where above is the limit, else the allocatable memory; 0 when
 * there is neither (kubelet then writes no memory.high). */
int64_t cg_memory_high(int64_t request, int64_t limit, int64_t allocatable, double factor, int64_t page_size);
/* res->memory_min and res->memory_high of container c as that block sets
 * them: nothing unless o->memory_qos; memory.min = the container's own
 * memory request when not 0; memory.high = cg_memory_high() of its own
 * request and limit (a pod-level limit does not count) when they differ and
 * the result is above the request. */
void cg_container_memory_qos(const PodContainer *c, const CgOptions *o, CgContainerResources *res);
/* The pod group's memory.min (helpers_linux.go ResourceConfigForPod with
 * enforceMemoryQoS): appended to g when o->memory_qos and the request > 0. */
void cg_pod_memory_min(int64_t pod_memory_request, const CgOptions *o, CgGroupValues *g);
/* qos_container_manager_linux.go setMemoryQoS (1.34), after cg_qos_values():
 * with o->memory_qos, memory.min of [1] burstable = the sum of the
 * Burstable pods' memory requests, of [0] kubepods (the Guaranteed group)
 * = that plus the Guaranteed pods' sum; a sum of 0 writes nothing (kubelet
 * leaves the file as it was). */
void cg_qos_memory_min(int64_t guaranteed_memory, int64_t burstable_memory, const CgOptions *o, CgGroupValues ret[3]);

/* The CRI unified map of a container, a flat NULL-terminated key/value
 * list pointing into res: memory.oom.group "1" (kubelet on cgroup v2 since
 * 1.28), then those of memory.swap.max, memory.min and memory.high that are
 * set. Returns the number of pairs. */
#define CG_UNIFIED_KV_MAX 9
size_t cg_container_unified(const CgContainerResources *res, const char *kv[static CG_UNIFIED_KV_MAX]);

/* kuberuntime_container_linux.go calcSwapForBurstablePods (1.34):
 * int64(float64(request) / float64(capacity) * float64(swap)); -EINVAL when
 * capacity <= 0 or request > capacity (kubelet then sends no swap, "0"). */
int cg_swap_for_burstable(int64_t request, int64_t capacity, int64_t swap, int64_t *ret);
/* The container's memory.swap.max as kubelet 1.34 configureContainerSwapResources
 * decides it: nothing without the swap controller; LimitedSwap gives the
 * formula above to a container of a Burstable, non-critical pod with a
 * memory request or limit of its own and request != limit; "0" otherwise. */
void cg_container_swap(const Pod *pod, PodQOSClass qos, const PodContainer *c, const CgOptions *o, char *buf,
                       size_t size);

/* kuberuntime_container_linux.go generateLinuxContainerResources (1.34):
 * a container without a cpu or memory limit of its own in a pod with
 * pod-level resources gets the pod-level limit (quota, memory limit, and
 * the shares when it has no cpu request); oom_score_adj from qos/policy.go.
 * c must be one of pod's containers or init containers. */
void cg_container_resources(const Pod *pod, PodQOSClass qos, const PodContainer *c, const CgOptions *o,
                            CgContainerResources *ret);

/* The QoS-level groups: [0] kubepods, [1] burstable, [2] besteffort.
 * burstable_cpu_milli is the sum of the Burstable pods' cpu requests. */
void cg_qos_values(int64_t burstable_cpu_milli, const CgOptions *o, CgGroupValues ret[3]);

/* ---- driver-specific names (pure) ------------------------------------------
 * cgroupfs: kubepods/burstable/pod<uid>, containers <pod>/<container id>.
 * systemd (kubelet's): kubepods.slice/kubepods-burstable.slice/
 * kubepods-burstable-pod<uid with '_' for '-'>.slice, containers
 * <pod>/cri-containerd-<id>.scope (containerd's runc with SystemdCgroup). */

/* "kubepods" or "kubepods.slice". */
const char *cg_kubepods_path(CgDriverKind driver);
/* The cgroup of a container below its pod's group. */
int cg_container_path(CgDriverKind driver, const char *pod_path, const char *container_id, char *buf, size_t size,
                      CubError *err);
/* What the CRI's cgroup_parent says for a pod group: "/kubepods/burstable/podX"
 * (cgroupfs) or the slice name "kubepods-burstable-podX.slice" (systemd), as
 * kubelet sends it. */
int cg_cgroup_parent(CgDriverKind driver, const char *pod_path, char *buf, size_t size, CubError *err);

/* The unit of a systemd group path: its last component, which must be a
 * slice name systemd accepts ("kubepods-burstable-podX.slice"). */
int cg_systemd_unit_of(const char *path, char *buf, size_t size, CubError *err);
/* The parent slice systemd derives from a slice name: "kubepods-burstable.slice"
 * for "kubepods-burstable-podX.slice", "-.slice" for "kubepods.slice". */
int cg_systemd_parent_slice(const char *unit, char *buf, size_t size, CubError *err);

#define CG_USEC_INFINITY UINT64_MAX

/* The unit properties that carry a group's file values (systemd's names);
 * a has_* false leaves the property out. "max" is CG_USEC_INFINITY /
 * UINT64_MAX, as systemd says infinity on the bus. */
typedef struct CgUnitProps {
        bool has_cpu_weight, has_cpu_quota, has_memory_max, has_memory_min, has_tasks_max, has_allowed_cpus;
        uint64_t cpu_weight;             /* CPUWeight: cpu.weight */
        uint64_t cpu_quota_per_sec_usec; /* CPUQuotaPerSecUSec: quota * 1e6 / period */
        uint64_t cpu_quota_period_usec;  /* CPUQuotaPeriodUSec: the period of cpu.max */
        uint64_t memory_max;             /* MemoryMax: memory.max */
        uint64_t memory_min;             /* MemoryMin: memory.min */
        uint64_t tasks_max;              /* TasksMax: pids.max */
        uint8_t allowed_cpus[128];       /* AllowedCPUs: cpuset.cpus as systemd's CPU bitmask */
        size_t n_allowed_cpus;           /* bytes of allowed_cpus used */
} CgUnitProps;

/* The properties of g's files; a file no property carries, or a value that
 * does not parse, is an error naming the group, the file and the value. */
int cg_unit_props(const CgGroupValues *g, CgUnitProps *ret, CubError *err);

/* The runtime's side of the driver choice: the CRI Status "config" info of
 * containerd 1.6 (JSON). Sets *ret_systemd from the default runtime's
 * options.SystemdCgroup (absent = false) and ret_runtime to its name; -ENOENT
 * when the JSON does not say (another runtime). */
int cg_runtime_systemd_cgroup(const char *config_json, bool *ret_systemd, char *ret_runtime, size_t size,
                              CubError *err);
/* cg_runtime_systemd_cgroup() compared with driver: -EINVAL with one message
 * naming both settings on a mismatch. */
int cg_check_runtime(CgDriverKind driver, const char *config_json, CubError *err);

/* "cgroupfs", "systemd"; NULL for an invalid kind. */
const char *cg_driver_to_string(CgDriverKind d);
/* _CG_DRIVER_INVALID for an unknown name. */
CgDriverKind cg_driver_from_string(const char *s);

/* ---- the writer (impure): a driver table, cgroupfs and systemd ---------- */

/* The default when cgroupDriver is not set: systemd when PID 1 is systemd
 * (sd_booted()), cgroupfs otherwise. */
CgDriverKind cg_driver_default(void);

/*
 * Every operation works below the root given to cg_writer_new*() and only
 * there: the root is opened once (O_PATH|O_DIRECTORY) and each group and
 * file is reached relative to it, so --cgroup-root is honoured for writes,
 * reads, waits and removal alike. Group paths are relative to the root
 * ("kubepods/burstable/pod<uid>").
 *
 * Write order: a group's files are written in the order of
 * CgGroupValues.files, which values.c keeps fixed: cpu.weight, cpu.max,
 * memory.max, pids.max, memory.min (the QoS groups: cpu.weight, memory.max,
 * pids.max, memory.min; memory.min only with MemoryQoS). Each file
 * is opened O_WRONLY (never created) and written once; the first failure
 * stops the group and names the group, the file and the value:
 *   cgroup 'kubepods/burstable/podX': write 'memory.max' = '1048576': Device or resource busy
 * A controller file that does not exist reads
 *   ... controller 'cpuset' not enabled in 'kubepods/burstable/cgroup.subtree_control'
 */

typedef struct CgWriter CgWriter;

/* The cgroupfs driver on cgroup_root, which must be a cgroup v2 mount
 * (statfs CGROUP2_SUPER_MAGIC), normally /sys/fs/cgroup. */
int cg_writer_new(const char *cgroup_root, CgWriter **ret, CubError *err);
/* Same with a driver of the table. CG_DRIVER_SYSTEMD connects to the system
 * bus (sd-bus) and needs cgroup_root to be systemd's own mount (its group
 * paths are the slices' cgroups below it). */
int cg_writer_new_driver(const char *cgroup_root, CgDriverKind driver, CgWriter **ret, CubError *err);
CgWriter *cg_writer_free(CgWriter *w);
static inline void cg_writer_freep(CgWriter **w) {
        if (*w)
                cg_writer_free(*w);
}
CgDriverKind cg_writer_driver(const CgWriter *w);
/* Creates the group (enabling its controllers in the parents'
 * cgroup.subtree_control) or updates it, writing the files in their order,
 * then reads every file back (memory.* may read back rounded down to a page). */
int cg_writer_apply(CgWriter *w, const CgGroupValues *g, CubError *err);
/* Removes an empty group (and empty child groups left in it); a missing one
 * is fine. */
int cg_writer_remove(CgWriter *w, const char *path, CubError *err);
/* Waits until the group's cgroup.events says 'populated 0' (inotify, no
 * polling), at most timeout_usec: -ETIMEDOUT then. A missing group is empty. */
int cg_writer_wait_unpopulated(CgWriter *w, const char *path, uint64_t timeout_usec, CubError *err);
/* cg_writer_wait_unpopulated() then cg_writer_remove(). After a timeout the
 * removal is still tried once; it fails with the timeout's message. */
int cg_writer_remove_wait(CgWriter *w, const char *path, uint64_t timeout_usec, CubError *err);
/* Reads one file of a group back (trailing newline stripped); -ERANGE when
 * it does not fit in buf. */
int cg_writer_read(CgWriter *w, const char *path, const char *file, char *buf, size_t size, CubError *err);
