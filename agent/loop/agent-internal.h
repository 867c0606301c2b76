/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The loop's state, shared by the loop's files: agent.c (lifecycle, event
 * sources), jobs.c (the worker's results, the relist), relist-plan.c and
 * killtable.c (the relist's decisions, pure), podtable.c (the pod table),
 * merge.c (the sources' queue: the only writer of the table's membership),
 * source-dir.c and source-http.c (the sources: read, decode, push),
 * actions.c (the decisions of managers), managers.c (every call into the
 * manager table), serve.c and status-json.c (what the API and the status
 * socket show). Only the loop touches it. Managers never see it: they get
 * an LcEnv (agent/lifecycle) and return decisions. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../../cri/cri.h"
#include "../api/api.h"
#include "../api/http.h"
#include "../api/metrics.h"
#include "../api/pods.h"
#include "../cgroup/cgroup.h"
#include "../config/podsrc.h"
#include "../lifecycle/lifecycle.h"
#include "../node/machine.h"
#include "../util/hashmap.h"
#include "../util/time.h"
#include "../worker/worker.h"
#include "agent.h"
#include "killtable.h"

typedef struct AgentError {
        char *source;
        char *message;
} AgentError;

/* A manifest file whose IN_CREATE/IN_MODIFY burst is being coalesced. */
typedef struct AgentPendingFile {
        char *name;
        uint64_t event_usec; /* the first event of the burst */
} AgentPendingFile;

typedef struct AgentUpdate AgentUpdate; /* merge.c */

/* What the runtime holds and how the loop follows it: written by jobs.c
 * alone (the relist, the worker's results, the kill table's outcomes),
 * read by the others. */
typedef struct AgentRuntime {
        bool ready, known;
        char error[CUB_ERR_MSG_MAX];
        /* the runtime's conditions (CRI Status, asked every 5 s with a
         * relist): network_error is kubelet's "container runtime network not
         * ready: ..." while NetworkReady is false, "" otherwise */
        uint64_t status_asked_usec;
        char network_error[768];
        bool relist_busy, relist_again;
        /* the evented relist: containerd's event stream, whether the last
         * relist found every pod settled, and until when (CLOCK_MONOTONIC
         * µs) relists stay at relist_usec after an event */
        CriEvents *events;
        sd_event_source *events_src;
        bool relist_steady;
        uint64_t relist_hot_until;
        KillTable kills;        /* the pods being stopped, their retries (agent/loop/killtable.h) */
        uint64_t kill_next_due; /* the earliest retry of a stop (CLOCK_MONOTONIC µs), UINT64_MAX: none */
} AgentRuntime;

/* The sources' own state: written by source-dir.c, source-http.c and
 * merge.c (the queue), read by status-json.c. */
typedef struct AgentSources {
        AgentError *errors; /* the manifest directory's */
        size_t n_errors;
        PodsrcHttp *url_source; /* the manifest URL, NULL without one */
        AgentError *url_errors; /* [0]: the last fetch's error ("" if none); then the set's */
        size_t n_url_errors;
        AgentUpdate *updates_head, *updates_tail; /* merge.c's queue */
        bool updates_draining;
        AgentPendingFile *pending; /* files whose event burst is coalesced */
        size_t n_pending;
        /* the directory's watch is gone (the directory was deleted or
         * renamed away, or was not there at start): made again by the next
         * rescan that finds the directory */
        bool dir_unwatched;
        char *dir_error; /* the last rescan's error, logged once ("" or NULL: none) */
} AgentSources;

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
        sd_event_source *worker_src, *inotify_src, *relist_timer, *rescan_timer, *debounce_timer, *actions_src;
        LcPod **pods;
        size_t n_pods;
        CubHashmap *by_uid;          /* the newest pod of each UID */
        size_t n_running;            /* as of the last relist */
        int64_t qos_burstable_milli; /* what the burstable QoS group was last given (-1: nothing) */
        /* probes and hooks: specs of pods that left the table while something
         * of them ran, for their kill job's preStop hooks */
        WorkerSpec **gone_specs;
        size_t n_gone_specs;
        bool trim_pending; /* pods came or went: give freed memory back once things are quiet */
        AgentRuntime rt;   /* jobs.c's */
        AgentSources src;  /* the sources' */
        char runtime_version[256];
        bool notified_ready;
        char *log_root;
        /* the manager table */
        LcEnv env;
        const LcManagerVtable *const *mgr;
        size_t n_mgr;
        void **mgr_state;
        LcActions actions; /* queued by managers, applied by agent_apply_actions() */
        /* the HTTP API (serve.c): counters the loop increments, the server */
        ApiMetrics metrics;
        ApiHttp *http;
        ApiPodCache pod_cache;
        sd_event_source *http_timer;
        uint64_t runtime_down_since; /* CLOCK_MONOTONIC µs of the first tick it was seen down, 0 = up */
        char host_ip[64];
        bool conditions[_LC_CONDITION_MAX];
        unsigned resources_gen;
};

uint64_t agent_now_usec(void);

/* agent.c */
void agent_notify_status(Agent *a);

/* jobs.c: the worker pool's eventfd handler (finished jobs applied to the
 * pod table), and a relist asked for (one in flight at a time) */
int agent_on_worker(sd_event_source *s, int fd, uint32_t revents, void *userdata);
void agent_request_relist(Agent *a);
/* The evented relist (jobs.c): containerd's event stream when the runtime
 * has it (a failure leaves the timer's relist alone), and the period the
 * relist timer waits next: relist_usec, or events_relist_usec on a steady
 * node whose stream is up and had no event in the last two periods. */
void agent_events_attach(Agent *a);
void agent_events_detach(Agent *a);
uint64_t agent_relist_period(Agent *a, uint64_t now);

/* actions.c */
/* Applies what the managers queued. */
void agent_apply_actions(Agent *a);
/* The containers of uid are stopped (or nothing of it ran). */
void agent_pod_stopped(Agent *a, const char *uid);

/* managers.c: every call into the manager table (agent/managers) */
int agent_managers_new(Agent *a, CubError *err);
void agent_managers_free(Agent *a);
/* restore (checkpoints), then attach (their event sources) */
void agent_managers_start(Agent *a);
void agent_managers_admit_batch(Agent *a);
/* Each manager's admission in order, its decisions applied before the
 * next looks; SIZE_MAX when all admit (p->numa set), else the index of the
 * one that refused (ret: its reason and message) after the ones before it
 * let go of the pod again. */
size_t agent_managers_admit(Agent *a, LcPod *p, LcAdmitResult *ret);
/* Every manager's share of container k; the first failure (err names the
 * manager): the container must not be created without its share. */
int agent_managers_prepare_container(Agent *a, const LcPod *p, size_t k, LcContainerConfig *cfg, CubError *err);
void agent_managers_pod_started(Agent *a, const LcPod *p);
void agent_managers_pod_removed(Agent *a, const LcPod *p);
void agent_managers_pod_stopped(Agent *a, const char *uid);
void agent_managers_pod_status(Agent *a, const LcPod *p, json_t *pod);
void agent_managers_node_status(Agent *a, json_t *doc);
void agent_managers_node_resource(Agent *a, const char *resource, int64_t allocatable);
void agent_managers_flush(Agent *a);
void agent_managers_metrics(Agent *a, FILE *f);

/* podtable.c */
LcPod *agent_find_pod(Agent *a, const char *uid);
/* A new pod from a source (takes spec's reference): admitted, its pod cgroup
 * written and its sync queued; event_usec is when the source saw it. */
void agent_pod_add(Agent *a, WorkerSpec *spec, uint64_t event_usec);
/* Admits (again) a pod of the table; returns whether its sync may start. */
bool agent_pod_admit(Agent *a, LcPod *p);
void agent_pod_forget(Agent *a, LcPod *p);
/* Flushes the managers first: no runtime call before their checkpoints. */
void agent_submit_sync(Agent *a, LcPod *p, uint64_t now);
/* jobs.c, the kill table's one writer: a stop of uid, its first attempt or
 * its retry when due (a stop in flight or waiting for its retry is left
 * alone). */
void agent_submit_kill(Agent *a, const char *uid, const char *ns, const char *name, const char *cgroup, int64_t grace);
/* The kill job of an entry kill_table_want() put in flight. */
void agent_submit_kill_entry(Agent *a, KillEntry *e, bool first);
/* Whether uid is being stopped (in flight, or waiting for its retry). */
bool agent_is_killing(Agent *a, const char *uid);
/* The runtime's part of the agent (jobs.c) */
void agent_runtime_init(Agent *a);
void agent_runtime_free(Agent *a);
/* probes and hooks: the spec of uid for its kill job's preStop hooks (a
 * reference: the table's pod's, or one kept after it left the table) */
WorkerSpec *agent_take_spec(Agent *a, const char *uid);
/* Makes p terminal (phase Failed with reason and message) and stops its
 * containers with the grace period. Returns whether a stop is under way. */
bool agent_pod_fail(Agent *a, LcPod *p, const char *reason, const char *message, int64_t grace);
/* kubelet's rejectPod: counted, logged, phase Failed with "Pod was rejected: " + message */
void agent_pod_reject(Agent *a, LcPod *p, const char *reason, const char *message);
void agent_remove_unwanted(Agent *a);
void agent_apply_qos_groups(Agent *a);
/* Running pods whose containers lag behind the resources generation. */
void agent_update_resources(Agent *a);
/* Pods waiting for the preemption victim uid may start. */
void agent_victim_stopped(Agent *a, const char *uid);
void agent_pods_free(Agent *a);

/* network.c: the node's pod network (the CNI conflist, the workers'
 * settings, the node's IP) */
int agent_network_setup(Agent *a, CubError *err);
/* The node's first IPv4 address that is up and not loopback; 127.0.0.1
 * when there is none (a node without a network card). */
void agent_host_ip(char buf[static 64]);

/* serve.c: the HTTP API */
int agent_http_start(Agent *a, CubError *err);
void agent_http_stop(Agent *a);
/* A job came back: kubelet_pod_worker_duration_seconds, and the pod's start
 * duration on its first successful sync (p: the job's pod, NULL for a kill). */
void agent_metrics_job(Agent *a, const LcPod *p, const WorkerJob *j);

/* merge.c: kubelet's PodConfig merge. The sources push what they read;
 * the loop drains the queue (at once, unless a drain is under way) and is
 * the one that puts pods in the table and takes them out. */
typedef enum AgentUpdateKind {
        AGENT_UPDATE_DIR_SET, /* the manifest directory's whole set (the rescan) */
        AGENT_UPDATE_FILE,    /* one complete file (entry.pod NULL: gone, or broken with entry.error) */
        AGENT_UPDATE_URL_SET, /* the manifest URL's whole set (a 200 that decodes) */
} AgentUpdateKind;
struct AgentUpdate {
        AgentUpdateKind kind;
        PodsrcSet set;     /* DIR_SET, URL_SET */
        PodsrcEntry entry; /* FILE */
        char *path;        /* FILE: the manifest's path */
        uint64_t event_usec;
        AgentUpdate *next;
};
AgentUpdate *agent_update_new(AgentUpdateKind kind, uint64_t event_usec);
/* Takes u (NULL: nothing). */
void agent_update_push(Agent *a, AgentUpdate *u);
void agent_updates_free(Agent *a);

/* source-dir.c: the manifest directory */
void agent_rescan(Agent *a);
/* the error of one file in cubelet status (NULL: none any more) */
void agent_source_dir_file_error(Agent *a, const char *path, const char *message);
int agent_source_dir_attach(Agent *a);
void agent_source_dir_done(Agent *a);
void agent_errors_free(Agent *a);

/* source-http.c: the manifest URL; a message of the URL's set in cubelet status */
void agent_source_http_error(Agent *a, const char *message);
int agent_source_http_attach(Agent *a);
void agent_source_http_done(Agent *a);
bool agent_pod_from_url(const Agent *a, const LcPod *p);
/* kubelet's sourcesReady: every source has given its set once (until then a
 * relist stops nothing it finds, so a restart never stops the URL's pods) */
bool agent_sources_ready(const Agent *a);
/* the "manifestURL" object and the URL's errors of the status document */
void agent_source_http_status(Agent *a, json_t *doc);
