/* SPDX-License-Identifier: Apache-2.0 */
/* The node's own events (kubelet's recordNodeStatusEvent): Starting, and
 * each condition's change (NodeReady, NodeHasSufficientMemory, ...); sent
 * by cluster.c's status tick once the node is registered. */
#include <stdio.h>
#include <string.h>

#include "../util/time.h"
#include "cluster-internal.h"

/* kubelet's recordNodeStatusEvent: one Normal event per reason, counted */
void agent_cluster_node_event(Agent *a, const char *reason, const char *message) {
        AgentCluster *c = a->cluster;
        int64_t now = (int64_t) (cub_now_usec(CLOCK_REALTIME) / CUB_USEC_PER_SEC);
        size_t i;

        for (i = 0; i < c->n_node_events; i++)
                if (strcmp(c->node_events[i].reason, reason) == 0)
                        break;
        if (i == c->n_node_events) {
                if (i == sizeof(c->node_events) / sizeof(*c->node_events))
                        return;
                c->n_node_events++;
                (void) snprintf(c->node_events[i].reason, sizeof(c->node_events[i].reason), "%s", reason);
                c->node_events[i].first_unix = now;
                c->node_events[i].count = 0;
        }
        (void) snprintf(c->node_events[i].message, sizeof(c->node_events[i].message), "%s", message);
        c->node_events[i].count++;
        c->node_events[i].last_unix = now;
}

/* the conditions the node's status starts from: the existing Node's
 * (a restart), else none */
static json_t *first_conditions(Agent *a) {
        const json_t *api = kube_node_api_conditions(a->cluster->node), *c;
        json_t *o = json_object();
        size_t i;

        json_array_foreach(api, i, c) {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *st = json_string_value(json_object_get(c, "status"));

                if (o && type && st)
                        json_object_set_new(o, type, json_string(st));
        }
        return o;
}

/* the conditions' changes as kubelet's events (nodestatus/setters.go): a
 * pressure condition's first status is a change (from Unknown), Ready's is
 * not (NodeReady and NodeNotReady only when an existing Ready condition
 * changes); on a Node that existed (a restart) they start from its
 * conditions, so that an unchanged one sends nothing. Before the node is
 * registered, nothing is decided. */
void agent_cluster_node_condition_events(Agent *a, const json_t *conds) {
        static const struct {
                const char *type, *when_true, *when_false;
        } map[] = {
                { "MemoryPressure", "NodeHasInsufficientMemory", "NodeHasSufficientMemory" },
                { "DiskPressure", "NodeHasDiskPressure", "NodeHasNoDiskPressure" },
                { "PIDPressure", "NodeHasInsufficientPID", "NodeHasSufficientPID" },
                { "Ready", "NodeReady", "NodeNotReady" },
        };
        const json_t *c;
        size_t i;

        if (!kube_node_registered(a->cluster->node))
                return;
        if (!a->cluster->node_conditions && !(a->cluster->node_conditions = first_conditions(a)))
                return;
        json_array_foreach(conds, i, c) {
                const char *type = json_string_value(json_object_get(c, "type")) ?: "";
                const char *st = json_string_value(json_object_get(c, "status")) ?: "";
                const char *before = json_string_value(json_object_get(a->cluster->node_conditions, type));
                char msg[160];

                if (strcmp(before ?: "", st) == 0)
                        continue;
                json_object_set_new(a->cluster->node_conditions, type, json_string(st));
                if (!before && strcmp(type, "Ready") == 0)
                        continue; /* kubelet appends a new Ready condition without an event */
                for (size_t k = 0; k < sizeof(map) / sizeof(*map); k++)
                        if (strcmp(map[k].type, type) == 0) {
                                const char *r = strcmp(st, "True") == 0 ? map[k].when_true : map[k].when_false;

                                (void) snprintf(msg, sizeof(msg), "Node %s status is now: %s", a->core.opt.node_name,
                                                r);
                                agent_cluster_node_event(a, r, msg);
                        }
        }
}
