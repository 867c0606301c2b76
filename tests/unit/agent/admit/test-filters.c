/* SPDX-License-Identifier: Apache-2.0 */
/* agent/admit filters and scores: every plugin of the table with kubelet's
 * exact reasons and messages (shared/kubelet-semantics.md 6.7, 7.3-7.5). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/admit/admit.h"
#include "agent/pod/pod.h"

/* ---- fixtures ------------------------------------------------------------- */

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
        char tmpdir[64];
} Fx;

static Pod *decode(const char *yaml) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(yaml, strlen(yaml), "t.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode failed: %s\n%s", err.msg, yaml);
        return pod;
}

static Pod *decode_static(const char *yaml) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode_static(yaml, strlen(yaml), "t.yaml", POD_FORMAT_YAML, "node-1", POD_SOURCE_FILE, "/t.yaml", &pod,
                              &err) < 0)
                fail_msg("decode failed: %s", err.msg);
        return pod;
}

static void fx_node(Fx *f, const char *node_yaml) {
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

static int fx_setup(void **state) {
        Fx *f = calloc(1, sizeof(Fx));

        fx_node(f, NODE_STD);
        *state = f;
        return 0;
}

static int fx_teardown(void **state) {
        Fx *f = *state;

        if (f->decided)
                admit_decision_done(&f->d);
        admit_snapshot_free(f->snap);
        for (size_t i = 0; i < f->n_pods; i++)
                pod_free(f->pods[i]);
        pod_node_free(f->node);
        free(f);
        return 0;
}

static void fx_renode(Fx *f, const char *node_yaml) {
        admit_snapshot_free(f->snap);
        pod_node_free(f->node);
        fx_node(f, node_yaml);
}

static Pod *keep(Fx *f, Pod *p) {
        assert_true(f->n_pods < MAX_PODS);
        f->pods[f->n_pods++] = p;
        return p;
}

static void running(Fx *f, const char *yaml) {
        CubError err = {};

        if (admit_snapshot_add(f->snap, keep(f, decode(yaml)), &err) < 0)
                fail_msg("add failed: %s", err.msg);
}

static const AdmitDecision *decide_pod(Fx *f, Pod *pod, const AdmitOptions *o) {
        CubError err = {};

        if (f->decided)
                admit_decision_done(&f->d);
        if (admit_decide(f->snap, pod, o, &f->d, &err) < 0)
                fail_msg("decide failed: %s", err.msg);
        f->decided = true;
        return &f->d;
}

static const AdmitDecision *decide(Fx *f, const char *yaml) {
        return decide_pod(f, keep(f, decode(yaml)), NULL);
}

static const AdmitFilterResult *filter(const AdmitDecision *d, const char *plugin) {
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

/* ---- NodeResourcesFit ------------------------------------------------------- */

static void test_fits(void **state) {
        Fx *f = *state;
        const AdmitDecision *d = decide(f, POD_HDR("a") APP("cpu: 500m, memory: 1Gi"));

        ASSERT_ADMIT(d);
        assert_int_equal(d->n_filters, 9);
        for (size_t i = 0; i < d->n_filters; i++)
                assert_true(d->filters[i].ok);
        assert_string_equal(d->placement.cpuset, "");
        assert_int_equal(d->n_victims, 0);
}

static void test_out_of_cpu(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("r1") APP("cpu: 3600m"));
        ASSERT_REJECT(decide(f, POD_HDR("a") APP("cpu: 600m")), "OutOfcpu",
                      "Node didn't have enough resource: cpu, requested: 600, used: 3600, capacity: 4000");
        assert_false(filter(&f->d, "NodeResourcesFit")->ok);
        assert_string_equal(filter(&f->d, "NodeResourcesFit")->reason, "OutOfcpu");
        assert_int_equal(f->d.first_failed, ADMIT_FILTER_NODE_RESOURCES_FIT);
}

static void test_exact_fit(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("r1") APP("cpu: 3600m"));
        ASSERT_ADMIT(decide(f, POD_HDR("a") APP("cpu: 400m")));
}

static void test_out_of_memory_bytes(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("r1") APP("memory: 15Gi"));
        ASSERT_REJECT(decide(f, POD_HDR("a") APP("memory: 2Gi")), "OutOfmemory",
                      "Node didn't have enough resource: memory, requested: 2147483648, used: 16106127360, "
                      "capacity: 17179869184");
}

static void test_out_of_ephemeral(void **state) {
        Fx *f = *state;

        ASSERT_REJECT(decide(f, POD_HDR("a") APP("ephemeral-storage: 200Gi")), "OutOfephemeral-storage",
                      "Node didn't have enough resource: ephemeral-storage, requested: 214748364800, used: 0, "
                      "capacity: 107374182400");
}

static void test_cpu_before_memory(void **state) {
        Fx *f = *state;

        ASSERT_REJECT(decide(f, POD_HDR("a") APP("memory: 32Gi, cpu: '8'")), "OutOfcpu",
                      "Node didn't have enough resource: cpu, requested: 8000, used: 0, capacity: 4000");
}

static void test_out_of_pods_first(void **state) {
        Fx *f = *state;

        fx_renode(f, NODE_HDR "status:\n  allocatable: {cpu: '4', memory: 16Gi, pods: '2'}\n");
        running(f, POD_HDR("r1") APP_BARE);
        running(f, POD_HDR("r2") APP_BARE);
        ASSERT_REJECT(decide(f, POD_HDR("a") APP("cpu: '8'")), "OutOfpods",
                      "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2");
}

static void test_default_max_pods_110(void **state) {
        Fx *f = *state;
        char yaml[512];

        fx_renode(f, NODE_HDR "status:\n  allocatable: {cpu: '4', memory: 16Gi}\n");
        for (int i = 0; i < 110; i++) {
                (void) snprintf(yaml, sizeof(yaml), POD_HDR("p%d") APP_BARE, i, i);
                running(f, yaml);
        }
        ASSERT_REJECT(decide(f, POD_HDR("a") APP_BARE), "OutOfpods",
                      "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110");
}

static void test_extended_not_advertised_dropped(void **state) {
        Fx *f = *state;

        ASSERT_ADMIT(decide(f, POD_HDR("a") APP_G("example.com/widget: '3'")));
}

static void test_extended_insufficient(void **state) {
        Fx *f = *state;

        ASSERT_REJECT(decide(f, POD_HDR("a") APP_G("nvidia.com/gpu: '2'")), "OutOfnvidia.com/gpu",
                      "Node didn't have enough resource: nvidia.com/gpu, requested: 2, used: 0, capacity: 1");
}

static void test_extended_used(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("r1") APP_G("nvidia.com/gpu: '1'"));
        ASSERT_REJECT(decide(f, POD_HDR("a") APP_G("nvidia.com/gpu: '1'")), "OutOfnvidia.com/gpu",
                      "Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: 1, capacity: 1");
}

static void test_hugepages_not_advertised(void **state) {
        Fx *f = *state;

        ASSERT_REJECT(decide(f, POD_HDR("a") APP_G("hugepages-2Mi: 4Mi, memory: 64Mi, cpu: 100m")),
                      "OutOfhugepages-2Mi",
                      "Node didn't have enough resource: hugepages-2Mi, requested: 4194304, used: 0, capacity: 0");
}

static void test_besteffort_fits_full_node(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("r1") APP("cpu: '4', memory: 16Gi"));
        ASSERT_ADMIT(decide(f, POD_HDR("a") APP_BARE));
}

static void test_remove_frees(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("r1") APP("cpu: 3600m"));
        assert_int_equal(admit_snapshot_used(f->snap, "cpu"), 3600);
        assert_int_equal(admit_snapshot_remove(f->snap, "uid-r1"), 0);
        assert_int_equal(admit_snapshot_remove(f->snap, "uid-r1"), -ENOENT);
        assert_int_equal(admit_snapshot_used(f->snap, "cpu"), 0);
        ASSERT_ADMIT(decide(f, POD_HDR("a") APP("cpu: 600m")));
}

/* ---- NodeName ----------------------------------------------------------------- */

static void test_node_name_mismatch(void **state) {
        Fx *f = *state;

        ASSERT_REJECT(decide(f, POD_HDR("a") "  nodeName: node-2\n" APP_BARE), "NodeName",
                      "Predicate NodeName failed: node(s) didn't match the requested node name");
}

static void test_node_name_match(void **state) {
        Fx *f = *state;

        ASSERT_ADMIT(decide(f, POD_HDR("a") "  nodeName: node-1\n" APP_BARE));
}

/* ---- NodeAffinity ---------------------------------------------------------------- */

#define AFF_MSG "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
#define AFFINITY(terms)                                                                           \
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n" \
        "        nodeSelectorTerms:\n" terms
#define TERM(exprs) "        - matchExpressions:\n" exprs
#define EXPR(key, op, values) "          - {key: " key ", operator: " op values "}\n"

static void test_node_selector_match(void **state) {
        Fx *f = *state;

        ASSERT_ADMIT(decide(f, POD_HDR("a") "  nodeSelector: {disk: ssd, zone: a}\n" APP_BARE));
}

static void test_node_selector_mismatch(void **state) {
        Fx *f = *state;

        ASSERT_REJECT(decide(f, POD_HDR("a") "  nodeSelector: {disk: hdd}\n" APP_BARE), "NodeAffinity", AFF_MSG);
}

static void test_node_selector_missing_label(void **state) {
        Fx *f = *state;

        ASSERT_REJECT(decide(f, POD_HDR("a") "  nodeSelector: {gpu: 'true'}\n" APP_BARE), "NodeAffinity", AFF_MSG);
}

static void test_affinity_in_notin(void **state) {
        Fx *f = *state;

        ASSERT_ADMIT(decide(f, POD_HDR("a") AFFINITY(TERM(EXPR("disk", "In", ", values: [nvme, ssd]")
                                                                  EXPR("zone", "NotIn", ", values: [b]"))) APP_BARE));
        ASSERT_REJECT(decide(f, POD_HDR("b") AFFINITY(TERM(EXPR("zone", "NotIn", ", values: [a]"))) APP_BARE),
                      "NodeAffinity", AFF_MSG);
        /* NotIn on a missing label matches */
        ASSERT_ADMIT(decide(f, POD_HDR("c") AFFINITY(TERM(EXPR("rack", "NotIn", ", values: [r1]"))) APP_BARE));
}

static void test_affinity_exists(void **state) {
        Fx *f = *state;

        ASSERT_ADMIT(decide(f, POD_HDR("a") AFFINITY(TERM(EXPR("disk", "Exists", "") EXPR("gpu", "DoesNotExist", "")))
                                       APP_BARE));
        ASSERT_REJECT(decide(f, POD_HDR("b") AFFINITY(TERM(EXPR("disk", "DoesNotExist", ""))) APP_BARE), "NodeAffinity",
                      AFF_MSG);
        ASSERT_REJECT(decide(f, POD_HDR("c") AFFINITY(TERM(EXPR("gpu", "Exists", ""))) APP_BARE), "NodeAffinity",
                      AFF_MSG);
}

static void test_affinity_gt_lt(void **state) {
        Fx *f = *state;

        ASSERT_ADMIT(decide(f, POD_HDR("a") AFFINITY(TERM(EXPR("cores", "Gt", ", values: ['8']")
                                                                  EXPR("cores", "Lt", ", values: ['32']"))) APP_BARE));
        ASSERT_REJECT(decide(f, POD_HDR("b") AFFINITY(TERM(EXPR("cores", "Gt", ", values: ['16']"))) APP_BARE),
                      "NodeAffinity", AFF_MSG);
        /* a label that is not an integer never matches Gt/Lt */
        ASSERT_REJECT(decide(f, POD_HDR("c") AFFINITY(TERM(EXPR("disk", "Lt", ", values: ['5']"))) APP_BARE),
                      "NodeAffinity", AFF_MSG);
}

static void test_affinity_terms_ored(void **state) {
        Fx *f = *state;

        ASSERT_ADMIT(decide(f, POD_HDR("a") AFFINITY(TERM(EXPR("disk", "In", ", values: [hdd]"))
                                                             TERM(EXPR("zone", "In", ", values: [a]"))) APP_BARE));
        ASSERT_REJECT(decide(f, POD_HDR("b") AFFINITY(TERM(EXPR("disk", "In", ", values: [hdd]"))
                                                              TERM(EXPR("zone", "In", ", values: [b]"))) APP_BARE),
                      "NodeAffinity", AFF_MSG);
}

static void test_affinity_and_selector_both(void **state) {
        Fx *f = *state;

        ASSERT_REJECT(decide(f, POD_HDR("a") "  nodeSelector: {disk: hdd}\n" AFFINITY(
                                        TERM(EXPR("zone", "In", ", values: [a]"))) APP_BARE),
                      "NodeAffinity", AFF_MSG);
}

static void test_affinity_match_fields(void **state) {
        Fx *f = *state;

        ASSERT_ADMIT(decide(f, POD_HDR("a") AFFINITY(
                                       "        - matchFields:\n"
                                       "          - {key: metadata.name, operator: In, values: [node-1]}\n") APP_BARE));
        ASSERT_REJECT(decide(f, POD_HDR("b") AFFINITY("        - matchFields:\n"
                                                      "          - {key: metadata.name, operator: In, values: [x]}\n")
                                        APP_BARE),
                      "NodeAffinity", AFF_MSG);
}

/* ---- TaintToleration --------------------------------------------------------------- */

#define TAINTED(effect)                                                                       \
        NODE_HDR "spec:\n  taints:\n  - {key: dedicated, value: infra, effect: " effect "}\n" \
                 "status:\n  allocatable: {cpu: '4', memory: 16Gi}\n"
#define TAINT_MSG "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"

static void test_taint_noexecute_untolerated(void **state) {
        Fx *f = *state;

        fx_renode(f, TAINTED("NoExecute"));
        ASSERT_REJECT(decide(f, POD_HDR("a") APP_BARE), "TaintToleration", TAINT_MSG);
}

static void test_taint_noschedule_ignored(void **state) {
        Fx *f = *state;

        fx_renode(f, TAINTED("NoSchedule"));
        ASSERT_ADMIT(decide(f, POD_HDR("a") APP_BARE));
}

static void test_taint_static_pod_exempt(void **state) {
        Fx *f = *state;

        fx_renode(f, TAINTED("NoExecute"));
        ASSERT_ADMIT(decide_pod(f, keep(f, decode_static(POD_HDR("a") APP_BARE)), NULL));
}

static void test_taint_tolerations(void **state) {
        Fx *f = *state;

        fx_renode(f, TAINTED("NoExecute"));
        ASSERT_ADMIT(decide(f, POD_HDR("a") "  tolerations:\n  - {key: dedicated, operator: Equal, value: infra, "
                                            "effect: NoExecute}\n" APP_BARE));
        ASSERT_ADMIT(decide(f, POD_HDR("b") "  tolerations:\n  - {operator: Exists}\n" APP_BARE));
        ASSERT_ADMIT(decide(f, POD_HDR("c") "  tolerations:\n  - {key: dedicated, operator: Exists}\n" APP_BARE));
        ASSERT_REJECT(
                decide(f, POD_HDR("d") "  tolerations:\n  - {key: dedicated, operator: Equal, value: db}\n" APP_BARE),
                "TaintToleration", TAINT_MSG);
        ASSERT_REJECT(decide(f, POD_HDR("e") "  tolerations:\n  - {key: dedicated, operator: Exists, effect: "
                                             "NoSchedule}\n" APP_BARE),
                      "TaintToleration", TAINT_MSG);
}

/* ---- NodePorts ---------------------------------------------------------------------- */

#define PORTS(spec) "  containers:\n  - name: app\n    image: x:1\n    ports:\n" spec
#define PORT(cp, hp, extra) "    - {containerPort: " cp ", hostPort: " hp extra "}\n"
#define PORTS_MSG "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"

static void test_ports_conflict(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("r1") PORTS(PORT("80", "8080", "")));
        ASSERT_REJECT(decide(f, POD_HDR("a") PORTS(PORT("80", "8080", ""))), "NodePorts", PORTS_MSG);
        ASSERT_ADMIT(decide(f, POD_HDR("b") PORTS(PORT("80", "8080", ", protocol: UDP"))));
        ASSERT_ADMIT(decide(f, POD_HDR("c") PORTS(PORT("80", "8081", ""))));
        /* containerPort only: no host port */
        ASSERT_ADMIT(decide(f, POD_HDR("d") PORTS("    - {containerPort: 8080}\n")));
}

static void test_ports_host_ip(void **state) {
        Fx *f = *state;

        running(f, POD_HDR("r1") PORTS(PORT("80", "9000", ", hostIP: 10.0.0.1")));
        ASSERT_ADMIT(decide(f, POD_HDR("a") PORTS(PORT("80", "9000", ", hostIP: 10.0.0.2"))));
        ASSERT_REJECT(decide(f, POD_HDR("b") PORTS(PORT("80", "9000", ", hostIP: 10.0.0.1"))), "NodePorts", PORTS_MSG);
        ASSERT_REJECT(decide(f, POD_HDR("c") PORTS(PORT("80", "9000", ", hostIP: 0.0.0.0"))), "NodePorts", PORTS_MSG);
        ASSERT_REJECT(decide(f, POD_HDR("d") PORTS(PORT("80", "9000", ""))), "NodePorts", PORTS_MSG);
}

static void test_ports_host_sockets(void **state) {
        Fx *f = *state;
        const AdmitHostPort hp[] = {
                { .protocol = "TCP", .ip = "127.0.0.1", .port = 22 },
                { .protocol = "UDP", .ip = "::", .port = 53 },
        };
        CubError err = {};

        assert_int_equal(admit_snapshot_set_host_ports(f->snap, hp, 2, &err), 0);
        ASSERT_REJECT(decide(f, POD_HDR("a") PORTS(PORT("22", "22", ""))), "NodePorts", PORTS_MSG);
        ASSERT_ADMIT(decide(f, POD_HDR("b") PORTS(PORT("22", "22", ", hostIP: 10.0.0.1"))));
        ASSERT_REJECT(decide(f, POD_HDR("c") PORTS(PORT("53", "53", ", protocol: UDP, hostIP: 10.0.0.1"))), "NodePorts",
                      PORTS_MSG);
        ASSERT_ADMIT(decide(f, POD_HDR("d") PORTS(PORT("53", "53", ""))));
}

/* ---- NodePressure ---------------------------------------------------------------------- */

static void set_cond(Fx *f, bool mem, bool disk, bool pid) {
        const AdmitConditions c = { .memory_pressure = mem, .disk_pressure = disk, .pid_pressure = pid };

        admit_snapshot_set_conditions(f->snap, &c);
}

static void test_memory_pressure(void **state) {
        Fx *f = *state;

        set_cond(f, true, false, false);
        ASSERT_REJECT(decide(f, POD_HDR("a") APP_BARE), "Evicted", "The node had condition: [MemoryPressure]. ");
        ASSERT_ADMIT(decide(f, POD_HDR("b") APP("cpu: 100m")));
        ASSERT_ADMIT(decide(f, POD_HDR("c") "  tolerations:\n  - {key: node.kubernetes.io/memory-pressure, operator: "
                                            "Exists, effect: NoSchedule}\n" APP_BARE));
}

static void test_disk_pressure(void **state) {
        Fx *f = *state;

        set_cond(f, false, true, false);
        ASSERT_REJECT(decide(f, POD_HDR("a") APP("cpu: 100m")), "Evicted", "The node had condition: [DiskPressure]. ");
        set_cond(f, true, true, true);
        ASSERT_REJECT(decide(f, POD_HDR("b") APP_G("cpu: 100m, memory: 64Mi")), "Evicted",
                      "The node had condition: [MemoryPressure DiskPressure PIDPressure]. ");
        set_cond(f, false, false, true);
        ASSERT_REJECT(decide(f, POD_HDR("c") APP("cpu: 100m")), "Evicted", "The node had condition: [PIDPressure]. ");
}

static void test_pressure_critical_passes(void **state) {
        Fx *f = *state;

        set_cond(f, true, true, false);
        ASSERT_ADMIT(decide(f, POD_HDR("a") "  priority: 2000000000\n" APP_BARE));
}

static void test_pressure_static_not_exempt(void **state) {
        Fx *f = *state;

        /* kubelet admits every static pod (IsCriticalPod); cubelet's manifest pods are workload */
        set_cond(f, true, false, false);
        ASSERT_REJECT(decide_pod(f, keep(f, decode_static(POD_HDR("b") APP_BARE)), NULL), "Evicted",
                      "The node had condition: [MemoryPressure]. ");
}

/* ---- Sysctl (security context: kubelet's sysctl admit handler) ------------------------------ */

#define SYSCTL_POD(name, sysctl) \
        POD_HDR(name) "  securityContext:\n    sysctls: [{name: " sysctl ", value: '1'}]\n" APP_BARE

static void test_sysctl(void **state) {
        Fx *f = *state;
        char pattern[] = "net.core.*", *unsafe[] = { pattern, NULL };
        PodStrv allowed = { .items = unsafe, .n = 1 };
        AdmitOptions o;

        ASSERT_ADMIT(decide(f, SYSCTL_POD("a", "kernel.shm_rmid_forced")));
        ASSERT_REJECT(decide(f, SYSCTL_POD("b", "net.core.somaxconn")), "SysctlForbidden",
                      "forbidden sysctl: \"net.core.somaxconn\" not allowlisted");
        assert_false(filter(&f->d, "Sysctl")->ok);
        assert_int_equal(f->d.n_victims, 0);
        admit_options_init(&o);
        o.allowed_unsafe_sysctls = &allowed;
        ASSERT_ADMIT(decide_pod(f, keep(f, decode(SYSCTL_POD("c", "net.core.somaxconn"))), &o));
        ASSERT_REJECT(decide_pod(f, keep(f, decode(SYSCTL_POD("d", "vm.swappiness"))), &o), "SysctlForbidden",
                      "forbidden sysctl: \"vm.swappiness\" not allowlisted");
}

/* ---- Seccomp ------------------------------------------------------------------------------ */

static void write_file(const char *dir, const char *name, const char *text) {
        char path[256];
        FILE *fp;

        (void) snprintf(path, sizeof(path), "%s/%s", dir, name);
        fp = fopen(path, "we");
        assert_non_null(fp);
        fputs(text, fp);
        assert_int_equal(fclose(fp), 0);
}

static char *seccomp_dir(void) {
        char tmpl[] = "/tmp/admit-seccomp-XXXXXX";
        char *dir = mkdtemp(tmpl), sub[300];

        assert_non_null(dir);
        (void) snprintf(sub, sizeof(sub), "%s/profiles", dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        write_file(sub, "good.json",
                   "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\",\"write\",\"exit\"],"
                   "\"action\":\"SCMP_ACT_ALLOW\"}]}");
        write_file(sub, "bad.json",
                   "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\",\"nosuchcall\","
                   "\"frobnicate\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
        write_file(sub, "broken.json", "{\"defaultAction\": ");
        write_file(sub, "action.json", "{\"defaultAction\":\"SCMP_ACT_MAYBE\"}");
        return strdup(dir);
}

static void rm_dir(const char *dir) {
        const char *files[] = { "good.json", "bad.json", "broken.json", "action.json" };
        char path[300];

        for (size_t i = 0; i < 4; i++) {
                (void) snprintf(path, sizeof(path), "%s/profiles/%s", dir, files[i]);
                (void) unlink(path);
        }
        (void) snprintf(path, sizeof(path), "%s/profiles", dir);
        (void) rmdir(path);
        (void) rmdir(dir);
}

#define SECCOMP_POD(name, prof)                                                                 \
        POD_HDR(name)                                                                           \
        "  securityContext:\n    seccompProfile: {type: Localhost, localhostProfile: " prof "}" \
        "\n" APP_BARE

static void test_seccomp(void **state) {
        Fx *f = *state;
        char *dir = seccomp_dir(), msg[512];
        AdmitOptions o;

        admit_options_init(&o);
        o.seccomp_root = dir;
        ASSERT_ADMIT(decide_pod(f, keep(f, decode(SECCOMP_POD("a", "profiles/good.json"))), &o));
        ASSERT_REJECT(decide_pod(f, keep(f, decode(SECCOMP_POD("b", "profiles/bad.json"))), &o), "Seccomp",
                      "Predicate Seccomp failed: profile 'profiles/bad.json': unknown syscalls: 'nosuchcall', "
                      "'frobnicate'");
        (void) snprintf(msg, sizeof(msg),
                        "Predicate Seccomp failed: profile 'profiles/none.json': '%s/profiles/none.json': No such "
                        "file or directory",
                        dir);
        ASSERT_REJECT(decide_pod(f, keep(f, decode(SECCOMP_POD("c", "profiles/none.json"))), &o), "Seccomp", msg);
        (void) snprintf(msg, sizeof(msg),
                        "Predicate Seccomp failed: profile 'profiles/broken.json': '%s/profiles/broken.json': line 1: "
                        "'[' or '{' expected near end of file",
                        dir);
        decide_pod(f, keep(f, decode(SECCOMP_POD("d", "profiles/broken.json"))), &o);
        assert_false(f->d.admit);
        assert_string_equal(f->d.reason, "Seccomp");
        assert_non_null(strstr(f->d.message, "/profiles/broken.json': line 1: "));
        (void) snprintf(msg, sizeof(msg),
                        "Predicate Seccomp failed: profile 'profiles/action.json': '%s/profiles/action.json': "
                        "defaultAction: unknown action 'SCMP_ACT_MAYBE'",
                        dir);
        ASSERT_REJECT(decide_pod(f, keep(f, decode(SECCOMP_POD("e", "profiles/action.json"))), &o), "Seccomp", msg);
        /* a container's profile overrides the pod's */
        ASSERT_ADMIT(decide_pod(f,
                                keep(f, decode(POD_HDR("g") "  securityContext:\n    seccompProfile: {type: Localhost, "
                                                            "localhostProfile: profiles/bad.json}\n"
                                                            "  containers:\n  - name: app\n    image: x:1\n"
                                                            "    securityContext:\n      seccompProfile: {type: "
                                                            "RuntimeDefault}\n")),
                                &o));
        rm_dir(dir);
        free(dir);
}

/* ---- every filter runs; the first failure in table order wins ---------------------------- */

static void test_all_failures_listed(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        fx_renode(f, TAINTED("NoExecute"));
        running(f, POD_HDR("r1") PORTS(PORT("80", "8080", "")));
        d = decide(f, POD_HDR("a") "  nodeName: other\n  nodeSelector: {disk: hdd}\n"
                                   "  containers:\n  - name: app\n    image: x:1\n    ports:\n" PORT(
                                           "80", "8080", "") "    resources: {requests: {cpu: '5'}}\n");
        ASSERT_REJECT(d, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000");
        assert_string_equal(d->filters[0].plugin, "NodePressure");
        assert_true(d->filters[0].ok);
        assert_string_equal(d->filters[1].plugin, "CPUManager");
        assert_true(d->filters[1].ok);
        assert_string_equal(d->filters[2].plugin, "NodeResourcesFit");
        assert_string_equal(d->filters[3].reason, "NodeAffinity");
        assert_string_equal(d->filters[4].reason, "NodeName");
        assert_string_equal(d->filters[5].reason, "NodePorts");
        assert_string_equal(d->filters[6].reason, "TaintToleration");
        assert_true(d->filters[7].ok);
        assert_int_equal(d->n_victims, 0);
}

/* ---- scores ---------------------------------------------------------------------------------- */

static void test_scores(void **state) {
        Fx *f = *state;
        const AdmitDecision *d;

        running(f, POD_HDR("r1") APP("cpu: '1', memory: 4Gi"));
        d = decide(f, POD_HDR("a") APP("cpu: '1', memory: 4Gi"));
        ASSERT_ADMIT(d);
        /* cpu 2000/4000, memory 8Gi/16Gi */
        assert_int_equal(d->n_scores, 3);
        assert_string_equal(d->scores[0].plugin, "LeastAllocated");
        assert_int_equal(d->scores[0].score, 50);
        assert_string_equal(d->scores[1].plugin, "MostAllocated");
        assert_int_equal(d->scores[1].score, 50);
        assert_string_equal(d->scores[2].plugin, "BalancedAllocation");
        assert_int_equal(d->scores[2].score, 100);
        /* cpu 3000/4000 (75, least 25), memory 8Gi/16Gi (50): balanced 1 - |0.75-0.5|/2 */
        d = decide(f, POD_HDR("b") APP("cpu: '2', memory: 4Gi"));
        assert_int_equal(d->scores[0].score, 37);
        assert_int_equal(d->scores[1].score, 62);
        assert_int_equal(d->scores[2].score, 87);
}

static void test_preempted_message(void **state) {
        Fx *f = *state;
        char buf[ADMIT_PREEMPTED_MESSAGE_MAX];
        Pod *p = keep(f, decode(POD_HDR("web") APP_BARE));

        assert_string_equal(admit_preempted_message(p, buf), "Preempted in order to admit pod default/web");
        assert_string_equal(ADMIT_PREEMPTED_REASON, "Preempted");
}

/* ---- the host probe: a socket of ours shows up ------------------------------------------------ */

static void test_host_listening_ports(void **state) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);
        AdmitHostPort *ports = NULL;
        CubError err = {};
        size_t n = 0;
        bool tcp = false, udp = false;
        int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        uint16_t tport, uport;

        (void) state;
        assert_true(t >= 0 && u >= 0);
        assert_int_equal(bind(t, (struct sockaddr *) &a, sizeof(a)), 0);
        assert_int_equal(listen(t, 1), 0);
        assert_int_equal(getsockname(t, (struct sockaddr *) &a, &len), 0);
        tport = ntohs(a.sin_port);
        a.sin_port = 0;
        assert_int_equal(bind(u, (struct sockaddr *) &a, sizeof(a)), 0);
        assert_int_equal(getsockname(u, (struct sockaddr *) &a, &len), 0);
        uport = ntohs(a.sin_port);
        if (admit_host_listening_ports(&ports, &n, &err) < 0) {
                (void) close(t);
                (void) close(u);
                skip(); /* no sock_diag here (a sandbox without NETLINK_SOCK_DIAG) */
        }
        for (size_t i = 0; i < n; i++) {
                if (ports[i].port == tport && strcmp(ports[i].protocol, "TCP") == 0 &&
                    strcmp(ports[i].ip, "127.0.0.1") == 0)
                        tcp = true;
                if (ports[i].port == uport && strcmp(ports[i].protocol, "UDP") == 0 &&
                    strcmp(ports[i].ip, "127.0.0.1") == 0)
                        udp = true;
        }
        free(ports);
        (void) close(t);
        (void) close(u);
        assert_true(tcp);
        assert_true(udp);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_fits),
                T(test_out_of_cpu),
                T(test_exact_fit),
                T(test_out_of_memory_bytes),
                T(test_out_of_ephemeral),
                T(test_cpu_before_memory),
                T(test_out_of_pods_first),
                T(test_default_max_pods_110),
                T(test_extended_not_advertised_dropped),
                T(test_extended_insufficient),
                T(test_extended_used),
                T(test_hugepages_not_advertised),
                T(test_besteffort_fits_full_node),
                T(test_remove_frees),
                T(test_node_name_mismatch),
                T(test_node_name_match),
                T(test_node_selector_match),
                T(test_node_selector_mismatch),
                T(test_node_selector_missing_label),
                T(test_affinity_in_notin),
                T(test_affinity_exists),
                T(test_affinity_gt_lt),
                T(test_affinity_terms_ored),
                T(test_affinity_and_selector_both),
                T(test_affinity_match_fields),
                T(test_taint_noexecute_untolerated),
                T(test_taint_noschedule_ignored),
                T(test_taint_static_pod_exempt),
                T(test_taint_tolerations),
                T(test_ports_conflict),
                T(test_ports_host_ip),
                T(test_ports_host_sockets),
                T(test_memory_pressure),
                T(test_disk_pressure),
                T(test_pressure_critical_passes),
                T(test_pressure_static_not_exempt),
                T(test_seccomp),
                T(test_sysctl),
                T(test_all_failures_listed),
                T(test_scores),
                T(test_preempted_message),
                cmocka_unit_test(test_host_listening_ports),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
