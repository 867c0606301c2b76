/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent/cpumanager/topology.c: topology from fixture /sys trees (built in a
 * tmpdir), takeByTopologyNUMAPacked vectors and the reserved set
 * (shared/kubelet-semantics.md 5.2, 5.8).
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "agent/cpumanager/cpumanager.h"
#include "agent/util/fileio.h"

/* ---- fixture /sys trees ------------------------------------------------- */

typedef struct SysCpu {
        unsigned cpu;
        int core_id;
        int package;
} SysCpu;

static void write_file(const char *root, const char *rel, const char *text) {
        char path[4096], dir[4096];
        FILE *f;

        assert_true((size_t) snprintf(path, sizeof(path), "%s/%s", root, rel) < sizeof(path));
        memcpy(dir, path, sizeof(dir));
        *strrchr(dir, '/') = '\0';
        assert_int_equal(cub_mkdir_p(dir, 0755), 0);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

/* A /sys tree: cpu/online, cpuN/topology/{core_id,physical_package_id} and
 * node/nodeN/cpulist for each of nodes[] (none: no node directory). */
static char *make_sys(const char *online, const SysCpu *cpus, size_t n, const char *const *nodes, size_t n_nodes) {
        char tmpl[] = "/tmp/cpumgr-sys-XXXXXX", rel[256], val[32];
        char *root = mkdtemp(tmpl);

        assert_non_null(root);
        root = strdup(root);
        assert_non_null(root);
        write_file(root, "devices/system/cpu/online", online);
        for (size_t i = 0; i < n; i++) {
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/topology/core_id", cpus[i].cpu);
                snprintf(val, sizeof(val), "%d\n", cpus[i].core_id);
                write_file(root, rel, val);
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/topology/physical_package_id", cpus[i].cpu);
                snprintf(val, sizeof(val), "%d\n", cpus[i].package);
                write_file(root, rel, val);
        }
        for (size_t i = 0; i < n_nodes; i++) {
                snprintf(rel, sizeof(rel), "devices/system/node/node%zu/cpulist", i);
                write_file(root, rel, nodes[i]);
        }
        return root;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

static void rm_sys(char *root) {
        assert_int_equal(nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(root);
}

/* (a) 1 socket × 4 cores × 2 threads, siblings (0,4),(1,5),(2,6),(3,7) */
static const SysCpu sys_a[] = { { 0, 0, 0 }, { 1, 1, 0 }, { 2, 2, 0 }, { 3, 3, 0 },
                                { 4, 0, 0 }, { 5, 1, 0 }, { 6, 2, 0 }, { 7, 3, 0 } };
static const char *const nodes_a[] = { "0-7\n" };
/* (b) 2 sockets × 2 cores × 2 threads, one NUMA node per socket */
static const SysCpu sys_b[] = { { 0, 0, 0 }, { 1, 1, 0 }, { 2, 0, 1 }, { 3, 1, 1 },
                                { 4, 0, 0 }, { 5, 1, 0 }, { 6, 0, 1 }, { 7, 1, 1 } };
static const char *const nodes_b[] = { "0-1,4-5\n", "2-3,6-7\n" };
/* (c) 2 NUMA nodes in 1 socket, 4 cores × 2 threads */
static const char *const nodes_c[] = { "0-1,4-5\n", "2-3,6-7\n" };
/* (d) the VM: 4 CPUs as 2 cores × 2 threads, siblings (0,1),(2,3); no node dir */
static const SysCpu sys_d[] = { { 0, 0, 0 }, { 1, 0, 0 }, { 2, 1, 0 }, { 3, 1, 0 } };

static CpumgrTopology topo_of(const char *online, const SysCpu *cpus, size_t n, const char *const *nodes,
                              size_t n_nodes) {
        char *root = make_sys(online, cpus, n, nodes, n_nodes);
        CpumgrTopology t;
        CubError err = {};

        if (cpumgr_topology_from_sys(root, &t, &err) < 0)
                fail_msg("topology_from_sys: %s", err.msg);
        rm_sys(root);
        return t;
}

static CpumgrTopology topo_a(void) {
        return topo_of("0-7\n", sys_a, 8, nodes_a, 1);
}
static CpumgrTopology topo_b(void) {
        return topo_of("0-7\n", sys_b, 8, nodes_b, 2);
}
static CpumgrTopology topo_c(void) {
        return topo_of("0-7\n", sys_a, 8, nodes_c, 2);
}
static CpumgrTopology topo_d(void) {
        return topo_of("0-3\n", sys_d, 4, NULL, 0);
}

static void assert_cpu(const CpumgrTopology *t, size_t i, unsigned cpu, unsigned core, unsigned socket, unsigned numa) {
        assert_true(i < t->n);
        assert_int_equal(t->cpus[i].cpu, cpu);
        assert_int_equal(t->cpus[i].core, core);
        assert_int_equal(t->cpus[i].socket, socket);
        assert_int_equal(t->cpus[i].numa, numa);
}

/* ---- topology ----------------------------------------------------------- */

static void test_sys_a(void **state) {
        CpumgrTopology t = topo_a();
        CpumgrSet all;
        char buf[CPUMGR_SET_STR_MAX];

        (void) state;
        assert_int_equal(t.n, 8);
        /* core ids are kubelet's: the lowest CPU of the siblings */
        for (unsigned i = 0; i < 8; i++)
                assert_cpu(&t, i, i, i % 4, 0, 0);
        cpumgr_topology_all(&t, &all);
        assert_string_equal(cpumgr_set_format(&all, buf, sizeof(buf)), "0-7");
        cpumgr_topology_done(&t);
        assert_null(t.cpus);
}

static void test_sys_b(void **state) {
        CpumgrTopology t = topo_b();

        (void) state;
        assert_int_equal(t.n, 8);
        assert_cpu(&t, 0, 0, 0, 0, 0);
        assert_cpu(&t, 1, 1, 1, 0, 0);
        /* core_id 0 of socket 1 is not core 0 of socket 0 */
        assert_cpu(&t, 2, 2, 2, 1, 1);
        assert_cpu(&t, 3, 3, 3, 1, 1);
        assert_cpu(&t, 4, 4, 0, 0, 0);
        assert_cpu(&t, 5, 5, 1, 0, 0);
        assert_cpu(&t, 6, 6, 2, 1, 1);
        assert_cpu(&t, 7, 7, 3, 1, 1);
        cpumgr_topology_done(&t);
}

static void test_sys_c(void **state) {
        CpumgrTopology t = topo_c();

        (void) state;
        for (unsigned i = 0; i < 8; i++)
                assert_cpu(&t, i, i, i % 4, 0, (i % 4) < 2 ? 0 : 1);
        cpumgr_topology_done(&t);
}

static void test_sys_d_vm(void **state) {
        CpumgrTopology t = topo_d();

        (void) state;
        assert_int_equal(t.n, 4);
        assert_cpu(&t, 0, 0, 0, 0, 0);
        assert_cpu(&t, 1, 1, 0, 0, 0);
        assert_cpu(&t, 2, 2, 2, 0, 0);
        assert_cpu(&t, 3, 3, 2, 0, 0);
        cpumgr_topology_done(&t);
}

static void test_sys_offline_and_missing(void **state) {
        /* cpu 2 offline; cpu 3 without topology files: its own core in socket 0 */
        static const SysCpu cpus[] = { { 0, 0, 0 }, { 1, 0, 0 }, { 2, 1, 0 } };
        char *root = make_sys("0-1,3\n", cpus, 3, NULL, 0);
        CpumgrTopology t;
        CubError err = {};
        char bad[4096];

        (void) state;
        assert_int_equal(cpumgr_topology_from_sys(root, &t, &err), 0);
        assert_int_equal(t.n, 3);
        assert_cpu(&t, 0, 0, 0, 0, 0);
        assert_cpu(&t, 1, 1, 0, 0, 0);
        assert_cpu(&t, 2, 3, 3, 0, 0);
        cpumgr_topology_done(&t);

        snprintf(bad, sizeof(bad), "%s/nonexistent", root);
        assert_int_equal(cpumgr_topology_from_sys(bad, &t, &err), -ENOENT);
        write_file(root, "devices/system/cpu/cpu0/topology/core_id", "zero\n");
        assert_int_equal(cpumgr_topology_from_sys(root, &t, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "core_id': invalid id 'zero'"));
        rm_sys(root);
}

static void test_from_cpus(void **state) {
        static const CpumgrCpu cpus[] = { { 3, 2, 0, 0 }, { 1, 0, 0, 0 }, { 2, 2, 0, 0 }, { 0, 0, 0, 0 } };
        static const CpumgrCpu dup[] = { { 0, 0, 0, 0 }, { 3, 2, 0, 0 }, { 3, 2, 0, 0 } };
        static const CpumgrCpu big[] = { { 1024, 0, 0, 0 } };
        CpumgrTopology t, vm = topo_d();
        CubError err = {};

        (void) state;
        assert_int_equal(cpumgr_topology_from_cpus(cpus, 4, &t, &err), 0);
        assert_int_equal(t.n, 4);
        /* sorted by cpu, and the same as the VM's /sys */
        assert_memory_equal(t.cpus, vm.cpus, 4 * sizeof(CpumgrCpu));
        cpumgr_topology_done(&t);
        cpumgr_topology_done(&vm);
        assert_int_equal(cpumgr_topology_from_cpus(dup, 3, &t, &err), -EINVAL);
        assert_string_equal(err.msg, "topology: cpu 3 listed twice");
        assert_int_equal(cpumgr_topology_from_cpus(big, 1, &t, &err), -ERANGE);
}

/* ---- takeByTopologyNUMAPacked ------------------------------------------- */

static void assert_take(const CpumgrTopology *t, const char *avail, unsigned n, const char *want) {
        CpumgrSet a, got;
        CubError err = {};
        char buf[CPUMGR_SET_STR_MAX];

        assert_int_equal(cpumgr_set_parse(avail, &a, NULL), 0);
        if (cpumgr_take_by_topology(t, &a, n, &got, &err) < 0)
                fail_msg("take %u from '%s': %s", n, avail, err.msg);
        cpumgr_set_format(&got, buf, sizeof(buf));
        if (strcmp(buf, want) != 0)
                fail_msg("take %u from '%s': got '%s', want '%s'", n, avail, buf, want);
}

static void assert_take_fails(const CpumgrTopology *t, const char *avail, unsigned n, const char *msg) {
        CpumgrSet a, got = {};
        CubError err = {};

        assert_int_equal(cpumgr_set_parse(avail, &a, NULL), 0);
        assert_int_equal(cpumgr_take_by_topology(t, &a, n, &got, &err), -ENOSPC);
        assert_string_equal(err.msg, msg);
        assert_int_equal(err.code, ENOSPC);
}

static void test_take_a_whole_cores_first(void **state) {
        CpumgrTopology t = topo_a();

        (void) state;
        assert_take(&t, "0-7", 0, "");
        assert_take(&t, "0-7", 1, "0");
        assert_take(&t, "0-7", 2, "0,4");
        assert_take(&t, "0-7", 3, "0-1,4");
        assert_take(&t, "0-7", 4, "0-1,4-5");
        assert_take(&t, "0-7", 5, "0-2,4-5");
        assert_take(&t, "0-7", 6, "0-2,4-6");
        /* the whole NUMA node (= socket) */
        assert_take(&t, "0-7", 8, "0-7");
        cpumgr_topology_done(&t);
}

static void test_take_a_packing(void **state) {
        CpumgrTopology t = topo_a();

        (void) state;
        /* cpu 0 reserved: its sibling 4 is the most used core's free thread */
        assert_take(&t, "1-7", 1, "4");
        assert_take(&t, "1-7", 2, "1,5");
        assert_take(&t, "1-7", 3, "1,4-5");
        assert_take(&t, "1-7", 7, "1-7");
        /* cpu 1 busy: fill core 1 (cpu 5) before breaking a whole core */
        assert_take(&t, "0,2-7", 1, "5");
        assert_take(&t, "0,2-7", 3, "0,4-5");
        /* two half cores: lower core id first */
        assert_take(&t, "2-3,4-5", 1, "4");
        assert_take(&t, "2-3,4-5", 2, "4-5");
        cpumgr_topology_done(&t);
}

static void test_take_b_numa_first(void **state) {
        CpumgrTopology t = topo_b();

        (void) state;
        assert_take(&t, "0-7", 1, "0");
        assert_take(&t, "0-7", 2, "0,4");
        /* a whole NUMA node / socket */
        assert_take(&t, "0-7", 4, "0-1,4-5");
        assert_take(&t, "0-7", 6, "0-2,4-6");
        assert_take(&t, "0-7", 8, "0-7");
        /* packing: the node with fewer free CPUs first */
        assert_take(&t, "1-7", 1, "4");
        assert_take(&t, "1-7", 2, "1,5");
        assert_take(&t, "1-7", 3, "1,4-5");
        /* but a request of a whole node takes the free node */
        assert_take(&t, "2-7", 4, "2-3,6-7");
        assert_take(&t, "2-7", 5, "2-4,6-7");
        cpumgr_topology_done(&t);
}

static void test_take_c_sockets_first(void **state) {
        CpumgrTopology t = topo_c();

        (void) state;
        /* one socket of 8 is not needed whole: NUMA nodes are the second level */
        assert_take(&t, "0-7", 4, "0-1,4-5");
        assert_take(&t, "1-7", 4, "2-3,6-7");
        assert_take(&t, "0-7", 6, "0-2,4-6");
        assert_take(&t, "1-7", 2, "1,5");
        assert_take(&t, "1-7", 1, "4");
        assert_take(&t, "0-7", 8, "0-7");
        /* node 1 more used than node 0: packing starts there */
        assert_take(&t, "0-2,4-6", 1, "2");
        assert_take(&t, "0-2,4-6", 2, "2,6");
        cpumgr_topology_done(&t);
}

static void test_take_d_vm(void **state) {
        CpumgrTopology t = topo_d();

        (void) state;
        assert_take(&t, "0-3", 1, "0");
        assert_take(&t, "0-3", 2, "0-1");
        assert_take(&t, "0-3", 3, "0-2");
        assert_take(&t, "0-3", 4, "0-3");
        /* cpu 0 reserved */
        assert_take(&t, "1-3", 1, "1");
        assert_take(&t, "1-3", 2, "2-3");
        assert_take(&t, "1-3", 3, "1-3");
        assert_take(&t, "1,3", 2, "1,3");
        assert_take_fails(&t, "1-3", 4, "not enough cpus available to satisfy request: requested=4, available=3");
        assert_take_fails(&t, "0-3", 5, "not enough cpus available to satisfy request: requested=5, available=4");
        cpumgr_topology_done(&t);
}

static void test_take_shortfall(void **state) {
        CpumgrTopology t = topo_a();

        (void) state;
        assert_take_fails(&t, "0-7", 9, "not enough cpus available to satisfy request: requested=9, available=8");
        assert_take_fails(&t, "", 1, "not enough cpus available to satisfy request: requested=1, available=0");
        /* CPUs not on the node are not available, but kubelet's text counts the set given */
        assert_take_fails(&t, "6-9", 3, "not enough cpus available to satisfy request: requested=3, available=4");
        assert_take(&t, "6-9", 2, "6-7");
        cpumgr_topology_done(&t);
}

/* ---- reserved CPUs ------------------------------------------------------ */

static void assert_reserved(const CpumgrTopology *t, const char *list, int64_t milli, const char *want) {
        CpumgrSet r;
        CubError err = {};
        char buf[CPUMGR_SET_STR_MAX];

        if (cpumgr_reserved(t, list, milli, &r, &err) < 0)
                fail_msg("reserved(%s, %" PRId64 "): %s", list ? list : "NULL", milli, err.msg);
        assert_string_equal(cpumgr_set_format(&r, buf, sizeof(buf)), want);
}

static void test_reserved_a(void **state) {
        CpumgrTopology t = topo_a();
        CpumgrSet r;
        CubError err = {};

        (void) state;
        /* ceil(500m) = 1 CPU: the lowest thread of the lowest core */
        assert_reserved(&t, NULL, 500, "0");
        assert_reserved(&t, NULL, 1000, "0");
        assert_reserved(&t, NULL, 1001, "0,4");
        /* 2 CPUs: the whole first core (kubelet's comment: HT (0,4), n=2 → {0,4}) */
        assert_reserved(&t, NULL, 2000, "0,4");
        assert_reserved(&t, NULL, 3000, "0-1,4");
        assert_reserved(&t, NULL, 0, "");
        /* reservedSystemCPUs wins over the quantity */
        assert_reserved(&t, "1,3", 2000, "1,3");
        assert_reserved(&t, "", 500, "0");
        assert_int_equal(cpumgr_reserved(&t, "6-9", 0, &r, &err), -EINVAL);
        assert_string_equal(err.msg, "reservedSystemCPUs '6-9': cpus '8-9' not on this node");
        assert_int_equal(cpumgr_reserved(&t, "x", 0, &r, &err), -EINVAL);
        assert_string_equal(err.msg, "reservedSystemCPUs: invalid cpu list 'x'");
        assert_int_equal(cpumgr_reserved(&t, NULL, 9000, &r, &err), -ENOSPC);
        assert_string_equal(err.msg, "reserving 9000m cpu: not enough cpus available to satisfy request: "
                                     "requested=9, available=8");
        cpumgr_topology_done(&t);
}

static void test_reserved_d_vm(void **state) {
        CpumgrTopology t = topo_d();

        (void) state;
        assert_reserved(&t, NULL, 100, "0");
        assert_reserved(&t, NULL, 500, "0");
        assert_reserved(&t, NULL, 1000, "0");
        assert_reserved(&t, NULL, 1500, "0-1");
        assert_reserved(&t, NULL, 2000, "0-1");
        assert_reserved(&t, NULL, 3000, "0-2");
        assert_reserved(&t, "3", 0, "3");
        cpumgr_topology_done(&t);
}

static void test_reserved_b_c(void **state) {
        CpumgrTopology b = topo_b(), c = topo_c();

        (void) state;
        assert_reserved(&b, NULL, 500, "0");
        assert_reserved(&b, NULL, 2000, "0,4");
        assert_reserved(&b, NULL, 4000, "0-1,4-5");
        assert_reserved(&c, NULL, 2000, "0,4");
        assert_reserved(&c, NULL, 4000, "0-1,4-5");
        cpumgr_topology_done(&b);
        cpumgr_topology_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sys_a),
                cmocka_unit_test(test_sys_b),
                cmocka_unit_test(test_sys_c),
                cmocka_unit_test(test_sys_d_vm),
                cmocka_unit_test(test_sys_offline_and_missing),
                cmocka_unit_test(test_from_cpus),
                cmocka_unit_test(test_take_a_whole_cores_first),
                cmocka_unit_test(test_take_a_packing),
                cmocka_unit_test(test_take_b_numa_first),
                cmocka_unit_test(test_take_c_sockets_first),
                cmocka_unit_test(test_take_d_vm),
                cmocka_unit_test(test_take_shortfall),
                cmocka_unit_test(test_reserved_a),
                cmocka_unit_test(test_reserved_d_vm),
                cmocka_unit_test(test_reserved_b_c),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
