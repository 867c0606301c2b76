/* SPDX-License-Identifier: Apache-2.0 */
/* agent/cgroup/names.c: kubelet's slice names and their escaping, the CRI
 * cgroup_parent per driver, the unit properties that carry the cgroupfs
 * driver's file values, and containerd's SystemdCgroup against cgroupDriver. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cgroup/cgroup.h"

#define UID "7e3c5c2e-1b6f-4b7a-9a34-2f2d3b7a8c10"
#define UID_ "7e3c5c2e_1b6f_4b7a_9a34_2f2d3b7a8c10"

static void test_pod_paths(void **state) {
        char buf[512];
        CubError err = {};

        (void) state;
        assert_int_equal(cg_pod_path(UID, POD_QOS_BURSTABLE, CG_DRIVER_SYSTEMD, buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice");
        assert_int_equal(cg_pod_path(UID, POD_QOS_BESTEFFORT, CG_DRIVER_SYSTEMD, buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice");
        assert_int_equal(cg_pod_path(UID, POD_QOS_GUARANTEED, CG_DRIVER_SYSTEMD, buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "kubepods.slice/kubepods-pod" UID_ ".slice");
        assert_int_equal(cg_pod_path(UID, POD_QOS_GUARANTEED, CG_DRIVER_CGROUPFS, buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "kubepods/pod" UID);

        /* a character no unit name may hold */
        assert_int_equal(cg_pod_path("a b", POD_QOS_BURSTABLE, CG_DRIVER_SYSTEMD, buf, sizeof(buf), &err), -EINVAL);
        assert_string_equal(err.msg, "pod UID 'a b' cannot name a systemd slice");
        assert_int_equal(cg_pod_path("a/b", POD_QOS_BURSTABLE, CG_DRIVER_SYSTEMD, buf, sizeof(buf), &err), -EINVAL);
}

static void test_kubepods_and_containers(void **state) {
        char buf[512];
        CubError err = {};

        (void) state;
        assert_string_equal(cg_kubepods_path(CG_DRIVER_SYSTEMD), "kubepods.slice");
        assert_string_equal(cg_kubepods_path(CG_DRIVER_CGROUPFS), "kubepods");
        assert_int_equal(cg_container_path(CG_DRIVER_SYSTEMD, "kubepods.slice/kubepods-podX.slice", "abc", buf,
                                           sizeof(buf), &err),
                         0);
        assert_string_equal(buf, "kubepods.slice/kubepods-podX.slice/cri-containerd-abc.scope");
        assert_int_equal(cg_container_path(CG_DRIVER_CGROUPFS, "kubepods/podX", "abc", buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "kubepods/podX/abc");
        assert_int_equal(cg_container_path(CG_DRIVER_CGROUPFS, "kubepods/podX", "", buf, sizeof(buf), &err), -EINVAL);
        assert_int_equal(cg_container_path(CG_DRIVER_CGROUPFS, "kubepods/podX", "abc", buf, 8, &err), -ENAMETOOLONG);
}

static void test_cgroup_parent(void **state) {
        char buf[512];
        CubError err = {};

        (void) state;
        assert_int_equal(cg_cgroup_parent(CG_DRIVER_SYSTEMD,
                                          "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
                                          ".slice",
                                          buf, sizeof(buf), &err),
                         0);
        assert_string_equal(buf, "kubepods-burstable-pod" UID_ ".slice");
        assert_int_equal(cg_cgroup_parent(CG_DRIVER_CGROUPFS, "kubepods/burstable/podX", buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "/kubepods/burstable/podX");
        /* a cgroupfs path (an old sandbox's label) is no slice */
        assert_int_equal(cg_cgroup_parent(CG_DRIVER_SYSTEMD, "kubepods/burstable/podX", buf, sizeof(buf), &err),
                         -EINVAL);
        assert_string_equal(err.msg, "cgroup 'kubepods/burstable/podX': 'podX' is not a systemd slice name");
}

static void test_unit_names(void **state) {
        char buf[256];
        CubError err = {};

        (void) state;
        assert_int_equal(cg_systemd_unit_of("kubepods.slice", buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "kubepods.slice");
        assert_int_equal(cg_systemd_parent_slice("kubepods.slice", buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "-.slice");
        assert_int_equal(cg_systemd_parent_slice("kubepods-burstable.slice", buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "kubepods.slice");
        assert_int_equal(cg_systemd_parent_slice("kubepods-burstable-pod" UID_ ".slice", buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "kubepods-burstable.slice");
        assert_int_equal(cg_systemd_parent_slice("kubepods-pod" UID_ ".slice", buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "kubepods.slice");
        /* systemd's slice rules: no empty part, no other suffix */
        assert_int_equal(cg_systemd_unit_of("a/kubepods--x.slice", buf, sizeof(buf), &err), -EINVAL);
        assert_int_equal(cg_systemd_unit_of("a/-x.slice", buf, sizeof(buf), &err), -EINVAL);
        assert_int_equal(cg_systemd_unit_of("a/x-.slice", buf, sizeof(buf), &err), -EINVAL);
        assert_int_equal(cg_systemd_unit_of("a/x.scope", buf, sizeof(buf), &err), -EINVAL);
        assert_int_equal(cg_systemd_unit_of("a/.slice", buf, sizeof(buf), &err), -EINVAL);
        assert_int_equal(cg_systemd_parent_slice("-.slice", buf, sizeof(buf), &err), -EINVAL);
}

static CgGroupValues group(const char *path) {
        CgGroupValues g = {};

        (void) snprintf(g.path, sizeof(g.path), "%s", path);
        return g;
}

static void add(CgGroupValues *g, const char *name, const char *value) {
        g->files[g->n_files].name = name;
        (void) snprintf(g->files[g->n_files].value, sizeof(g->files[0].value), "%s", value);
        g->n_files++;
}

static void test_unit_props(void **state) {
        CgGroupValues g = group("kubepods.slice/kubepods-podX.slice");
        CgUnitProps p;
        CubError err = {};

        (void) state;
        add(&g, "cpu.weight", "39");
        add(&g, "cpu.max", "50000 100000");
        add(&g, "memory.max", "268435456");
        add(&g, "pids.max", "1024");
        assert_int_equal(cg_unit_props(&g, &p, &err), 0);
        assert_true(p.has_cpu_weight && p.has_cpu_quota && p.has_memory_max && p.has_tasks_max);
        assert_false(p.has_allowed_cpus || p.has_memory_min);
        assert_int_equal(p.cpu_weight, 39);
        assert_int_equal(p.cpu_quota_per_sec_usec, 500000); /* 500 ms per s: half a CPU */
        assert_int_equal(p.cpu_quota_period_usec, 100000);
        assert_int_equal(p.memory_max, 268435456);
        assert_int_equal(p.tasks_max, 1024);

        /* "max" is infinity; the minimum quota of 1 ms per 100 ms */
        g = group("kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podX.slice");
        add(&g, "cpu.weight", "1");
        add(&g, "cpu.max", "max 100000");
        add(&g, "memory.max", "max");
        add(&g, "pids.max", "max");
        assert_int_equal(cg_unit_props(&g, &p, &err), 0);
        assert_true(p.cpu_quota_per_sec_usec == CG_USEC_INFINITY);
        assert_int_equal(p.cpu_quota_period_usec, 100000);
        assert_true(p.memory_max == UINT64_MAX);
        assert_true(p.tasks_max == UINT64_MAX);
        g.n_files = 0;
        add(&g, "cpu.max", "1000 100000");
        add(&g, "cpuset.cpus", "0-2,9");
        assert_int_equal(cg_unit_props(&g, &p, &err), 0);
        assert_int_equal(p.cpu_quota_per_sec_usec, 10000);
        assert_true(p.has_allowed_cpus);
        assert_int_equal(p.n_allowed_cpus, 2);
        assert_int_equal(p.allowed_cpus[0], 0x07);
        assert_int_equal(p.allowed_cpus[1], 0x02);
        /* the QoS groups carry only some files */
        g = group("kubepods.slice");
        add(&g, "memory.max", "16642998272");
        add(&g, "memory.min", "5637144576"); /* MemoryQoS: libcontainer's MemoryMin */
        assert_int_equal(cg_unit_props(&g, &p, &err), 0);
        assert_false(p.has_cpu_weight || p.has_cpu_quota || p.has_tasks_max);
        assert_int_equal(p.memory_max, 16642998272);
        assert_true(p.has_memory_min);
        assert_int_equal(p.memory_min, 5637144576);
}

static void test_unit_props_bad(void **state) {
        CgGroupValues g = group("kubepods.slice/kubepods-podX.slice");
        CgUnitProps p;
        CubError err = {};

        (void) state;
        add(&g, "cpu.weight", "0");
        assert_int_equal(cg_unit_props(&g, &p, &err), -EINVAL);
        assert_string_equal(
                err.msg,
                "cgroup 'kubepods.slice/kubepods-podX.slice': 'cpu.weight' = '0': not a value systemd can set");
        g.n_files = 0;
        add(&g, "cpu.max", "333 1000"); /* 333000 us/s * 1000 / 1e6 is exact; 1/3 ms per 7 ms is not */
        assert_int_equal(cg_unit_props(&g, &p, &err), 0);
        g.n_files = 0;
        add(&g, "cpu.max", "1 7");
        assert_int_equal(cg_unit_props(&g, &p, &err), -EINVAL);
        g.n_files = 0;
        add(&g, "cpu.max", "50000");
        assert_int_equal(cg_unit_props(&g, &p, &err), -EINVAL);
        g.n_files = 0;
        add(&g, "memory.high", "1");
        assert_int_equal(cg_unit_props(&g, &p, &err), -EOPNOTSUPP);
        assert_string_equal(
                err.msg,
                "cgroup 'kubepods.slice/kubepods-podX.slice': 'memory.high': no systemd unit property carries it");
        g.n_files = 0;
        add(&g, "cpuset.cpus", "3-1");
        assert_int_equal(cg_unit_props(&g, &p, &err), -EINVAL);
}

/* the shape of containerd 1.6.20's CRI Status "config" (trimmed) */
#define CONFIG(sc)                                                                                                \
        "{\"containerd\":{\"snapshotter\":\"overlayfs\",\"defaultRuntimeName\":\"runc\",\"runtimes\":{\"runc\":{" \
        "\"runtimeType\":\"io.containerd.runc.v2\",\"options\":{\"BinaryName\":\"\"" sc "}}}},"                   \
        "\"systemdCgroup\":false}"

static void test_runtime(void **state) {
        char rt[64];
        bool sd = true;
        CubError err = {};

        (void) state;
        assert_int_equal(cg_runtime_systemd_cgroup(CONFIG(""), &sd, rt, sizeof(rt), &err), 0);
        assert_false(sd);
        assert_string_equal(rt, "runc");
        assert_int_equal(cg_runtime_systemd_cgroup(CONFIG(",\"SystemdCgroup\":true"), &sd, rt, sizeof(rt), &err), 0);
        assert_true(sd);

        assert_int_equal(cg_check_runtime(CG_DRIVER_SYSTEMD, CONFIG(",\"SystemdCgroup\":true"), &err), 0);
        assert_int_equal(cg_check_runtime(CG_DRIVER_CGROUPFS, CONFIG(",\"SystemdCgroup\":false"), &err), 0);
        assert_int_equal(cg_check_runtime(CG_DRIVER_CGROUPFS, CONFIG(""), &err), 0);
        assert_int_equal(cg_check_runtime(CG_DRIVER_SYSTEMD, CONFIG(",\"SystemdCgroup\":false"), &err), -EINVAL);
        assert_string_equal(err.msg,
                            "cgroup driver mismatch: cubelet cgroupDriver=systemd, containerd runc SystemdCgroup=false "
                            "(/etc/containerd/config.toml: [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes."
                            "runc.options] SystemdCgroup = true, or cgroupDriver: cgroupfs)");
        assert_int_equal(cg_check_runtime(CG_DRIVER_CGROUPFS, CONFIG(",\"SystemdCgroup\":true"), &err), -EINVAL);
        assert_string_equal(err.msg,
                            "cgroup driver mismatch: cubelet cgroupDriver=cgroupfs, containerd runc SystemdCgroup=true "
                            "(/etc/containerd/config.toml: [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes."
                            "runc.options] SystemdCgroup = false, or cgroupDriver: systemd)");

        /* another default runtime, another runtime altogether, no JSON */
        assert_int_equal(cg_check_runtime(CG_DRIVER_SYSTEMD,
                                          "{\"containerd\":{\"defaultRuntimeName\":\"crun\",\"runtimes\":{\"crun\":{"
                                          "\"options\":{\"SystemdCgroup\":true}},\"runc\":{}}}}",
                                          &err),
                         0);
        assert_int_equal(cg_check_runtime(CG_DRIVER_SYSTEMD, "{}", &err), -ENOENT);
        assert_string_equal(err.msg, "runtime config: no containerd.runtimes.runc");
        assert_int_equal(cg_check_runtime(CG_DRIVER_SYSTEMD, "{", &err), -EBADMSG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pod_paths),     cmocka_unit_test(test_kubepods_and_containers),
                cmocka_unit_test(test_cgroup_parent), cmocka_unit_test(test_unit_names),
                cmocka_unit_test(test_unit_props),    cmocka_unit_test(test_unit_props_bad),
                cmocka_unit_test(test_runtime),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
