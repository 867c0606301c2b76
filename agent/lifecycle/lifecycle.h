/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/lifecycle: what the loop and the managers share about a pod's life.
 *
 *  - The pod table entry (LcPod) with typed phases and container states,
 *    and the pure status computation from what the runtime holds
 *    (lc_pod_observe: restart back-off, init/sidecar gating, phase).
 *  - The manager table: every per-pod manager (CPU manager and admission
 *    ledger, pressure/eviction; later devices, volumes, probes) is one
 *    LcManagerVtable. The loop calls the managers; a manager never calls the
 *    loop: it returns decisions (LcAction) that the loop applies, either as
 *    the result of a hook or queued through LcEnv.act for the decisions it
 *    takes on its own (a timer, a PSI trigger). The loop applies queued
 *    actions from a deferred event, never inside the manager's call.
 *
 * Hook order for one pod: admit → prepare_container (each sync job) →
 * pod_started (first successful sync) → pod_removed (it ended, was rejected,
 * evicted or preempted, or went away) → pod_stopped (its containers are
 * stopped). After a restart, admit sees the pods of the previous run first
 * and restore runs once after the first scan of the sources. pods_changed
 * is about the whole table: once before the first scan, then whenever the
 * sources' merge changed the table.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-event.h>

#include "../pod/pod.h"
#include "../util/err.h"
#include "../util/retry.h"
#include "../worker/worker.h"

typedef enum LcPhase {
        LC_PHASE_PENDING,
        LC_PHASE_RUNNING,
        LC_PHASE_SUCCEEDED,
        LC_PHASE_FAILED,
        _LC_PHASE_MAX,
        _LC_PHASE_INVALID = -22,
} LcPhase;

typedef enum LcContainerState {
        LC_CONTAINER_WAITING,
        LC_CONTAINER_CREATED,
        LC_CONTAINER_RUNNING,
        LC_CONTAINER_TERMINATED,
        LC_CONTAINER_TERMINATING,
        _LC_CONTAINER_STATE_MAX,
        _LC_CONTAINER_STATE_INVALID = -22,
} LcContainerState;

const char *lc_phase_to_string(LcPhase p);
const char *lc_container_state_to_string(LcContainerState s);

/* room for a pod's reason message (kubelet's eviction messages name every container) */
#define LC_MESSAGE_MAX 2048
#define LC_REASON_MAX 320

#define LC_BACKOFF_BASE_USEC (10ULL * 1000000ULL)
#define LC_BACKOFF_MAX_USEC (300ULL * 1000000ULL)
#define LC_BACKOFF_RESET_NSEC (600LL * 1000000000LL)

/* kubelet's crash back-off after the crashes-th crash in a row: 10 s
 * doubling to 300 s (the first restart itself is at once) */
uint64_t lc_backoff_delay(unsigned crashes);

typedef struct LcBackoff {
        int64_t seen_finished; /* finished_at of the last termination counted */
        unsigned crashes;
        uint64_t next_usec; /* the container may start again from here */
} LcBackoff;

typedef struct LcContainerStatus {
        char id[80];
        LcContainerState state;
        uint32_t restarts;
        int32_t exit_code;
        char reason[32];
        bool terminated_before;
        bool waiting_backoff;
        /* security context: the last sync could not create it (kubelet's
         * CreateContainerConfigError, e.g. runAsNonRoot): "" when none */
        char config_error[512];
        bool oom_killed_now;             /* this observation saw a new OOM kill */
        int64_t started_at, finished_at; /* unix ns, the runtime's (0: unknown) */
        /* probes and hooks: what the probes said of the container `id`
         * (LC_ACTION_PROBE); without probe_known, started/ready follow
         * running alone */
        bool probe_known, probe_started, probe_ready;
        char message[160]; /* why it was last killed (liveness, postStart) */
        /* its last termination's message: the runtime's and the container's
         * own (terminationMessagePath, FallbackToLogsOnError); NULL: none */
        char *term_message;
} LcContainerStatus;

/* Latencies of the pod's start, CLOCK_MONOTONIC µs; 0 = not (yet) seen. */
typedef struct LcLatency {
        uint64_t event;   /* the source event that brought the pod (inotify) */
        uint64_t cgroup;  /* its pod cgroup was written */
        uint64_t sandbox; /* RunPodSandbox was sent */
        uint64_t started; /* its containers were started */
} LcLatency;

/* probes and hooks: the pod conditions whose transitions are tracked */
typedef enum LcPodCond {
        LC_POD_COND_SANDBOX, /* PodReadyToStartContainers */
        LC_POD_COND_INITIALIZED,
        LC_POD_COND_CONTAINERS_READY,
        LC_POD_COND_READY,
        _LC_POD_COND_MAX,
        _LC_POD_COND_INVALID = -22,
} LcPodCond;

/* A pod's event, as kubelet records one (kubectl describe's Events): the
 * same reason and message again counts up. Times: CLOCK_MONOTONIC µs. */
typedef struct LcEvent {
        bool warning; /* type Warning, else Normal */
        char reason[40];
        char *message;
        unsigned count;
        uint64_t first_usec, last_usec;
} LcEvent;

/* at most this many a pod (the oldest goes), as a bounded ring */
#define LC_EVENTS_MAX 12

/* The pod's record (LcPod, below) has one writer, agent/lifecycle: make
 * lint builds every other product file with LC_POD_READ_ONLY, which makes
 * LC_RO const. */
#ifdef LC_POD_READ_ONLY
#define LC_RO const
#else
#define LC_RO
#endif

/* In-place resize (KEP-1287): the spec is what is allocated; the source's
 * pod waits in want until it fits; the runtime has it once actuated. */
typedef struct LcResize {
        WorkerSpec *want;             /* the source's pod (same identity, other cpu/memory), not allocated yet */
        char pending[16];             /* want's PodResizePending reason: "Deferred", "Infeasible"; "" */
        char message[LC_MESSAGE_MAX]; /* ... and its message */
        bool in_progress;             /* allocated, not actuated yet (PodResizeInProgress) */
        char error[LC_MESSAGE_MAX];   /* the last actuation's error ("": none) */
        LC_RO bool *restart;          /* per container: stopped for the resize (RestartContainer), then started */
        uint64_t next_usec;           /* CLOCK_MONOTONIC: no try before (after a Deferred one or an error) */
        unsigned tries;               /* failed actuations in a row (its back-off) */
        uint64_t started_usec;        /* the allocation's time, for the latency */
        WorkerSpec *actual;           /* while in progress: the spec the running containers still have */
        int64_t pending_since, progress_since; /* unix s: the conditions' lastTransitionTime */
} LcResize;

/* LcPod's fields have one writer, agent/lifecycle: the others change a pod
 * through its named transitions (lifecycle.h's lc_pod_*). make lint builds
 * every other product file with LC_POD_READ_ONLY, which makes each field
 * (and what its own arrays hold) const, so that the compiler refuses a
 * write anywhere else (tests/lint.sh). */
typedef struct LcPod {
        WorkerSpec *LC_RO spec;
        LC_RO bool busy;     /* a job of it is in flight */
        LC_RO bool wanted;   /* a source still defines it (written by the loop's merge alone) */
        LC_RO bool observed; /* the runtime holds something of it */
        LC_RO LcPhase phase;
        LC_RO LcBackoff *LC_RO backoff;          /* init containers first, then app containers */
        LC_RO LcContainerStatus *LC_RO statuses; /* same order */
        LC_RO size_t n;
        /* ephemeral containers (kubectl debug): each one's status, spec order,
         * and the back-off of the tries to start one the runtime lacks */
        LC_RO LcContainerStatus *LC_RO eph;
        LC_RO LcBackoff *LC_RO eph_backoff;
        LC_RO size_t n_eph;
        /* the source's pod of the same hash with more of them or other labels or
         * annotations, until no job holds the spec (agent/loop/spec-update.c) */
        WorkerSpec *LC_RO spec_want;
        LC_RO bool admitted; /* admitted by every manager (assumed or confirmed) */
        LC_RO bool started;  /* pod_started was sent */
        LC_RO bool terminal; /* Failed: rejected, preempted or evicted; never synced again */
        LC_RO bool evicted;  /* terminal by eviction: admitted again once the pressure is gone */
        LC_RO bool rejected; /* terminal by admission (kubelet's rejectPod: a status of phase, reason, message) */
        LC_RO bool
                api_terminal; /* terminal in the API server before this process saw it: never run, status left alone */
        LC_RO char reason[LC_REASON_MAX];
        LC_RO char message[LC_MESSAGE_MAX];
        /* 0: its first admission; lc_pod_reset counts the new attempts */
        LC_RO unsigned attempt;
        LC_RO int64_t kill_grace; /* grace period of the stop of a terminal pod */
        /* activeDeadlineSeconds (0: none): its spec's, then what the API
         * server says while the pod runs (the hash leaves it out) */
        LC_RO int64_t active_deadline_s;
        /* readiness gates: the status of the condition each one names, as
         * the API server last gave it (LcGate, spec order; NULL: none) */
        LC_RO unsigned char *LC_RO gates;
        LC_RO char *LC_RO *LC_RO victims; /* preemption victims still stopping; the sync waits for them */
        LC_RO size_t n_victims;
        LC_RO unsigned resources_gen;    /* the container-resources generation its running containers have */
        LC_RO int64_t cpu_request_milli; /* the pod's effective cpu request */
        LC_RO int64_t memory_request;    /* the pod's effective memory request, bytes (MemoryQoS's QoS sums) */
        LC_RO uint64_t *LC_RO numa;      /* LcAdmitResult.numa of its admission, NULL = no hints */
        LC_RO LcLatency latency;
        /* the manifest file's identity when it was read (st_dev, st_ino,
         * size, mtime and ctime in ns; all 0: not from a file): the
         * periodic rescan does not decode an unchanged file again */
        LC_RO uint64_t file_dev, file_ino;
        LC_RO int64_t file_size, file_mtime_ns, file_ctime_ns;
        LC_RO CubRetry sync_retry; /* after a failed sync: no new one before its next_usec (cub_retry_pod_sync) */
        /* the last sync's typed failure (WORKER_FAIL_NONE after a good one):
         * kubelet's waiting reasons come from it (agent/lifecycle/reasons.c) */
        LC_RO WorkerFailKind failure;
        LC_RO size_t failure_container; /* SIZE_MAX: the pod */
        LC_RO bool network_wait;        /* its sync waits for the runtime's network (NetworkNotReady recorded) */
        LC_RO LcEvent *LC_RO events;    /* oldest first; NULL until the first */
        LC_RO size_t n_events;
        /* network */
        LC_RO char pod_ip[64]; /* of its ready sandbox, "" = none (host network: the node's IP is shown) */
        /* probes and hooks: each condition's value and when it last changed
         * (unix s; 0: not computed yet), by lc_pod_track_conditions() */
        LC_RO bool cond_value[_LC_POD_COND_MAX];
        LC_RO int64_t cond_since[_LC_POD_COND_MAX];
        LC_RO LcResize resize; /* in-place resize (agent/loop/resize.c) */
        /* CLOCK_REALTIME ns when a source first gave it (kubelet's
         * kubernetes.io/config.seen, which its mirror pod carries) */
        LC_RO int64_t seen_ns;
} LcPod;

/* ---- kubelet's words (agent/lifecycle/reasons.c) -------------------------- */

/* Records an event on p at now (CLOCK_MONOTONIC µs): a new one, or the
 * count of the same reason and message raised. */
void lc_pod_event(LcPod *p, bool warning, const char *reason, uint64_t now, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));
void lc_pod_events_free(LcPod *p);

/* The waiting reason of container k (init containers first) as kubelet
 * reports it, and its message ("" when kubelet gives none): NULL when the
 * container is not waiting. The one mapping behind cubelet status, /pods and
 * cubelet describe. */
const char *lc_container_waiting(const LcPod *p, size_t k, char *message, size_t size);

/* A sync ended: its typed failure kept on p (r < 0) or cleared, and the
 * event kubelet records for it. */
void lc_pod_sync_result(LcPod *p, int r, WorkerFailKind fail, size_t container, const char *error, uint64_t now);
/* A sync's image events, at the times they happened: Pulling and Pulled
 * ("Successfully pulled image ..."), or Pulled "Container image ... already
 * present on machine". */
void lc_pod_pull_events(LcPod *p, const WorkerPull *pulls, size_t n);

/* Takes a reference on spec. */
int lc_pod_new(WorkerSpec *spec, LcPod **ret);
/* p's spec is now spec (a reference is taken, the old one dropped), and
 * its effective requests spec's: an in-place resize */
void lc_pod_set_spec(LcPod *p, WorkerSpec *spec);
LcPod *lc_pod_free(LcPod *p);
/* A terminal pod becomes a new attempt: statuses and back-off reset. */
void lc_pod_reset(LcPod *p);
/* A terminal pod's containers as its stop left them (o: the kill job's
 * record): each one recorded is terminated with its exit code, reason,
 * times and message, as kubelet shows the stopped containers it keeps. */
void lc_pod_observe_final(LcPod *p, const WorkerObserved *o);

/* When the pod has been active for its activeDeadlineSeconds, counted from
 * its start (status.startTime: latency.event), CLOCK_MONOTONIC µs; 0: no
 * deadline (kubelet's activeDeadlineHandler). */
uint64_t lc_pod_deadline_usec(const LcPod *p);

/* Phase Failed with reason and message; running containers are Terminating. */
void lc_pod_set_failed(LcPod *p, const char *reason, const char *message, int64_t grace);
int lc_pod_add_victim(LcPod *p, const char *uid);
/* Drops uid from the victims; returns whether it was one. */
bool lc_pod_drop_victim(LcPod *p, const char *uid);
size_t lc_pod_restarts(const LcPod *p);

/* ---- the named transitions: every write of an LcPod outside pod.c and
 * reasons.c (transitions.c, resize.c) ------------------------------------ */

/* a source gave it: kubelet's config.seen (CLOCK_REALTIME ns) and when the
 * source saw it (CLOCK_MONOTONIC µs, latency.event) */
void lc_pod_seen(LcPod *p, int64_t seen_ns, uint64_t event_usec);
/* whether a source still defines it (the loop's merge alone decides it) */
void lc_pod_set_wanted(LcPod *p, bool wanted);
/* the manifest file's identity when it was read (all 0: none) */
void lc_pod_set_file_id(LcPod *p, uint64_t dev, uint64_t ino, int64_t size, int64_t mtime_ns, int64_t ctime_ns);
/* activeDeadlineSeconds as its source says now; whether it changed */
bool lc_pod_set_active_deadline(LcPod *p, int64_t seconds);
/* every manager admitted it; its running containers are to have the
 * container-resources generation gen */
void lc_pod_admitted(LcPod *p, unsigned gen);
/* the managers are to let go of it; false: it was not admitted */
bool lc_pod_unadmit(LcPod *p);
/* its admission's NUMA hints (takes numa) */
void lc_pod_set_numa(LcPod *p, uint64_t *numa);
/* terminal by admission (kubelet's rejectPod), after lc_pod_set_failed */
void lc_pod_rejected(LcPod *p);
/* the stop that makes it terminal is an eviction's, or not */
void lc_pod_set_evicted(LcPod *p, bool evicted);
/* terminal in the API server before this process saw it: phase
 * "Succeeded" or "Failed" with the API server's reason and message */
void lc_pod_api_terminal(LcPod *p, const char *phase, const char *reason, const char *message);
/* a job of it went to the worker pool; gen: the container-resources
 * generation an UPDATE job gives its containers (0: a sync, which keeps it) */
void lc_pod_submitted(LcPod *p, unsigned gen);
/* a sync could not be submitted (its containers' configs): a failed sync,
 * retried by the sync's back-off; whether the journal should hear of it */
bool lc_pod_sync_refused(LcPod *p, WorkerFailKind fail, size_t container, const char *error, uint64_t now,
                         uint32_t draw);
/* A sync job of p ended (j): no longer busy, its latencies, its first good
 * sync (started), the retry (log_error: a new error for the journal;
 * log_cleared: synced again), its pulls' events, its typed failure and the
 * containers it could not create. */
typedef struct LcSyncDone {
        bool started, log_error, log_cleared;
} LcSyncDone;
LcSyncDone lc_pod_sync_done(LcPod *p, const WorkerJob *j, uint64_t now, uint32_t draw);
/* an UPDATE job ended; a failed one not of a resize is tried again (its
 * generation forgotten) */
void lc_pod_update_done(LcPod *p, bool retry);
/* the pod cgroup was written at usec (latency.cgroup) */
void lc_pod_cgroup_written(LcPod *p, uint64_t usec);
/* whether the runtime holds something of it */
void lc_pod_set_observed(LcPod *p, bool observed);
/* its sync waits for the runtime's network (error: the runtime's, NULL or
 * "": ready); the first wait records NetworkNotReady; whether it waits */
bool lc_pod_network_wait(LcPod *p, const char *error, uint64_t now);
/* probes and hooks: what container k's probes said of container id;
 * false: k no longer is that container */
bool lc_pod_probe_result(LcPod *p, size_t k, const char *id, bool started, bool ready, int64_t now_s);
/* why container k was last killed (liveness, postStart) */
void lc_pod_container_killed(LcPod *p, size_t k, const char *message);
/* the source's pod of the same hash with more ephemeral containers or
 * other labels or annotations (takes spec) */
void lc_pod_set_spec_want(LcPod *p, WorkerSpec *spec);
/* spec_want became the spec (after lc_pod_set_spec): dropped, and a failed
 * sync is tried again at once (kubelet's UpdatePod) */
void lc_pod_spec_applied(LcPod *p);

/* in-place resize (resize.c): the checkpoint's allocation is the spec
 * (in_progress: not actuated yet), and the file is decoded again */
void lc_resize_restored(LcPod *p, bool in_progress, uint64_t now, int64_t now_s);
/* nothing waits any more / spec waits (takes it) */
void lc_resize_withdraw(LcPod *p);
void lc_resize_want(LcPod *p, WorkerSpec *spec);
/* the wanted resize does not fit: PodResizePending reason and message,
 * tried again from next_usec; whether reason or message changed */
bool lc_resize_pending(LcPod *p, const char *reason, const char *message, uint64_t next_usec, int64_t now_s);
/* before the wanted spec becomes p's: which containers restart for it
 * (restart[k], p->n of them), and the spec that runs until it is actuated */
void lc_resize_allocating(LcPod *p, const bool *restart);
/* after: allocated, to be actuated */
void lc_resize_allocated(LcPod *p, uint64_t now, int64_t now_s);
/* its actuation could not be submitted: tried again from next_usec */
void lc_resize_retry_at(LcPod *p, uint64_t next_usec);
/* its actuation failed: the error kept, its back-off (1 s doubling, up to
 * max_usec); whether the error is new */
bool lc_resize_failed(LcPod *p, const char *error, uint64_t now, uint64_t max_usec);
/* actuated: done */
void lc_resize_actuated(LcPod *p);

/*
 * Updates statuses, back-off and phase from what the runtime holds for the
 * pod (o: NULL when nothing); now is CLOCK_MONOTONIC µs. Returns whether
 * the pod needs a sync job now. Pure: no I/O.
 */
bool lc_pod_observe(LcPod *p, const WorkerObserved *o, uint64_t now);

/* Whether the pod, as last observed, waits on nothing the agent must
 * relist for on time: no job in flight, no back-off or retry running, and
 * every container running or ended for good (or, for a terminal pod,
 * nothing left in the runtime). A node whose pods are all steady relists
 * on the runtime's events and a long timer (agent/jobs.c). Pure. */
bool lc_pod_steady(const LcPod *p);

/* probes and hooks: a container's `started` and `ready` as kubelet
 * reports them (running, and what its probes said, or true without
 * probes), and the pod's conditions. */
bool lc_container_started(const LcPod *p, size_t k);
bool lc_container_ready(const LcPod *p, size_t k);
typedef struct LcPodConditions {
        bool initialized, containers_ready, ready;
        const char *initialized_reason; /* "ContainersNotInitialized", "PodCompleted" or NULL */
        const char *ready_reason;       /* "ContainersNotReady", "PodCompleted", "PodFailed" or NULL */
        char message[LC_MESSAGE_MAX];   /* "containers with unready status: [a b]" */
        char init_message[LC_MESSAGE_MAX];
        /* the containers are ready, a readiness gate is not: Ready's own
         * reason ("ReadinessGatesNotReady") and message, NULL otherwise */
        const char *gates_reason;
        char gates_message[LC_MESSAGE_MAX];
} LcPodConditions;
/* readiness gates: a gate's condition in the pod's status */
typedef enum LcGate { LC_GATE_NONE, LC_GATE_TRUE, LC_GATE_FALSE, LC_GATE_UNKNOWN } LcGate;
/* Takes the gates' condition statuses of pod (pod->gate_status, the same
 * readiness gates as p's spec); true when one changed. */
bool lc_pod_set_gates(LcPod *p, const Pod *pod);
void lc_pod_conditions(const LcPod *p, LcPodConditions *ret);
/* Records a transition of each condition at now (unix s); returns whether
 * one changed. */
bool lc_pod_track_conditions(LcPod *p, int64_t now);

/* ---- the manager table ---------------------------------------------------- */

typedef enum LcActionKind {
        LC_ACTION_FAIL,              /* make the pod terminal and stop it (reason, message, grace) */
        LC_ACTION_CONDITIONS,        /* node conditions changed (conditions[]) */
        LC_ACTION_RESOURCES_CHANGED, /* running containers' resources changed: update them */
        LC_ACTION_NODE_RESOURCE,     /* the node's allocatable of resource is now quantity */
        LC_ACTION_WAIT,              /* pod waiter starts only once pod uid (stopping) has stopped */
        LC_ACTION_EVENT,             /* an event of pod uid (warning, reason, message): kubelet's recorder */
        /* probes and hooks */
        LC_ACTION_PROBE,             /* container (index) of uid: started and ready as its probes say */
        LC_ACTION_RESTART_CONTAINER, /* kill container_id with grace (message); it restarts per restartPolicy */
        /* a manager's answer that comes later (devices: the plugin's Allocate) */
        LC_ACTION_HOLD,    /* pod waiter does not sync until the hold uid is released */
        LC_ACTION_RELEASE, /* the hold uid is released: the pods it held sync */
        LC_ACTION_REJECT,  /* admitted pod uid is rejected after all (reason, message), as at admission */
        /* the pod cgroup of uid was written at usec: its start latency */
        LC_ACTION_CGROUP_WRITTEN,
        _LC_ACTION_MAX,
        _LC_ACTION_INVALID = -22,
} LcActionKind;

typedef enum LcCondition {
        LC_CONDITION_MEMORY_PRESSURE,
        LC_CONDITION_DISK_PRESSURE,
        LC_CONDITION_PID_PRESSURE,
        _LC_CONDITION_MAX,
        _LC_CONDITION_INVALID = -22,
} LcCondition;

typedef struct LcAction {
        LcActionKind kind;
        char uid[128];
        char reason[LC_REASON_MAX];
        char message[LC_MESSAGE_MAX];
        int64_t grace;    /* -1: the pod's own terminationGracePeriodSeconds */
        bool evicted;     /* FAIL: by eviction (admitted again once the pressure is gone) */
        bool warning;     /* EVENT: type Warning, else Normal */
        char waiter[128]; /* FAIL by preemption: the admitted pod that waits for this victim */
        bool conditions[_LC_CONDITION_MAX];
        char resource[128]; /* NODE_RESOURCE; FAIL: the eviction signal or the preemption's resource */
        int64_t quantity;
        /* probes and hooks: PROBE, RESTART_CONTAINER */
        size_t container; /* init containers first */
        char container_id[80];
        bool started, ready;
        uint64_t usec; /* CGROUP_WRITTEN: CLOCK_MONOTONIC µs */
} LcAction;

typedef struct LcActions {
        LcAction *items;
        size_t n;
} LcActions;

int lc_actions_push(LcActions *l, const LcAction *a);
void lc_actions_done(LcActions *l);

/* What the loop gives every manager; the pointers stay valid for the
 * manager's life. */
struct VolApiFile; /* agent/volumes/volumes.h */

typedef struct LcEnv {
        sd_event *event;
        const char *cgroup_root;
        const char *sys_root; /* the CPU topology's sysfs (/sys) */
        const char *state_dir;
        const char *node_name;
        const PodKubeletConfig *kc;
        const CgOptions *cg; /* the node's capacity and the kubepods values */
        /* the node's cgroup writer, created by the loop (NULL: none, no
         * cgroup is written); blocking writes, on the loop */
        CgWriter *writer;
        /* the runtime, for a manager that must read what runs before any
         * admission (blocking calls: at start only) */
        CriClient *cri;
        /* node conditions as the loop last applied them */
        const bool *conditions;
        /* the pod table, read-only (a manager changes a pod through its
         * decisions: LcAction) */
        const LcPod *const *(*pods)(void *loop, size_t *ret_n);
        /* queues a decision the manager took on its own; applied by the loop
         * after the manager's call has returned */
        void (*act)(void *loop, const LcAction *a);
        /* the files the API server provides for a projected volume's item (a
         * service account token, a ConfigMap's keys): VolNode.api_files's
         * function; NULL without an API server */
        int (*api_files)(void *loop, const Pod *pod, const PodDownwardFile *f, struct VolApiFile **ret, size_t *ret_n,
                         CubError *err);
        /* changes each time the content of such a file may have changed (a
         * token renewed, a ConfigMap changed): the volume manager writes the
         * pods' projected volumes again */
        uint64_t (*api_generation)(void *loop);
        /* ends the loop (cubelet exits): for a manager that held a SIGTERM
         * (LcManagerVtable.terminate) once its work is done */
        void (*quit)(void *loop);
        void *loop;
} LcEnv;

/* A container's share of the CRI container config, filled by the managers
 * (each sets what it owns: the CPU manager the cpuset, the device manager
 * devices, mounts, envs, annotations and a label). */
typedef WorkerContainerConfig LcContainerConfig;

void lc_container_config_done(LcContainerConfig *c);

typedef struct LcAdmitResult {
        bool admit;
        char reason[LC_REASON_MAX];
        char message[LC_MESSAGE_MAX];
        /* refused because exclusive CPUs could not be allocated (the CPU
         * manager's Allocate): kubelet counts it as a pinning error */
        bool pinning_error;
        /* topology hints for the managers after this one: per container
         * (init first), the NUMA nodes of its exclusive CPUs (bit n = node
         * n, 0 = none); malloc'd, the loop keeps it in LcPod.numa */
        uint64_t *numa;
} LcAdmitResult;

typedef struct LcManagerVtable {
        const char *name;
        int (*new)(const LcEnv *env, void **ret, CubError *err);
        void (*free)(void *m);
        /* the loop's sources exist: start timers and triggers */
        void (*attach)(void *m);
        /* once before a batch of admissions */
        void (*admit_batch)(void *m);
        /* a new pod: admit (may reserve) or reject; victims to stop first are
         * queued as FAIL actions naming the pod as their waiter */
        int (*admit)(void *m, const LcPod *p, LcAdmitResult *ret, CubError *err);
        /* container k (init containers first) of an admitted pod */
        int (*prepare_container)(void *m, const LcPod *p, size_t k, LcContainerConfig *cfg, CubError *err);
        void (*pod_started)(void *m, const LcPod *p);
        void (*pod_removed)(void *m, const LcPod *p);
        void (*pod_stopped)(void *m, const char *uid);
        /* after the first scan: drop what belongs to pods that are gone */
        void (*restore)(void *m);
        /* its part of a pod's status (json_t *) and of the node's */
        void (*pod_status)(void *m, const LcPod *p, void *json_pod);
        void (*node_status)(void *m, void *json_doc);
        /* its part of a container's status in the API (/pods, the API
         * server), and a number it changes whenever that part may have */
        void (*container_api_status)(void *m, const LcPod *p, const char *container, void *json_status);
        uint64_t (*api_generation)(void *m);
        /* the node's allocatable of an extended resource changed (devices) */
        void (*node_resource)(void *m, const char *resource, int64_t allocatable);
        /* writes what it holds unsaved (its checkpoints): the loop calls it
         * before it asks the runtime for a pod and after each event, so that
         * admission's fsyncs are not on the way from a manifest to its cgroup */
        void (*flush)(void *m);
        /* its families for /metrics (Prometheus text, kubelet's names),
         * written on the loop when the HTTP API renders a snapshot */
        void (*metrics)(void *m, FILE *f);
        /* the pod table changed: once before the first scan of the sources
         * (no pod yet), then after each merge of the sources, once the pods
         * no source wants are gone; what it derives from the whole table
         * (LcEnv.pods: the QoS groups' values) */
        void (*pods_changed)(void *m);
        /* in-place resize: admitted pod p asks for the resources of want
         * (same UID); ret->admit: it now holds want (want stays valid while
         * p's spec is want's), else reason "Deferred" or "Infeasible" and
         * kubelet's message */
        int (*resize)(void *m, const LcPod *p, const Pod *want, LcAdmitResult *ret, CubError *err);
        /* SIGTERM: true when the manager has work to finish before cubelet
         * exits (the graceful node shutdown of a system going down); it
         * calls LcEnv.quit when that is done */
        bool (*terminate)(void *m);
} LcManagerVtable;
