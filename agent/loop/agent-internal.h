/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The loop's state, shared by the loop's files. Only the loop touches it.
 * Managers never see it: they get an LcEnv (agent/lifecycle) and return
 * decisions. Each part of struct Agent below has one file that writes it
 * (named beside it); the others read it or call a function of its owner.
 * Most parts are objects of their owner (a pointer here, the struct in the
 * owner's .c): the others cannot even read them. A pod's record (LcPod) is
 * lifecycle/'s to write, through its transitions (make lint).
 *
 * The files call down, never up (tests/loop-graph.py checks it in make
 * lint, with nm over libloop.a); the pod table and its actions are the one
 * pair that call each other:
 *
 *   agent.c                      lifecycle, event sources, signals
 *     status-json.c              the status document (cubelet status)
 *     source-dir.c source-http.c the sources: read, decode, push
 *     cluster.c                  the API server: the hooks of agent/cluster's
 *                                source and status publisher (their objects)
 *     merge.c                    the sources' queue and kubelet's merge
 *     jobs.c                     the worker's results, the relist
 *     podtable.c <-> actions.c   the pod table; the managers' decisions
 *     submit.c                   the jobs into the worker pool, the stops
 *     cluster-env.c              a container's env from the API's data
 *     source-state.c             the sources' errors, sourcesReady
 *     serve.c                    the HTTP API, the only writer of /metrics
 *     managers.c                 every call into the manager table, and
 *                                the queue of their decisions (LcEnv.act)
 *     podnet.c                   the node's pod network (at start)
 *     base.c                     the clock, the pod of a UID, sd_notify
 *     relist-apply.c             the relist's applier: observations, decisions
 *     relist-plan.c killtable.c  pure: the relist's decisions, the stops
 *
 * managers.c sits below actions.c: a manager's decisions wait in its
 * queue until actions.c takes them (agent_managers_take_actions); between
 * two managers' admissions the pod table passes agent_apply_actions down
 * as a function. */

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
#include "../cluster/client.h"
#include "../cluster/events.h"
#include "../cluster/node.h"
#include "../cluster/publisher.h"
#include "../cluster/source.h"
#include "../cluster/status.h"
#include "../config/podsrc.h"
#include "../lifecycle/lifecycle.h"
#include "../node/machine.h"
#include "../util/hashmap.h"
#include "../util/time.h"
#include "../worker/worker.h"
#include "agent.h"
#include "killtable.h"
#include "relist-plan.h"

typedef struct AgentError {
        char *source;
        char *message;
} AgentError;

typedef struct AgentUpdate AgentUpdate; /* merge.c */

/* What agent_new() set up, written by agent.c alone (and only there). */
/* What agent.c alone reads and writes (its event sources, the status
 * socket, the SIGTERM seen): agent.c's object. */
typedef struct AgentRun AgentRun;

typedef struct AgentCore {
        AgentOptions opt;
        const PodKubeletConfig *kc; /* the caller's: AgentOptions outlive the agent */
        AgentNode node;
        CgOptions cg;
        sd_event *event;
        CriClient *cri;
        CgWriter *writer;
        WorkerPool *pool;
        char *log_root;
        AgentRun *run;
} AgentCore;

/* The pod table: written by podtable.c alone. Which pods a source still
 * defines (LcPod.wanted) is merge.c's alone. */
typedef struct AgentPodTable {
        LcPod **pods;
        size_t n_pods;
        CubHashmap *by_uid;       /* the newest pod of each UID */
        uint64_t meta_generation; /* pods' labels or annotations changed in place (agent_pods_meta_changed) */
} AgentPodTable;

/* What the managers' decisions set on the node: actions.c's object
 * (agent_decisions_init); the others read the resources generation
 * through this first member. The node conditions are the managers' LcEnv's. */
typedef struct AgentDecisions {
        unsigned resources_gen; /* the container-resources generation */
} AgentDecisions;

/* The manager table: managers.c's object (agent_managers_new). */
typedef struct AgentManagers AgentManagers;

/* The pods being stopped: submit.c's object (agent_stops_init). */
typedef struct AgentStops AgentStops;

/* What the runtime is, as the loop last saw it (jobs.c's; agent_runtime()). */
typedef enum AgentRuntimeState {
        AGENT_RUNTIME_STARTING, /* no relist has ended yet */
        AGENT_RUNTIME_READY,    /* the last relist ran */
        AGENT_RUNTIME_DOWN,     /* the last relist failed (agent_runtime_error) */
} AgentRuntimeState;
typedef struct AgentRuntimeView {
        AgentRuntimeState state;
        /* the runtime's conditions (CRI Status, asked every 5 s with a
         * relist): kubelet's "container runtime network not ready: ..."
         * while NetworkReady is false, "" otherwise */
        char network_error[768];
        size_t n_running; /* as of the last relist */
        bool notified_ready;
} AgentRuntimeView;

/* The sources' queue: merge.c's object (made with the first update). */
typedef struct AgentQueue AgentQueue;

/* The manifest directory: written by source-dir.c alone. */
typedef struct AgentSourceDir AgentSourceDir; /* source-dir.c's own */

/* The manifest URL: source-http.c's object (agent_source_http_attach);
 * the others read its source through this first member. */
typedef struct AgentSourceHttp {
        PodsrcHttp *source; /* NULL without one */
} AgentSourceHttp;

/* The sources' errors for cubelet status: source-state.c's object
 * (agent_errors_init); the others read how many the directory has, and
 * the lists through agent_source_dir_errors / agent_source_http_errors. */
typedef struct AgentSourceErrors {
        size_t n_dir; /* first member: the manifest directory's errors */
} AgentSourceErrors;

/* The HTTP API: serve.c's object (its counters too: the others call agent_metrics_*()). */
typedef struct AgentApi AgentApi;

/* in-place resize's checkpoint (resize.c): <stateDir>/pod_resources,
 * uid → {inProgress, containers: the allocated cpu/memory} of the pods
 * whose allocation differs from their source's pod or is not actuated */
typedef struct AgentResize {
        json_t *ckpt; /* NULL until loaded */
} AgentResize;

struct Agent {
        AgentCore core;          /* agent.c */
        AgentResize resize;      /* resize.c */
        AgentPodTable table;     /* podtable.c */
        AgentDecisions *decided; /* actions.c */
        AgentManagers *mgrs;     /* managers.c */
        AgentStops *stops;       /* submit.c */
        AgentRuntimeView *rt;    /* jobs.c: a view read by all; the rest of its object is jobs.c's alone */
        AgentQueue *queue;       /* merge.c */
        AgentSourceDir *dir;     /* source-dir.c */
        AgentSourceHttp *url;    /* source-http.c */
        AgentSourceErrors *errs; /* source-state.c */
        AgentApi *api;           /* serve.c */
        KubePublisher *cluster;  /* cluster.c: agent/cluster's status publisher (publisher.h); NULL: none */
        KubeSource *kube;        /* cluster.c: the API server's pod source (agent/cluster/source.h); NULL: none */
};

/* ---- agent.c --------------------------------------------------------------- */
/* (agent.h: agent_new, agent_run, agent_free; agent_status_json is status-json.c's) */

/* ---- cluster.c: the API server (--kubeconfig) ------------------------------------ */
int agent_cluster_start(Agent *a, CubError *err);
/* the node's conditions or resources changed: its status goes out now */
void agent_cluster_changed(Agent *a);
void agent_cluster_status(Agent *a, json_t *doc);
void agent_cluster_free(Agent *a);
/* the API server's pod source (NULL without --kubeconfig) */

/* cluster-env.c: container c's env from the API server's data into cfg
 * (env_from, env_refs, or env_error with kubelet's message); -ENOMEM */
int agent_cluster_container_env(Agent *a, const Pod *pod, const PodContainer *c, WorkerContainerConfig *cfg);
int agent_cluster_api_files(void *loop, const Pod *pod, const PodDownwardFile *f, VolApiFile **ret, size_t *ret_n,
                            CubError *err);
uint64_t agent_cluster_api_generation(void *loop);

/* ---- source-dir.c: the manifest directory ------------------------------------- */
void agent_rescan(Agent *a);
int agent_source_dir_attach(Agent *a);
void agent_source_dir_done(Agent *a);

/* ---- source-http.c: the manifest URL ------------------------------------------ */
int agent_source_http_attach(Agent *a);
/* the answer kept on disk as the URL's set, before the first GET ends */
void agent_source_http_load_cache(Agent *a);
void agent_source_http_done(Agent *a);
/* the "manifestURL" object and the URL's errors of the status document */
void agent_source_http_status(Agent *a, json_t *doc);

/* ---- merge.c: kubelet's PodConfig merge --------------------------------------- */
/* The sources push what they read; the loop drains the queue (at once, unless a drain is under way) and is
 * the one that puts pods in the table and takes them out. */
typedef enum AgentUpdateKind {
        AGENT_UPDATE_DIR_SET, /* the manifest directory's whole set (the rescan) */
        AGENT_UPDATE_FILE,    /* one complete file (entry.pod NULL: gone, or broken with entry.error) */
        AGENT_UPDATE_URL_SET, /* the manifest URL's whole set (a 200 that decodes) */
        AGENT_UPDATE_API_SET, /* the API server's pods bound to this node (after a list or a watch event) */
} AgentUpdateKind;
struct AgentUpdate {
        AgentUpdateKind kind;
        PodsrcSet set;     /* DIR_SET, URL_SET, API_SET */
        PodsrcEntry entry; /* FILE */
        char *path;        /* FILE: the manifest's path */
        uint64_t event_usec;
        AgentUpdate *next;
};
AgentUpdate *agent_update_new(AgentUpdateKind kind, uint64_t event_usec);
/* Takes u (NULL: nothing). */
void agent_update_push(Agent *a, AgentUpdate *u);
void agent_updates_free(Agent *a);

/* ---- jobs.c -------------------------------------------------------------------- */
/* the worker pool's eventfd handler (finished jobs applied to the pod
 * table), and a relist asked for (one in flight at a time) */
int agent_on_worker(sd_event_source *s, int fd, uint32_t revents, void *userdata);
void agent_request_relist(Agent *a);
/* The evented relist: containerd's event stream when the runtime has it (a
 * failure leaves the timer's relist alone), and the period the relist timer
 * waits next: relist_usec, or events_relist_usec on a steady node whose
 * stream is up and had no event in the last two periods. */
void agent_events_attach(Agent *a);
void agent_events_detach(Agent *a);
uint64_t agent_relist_period(Agent *a, uint64_t now);
int agent_runtime_init(Agent *a);
/* pods came or went (merge.c): freed memory goes back once things are
 * quiet (no job busy, no stop in flight, after a relist) */
void agent_pods_trim_later(Agent *a);
/* the relist timer (every relist_usec, or the runtime's retry) */
int agent_relist_attach(Agent *a);
/* the runtime's Version, as agent_new() asked it */
void agent_runtime_set_version(Agent *a, const char *name, const char *version, const char *api_version);
void agent_runtime_free(Agent *a);
/* "containerd 1.6.20 (CRI v1)", from the start's Version ("": unknown) */
const char *agent_runtime_version(const Agent *a);
/* the last relist's error ("" when it ran) */
const char *agent_runtime_error(const Agent *a);
/* containerd's event stream (NULL: none): its state for cubelet status */
CriEvents *agent_runtime_events(const Agent *a);
/* when the relist timer fires next (CLOCK_MONOTONIC µs, 0: none), for the tests */
uint64_t agent_relist_due(const Agent *a);
/* the relist's retry while the runtime is away (for the tests) */
const CubRetry *agent_runtime_retry(const Agent *a);

/* ---- podtable.c ---------------------------------------------------------------- */
int agent_pods_init(Agent *a, CubError *err);
void agent_pods_free(Agent *a);
/* A new pod from a source (takes spec's reference) in the table, not yet
 * wanted; NULL when out of memory. event_usec is when the source saw it. */
LcPod *agent_pod_insert(Agent *a, WorkerSpec *spec, uint64_t event_usec);
/* A new pod of the table, wanted: admitted, its pod cgroup written and its
 * sync queued. */
void agent_pod_start(Agent *a, LcPod *p);
/* A new pod of the table, wanted, that the API server already has as
 * Succeeded or Failed (Pod.api_phase): terminal with that phase, reason and
 * message, never admitted or run (kubelet's pod workers after a restart);
 * the relist stops what the runtime still has of it. */
void agent_pod_api_terminal(Agent *a, LcPod *p);
/* Admits (again) a pod of the table; returns whether its sync may start. */
bool agent_pod_admit(Agent *a, LcPod *p);
/* Every manager lets go of what the pod holds. */
void agent_pod_forget(Agent *a, LcPod *p);
/* Makes p terminal (phase Failed with reason and message) and stops its
 * containers with the grace period. Returns whether a stop is under way. */
bool agent_pod_fail(Agent *a, LcPod *p, const char *reason, const char *message, int64_t grace);
/* kubelet's rejectPod: logged, an event, phase Failed with "Pod was
 * rejected: " + message (the caller counts it: agent_metrics_rejected) */
void agent_pod_reject(Agent *a, LcPod *p, const char *reason, const char *message);
void agent_remove_unwanted(Agent *a);
/* Pods waiting for the preemption victim uid may start. */
void agent_victim_stopped(Agent *a, const char *uid);
/* pods' labels or annotations changed in place: their downward API files follow */
void agent_pods_meta_changed(Agent *a);

/* ---- actions.c: the managers' decisions, applied ----------------------------- */
int agent_decisions_init(Agent *a);
void agent_decisions_free(Agent *a);
/* the node conditions the managers decided (LcEnv.conditions: the managers' view) */
const bool *agent_decided_conditions(const Agent *a);
/* Applies what the managers queued. */
void agent_apply_actions(Agent *a);
/* The containers of uid are stopped (or nothing of it ran). */
void agent_pod_stopped(Agent *a, const char *uid);
/* activeDeadlineSeconds: pod p active for that long fails (DeadlineExceeded) */
void agent_pod_check_deadline(Agent *a, LcPod *p, uint64_t now);

/* ---- submit.c: the jobs into the worker pool, the stops ----------------------- */
/* Flushes the managers first: no runtime call before their checkpoints. */
void agent_submit_sync(Agent *a, LcPod *p, uint64_t now);
/* Running pods whose containers lag behind the resources generation. */
void agent_update_resources(Agent *a);
/* probes and hooks: stop container k (its id) of p with grace */
void agent_submit_stop_container(Agent *a, const LcPod *p, size_t k, const char *container_id, int64_t grace);
bool agent_submit_resize(Agent *a, LcPod *p, bool *skip);

/* resize.c: in-place resize (KEP-1287). The merge hands a wanted pod's new
 * pod of the same identity (takes *pod when its cpu/memory differ); the
 * loop tries what waits after each relist; the UPDATE job's end. */
void agent_pod_resize_want(Agent *a, LcPod *p, Pod **pod);
/* spec-update.c: the source's pod of p (the same hash) names more
 * ephemeral containers, or other labels or annotations, than its spec
 * (takes *pod: true); the spec waiting is p's when no job holds its spec
 * and no resize waits (true: a relist should follow) */
bool agent_pod_spec_want(Agent *a, LcPod *p, Pod **pod);
bool agent_pod_spec_apply(Agent *a, LcPod *p);
/* podtable.c: p's spec replaced (the UID index follows) */
void agent_pod_set_spec(Agent *a, LcPod *p, WorkerSpec *spec);
void agent_resizes_retry(Agent *a);
void agent_resize_done(Agent *a, LcPod *p, const WorkerJob *j);
/* a pod new to the table: its checkpointed allocation replaces pod's
 * cpu/memory (before its spec is made); then, once inserted, what is not
 * actuated is, and a source's pod that differs becomes its want */
void agent_resize_restore_pod(Agent *a, Pod *pod);
void agent_resize_restored(Agent *a, LcPod *p);
void agent_resize_free(Agent *a);
/* A stop of uid, its first attempt or its retry when due (a stop in flight
 * or waiting for its retry is left alone). */
void agent_submit_kill(Agent *a, const char *uid, const char *ns, const char *name, const char *cgroup, int64_t grace);
/* The kill job of an entry kill_table_want() put in flight. */
void agent_submit_kill_entry(Agent *a, KillEntry *e, bool first);
/* Whether uid is being stopped (in flight, or waiting for its retry). */
bool agent_is_killing(Agent *a, const char *uid);
/* probes and hooks: p left the table while something of it ran: its spec
 * stays for its kill job's preStop hooks */
void agent_keep_gone_spec(Agent *a, const LcPod *p);
/* the relist's plan over the kill table (relist-plan.h), and a kill job's end */
int agent_stops_plan(Agent *a, const RelistInput *in, RelistPlan *plan);
KillOutcome agent_stops_done(Agent *a, const WorkerJob *j, uint64_t now, unsigned *ret_attempts);
int agent_stops_init(Agent *a);
void agent_stops_free(Agent *a);
/* the kill table (agent/loop/killtable.h): read it; submit.c writes it */
KillTable *agent_kills(const Agent *a);
/* specs kept for their kill job's preStop hooks (for the tests) */
size_t agent_stops_gone_specs(const Agent *a);

/* ---- source-state.c: the sources' errors and queries -------------------------- */
bool agent_pod_from_url(const Agent *a, const LcPod *p);
/* kubelet's sourcesReady: every source has given its set once (until then a
 * relist stops nothing it finds, so a restart never stops the URL's pods) */
bool agent_sources_ready(const Agent *a);
/* Whether the API source holds uid back (agent_pods_held: any) until its
 * volumes' data is there; uid's ctx is the Agent (RelistInput.held). */
bool agent_pod_held(const void *a, const char *uid);
bool agent_pods_held(const Agent *a);
/* a pod of the API server (its source is AGENT_SOURCE_API) */
#define AGENT_SOURCE_API KUBE_SOURCE_PATH
bool agent_pod_from_api(const LcPod *p);
/* a pod of the manifest directory (neither the URL's nor the API server's) */
bool agent_pod_from_dir(const Agent *a, const LcPod *p);
/* the manifest directory's: the errors of a whole scan; the error of one
 * file in cubelet status (NULL: none any more) */
void agent_source_dir_set_errors(Agent *a, const PodsrcSet *set);
void agent_source_dir_file_error(Agent *a, const char *path, const char *message);
int agent_errors_init(Agent *a);
void agent_errors_free(Agent *a);
/* the directory's errors are gone (its watch is) */
void agent_source_dir_errors_clear(Agent *a);
/* the manifest URL's: the last fetch's error ("" when it was good), a new
 * set in force, a message of the URL's set */
void agent_source_http_fetch_error(Agent *a, const char *message);
void agent_source_http_new_set(Agent *a);
void agent_source_http_error(Agent *a, const char *message);
void agent_source_http_errors_free(Agent *a);
/* the lists: the directory's; the URL's ([0]: the last fetch's error, "" if none; then the set's) */
const AgentError *agent_source_dir_errors(const Agent *a, size_t *ret_n);
const AgentError *agent_source_http_errors(const Agent *a, size_t *ret_n);

/* ---- serve.c: the HTTP API and its counters ---------------------------------- */
int agent_http_start(Agent *a, CubError *err);
/* the kubelet server's port for daemonEndpoints: 0 when it is off */
unsigned agent_kubelet_port(Agent *a);
void agent_http_stop(Agent *a);
/* the runtime's network error for /readyz ("" when ready) */
void agent_api_set_network(Agent *a, const char *error);
/* A job came back: kubelet_pod_worker_duration_seconds, and the pod's start
 * duration on its first successful sync (p: the job's pod, NULL for a kill). */
void agent_metrics_job(Agent *a, const LcPod *p, const WorkerJob *j);
void agent_metrics_manifest_error(Agent *a);
/* the counters as they stand (NULL before agent_http_start): for the tests */
const ApiMetrics *agent_metrics(const Agent *a);
void agent_metrics_url_fetch(Agent *a, const char *result);
void agent_metrics_rejected(Agent *a, const char *reason, bool cpu_pinning_error);
void agent_metrics_cpu_pinning(Agent *a, size_t containers);
/* a pod stopped by eviction (evicted) or preemption, for resource */
void agent_metrics_stopped_by(Agent *a, bool evicted, const char *resource);

/* ---- managers.c: every call into the manager table (agent/managers) ----------- */
/* the LcEnv and each manager's state */
int agent_managers_new(Agent *a, const bool *conditions, CubError *err);
void agent_managers_free(Agent *a);
/* the deferred event that applies the managers' decisions (on_actions: agent.c's) */
int agent_managers_attach_actions(Agent *a, sd_event_handler_t on_actions);
/* what the managers were made with (LcEnv): the node's allocatable is theirs */
const LcEnv *agent_managers_env(const Agent *a);
/* restore (checkpoints), then attach (their event sources) */
void agent_managers_start(Agent *a);
/* The managers' restore (each drops what belongs to pods that are gone), once;
 * the merge calls it when every source has given its set and none holds a
 * pod back. */
void agent_managers_restore(Agent *a);
/* how the API shows pods (/pods, the API server): the node, and the
 * managers' part of each container's status */
void agent_api_pods_info(Agent *a, ApiPodsInfo *info);
void agent_managers_admit_batch(Agent *a);
/* Each manager's admission in order, its decisions applied (apply: the
 * loop's agent_apply_actions) before the next looks; SIZE_MAX when all
 * admit (p->numa set), else the index of the one that refused (ret: its
 * reason and message) after the ones before it let go of the pod again. */
size_t agent_managers_admit(Agent *a, LcPod *p, LcAdmitResult *ret, void (*apply)(Agent *a));
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
/* the pod table changed (and once at start, before the first scan): the
 * cgroups manager writes the QoS groups again when their values changed */
void agent_managers_pods_changed(Agent *a);
void agent_managers_resize(Agent *a, LcPod *p, const Pod *want, LcAdmitResult *ret);
/* SIGTERM: true when a manager holds the exit (it ends the loop itself) */
bool agent_managers_terminate(Agent *a);
/* The decisions the managers queued (LcEnv.act) since the last take; false
 * when none (ret untouched). */
bool agent_managers_take_actions(Agent *a, LcActions *ret);

/* ---- podnet.c: the node's pod network (the CNI conflist, the workers'
 * settings) ---------------------------------------------------------------------- */
int agent_network_setup(const Agent *a, CubError *err);
/* The node's first IPv4 address that is up and not loopback; 127.0.0.1
 * when there is none (a node without a network card). */
void agent_host_ip(const char *pod_cidr, char buf[static 64]);

/* ---- base.c -------------------------------------------------------------------- */
uint64_t agent_now_usec(void);
LcPod *agent_find_pod(Agent *a, const char *uid);
void agent_notify_status(Agent *a);
