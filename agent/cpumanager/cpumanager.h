/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/cpumanager: kubelet's static CPU manager policy
 * (pkg/kubelet/cm/cpumanager/policy_static.go, cpu_assignment.go;
 * shared/kubelet-semantics.md section 5).
 *
 *  - topology: CPUs with their core (hyperthread siblings), socket and NUMA
 *    node, read from /sys (root injectable) or given by the caller;
 *  - reserved CPUs: reservedSystemCPUs, or ceil(kube+system reserved cpu)
 *    CPUs taken by topology from the lowest core;
 *  - exclusive CPUs for each container of a Guaranteed pod whose cpu request
 *    is a whole number (init containers included; a regular init
 *    container's CPUs are reused by the app containers of the same pod),
 *    unless the pod sets pod-level resources (1.34 gives those none);
 *  - the shared pool (defaultCpuSet) for every other container;
 *  - the checkpoint in kubelet's cpu_manager_state shape.
 *
 * Pure except cpumgr_topology_from_sys() and the checkpoint file functions.
 * The state is owned by the agent's loop (no locking).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../cgroup/cgroup.h"
#include "../pod/pod.h"
#include "../util/err.h"

/* ---- CPU sets ------------------------------------------------------------ */

#define CPUMGR_MAX_CPUS 1024

typedef struct CpumgrSet {
        uint64_t bits[CPUMGR_MAX_CPUS / 64];
} CpumgrSet;

/* Linux list format: "0-2,5,7-8"; "" is the empty set. Blanks and a
 * trailing newline are tolerated. -EINVAL on garbage, -ERANGE above
 * CPUMGR_MAX_CPUS - 1. */
int cpumgr_set_parse(const char *s, CpumgrSet *ret, CubError *err);
/* Ascending, ranges for runs of two or more ("0-1,3"); "" when empty.
 * Returns buf. CPUMGR_SET_STR_MAX is enough for any set. */
#define CPUMGR_SET_STR_MAX 4096
const char *cpumgr_set_format(const CpumgrSet *s, char *buf, size_t size);
void cpumgr_set_add(CpumgrSet *s, unsigned cpu);
void cpumgr_set_del(CpumgrSet *s, unsigned cpu);
bool cpumgr_set_has(const CpumgrSet *s, unsigned cpu);
unsigned cpumgr_set_count(const CpumgrSet *s);
bool cpumgr_set_is_empty(const CpumgrSet *s);
bool cpumgr_set_equal(const CpumgrSet *a, const CpumgrSet *b);
void cpumgr_set_union(CpumgrSet *dst, const CpumgrSet *src);
void cpumgr_set_subtract(CpumgrSet *dst, const CpumgrSet *src);
void cpumgr_set_intersect(CpumgrSet *dst, const CpumgrSet *src);

/* ---- topology ------------------------------------------------------------ */

typedef struct CpumgrCpu {
        unsigned cpu;
        unsigned core; /* a node-unique core id (siblings share it) */
        unsigned socket;
        unsigned numa;
} CpumgrCpu;

typedef struct CpumgrTopology {
        CpumgrCpu *cpus; /* ascending by cpu */
        size_t n;
} CpumgrTopology;

/* Reads <sys_root>/devices/system/cpu/online, cpuN/topology/
 * {core_id,physical_package_id} and <sys_root>/devices/system/node/nodeN/
 * cpulist (NUMA 0 when absent). sys_root is normally "/sys". Core ids are
 * made node-unique (socket, core_id). */
int cpumgr_topology_from_sys(const char *sys_root, CpumgrTopology *ret, CubError *err);
/* Copies cpus (any order; duplicates are -EINVAL naming the cpu). */
int cpumgr_topology_from_cpus(const CpumgrCpu *cpus, size_t n, CpumgrTopology *ret, CubError *err);
void cpumgr_topology_done(CpumgrTopology *t);
void cpumgr_topology_all(const CpumgrTopology *t, CpumgrSet *ret);

/*
 * takeByTopologyNUMAPacked(available, n): whole NUMA nodes / sockets first,
 * then whole cores, then single threads, packing (fewest free CPUs first,
 * ties by lower id). -ENOSPC with "not enough cpus available to satisfy
 * request: requested=N, available=M" when short.
 */
int cpumgr_take_by_topology(const CpumgrTopology *t, const CpumgrSet *available, unsigned n, CpumgrSet *ret,
                            CubError *err);

/* The reserved set: reserved_cpus_list (reservedSystemCPUs) when non-NULL
 * and non-empty, else ceil(reserved_milli / 1000) CPUs taken by topology
 * from all CPUs. */
int cpumgr_reserved(const CpumgrTopology *t, const char *reserved_cpus_list, int64_t reserved_milli, CpumgrSet *ret,
                    CubError *err);

/* ---- policy -------------------------------------------------------------- */

/* The number of exclusive CPUs a container gets: its cpu request when the
 * pod is Guaranteed and the request is a whole number, else 0 (shared). */
unsigned cpumgr_guaranteed_cpus(PodQOSClass qos, const PodContainer *c);
/* The most exclusive CPUs the pod holds at one time (init containers run
 * one at a time and their CPUs are reused: max(max over init, sum over app
 * containers + sidecars)). 0 for a pod with pod-level resources: kubelet
 * 1.34's static policy gives such a pod none (nor do cpumgr_pod_fits and
 * cpumgr_allocate_pod). */
unsigned cpumgr_pod_exclusive_cpus(const Pod *pod, PodQOSClass qos);

typedef enum CpumgrPolicy {
        CPUMGR_POLICY_NONE,
        CPUMGR_POLICY_STATIC,
        _CPUMGR_POLICY_MAX,
        _CPUMGR_POLICY_INVALID = -22,
} CpumgrPolicy;

const char *cpumgr_policy_to_string(CpumgrPolicy p);
CpumgrPolicy cpumgr_policy_from_string(const char *s);

typedef struct CpumgrState CpumgrState;

/* policy NONE: every container gets "" (no cpuset) and nothing is exclusive. */
int cpumgr_new(CpumgrPolicy policy, const CpumgrTopology *t, const CpumgrSet *reserved, CpumgrState **ret,
               CubError *err);
CpumgrState *cpumgr_free(CpumgrState *s);
static inline void cpumgr_freep(CpumgrState **s) {
        if (*s)
                cpumgr_free(*s);
}
/* A deep copy (admission tries placements on a copy). */
int cpumgr_clone(const CpumgrState *s, CpumgrState **ret, CubError *err);

CpumgrPolicy cpumgr_policy(const CpumgrState *s);
const CpumgrTopology *cpumgr_topology(const CpumgrState *s);
const CpumgrSet *cpumgr_reserved_set(const CpumgrState *s);
/* defaultCpuSet: the shared pool (reserved CPUs included). */
const CpumgrSet *cpumgr_shared_pool(const CpumgrState *s);
/* CPUs free for exclusive use: shared pool − reserved. */
void cpumgr_free_exclusive(const CpumgrState *s, CpumgrSet *ret);

/* Whether the pod's exclusive CPUs fit now (ignoring CPUs it already holds);
 * on false fills err with "not enough cpus available to satisfy request:
 * requested=N, available=M". Always true for policy NONE. */
bool cpumgr_pod_fits(const CpumgrState *s, const Pod *pod, PodQOSClass qos, CubError *err);

/* Allocates exclusive CPUs to every container of the pod that gets some
 * (init containers first, their CPUs reusable by the app containers), in
 * the manifest's order. Idempotent: containers that hold CPUs keep them.
 * On failure nothing changes. */
int cpumgr_allocate_pod(CpumgrState *s, const Pod *pod, PodQOSClass qos, CubError *err);
/* Assigns exactly `cpus` to one container (a placement the admission
 * scheduler chose over the policy's own, e.g. NUMA-aligned). The CPUs must
 * be free for exclusive use or already held by the same pod (an init
 * container's, reused); -EEXIST when the container holds CPUs, -ENOSPC
 * naming the CPUs that are taken. */
int cpumgr_assign_container(CpumgrState *s, const char *pod_uid, const char *container, const CpumgrSet *cpus,
                            CubError *err);
/* In-place resize: pod (its new resources; same UID) holds as many
 * exclusive CPUs per resizable container as it now asks: each keeps those
 * it holds, takes more from the free ones or returns what it needs no more.
 * -ENOSPC (kubelet's "not enough cpus available" words) when too few are
 * free: nothing changed. */
int cpumgr_resize_pod(CpumgrState *s, const Pod *pod, PodQOSClass qos, CubError *err);
/* Releases every assignment of the pod; its CPUs go back to the pool. */
void cpumgr_release_pod(CpumgrState *s, const char *pod_uid);
/* kubelet's RemoveContainer: releases one assignment; its CPUs go back to the
 * pool minus those still held by sibling containers of the pod (init/app
 * reuse). */
void cpumgr_release_container(CpumgrState *s, const char *pod_uid, const char *container);
/* Releases the assignments of pods not in live_uids (stale state). Returns
 * how many pods were dropped. */
size_t cpumgr_release_stale(CpumgrState *s, const char *const *live_uids, size_t n_live);

/* The container's exclusive CPUs, or NULL when it runs on the shared pool. */
const CpumgrSet *cpumgr_container_cpus(const CpumgrState *s, const char *pod_uid, const char *container);
/* What the container's CRI cpuset_cpus is: its exclusive CPUs, else the
 * shared pool; "" under policy NONE. Returns buf. */
const char *cpumgr_container_cpuset(const CpumgrState *s, const char *pod_uid, const char *container, char *buf,
                                    size_t size);

/* ---- checkpoint ---------------------------------------------------------- */

/*
 * kubelet's cpu_manager_state (v2):
 *   {"policyName":"static","defaultCpuSet":"0,3-7",
 *    "entries":{"<podUID>":{"<container>":"1-2"}},"checksum":N}
 * entries omitted when empty; checksum is kubelet's (FNV-32a of go-spew's
 * rendering, see checkpoint.c). Text is malloc'd.
 */
int cpumgr_checkpoint_format(const CpumgrState *s, char **ret_text, CubError *err);
int cpumgr_checkpoint_save(const CpumgrState *s, const char *path, CubError *err);

/*
 * Restores the assignments of a checkpoint into a fresh state. Never fatal
 * for the agent: a missing file is a fresh start (returns 0); a policy
 * change, CPUs that no longer exist, overlapping entries or a corrupt file
 * (a checksum other than 0 that is not kubelet's for the content counts as
 * corrupt) are reconciled — the offending entries are dropped, the pool rebuilt —
 * and described in ret_note (returns 1). Returns < 0 only for I/O errors
 * other than ENOENT.
 */
int cpumgr_checkpoint_load(CpumgrState *s, const char *path, char *ret_note, size_t note_size, CubError *err);
/* Same, from text (tests, fuzzing). */
int cpumgr_checkpoint_restore(CpumgrState *s, const char *text, size_t len, char *ret_note, size_t note_size,
                              CubError *err);

/*
 * kubelet 1.34's DisableCPUQuotaWithExclusiveCPUs (beta, on by default),
 * under the static policy (o->cpu_static): a container given exclusive CPUs
 * runs without a CFS quota (kuberuntime_container_linux.go: CpuQuota -1,
 * when cpuCFSQuota is on), and so does the pod cgroup of a pod with one
 * (pod_container_manager_linux.go EnsureExists: cpu.max "max"). quota.c.
 */
void cpumgr_unquota_pod(const Pod *pod, PodQOSClass qos, const CgOptions *o, CgGroupValues *g);
void cpumgr_unquota_container(PodQOSClass qos, const PodContainer *c, const CgOptions *o, CgContainerResources *res);
