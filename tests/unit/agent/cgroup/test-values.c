/* SPDX-License-Identifier: Apache-2.0 */
/* agent/cgroup/values.c: cpu shares/weight/quota, pod cgroup paths and
 * values, CRI container resources with oom_score_adj, and the QoS tiers:
 * vectors T15-T28 and T33-T36 of shared/kubelet-semantics.md section 13. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cgroup/cgroup.h"
#include "agent/pod/pod.h"
#include "values-fixture.h"

#define UID_ "7e3c5c2e_1b6f_4b7a_9a34_2f2d3b7a8c10"

#define ASSERT_FILE(g, i, fname, want)                              \
        do {                                                        \
                assert_true((i) < (g)->n_files);                    \
                assert_string_equal((g)->files[(i)].name, (fname)); \
                assert_string_equal((g)->files[(i)].value, (want)); \
        } while (0)

static int64_t oom_of(const char *spec, const char *name) {
        CgOptions o = opts();

        return container_res(spec, name, &o).oom_score_adj;
}

/* ---- shares, weight, quota ---------------------------------------------- */

static void test_weight_table(void **state) {
        (void) state;
        assert_int_equal(cg_shares_to_weight(2), 1);
        assert_int_equal(cg_shares_to_weight(102), 4);
        assert_int_equal(cg_shares_to_weight(256), 10);
        assert_int_equal(cg_shares_to_weight(512), 20);
        assert_int_equal(cg_shares_to_weight(768), 30);
        assert_int_equal(cg_shares_to_weight(1024), 39);
        assert_int_equal(cg_shares_to_weight(1536), 59);
        assert_int_equal(cg_shares_to_weight(2048), 79);
        assert_int_equal(cg_shares_to_weight(3891), 149);
        assert_int_equal(cg_shares_to_weight(262144), 10000);
}

static void test_weight_clamps(void **state) {
        (void) state;
        assert_int_equal(cg_shares_to_weight(0), 1);
        assert_int_equal(cg_shares_to_weight(1), 1);
        assert_int_equal(cg_shares_to_weight(262143), 9999);
        assert_int_equal(cg_shares_to_weight(300000), 10000);
        assert_int_equal(cg_shares_to_weight(UINT64_MAX), 10000);
}

static void test_t15_100m(void **state) {
        (void) state;
        assert_int_equal(cg_milli_cpu_to_shares(100), 102);
        assert_int_equal(cg_shares_to_weight(cg_milli_cpu_to_shares(100)), 4);
}

static void test_t16_250m(void **state) {
        (void) state;
        assert_int_equal(cg_milli_cpu_to_shares(250), 256);
        assert_int_equal(cg_shares_to_weight(256), 10);
        assert_int_equal(cg_milli_cpu_to_quota(250, CG_QUOTA_PERIOD), 25000);
}

static void test_t17_one_cpu(void **state) {
        (void) state;
        assert_int_equal(cg_milli_cpu_to_shares(1000), 1024);
        assert_int_equal(cg_shares_to_weight(1024), 39);
        assert_int_equal(cg_milli_cpu_to_quota(1000, CG_QUOTA_PERIOD), 100000);
}

static void test_t18_no_request(void **state) {
        (void) state;
        assert_int_equal(cg_milli_cpu_to_shares(0), 2);
        assert_int_equal(cg_shares_to_weight(cg_milli_cpu_to_shares(0)), 1);
        assert_int_equal(cg_milli_cpu_to_quota(0, CG_QUOTA_PERIOD), 0);
        assert_int_equal(cg_milli_cpu_to_shares(-5), 2);
        assert_int_equal(cg_milli_cpu_to_quota(-5, CG_QUOTA_PERIOD), 0);
}

static void test_t19_minimums(void **state) {
        (void) state;
        assert_int_equal(cg_milli_cpu_to_shares(1), 2);
        assert_int_equal(cg_milli_cpu_to_shares(2), 2);
        assert_int_equal(cg_milli_cpu_to_shares(3), 3);
        assert_int_equal(cg_shares_to_weight(cg_milli_cpu_to_shares(1)), 1);
        assert_int_equal(cg_milli_cpu_to_quota(1, CG_QUOTA_PERIOD), 1000);
        assert_int_equal(cg_milli_cpu_to_quota(9, CG_QUOTA_PERIOD), 1000);
        assert_int_equal(cg_milli_cpu_to_quota(10, CG_QUOTA_PERIOD), 1000);
        assert_int_equal(cg_milli_cpu_to_quota(11, CG_QUOTA_PERIOD), 1100);
        assert_int_equal(cg_milli_cpu_to_quota(15, CG_QUOTA_PERIOD), 1500); /* T19b */
}

static void test_t20_capped(void **state) {
        (void) state;
        assert_int_equal(cg_milli_cpu_to_shares(300000), 262144);
        assert_int_equal(cg_milli_cpu_to_shares(256000), 262144);
        assert_int_equal(cg_milli_cpu_to_shares(255999), 262142);
        assert_int_equal(cg_milli_cpu_to_shares(INT64_MAX), 262144);
        assert_int_equal(cg_shares_to_weight(cg_milli_cpu_to_shares(300000)), 10000);
}

static void test_t21_1500m(void **state) {
        (void) state;
        assert_int_equal(cg_milli_cpu_to_shares(1500), 1536);
        assert_int_equal(cg_shares_to_weight(1536), 59);
        assert_int_equal(cg_milli_cpu_to_quota(1500, CG_QUOTA_PERIOD), 150000);
}

static void test_quota_other_periods(void **state) {
        (void) state;
        assert_int_equal(cg_milli_cpu_to_quota(500, 50000), 25000);
        assert_int_equal(cg_milli_cpu_to_quota(2000, CG_QUOTA_PERIOD), 200000);
        assert_true(cg_milli_cpu_to_quota(INT64_MAX, CG_QUOTA_PERIOD) > 0);
}

/* ---- paths -------------------------------------------------------------- */

static const char *path_of(PodQOSClass qos, CgDriverKind driver, char buf[256]) {
        CubError err = {};

        if (cg_pod_path(UID, qos, driver, buf, 256, &err) < 0)
                fail_msg("cg_pod_path failed: %s", err.msg);
        return buf;
}

static void test_t22_cgroupfs_paths(void **state) {
        char b[256];

        (void) state;
        assert_string_equal(path_of(POD_QOS_BURSTABLE, CG_DRIVER_CGROUPFS, b), "kubepods/burstable/pod" UID);
        assert_string_equal(path_of(POD_QOS_BESTEFFORT, CG_DRIVER_CGROUPFS, b), "kubepods/besteffort/pod" UID);
        assert_string_equal(path_of(POD_QOS_GUARANTEED, CG_DRIVER_CGROUPFS, b), "kubepods/pod" UID);
}

static void test_t22_systemd_paths(void **state) {
        char b[256];

        (void) state;
        assert_string_equal(path_of(POD_QOS_BURSTABLE, CG_DRIVER_SYSTEMD, b),
                            "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice");
        assert_string_equal(path_of(POD_QOS_GUARANTEED, CG_DRIVER_SYSTEMD, b),
                            "kubepods.slice/kubepods-pod" UID_ ".slice");
        assert_string_equal(path_of(POD_QOS_BESTEFFORT, CG_DRIVER_SYSTEMD, b),
                            "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice");
}

static void test_path_errors(void **state) {
        char b[256] = "untouched";
        CubError err = {};

        (void) state;
        assert_int_equal(cg_pod_path("a/b", POD_QOS_BURSTABLE, CG_DRIVER_CGROUPFS, b, sizeof(b), &err), -EINVAL);
        assert_string_equal(err.msg, "pod UID 'a/b' cannot name a cgroup");
        assert_int_equal(cg_pod_path("", POD_QOS_BURSTABLE, CG_DRIVER_SYSTEMD, b, sizeof(b), &err), -EINVAL);
        assert_string_equal(err.msg, "pod UID '' cannot name a cgroup");
        assert_int_equal(cg_pod_path(NULL, POD_QOS_GUARANTEED, CG_DRIVER_CGROUPFS, b, sizeof(b), &err), -EINVAL);
        assert_string_equal(err.msg, "pod UID '' cannot name a cgroup");
        assert_int_equal(cg_pod_path(UID, POD_QOS_BURSTABLE, CG_DRIVER_CGROUPFS, b, 20, &err), -ENAMETOOLONG);
        assert_int_equal(err.code, ENAMETOOLONG);
        assert_string_equal(err.msg, "cgroup path for pod UID '" UID "' is too long");
        assert_int_equal(cg_pod_path(UID, POD_QOS_BURSTABLE, CG_DRIVER_SYSTEMD, b, 60, &err), -ENAMETOOLONG);
}

static void test_path_long_uid_not_truncated(void **state) {
        char uid[151], b[256], want[256];
        CubError err = {};
        int r;

        (void) state;
        memset(uid, 'a', 150);
        uid[150] = '\0';
        r = cg_pod_path(uid, POD_QOS_GUARANTEED, CG_DRIVER_CGROUPFS, b, sizeof(b), &err);
        assert_int_equal(r, 0);
        (void) snprintf(want, sizeof(want), "kubepods/pod%s", uid);
        assert_string_equal(b, want);
        /* the systemd form fits as well (194 bytes): it must hold the whole UID */
        r = cg_pod_path(uid, POD_QOS_GUARANTEED, CG_DRIVER_SYSTEMD, b, sizeof(b), &err);
        assert_int_equal(r, 0);
        (void) snprintf(want, sizeof(want), "kubepods.slice/kubepods-pod%s.slice", uid);
        assert_string_equal(b, want);
}

/* ---- pod cgroup values --------------------------------------------------- */

static void test_t23_guaranteed(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g;

        (void) state;
        g = pod_values("  containers:\n" C("a", LIM("cpu: 1, memory: 512Mi")) C("b", LIM("cpu: 500m, memory: 256Mi")),
                       &o, &qos);
        assert_int_equal(qos, POD_QOS_GUARANTEED);
        assert_string_equal(g.path, "kubepods/pod" UID);
        assert_int_equal(g.n_files, 4);
        ASSERT_FILE(&g, 0, "cpu.weight", "59");
        ASSERT_FILE(&g, 1, "cpu.max", "150000 100000");
        ASSERT_FILE(&g, 2, "memory.max", "805306368");
        ASSERT_FILE(&g, 3, "pids.max", "max");
        assert_string_equal(cg_group_get(&g, "memory.max"), "805306368");
        assert_null(cg_group_get(&g, "memory.min"));
}

static void test_t24_burstable_undeclared(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g;

        (void) state;
        g = pod_values("  containers:\n" C("a", RES("cpu: 500m, memory: 256Mi", "cpu: 1, memory: 512Mi"))
                               C("b", REQ("cpu: 250m")),
                       &o, &qos);
        assert_int_equal(qos, POD_QOS_BURSTABLE);
        assert_string_equal(g.path, "kubepods/burstable/pod" UID);
        assert_int_equal(g.n_files, 4);
        ASSERT_FILE(&g, 0, "cpu.weight", "30");
        ASSERT_FILE(&g, 1, "cpu.max", "max 100000");
        ASSERT_FILE(&g, 2, "memory.max", "max");
        ASSERT_FILE(&g, 3, "pids.max", "max");
}

static void test_t24b_init_without_limits(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g;

        (void) state;
        g = pod_values("  initContainers:\n" C("i", "") "  containers:\n" C(
                               "a", RES("cpu: 500m, memory: 256Mi", "cpu: 1, memory: 512Mi")),
                       &o, &qos);
        assert_int_equal(qos, POD_QOS_BURSTABLE);
        ASSERT_FILE(&g, 0, "cpu.weight", "20");
        ASSERT_FILE(&g, 1, "cpu.max", "max 100000");
        ASSERT_FILE(&g, 2, "memory.max", "max");
}

static void test_burstable_all_limits_declared(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g;

        (void) state;
        g = pod_values("  containers:\n" C("a", RES("cpu: 250m, memory: 128Mi", "cpu: 500m, memory: 256Mi")), &o, &qos);
        assert_int_equal(qos, POD_QOS_BURSTABLE);
        ASSERT_FILE(&g, 0, "cpu.weight", "10");
        ASSERT_FILE(&g, 1, "cpu.max", "50000 100000");
        ASSERT_FILE(&g, 2, "memory.max", "268435456");
}

static void test_burstable_only_memory_declared(void **state) {
        CgOptions o = opts();
        CgGroupValues g;

        (void) state;
        g = pod_values("  containers:\n" C("a", RES("cpu: 100m, memory: 64Mi", "memory: 128Mi")), &o, NULL);
        ASSERT_FILE(&g, 0, "cpu.weight", "4");
        ASSERT_FILE(&g, 1, "cpu.max", "max 100000");
        ASSERT_FILE(&g, 2, "memory.max", "134217728");
}

static void test_t25_besteffort(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g;

        (void) state;
        g = pod_values("  containers:\n" C("a", "") C("b", ""), &o, &qos);
        assert_int_equal(qos, POD_QOS_BESTEFFORT);
        assert_string_equal(g.path, "kubepods/besteffort/pod" UID);
        assert_int_equal(g.n_files, 4);
        ASSERT_FILE(&g, 0, "cpu.weight", "1");
        ASSERT_FILE(&g, 1, "cpu.max", "max 100000");
        ASSERT_FILE(&g, 2, "memory.max", "max");
        ASSERT_FILE(&g, 3, "pids.max", "max");
}

static void test_t26_init_guaranteed(void **state) {
        CgOptions o = opts();
        PodQOSClass qos;
        CgGroupValues g;

        (void) state;
        g = pod_values("  initContainers:\n" C("i", LIM("cpu: 2, memory: 1Gi")) "  containers:\n" C(
                               "a", LIM("cpu: 500m, memory: 256Mi")),
                       &o, &qos);
        assert_int_equal(qos, POD_QOS_GUARANTEED);
        ASSERT_FILE(&g, 0, "cpu.weight", "79");
        ASSERT_FILE(&g, 1, "cpu.max", "200000 100000");
        ASSERT_FILE(&g, 2, "memory.max", "1073741824");
}

static void test_guaranteed_with_overhead(void **state) {
        CgOptions o = opts();
        CgGroupValues g;

        (void) state;
        /* requests 1250m -> shares 1280 -> weight 49; limits 1Gi + 120Mi */
        g = pod_values("  overhead: {cpu: 250m, memory: 120Mi}\n  containers:\n" C("a", LIM("cpu: 1, memory: 1Gi")), &o,
                       NULL);
        ASSERT_FILE(&g, 0, "cpu.weight", "49");
        ASSERT_FILE(&g, 1, "cpu.max", "125000 100000");
        ASSERT_FILE(&g, 2, "memory.max", "1199570944");
}

static void test_besteffort_with_overhead(void **state) {
        CgOptions o = opts();
        CgGroupValues g;

        (void) state;
        g = pod_values("  overhead: {cpu: 250m, memory: 120Mi}\n  containers:\n" C("a", ""), &o, NULL);
        ASSERT_FILE(&g, 0, "cpu.weight", "1");
        ASSERT_FILE(&g, 1, "cpu.max", "max 100000");
        ASSERT_FILE(&g, 2, "memory.max", "max");
}

static void test_cfs_quota_disabled(void **state) {
        CgOptions o = opts();
        CgGroupValues g;

        (void) state;
        o.enforce_cpu_limits = false;
        g = pod_values("  containers:\n" C("a", LIM("cpu: 1, memory: 512Mi")), &o, NULL);
        ASSERT_FILE(&g, 0, "cpu.weight", "39");
        ASSERT_FILE(&g, 1, "cpu.max", "max 100000");
        ASSERT_FILE(&g, 2, "memory.max", "536870912");
        g = pod_values("  containers:\n" C("a", RES("cpu: 250m, memory: 128Mi", "cpu: 500m, memory: 256Mi")), &o, NULL);
        ASSERT_FILE(&g, 1, "cpu.max", "max 100000");
        ASSERT_FILE(&g, 2, "memory.max", "268435456");
}

static void test_pod_pids_limit(void **state) {
        CgOptions o = opts();
        CgGroupValues g;

        (void) state;
        o.pod_pids_limit = 1024;
        g = pod_values("  containers:\n" C("a", ""), &o, NULL);
        ASSERT_FILE(&g, 3, "pids.max", "1024");
        o.pod_pids_limit = 0;
        g = pod_values("  containers:\n" C("a", ""), &o, NULL);
        ASSERT_FILE(&g, 3, "pids.max", "max");
}

static void test_pod_values_systemd(void **state) {
        CgOptions o = opts();
        CgGroupValues g;

        (void) state;
        o.driver = CG_DRIVER_SYSTEMD;
        g = pod_values("  containers:\n" C("a", REQ("cpu: 250m")), &o, NULL);
        assert_string_equal(g.path, "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice");
        ASSERT_FILE(&g, 0, "cpu.weight", "10");
}

static void test_pod_values_without_uid(void **state) {
        CgOptions o = opts();
        Pod *pod = NULL;
        PodEffective eff;
        CgGroupValues g;
        CubError err = {};
        static const char text[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: v\nspec:\n  containers:\n"
                                   "  - name: a\n    image: x:1\n";
        int r;

        (void) state;
        assert_int_equal(pod_decode(text, strlen(text), "v.yaml", POD_FORMAT_YAML, &pod, &err), 0);
        assert_int_equal(pod_effective(pod, &eff, &err), 0);
        r = cg_pod_values(pod, &eff, pod_qos_class(pod), &o, &g, &err);
        pod_effective_done(&eff);
        pod_free(pod);
        assert_int_equal(r, -EINVAL);
        assert_string_equal(err.msg, "pod UID '' cannot name a cgroup");
}

/* ---- container resources (CRI) ------------------------------------------- */

static void test_t24_container_a(void **state) {
        CgOptions o = opts();
        CgContainerResources r;

        (void) state;
        r = container_res("  containers:\n" C("a", RES("cpu: 500m, memory: 256Mi", "cpu: 1, memory: 512Mi"))
                                  C("b", REQ("cpu: 250m")),
                          "a", &o);
        assert_int_equal(r.cpu_shares, 512);
        assert_int_equal(r.cpu_quota, 100000);
        assert_int_equal(r.cpu_period, 100000);
        assert_int_equal(r.memory_limit_in_bytes, 536870912);
        assert_int_equal(r.oom_score_adj, 985); /* 1000 - 1000*256Mi/16Gi */
}

static void test_t24_container_b(void **state) {
        CgOptions o = opts();
        CgContainerResources r;

        (void) state;
        r = container_res("  containers:\n" C("a", RES("cpu: 500m, memory: 256Mi", "cpu: 1, memory: 512Mi"))
                                  C("b", REQ("cpu: 250m")),
                          "b", &o);
        assert_int_equal(r.cpu_shares, 256);
        assert_int_equal(cg_shares_to_weight((uint64_t) r.cpu_shares), 10);
        assert_int_equal(r.cpu_quota, 0);
        assert_int_equal(r.cpu_period, 100000);
        assert_int_equal(r.memory_limit_in_bytes, 0);
        assert_int_equal(r.oom_score_adj, 999);
}

static void test_t25_container(void **state) {
        CgOptions o = opts();
        CgContainerResources r;

        (void) state;
        r = container_res("  containers:\n" C("a", ""), "a", &o);
        assert_int_equal(r.cpu_shares, 2);
        assert_int_equal(r.cpu_quota, 0);
        assert_int_equal(r.memory_limit_in_bytes, 0);
        assert_int_equal(r.oom_score_adj, 1000);
}

static void test_guaranteed_container(void **state) {
        CgOptions o = opts();
        CgContainerResources r;

        (void) state;
        r = container_res("  containers:\n" C("a", LIM("cpu: 1500m, memory: 1Gi")), "a", &o);
        assert_int_equal(r.cpu_shares, 1536);
        assert_int_equal(r.cpu_quota, 150000);
        assert_int_equal(r.cpu_period, 100000);
        assert_int_equal(r.memory_limit_in_bytes, 1073741824);
        assert_int_equal(r.oom_score_adj, -997);
}

static void test_container_quota_minimum(void **state) {
        CgOptions o = opts();
        CgContainerResources r;

        (void) state;
        r = container_res("  containers:\n" C("a", LIM("cpu: 1m, memory: 100m")), "a", &o);
        assert_int_equal(r.cpu_shares, 2);
        assert_int_equal(r.cpu_quota, 1000);
        assert_int_equal(r.memory_limit_in_bytes, 1); /* Value() rounds 100m up to 1 byte */
}

static void test_zero_cpu_request_with_limit(void **state) {
        CgOptions o = opts();
        CgContainerResources r;

        (void) state;
        /* kuberuntime (1.27+): the request is present, so cpu_shares come
         * from it (0 -> 2), not from the limit */
        r = container_res("  containers:\n" C("a", RES("cpu: \"0\"", "cpu: \"2\", memory: 128Mi")), "a", &o);
        assert_int_equal(r.cpu_quota, 200000);
        assert_int_equal(r.memory_limit_in_bytes, 134217728);
        assert_int_equal(r.cpu_shares, 2);
}

static void test_container_cfs_quota_disabled(void **state) {
        CgOptions o = opts();
        CgContainerResources r;

        (void) state;
        o.enforce_cpu_limits = false;
        r = container_res("  containers:\n" C("a", LIM("cpu: 1, memory: 512Mi")), "a", &o);
        assert_int_equal(r.cpu_shares, 1024);
        assert_int_equal(r.cpu_quota, 0);
        assert_int_equal(r.memory_limit_in_bytes, 536870912);
}

static void test_container_cfs_quota_disabled_no_period(void **state) {
        CgOptions o = opts();
        CgContainerResources r;

        (void) state;
        /* calculateLinuxResources sets CpuQuota and CpuPeriod only under
         * cpuCFSQuota; otherwise both stay 0 */
        o.enforce_cpu_limits = false;
        r = container_res("  containers:\n" C("a", LIM("cpu: 1, memory: 512Mi")), "a", &o);
        assert_int_equal(r.cpu_period, 0);
}

/* ---- oom_score_adj -------------------------------------------------------- */

static void test_t33_burstable_1gi(void **state) {
        (void) state;
        assert_int_equal(oom_of("  containers:\n" C("a", REQ("memory: 1Gi")), "a"), 938);
}

static void test_t34_burstable_no_memory_request(void **state) {
        (void) state;
        assert_int_equal(oom_of("  containers:\n" C("a", REQ("cpu: 100m")), "a"), 999);
}

static void test_t35_burstable_floor(void **state) {
        (void) state;
        assert_int_equal(oom_of("  containers:\n" C("a", REQ("memory: 16Gi")), "a"), 3);
        assert_int_equal(oom_of("  containers:\n" C("a", REQ("memory: 15Gi")), "a"), 63);
        assert_int_equal(oom_of("  containers:\n" C("a", REQ("memory: 64Gi")), "a"), 3);
        assert_int_equal(oom_of("  containers:\n" C("a", REQ("memory: 64Mi")), "a"), 997);
}

static void test_t36_qos_and_critical(void **state) {
        (void) state;
        assert_int_equal(oom_of("  containers:\n" C("a", LIM("cpu: 1, memory: 1Gi")), "a"), -997);
        assert_int_equal(oom_of("  containers:\n" C("a", ""), "a"), 1000);
        assert_int_equal(
                oom_of("  priorityClassName: system-node-critical\n  containers:\n" C("a", REQ("memory: 1Gi")), "a"),
                -997);
        assert_int_equal(oom_of("  priorityClassName: system-node-critical\n  containers:\n" C("a", ""), "a"), -997);
        /* cluster-critical is not node-critical */
        assert_int_equal(
                oom_of("  priorityClassName: system-cluster-critical\n  containers:\n" C("a", REQ("memory: 1Gi")), "a"),
                938);
        assert_int_equal(oom_of("  priority: 2000001000\n  containers:\n" C("a", REQ("memory: 1Gi")), "a"), 938);
}

static void test_t36_static_node_critical_priority_zero(void **state) {
        static const char text[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: agent\n  namespace: kube-system\n"
                                   "spec:\n  priorityClassName: system-node-critical\n  priority: 0\n"
                                   "  containers:\n  - name: agent\n    image: x:1\n"
                                   "    resources:\n      requests: {memory: 1Gi}\n";
        CgOptions o = opts();
        CgContainerResources r;
        Pod *pod = NULL;
        CubError err = {};

        (void) state;
        /* IsCriticalPod is true for every static pod, so the class name alone
         * makes it node-critical: -997 whatever spec.priority says */
        assert_int_equal(pod_decode_static(text, strlen(text), "agent.yaml", POD_FORMAT_YAML, "n1", POD_SOURCE_FILE,
                                           "/etc/kubernetes/manifests/agent.yaml", &pod, &err),
                         0);
        cg_container_resources(pod, pod_qos_class(pod), &pod->containers[0], &o, &r);
        pod_free(pod);
        assert_int_equal(r.oom_score_adj, -997);
}

static void test_sidecar_oom_follows_regular_containers(void **state) {
        static const char spec[] = "  initContainers:\n" C("s", "    restartPolicy: Always\n" REQ("memory: 64Mi"))
                C("i", REQ("memory: 64Mi")) "  containers:\n" C("a", REQ("memory: 1Gi")) C("b", REQ("memory: 2Gi"));

        (void) state;
        /* sidecar: min(own 997, smallest regular request 1Gi -> 938) */
        assert_int_equal(oom_of(spec, "s"), 938);
        assert_int_equal(oom_of(spec, "i"), 997);
        assert_int_equal(oom_of(spec, "a"), 938);
        assert_int_equal(oom_of(spec, "b"), 875);
}

static void test_oom_unknown_capacity(void **state) {
        CgOptions o;
        CgContainerResources r;

        (void) state;
        cg_options_init(&o);
        r = container_res("  containers:\n" C("a", REQ("memory: 1Gi")), "a", &o);
        assert_int_equal(r.oom_score_adj, 999);
}

/* ---- QoS tiers ------------------------------------------------------------ */

static void test_t27_qos_tiers(void **state) {
        CgOptions o = opts();
        CgGroupValues g[3];

        (void) state;
        cg_qos_values(250 + 500, &o, g);
        assert_string_equal(g[0].path, "kubepods");
        assert_int_equal(g[0].n_files, 0); /* allocatable unknown: nothing written */
        assert_string_equal(g[1].path, "kubepods/burstable");
        assert_int_equal(g[1].n_files, 1);
        ASSERT_FILE(&g[1], 0, "cpu.weight", "30");
        assert_string_equal(g[2].path, "kubepods/besteffort");
        assert_int_equal(g[2].n_files, 1);
        ASSERT_FILE(&g[2], 0, "cpu.weight", "1");
}

static void test_t28_kubepods_allocatable(void **state) {
        CgOptions o = opts();
        CgGroupValues g[3];

        (void) state;
        o.cpu_capacity_milli = 4000;
        o.kubepods_cpu_milli = 3800;
        o.kubepods_memory = 17179869184LL - 1073741824LL - 536870912LL;
        cg_qos_values(0, &o, g);
        assert_int_equal(g[0].n_files, 2);
        ASSERT_FILE(&g[0], 0, "cpu.weight", "149");
        ASSERT_FILE(&g[0], 1, "memory.max", "15569256448");
        o.kubepods_pids = 23682; /* the node's tasks limit: kubelet writes it too */
        cg_qos_values(0, &o, g);
        assert_int_equal(g[0].n_files, 3);
        ASSERT_FILE(&g[0], 2, "pids.max", "23682");
        ASSERT_FILE(&g[1], 0, "cpu.weight", "1"); /* no Burstable pods: shares 2 */
        ASSERT_FILE(&g[2], 0, "cpu.weight", "1");
}

static void test_qos_tiers_systemd(void **state) {
        CgOptions o = opts();
        CgGroupValues g[3];

        (void) state;
        o.driver = CG_DRIVER_SYSTEMD;
        cg_qos_values(1000, &o, g);
        assert_string_equal(g[0].path, "kubepods.slice");
        assert_string_equal(g[1].path, "kubepods.slice/kubepods-burstable.slice");
        assert_string_equal(g[2].path, "kubepods.slice/kubepods-besteffort.slice");
        ASSERT_FILE(&g[1], 0, "cpu.weight", "39");
}

static void test_options_init(void **state) {
        CgOptions o;

        (void) state;
        memset(&o, 0x5a, sizeof(o));
        cg_options_init(&o);
        assert_int_equal(o.driver, CG_DRIVER_CGROUPFS);
        assert_true(o.enforce_cpu_limits);
        assert_true(o.pod_pids_limit == -1);
        assert_true(o.memory_capacity == 0);
        assert_true(o.cpu_capacity_milli == 0);
        assert_true(o.kubepods_cpu_milli == 0);
        assert_true(o.kubepods_memory == 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_weight_table),
                cmocka_unit_test(test_weight_clamps),
                cmocka_unit_test(test_t15_100m),
                cmocka_unit_test(test_t16_250m),
                cmocka_unit_test(test_t17_one_cpu),
                cmocka_unit_test(test_t18_no_request),
                cmocka_unit_test(test_t19_minimums),
                cmocka_unit_test(test_t20_capped),
                cmocka_unit_test(test_t21_1500m),
                cmocka_unit_test(test_quota_other_periods),
                cmocka_unit_test(test_t22_cgroupfs_paths),
                cmocka_unit_test(test_t22_systemd_paths),
                cmocka_unit_test(test_path_errors),
                cmocka_unit_test(test_path_long_uid_not_truncated),
                cmocka_unit_test(test_t23_guaranteed),
                cmocka_unit_test(test_t24_burstable_undeclared),
                cmocka_unit_test(test_t24b_init_without_limits),
                cmocka_unit_test(test_burstable_all_limits_declared),
                cmocka_unit_test(test_burstable_only_memory_declared),
                cmocka_unit_test(test_t25_besteffort),
                cmocka_unit_test(test_t26_init_guaranteed),
                cmocka_unit_test(test_guaranteed_with_overhead),
                cmocka_unit_test(test_besteffort_with_overhead),
                cmocka_unit_test(test_cfs_quota_disabled),
                cmocka_unit_test(test_pod_pids_limit),
                cmocka_unit_test(test_pod_values_systemd),
                cmocka_unit_test(test_pod_values_without_uid),
                cmocka_unit_test(test_t24_container_a),
                cmocka_unit_test(test_t24_container_b),
                cmocka_unit_test(test_t25_container),
                cmocka_unit_test(test_guaranteed_container),
                cmocka_unit_test(test_container_quota_minimum),
                cmocka_unit_test(test_zero_cpu_request_with_limit),
                cmocka_unit_test(test_container_cfs_quota_disabled),
                cmocka_unit_test(test_container_cfs_quota_disabled_no_period),
                cmocka_unit_test(test_t33_burstable_1gi),
                cmocka_unit_test(test_t34_burstable_no_memory_request),
                cmocka_unit_test(test_t35_burstable_floor),
                cmocka_unit_test(test_t36_qos_and_critical),
                cmocka_unit_test(test_t36_static_node_critical_priority_zero),
                cmocka_unit_test(test_sidecar_oom_follows_regular_containers),
                cmocka_unit_test(test_oom_unknown_capacity),
                cmocka_unit_test(test_t27_qos_tiers),
                cmocka_unit_test(test_t28_kubepods_allocatable),
                cmocka_unit_test(test_qos_tiers_systemd),
                cmocka_unit_test(test_options_init),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
