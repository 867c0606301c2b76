/* SPDX-License-Identifier: Apache-2.0 */
/* The API server as the node's fourth peer (--kubeconfig): the loop's side
 * of agent/cluster's source (its hooks: the set into the merge's queue)
 * and of its status publisher (the Node as this agent sees it, the pod
 * table as its snapshot), both objects of agent/cluster. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "../../cri/cri.h"
#include "../cluster/publisher.h"
#include "../node/derive.h"
#include "../node/info.h"
#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "agent-internal.h"

#define ANNOTATION_ATTACH "volumes.kubernetes.io/controller-managed-attach-detach"
/* the version a node reports: the Kubernetes minor whose semantics cubelet
 * follows, and cubelet's own as the build part */
#define KUBELET_VERSION "v1.34.0-cubelet"

/* v: millicores for cpu, else units (bytes, counts) */
static void quantity(json_t *o, const char *name, int64_t v, bool cpu) {
        char buf[CUB_QUANTITY_STR_MAX];
        CubQuantity q = cpu ? cub_quantity_from_milli(v) : cub_quantity_from_units(v);

        json_object_set_new(o, name, json_string(cub_quantity_format(q, cpu, buf)));
}

/* a resource list as the Node's status has it: cpu in millicores, the rest whole */
static void resources_json(json_t *o, const PodResourceList *l) {
        for (size_t i = 0; i < l->n; i++) {
                bool cpu = strcmp(l->items[i].name, "cpu") == 0;

                quantity(o, l->items[i].name,
                         cpu ? cub_quantity_milli(l->items[i].q) : cub_quantity_value(l->items[i].q), cpu);
        }
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
        _cleanup_(pod_resource_list_done) PodResourceList capacity = {}, alloc = {};
        _cleanup_(json_decrefp) json_t *mgr = json_object();
        json_t *node, *labels, *cap = json_object(), *al = json_object(), *conds = json_array(), *c, *res;
        const char *ip = a->core.node.ip[0] ? a->core.node.ip : "127.0.0.1";
        AgentNodeInfo ni;
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
        if (agent_node_resources(a->core.kc, &a->core.cg, a->core.opt.state_dir, &capacity, &alloc, &err) >= 0) {
                resources_json(cap, &capacity);
                resources_json(al, &alloc);
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
        kube_publisher_node_conditions(a->cluster, conds);
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

/* ---- the status publisher's hooks (agent/cluster/publisher.h) -------------------------- */

/* the loop's snapshot for one tick: the pod table, as /pods renders it */
static void pub_snapshot(void *userdata, KubePubSnapshot *ret) {
        Agent *a = userdata;

        *ret = (KubePubSnapshot){ .pods = (const LcPod *const *) a->table.pods, .n_pods = a->table.n_pods };
        agent_api_pods_info(a, &ret->info);
}

static bool pub_stopping(void *userdata, const char *uid) {
        return agent_is_killing(userdata, uid);
}

int agent_cluster_start(Agent *a, CubError *err) {
        KubeConfig cfg = {};
        KubeSourceOptions so = {
                .node_name = a->core.opt.node_name,
                .state_dir = a->core.opt.state_dir,
                .offline_start = a->core.kc->offline_pods == POD_OFFLINE_START,
        };
        KubeSourceHooks hooks = { .update = source_update, .pod = source_pod, .userdata = a };
        KubePublisherHooks ph = {
                .node = node_json, .snapshot = pub_snapshot, .stopping = pub_stopping, .userdata = a
        };
        KubeNodeOptions no = {
                .name = a->core.opt.node_name,
                .register_node = a->core.opt.register_node,
                .update_usec = a->core.opt.node_status_update_usec,
                .report_usec = a->core.opt.node_status_report_usec,
                .lease_seconds = a->core.opt.node_lease_seconds,
        };
        KubeClient *client = NULL;
        int r;

        if (!a->core.opt.kubeconfig)
                return 0;
        r = kube_config_load(a->core.opt.kubeconfig, &cfg, err);
        if (r >= 0)
                r = kube_client_new(a->core.event, &cfg, &client, err);
        kube_config_done(&cfg);
        if (r >= 0)
                r = kube_publisher_new(a->core.event, client, &no, &ph, &a->cluster, err); /* takes client */
        if (r >= 0)
                r = kube_source_new(a->core.event, kube_publisher_client(a->cluster), &so, &hooks, &a->kube, err);
        if (r < 0)
                return r;
        kube_publisher_set_source(a->cluster, a->kube);
        kube_source_start(a->kube);
        cub_log(LOG_INFO, "API server %s: node '%s' (kubeconfig '%s')",
                kube_client_server(kube_publisher_client(a->cluster)), a->core.opt.node_name, a->core.opt.kubeconfig);
        return 0;
}

void agent_cluster_changed(Agent *a) {
        if (a->cluster)
                kube_publisher_node_changed(a->cluster);
}

void agent_cluster_status(Agent *a, json_t *doc) {
        if (a->cluster)
                json_object_set_new(doc, "apiServer", kube_publisher_status_json(a->cluster));
}

void agent_cluster_free(Agent *a) {
        if (a->cluster)
                kube_publisher_set_source(a->cluster, NULL);
        a->kube = kube_source_free(a->kube);
        a->cluster = kube_publisher_free(a->cluster);
}
