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

int cg_pod_values(const Pod *pod, const PodEffective *eff, PodQOSClass qos, const CgOptions *o, CgGroupValues *ret,
                  CubError *err);

typedef struct CgContainerResources {
        int64_t cpu_shares;
        int64_t cpu_quota;
        int64_t cpu_period;
        int64_t memory_limit_in_bytes;
        int64_t oom_score_adj;
        char cpuset_cpus[128];
} CgContainerResources;

/* c must be one of pod's containers or init containers. */
void cg_container_resources(const Pod *pod, PodQOSClass qos, const PodContainer *c, const CgOptions *o,
                            CgContainerResources *ret);

/* The QoS-level groups: [0] kubepods, [1] burstable, [2] besteffort.
 * burstable_cpu_milli is the sum of the Burstable pods' cpu requests. */
void cg_qos_values(int64_t burstable_cpu_milli, const CgOptions *o, CgGroupValues ret[3]);

/* ---- the writer (impure): cgroupfs driver through libcgroup ------------- */

typedef struct CgWriter CgWriter;

/* cgroup_root must be a cgroup v2 mount (statfs CGROUP2_SUPER_MAGIC), the
 * one libcgroup sees (normally /sys/fs/cgroup). */
int cg_writer_new(const char *cgroup_root, CgWriter **ret, CubError *err);
CgWriter *cg_writer_free(CgWriter *w);
static inline void cg_writer_freep(CgWriter **w) {
        if (*w)
                cg_writer_free(*w);
}
/* Creates the group (enabling its controllers in the parents'
 * cgroup.subtree_control) or updates it, writing the files in their order. */
int cg_writer_apply(CgWriter *w, const CgGroupValues *g, CubError *err);
/* Removes an empty group; a missing one is fine. */
int cg_writer_remove(CgWriter *w, const char *path, CubError *err);
/* Reads one file of a group back (trailing newline stripped). */
int cg_writer_read(CgWriter *w, const char *path, const char *file, char *buf, size_t size, CubError *err);
