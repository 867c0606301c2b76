/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the agent/admit sources and its unit tests only. */

#include "admit.h"

/* Fixed resource indices of the snapshot's table; others follow. */
enum {
        ADMIT_RES_CPU,
        ADMIT_RES_MEMORY,
        ADMIT_RES_EPHEMERAL,
        _ADMIT_RES_FIXED,
};

typedef struct AdmitPort {
        char protocol[ADMIT_PROTO_MAX];
        char ip[ADMIT_IP_MAX];
        uint16_t port;
} AdmitPort;

typedef struct AdmitReq {
        size_t res; /* index into the snapshot's resource table */
        int64_t value;
} AdmitReq;

typedef struct AdmitEntry {
        const Pod *pod;
        char *uid;
        char *key;
        PodQOSClass qos;
        int32_t priority;
        bool critical;
        AdmitLedgerState state;
        AdmitReq *reqs;
        size_t n_reqs;
        PodResourceList requests; /* for the ledger */
        AdmitPort *ports;
        size_t n_ports;
} AdmitEntry;

typedef struct AdmitDevices {
        char *resource;
        char **ids;
        size_t n;
} AdmitDevices;

struct AdmitSnapshot {
        char *node_name;
        PodStringMap labels;
        PodTaint *taints;
        size_t n_taints;
        int64_t max_pods;
        /* resources: names, allocatable, advertised by the node, running sums */
        char **res_names;
        int64_t *alloc;
        bool *advertised;
        int64_t *used;
        size_t n_res;
        /* admitted pods, in order of addition */
        AdmitEntry **pods;
        size_t n_pods;
        AdmitConditions cond;
        AdmitPort *host_ports;
        size_t n_host_ports;
        CpumgrState *cpumgr;
        AdmitDevices *devices;
        size_t n_devices;
};

/* A pod's requests resolved against the snapshot: per table index, with the
 * extended resources the node does not advertise dropped. Native resources
 * unknown to the node get index SIZE_MAX (allocatable 0). */
typedef struct AdmitPodReq {
        const char *name; /* borrowed from the effective requests */
        size_t res;
        int64_t value;
} AdmitPodReq;

/* Value of a quantity in the resource's unit: cpu milli, else Value(). */
int64_t admit_quantity_value(const char *resource, CubQuantity q);
bool admit_resource_is_extended(const char *name);
bool admit_resource_is_checked(const char *name);
ssize_t admit_snapshot_find_res(const AdmitSnapshot *s, const char *name);
ssize_t admit_snapshot_find_pod(const AdmitSnapshot *s, const char *uid);
/* The pod's host ports (hostPort != 0, containers), malloc'd. */
int admit_pod_ports(const Pod *pod, AdmitPort **ret, size_t *ret_n);
bool admit_ports_conflict(const AdmitPort *a, const AdmitPort *b);
/* Adds a computed entry (requests and ports summed). */
int admit_snapshot_insert(AdmitSnapshot *s, const Pod *pod, AdmitLedgerState state, CubError *err);

/* filters.c */
typedef struct AdmitCtx {
        const AdmitSnapshot *s;
        const Pod *pod;
        const AdmitOptions *o;
        PodQOSClass qos;
        AdmitPodReq *reqs;
        size_t n_reqs;
        AdmitPort *ports;
        size_t n_ports;
        unsigned excl_cpus; /* exclusive CPUs the pod needs */
} AdmitCtx;

int admit_ctx_init(const AdmitSnapshot *s, const Pod *pod, const AdmitOptions *o, AdmitCtx *c, PodEffective *eff,
                   CubError *err);
void admit_ctx_done(AdmitCtx *c);

typedef void (*AdmitFilterFn)(const AdmitCtx *c, AdmitFilterResult *r);
extern const AdmitFilterFn admit_filter_table[_ADMIT_FILTER_MAX];

bool admit_tolerates(const PodToleration *t, size_t n, const char *key, const char *value, const char *effect);

/* preempt.c: a failing dimension to cover; what a victim frees of it. */
typedef struct AdmitNeed {
        size_t res;      /* resource index, or ADMIT_NEED_PODS / ADMIT_NEED_CPUS */
        int64_t deficit; /* > 0 */
} AdmitNeed;

#define ADMIT_NEED_PODS ((size_t) -1)
#define ADMIT_NEED_CPUS ((size_t) -2)
#define ADMIT_PREEMPT_EXACT_MAX 24

/* Chooses victims among s's pods for the needs (see preempt.c). Returns the
 * number of victims (indices into s->pods in ret_idx, malloc'd), 0 when
 * none is needed, -ENOSPC when no set covers the needs. */
int admit_preempt_select(const AdmitSnapshot *s, const Pod *pod, const AdmitNeed *needs, size_t n_needs,
                         size_t **ret_idx, CubError *err);

/* placement.c */
typedef struct AdmitCpuCandidate {
        CpumgrSet cpus;
        int64_t score;
} AdmitCpuCandidate;

/* Places the pod on st (a clone the caller owns; changed): fills the
 * placement and the CPUPlacement score. 0, or < 0 with err. */
int admit_place_cpus(CpumgrState *st, const Pod *pod, PodQOSClass qos, const AdmitOptions *o, AdmitPlacement *pl,
                     int64_t *ret_score, CubError *err);
/* Score of a candidate set on the topology, 0..100. */
int64_t admit_cpuset_score(const CpumgrTopology *t, const CpumgrSet *cpus, const AdmitOptions *o);
void admit_placement_done(AdmitPlacement *p);
