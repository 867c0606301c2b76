/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The status publisher's state (Agent.cluster), shared by the loop's
 * cluster files alone: cluster.c writes it (cluster-node-events.c the
 * node's events), cluster-env.c and cluster-mirror.c read it. Made by
 * agent_cluster_start, with or without an API server. */

#include "agent-internal.h"

/* The API server (--kubeconfig): its pods come from the source
 * (agent/cluster/source.h), an object of its own behind the sources'
 * interface; the rest is the status publisher: the Node, the pods' status
 * and events. */
struct AgentCluster {
        KubeClient *client;
        KubeNode *node;
        KubeStatus *status; /* their status, and the final DELETE */
        KubeEvents *events; /* their events */
        sd_event_source *status_timer;
        uint64_t ticks;
        uint64_t tick_cpu_usec; /* the status tick's CPU (CLOCK_THREAD_CPUTIME_ID), for cubelet status */
        /* the node's own events (Starting, NodeReady, ...), and the
         * conditions they came from: type → status */
        struct {
                char reason[48], message[160];
                unsigned count;
                int64_t first_unix, last_unix;
        } node_events[12];
        size_t n_node_events;
        json_t *node_conditions;
};
