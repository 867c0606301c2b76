/* SPDX-License-Identifier: Apache-2.0 */
/* `cubelet plan`: decode manifests as static pods and print what the agent
 * would do — QoS, effective resources, cgroup values, CRI resources —
 * without doing any of it. The agent calls the same pure functions. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cgroup/cgroup.h"
#include "../cpumanager/cpumanager.h"
#include "../node/derive.h"
#include "../node/machine.h"
#include "../pod/pod.h"
#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "cli.h"

#define MANIFEST_MAX (1024 * 1024)

static int file_node(const char *path, AgentNode *n, CubError *err) {
        _cleanup_(pod_node_freep) PodNode *node = NULL;
        CubQuantity q;
        int r;

        r = pod_node_load_file(path, &node, err);
        if (r < 0)
                return r;
        if ((size_t) snprintf(n->name, sizeof(n->name), "%s", node->name) >= sizeof(n->name))
                return cub_err_set(err, ENAMETOOLONG, "%s: metadata.name '%.64s...' is longer than %zu bytes", path,
                                   node->name, sizeof(n->name) - 1);
        if (!pod_resource_get(&node->capacity, "memory", &q))
                return cub_err_set(err, EINVAL, "%s: status.capacity[memory]: Required value", path);
        n->memory_capacity = (uint64_t) cub_quantity_value(q);
        if (pod_resource_get(&node->capacity, "cpu", &q))
                n->cpu_capacity_milli = cub_quantity_milli(q);
        /* a Node does not say whether the swap controller exists: kubelet
         * reports status.nodeInfo.swap when the node has swap, and plan takes
         * that as the controller being there too */
        n->swap_controller = node->swap_set;
        n->swap_capacity = node->swap_set && node->swap_capacity > 0 ? (uint64_t) node->swap_capacity : 0;
        return 0;
}

static json_t *resources_json(const PodResourceList *l) {
        json_t *o = json_object();

        for (size_t i = 0; o && i < l->n; i++) {
                char buf[CUB_QUANTITY_STR_MAX];

                json_object_set_new(
                        o, l->items[i].name,
                        json_string(cub_quantity_format(l->items[i].q, strcmp(l->items[i].name, "cpu") == 0, buf)));
        }
        return o;
}

static json_t *group_json(const CgGroupValues *g) {
        json_t *files = json_object();

        for (size_t i = 0; i < g->n_files; i++)
                json_object_set_new(files, g->files[i].name, json_string(g->files[i].value));
        return json_pack("{s:s,s:o}", "path", g->path, "files", files);
}

static json_t *containers_json(const Pod *pod, PodQOSClass qos, const PodContainer *cs, size_t n, const CgOptions *o) {
        json_t *arr = json_array();

        for (size_t i = 0; arr && i < n; i++) {
                CgContainerResources res;

                cg_container_resources(pod, qos, &cs[i], o, &res);
                json_t *c;

                cpumgr_unquota_container(qos, &cs[i], o, &res);
                c = json_pack("{s:s,s:{s:I,s:I,s:I,s:I,s:I,s:s},s:s}", "name", cs[i].name, "resources", "cpu_shares",
                              (json_int_t) res.cpu_shares, "cpu_quota", (json_int_t) res.cpu_quota, "cpu_period",
                              (json_int_t) res.cpu_period, "memory_limit_in_bytes",
                              (json_int_t) res.memory_limit_in_bytes, "oom_score_adj", (json_int_t) res.oom_score_adj,
                              "cpuset_cpus", res.cpuset_cpus, "exclusiveCPUs", "");
                /* the unified map's memory.swap.max (only when the swap controller is
                 * there), memory.min and memory.high (MemoryQoS), each when set */
                if (c && res.memory_swap_max[0])
                        json_object_set_new(json_object_get(c, "resources"), "memory_swap_max",
                                            json_string(res.memory_swap_max));
                if (c && res.memory_min[0])
                        json_object_set_new(json_object_get(c, "resources"), "memory_min", json_string(res.memory_min));
                if (c && res.memory_high[0])
                        json_object_set_new(json_object_get(c, "resources"), "memory_high",
                                            json_string(res.memory_high));
                json_array_append_new(arr, c);
        }
        return arr;
}

/* The fields cubelet accepts and ignores, one line each, as the journal
 * has them. */
static json_t *warnings_json(const Pod *pod, const char *source) {
        json_t *arr = json_array();

        for (size_t i = 0; arr && i < pod->warnings.n; i++) {
                _cleanup_free_ char *s = pod_field_note_format(&pod->warnings.items[i], source);

                json_array_append_new(arr, s ? json_string(s) : NULL);
        }
        return arr;
}

/* What a pod adds to the QoS groups (qos_container_manager_linux.go): its
 * cpu request to the burstable group's, its memory request to its class's
 * sum (MemoryQoS). */
typedef struct PlanQosSums {
        int64_t burstable_cpu_milli;
        int64_t burstable_memory;
        int64_t guaranteed_memory;
} PlanQosSums;

static int plan_pod(const Pod *pod, const char *source, const CgOptions *o, json_t **ret, PlanQosSums *ret_sums,
                    CubError *err) {
        PodEffective eff;
        PodQOSClass qos = pod_qos_class(pod);
        CgGroupValues g;
        CubQuantity cpu, mem = {};
        json_t *j;
        int r;

        r = pod_effective(pod, &eff, err);
        if (r < 0)
                return r;
        r = cg_pod_values(pod, &eff, qos, o, &g, err);
        if (r < 0) {
                pod_effective_done(&eff);
                return r;
        }
        cpumgr_unquota_pod(pod, qos, o, &g);
        j = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o}", "namespace", pod->namespace_, "name", pod->name, "uid",
                      pod->uid, "qosClass", pod_qos_to_string(qos), "requests", resources_json(&eff.requests), "limits",
                      resources_json(&eff.limits), "cgroup", group_json(&g), "containers",
                      containers_json(pod, qos, pod->containers, pod->n_containers, o));
        if (j && pod->n_init_containers > 0)
                json_object_set_new(j, "initContainers",
                                    containers_json(pod, qos, pod->init_containers, pod->n_init_containers, o));
        if (j && pod->warnings.n > 0)
                json_object_set_new(j, "warnings", warnings_json(pod, source));
        (void) pod_resource_get(&eff.requests, "cpu", &cpu);
        (void) pod_resource_get(&eff.requests, "memory", &mem);
        *ret_sums = (PlanQosSums){
                .burstable_cpu_milli = qos == POD_QOS_BURSTABLE ? cub_quantity_milli(cpu) : 0,
                .burstable_memory = qos == POD_QOS_BURSTABLE ? cub_quantity_value(mem) : 0,
                .guaranteed_memory = qos == POD_QOS_GUARANTEED ? cub_quantity_value(mem) : 0,
        };
        pod_effective_done(&eff);
        if (!j)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret = j;
        return 0;
}

static int load_config(const char *path, PodKubeletConfig *cfg, CgOptions *o, const AgentNode *node, CubError *err) {
        int r;

        o->driver = cg_driver_default();

        if (path) {
                r = pod_kubelet_config_load_file(path, cfg, err);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < cfg->ignored.n; i++)
                        cub_log(LOG_WARNING, "%s: field '%s' is not supported by cubelet, ignoring", path,
                                cfg->ignored.items[i]);
                if (cfg->cgroup_driver != POD_CGROUP_DRIVER_UNSET)
                        o->driver = cfg->cgroup_driver == POD_CGROUP_DRIVER_SYSTEMD ? CG_DRIVER_SYSTEMD
                                                                                    : CG_DRIVER_CGROUPFS;
                o->enforce_cpu_limits = cfg->cpu_cfs_quota;
                o->pod_pids_limit = cfg->pod_pids_limit;
                o->cpu_static = cfg->cpu_manager_policy == POD_CPU_MANAGER_STATIC;
                o->swap_limited = cfg->swap_behavior == POD_SWAP_LIMITED;
                o->memory_qos = cfg->memory_qos;
                o->memory_throttling_factor = cfg->memory_throttling_factor;
        }
        o->memory_capacity = node->memory_capacity;
        o->swap_controller = node->swap_controller;
        o->swap_capacity = node->swap_capacity;
        o->cpu_capacity_milli = node->cpu_capacity_milli;
        agent_kubepods_capacity(cfg, node->cpu_capacity_milli, node->memory_capacity, &o->kubepods_cpu_milli,
                                &o->kubepods_memory);
        return 0;
}

static void plan_usage(FILE *f) {
        fputs("Usage: cubelet plan [--config FILE] [--node FILE] [--cgroup-driver DRIVER] MANIFEST...\n"
              "\n"
              "Decodes each manifest as a static pod of this node and prints, as one JSON\n"
              "document, its QoS class, effective requests and limits, its cgroup v2 path and\n"
              "file values, and the CRI resources of each container. Nothing is changed.\n"
              "\n"
              "  --config FILE   KubeletConfiguration (podPidsLimit, cpuCFSQuota, cgroupDriver,\n"
              "                  kubeReserved, systemReserved, memorySwap.swapBehavior,\n"
              "                  featureGates.MemoryQoS, memoryThrottlingFactor)\n"
              "  --node FILE     a v1 Node: metadata.name names static pods,\n"
              "                  status.capacity sizes oom_score_adj and kubepods,\n"
              "                  status.nodeInfo.swap.capacity the swap (and says the\n"
              "                  swap controller is there: memory_swap_max is printed)\n"
              "                  (default: this host)\n"
              "  --cgroup-driver DRIVER  cgroupfs (kubepods/burstable/pod<uid>) or systemd\n"
              "                  (kubepods.slice/kubepods-burstable.slice/...); default: the\n"
              "                  config's cgroupDriver, else systemd when PID 1 is systemd\n"
              "\n"
              "A manifest that sets a field cubelet refuses (or does not know) is an error\n"
              "naming the field path; fields cubelet ignores are listed in the pod's\n"
              "\"warnings\".\n"
              "\n"
              "Exit status: 0, or 2 when any input was bad (reported in \"errors\" and on stderr).\n",
              f);
}

int cli_plan(int argc, char **argv) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "node", required_argument, NULL, 'n' },
                { "cgroup-driver", required_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *config_path = NULL, *node_path = NULL, *driver = NULL;
        _cleanup_(json_decrefp) json_t *out = NULL;
        json_t *pods, *errors, *qos_arr;
        PodKubeletConfig cfg;
        AgentNode node = {};
        CgOptions o;
        CgGroupValues qos[3];
        CubError err = {};
        PlanQosSums sums = {};
        int c, r, rc = 0;

        optind = 1;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                case 'n':
                        node_path = optarg;
                        break;
                case 'd':
                        if (cg_driver_from_string(optarg) == _CG_DRIVER_INVALID) {
                                cub_log(LOG_ERR, "plan: --cgroup-driver '%s': expected cgroupfs or systemd", optarg);
                                return CLI_EXIT_BAD_INPUT;
                        }
                        driver = optarg;
                        break;
                case 'h':
                        plan_usage(stdout);
                        return 0;
                default:
                        plan_usage(stderr);
                        return CLI_EXIT_BAD_INPUT;
                }
        }
        if (optind >= argc) {
                cub_log(LOG_ERR, "plan: no manifest given (try 'cubelet plan --help')");
                return CLI_EXIT_BAD_INPUT;
        }

        r = node_path ? file_node(node_path, &node, &err) : agent_host_node(&node, &err);
        if (r < 0) {
                cub_log(LOG_ERR, "%s", err.msg);
                return CLI_EXIT_BAD_INPUT;
        }
        cg_options_init(&o);
        pod_kubelet_config_init(&cfg);
        r = load_config(config_path, &cfg, &o, &node, &err);
        pod_kubelet_config_done(&cfg);
        if (r < 0) {
                cub_log(LOG_ERR, "%s", err.msg);
                return CLI_EXIT_BAD_INPUT;
        }
        if (driver)
                o.driver = cg_driver_from_string(driver);

        pods = json_array();
        errors = json_array();
        for (int i = optind; i < argc; i++) {
                _cleanup_free_ char *buf = NULL, *abs = NULL;
                _cleanup_(pod_freep) Pod *pod = NULL;
                json_t *j = NULL;
                PlanQosSums ps = {};
                size_t len;

                cub_err_clear(&err);
                abs = realpath(argv[i], NULL);
                r = cub_read_file(argv[i], MANIFEST_MAX, &buf, &len, &err);
                if (r >= 0)
                        r = pod_decode_static(buf, len, argv[i], POD_FORMAT_AUTO, node.name, POD_SOURCE_FILE,
                                              abs ? abs : argv[i], &pod, &err);
                if (r >= 0 && pod->refused.n > 0) {
                        /* the agent makes such a pod Failed (UnsupportedField) */
                        _cleanup_free_ char *msg = pod_field_notes_join(&pod->refused, argv[i]);

                        r = cub_err_set(&err, EOPNOTSUPP, "%s", msg ? msg : "out of memory");
                }
                if (r >= 0)
                        r = plan_pod(pod, argv[i], &o, &j, &ps, &err);
                if (r < 0) {
                        cub_log(LOG_ERR, "%s", err.msg);
                        json_array_append_new(errors, json_pack("{s:s,s:s}", "source", argv[i], "message", err.msg));
                        rc = CLI_EXIT_BAD_INPUT;
                        continue;
                }
                sums.burstable_cpu_milli += ps.burstable_cpu_milli;
                sums.burstable_memory += ps.burstable_memory;
                sums.guaranteed_memory += ps.guaranteed_memory;
                json_array_append_new(pods, j);
        }

        cg_qos_values(sums.burstable_cpu_milli, &o, qos);
        cg_qos_memory_min(sums.guaranteed_memory, sums.burstable_memory, &o, qos);
        qos_arr = json_array();
        for (int i = 0; i < 3; i++)
                json_array_append_new(qos_arr, group_json(&qos[i]));
        out = json_pack("{s:o,s:o,s:o}", "pods", pods, "qosCgroups", qos_arr, "errors", errors);
        if (!out || json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
                cub_log(LOG_ERR, "plan: writing the result failed");
                return 1;
        }
        putchar('\n');
        return rc;
}
