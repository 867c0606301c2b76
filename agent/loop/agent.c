/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's event loop: desired pods from the sources, observed pods
 * from the runtime (relist), the jobs that converge them, and the manager
 * table (agent/managers) whose decisions the loop applies. */
#include "agent.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "../../cri/cri.h"
#include "../logs/logs.h"
#include "../managers/managers.h"
#include "../node/derive.h"
#include "../pod/network.h"
#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "agent-internal.h"

/* What this file alone reads and writes (AgentCore.run). */
struct AgentRun {
        ApiServer *status; /* the status socket */
        sd_event_source *worker_src;
        sd_event_source *reconcile_timer; /* cpuManagerReconcilePeriod (agent_update_resources) */
        bool terminating;                 /* a SIGTERM came */
};

static char *dup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

void agent_options_init(AgentOptions *o) {
        *o = (AgentOptions){ .relist_usec = CUB_USEC_PER_SEC,
                             .events_relist_usec = AGENT_EVENTS_RELIST_USEC,
                             .rescan_usec = 20 * CUB_USEC_PER_SEC,
                             .cpu_reconcile_usec = 10 * CUB_USEC_PER_SEC,
                             .workers = 4,
                             .register_node = true,
                             .node_status_update_usec = 10 * CUB_USEC_PER_SEC,
                             .node_status_report_usec = 300 * CUB_USEC_PER_SEC,
                             .node_lease_seconds = 40 };
        pod_kubelet_config_init(&o->kc);
}

void agent_options_done(AgentOptions *o) {
        free(o->manifest_dir);
        free(o->runtime_endpoint);
        free(o->cgroup_root);
        free(o->state_dir);
        free(o->node_name);
        free(o->socket_path);
        free(o->config_path);
        free(o->http_address);
        free(o->sys_root);
        free(o->kubelet_address);
        free(o->manifest_url);
        free(o->kubeconfig);
        free(o->node_ip);
        free(o->node_labels);
        free(o->register_taints);
        pod_kubelet_config_done(&o->kc);
        *o = (AgentOptions){};
}

/* ---- the managers' decisions ----------------------------------------------- */

static int on_actions(sd_event_source *s, void *userdata) {
        (void) s;
        agent_apply_actions(userdata);
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Agent *a = userdata;

        (void) s;
        (void) si;
        cub_log(LOG_WARNING,
                "SIGHUP: reloading the configuration is not supported, restart cubelet to apply changes to '%s'; "
                "reading the manifest directory again",
                a->core.opt.config_path ? a->core.opt.config_path : "(defaults)");
        agent_rescan(a);
        agent_apply_actions(a);
        return 0;
}

/* ---- lifecycle ------------------------------------------------------------ */

static char *render_status(void *userdata) {
        return agent_status_json(userdata);
}

static int copy_options(AgentOptions *dst, const AgentOptions *src) {
        agent_options_init(dst);
        dst->manifest_dir = dup_or_null(src->manifest_dir);
        dst->runtime_endpoint = dup_or_null(src->runtime_endpoint);
        dst->cgroup_root = dup_or_null(src->cgroup_root);
        dst->sys_root = dup_or_null(src->sys_root ? src->sys_root : "/sys");
        dst->state_dir = dup_or_null(src->state_dir);
        dst->node_name = dup_or_null(src->node_name);
        dst->socket_path = dup_or_null(src->socket_path);
        dst->config_path = dup_or_null(src->config_path);
        dst->manifest_url = dup_or_null(src->manifest_url);
        dst->http_check_usec = src->http_check_usec;
        dst->http_timeout_usec = src->http_timeout_usec;
        dst->relist_usec = src->relist_usec ? src->relist_usec : CUB_USEC_PER_SEC;
        dst->events_relist_usec = src->events_relist_usec;
        dst->rescan_usec = src->rescan_usec ? src->rescan_usec : 20 * CUB_USEC_PER_SEC;
        dst->cpu_reconcile_usec = src->cpu_reconcile_usec ? src->cpu_reconcile_usec : 10 * CUB_USEC_PER_SEC;
        dst->workers = src->workers ? src->workers : 4;
        dst->http_address = dup_or_null(src->http_address ? src->http_address : "127.0.0.1");
        dst->kubelet_address = dup_or_null(src->kubelet_address);
        dst->http_port = src->http_port;
        dst->kubeconfig = dup_or_null(src->kubeconfig);
        dst->node_ip = dup_or_null(src->node_ip);
        dst->node_labels = dup_or_null(src->node_labels);
        dst->register_taints = dup_or_null(src->register_taints);
        dst->register_node = src->register_node;
        dst->node_status_update_usec =
                src->node_status_update_usec ? src->node_status_update_usec : 10 * CUB_USEC_PER_SEC;
        dst->node_status_report_usec =
                src->node_status_report_usec ? src->node_status_report_usec : 300 * CUB_USEC_PER_SEC;
        dst->node_lease_seconds = src->node_lease_seconds > 0 ? src->node_lease_seconds : 40;
        dst->kc.pod_pids_limit = src->kc.pod_pids_limit;
        dst->kc.cpu_cfs_quota = src->kc.cpu_cfs_quota;
        if (!dst->manifest_dir || !dst->runtime_endpoint || !dst->cgroup_root || !dst->state_dir || !dst->node_name ||
            !dst->socket_path || !dst->sys_root || (src->config_path && !dst->config_path) || !dst->http_address ||
            (src->manifest_url && !dst->manifest_url) || (src->kubeconfig && !dst->kubeconfig) ||
            (src->node_labels && !dst->node_labels) || (src->register_taints && !dst->register_taints) ||
            (src->kubelet_address && !dst->kubelet_address))
                return -ENOMEM;
        return 0;
}

/* env sources: the node's name and allocatable for env[].valueFrom */
static int agent_set_node_env(Agent *a, CubError *err) {
        _cleanup_(pod_resource_list_done) PodResourceList alloc = {};
        WorkerNodeEnv e = { .node_name = a->core.opt.node_name };
        CubQuantity q;
        int r;

        r = agent_node_resources(a->core.kc, &a->core.cg, a->core.opt.state_dir, NULL, &alloc, err);
        if (r < 0)
                return r;
        if (pod_resource_get(&alloc, "cpu", &q))
                e.alloc_cpu_milli = cub_quantity_milli(q);
        if (pod_resource_get(&alloc, "memory", &q))
                e.alloc_memory = cub_quantity_value(q);
        if (pod_resource_get(&alloc, "ephemeral-storage", &q))
                e.alloc_ephemeral_storage = cub_quantity_value(q);
        r = worker_pool_set_node_env(a->core.pool, &e);
        return r < 0 ? cub_err_set(err, -r, "out of memory") : 0;
}

/* SIGTERM: cubelet exits (its pods keep running), unless a manager has
 * work to finish first (the graceful node shutdown of a system going
 * down); a second SIGTERM exits at once */
static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Agent *a = userdata;

        (void) si;
        if (!a->core.run->terminating) {
                a->core.run->terminating = true;
                if (agent_managers_terminate(a))
                        return 0;
        }
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_post(sd_event_source *s, void *userdata) {
        (void) s;
        agent_managers_flush(userdata);
        return 0;
}

/* kubelet's CPU manager reconcileState every cpuManagerReconcilePeriod:
 * each idle pod whose running containers have an older resources
 * generation than the node's (a pool change, an assignment, a failed
 * update) gets the UPDATE job; the same check runs after each relist and
 * at each change, so this is the backstop, and it costs no runtime call
 * when nothing is stale (as kubelet's lastUpdateState comparison) */
static int on_reconcile_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Agent *a = userdata;

        agent_update_resources(a);
        (void) sd_event_source_set_time(s, usec + a->core.opt.cpu_reconcile_usec);
        return 0;
}

static int add_sources(Agent *a, int worker_fd) {
        int r;

        (void) sd_event_add_signal(a->core.event, NULL, SIGTERM | SD_EVENT_SIGNAL_PROCMASK, on_sigterm, a);
        (void) sd_event_add_signal(a->core.event, NULL, SIGINT | SD_EVENT_SIGNAL_PROCMASK, NULL, NULL);
        (void) sd_event_add_signal(a->core.event, NULL, SIGHUP | SD_EVENT_SIGNAL_PROCMASK, on_sighup, a);
        (void) sd_event_set_watchdog(a->core.event, true);
        r = sd_event_add_io(a->core.event, &a->core.run->worker_src, worker_fd, EPOLLIN, agent_on_worker, a);
        if (r >= 0)
                r = agent_relist_attach(a);
        if (r >= 0)
                r = sd_event_add_time_relative(a->core.event, &a->core.run->reconcile_timer, CLOCK_MONOTONIC,
                                               a->core.opt.cpu_reconcile_usec, 0, on_reconcile_timer, a);
        if (r >= 0)
                r = agent_managers_attach_actions(a, on_actions);
        if (r >= 0)
                r = sd_event_add_post(a->core.event, NULL, on_post, a);
        if (r >= 0)
                r = agent_source_dir_attach(a);
        if (r >= 0)
                r = agent_source_http_attach(a);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(a->core.run->worker_src, "workers");
        (void) sd_event_source_set_description(a->core.run->reconcile_timer, "cpu-reconcile");
        (void) sd_event_source_set_enabled(a->core.run->reconcile_timer, SD_EVENT_ON);
        return 0;
}

int agent_new(const AgentOptions *opt, Agent **ret, CubError *err) {
        Agent *a;
        CriVersion v;
        int r, efd;

        a = calloc(1, sizeof(*a));
        if (!a || !(a->core.run = calloc(1, sizeof(*a->core.run)))) {
                free(a);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        r = copy_options(&a->core.opt, opt);
        if (r < 0) {
                r = cub_err_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        a->core.kc = &opt->kc;
        r = agent_runtime_init(a);
        if (r >= 0)
                r = agent_stops_init(a);
        if (r >= 0)
                r = agent_errors_init(a);
        if (r >= 0)
                r = agent_decisions_init(a);
        if (r < 0) {
                r = cub_err_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        r = agent_host_node(&a->core.node, err);
        if (r < 0)
                goto fail;
        cg_options_init(&a->core.cg);
        /* cubelet run resolved it (flag, config, or cg_driver_default()) */
        a->core.cg.driver = opt->kc.cgroup_driver == POD_CGROUP_DRIVER_UNSET     ? cg_driver_default()
                            : opt->kc.cgroup_driver == POD_CGROUP_DRIVER_SYSTEMD ? CG_DRIVER_SYSTEMD
                                                                                 : CG_DRIVER_CGROUPFS;
        a->core.cg.enforce_cpu_limits = opt->kc.cpu_cfs_quota;
        a->core.cg.pod_pids_limit = opt->kc.pod_pids_limit;
        a->core.cg.memory_capacity = a->core.node.memory_capacity;
        a->core.cg.cpu_capacity_milli = a->core.node.cpu_capacity_milli;
        a->core.cg.per_qos = opt->kc.cgroups_per_qos;
        {
                struct statfs fs;

                /* kubelet's IsCgroup2UnifiedMode */
                a->core.cg.cgroup_v1 = statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type != CGROUP2_SUPER_MAGIC;
        }
        a->core.cg.pods_parent = opt->kc.cgroup_root;
        if (!opt->kc.cgroups_per_qos && a->core.cg.driver == CG_DRIVER_SYSTEMD && opt->kc.cgroup_root &&
            *opt->kc.cgroup_root) {
                r = cub_err_set(err, EINVAL,
                                "cgroupRoot '%s' with cgroupsPerQOS: false and the systemd driver: not supported "
                                "(leave it empty: the runtime's default slice)",
                                opt->kc.cgroup_root);
                goto fail;
        }
        agent_kubepods_capacity(&opt->kc, a->core.node.cpu_capacity_milli, a->core.node.memory_capacity,
                                &a->core.cg.kubepods_cpu_milli, &a->core.cg.kubepods_memory);
        a->core.cg.kubepods_pids = agent_kubepods_pids(&opt->kc, a->core.node.max_pids);
        a->core.cg.cpu_static = opt->kc.cpu_manager_policy == POD_CPU_MANAGER_STATIC;
        a->core.cg.swap_limited = opt->kc.swap_behavior == POD_SWAP_LIMITED;
        a->core.cg.memory_qos = opt->kc.memory_qos;
        a->core.cg.memory_throttling_factor = opt->kc.memory_throttling_factor;
        a->core.cg.swap_controller = a->core.node.swap_controller;
        a->core.cg.swap_capacity = a->core.node.swap_capacity;

        /* logs: kubelet's podLogsDir (/var/log/pods) */
        a->core.log_root =
                strdup(opt->kc.pod_logs_dir && *opt->kc.pod_logs_dir ? opt->kc.pod_logs_dir : LOGS_DEFAULT_ROOT);
        if (!a->core.log_root) {
                r = cub_err_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        r = cub_mkdir_p(a->core.opt.manifest_dir, 0755);
        if (r >= 0)
                r = cub_mkdir_p(a->core.log_root, 0755);
        if (r < 0) {
                r = cub_err_set(err, -r, "'%s' or '%s': %s", a->core.opt.manifest_dir, a->core.log_root, strerror(-r));
                goto fail;
        }
        r = agent_pods_init(a, err);
        if (r < 0)
                goto fail;
        /* cgroupsPerQOS: false: no cgroup of cubelet's is written (no writer) */
        r = a->core.cg.per_qos ? cg_writer_new_driver(a->core.opt.cgroup_root, a->core.cg.driver, &a->core.writer, err)
                               : 0;
        if (r < 0)
                goto fail;
        r = sd_event_new(&a->core.event);
        if (r < 0) {
                r = cub_err_set(err, -r, "sd-event: %s", strerror(-r));
                goto fail;
        }
        r = cri_client_new(a->core.opt.runtime_endpoint, 0, &a->core.cri, err);
        if (r < 0)
                goto fail;
        /* the state directory before the managers: their checkpoints, and
         * the filesystem node allocatable's ephemeral-storage is measured on */
        r = cub_mkdir_p(a->core.opt.state_dir, 0755);
        if (r < 0) {
                r = cub_err_set(err, -r, "state directory '%s': %s", a->core.opt.state_dir, strerror(-r));
                goto fail;
        }
        r = agent_managers_new(a, agent_decided_conditions(a), err);
        if (r < 0)
                goto fail;
        if (cri_version(a->core.cri, &v, NULL) >= 0)
                agent_runtime_set_version(a, v.runtime_name, v.runtime_version, v.runtime_api_version);
        r = worker_pool_new(a->core.opt.workers, a->core.cri, a->core.writer, &a->core.pool, &efd, err);
        if (r < 0)
                goto fail;
        if (a->core.opt.node_ip)
                (void) snprintf(a->core.node.ip, sizeof(a->core.node.ip), "%s", a->core.opt.node_ip);
        else
                agent_host_ip(a->core.opt.kc.pod_cidr && *a->core.opt.kc.pod_cidr ? a->core.opt.kc.pod_cidr
                                                                                  : POD_DEFAULT_CIDR,
                              a->core.node.ip);
        r = agent_network_setup(a, err); /* network */
        if (r < 0)
                goto fail;
        /* before any group or sandbox: a runtime on the other driver would
         * put every container beside its pod's limits */
        r = worker_pool_check_runtime(a->core.pool, err);
        if (r < 0)
                goto fail;
        r = agent_set_node_env(a, err); /* env sources */
        if (r < 0)
                goto fail;
        r = add_sources(a, efd);
        if (r < 0) {
                r = cub_err_set(err, -r, "event sources: %s", strerror(-r));
                goto fail;
        }
        agent_events_attach(a);
        r = api_server_new(a->core.event, a->core.opt.socket_path, render_status, a, &a->core.run->status, err);
        if (r >= 0)
                r = agent_http_start(a, err);
        if (r >= 0)
                r = agent_cluster_start(a, err);
        if (r < 0)
                goto fail;

        agent_managers_pods_changed(a); /* the QoS groups, before any pod */
        agent_rescan(a);
        agent_source_http_load_cache(a);
        agent_managers_start(a);
        agent_apply_actions(a);
        agent_request_relist(a);
        *ret = a;
        return 0;
fail:
        agent_free(a);
        return r;
}

int agent_run(Agent *a) {
        int r = sd_event_loop(a->core.event);

        (void) sd_notify(false, "STOPPING=1");
        return r < 0 ? r : 0;
}

Agent *agent_free(Agent *a) {
        if (!a)
                return NULL;
        agent_cluster_free(a);
        agent_resize_free(a);
        a->core.pool = worker_pool_free(a->core.pool);
        agent_events_detach(a);
        agent_runtime_free(a);
        a->core.run->status = api_server_free(a->core.run->status);
        agent_http_stop(a);
        agent_source_dir_done(a);
        agent_updates_free(a);
        agent_source_http_done(a);
        sd_event_source_disable_unref(a->core.run->worker_src);
        sd_event_source_disable_unref(a->core.run->reconcile_timer);
        agent_managers_flush(a);
        agent_managers_free(a);
        sd_event_unref(a->core.event);
        agent_pods_free(a);
        agent_stops_free(a);
        agent_errors_free(a);
        agent_decisions_free(a);
        cri_client_free(a->core.cri);
        cg_writer_free(a->core.writer);
        free(a->core.log_root);
        agent_options_done(&a->core.opt);
        free(a->core.run);
        free(a);
        return NULL;
}
