/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/admit: the node-local admission scheduler.
 *
 * Every pod that reaches the node is filtered and scored against a snapshot
 * of the node before any runtime call, placed on concrete CPUs, and either
 * admitted, admitted by preempting lower-priority pods, or rejected with
 * kubelet's reason and message (shared/kubelet-semantics.md sections 6.7, 7
 * and 8).
 *
 * The agent's use, all on its one event loop:
 *
 *   admit_snapshot_new(&node_info, &snap, err)      at start and on node changes
 *   admit_snapshot_set_cpumgr(snap, cpu_state)      the (borrowed) CPU manager state
 *   admit_ledger_load(path, &entries, &n, err)      which pods were admitted before a restart
 *   admit_snapshot_add(snap, pod, err)              each such pod (confirmed), no decision
 *   admit_snapshot_set_conditions(snap, &cond)      MemoryPressure/DiskPressure/PIDPressure
 *   admit_host_listening_ports(&ports, &n, err)     then admit_snapshot_set_host_ports()
 *   admit_decide(snap, pod, &opts, &decision, err)  pure: filters, placement, scores, victims
 *   (stop the victims with reason ADMIT_PREEMPTED_REASON and admit_preempted_message(),
 *    admit_snapshot_forget() each of them)
 *   admit_snapshot_assume(snap, pod, &decision.placement, err)  before any CRI call
 *   admit_snapshot_confirm(snap, uid) | admit_snapshot_forget(snap, uid)
 *   admit_ledger_save(snap, path, err)              after each change
 *
 * Pure except admit_host_listening_ports(), the Seccomp filter (reads the
 * Localhost profile under AdmitOptions.seccomp_root) and the ledger files.
 * The snapshot borrows the admitted Pods and the CpumgrState: they must
 * outlive their use in it. No locking: the agent's loop owns it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../cpumanager/cpumanager.h"
#include "../pod/pod.h"
#include "../util/err.h"

/* ---- the snapshot --------------------------------------------------------- */

typedef struct AdmitSnapshot AdmitSnapshot;

#define ADMIT_DEFAULT_MAX_PODS 110
/* Critical pods: cubelet calls a pod critical by its priority alone
 * (priority >= POD_PRIORITY_CRITICAL, kubelet's SystemCriticalPriority;
 * kubelet also counts every static pod): pods from the manifest directory
 * are this node's workload, for pressure admission and preemption alike. */
#define ADMIT_DEFAULT_SECCOMP_ROOT POD_SECCOMP_ROOT

typedef struct AdmitNodeInfo {
        const char *name;           /* metadata.name */
        const PodStringMap *labels; /* may be NULL */
        const PodTaint *taints;     /* spec.taints */
        size_t n_taints;
        const PodResourceList *allocatable; /* capacity − reserved − hard eviction (cpu, memory, ...) */
        int64_t max_pods;                   /* <= 0: the allocatable "pods", else 110 */
} AdmitNodeInfo;

/* Copies everything of node; nothing of it is borrowed. */
int admit_snapshot_new(const AdmitNodeInfo *node, AdmitSnapshot **ret, CubError *err);
AdmitSnapshot *admit_snapshot_free(AdmitSnapshot *s);
static inline void admit_snapshot_freep(AdmitSnapshot **s) {
        if (*s)
                admit_snapshot_free(*s);
}

/* An admitted pod (borrowed; it must stay alive until removed): its
 * effective requests, QoS, priority and host ports are computed once and
 * summed into the running totals. The pod's CPUs are not touched (they live
 * in the CPU manager's own checkpoint). -EEXIST when the UID is present. */
int admit_snapshot_add(AdmitSnapshot *s, const Pod *pod, CubError *err);
/* Removes the pod's requests and ports (not its CPUs). -ENOENT when absent. */
int admit_snapshot_remove(AdmitSnapshot *s, const char *uid);
size_t admit_snapshot_n_pods(const AdmitSnapshot *s);
/* The running sum of requests of a resource (cpu in milli, else Value()). */
int64_t admit_snapshot_used(const AdmitSnapshot *s, const char *resource);

typedef struct AdmitConditions {
        bool memory_pressure;
        bool disk_pressure;
        bool pid_pressure;
} AdmitConditions;

void admit_snapshot_set_conditions(AdmitSnapshot *s, const AdmitConditions *c);
/* From a Node's status.conditions (status "True"). */
void admit_conditions_from_node(const PodNode *node, AdmitConditions *ret);

#define ADMIT_PROTO_MAX 8
#define ADMIT_IP_MAX 46 /* INET6_ADDRSTRLEN */

typedef struct AdmitHostPort {
        char protocol[ADMIT_PROTO_MAX]; /* TCP, UDP, SCTP */
        char ip[ADMIT_IP_MAX];          /* text; "" or 0.0.0.0 or :: = every address */
        uint16_t port;
} AdmitHostPort;

/* Ports held by host sockets (copied). */
int admit_snapshot_set_host_ports(AdmitSnapshot *s, const AdmitHostPort *ports, size_t n, CubError *err);
/* The node advertises resource with this allocatable (a device plugin's
 * healthy devices: 0 keeps it advertised, so its requests are checked). */
int admit_snapshot_set_allocatable(AdmitSnapshot *s, const char *resource, int64_t value, CubError *err);
/* The CPU manager state (borrowed, NULL = policy none). */
void admit_snapshot_set_cpumgr(AdmitSnapshot *s, CpumgrState *cpumgr);
/* Free devices of an extended resource (placeholder for the device plugin
 * manager: reported in the placement, not allocated). Copied. */
int admit_snapshot_set_devices(AdmitSnapshot *s, const char *resource, const char *const *ids, size_t n, CubError *err);

/* ---- options -------------------------------------------------------------- */

typedef struct AdmitOptions {
        const char *seccomp_root; /* NULL: ADMIT_DEFAULT_SECCOMP_ROOT */
        /* CPU placement: weights of the three criteria of a candidate cpuset */
        unsigned weight_whole_cores;
        unsigned weight_sockets;
        unsigned weight_numa;
        /* LeastAllocated / MostAllocated per-resource weights (scheduler's
         * NodeResourcesFitArgs.scoringStrategy.resources, default 1 each) */
        unsigned weight_cpu;
        unsigned weight_memory;
        /* false: report a resource shortfall without looking for victims */
        bool preemption;
        /* security context: allowedUnsafeSysctls (NULL: none) */
        const PodStrv *allowed_unsafe_sysctls;
} AdmitOptions;

void admit_options_init(AdmitOptions *o);

/* ---- the decision ----------------------------------------------------------- */

typedef enum AdmitFilterId {
        ADMIT_FILTER_NODE_PRESSURE, /* the eviction manager's handler runs first in kubelet */
        ADMIT_FILTER_CPU_MANAGER,   /* then the resource-allocation handler */
        ADMIT_FILTER_NODE_RESOURCES_FIT,
        ADMIT_FILTER_NODE_AFFINITY,
        ADMIT_FILTER_NODE_NAME,
        ADMIT_FILTER_NODE_PORTS,
        ADMIT_FILTER_TAINT_TOLERATION,
        ADMIT_FILTER_SECCOMP,
        ADMIT_FILTER_SYSCTL, /* security context: kubelet's sysctl allow list (SysctlForbidden) */
        _ADMIT_FILTER_MAX,
        _ADMIT_FILTER_INVALID = -22,
} AdmitFilterId;

const char *admit_filter_to_string(AdmitFilterId id);

#define ADMIT_REASON_MAX 320
#define ADMIT_MESSAGE_MAX 1024

typedef struct AdmitFilterResult {
        const char *plugin; /* static */
        bool ok;
        char reason[ADMIT_REASON_MAX];   /* "" when ok */
        char message[ADMIT_MESSAGE_MAX]; /* "" when ok */
} AdmitFilterResult;

typedef struct AdmitContainerCpus {
        char *name;
        CpumgrSet cpus;
        char *cpuset; /* cpus in list format */
} AdmitContainerCpus;

typedef struct AdmitDeviceIds {
        char *resource;
        char **ids;
        size_t n;
} AdmitDeviceIds;

typedef struct AdmitPlacement {
        CpumgrSet cpus;                 /* the union of the containers' exclusive CPUs */
        char *cpuset;                   /* cpus in list format, "" when none */
        AdmitContainerCpus *containers; /* only containers with exclusive CPUs */
        size_t n_containers;
        bool policy_choice;      /* the cpus are the static policy's own choice (cpumgr_allocate_pod) */
        AdmitDeviceIds *devices; /* extended resources with known free devices */
        size_t n_devices;
} AdmitPlacement;

typedef struct AdmitScore {
        const char *plugin; /* static */
        int64_t score;      /* 0..100 */
} AdmitScore;

#define ADMIT_SCORES_MAX 4

typedef struct AdmitVictim {
        char *uid;
        char *key; /* "ns/name" */
        int32_t priority;
} AdmitVictim;

typedef struct AdmitDecision {
        bool admit;
        char reason[ADMIT_REASON_MAX]; /* the first failure, kept when admitted by preemption */
        char message[ADMIT_MESSAGE_MAX];
        AdmitFilterId first_failed; /* the filter of reason and message; _ADMIT_FILTER_INVALID when none failed */
        AdmitFilterResult filters[_ADMIT_FILTER_MAX]; /* in table order */
        size_t n_filters;
        AdmitPlacement placement;
        AdmitScore scores[ADMIT_SCORES_MAX];
        size_t n_scores;
        AdmitVictim *victims; /* set when admitted by preemption */
        size_t n_victims;
} AdmitDecision;

/*
 * Runs every filter (kubelet's includeAllFailures; the decision's reason is
 * the first failure in table order), places the pod's exclusive CPUs on a
 * clone of the CPU state, scores, and — when the only failures are
 * NodeResourcesFit and/or CPUManager and the pod's preemptionPolicy is not
 * Never — looks for the minimal set of strictly lower-priority victims.
 * The pod must not be in the snapshot. Returns < 0 only for errors (out of
 * memory, a pod whose requests cannot be computed); a rejection is a
 * decision. *ret is initialised on entry; release it with
 * admit_decision_done().
 */
int admit_decide(const AdmitSnapshot *s, const Pod *pod, const AdmitOptions *o, AdmitDecision *ret, CubError *err);
void admit_decision_done(AdmitDecision *d);

/* What victims are stopped with (kubelet's words are for critical pods only). */
#define ADMIT_PREEMPTED_REASON "Preempted"
/* "Preempted in order to admit pod <ns/name>"; returns buf. */
#define ADMIT_PREEMPTED_MESSAGE_MAX 600
const char *admit_preempted_message(const Pod *preemptor, char buf[static ADMIT_PREEMPTED_MESSAGE_MAX]);

/* ---- the ledger: assume, confirm, forget ------------------------------------- */

typedef enum AdmitLedgerState {
        ADMIT_LEDGER_ASSUMED,   /* reserved, not started yet */
        ADMIT_LEDGER_CONFIRMED, /* started (or re-added after a restart) */
        _ADMIT_LEDGER_STATE_MAX,
        _ADMIT_LEDGER_STATE_INVALID = -22,
} AdmitLedgerState;

const char *admit_ledger_state_to_string(AdmitLedgerState s);
AdmitLedgerState admit_ledger_state_from_string(const char *s);

/*
 * Reserves the pod's requests, host ports and exclusive CPUs before any
 * runtime call: the pod joins the snapshot in state assumed, so the next
 * decision sees it (two assumes without a confirm cannot oversell). The
 * CPUs are allocated on the snapshot's CpumgrState: `placement` (the
 * decision's) when it is the CPU manager's own choice or NULL, through
 * cpumgr_allocate_pod(). Idempotent for a pod already assumed. On failure
 * nothing changes.
 */
int admit_snapshot_assume(AdmitSnapshot *s, const Pod *pod, const AdmitPlacement *placement, CubError *err);
/* The pod started: assumed → confirmed. -ENOENT when absent. */
int admit_snapshot_confirm(AdmitSnapshot *s, const char *uid);
/* The pod failed to start or ended: releases its requests, ports and CPUs
 * (cpumgr_release_pod). -ENOENT when absent. */
int admit_snapshot_forget(AdmitSnapshot *s, const char *uid);
/* The ledger state of a pod; -ENOENT when absent. */
int admit_snapshot_state(const AdmitSnapshot *s, const char *uid, AdmitLedgerState *ret);

/*
 * The ledger checkpoint, written atomically:
 *   {"version":1,"pods":[{"uid":"...","pod":"ns/name","state":"assumed",
 *     "requests":{"cpu":"500m","memory":"64Mi"}}, ...],"checksum":N}
 * checksum = FNV-1a 32 of the compact "pods" array text.
 */
int admit_ledger_format(const AdmitSnapshot *s, char **ret_text, CubError *err);
int admit_ledger_save(const AdmitSnapshot *s, const char *path, CubError *err);

typedef struct AdmitLedgerEntry {
        char *uid;
        char *key; /* "ns/name" */
        AdmitLedgerState state;
} AdmitLedgerEntry;

/* A missing file is an empty ledger (0 entries, returns 0). A corrupt file
 * or a checksum mismatch is -EBADMSG naming the path. */
int admit_ledger_load(const char *path, AdmitLedgerEntry **ret, size_t *ret_n, CubError *err);
int admit_ledger_parse(const char *text, size_t len, const char *source, AdmitLedgerEntry **ret, size_t *ret_n,
                       CubError *err);
void admit_ledger_entries_free(AdmitLedgerEntry *e, size_t n);

/* ---- host probes ----------------------------------------------------------------- */

/* TCP listening and UDP bound sockets of the host (IPv4 and IPv6), through
 * sock_diag (libnl-idiag for TCP). The array is malloc'd. */
int admit_host_listening_ports(AdmitHostPort **ret, size_t *ret_n, CubError *err);

/*
 * Compiles an OCI/docker seccomp profile with libseccomp: default action,
 * every syscall name resolved (unknown names are an error naming all of
 * them), rules added. `name` is the Localhost profile as the pod gives it;
 * path the file. On failure err reads "profile '<name>': ...".
 */
int admit_seccomp_check(const char *path, const char *name, CubError *err);
