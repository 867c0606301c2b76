/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The agent's state, shared by the files of agent/ that the loop runs
 * (agent.c: pods and jobs; admission.c: admission and CPUs; pressure.c:
 * eviction). Only the loop touches it. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../cri/cri.h"
#include "agent.h"
#include "api/api.h"
#include "cgroup/cgroup.h"
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
} AgentPod;

typedef struct AgentError {
        char *source;
        char *message;
} AgentError;

struct Agent {
        AgentOptions opt;
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
};

uint64_t agent_now_usec(void);
uint64_t agent_realtime_msec(void);
