/* SPDX-License-Identifier: Apache-2.0 */
/* `cubelet rank`: the eviction order of a pod snapshot for one signal.
 * Decodes each pod with agent/pod and ranks with eviction/'s pure
 * evict_rank(), the function the agent's eviction loop uses. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../node/derive.h"
#include "../pod/pod.h"
#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "cli.h"
#include "eviction/eviction.h"

#define SNAPSHOT_MAX (16 * 1024 * 1024)

/* Everything one snapshot entry owns. */
typedef struct RankEntry {
        Pod *pod;
        char *key;
        EvictContainer *containers;
} RankEntry;

typedef struct RankInput {
        EvictSignal signal;
        RankEntry *entries;
        EvictPod *pods;
        size_t n;
} RankInput;

static void rank_input_done(RankInput *in) {
        for (size_t i = 0; i < in->n; i++) {
                pod_free(in->entries[i].pod);
                free(in->entries[i].key);
                free(in->entries[i].containers);
        }
        free(in->entries);
        free(in->pods);
        *in = (RankInput){};
}

/* A quantity given as a string ("300Mi") or a non-negative integer. */
static int usage_quantity(const char *file, const char *path, json_t *v, uint64_t *ret, CubError *err) {
        CubQuantity q;
        CubError qerr = {};
        int r;

        if (json_is_integer(v)) {
                if (json_integer_value(v) < 0)
                        return cub_err_set(err, EINVAL, "%s: %s: must not be negative", file, path);
                *ret = (uint64_t) json_integer_value(v);
                return 0;
        }
        if (!json_is_string(v))
                return cub_err_set(err, EINVAL, "%s: %s: expected a quantity string", file, path);
        r = cub_quantity_parse(json_string_value(v), &q, &qerr);
        if (r < 0)
                return cub_err_set(err, -r, "%s: %s: %s", file, path, qerr.msg);
        *ret = (uint64_t) cub_quantity_value(q);
        return 0;
}

/* Formats a JSON path (or a source name) into buf; one that does not fit
 * is -ENAMETOOLONG naming its start, never a silently cut path. */
__attribute__((format(printf, 5, 6))) static int path_printf(char *buf, size_t size, const char *file, CubError *err,
                                                             const char *fmt, ...) {
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(buf, size, fmt, ap);
        va_end(ap);
        if (n < 0)
                return cub_err_set(err, EINVAL, "%s: formatting a JSON path failed", file);
        if ((size_t) n >= size)
                return cub_err_set(err, ENAMETOOLONG, "%s: JSON path '%.200s...' is longer than %zu bytes", file, buf,
                                   size - 1);
        return 0;
}

static int container_usage(const char *file, const char *base, json_t *containers, RankEntry *e, EvictPod *p,
                           CubError *err) {
        const char *name;
        json_t *v;
        int r;

        if (!json_is_object(containers))
                return cub_err_set(err, EINVAL, "%s: %s: expected an object", file, base);
        json_object_foreach(containers, name, v) {
                char path[512];
                EvictContainer *c = NULL;
                const char *res;
                json_t *q;

                for (size_t i = 0; i < p->n_containers; i++)
                        if (strcmp(e->containers[i].name, name) == 0)
                                c = &e->containers[i];
                r = path_printf(path, sizeof(path), file, err, "%s.%s", base, name);
                if (r < 0)
                        return r;
                if (!c)
                        return cub_err_set(err, EINVAL, "%s: %s: the pod has no container \"%s\"", file, path, name);
                if (!json_is_object(v))
                        return cub_err_set(err, EINVAL, "%s: %s: expected an object", file, path);
                json_object_foreach(v, res, q) {
                        char qpath[600];

                        r = path_printf(qpath, sizeof(qpath), file, err, "%s.%s", path, res);
                        if (r < 0)
                                return r;
                        if (strcmp(res, "memory") == 0)
                                r = usage_quantity(file, qpath, q, &c->memory_usage, err);
                        else if (strcmp(res, "ephemeral-storage") == 0)
                                r = usage_quantity(file, qpath, q, &c->ephemeral_usage, err);
                        else
                                r = cub_err_set(err, EINVAL, "%s: %s: unknown field (memory or ephemeral-storage)",
                                                file, qpath);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int pod_usage(const char *file, size_t idx, json_t *usage, RankEntry *e, EvictPod *p, CubError *err) {
        const char *key;
        json_t *v;
        int r;

        if (!json_is_object(usage))
                return cub_err_set(err, EINVAL, "%s: pods[%zu].usage: expected an object", file, idx);
        p->stats = true;
        json_object_foreach(usage, key, v) {
                char path[300];

                r = path_printf(path, sizeof(path), file, err, "pods[%zu].usage.%s", idx, key);
                if (r < 0)
                        return r;
                if (strcmp(key, "memory") == 0)
                        r = usage_quantity(file, path, v, &p->memory_usage, err);
                else if (strcmp(key, "ephemeral-storage") == 0)
                        r = usage_quantity(file, path, v, &p->ephemeral_usage, err);
                else if (strcmp(key, "inodes") == 0)
                        r = usage_quantity(file, path, v, &p->inodes_usage, err);
                else if (strcmp(key, "pids") == 0)
                        r = usage_quantity(file, path, v, &p->processes, err);
                else if (strcmp(key, "containers") == 0)
                        r = container_usage(file, path, v, e, p, err);
                else
                        r = cub_err_set(err, EINVAL,
                                        "%s: %s: unknown field (memory, ephemeral-storage, inodes, pids, containers)",
                                        file, path);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int rank_entry(const char *file, size_t idx, json_t *item, RankEntry *e, EvictPod *p, CubError *err) {
        _cleanup_free_ char *text = NULL;
        char source[512];
        json_t *pod, *usage;
        int r;

        if (!json_is_object(item))
                return cub_err_set(err, EINVAL, "%s: pods[%zu]: expected an object", file, idx);
        pod = json_object_get(item, "pod");
        if (!json_is_object(pod))
                return cub_err_set(err, EINVAL, "%s: pods[%zu].pod: %s", file, idx,
                                   pod ? "expected an object (a v1 Pod)" : "Required value");
        text = json_dumps(pod, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!text)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = path_printf(source, sizeof(source), file, err, "%s: pods[%zu].pod", file, idx);
        if (r < 0)
                return r;
        r = pod_decode(text, strlen(text), source, POD_FORMAT_JSON, &e->pod, err);
        if (r < 0)
                return r;
        if (asprintf(&e->key, "%s/%s", e->pod->namespace_, e->pod->name) < 0) {
                e->key = NULL;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        e->containers = calloc(e->pod->n_containers ? e->pod->n_containers : 1, sizeof(EvictContainer));
        if (!e->containers)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = agent_evict_pod(e->pod, e->key, e->containers, p, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "%s", source);
        usage = json_object_get(item, "usage");
        if (usage)
                return pod_usage(file, idx, usage, e, p, err);
        return 0;
}

static int load_snapshot(const char *file, RankInput *in, CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *buf = NULL;
        json_error_t jerr;
        json_t *sig, *pods;
        size_t len;
        int r;

        r = cub_read_file(file, SNAPSHOT_MAX, &buf, &len, err);
        if (r < 0)
                return r;
        root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
                return cub_err_set(err, EINVAL, "%s:%d:%d: invalid JSON: %s", file, jerr.line, jerr.column, jerr.text);
        if (!json_is_object(root))
                return cub_err_set(err, EINVAL, "%s: the snapshot must be an object {\"signal\", \"pods\"}", file);
        sig = json_object_get(root, "signal");
        if (!json_is_string(sig))
                return cub_err_set(err, EINVAL, "%s: signal: %s", file, sig ? "expected a string" : "Required value");
        in->signal = evict_signal_from_string(json_string_value(sig));
        if (in->signal < 0)
                return cub_err_set(err, EINVAL,
                                   "%s: signal: unknown eviction signal \"%s\" (memory.available, "
                                   "allocatableMemory.available, nodefs.available, nodefs.inodesFree, "
                                   "imagefs.available, imagefs.inodesFree, pid.available)",
                                   file, json_string_value(sig));
        pods = json_object_get(root, "pods");
        if (!json_is_array(pods))
                return cub_err_set(err, EINVAL, "%s: pods: %s", file, pods ? "expected an array" : "Required value");
        {
                const char *key;
                json_t *v;

                json_object_foreach(root, key,
                                    v) if (strcmp(key, "signal") != 0 &&
                                           strcmp(key, "pods") !=
                                                   0) return cub_err_set(err, EINVAL,
                                                                         "%s: %s: unknown field (signal, pods)", file,
                                                                         key);
        }
        len = json_array_size(pods);
        in->entries = calloc(len ? len : 1, sizeof(RankEntry));
        in->pods = calloc(len ? len : 1, sizeof(EvictPod));
        if (!in->entries || !in->pods)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < len; i++) {
                in->n = i + 1;
                r = rank_entry(file, i, json_array_get(pods, i), &in->entries[i], &in->pods[i], err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void rank_usage(FILE *f) {
        fputs("Usage: cubelet rank --input SNAPSHOT.json [--policy cubelet|kubelet]\n"
              "\n"
              "Prints the order in which the eviction manager would evict the pods of a\n"
              "snapshot for one signal, as one JSON document. Nothing is evicted.\n"
              "\n"
              "  --input FILE     {\"signal\": \"memory.available\", \"pods\": [{\"pod\": {v1 Pod},\n"
              "                   \"usage\": {\"memory\": \"300Mi\", \"ephemeral-storage\": \"1Gi\",\n"
              "                   \"inodes\": \"1000\", \"pids\": \"12\",\n"
              "                   \"containers\": {\"app\": {\"memory\": \"200Mi\"}}}}, ...]}\n"
              "  --policy NAME    cubelet (default): QoS class (BestEffort, Burstable,\n"
              "                   Guaranteed), then priority (lower first), then usage over\n"
              "                   request (larger first); kubelet: kubelet's rank functions\n"
              "\n"
              "Pods with priority >= 2000000000 or the annotation\n"
              "cubelet.io/eviction-protected: \"true\" are listed under \"exempt\".\n"
              "\n"
              "Exit status: 0, or 2 when the input is bad (one line on stderr).\n",
              f);
}

int cli_rank(int argc, char **argv) {
        static const struct option options[] = {
                { "input", required_argument, NULL, 'i' },
                { "policy", required_argument, NULL, 'p' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *input = NULL;
        EvictPolicy policy = EVICT_POLICY_CUBELET;
        _cleanup_(json_decrefp) json_t *out = NULL;
        _cleanup_free_ size_t *order = NULL, *exempt = NULL;
        size_t n_order = 0, n_exempt = 0;
        RankInput in = {};
        CubError err = {};
        json_t *jorder, *jexempt;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'i':
                        input = optarg;
                        break;
                case 'p':
                        policy = evict_policy_from_string(optarg);
                        if (policy < 0) {
                                cub_log(LOG_ERR, "rank: unknown policy '%s' (cubelet or kubelet)", optarg);
                                return CLI_EXIT_BAD_INPUT;
                        }
                        break;
                case 'h':
                        rank_usage(stdout);
                        return 0;
                default:
                        rank_usage(stderr);
                        return CLI_EXIT_BAD_INPUT;
                }
        }
        if (!input || optind < argc) {
                cub_log(LOG_ERR, "rank: %s (try 'cubelet rank --help')",
                        input ? "unexpected argument" : "no --input given");
                return CLI_EXIT_BAD_INPUT;
        }

        r = load_snapshot(input, &in, &err);
        if (r >= 0) {
                order = calloc(in.n ? in.n : 1, sizeof(size_t));
                exempt = calloc(in.n ? in.n : 1, sizeof(size_t));
                if (!order || !exempt)
                        r = cub_err_set(&err, ENOMEM, "out of memory");
        }
        if (r >= 0)
                r = evict_rank(in.pods, in.n, in.signal, policy, order, &n_order, exempt, &n_exempt, &err);
        if (r < 0) {
                cub_log(LOG_ERR, "%s", err.msg);
                rank_input_done(&in);
                return CLI_EXIT_BAD_INPUT;
        }

        jorder = json_array();
        jexempt = json_array();
        for (size_t i = 0; i < n_order; i++)
                json_array_append_new(jorder, json_string(in.pods[order[i]].key));
        for (size_t i = 0; i < n_exempt; i++)
                json_array_append_new(jexempt, json_string(in.pods[exempt[i]].key));
        out = json_pack("{s:s,s:s,s:o,s:o}", "signal", evict_signal_to_string(in.signal), "policy",
                        evict_policy_to_string(policy), "order", jorder, "exempt", jexempt);
        rank_input_done(&in);
        if (!out || json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
                cub_log(LOG_ERR, "rank: writing the result failed");
                return 1;
        }
        putchar('\n');
        return 0;
}
