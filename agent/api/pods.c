/* SPDX-License-Identifier: Apache-2.0 */
/* The pod table as the HTTP API shows it (pods.h). */
#include "pods.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../shutdown/shutdown.h"

const char *api_rfc3339(int64_t unix_s, char buf[static 32]) {
        struct tm tm;
        time_t t = (time_t) unix_s;

        gmtime_r(&t, &tm);
        (void) strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
        return buf;
}

static int64_t pod_start(const LcPod *p, const ApiPodsInfo *info) {
        return ((int64_t) p->latency.event + info->wall_minus_mono_usec) / 1000000;
}

static json_t *string_map(const PodStringMap *m) {
        json_t *o = json_object();

        for (size_t i = 0; i < m->n; i++)
                json_object_set_new(o, m->keys[i], json_string(m->values[i]));
        return o;
}

static json_t *strv(const PodStrv *v) {
        json_t *a = json_array();

        for (size_t i = 0; i < v->n; i++)
                json_array_append_new(a, json_string(v->items[i]));
        return a;
}

static json_t *resources(const PodResourceList *l) {
        json_t *o = json_object();
        char buf[CUB_QUANTITY_STR_MAX];

        for (size_t i = 0; i < l->n; i++)
                json_object_set_new(
                        o, l->items[i].name,
                        json_string(cub_quantity_format(l->items[i].q, strcmp(l->items[i].name, "cpu") == 0, buf)));
        return o;
}

static json_t *container_spec(const PodContainer *c) {
        json_t *cj = json_pack("{s:s,s:s,s:s,s:{s:o,s:o}}", "name", c->name, "image", c->image, "imagePullPolicy",
                               c->image_pull_policy ? c->image_pull_policy : "IfNotPresent", "resources", "requests",
                               resources(&c->requests), "limits", resources(&c->limits));

        if (!cj)
                return NULL;
        if (c->command.n)
                json_object_set_new(cj, "command", strv(&c->command));
        if (c->args.n)
                json_object_set_new(cj, "args", strv(&c->args));
        if (c->working_dir)
                json_object_set_new(cj, "workingDir", json_string(c->working_dir));
        if (c->restart_policy)
                json_object_set_new(cj, "restartPolicy", json_string(c->restart_policy));
        if (c->n_env) {
                json_t *env = json_array();

                for (size_t i = 0; i < c->n_env; i++)
                        json_array_append_new(env, c->env[i].value ? json_pack("{s:s,s:s}", "name", c->env[i].name,
                                                                               "value", c->env[i].value)
                                                                   : json_pack("{s:s}", "name", c->env[i].name));
                json_object_set_new(cj, "env", env);
        }
        if (c->n_ports) {
                json_t *ports = json_array();

                for (size_t i = 0; i < c->n_ports; i++) {
                        const PodPort *pp = &c->ports[i];
                        json_t *pj = json_pack("{s:i,s:s}", "containerPort", (int) pp->container_port, "protocol",
                                               pp->protocol ? pp->protocol : "TCP");

                        if (pp->name)
                                json_object_set_new(pj, "name", json_string(pp->name));
                        if (pp->host_port)
                                json_object_set_new(pj, "hostPort", json_integer(pp->host_port));
                        if (pp->host_ip)
                                json_object_set_new(pj, "hostIP", json_string(pp->host_ip));
                        json_array_append_new(ports, pj);
                }
                json_object_set_new(cj, "ports", ports);
        }
        return cj;
}

/* network: the pod network fields of the spec */
static json_t *strv_of(const PodStrv *v) {
        json_t *a = json_array();

        for (size_t i = 0; a && i < v->n; i++)
                json_array_append_new(a, json_string(v->items[i]));
        return a;
}

static void network_spec(const Pod *pod, json_t *spec) {
        if (pod->dns_policy)
                json_object_set_new(spec, "dnsPolicy", json_string(pod->dns_policy));
        if (pod->hostname)
                json_object_set_new(spec, "hostname", json_string(pod->hostname));
        if (pod->subdomain)
                json_object_set_new(spec, "subdomain", json_string(pod->subdomain));
        if (pod->set_hostname_as_fqdn)
                json_object_set_new(spec, "setHostnameAsFQDN", json_true());
        if (pod->dns_config_set) {
                json_t *dc = json_object(), *opts = json_array();

                if (pod->dns_config.nameservers.n)
                        json_object_set_new(dc, "nameservers", strv_of(&pod->dns_config.nameservers));
                if (pod->dns_config.searches.n)
                        json_object_set_new(dc, "searches", strv_of(&pod->dns_config.searches));
                for (size_t i = 0; i < pod->dns_config.n_options; i++) {
                        json_t *o = json_pack("{s:s}", "name", pod->dns_config.options[i].name);

                        if (o && pod->dns_config.options[i].value)
                                json_object_set_new(o, "value", json_string(pod->dns_config.options[i].value));
                        json_array_append_new(opts, o);
                }
                if (pod->dns_config.n_options)
                        json_object_set_new(dc, "options", opts);
                else
                        json_decref(opts);
                json_object_set_new(spec, "dnsConfig", dc);
        }
        if (pod->n_host_aliases) {
                json_t *ha = json_array();

                for (size_t i = 0; i < pod->n_host_aliases; i++)
                        json_array_append_new(ha, json_pack("{s:s,s:o}", "ip", pod->host_aliases[i].ip, "hostnames",
                                                            strv_of(&pod->host_aliases[i].hostnames)));
                json_object_set_new(spec, "hostAliases", ha);
        }
}

static json_t *spec_json(const Pod *pod, const char *node_name) {
        json_t *cs = json_array(), *ics = json_array(), *tol = json_array(), *spec;

        for (size_t i = 0; i < pod->n_containers; i++)
                json_array_append_new(cs, container_spec(&pod->containers[i]));
        for (size_t i = 0; i < pod->n_init_containers; i++)
                json_array_append_new(ics, container_spec(&pod->init_containers[i]));
        for (size_t i = 0; i < pod->n_tolerations; i++) {
                const PodToleration *t = &pod->tolerations[i];
                json_t *tj = json_pack("{s:s}", "operator", t->op ? t->op : "Equal");

                if (t->key)
                        json_object_set_new(tj, "key", json_string(t->key));
                if (t->value)
                        json_object_set_new(tj, "value", json_string(t->value));
                if (t->effect)
                        json_object_set_new(tj, "effect", json_string(t->effect));
                if (t->toleration_seconds_set)
                        json_object_set_new(tj, "tolerationSeconds", json_integer(t->toleration_seconds));
                json_array_append_new(tol, tj);
        }
        spec = json_pack("{s:o,s:s,s:I,s:s,s:b,s:i,s:s}", "containers", cs, "restartPolicy", pod->restart_policy,
                         "terminationGracePeriodSeconds", (json_int_t) pod->termination_grace_period_seconds,
                         "nodeName", pod->node_name ? pod->node_name : node_name, "hostNetwork", pod->host_network,
                         "priority", (int) pod->priority, "preemptionPolicy",
                         pod->preemption_policy ? pod->preemption_policy : "PreemptLowerPriority");
        if (!spec) {
                json_decref(ics);
                json_decref(tol);
                return NULL;
        }
        if (pod->n_init_containers)
                json_object_set_new(spec, "initContainers", ics);
        else
                json_decref(ics);
        json_object_set_new(spec, "tolerations", tol);
        if (pod->priority_class_name)
                json_object_set_new(spec, "priorityClassName", json_string(pod->priority_class_name));
        if (pod->node_selector.n)
                json_object_set_new(spec, "nodeSelector", string_map(&pod->node_selector));
        if (pod->resources_set) {
                /* pod-level resources, as defaulted; empty lists are left out (omitempty) */
                json_t *r = json_object();

                if (r && pod->resources_requests.n)
                        json_object_set_new(r, "requests", resources(&pod->resources_requests));
                if (r && pod->resources_limits.n)
                        json_object_set_new(r, "limits", resources(&pod->resources_limits));
                json_object_set_new(spec, "resources", r);
        }
        network_spec(pod, spec);
        return spec;
}

static json_t *terminated(const LcContainerStatus *st, const char *cid) {
        char a[32], b[32];
        json_t *t = json_pack("{s:i,s:s}", "exitCode", (int) st->exit_code, "reason",
                              *st->reason     ? st->reason
                              : st->exit_code ? "Error"
                                              : "Completed");

        if (t && st->started_at)
                json_object_set_new(t, "startedAt", json_string(api_rfc3339(st->started_at / 1000000000, a)));
        if (t && st->finished_at)
                json_object_set_new(t, "finishedAt", json_string(api_rfc3339(st->finished_at / 1000000000, b)));
        if (t && st->term_message)
                json_object_set_new(t, "message", json_string(st->term_message));
        if (t && cid)
                json_object_set_new(t, "containerID", json_string(cid));
        return t;
}

/* a container's state when it runs (running) or has ended; NULL: it waits */
static json_t *run_state(const LcPod *p, const LcContainerStatus *st, bool running, const char *cid,
                         const ApiPodsInfo *info) {
        char when[32];

        if (running)
                return json_pack("{s:{s:s}}", "running", "startedAt",
                                 api_rfc3339(st->started_at ? st->started_at / 1000000000 : pod_start(p, info), when));
        if (st->state == LC_CONTAINER_TERMINATED)
                return json_pack("{s:o}", "terminated", terminated(st, cid));
        return NULL;
}

static json_t *container_status(const LcPod *p, size_t k, const PodContainer *c, bool init, const ApiPodsInfo *info,
                                bool *ret_ready) {
        const LcContainerStatus *st = &p->statuses[k];
        char cid[128];
        bool running = st->state == LC_CONTAINER_RUNNING || st->state == LC_CONTAINER_TERMINATING;
        bool ready;
        json_t *state, *last, *cj;

        /* an init container that completed is ready, as kubelet reports it */
        ready = lc_container_ready(p, k) ||
                (init && !pod_container_is_sidecar(c) && st->state == LC_CONTAINER_TERMINATED && st->exit_code == 0);

        (void) snprintf(cid, sizeof(cid), "%s://%s", info->runtime ? info->runtime : "containerd", st->id);
        state = run_state(p, st, running, cid, info);
        if (!state) {
                /* kubelet's waiting reason and message: agent/lifecycle/reasons.c, as cubelet status */
                char msg[LC_MESSAGE_MAX];
                const char *why = lc_container_waiting(p, k, msg, sizeof(msg));

                state = *msg ? json_pack("{s:{s:s,s:s}}", "waiting", "reason", why ? why : "ContainerCreating",
                                         "message", msg)
                             : json_pack("{s:{s:s}}", "waiting", "reason", why ? why : "ContainerCreating");
        }
        last = st->terminated_before && st->state != LC_CONTAINER_TERMINATED
                       ? json_pack("{s:o}", "terminated", terminated(st, NULL))
                       : json_object();
        /* probes and hooks: ready and started as the probes say */
        cj = json_pack("{s:s,s:o,s:o,s:b,s:i,s:s,s:s,s:b}", "name", c->name, "state", state, "lastState", last, "ready",
                       ready, "restartCount", (int) st->restarts, "image", c->image, "imageID", "", "started",
                       lc_container_started(p, k));
        if (cj && *st->id) {
                /* in-place resize: what is allocated, and what the running
                 * container has (the spec before the resize while it is in
                 * progress) */
                const PodContainer *ac = p->resize.actual ? pod_container_at(p->resize.actual->pod, k, NULL) : c;

                json_object_set_new(cj, "containerID", json_string(cid));
                if (c->requests.n > 0)
                        json_object_set_new(cj, "allocatedResources", resources(&c->requests));
                if (ac->requests.n > 0 || ac->limits.n > 0)
                        json_object_set_new(cj, "resources",
                                            json_pack("{s:o,s:o}", "limits", resources(&ac->limits), "requests",
                                                      resources(&ac->requests)));
        }
        if (cj && info->container_extra)
                info->container_extra(info->extra_userdata, p, c->name, cj);
        *ret_ready = ready;
        return cj;
}

/* an ephemeral container's status (kubelet's ephemeralContainerStatuses):
 * never ready, never restarted */
static json_t *ephemeral_status(const LcPod *p, size_t e, const ApiPodsInfo *info) {
        const PodContainer *c = &p->spec->pod->ephemeral_containers[e];
        const LcContainerStatus *st = &p->eph[e];
        bool running = st->state == LC_CONTAINER_RUNNING;
        char cid[128];
        json_t *state, *cj;

        (void) snprintf(cid, sizeof(cid), "%s://%s", info->runtime ? info->runtime : "containerd", st->id);
        state = run_state(p, st, running, cid, info)
                        ?: json_pack("{s:{s:s}}", "waiting", "reason", "ContainerCreating");
        cj = json_pack("{s:s,s:o,s:{},s:b,s:i,s:s,s:s,s:b}", "name", c->name, "state", state, "lastState", "ready",
                       false, "restartCount", 0, "image", c->image, "imageID", "", "started", running);
        if (cj && *st->id)
                json_object_set_new(cj, "containerID", json_string(cid));
        return cj;
}

/* probes and hooks: kubelet's condition with its reason, message and
 * lastTransitionTime (since: unix s, 0 = unknown) */
/* stopped by the graceful node shutdown (agent/shutdown): kubelet sets
 * DisruptionTarget with the pod's message */
static bool shut_down(const LcPod *p) {
        return strcmp(p->reason, SHUTDOWN_REASON) == 0 && strcmp(p->message, SHUTDOWN_MESSAGE) == 0;
}

static json_t *condition(const char *type, bool status, const char *reason, const char *message, int64_t since) {
        json_t *c = json_pack("{s:s,s:s,s:n}", "type", type, "status", status ? "True" : "False", "lastProbeTime");
        char when[32];

        if (c && since > 0)
                json_object_set_new(c, "lastTransitionTime", json_string(api_rfc3339(since, when)));
        if (c && reason)
                json_object_set_new(c, "reason", json_string(reason));
        if (c && message && *message)
                json_object_set_new(c, "message", json_string(message));
        return c;
}

void *api_pod_status_json(const LcPod *p, const ApiPodsInfo *info) {
        const Pod *pod = p->spec->pod;
        json_t *status, *ics = json_array(), *cs = json_array(), *conds;
        bool all_ready = pod->n_containers > 0, initialized = true, sandbox = p->observed && !p->terminal;
        LcPodConditions pc;
        char when[32];

        for (size_t k = 0; k < p->n; k++) {
                bool init, ready;
                const PodContainer *c = pod_container_at(pod, k, &init);
                json_t *cj = container_status(p, k, c, init, info, &ready);

                if (init) {
                        if (!pod_container_is_sidecar(c) &&
                            !(p->statuses[k].state == LC_CONTAINER_TERMINATED && p->statuses[k].exit_code == 0))
                                initialized = false;
                        json_array_append_new(ics, cj);
                } else {
                        all_ready = all_ready && ready;
                        json_array_append_new(cs, cj);
                }
        }
        lc_pod_conditions(p, &pc);
        (void) initialized;
        (void) all_ready;
        conds = json_pack(
                "[o,o,o,o,o]",
                condition("PodReadyToStartContainers", sandbox, NULL, NULL, p->cond_since[LC_POD_COND_SANDBOX]),
                condition("Initialized", pc.initialized, pc.initialized_reason, pc.init_message,
                          p->cond_since[LC_POD_COND_INITIALIZED]),
                condition("Ready", pc.ready, pc.gates_reason ?: pc.ready_reason,
                          pc.gates_reason ? pc.gates_message : pc.message, p->cond_since[LC_POD_COND_READY]),
                condition("ContainersReady", pc.containers_ready, pc.ready_reason, pc.message,
                          p->cond_since[LC_POD_COND_CONTAINERS_READY]),
                condition("PodScheduled", true, NULL, NULL, p->latency.event ? pod_start(p, info) : 0));
        /* kubelet's eviction manager and admission preemption: the pod's
         * disruption, for controllers and PodDisruptionBudgets */
        if (conds && p->terminal && (p->evicted || strcmp(p->reason, "Preempted") == 0 || shut_down(p)))
                json_array_append_new(conds, condition("DisruptionTarget", true, "TerminationByKubelet",
                                                       p->evicted || shut_down(p)
                                                               ? p->message
                                                               : "Pod was preempted by Kubelet to accommodate a "
                                                                 "critical pod.",
                                                       p->cond_since[LC_POD_COND_READY]));
        /* in-place resize: kubelet 1.34's two conditions */
        if (conds && *p->resize.pending)
                json_array_append_new(conds, condition("PodResizePending", true, p->resize.pending, p->resize.message,
                                                       p->resize.pending_since));
        if (conds && p->resize.in_progress)
                json_array_append_new(conds, condition("PodResizeInProgress", true, *p->resize.error ? "Error" : NULL,
                                                       p->resize.error, p->resize.progress_since));
        status = json_pack("{s:s,s:o,s:s,s:o,s:o}", "phase", lc_phase_to_string(p->phase), "conditions", conds,
                           "qosClass", pod_qos_to_string(p->spec->qos), "initContainerStatuses", ics,
                           "containerStatuses", cs);
        if (status && p->n_eph > 0 && pod->n_ephemeral_containers > 0) {
                json_t *ecs = json_array();

                for (size_t e = 0; ecs && e < p->n_eph && e < pod->n_ephemeral_containers; e++)
                        json_array_append_new(ecs, ephemeral_status(p, e, info));
                json_object_set_new(status, "ephemeralContainerStatuses", ecs);
        }
        if (status && *p->reason)
                json_object_set_new(status, "reason", json_string(p->reason));
        if (status && *p->message)
                json_object_set_new(status, "message", json_string(p->message));
        if (status && info->host_ip) {
                json_object_set_new(status, "hostIP", json_string(info->host_ip));
                json_object_set_new(status, "hostIPs", json_pack("[{s:s}]", "ip", info->host_ip));
        }
        /* network: the sandbox's IP; a host-network pod's is the node's */
        if (status && sandbox && (*p->pod_ip || (pod->host_network && info->host_ip))) {
                const char *ip = *p->pod_ip ? p->pod_ip : info->host_ip;

                json_object_set_new(status, "podIP", json_string(ip));
                json_object_set_new(status, "podIPs", json_pack("[{s:s}]", "ip", ip));
        }
        if (status && p->latency.event)
                json_object_set_new(status, "startTime", json_string(api_rfc3339(pod_start(p, info), when)));
        if (status && p->rejected)
                /* kubelet's rejectPod sets the status to these alone: no
                 * conditions, container statuses or addresses (the kubelet
                 * oracle compares them) */
                for (const char *const *k = (const char *const[]){ "conditions", "initContainerStatuses",
                                                                   "containerStatuses", "ephemeralContainerStatuses",
                                                                   "hostIP", "hostIPs", "podIP", "podIPs", NULL };
                     *k; k++)
                        (void) json_object_del(status, *k);
        return status;
}

void *api_pod_json(const LcPod *p, const ApiPodsInfo *info) {
        const Pod *pod = p->spec->pod;
        json_t *meta;
        char when[32];

        meta = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o}", "name", pod->name, "namespace", pod->namespace_, "uid", pod->uid,
                         "creationTimestamp", api_rfc3339(pod_start(p, info), when), "labels", string_map(&pod->labels),
                         "annotations", string_map(&pod->annotations));
        return json_pack("{s:s,s:s,s:o,s:o,s:o}", "kind", "Pod", "apiVersion", "v1", "metadata", meta, "spec",
                         spec_json(pod, info->node_name), "status", api_pod_status_json(p, info));
}

char *api_pod_list_json(LcPod *const *pods, size_t n, const ApiPodsInfo *info) {
        json_t *items = json_array(), *doc;
        char *text;

        for (size_t i = 0; i < n; i++)
                if (pods[i]->wanted)
                        json_array_append_new(items, api_pod_json(pods[i], info));
        doc = json_pack("{s:s,s:s,s:{},s:o}", "kind", "PodList", "apiVersion", "v1", "metadata", "items", items);
        if (!doc)
                return NULL;
        text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(doc);
        return text;
}

void api_pods_gauges(LcPod *const *pods, size_t n, ApiGauges *g) {
        g->pods = g->running_pods = 0;
        g->containers_running = g->containers_exited = g->containers_created = g->containers_unknown = 0;
        for (size_t i = 0; i < n; i++) {
                const LcPod *p = pods[i];

                if (!p->wanted)
                        continue;
                g->pods++;
                g->running_pods += p->phase == LC_PHASE_RUNNING;
                for (size_t k = 0; k < p->n; k++) {
                        if (!*p->statuses[k].id)
                                continue;
                        switch (p->statuses[k].state) {
                        case LC_CONTAINER_RUNNING:
                        case LC_CONTAINER_TERMINATING:
                                g->containers_running++;
                                break;
                        case LC_CONTAINER_TERMINATED:
                                g->containers_exited++;
                                break;
                        case LC_CONTAINER_CREATED:
                                g->containers_created++;
                                break;
                        default:
                                g->containers_unknown++;
                                break;
                        }
                }
        }
}

int api_snapshot_add_pods(ApiSnapshot *s, LcPod *const *pods, size_t n, const ApiPodsInfo *info) {
        for (size_t i = 0; i < n; i++) {
                const LcPod *p = pods[i];
                const Pod *pod = p->spec->pod;
                ApiPodRef *r;

                if (!p->wanted)
                        continue;
                /* a pod cgroup has files; cgroupsPerQOS: false has none (the path is cgroupRoot, shared) */
                r = api_snapshot_add_pod(s, pod->namespace_, pod->name, pod->uid,
                                         p->spec->cgroup.n_files ? p->spec->cgroup.path : "", p->spec->log_dir,
                                         pod_start(p, info));
                if (!r)
                        return -ENOMEM;
                for (size_t k = 0; k < p->n; k++) {
                        const LcContainerStatus *st = &p->statuses[k];

                        if (api_pod_ref_add_container(r, pod_container_at(pod, k, NULL)->name, st->id,
                                                      st->state == LC_CONTAINER_RUNNING ||
                                                              st->state == LC_CONTAINER_TERMINATING,
                                                      st->started_at) < 0)
                                return -ENOMEM;
                }
                /* ephemeral containers: their logs and exec as the others' */
                for (size_t e = 0; e < p->n_eph && e < pod->n_ephemeral_containers; e++)
                        if (api_pod_ref_add_container(r, pod->ephemeral_containers[e].name, p->eph[e].id,
                                                      p->eph[e].state == LC_CONTAINER_RUNNING,
                                                      p->eph[e].started_at) < 0)
                                return -ENOMEM;
        }
        return 0;
}
