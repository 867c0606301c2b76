/* SPDX-License-Identifier: Apache-2.0 */
/* The API server as the node's fourth peer (--kubeconfig): the Node as this
 * agent sees it, for agent/cluster/node.c to register and keep, and the
 * connection's state for `cubelet status`. Reads the other parts; writes
 * only AgentCluster. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <syslog.h>

#include "../../cri/cri.h"
#include "../managers/managers.h"
#include "../node/info.h"
#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "cluster-internal.h"

#define ANNOTATION_ATTACH "volumes.kubernetes.io/controller-managed-attach-detach"
/* the version a node reports: the Kubernetes minor whose semantics cubelet
 * follows, and cubelet's own as the build part */
#define KUBELET_VERSION "v1.34.0-cubelet"

/* v: millicores for cpu, else units (bytes, counts) */
static void quantity(json_t *o, const char *name, int64_t v, bool cpu) {
        char buf[POD_QUANTITY_STR_MAX];
        PodQuantity q =
                cpu ? (PodQuantity){ .units = v / 1000, .milli = (uint16_t) (v % 1000) } : (PodQuantity){ .units = v };

        if (v < 0)
                q = (PodQuantity){};
        json_object_set_new(o, name, json_string(pod_quantity_format(q, cpu, buf)));
}

static json_t *condition(const char *type, const char *status, const char *reason, const char *message) {
        return json_pack("{s:s,s:s,s:s,s:s}", "type", type, "status", status, "reason", reason, "message", message);
}

static json_t *node_info(Agent *a, const AgentNodeInfo *ni) {
        char rt[256] = "";
        const char *v = agent_runtime_version(a);

        /* "containerd 1.6.20 (CRI v1)" → containerd://1.6.20 */
        if (*v) {
                size_t n = strcspn(v, " ");
                const char *ver = v[n] ? v + n + 1 : "";

                (void) snprintf(rt, sizeof(rt), "%.*s://%.*s", (int) n, v, (int) strcspn(ver, " "), ver);
        }
        /* swap: nodestatus/setters.go MachineInfo (1.34), when the machine has swap */
        return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o*}", "machineID", ni->machine_id, "systemUUID",
                         ni->system_uuid, "bootID", ni->boot_id, "kernelVersion", ni->kernel, "osImage", ni->os_image,
                         "containerRuntimeVersion", rt, "kubeletVersion", KUBELET_VERSION, "operatingSystem", "linux",
                         "architecture", agent_go_arch(), "swap",
                         a->core.node.swap_capacity > 0
                                 ? json_pack("{s:I}", "capacity", (json_int_t) a->core.node.swap_capacity)
                                 : NULL);
}

static json_t *node_json(void *userdata) {
        Agent *a = userdata;
        _cleanup_(pod_resource_list_done) PodResourceList alloc = {};
        _cleanup_(json_decrefp) json_t *mgr = json_object();
        json_t *node, *labels, *cap = json_object(), *al = json_object(), *conds = json_array(), *c, *res;
        const char *ip = a->core.node.ip[0] ? a->core.node.ip : "127.0.0.1";
        AgentNodeInfo ni;
        struct statvfs sv;
        CubError err = {};
        size_t i;

        labels = json_pack("{s:s,s:s,s:s,s:s,s:s}", "kubernetes.io/hostname", a->core.opt.node_name, "kubernetes.io/os",
                           "linux", "kubernetes.io/arch", agent_go_arch(), "beta.kubernetes.io/os", "linux",
                           "beta.kubernetes.io/arch", agent_go_arch());
        if (!mgr || !labels || !cap || !al || !conds) {
                json_decref(labels), json_decref(cap), json_decref(al), json_decref(conds);
                return NULL;
        }
        kube_node_labels_add(labels, a->core.opt.node_labels);
        /* capacity: the machine; allocatable: kubelet's (capacity − reserved − hard eviction) */
        quantity(cap, "cpu", a->core.cg.cpu_capacity_milli, true);
        quantity(cap, "memory", (int64_t) a->core.cg.memory_capacity, false);
        quantity(cap, "pods", a->core.kc->max_pods > 0 ? a->core.kc->max_pods : 110, false);
        if (statvfs(a->core.opt.state_dir, &sv) == 0)
                quantity(cap, "ephemeral-storage", (int64_t) ((uint64_t) sv.f_blocks * sv.f_frsize), false);
        if (mgr_node_allocatable(agent_managers_env(a), &alloc, &err) >= 0)
                for (i = 0; i < alloc.n; i++) {
                        bool cpu = strcmp(alloc.items[i].name, "cpu") == 0;

                        quantity(al, alloc.items[i].name,
                                 cpu ? pod_quantity_milli(alloc.items[i].q) : pod_quantity_value(alloc.items[i].q),
                                 cpu);
                }
        /* hugepages-2Mi, hugepages-1Gi: what the kernel holds of each size */
        agent_node_info_read("/", &ni);
        if (ni.hugepages_1gi >= 0) {
                quantity(cap, "hugepages-1Gi", ni.hugepages_1gi, false);
                quantity(al, "hugepages-1Gi", ni.hugepages_1gi, false);
        }
        if (ni.hugepages_2mi >= 0) {
                quantity(cap, "hugepages-2Mi", ni.hugepages_2mi, false);
                quantity(al, "hugepages-2Mi", ni.hugepages_2mi, false);
        }
        /* the managers' part: pressure conditions, device-plugin resources */
        agent_managers_node_status(a, mgr);
        res = json_object_get(json_object_get(mgr, "devicePlugins"), "resources");
        json_array_foreach(res, i, c) {
                const char *name = json_string_value(json_object_get(c, "name"));

                if (!name)
                        continue;
                quantity(cap, name, json_integer_value(json_object_get(c, "capacity")), false);
                quantity(al, name, json_integer_value(json_object_get(c, "allocatable")), false);
        }
        json_array_foreach(json_object_get(mgr, "conditions"), i, c) json_array_append(conds, c);
        if (a->rt->state != AGENT_RUNTIME_READY)
                json_array_append_new(conds, condition("Ready", "False", "KubeletNotReady",
                                                       a->rt->state == AGENT_RUNTIME_DOWN ? "container runtime is down"
                                                                                          : "starting"));
        else if (*a->rt->network_error)
                json_array_append_new(conds, condition("Ready", "False", "KubeletNotReady", a->rt->network_error));
        else
                json_array_append_new(conds,
                                      condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"));
        agent_cluster_node_condition_events(a, conds);
        node = json_pack("{s:{s:o,s:{s:s}},s:{s:o},s:{s:o,s:o,s:o,s:[{s:s,s:s},{s:s,s:s}],s:o,s:{s:{s:I}}}}",
                         "metadata", "labels", labels, "annotations", ANNOTATION_ATTACH, "true", "spec", "taints",
                         kube_node_taints_parse(a->core.opt.register_taints), "status", "capacity", cap, "allocatable",
                         al, "conditions", conds, "addresses", "type", "InternalIP", "address", ip, "type", "Hostname",
                         "address", a->core.opt.node_name, "nodeInfo", node_info(a, &ni), "daemonEndpoints",
                         "kubeletEndpoint", "Port", (json_int_t) agent_kubelet_port(a));
        return node;
}

/* ---- the pods bound to this node: the source's hooks ---------------------------- */

static bool source_pod(void *userdata, const char *uid, KubeSourcePod *ret) {
        const LcPod *p = agent_find_pod(userdata, uid);

        if (!p)
                return false;
        *ret = (KubeSourcePod){ .wanted = p->wanted,
                                .grace = p->spec->pod->termination_grace_period_seconds,
                                .ns = p->spec->pod->namespace_,
                                .name = p->spec->pod->name,
                                .cgroup = p->spec->cgroup.path };
        return true;
}

/* the source's set to the merge's queue, then the stops of pods deleted
 * with a shorter grace (the kill table keeps the shorter of the relist's
 * stop and this one), then what the managers decided */
static void source_update(void *userdata, PodsrcSet *set, const KubeSourceStop *stops, size_t n_stops) {
        Agent *a = userdata;
        AgentUpdate *u = agent_update_new(AGENT_UPDATE_API_SET, agent_now_usec());

        if (!u) {
                cub_log(LOG_ERR, "API server: pods: out of memory");
                return;
        }
        u->set = *set;
        *set = (PodsrcSet){};
        agent_update_push(a, u);
        for (size_t i = 0; i < n_stops; i++)
                agent_submit_kill(a, stops[i].uid, stops[i].ns, stops[i].name, stops[i].cgroup, stops[i].grace);
        agent_apply_actions(a);
}

/* ---- their status, and the final DELETE --------------------------------------------- */

#define STATUS_TICK_USEC CUB_USEC_PER_SEC
#define STATUS_RESYNC_TICKS 10

/* Each second: the status of every API pod of the table, as /pods renders
 * it (rendered when what it depends on changed, sent when it did), the
 * final DELETE of each deleted pod whose containers are stopped, and the
 * statuses of pods the API no longer has forgotten. */
static void status_tick(Agent *a) {
        const json_t *set = kube_source_pods(a->kube);
        ApiPodsInfo info;
        const char *uid;
        json_t *o, *keep;

        agent_api_pods_info(a, &info);
        a->cluster->ticks++;
        kube_source_tick(a->kube);
        if (!kube_source_synced(a->kube))
                return;
        keep = json_object();
        (void) json_object_update(keep, (json_t *) set);
        for (size_t i = 0; keep && i < a->table.n_pods; i++) {
                const LcPod *p = a->table.pods[i];
                bool api = agent_pod_from_api(p) && json_object_get(set, p->spec->pod->uid);

                /* a static pod's events too, once the node is there (kubelet's) */
                if (!api && (agent_pod_from_api(p) || !p->wanted || !kube_node_registered(a->cluster->node)))
                        continue;
                if (!api)
                        (void) json_object_set_new(keep, p->spec->pod->uid, json_true());
                /* kubelet's status manager resyncs every 10 s */
                if (api && a->cluster->ticks % STATUS_RESYNC_TICKS == 0)
                        (void) kube_status_reconcile(
                                a->cluster->status, p->spec->pod->uid,
                                json_object_get(json_object_get(set, p->spec->pod->uid), "status"));
                /* a pod already terminal in the API when cubelet first saw it
                 * keeps the API's status; one whose status is the one sent
                 * and depends on the same bytes is not rendered again */
                if (api && !p->api_terminal)
                        agent_cluster_publish_status(a, p, &info, p->spec->pod->uid);
                for (size_t k = 0; k < p->n_events; k++) {
                        const LcEvent *e = &p->events[k];
                        KubeEventInput in = {
                                .ns = p->spec->pod->namespace_,
                                .pod = p->spec->pod->name,
                                .uid = p->spec->pod->uid,
                                .warning = e->warning,
                                .reason = e->reason,
                                .message = e->message ? e->message : "",
                                .count = e->count,
                                .first_unix = ((int64_t) e->first_usec + info.wall_minus_mono_usec) / 1000000,
                                .last_unix = ((int64_t) e->last_usec + info.wall_minus_mono_usec) / 1000000,
                        };

                        kube_events_record(a->cluster->events, &in);
                }
        }
        json_object_foreach((json_t *) kube_source_waiting(a->kube), uid, o) {
                json_int_t first = json_integer_value(json_object_get(o, "first"));
                KubeEventInput in = { .ns = json_string_value(json_object_get(o, "ns")),
                                      .pod = json_string_value(json_object_get(o, "name")),
                                      .uid = uid,
                                      .warning = true,
                                      .reason = "FailedMount",
                                      .message = json_string_value(json_object_get(o, "message")),
                                      .count = 1,
                                      .first_unix = first,
                                      .last_unix = first };

                kube_events_record(a->cluster->events, &in);
        }
        for (size_t i = 0; kube_node_registered(a->cluster->node) && i < a->cluster->n_node_events; i++) {
                KubeEventInput in = { .kind = "Node",
                                      .ns = "default",
                                      .pod = a->core.opt.node_name,
                                      .uid = a->core.opt.node_name,
                                      .reason = a->cluster->node_events[i].reason,
                                      .message = a->cluster->node_events[i].message,
                                      .count = a->cluster->node_events[i].count,
                                      .first_unix = a->cluster->node_events[i].first_unix,
                                      .last_unix = a->cluster->node_events[i].last_unix };

                kube_events_record(a->cluster->events, &in);
        }
        kube_events_prune(a->cluster->events, keep ?: set);
        json_decref(keep);
        json_object_foreach((json_t *) set, uid, o) {
                const json_t *meta = json_object_get(o, "metadata");

                if (!json_object_get(meta, "deletionTimestamp") ||
                    json_object_get(json_object_get(meta, "annotations"), "kubernetes.io/config.mirror") ||
                    agent_find_pod(a, uid) || agent_is_killing(a, uid))
                        continue;
                kube_status_delete(a->cluster->status, json_string_value(json_object_get(meta, "namespace")),
                                   json_string_value(json_object_get(meta, "name")), uid);
        }
        agent_cluster_mirror_pods(a, set, &info);
        kube_status_prune(a->cluster->status, set);
}

static int on_status_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Agent *a = userdata;
        uint64_t t0 = cub_now_usec(CLOCK_THREAD_CPUTIME_ID);

        (void) sd_event_source_set_time(s, usec + STATUS_TICK_USEC);
        status_tick(a);
        a->cluster->tick_cpu_usec += cub_now_usec(CLOCK_THREAD_CPUTIME_ID) - t0;
        return 0;
}

int agent_cluster_start(Agent *a, CubError *err) {
        KubeConfig cfg = {};
        KubeSourceOptions so = {
                .node_name = a->core.opt.node_name,
                .state_dir = a->core.opt.state_dir,
                .offline_start = a->core.kc->offline_pods == POD_OFFLINE_START,
        };
        KubeSourceHooks hooks = { .update = source_update, .pod = source_pod, .userdata = a };
        KubeNodeOptions no = {
                .name = a->core.opt.node_name,
                .register_node = a->core.opt.register_node,
                .update_usec = a->core.opt.node_status_update_usec,
                .report_usec = a->core.opt.node_status_report_usec,
                .lease_seconds = a->core.opt.node_lease_seconds,
        };
        int r;

        a->cluster = calloc(1, sizeof(*a->cluster));
        if (!a->cluster)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (!a->core.opt.kubeconfig)
                return 0;
        r = kube_config_load(a->core.opt.kubeconfig, &cfg, err);
        if (r >= 0)
                r = kube_client_new(a->core.event, &cfg, &a->cluster->client, err);
        kube_config_done(&cfg);
        if (r >= 0)
                r = kube_node_new(a->core.event, a->cluster->client, &no, node_json, a, &a->cluster->node, err);
        if (r >= 0)
                r = kube_node_start(a->cluster->node, err);
        if (r >= 0)
                r = kube_source_new(a->core.event, a->cluster->client, &so, &hooks, &a->kube, err);
        if (r >= 0)
                r = kube_status_new(a->cluster->client, &a->cluster->status, err);
        if (r >= 0)
                r = kube_events_new(a->cluster->client, a->core.opt.node_name, &a->cluster->events, err);
        if (r >= 0)
                agent_cluster_node_event(a, "Starting", "Starting kubelet.");
        if (r >= 0 && (r = sd_event_add_time_relative(a->core.event, &a->cluster->status_timer, CLOCK_MONOTONIC,
                                                      STATUS_TICK_USEC, CUB_USEC_PER_MSEC * 10, on_status_tick, a)) < 0)
                r = cub_err_set(err, -r, "sd-event: %s", strerror(-r));
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(a->cluster->status_timer, SD_EVENT_ON);
        (void) sd_event_source_set_description(a->cluster->status_timer, "kube-pod-status");
        kube_source_start(a->kube);
        cub_log(LOG_INFO, "API server %s: node '%s' (kubeconfig '%s')", kube_client_server(a->cluster->client),
                a->core.opt.node_name, a->core.opt.kubeconfig);
        return 0;
}

void agent_cluster_changed(Agent *a) {
        if (a->cluster)
                kube_node_changed(a->cluster->node);
}

void agent_cluster_status(Agent *a, json_t *doc) {
        json_t *o;

        if (!a->cluster || !a->cluster->node)
                return;
        o = kube_node_status_json(a->cluster->node);
        if (o) {
                const KubeClientStats *s = kube_client_stats(a->cluster->client);

                json_object_set_new(o, "requests", json_integer((json_int_t) s->requests));
                kube_source_status(a->kube, o);
                json_object_set_new(o, "podStatus", kube_status_json(a->cluster->status));
                json_object_set_new(o, "events", kube_events_status_json(a->cluster->events));
                json_object_set_new(o, "failures", json_integer((json_int_t) s->failures));
                json_object_set_new(o, "retryAfterHolds", json_integer((json_int_t) s->holds));
                /* the status tick's own CPU (the loop's thread), µs since the start */
                json_object_set_new(o, "statusTickCpuUsec", json_integer((json_int_t) a->cluster->tick_cpu_usec));
        }
        json_object_set_new(doc, "apiServer", o);
}

void agent_cluster_free(Agent *a) {
        if (!a->cluster)
                return;
        sd_event_source_disable_unref(a->cluster->status_timer);
        kube_status_free(a->cluster->status);
        kube_events_free(a->cluster->events);
        json_decref(a->cluster->node_conditions);
        kube_source_free(a->kube);
        kube_node_free(a->cluster->node);
        kube_client_free(a->cluster->client);
        free(a->cluster);
        a->cluster = NULL;
}
