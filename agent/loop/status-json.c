/* SPDX-License-Identifier: Apache-2.0 */
/* The status document served on the socket: the loop's pods and runtime,
 * then each manager's part. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../cri/cri.h"
#include "../util/cleanup.h"
#include "agent-internal.h"

static json_int_t since(uint64_t from, uint64_t to) {
        return from && to >= from ? (json_int_t) (to - from) : 0;
}

static json_t *containers_json(const LcPod *p) {
        const Pod *pod = p->spec->pod;
        json_t *cs = json_array();

        for (size_t k = 0; k < p->n; k++) {
                bool init;
                const PodContainer *c = pod_container_at(pod, k, &init);
                const LcContainerStatus *st = &p->statuses[k];
                json_t *cj = json_pack("{s:s,s:s,s:s,s:b,s:s,s:i}", "name", c->name, "image", c->image, "id", st->id,
                                       "init", init, "state", lc_container_state_to_string(st->state), "restarts",
                                       (int) st->restarts);

                if (st->terminated_before) {
                        json_t *t = json_pack("{s:i,s:s}", "exitCode", (int) st->exit_code, "reason", st->reason);

                        if (t && st->term_message) /* termination messages */
                                json_object_set_new(t, "message", json_string(st->term_message));
                        json_object_set_new(cj, "lastTermination", t);
                }
                /* kubelet's waiting reason and message (agent/lifecycle/reasons.c, as /pods) */
                {
                        char msg[LC_MESSAGE_MAX];
                        const char *why = lc_container_waiting(p, k, msg, sizeof(msg));

                        if (why)
                                json_object_set_new(cj, "waitingReason", json_string(why));
                        if (why && *msg)
                                json_object_set_new(cj, "waitingMessage", json_string(msg));
                }
                /* probes and hooks */
                json_object_set_new(cj, "ready", json_boolean(lc_container_ready(p, k)));
                json_object_set_new(cj, "started", json_boolean(lc_container_started(p, k)));
                if (*st->message)
                        json_object_set_new(cj, "message", json_string(st->message));
                json_array_append_new(cs, cj);
        }
        return cs;
}

/* kubelet's events of the pod, oldest first, with wall-clock times */
static json_t *events_json(const LcPod *p, uint64_t now, uint64_t now_real) {
        json_t *l = json_array();

        for (size_t i = 0; l && i < p->n_events; i++) {
                const LcEvent *e = &p->events[i];
                uint64_t first_ago = now > e->first_usec ? now - e->first_usec : 0,
                         last_ago = now > e->last_usec ? now - e->last_usec : 0;
                char first[32], last[32];

                api_rfc3339((int64_t) ((now_real - first_ago) / CUB_USEC_PER_SEC), first);
                api_rfc3339((int64_t) ((now_real - last_ago) / CUB_USEC_PER_SEC), last);
                json_array_append_new(l, json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:I,s:I}", "type",
                                                   e->warning ? "Warning" : "Normal", "reason", e->reason, "message",
                                                   e->message, "count", (int) e->count, "firstTimestamp", first,
                                                   "lastTimestamp", last, "firstSeenSecondsAgo",
                                                   (json_int_t) (first_ago / CUB_USEC_PER_SEC), "lastSeenSecondsAgo",
                                                   (json_int_t) (last_ago / CUB_USEC_PER_SEC)));
        }
        return l;
}

static json_t *pod_json(Agent *a, const LcPod *p) {
        const Pod *pod = p->spec->pod;
        const LcLatency *l = &p->latency;
        json_t *pj =
                json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s,s:o,s:s,s:s,s:b,s:{s:I,s:I,s:I}}", "namespace",
                          pod->namespace_, "name", pod->name, "uid", pod->uid, "source", p->spec->source, "phase",
                          lc_phase_to_string(p->phase), "qosClass", pod_qos_to_string(p->spec->qos), "cgroup",
                          p->spec->cgroup.path, "restarts", (int) lc_pod_restarts(p), "lastError", p->sync_retry.error,
                          "containers", containers_json(p), "reason", p->reason, "message", p->message, "admitted",
                          p->admitted, "latency", "eventToCgroupUs", since(l->event, l->cgroup), "eventToSandboxUs",
                          since(l->event, l->sandbox), "eventToStartedUs", since(l->event, l->started));

        if (!pj)
                return NULL;
        /* the failed syncs in a row (lastError's), each retried after 10 s */
        (void) json_object_set_new(pj, "syncFailures", json_integer(p->sync_retry.failures));
        /* network: kubelet's podIP (a host-network pod's is the node's) and hostIP */
        {
                const char *host_ip = a->core.node.ip[0] ? a->core.node.ip : "127.0.0.1";
                const char *pod_ip = *p->pod_ip                                         ? p->pod_ip
                                     : pod->host_network && p->observed && !p->terminal ? host_ip
                                                                                        : "";

                json_object_set_new(pj, "podIP", json_string(pod_ip));
                json_object_set_new(pj, "podIPs", *pod_ip ? json_pack("[s]", pod_ip) : json_array());
                json_object_set_new(pj, "hostIP", json_string(host_ip));
                json_object_set_new(pj, "hostIPs", json_pack("[s]", host_ip));
        }
        /* probes and hooks: the Ready condition */
        json_object_set_new(pj, "ready", json_boolean(p->cond_value[LC_POD_COND_READY]));
        /* in-place resize: what waits (PodResizePending), what is being actuated */
        json_object_set_new(pj, "resize",
                            json_pack("{s:s,s:s,s:b,s:s}", "pending", p->resize.pending, "message", p->resize.message,
                                      "inProgress", p->resize.in_progress, "error", p->resize.error));
        json_object_set_new(pj, "events", events_json(p, agent_now_usec(), cub_now_usec(CLOCK_REALTIME)));
        /* the fields of its manifest cubelet accepts and ignores */
        if (pod->warnings.n > 0) {
                json_t *ws = json_array();

                for (size_t i = 0; ws && i < pod->warnings.n; i++) {
                        char *w = pod_field_note_format(&pod->warnings.items[i], NULL);

                        json_array_append_new(ws, w ? json_string(w) : NULL);
                        free(w);
                }
                json_object_set_new(pj, "warnings", ws);
        }
        agent_managers_pod_status(a, p, pj);
        return pj;
}

/* the evented relist: the event stream's state and the relist period now */
static void runtime_events_json(Agent *a, json_t *rt) {
        char error[CUB_ERR_MSG_MAX] = "";
        uint64_t n = 0;

        if (!rt)
                return;
        (void) json_object_set_new(rt, "relistPeriodSeconds",
                                   json_real((double) agent_relist_period(a, agent_now_usec()) / 1e6));
        if (agent_runtime_events(a)) {
                CriEventsState st = cri_events_state(agent_runtime_events(a), &n, error, sizeof(error));

                (void) json_object_set_new(rt, "events",
                                           json_pack("{s:s,s:I,s:s}", "state", cri_events_state_to_string(st),
                                                     "received", (json_int_t) n, "error", error));
        } else
                (void) json_object_set_new(rt, "events", json_pack("{s:s}", "state", "off"));
}

/* The pods being stopped: each stop's attempts, its last error and when it
 * is attempted again (a pod whose sandbox cannot be torn down shows here
 * until it can, never as a loop in the journal). */
static json_t *stopping_json(Agent *a, uint64_t now) {
        json_t *l = json_array();

        for (size_t i = 0; l && i < agent_kills(a)->n; i++) {
                const KillEntry *e = agent_kills(a)->entries[i];
                _cleanup_free_ char *pod = NULL;

                /* "pod": namespace/name (no "name" key: a stopped pod is no pod of the table) */
                if (asprintf(&pod, "%s/%s", e->namespace_, e->name) < 0)
                        pod = NULL;
                json_array_append_new(
                        l,
                        json_pack("{s:s?,s:s,s:I,s:b,s:i,s:s,s:f,s:f}", "pod", pod, "uid", e->uid, "gracePeriodSeconds",
                                  (json_int_t) e->grace, "inFlight", e->in_flight, "attempts", (int) e->attempts,
                                  "lastError", e->retry.error, "nextAttemptInSeconds",
                                  e->in_flight || e->retry.next_usec <= now ? 0.0
                                                                            : (double) (e->retry.next_usec - now) / 1e6,
                                  "failingForSeconds",
                                  e->retry.failures ? (double) (now - e->retry.first_failure_usec) / 1e6 : 0.0));
        }
        return l;
}

char *agent_status_json(Agent *a) {
        json_t *doc, *pods = json_array(), *errors = json_array();
        size_t n_errs;
        const AgentError *errs = agent_source_dir_errors(a, &n_errs);
        char *text;

        for (size_t i = 0; i < a->table.n_pods; i++)
                json_array_append_new(pods, pod_json(a, a->table.pods[i]));
        for (size_t i = 0; i < n_errs; i++)
                json_array_append_new(errors,
                                      json_pack("{s:s,s:s}", "source", errs[i].source, "message", errs[i].message));
        doc = json_pack("{s:s,s:{s:s,s:b,s:s,s:s},s:s,s:o,s:o}", "node", a->core.opt.node_name, "runtime", "endpoint",
                        cri_client_endpoint(a->core.cri), "ready", a->rt->state == AGENT_RUNTIME_READY, "version",
                        agent_runtime_version(a), "error", agent_runtime_error(a), "manifestDir",
                        a->core.opt.manifest_dir, "pods", pods, "errors", errors);
        if (!doc)
                return NULL;
        runtime_events_json(a, json_object_get(doc, "runtime"));
        /* the runtime's network, and kubelet's node Ready condition from it */
        json_object_set_new(json_object_get(doc, "runtime"), "networkReady", json_boolean(!*a->rt->network_error));
        json_object_set_new(json_object_get(doc, "runtime"), "networkError", json_string(a->rt->network_error));
        json_object_set_new(doc, "nodeReady",
                            *a->rt->network_error
                                    ? json_pack("{s:s,s:s,s:s}", "status", "False", "reason", "KubeletNotReady",
                                                "message", a->rt->network_error)
                                    : json_pack("{s:s,s:s,s:s}", "status", "True", "reason", "KubeletReady", "message",
                                                "kubelet is posting ready status"));
        json_object_set_new(doc, "stopping", stopping_json(a, agent_now_usec()));
        /* cgroupsPerQOS: false runs with no cgroup of cubelet's (kubelet's mode of that name) */
        json_object_set_new(doc, "cgroups",
                            json_pack("{s:b,s:s,s:s,s:b}", "perQOS", a->core.cg.per_qos, "driver",
                                      cg_driver_to_string(a->core.cg.driver), "podsParent",
                                      a->core.cg.per_qos       ? cg_kubepods_path(a->core.cg.driver)
                                      : a->core.cg.pods_parent ? a->core.cg.pods_parent
                                                               : "",
                                      "enforceNodeAllocatablePods", a->core.kc->enforce_pods));
        agent_source_http_status(a, doc);
        agent_cluster_status(a, doc);
        agent_managers_node_status(a, doc);
        text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(doc);
        return text;
}
