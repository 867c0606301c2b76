/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The agent's state, shared by the files of agent/ that the loop runs
 * (agent.c: pods and jobs; admission.c: admission and CPUs; pressure.c:
 * eviction). Only the loop touches it. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../cri/cri.h"
#include "../eviction/eviction.h"
#include "admit/admit.h"
#include "agent.h"
#include "api/api.h"
#include "cgroup/cgroup.h"
#include "cpumanager/cpumanager.h"
#include "node.h"
#include "worker/worker.h"

#define USEC_PER_SEC 1000000ULL
#define BACKOFF_BASE_USEC (10 * USEC_PER_SEC)
#define BACKOFF_MAX_USEC (300 * USEC_PER_SEC)
#define BACKOFF_RESET_NSEC (600LL * 1000000000LL)

typedef struct AgentBackoff {
        int64_t seen_finished; /* finished_at of the last termination counted */
        unsigned crashes;
        uint64_t next_usec; /* the container may start again from here */
} AgentBackoff;

typedef struct AgentContainerStatus {
        char id[80];
        char state[16];
        uint32_t restarts;
        int32_t exit_code;
        char reason[32];
        bool terminated_before;
        bool waiting_backoff;
} AgentContainerStatus;

typedef struct AgentPod {
        WorkerSpec *spec;
        bool busy;
        bool wanted;
        bool observed;
        char phase[16];
        char last_error[CUB_ERR_MSG_MAX];
        AgentBackoff *backoff;          /* init containers first, then app containers */
        AgentContainerStatus *statuses; /* same order */
        size_t n;
        /* admission */
        bool admitted; /* in the admission snapshot (assumed or confirmed) */
        bool terminal; /* Failed: rejected, preempted or evicted; never synced again */
        bool evicted;  /* terminal by eviction: admitted again once the pressure is gone */
        char reason[64];
        char message[CUB_ERR_MSG_MAX];
        int64_t kill_grace; /* grace period of the stop of a terminal pod */
        char **victims;     /* preemption victims still stopping; the sync waits for them */
        size_t n_victims;
        unsigned pool_gen; /* the shared-pool generation its running containers have */
} AgentPod;

#define AGENT_EVICTIONS_KEPT 16

typedef struct AgentEviction {
        char key[320];
        char uid[128];
        char signal[40];
        char message[EVICT_MESSAGE_MAX];
        int64_t grace;
        uint64_t onset_boot_ms;   /* CLOCK_BOOTTIME: the first sample that met the threshold */
        uint64_t decided_boot_ms; /* the decision */
        uint64_t stopped_boot_ms; /* the victim's containers were stopped (0 while stopping) */
} AgentEviction;

typedef struct AgentError {
        char *source;
        char *message;
} AgentError;

struct Agent {
        AgentOptions opt;
        const PodKubeletConfig *kc; /* the caller's: AgentOptions outlive the agent */
        AgentNode node;
        CgOptions cg;
        sd_event *event;
        CriClient *cri;
        CgWriter *writer;
        WorkerPool *pool;
        ApiServer *api;
        sd_event_source *worker_src, *inotify_src, *relist_timer, *rescan_timer, *debounce_timer;
        AgentPod **pods;
        size_t n_pods;
        AgentError *errors;
        size_t n_errors;
        char **killing; /* UIDs with a kill job in flight */
        size_t n_killing;
        bool relist_busy, relist_again;
        bool runtime_ready, runtime_known;
        char runtime_error[CUB_ERR_MSG_MAX];
        char runtime_version[256];
        bool notified_ready;
        char *log_root;
        /* admission and the CPU manager (admission.c) */
        CpumgrTopology topo;
        CpumgrState *cpu;
        AdmitSnapshot *snap;
        AdmitOptions admit_opt;
        char *ledger_path;
        char *cpu_state_path;
        AdmitLedgerEntry *ledger; /* what the previous run had admitted */
        size_t n_ledger;
        unsigned pool_gen;
        /* eviction (pressure.c) */
        EvictConfig evict_cfg;
        EvictState evict_state;
        EvictObservations evict_obs;
        bool evict_conditions[_EVICT_CONDITION_MAX];
        uint64_t evict_sample_usec;
        const char *imagefs_path; /* /var/lib/containerd, else the state dir */
        char *psi_trigger;
        sd_event_source *evict_timer, *psi_node_src, *psi_pods_src, *memevents_src;
        char evicting[128]; /* UID of the victim being stopped ("" when none) */
        AgentEviction evictions[AGENT_EVICTIONS_KEPT];
        size_t n_evictions; /* total decisions; the last AGENT_EVICTIONS_KEPT are kept */
        uint64_t evict_rounds;
};

uint64_t agent_now_usec(void);
uint64_t agent_realtime_msec(void);
uint64_t agent_boottime_msec(void);

/* agent.c */
AgentPod *agent_find_pod(Agent *a, const char *uid);
void agent_submit_sync(Agent *a, AgentPod *p, uint64_t now);
/* Makes p terminal (phase Failed with reason and message) and stops its
 * containers with the grace period. Returns whether a stop is under way
 * (false: nothing of the pod runs). */
bool agent_pod_fail(Agent *a, AgentPod *p, const char *reason, const char *message, int64_t grace);
/* A terminal pod becomes a new attempt: statuses and back-off reset. */
void agent_pod_reset(AgentPod *p);

/* admission.c: the admission snapshot, the ledger and the CPU manager */
int agent_admission_init(Agent *a, CubError *err);
void agent_admission_done(Agent *a);
/* The host's listening sockets into the snapshot: once before a batch of
 * admissions. */
void agent_admission_probe_host(Agent *a);
/* Decides on a new pod (or restores one the previous run had admitted);
 * returns true when its sync may start now. A rejected pod is made
 * terminal; preemption victims are stopped. */
bool agent_admission_admit(Agent *a, AgentPod *p);
/* Releases what an admitted pod holds (it ended, went away or failed). */
void agent_admission_forget(Agent *a, AgentPod *p);
void agent_admission_confirm(Agent *a, AgentPod *p);
/* After the first scan: drops CPU assignments of pods that are gone. */
void agent_admission_settle(Agent *a);
/* Each container's cpuset, init containers first (malloc'd strings). */
char **agent_admission_cpusets(Agent *a, const AgentPod *p);
void agent_admission_cpusets_free(char **l, size_t n);
/* Running pods whose shared containers lag behind the pool get an update. */
void agent_admission_reconcile(Agent *a);
void agent_admission_status(Agent *a, void *json_pod, const AgentPod *p);
void agent_admission_node_status(Agent *a, void *json_doc);

/* pressure.c: signals, node conditions and evictions */
int agent_pressure_init(Agent *a, CubError *err);
void agent_pressure_done(Agent *a);
/* Starts sampling and the PSI/memory.events sources (the loop and
 * kubepods exist) and takes the first sample. */
void agent_pressure_attach(Agent *a);
/* A kill job of uid finished. */
void agent_pressure_stopped(Agent *a, const char *uid);
void agent_pressure_status(Agent *a, void *json_doc);
/* The allocatable memory after the hard memory.available threshold. */
uint64_t agent_pressure_hard_memory(Agent *a, uint64_t capacity);
