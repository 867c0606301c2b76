/* SPDX-License-Identifier: Apache-2.0 */
/* `cubelet admit`: the admission decision for one manifest on a node given
 * as files — the agent's pure admit_decide() with nothing changed. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../admit/admit.h"
#include "../cpumanager/cpumanager.h"
#include "../node/derive.h"
#include "../pod/pod.h"
#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "cli.h"

#define INPUT_MAX (16 * 1024 * 1024)

typedef struct AdmitInput {
        PodNode *node;
        PodKubeletConfig cfg;
        bool cfg_loaded;
        CpumgrTopology topo;
        CpumgrState *cpumgr;
        AdmitSnapshot *snap;
        Pod **running;
        size_t n_running;
        Pod *pod;
        PodResource *alloc; /* names borrowed from node */
} AdmitInput;

static void input_done(AdmitInput *in) {
        admit_snapshot_free(in->snap);
        for (size_t i = 0; i < in->n_running; i++)
                pod_free(in->running[i]);
        free(in->running);
        pod_free(in->pod);
        cpumgr_free(in->cpumgr);
        cpumgr_topology_done(&in->topo);
        pod_kubelet_config_done(&in->cfg);
        pod_node_free(in->node);
        free(in->alloc);
}

/* status.allocatable per resource, falling back to status.capacity. */
static int node_allocatable(AdmitInput *in, PodResourceList *ret) {
        const PodNode *n = in->node;
        size_t k = 0;

        in->alloc = calloc(n->allocatable.n + n->capacity.n + 1, sizeof(PodResource));
        if (!in->alloc)
                return -ENOMEM;
        for (size_t i = 0; i < n->allocatable.n; i++)
                in->alloc[k++] = n->allocatable.items[i];
        for (size_t i = 0; i < n->capacity.n; i++)
                if (!pod_resource_get(&n->allocatable, n->capacity.items[i].name, NULL))
                        in->alloc[k++] = n->capacity.items[i];
        *ret = (PodResourceList){ .items = in->alloc, .n = k };
        return 0;
}

static int setup_cpumgr(AdmitInput *in, const char *config_path, CubError *err) {
        int r;

        if (!in->cfg_loaded || in->cfg.cpu_manager_policy == POD_CPU_MANAGER_NONE)
                return 0;
        if (in->node->n_topology > 0) {
                _cleanup_free_ CpumgrCpu *cpus = calloc(in->node->n_topology, sizeof(CpumgrCpu));

                if (!cpus)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (size_t i = 0; i < in->node->n_topology; i++)
                        cpus[i] = (CpumgrCpu){ .cpu = (unsigned) in->node->topology[i].cpu,
                                               .core = (unsigned) in->node->topology[i].core,
                                               .socket = (unsigned) in->node->topology[i].socket,
                                               .numa = (unsigned) in->node->topology[i].numa };
                r = cpumgr_topology_from_cpus(cpus, in->node->n_topology, &in->topo, err);
        } else
                r = cpumgr_topology_from_sys("/sys", &in->topo, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "topology");
        return agent_cpumgr_new(&in->cfg, &in->topo, config_path, &in->cpumgr, err);
}

/*
 * A running pod without metadata.uid (a hand-written PodList) gets the UID
 * kubelet gives a static pod without one: md5 of the item's canonical
 * content, the node name and "file:<absolute PodList path>"
 * (pod_static_uid()). It is stable across runs and across reordering of
 * the items; two identical items get the same UID and are reported as a
 * duplicate, like two items with the same metadata.uid.
 */
static int running_uid(AdmitInput *in, json_t *item, const char *abs_path, Pod *pod, bool *ret_derived, CubError *err) {
        _cleanup_free_ char *canonical = NULL;
        char uid[POD_UID_DERIVED_MAX];
        int r;

        *ret_derived = false;
        if (pod->uid)
                return 0;
        canonical = json_dumps(item, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
        if (!canonical)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = pod_static_uid(canonical, in->node->name, POD_SOURCE_FILE, abs_path, uid, err);
        if (r < 0)
                return r;
        pod->uid = strdup(uid);
        if (!pod->uid)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret_derived = true;
        return 0;
}

static int load_running(AdmitInput *in, const char *path, CubError *err) {
        _cleanup_free_ char *data = NULL, *abs = NULL;
        _cleanup_free_ bool *derived = NULL;
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_error_t jerr;
        json_t *items, *item;
        size_t size, i;
        int r;

        r = cub_read_file(path, INPUT_MAX, &data, &size, err);
        if (r < 0)
                return r;
        root = json_loadb(data, size, 0, &jerr);
        if (!root)
                return cub_err_set(err, EINVAL, "%s:%d: %s", path, jerr.line, jerr.text);
        items = json_object_get(root, "items");
        if (!json_is_object(root) || !json_is_array(items))
                return cub_err_set(err, EINVAL, "%s: items: Required value: a v1 PodList", path);
        in->running = calloc(json_array_size(items) + 1, sizeof(Pod *));
        derived = calloc(json_array_size(items) + 1, sizeof(bool));
        if (!in->running || !derived)
                return cub_err_set(err, ENOMEM, "out of memory");
        abs = realpath(path, NULL);
        json_array_foreach(items, i, item) {
                _cleanup_free_ char *text = json_dumps(item, JSON_COMPACT | JSON_PRESERVE_ORDER);
                _cleanup_free_ char *source = NULL;
                Pod *pod = NULL;

                if (!text || asprintf(&source, "%s: items[%zu]", path, i) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
                r = pod_decode(text, strlen(text), source, POD_FORMAT_JSON, &pod, err);
                if (r < 0)
                        return r;
                in->running[in->n_running++] = pod;
                r = running_uid(in, item, abs ? abs : path, pod, &derived[i], err);
                if (r < 0)
                        return r;
                for (size_t k = 0; k < i; k++) {
                        const Pod *other = in->running[k];

                        if (strcmp(other->uid, pod->uid) != 0)
                                continue;
                        /* a derived UID depends on the PodList's path: not worth printing */
                        if (derived[i])
                                return cub_err_set(err, EEXIST,
                                                   "%s: pod %s/%s: duplicate of items[%zu] (pod %s/%s): the same "
                                                   "content and no metadata.uid",
                                                   source, pod->namespace_, pod->name, k, other->namespace_,
                                                   other->name);
                        return cub_err_set(err, EEXIST,
                                           "%s: pod %s/%s: metadata.uid: Duplicate value: \"%s\": items[%zu] (pod "
                                           "%s/%s) has it",
                                           source, pod->namespace_, pod->name, pod->uid, k, other->namespace_,
                                           other->name);
                }
                r = admit_snapshot_add(in->snap, pod, err);
                if (r < 0)
                        return cub_err_wrap_errno(err, r, "%s", source);
                if (in->cpumgr) {
                        r = cpumgr_allocate_pod(in->cpumgr, pod, pod_qos_class(pod), err);
                        if (r < 0)
                                return cub_err_wrap_errno(err, r, "%s: exclusive cpus", source);
                }
        }
        return 0;
}

static json_t *decision_json(const AdmitDecision *d) {
        json_t *filters = json_array(), *scores = json_array(), *victims = json_array();
        json_t *containers = json_object(), *devices = json_object();

        for (size_t i = 0; i < d->n_filters; i++) {
                const AdmitFilterResult *f = &d->filters[i];

                if (f->ok)
                        json_array_append_new(filters, json_pack("{s:s,s:b}", "plugin", f->plugin, "ok", 1));
                else
                        json_array_append_new(filters, json_pack("{s:s,s:b,s:s,s:s}", "plugin", f->plugin, "ok", 0,
                                                                 "reason", f->reason, "message", f->message));
        }
        for (size_t i = 0; i < d->placement.n_containers; i++)
                json_object_set_new(containers, d->placement.containers[i].name,
                                    json_string(d->placement.containers[i].cpuset));
        for (size_t i = 0; i < d->placement.n_devices; i++) {
                json_t *ids = json_array();

                for (size_t j = 0; j < d->placement.devices[i].n; j++)
                        json_array_append_new(ids, json_string(d->placement.devices[i].ids[j]));
                json_object_set_new(devices, d->placement.devices[i].resource, ids);
        }
        for (size_t i = 0; i < d->n_scores; i++)
                json_array_append_new(scores, json_pack("{s:s,s:I}", "plugin", d->scores[i].plugin, "score",
                                                        (json_int_t) d->scores[i].score));
        for (size_t i = 0; i < d->n_victims; i++)
                json_array_append_new(victims, json_string(d->victims[i].key));
        return json_pack("{s:b,s:s,s:s,s:o,s:{s:s,s:o,s:o},s:o,s:o}", "admit", d->admit, "reason", d->reason, "message",
                         d->message, "filters", filters, "placement", "cpuset", d->placement.cpuset, "containers",
                         containers, "devices", devices, "scores", scores, "victims", victims);
}

static void admit_usage(FILE *f) {
        fputs("Usage: cubelet admit --node NODE.json [--running PODLIST.json] [--config FILE] [--api]\n"
              "                     [--seccomp-root DIR] [--devices RESOURCE=ID,...]... MANIFEST\n"
              "\n"
              "Prints, as one JSON document, the admission decision for MANIFEST on the node:\n"
              "every filter's result with kubelet's reason and message, the exclusive CPUs it\n"
              "would get, the scores, and the pods it would preempt. Nothing is changed.\n"
              "\n"
              "  --node FILE          a v1 Node (status.allocatable or status.capacity,\n"
              "                       metadata.labels, spec.taints, status.conditions, and an\n"
              "                       optional top-level \"topology\" [{cpu,core,socket,numa}])\n"
              "  --running FILE       a v1 PodList of the pods already admitted, in order;\n"
              "                       an item without metadata.uid gets one derived as for a\n"
              "                       static pod (content, node, the PodList's path)\n"
              "  --config FILE        KubeletConfiguration (cpuManagerPolicy, reservedSystemCPUs,\n"
              "                       kubeReserved/systemReserved cpu, maxPods)\n"
              "  --api                MANIFEST is an API pod (default: a static pod of the node)\n"
              "  --seccomp-root DIR   where Localhost seccomp profiles live\n"
              "                       (default " ADMIT_DEFAULT_SECCOMP_ROOT ")\n"
              "  --devices RES=IDS    the free devices of a device-plugin resource\n"
              "                       (e.g. nvidia.com/gpu=GPU-a,GPU-b): the placement names\n"
              "                       the ones the pod would get (placement.devices)\n"
              "\n"
              "Exit status: 0 on a decision, 2 on bad input.\n",
              f);
}

/* --devices RESOURCE=ID,ID: the free devices of a device-plugin resource;
 * a resource the node does not list gets them (plus what the running pods
 * use) as its allocatable. */
static int set_devices(AdmitInput *in, char *const *devices, size_t n_devices, CubError *err) {
        for (size_t i = 0; i < n_devices; i++) {
                _cleanup_free_ char *copy = strdup(devices[i]);
                _cleanup_free_ const char **ids = NULL;
                char *eq, *save = NULL;
                size_t n = 0;
                CubQuantity q;
                int r;

                if (!copy)
                        return cub_err_set(err, ENOMEM, "out of memory");
                eq = strchr(copy, '=');
                if (!eq || eq == copy)
                        return cub_err_set(err, EINVAL, "--devices '%s': expected RESOURCE=ID[,ID...]", devices[i]);
                *eq = '\0';
                ids = calloc(strlen(eq + 1) + 1, sizeof(char *));
                if (!ids)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (char *id = strtok_r(eq + 1, ",", &save); id; id = strtok_r(NULL, ",", &save))
                        ids[n++] = id;
                r = admit_snapshot_set_devices(in->snap, copy, ids, n, err);
                if (r >= 0 && !pod_resource_get(&in->node->allocatable, copy, &q) &&
                    !pod_resource_get(&in->node->capacity, copy, &q))
                        r = admit_snapshot_set_allocatable(in->snap, copy,
                                                           (int64_t) n + admit_snapshot_used(in->snap, copy), err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int run(const char *node_path, const char *running_path, const char *config_path, bool api,
               const char *seccomp_root, char *const *devices, size_t n_devices, const char *manifest, CubError *err) {
        _cleanup_(input_done) AdmitInput in = {};
        _cleanup_(json_decrefp) json_t *out = NULL;
        AdmitDecision d;
        AdmitOptions o;
        AdmitConditions cond;
        PodResourceList alloc;
        AdmitNodeInfo info;
        CubQuantity q;
        int r;

        pod_kubelet_config_init(&in.cfg);
        r = pod_node_load_file(node_path, &in.node, err);
        if (r < 0)
                return r;
        if (config_path) {
                r = pod_kubelet_config_load_file(config_path, &in.cfg, err);
                if (r < 0)
                        return r;
                in.cfg_loaded = true;
        }
        if (node_allocatable(&in, &alloc) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        info = (AdmitNodeInfo){ .name = in.node->name,
                                .labels = &in.node->labels,
                                .taints = in.node->taints,
                                .n_taints = in.node->n_taints,
                                .allocatable = &alloc,
                                .max_pods = pod_resource_get(&alloc, "pods", &q) ? 0 : in.cfg.max_pods };
        r = setup_cpumgr(&in, config_path, err);
        if (r < 0)
                return r;
        r = admit_snapshot_new(&info, &in.snap, err);
        if (r < 0)
                return r;
        admit_snapshot_set_cpumgr(in.snap, in.cpumgr);
        admit_conditions_from_node(in.node, &cond);
        admit_snapshot_set_conditions(in.snap, &cond);
        if (running_path) {
                r = load_running(&in, running_path, err);
                if (r < 0)
                        return r;
        }
        r = set_devices(&in, devices, n_devices, err);
        if (r < 0)
                return r;
        if (api)
                r = pod_load_file(manifest, &in.pod, err);
        else {
                _cleanup_free_ char *buf = NULL, *abs = realpath(manifest, NULL);
                size_t len;

                r = cub_read_file(manifest, INPUT_MAX, &buf, &len, err);
                if (r >= 0)
                        r = pod_decode_static(buf, len, manifest, POD_FORMAT_AUTO, in.node->name, POD_SOURCE_FILE,
                                              abs ? abs : manifest, &in.pod, err);
        }
        if (r < 0)
                return r;
        if (in.pod->refused.n > 0) {
                /* the agent never admits it: it is Failed (UnsupportedField), as in `cubelet plan` */
                _cleanup_free_ char *msg = pod_field_notes_join(&in.pod->refused, manifest);

                return cub_err_set(err, EOPNOTSUPP, "%s", msg ? msg : "out of memory");
        }

        admit_options_init(&o);
        o.seccomp_root = seccomp_root;
        o.allowed_unsafe_sysctls = &in.cfg.allowed_unsafe_sysctls; /* security context */
        r = admit_decide(in.snap, in.pod, &o, &d, err);
        if (r < 0)
                return r;
        out = decision_json(&d);
        admit_decision_done(&d);
        if (!out)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
                return cub_err_set(err, EIO, "writing the result failed");
        putchar('\n');
        return 0;
}

int cli_admit(int argc, char **argv) {
        static const struct option options[] = {
                { "node", required_argument, NULL, 'n' },
                { "running", required_argument, NULL, 'r' },
                { "config", required_argument, NULL, 'c' },
                { "api", no_argument, NULL, 'a' },
                { "seccomp-root", required_argument, NULL, 's' },
                { "devices", required_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *node_path = NULL, *running_path = NULL, *config_path = NULL, *seccomp_root = NULL;
        _cleanup_free_ char **devices = calloc((size_t) argc + 1, sizeof(char *));
        size_t n_devices = 0;
        CubError err = {};
        bool api = false;
        int c, r;

        if (!devices)
                return CLI_EXIT_BAD_INPUT;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'n':
                        node_path = optarg;
                        break;
                case 'r':
                        running_path = optarg;
                        break;
                case 'c':
                        config_path = optarg;
                        break;
                case 'a':
                        api = true;
                        break;
                case 's':
                        seccomp_root = optarg;
                        break;
                case 'd':
                        devices[n_devices++] = optarg;
                        break;
                case 'h':
                        admit_usage(stdout);
                        return 0;
                default:
                        admit_usage(stderr);
                        return CLI_EXIT_BAD_INPUT;
                }
        }
        if (!node_path) {
                cub_log(LOG_ERR, "admit: --node is required (try 'cubelet admit --help')");
                return CLI_EXIT_BAD_INPUT;
        }
        if (optind + 1 != argc) {
                cub_log(LOG_ERR, "admit: exactly one manifest expected (try 'cubelet admit --help')");
                return CLI_EXIT_BAD_INPUT;
        }
        r = run(node_path, running_path, config_path, api, seccomp_root, devices, n_devices, argv[optind], &err);
        if (r < 0) {
                cub_log(LOG_ERR, "%s", err.msg);
                return CLI_EXIT_BAD_INPUT;
        }
        return 0;
}
