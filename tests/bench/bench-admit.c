/* SPDX-License-Identifier: Apache-2.0 */
/* admit_decide() throughput and latency: 110 admitted pods of mixed shapes
 * on a static CPU manager over a 2 sockets x 8 cores x 2 threads topology;
 * decisions per second on one core over >= 1 s, then p50/p99 of single
 * decisions timed with clock_gettime. Printed, not asserted. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/admit/admit.h"
#include "agent/pod/pod.h"

#define N_ADMITTED 110
#define N_SAMPLES 200000

static uint64_t now_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static Pod *mkpod(int i, const char *resources, int prio, const char *ports) {
        char yaml[1024];
        Pod *pod = NULL;
        CubError err = {};

        (void) snprintf(yaml, sizeof(yaml),
                        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p%d\n  namespace: bench\n  uid: uid-%d\n"
                        "spec:\n  priority: %d\n  containers:\n  - name: app\n    image: x:1\n%s%s",
                        i, i, prio, resources, ports);
        if (pod_decode(yaml, strlen(yaml), "bench.yaml", POD_FORMAT_YAML, &pod, &err) < 0) {
                fprintf(stderr, "bench-admit: %s\n", err.msg);
                return NULL;
        }
        return pod;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

int main(void) {
        static const char *const shapes[] = {
                "", /* BestEffort */
                "    resources: {requests: {cpu: 100m, memory: 64Mi}}\n",
                "    resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 64Mi}}\n",
                "    resources: {requests: {cpu: 50m, memory: 16Mi}, limits: {cpu: 50m, memory: 16Mi}}\n",
        };
        static const char *const guaranteed = "    resources: {requests: {cpu: '1', memory: 128Mi}, limits: {cpu: "
                                              "'1', memory: 128Mi}}\n";
        Pod *pods[N_ADMITTED] = {}, *cand[4] = {};
        CpumgrCpu cpus[32];
        CpumgrTopology topo = {};
        CpumgrState *cpu = NULL;
        CpumgrSet reserved;
        AdmitSnapshot *snap = NULL;
        PodResource alloc_items[] = {
                { (char *) "cpu", { 32, 0 } },
                { (char *) "memory", { 128LL << 30, 0 } },
                { (char *) "pods", { N_ADMITTED + 10, 0 } },
        };
        PodResourceList alloc = { alloc_items, 3 };
        AdmitNodeInfo info = { .name = "bench-node", .allocatable = &alloc };
        AdmitOptions o;
        AdmitDecision d;
        CubError err = {};
        uint64_t *lat = NULL, t0, t1, n = 0;
        size_t admitted = 0;
        int rc = 1;

        /* 2 sockets x 8 cores x 2 threads, one NUMA node per socket; siblings i and i+16 */
        for (unsigned i = 0; i < 32; i++) {
                unsigned core = i % 16;

                cpus[i] = (CpumgrCpu){ .cpu = i, .core = core, .socket = core / 8, .numa = core / 8 };
        }
        if (cpumgr_topology_from_cpus(cpus, 32, &topo, &err) < 0 || cpumgr_set_parse("0,16", &reserved, &err) < 0 ||
            cpumgr_new(CPUMGR_POLICY_STATIC, &topo, &reserved, &cpu, &err) < 0 ||
            admit_snapshot_new(&info, &snap, &err) < 0)
                goto out;
        admit_snapshot_set_cpumgr(snap, cpu);
        for (int i = 0; i < N_ADMITTED; i++) {
                char ports[128] = "";

                if (i % 10 == 0)
                        (void) snprintf(ports, sizeof(ports), "    ports:\n    - {containerPort: 80, hostPort: %d}\n",
                                        20000 + i);
                pods[i] = mkpod(i, i % 11 == 0 ? guaranteed : shapes[i % 4], i % 7 * 100, ports);
                if (!pods[i])
                        goto out;
                if (admit_snapshot_add(snap, pods[i], &err) < 0 ||
                    cpumgr_allocate_pod(cpu, pods[i], pod_qos_class(pods[i]), &err) < 0)
                        goto out;
                admitted++;
        }
        /* the pods decided on: burstable, guaranteed with 2 exclusive CPUs, a host port, a huge one */
        cand[0] = mkpod(1000, shapes[1], 0, "");
        cand[1] = mkpod(1001, "    resources: {requests: {cpu: '2', memory: 1Gi}, limits: {cpu: '2', memory: 1Gi}}\n",
                        0, "");
        cand[2] = mkpod(1002, shapes[2], 0, "    ports:\n    - {containerPort: 80, hostPort: 8080}\n");
        cand[3] = mkpod(1003, "    resources: {requests: {cpu: '64'}}\n", 0, "");
        for (int i = 0; i < 4; i++)
                if (!cand[i])
                        goto out;
        admit_options_init(&o);
        o.preemption = false;

        /* throughput: >= 1 s on one core */
        t0 = now_ns();
        do {
                for (int i = 0; i < 1000; i++) {
                        if (admit_decide(snap, cand[n % 4], &o, &d, &err) < 0)
                                goto out;
                        admit_decision_done(&d);
                        n++;
                }
                t1 = now_ns();
        } while (t1 - t0 < 1000000000ull);

        lat = calloc(N_SAMPLES, sizeof(uint64_t));
        if (!lat)
                goto out;
        for (size_t i = 0; i < N_SAMPLES; i++) {
                uint64_t a = now_ns();

                if (admit_decide(snap, cand[i % 4], &o, &d, &err) < 0)
                        goto out;
                admit_decision_done(&d);
                lat[i] = now_ns() - a;
        }
        qsort(lat, N_SAMPLES, sizeof(uint64_t), cmp_u64);
        printf("admit: %zu admitted pods: %.0f decisions/s, p50 %.1f us, p99 %.1f us (%d samples, 2x8x2 static "
               "cpu manager)\n",
               admitted, (double) n * 1e9 / (double) (t1 - t0), (double) lat[N_SAMPLES / 2] / 1000.0,
               (double) lat[N_SAMPLES * 99 / 100] / 1000.0, N_SAMPLES);
        rc = 0;
out:
        if (rc != 0)
                fprintf(stderr, "bench-admit: %s\n", err.msg);
        free(lat);
        admit_snapshot_free(snap);
        cpumgr_free(cpu);
        cpumgr_topology_done(&topo);
        for (int i = 0; i < N_ADMITTED; i++)
                pod_free(pods[i]);
        for (int i = 0; i < 4; i++)
                pod_free(cand[i]);
        return rc;
}
