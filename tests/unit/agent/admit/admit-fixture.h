/* SPDX-License-Identifier: Apache-2.0 */
/* The fixtures test-ledger.c and test-preempt.c share: a node, pods decoded
 * from YAML and kept for the snapshot's lifetime, a static CPU manager. */
#pragma once

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/admit/admit.h"
#include "agent/pod/pod.h"

#define NODE_HDR "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n"
#define NODE_STD                                                                                            \
        NODE_HDR "  labels: {disk: ssd, zone: a, cores: '16', kubernetes.io/hostname: node-1}\n"            \
                 "status:\n  allocatable: {cpu: '4', memory: 16Gi, pods: '110', ephemeral-storage: 100Gi, " \
                 "nvidia.com/gpu: '1'}\n"

#define POD_HDR(name) \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " name "\n  namespace: default\n  uid: uid-" name "\nspec:\n"
#define APP(req) "  containers:\n  - name: app\n    image: x:1\n    resources: {requests: {" req "}}\n"
#define APP_G(res) \
        "  containers:\n  - name: app\n    image: x:1\n    resources: {requests: {" res "}, limits: {" res "}}\n"
#define APP_BARE "  containers:\n  - name: app\n    image: x:1\n"

#define MAX_PODS 128

typedef struct Fx {
        PodNode *node;
        AdmitSnapshot *snap;
        Pod *pods[MAX_PODS];
        size_t n_pods;
        AdmitDecision d;
        bool decided;
        CpumgrTopology topo;
        CpumgrState *cpu;
} Fx;

static __attribute__((unused)) Pod *decode(const char *yaml) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(yaml, strlen(yaml), "t.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode failed: %s\n%s", err.msg, yaml);
        return pod;
}

static __attribute__((unused)) Pod *decode_static(const char *yaml) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode_static(yaml, strlen(yaml), "t.yaml", POD_FORMAT_YAML, "node-1", POD_SOURCE_FILE, "/t.yaml", &pod,
                              &err) < 0)
                fail_msg("decode failed: %s", err.msg);
        return pod;
}

static __attribute__((unused)) void fx_node(Fx *f, const char *node_yaml) {
        CubError err = {};
        AdmitNodeInfo info;

        if (pod_node_decode(node_yaml, strlen(node_yaml), "node.yaml", &f->node, &err) < 0)
                fail_msg("node decode failed: %s", err.msg);
        info = (AdmitNodeInfo){ .name = f->node->name,
                                .labels = &f->node->labels,
                                .taints = f->node->taints,
                                .n_taints = f->node->n_taints,
                                .allocatable = &f->node->allocatable };
        assert_int_equal(admit_snapshot_new(&info, &f->snap, &err), 0);
}

static __attribute__((unused)) int fx_setup(void **state) {
        Fx *f = calloc(1, sizeof(Fx));

        fx_node(f, NODE_STD);
        *state = f;
        return 0;
}

static __attribute__((unused)) int fx_teardown(void **state) {
        Fx *f = *state;

        if (f->decided)
                admit_decision_done(&f->d);
        admit_snapshot_free(f->snap);
        cpumgr_free(f->cpu);
        cpumgr_topology_done(&f->topo);
        for (size_t i = 0; i < f->n_pods; i++)
                pod_free(f->pods[i]);
        pod_node_free(f->node);
        free(f);
        return 0;
}

static __attribute__((unused)) void fx_renode(Fx *f, const char *node_yaml) {
        admit_snapshot_free(f->snap);
        pod_node_free(f->node);
        fx_node(f, node_yaml);
}

static __attribute__((unused)) Pod *keep(Fx *f, Pod *p) {
        assert_true(f->n_pods < MAX_PODS);
        f->pods[f->n_pods++] = p;
        return p;
}

static __attribute__((unused)) void running(Fx *f, const char *yaml) {
        CubError err = {};

        if (admit_snapshot_add(f->snap, keep(f, decode(yaml)), &err) < 0)
                fail_msg("add failed: %s", err.msg);
}

static __attribute__((unused)) const AdmitDecision *decide_pod(Fx *f, Pod *pod, const AdmitOptions *o) {
        CubError err = {};

        if (f->decided)
                admit_decision_done(&f->d);
        if (admit_decide(f->snap, pod, o, &f->d, &err) < 0)
                fail_msg("decide failed: %s", err.msg);
        f->decided = true;
        return &f->d;
}

static __attribute__((unused)) const AdmitDecision *decide(Fx *f, const char *yaml) {
        return decide_pod(f, keep(f, decode(yaml)), NULL);
}

static __attribute__((unused)) const AdmitFilterResult *filter(const AdmitDecision *d, const char *plugin) {
        for (size_t i = 0; i < d->n_filters; i++)
                if (strcmp(d->filters[i].plugin, plugin) == 0)
                        return &d->filters[i];
        fail_msg("no filter %s", plugin);
        return NULL;
}

#define ASSERT_ADMIT(d)                                                          \
        do {                                                                     \
                if (!(d)->admit)                                                 \
                        fail_msg("rejected: %s: %s", (d)->reason, (d)->message); \
                assert_string_equal((d)->reason, "");                            \
        } while (0)

#define ASSERT_REJECT(d, rsn, msg)                        \
        do {                                              \
                assert_false((d)->admit);                 \
                assert_string_equal((d)->reason, (rsn));  \
                assert_string_equal((d)->message, (msg)); \
        } while (0)

/* A static CPU manager on `n` CPUs: cpu i has core core_of(i), ... */
static void fx_cpus(Fx *f, size_t n, unsigned threads, unsigned cores_per_socket, unsigned numa_per_socket,
                    unsigned sockets, const char *reserved) {
        CpumgrCpu cpus[64];
        CpumgrSet res;
        CubError err = {};
        unsigned n_cores = (unsigned) n / threads;

        (void) sockets;
        assert_true(n <= 64);
        for (size_t i = 0; i < n; i++) {
                unsigned core = (unsigned) i % n_cores; /* siblings: i and i + n_cores */
                unsigned socket = core / cores_per_socket;
                unsigned numa =
                        socket * numa_per_socket + (core % cores_per_socket) / (cores_per_socket / numa_per_socket);

                cpus[i] = (CpumgrCpu){ .cpu = (unsigned) i, .core = core, .socket = socket, .numa = numa };
        }
        assert_int_equal(cpumgr_topology_from_cpus(cpus, n, &f->topo, &err), 0);
        assert_int_equal(cpumgr_set_parse(reserved, &res, &err), 0);
        if (cpumgr_new(CPUMGR_POLICY_STATIC, &f->topo, &res, &f->cpu, &err) < 0)
                fail_msg("cpumgr_new: %s", err.msg);
        admit_snapshot_set_cpumgr(f->snap, f->cpu);
}

/* An admitted pod that also holds its exclusive CPUs. */
static __attribute__((unused)) void running_cpus(Fx *f, const char *yaml) {
        CubError err = {};
        Pod *p = keep(f, decode(yaml));

        if (admit_snapshot_add(f->snap, p, &err) < 0 || cpumgr_allocate_pod(f->cpu, p, pod_qos_class(p), &err) < 0)
                fail_msg("add failed: %s", err.msg);
}

static __attribute__((unused)) const char *cpus_of(Fx *f, const char *uid, const char *container, char *buf,
                                                   size_t size) {
        const CpumgrSet *s = cpumgr_container_cpus(f->cpu, uid, container);

        if (!s)
                return "none";
        return cpumgr_set_format(s, buf, size);
}
