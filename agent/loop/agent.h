/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent: one sd-event loop owns every piece of mutable state. Sources:
 * the manifest directory (inotify + a periodic rescan), the relist timer,
 * the worker pool's eventfd, the status socket, signals and the watchdog.
 */

#include <stdbool.h>
#include <stdint.h>

#include "../pod/pod.h"
#include "../util/err.h"

/* the relist period of a steady node with the runtime's event stream */
#define AGENT_EVENTS_RELIST_USEC (10ULL * 1000000ULL)

typedef struct AgentOptions {
        char *manifest_dir;
        char *runtime_endpoint;
        char *cgroup_root;
        char *sys_root; /* the CPU topology's sysfs; NULL: /sys (a test's own) */
        char *state_dir;
        char *node_name;
        char *socket_path;
        char *config_path;
        char *manifest_url;         /* staticPodURL, NULL = none */
        uint64_t http_check_usec;   /* httpCheckFrequency */
        uint64_t http_timeout_usec; /* cubelet.staticPodURLTimeout */
        uint64_t relist_usec;
        /* with the runtime's event stream (containerd's Events.Subscribe):
         * the relist period of a steady node; 0 = no stream, relist_usec */
        uint64_t events_relist_usec;
        uint64_t rescan_usec;
        /* cpuManagerReconcilePeriod: how often every running container's
         * resources are checked against their assignment (kubelet's
         * reconcileState; default 10 s) */
        uint64_t cpu_reconcile_usec;
        unsigned workers;
        char *http_address; /* the HTTP API (agent/api/http.h); port 0 = off */
        /* the kubelet server's (a node of a cluster): config address, else
         * kubelet's 0.0.0.0, so that the API server reaches the address
         * the Node advertises; NULL: http_address */
        char *kubelet_address;
        unsigned http_port;
        /* the API server: kubelet's --kubeconfig (NULL: none), --register-node,
         * --node-labels (k=v,...), --register-with-taints (k=v:Effect,...),
         * nodeStatusUpdateFrequency, nodeStatusReportFrequency,
         * nodeLeaseDurationSeconds */
        char *kubeconfig;
        char *node_ip; /* --node-ip: NULL = the default route's interface's */
        bool register_node;
        char *node_labels, *register_taints;
        uint64_t node_status_update_usec, node_status_report_usec;
        int64_t node_lease_seconds;
        PodKubeletConfig kc;
} AgentOptions;

void agent_options_init(AgentOptions *o);
void agent_options_done(AgentOptions *o);

typedef struct Agent Agent;

/* opt (its kc in particular) must outlive the agent. */
int agent_new(const AgentOptions *opt, Agent **ret, CubError *err);
/* Runs until SIGTERM/SIGINT; returns 0 or a negative errno. */
int agent_run(Agent *a);
Agent *agent_free(Agent *a);

/* The status document served on the socket (JSON text, malloc'd). */
char *agent_status_json(Agent *a);
