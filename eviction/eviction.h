/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * eviction/: node-pressure eviction as pure policy plus signal readers
 * (kubelet 1.28-1.31 semantics, shared/kubelet-semantics.md section 6).
 *
 *   config      kubelet's evictionHard/evictionSoft/... given as plain strings
 *               (evict_config_*), checked once by evict_config_finish()
 *   observe     the impure readers (evict_read_*) fill an EvictObservations
 *   update      evict_state_update(): thresholds met, min-reclaim, grace
 *               periods, node conditions with the transition period; the
 *               clock is a parameter (µs), so tests use a fake one
 *   decide      evict_decide(): at most one pod per round, with kubelet's
 *               reason, message and grace period
 *   rank        evict_rank(): the eviction order of a pod snapshot for one
 *               signal, cubelet's (QoS first) or kubelet's policy
 *   admit       evict_admit(): the pressure admission rule
 *
 * Nothing here logs, nothing talks to CRI: the agent acts on decisions.
 * Snapshots are borrowed (pointers stay owned by the caller). Times are
 * uint64_t microseconds on one monotonic clock; bytes are uint64_t.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../agent/util/err.h"
#include "../agent/util/time.h"

/* ---- Signals and resources ------------------------------------------------ */

typedef enum EvictSignal {
        EVICT_SIGNAL_MEMORY_AVAILABLE,             /* memory.available */
        EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, /* allocatableMemory.available (kubepods) */
        EVICT_SIGNAL_NODEFS_AVAILABLE,             /* nodefs.available */
        EVICT_SIGNAL_NODEFS_INODES_FREE,           /* nodefs.inodesFree */
        EVICT_SIGNAL_IMAGEFS_AVAILABLE,            /* imagefs.available */
        EVICT_SIGNAL_IMAGEFS_INODES_FREE,          /* imagefs.inodesFree */
        EVICT_SIGNAL_PID_AVAILABLE,                /* pid.available */
        _EVICT_SIGNAL_MAX,
        _EVICT_SIGNAL_INVALID = -22,
} EvictSignal;

const char *evict_signal_to_string(EvictSignal s);
EvictSignal evict_signal_from_string(const char *s);

/* The resource a signal starves (kubelet's signalToResource). */
typedef enum EvictResource {
        EVICT_RESOURCE_MEMORY,            /* "memory" */
        EVICT_RESOURCE_EPHEMERAL_STORAGE, /* "ephemeral-storage" */
        EVICT_RESOURCE_INODES,            /* "inodes" */
        EVICT_RESOURCE_PIDS,              /* "pids" */
        _EVICT_RESOURCE_MAX,
        _EVICT_RESOURCE_INVALID = -22,
} EvictResource;

const char *evict_resource_to_string(EvictResource r);
EvictResource evict_signal_resource(EvictSignal s);

typedef enum EvictCondition {
        EVICT_CONDITION_MEMORY_PRESSURE, /* memory.available, allocatableMemory.available */
        EVICT_CONDITION_DISK_PRESSURE,   /* nodefs.*, imagefs.* */
        EVICT_CONDITION_PID_PRESSURE,    /* pid.available */
        _EVICT_CONDITION_MAX,
        _EVICT_CONDITION_INVALID = -22,
} EvictCondition;

const char *evict_condition_to_string(EvictCondition c); /* "MemoryPressure", ... */
EvictCondition evict_signal_condition(EvictSignal s);
/* kubelet's node status texts: KubeletHasInsufficientMemory / "kubelet has
 * insufficient memory available" when status is true, and so on. */
const char *evict_condition_reason(EvictCondition c, bool status);
const char *evict_condition_message(EvictCondition c, bool status);

/* ---- Quantities and durations ----------------------------------------------- */

/* resource.Quantity's canonical text of an integer: binary ("92124Ki", and
 * values below 1024 print as decimal SI, as Go does) or decimal SI ("1500k"). */
#define EVICT_QUANTITY_STR_MAX 32
const char *evict_quantity_format(uint64_t v, bool binary, char buf[static EVICT_QUANTITY_STR_MAX]);

/* ---- Configuration -------------------------------------------------------------- */

#define EVICT_DEFAULT_TRANSITION_USEC (5 * 60 * CUB_USEC_PER_SEC)
/* kubelet's SystemCriticalPriority. eviction/ is a leaf and does not see
 * the pod model; agent/derive.c asserts this equals POD_PRIORITY_CRITICAL. */
#define EVICT_CRITICAL_PRIORITY INT32_C(2000000000)
/* The per-pod opt-out: a pod annotated with this key and the value "true" is
 * never evicted (the agent sets EvictPod.protected_ from it). */
#define EVICT_ANNOTATION_PROTECTED "cubelet.io/eviction-protected"

typedef enum EvictPolicy {
        EVICT_POLICY_CUBELET, /* QoS class, then priority, then usage - request */
        EVICT_POLICY_KUBELET, /* kubelet's rank functions */
        _EVICT_POLICY_MAX,
        _EVICT_POLICY_INVALID = -22,
} EvictPolicy;

const char *evict_policy_to_string(EvictPolicy p);
EvictPolicy evict_policy_from_string(const char *s);

/* A quantity, or a fraction of the signal's capacity. */
typedef struct EvictValue {
        bool percent;
        float percentage;  /* percent: float32(ParseFloat(s, 32)) / 100 */
        uint64_t quantity; /* !percent: bytes or count, > 0 for thresholds */
        bool binary;       /* !percent: the text used a binary suffix (display only) */
} EvictValue;

/* int64(float64(capacity) * float64(percentage)) for percentages, else the
 * quantity (kubelet's GetThresholdQuantity). */
uint64_t evict_value_quantity(const EvictValue *v, uint64_t capacity);

typedef struct EvictThreshold {
        EvictSignal signal;
        bool soft;
        EvictValue value;
        bool min_reclaim_set;
        EvictValue min_reclaim;
        uint64_t grace_usec; /* 0 for hard thresholds */
} EvictThreshold;

/* "memory.available<100Mi" / "nodefs.available<10%". */
#define EVICT_THRESHOLD_STR_MAX 64
const char *evict_threshold_format(const EvictThreshold *t, char buf[static EVICT_THRESHOLD_STR_MAX]);

/* At most one hard and one soft threshold per signal. */
#define EVICT_THRESHOLDS_MAX (2 * _EVICT_SIGNAL_MAX)

typedef struct EvictConfig {
        EvictThreshold thresholds[EVICT_THRESHOLDS_MAX];
        size_t n_thresholds;
        uint64_t transition_usec;      /* evictionPressureTransitionPeriod, default 5m */
        int64_t max_pod_grace_seconds; /* evictionMaxPodGracePeriod, default 0 */
        EvictPolicy policy;            /* default cubelet */
        /* collected until evict_config_finish() */
        bool hard_given;
        bool grace_set[_EVICT_SIGNAL_MAX];
        uint64_t grace_usec[_EVICT_SIGNAL_MAX];
        bool min_reclaim_set[_EVICT_SIGNAL_MAX];
        EvictValue min_reclaim[_EVICT_SIGNAL_MAX];
        bool finished;
} EvictConfig;

/*
 * Building a configuration from KubeletConfiguration text (map keys and
 * values as the agent read them):
 *
 *   evict_config_init(&c);
 *   for each evictionHard entry:            evict_config_add_hard(&c, key, value, &err);
 *   if evictionHard was present but empty:  evict_config_set_hard_given(&c);
 *   for each evictionSoft entry:            evict_config_add_soft(&c, key, value, &err);
 *   for each evictionSoftGracePeriod entry: evict_config_set_soft_grace_period(&c, key, "1m30s", &err);
 *   for each evictionMinimumReclaim entry:  evict_config_set_min_reclaim(&c, key, value, &err);
 *   evict_config_set_max_pod_grace_period(&c, seconds, &err);
 *   evict_config_set_transition_period(&c, "5m", &err);
 *   evict_config_set_policy(&c, "cubelet", &err);
 *   evict_config_finish(&c, enforce_pods_allocatable, &err);
 *
 * Errors name the field, the signal and the bad value:
 *   evictionHard[memory.available]: invalid quantity "12XB": ...
 * evict_config_finish() applies kubelet's default hard thresholds when no
 * hard threshold was given (memory.available<100Mi, nodefs.available<10%,
 * nodefs.inodesFree<5%, imagefs.available<15%), requires a grace period for
 * every soft threshold, attaches minimum reclaims, and, when
 * enforce_pods_allocatable, copies the hard memory.available threshold to
 * allocatableMemory.available (kubelet's addAllocatableThresholds).
 */
void evict_config_init(EvictConfig *c);
void evict_config_done(EvictConfig *c);
int evict_config_add_hard(EvictConfig *c, const char *signal, const char *value, CubError *err);
int evict_config_add_soft(EvictConfig *c, const char *signal, const char *value, CubError *err);
/* The flag form, "memory.available<100Mi" (only '<'). */
int evict_config_add_statement(EvictConfig *c, const char *statement, bool soft, CubError *err);
void evict_config_set_hard_given(EvictConfig *c);
int evict_config_set_soft_grace_period(EvictConfig *c, const char *signal, const char *duration, CubError *err);
int evict_config_set_min_reclaim(EvictConfig *c, const char *signal, const char *value, CubError *err);
int evict_config_set_max_pod_grace_period(EvictConfig *c, int64_t seconds, CubError *err);
int evict_config_set_transition_period(EvictConfig *c, const char *duration, CubError *err);
/* the same, already parsed (a KubeletConfiguration's, agent/pod) */
void evict_config_set_transition_usec(EvictConfig *c, uint64_t usec);
int evict_config_set_policy(EvictConfig *c, const char *policy, CubError *err);
/* the same, already parsed (a KubeletConfiguration's, agent/pod) */
void evict_config_set_policy_kind(EvictConfig *c, EvictPolicy policy);
int evict_config_finish(EvictConfig *c, bool enforce_pods_allocatable, CubError *err);

/* ---- Observations ------------------------------------------------------------------ */

typedef struct EvictSignalObservation {
        bool present;
        uint64_t available;
        uint64_t capacity;
} EvictSignalObservation;

/* One line of a PSI file: "some avg10=0.12 avg60=... avg300=... total=...". */
typedef struct EvictPsiLine {
        double avg10;
        double avg60;
        double avg300;
        uint64_t total_usec;
} EvictPsiLine;

typedef struct EvictPsi {
        bool present;
        EvictPsiLine some;
        bool has_full; /* cpu.pressure had no "full" line before Linux 5.13 */
        EvictPsiLine full;
} EvictPsi;

typedef enum EvictPsiResource {
        EVICT_PSI_MEMORY,
        EVICT_PSI_CPU,
        EVICT_PSI_IO,
        _EVICT_PSI_MAX,
        _EVICT_PSI_INVALID = -22,
} EvictPsiResource;

typedef struct EvictObservations {
        uint64_t time_usec;
        EvictSignalObservation signals[_EVICT_SIGNAL_MAX];
        EvictPsi node_psi[_EVICT_PSI_MAX];     /* for status display only */
        EvictPsi kubepods_psi[_EVICT_PSI_MAX]; /* for status display only */
} EvictObservations;

/* ---- State: thresholds met, grace periods, node conditions ------------------------- */

typedef struct EvictState {
        bool met[EVICT_THRESHOLDS_MAX];    /* met now (min-reclaim applied while being resolved) */
        bool active[EVICT_THRESHOLDS_MAX]; /* met and past its grace period: drives eviction */
        uint64_t first_observed_usec[EVICT_THRESHOLDS_MAX];
        bool condition[_EVICT_CONDITION_MAX]; /* reported status */
        bool condition_observed[_EVICT_CONDITION_MAX];
        uint64_t condition_last_observed_usec[_EVICT_CONDITION_MAX];
        uint64_t condition_transition_usec[_EVICT_CONDITION_MAX];
        uint64_t last_update_usec;
        bool updated;
} EvictState;

/* A state belongs to one finished config: re-init it when the config changes. */
void evict_state_init(EvictState *s);
/* One synchronize step (kubelet's synchronize up to the threshold
 * selection). A signal missing from obs meets no threshold. */
void evict_state_update(EvictState *s, const EvictConfig *c, const EvictObservations *obs, uint64_t now_usec);
bool evict_state_any_active(const EvictState *s, const EvictConfig *c);

/* The delay before the next sample after cur (prev: the sample before it):
 * period_usec, or period_usec / EVICT_FAST_SAMPLE_DIVISOR while a signal not
 * yet past its threshold fell, at the last interval's rate, by more than
 * half its headroom per period (it would cross within two periods). */
#define EVICT_FAST_SAMPLE_DIVISOR 10
uint64_t evict_sample_delay_usec(const EvictConfig *c, const EvictObservations *prev, const EvictObservations *cur,
                                 uint64_t period_usec);

typedef struct EvictConditionInfo {
        EvictCondition type;
        bool status;
        const char *name;              /* "MemoryPressure" */
        const char *reason;            /* "KubeletHasInsufficientMemory" */
        const char *message;           /* "kubelet has insufficient memory available" */
        uint64_t last_transition_usec; /* 0 before the first transition */
} EvictConditionInfo;

void evict_state_condition(const EvictState *s, EvictCondition c, EvictConditionInfo *ret);

/* The thresholds met now, for status: config order. */
typedef struct EvictMet {
        const EvictThreshold *threshold;
        uint64_t quantity;  /* resolved against the observed capacity */
        uint64_t available; /* observed */
        uint64_t first_observed_usec;
        bool active; /* grace period passed */
} EvictMet;

size_t evict_state_met(const EvictState *s, const EvictConfig *c, const EvictObservations *obs,
                       EvictMet ret[static EVICT_THRESHOLDS_MAX]);

/* ---- Pods and ranking ------------------------------------------------------------------ */

typedef enum EvictQOS {
        EVICT_QOS_GUARANTEED,
        EVICT_QOS_BURSTABLE,
        EVICT_QOS_BESTEFFORT,
        _EVICT_QOS_MAX,
        _EVICT_QOS_INVALID = -22,
} EvictQOS;

typedef struct EvictContainer {
        const char *name;
        uint64_t memory_usage; /* working set */
        uint64_t memory_request;
        uint64_t ephemeral_usage; /* rootfs + logs */
        uint64_t ephemeral_request;
} EvictContainer;

typedef struct EvictPod {
        const char *key; /* "namespace/name" */
        const char *uid;
        EvictQOS qos;
        int32_t priority;
        bool critical;   /* priority >= EVICT_CRITICAL_PRIORITY (also derived from priority) */
        bool protected_; /* EVICT_ANNOTATION_PROTECTED: "true" */
        bool stats;      /* usage below is known; pods without stats rank first in their tier, as kubelet does */
        uint64_t memory_request;
        uint64_t memory_usage; /* working set */
        uint64_t ephemeral_request;
        uint64_t ephemeral_usage;
        uint64_t inodes_usage;
        uint64_t processes;
        int64_t termination_grace_period_seconds;
        const EvictContainer *containers; /* regular containers, for the message */
        size_t n_containers;
        /* pod-level resources with a memory request (kubelet 1.34): the
         * message names the pod (metadata.name) with its usage and that
         * request before the containers */
        const char *name;
        bool pod_memory_request_set;
        uint64_t pod_memory_request;
} EvictPod;

/* Critical or protected: never evicted. */
bool evict_pod_is_exempt(const EvictPod *p);

/*
 * The eviction order of pods for signal under policy. ret_order and
 * ret_exempt each have room for n indexes into pods; exempt pods (critical
 * or protected) go to ret_exempt only, in the same ranking order.
 *   cubelet: QoS (BestEffort, Burstable, Guaranteed), priority (lower first),
 *            usage - request (larger first), key.
 *   kubelet: memory: usage > request first, priority, usage - request;
 *            pids: priority, process count; disk: ephemeral-storage usage >
 *            request first, priority, usage - request; inodes: the same with
 *            no request; then key.
 * The usage is working-set memory for memory signals, ephemeral storage for
 * *.available, inodes for *.inodesFree, processes for pid.available.
 */
int evict_rank(const EvictPod *pods, size_t n, EvictSignal signal, EvictPolicy policy, size_t *ret_order,
               size_t *ret_n_order, size_t *ret_exempt, size_t *ret_n_exempt, CubError *err);

/* ---- Decision ------------------------------------------------------------------------- */

#define EVICT_MESSAGE_MAX 2048

typedef struct EvictDecision {
        bool pressure; /* some threshold is past its grace period */
        bool evict;    /* a pod was chosen */
        size_t pod;    /* index into pods */
        EvictSignal signal;
        bool soft;
        size_t threshold;             /* index into EvictConfig.thresholds */
        int64_t grace_period_seconds; /* 0 for hard; min(pod, evictionMaxPodGracePeriod) for soft */
        const char *reason;           /* "Evicted" */
        char message[EVICT_MESSAGE_MAX];
} EvictDecision;

/*
 * One eviction round: among active thresholds (memory signals first, then
 * configuration order), rank pods for the first one and take the first
 * pod that is not exempt. Message, kubelet's shape:
 *   "The node was low on resource: memory. Threshold quantity: 100Mi,
 *    available: 92124Ki. Container app was using 2213804Ki, request is 0,
 *    has larger consumption of memory. "
 * A pod with a pod-level memory request (pod_memory_request_set) and known
 * usage gets, for memory, "Pod <name> was using <usage>, request is
 * <request>, has larger consumption of memory. " before its containers,
 * whether or not the usage is over the request (1.34's evictionMessage).
 */
int evict_decide(const EvictConfig *c, const EvictState *s, const EvictObservations *obs, const EvictPod *pods,
                 size_t n_pods, EvictDecision *ret, CubError *err);

/* ---- Admission under pressure ---------------------------------------------------------- */

/*
 * kubelet's eviction admit handler: no condition → admit; critical →
 * admit; MemoryPressure only → reject BestEffort unless it tolerates
 * node.kubernetes.io/memory-pressure:NoSchedule; any other condition →
 * reject. On rejection ret_message (NULL, or room for EVICT_MESSAGE_MAX) gets
 * "The node had condition: [DiskPressure]. " and false is returned.
 */
bool evict_admit(const bool conditions[static _EVICT_CONDITION_MAX], EvictQOS qos, bool critical,
                 bool tolerates_memory_pressure, char *ret_message);

/* ---- Signal readers (impure; every root injectable) ------------------------------------ */

/*
 * memory.available of the node: capacity = MemTotal of <proc_root>/meminfo,
 * usage = MemTotal - MemFree, working set = usage - inactive_file of
 * <cgroup_root>/memory.stat (0 when inactive_file > usage), available =
 * capacity - working set.
 */
int evict_read_node_memory(const char *proc_root, const char *cgroup_root, EvictSignalObservation *ret, CubError *err);
/* allocatableMemory.available of <cgroup_root>/<group> (e.g. "kubepods"):
 * capacity = memory.max, or `allocatable` when it reads "max"; working set =
 * memory.current - inactive_file. */
int evict_read_group_memory(const char *cgroup_root, const char *group, uint64_t allocatable,
                            EvictSignalObservation *ret, CubError *err);
/* memory.current - inactive_file of one cgroup (a pod's usage). */
int evict_read_cgroup_working_set(const char *cgroup_root, const char *group, uint64_t *ret, CubError *err);
/* pids.current of one cgroup. */
int evict_read_cgroup_pids(const char *cgroup_root, const char *group, uint64_t *ret, CubError *err);

typedef struct EvictFsStats {
        uint64_t available; /* f_bavail * f_frsize */
        uint64_t capacity;  /* f_blocks * f_frsize */
        uint64_t inodes_free;
        uint64_t inodes;
} EvictFsStats;

int evict_read_fs(const char *path, EvictFsStats *ret, CubError *err);
/* Fills the .available/.inodesFree observations of one filesystem. */
void evict_fs_observe(const EvictFsStats *fs, EvictSignalObservation *ret_bytes, EvictSignalObservation *ret_inodes);

/* pid.available: <proc_root>/sys/kernel/pid_max minus the process count of
 * <proc_root>/loadavg (field 4, "running/total"). */
int evict_read_pids(const char *proc_root, EvictSignalObservation *ret, CubError *err);

/* PSI text and files (<cgroup_root>/memory.pressure, /proc/pressure/io, ...). */
int evict_psi_parse(const char *text, EvictPsi *ret, CubError *err);
int evict_read_psi(const char *path, EvictPsi *ret, CubError *err);

/* A PSI trigger: "some|full <stall µs> <window µs>", window in
 * 500000..10000000, 0 < stall <= window. */
int evict_psi_trigger_validate(const char *trigger, CubError *err);
/* Opens path (a pressure file) O_RDWR|O_NONBLOCK|O_CLOEXEC, writes the
 * validated trigger with its terminating NUL and returns the fd (>= 0); the
 * caller polls it for EPOLLPRI and closes it. */
int evict_psi_trigger_open(const char *path, const char *trigger, CubError *err);
