/* SPDX-License-Identifier: Apache-2.0 */
/* agent/cgroup/values.c cg_swap_for_burstable and cg_container_swap, the
 * container's memory.swap.max as kubelet 1.34 decides it
 * (kuberuntime_container_linux.go GetContainerSwapBehavior,
 * configureContainerSwapResources, calcSwapForBurstablePods), and
 * agent/node/machine.c agent_swap_controller over a fixture tree. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/cgroup/cgroup.h"
#include "agent/node/machine.h"
#include "agent/pod/pod.h"

#define GI 1073741824LL

#define HDR "apiVersion: v1\nkind: Pod\nmetadata:\n  name: v\n  uid: 7e3c5c2e-1b6f-4b7a-9a34-2f2d3b7a8c10\nspec:\n"
#define C(name, extra) "  - name: " name "\n    image: x:1\n" extra
#define RES(req, lim) "    resources:\n      requests: {" req "}\n      limits: {" lim "}\n"
#define REQ(req) "    resources:\n      requests: {" req "}\n"
#define LIM(lim) "    resources:\n      limits: {" lim "}\n"

static CgOptions opts(bool limited, bool controller) {
        CgOptions o;

        cg_options_init(&o);
        o.memory_capacity = 16 * GI;
        o.swap_capacity = 4 * GI;
        o.swap_limited = limited;
        o.swap_controller = controller;
        return o;
}

/* memory.swap.max of container `name` of the pod spec (pod_decode: not a
 * static pod) under o. */
static void swap_of(const char *spec, const char *name, const CgOptions *o, char *buf, size_t size) {
        char text[4096];
        Pod *pod = NULL;
        CubError err = {};
        CgContainerResources r;
        bool found = false;

        assert_true((size_t) snprintf(text, sizeof(text), "%s%s", HDR, spec) < sizeof(text));
        if (pod_decode(text, strlen(text), "v.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode failed: %s", err.msg);
        for (size_t i = 0; i < pod->n_containers; i++)
                if (strcmp(pod->containers[i].name, name) == 0) {
                        cg_container_resources(pod, pod_qos_class(pod), &pod->containers[i], o, &r);
                        found = true;
                }
        pod_free(pod);
        assert_true(found);
        (void) snprintf(buf, size, "%s", r.memory_swap_max);
        if (o->cgroup_v1) /* v1: memsw = memory, whatever the behavior; never a v2 key */
                (void) snprintf(buf, size, "v1 %" PRId64, r.memory_swap_limit_in_bytes);
        else
                assert_int_equal(r.memory_swap_limit_in_bytes, 0);
}

#define ASSERT_SWAP(spec, name, o, want)                      \
        do {                                                  \
                char b_[32];                                  \
                swap_of((spec), (name), (o), b_, sizeof(b_)); \
                assert_string_equal(b_, (want));              \
        } while (0)

static void test_formula(void **state) {
        int64_t v = -1;

        (void) state;
        /* 4Gi of 16Gi x 4Gi = 1Gi */
        assert_int_equal(cg_swap_for_burstable(4 * GI, 16 * GI, 4 * GI, &v), 0);
        assert_int_equal(v, GI);
        /* float64 math truncated: 1/3 x 1000 = 333.33 -> 333 */
        assert_int_equal(cg_swap_for_burstable(1, 3, 1000, &v), 0);
        assert_int_equal(v, 333);
        /* 2/3 x 1000 = 666.666... -> 666 (truncation, not rounding) */
        assert_int_equal(cg_swap_for_burstable(2, 3, 1000, &v), 0);
        assert_int_equal(v, 666);
        /* float64 products: 100Mi / 16Gi x (4Gi - 1) = 26214399.99... -> 26214399 */
        assert_int_equal(cg_swap_for_burstable(100 * 1048576LL, 16 * GI, 4 * GI - 1, &v), 0);
        assert_int_equal(v, 26214399);
        assert_int_equal(cg_swap_for_burstable(0, 16 * GI, 4 * GI, &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(cg_swap_for_burstable(16 * GI, 16 * GI, 4 * GI, &v), 0);
        assert_int_equal(v, 4 * GI);
        /* kubelet's errors: no node memory, a request above it */
        v = 7;
        assert_int_equal(cg_swap_for_burstable(GI, 0, 4 * GI, &v), -EINVAL);
        assert_int_equal(cg_swap_for_burstable(17 * GI, 16 * GI, 4 * GI, &v), -EINVAL);
        assert_int_equal(v, 7);
}

static void test_no_controller(void **state) {
        CgOptions o = opts(true, false);

        (void) state;
        /* no swap controller: nothing in the unified map, whatever the behavior */
        ASSERT_SWAP("  containers:\n" C("a", RES("memory: 4Gi", "memory: 8Gi")), "a", &o, "");
        o = opts(false, false);
        ASSERT_SWAP("  containers:\n" C("a", RES("memory: 4Gi", "memory: 8Gi")), "a", &o, "");
}

static void test_noswap(void **state) {
        CgOptions o = opts(false, true);

        (void) state;
        ASSERT_SWAP("  containers:\n" C("a", RES("memory: 4Gi", "memory: 8Gi")), "a", &o, "0");
        ASSERT_SWAP("  containers:\n" C("a", ""), "a", &o, "0");
        ASSERT_SWAP("  containers:\n" C("a", LIM("memory: 1Gi, cpu: 1")), "a", &o, "0");
}

/* cgroup v1 (the native lane's hosts): ConfigureNoSwap sets MemorySwapLimitInBytes to the memory
 * limit (0, unset, without one) when memory.memsw.limit_in_bytes exists; LimitedSwap is NoSwap there */
static void test_cgroup_v1(void **state) {
        CgOptions o = opts(true, true);

        (void) state;
        o.cgroup_v1 = true;
        ASSERT_SWAP("  containers:\n" C("a", RES("memory: 4Gi", "memory: 8Gi")), "a", &o, "v1 8589934592");
        ASSERT_SWAP("  containers:\n" C("a", REQ("memory: 4Gi")), "a", &o, "v1 0");
        ASSERT_SWAP("  containers:\n" C("a", ""), "a", &o, "v1 0");
        o.swap_limited = false;
        ASSERT_SWAP("  containers:\n" C("a", LIM("memory: 32Mi")), "a", &o, "v1 33554432");
        o.swap_controller = false; /* no memsw files (swapaccount=0): nothing */
        ASSERT_SWAP("  containers:\n" C("a", LIM("memory: 32Mi")), "a", &o, "v1 0");
}

static void test_limited(void **state) {
        CgOptions o = opts(true, true);

        (void) state;
        /* Burstable with a request: 4Gi / 16Gi x 4Gi */
        ASSERT_SWAP("  containers:\n" C("a", RES("memory: 4Gi", "memory: 8Gi")), "a", &o, "1073741824");
        /* a request without a limit */
        ASSERT_SWAP("  containers:\n" C("a", REQ("memory: 1Gi")), "a", &o, "268435456");
        /* request == limit in a Burstable pod (the cpu makes it Burstable) */
        ASSERT_SWAP("  containers:\n" C("a", RES("memory: 1Gi, cpu: 100m", "memory: 1Gi")), "a", &o, "0");
        /* no memory request or limit of its own, in a Burstable pod */
        ASSERT_SWAP("  containers:\n" C("a", REQ("memory: 1Gi")) C("b", REQ("cpu: 100m")), "b", &o, "0");
        ASSERT_SWAP("  containers:\n" C("a", REQ("memory: 1Gi")) C("b", REQ("cpu: 100m")), "a", &o, "268435456");
        /* Guaranteed, BestEffort */
        ASSERT_SWAP("  containers:\n" C("a", LIM("memory: 1Gi, cpu: 1")), "a", &o, "0");
        ASSERT_SWAP("  containers:\n" C("a", ""), "a", &o, "0");
        /* critical priority */
        ASSERT_SWAP("  priority: 2000000000\n  containers:\n" C("a", REQ("memory: 1Gi")), "a", &o, "0");
        ASSERT_SWAP("  priority: 1999999999\n  containers:\n" C("a", REQ("memory: 1Gi")), "a", &o, "268435456");
        /* a request larger than the node: kubelet's error, no swap */
        ASSERT_SWAP("  containers:\n" C("a", REQ("memory: 17Gi")), "a", &o, "0");
        /* no swap on the node */
        o.swap_capacity = 0;
        ASSERT_SWAP("  containers:\n" C("a", REQ("memory: 1Gi")), "a", &o, "0");
}

static void write_file(const char *path, const char *s) {
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        fputs(s, f);
        fclose(f);
}

static void test_controller_check(void **state) {
        char dir[] = "/tmp/test-swap-XXXXXX", self[64], mount[64], p[256];

        (void) state;
        assert_non_null(mkdtemp(dir));
        (void) snprintf(self, sizeof(self), "%s/cgroup", dir);
        (void) snprintf(mount, sizeof(mount), "%s/fs", dir);
        /* no /proc/self/cgroup: not available */
        assert_false(agent_swap_controller(self, mount, false));
        write_file(self, "0::/system.slice/cubelet.service\n");
        assert_int_equal(mkdir(mount, 0755), 0);
        (void) snprintf(p, sizeof(p), "%s/system.slice", mount);
        assert_int_equal(mkdir(p, 0755), 0);
        (void) snprintf(p, sizeof(p), "%s/system.slice/cubelet.service", mount);
        assert_int_equal(mkdir(p, 0755), 0);
        /* the group without memory.swap.max (no swap accounting) */
        assert_false(agent_swap_controller(self, mount, false));
        (void) snprintf(p, sizeof(p), "%s/system.slice/cubelet.service/memory.swap.max", mount);
        write_file(p, "max\n");
        assert_true(agent_swap_controller(self, mount, false));
        /* a cgroup v1 (hybrid) line first, then the unified one */
        write_file(self, "4:memory:/x\n0::/system.slice/cubelet.service\n");
        assert_true(agent_swap_controller(self, mount, false));
        /* only v1 lines: no cgroup v2 group */
        write_file(self, "4:memory:/system.slice/cubelet.service\n");
        assert_false(agent_swap_controller(self, mount, false));
        /* cgroup v1: the memory hierarchy's memory.memsw.limit_in_bytes, whatever the group */
        assert_false(agent_swap_controller(self, mount, true));
        (void) snprintf(p, sizeof(p), "%s/memory", mount);
        assert_int_equal(mkdir(p, 0755), 0);
        (void) snprintf(p, sizeof(p), "%s/memory/memory.memsw.limit_in_bytes", mount);
        write_file(p, "9223372036854771712\n");
        assert_true(agent_swap_controller(self, mount, true));
        (void) unlink(p);
        (void) snprintf(p, sizeof(p), "%s/memory", mount);
        (void) rmdir(p);
        (void) snprintf(p, sizeof(p), "%s/system.slice/cubelet.service/memory.swap.max", mount);
        (void) unlink(p);
        (void) snprintf(p, sizeof(p), "%s/system.slice/cubelet.service", mount);
        (void) rmdir(p);
        (void) snprintf(p, sizeof(p), "%s/system.slice", mount);
        (void) rmdir(p);
        (void) rmdir(mount);
        (void) unlink(self);
        (void) rmdir(dir);
}

/* memorySwap.swapBehavior as the KubeletConfiguration gives it */
static void test_config(void **state) {
        static const struct {
                const char *text;
                PodSwapBehavior want;
        } ok[] = {
                { "memorySwap: {swapBehavior: LimitedSwap}\n", POD_SWAP_LIMITED },
                { "memorySwap: {swapBehavior: NoSwap}\n", POD_SWAP_NO_SWAP },
                { "memorySwap: {swapBehavior: \"\"}\n", POD_SWAP_NO_SWAP },
                { "memorySwap: {}\n", POD_SWAP_NO_SWAP },
                { "maxPods: 10\n", POD_SWAP_NO_SWAP },
        };
        static const char bad[] = "kind: KubeletConfiguration\nmemorySwap:\n  swapBehavior: UnlimitedSwap\n";
        PodKubeletConfig c;
        CubError err = {};

        (void) state;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                assert_int_equal(pod_kubelet_config_decode(ok[i].text, strlen(ok[i].text), "k.yaml", &c, &err), 0);
                assert_int_equal(c.swap_behavior, ok[i].want);
                pod_kubelet_config_done(&c);
        }
        assert_int_equal(pod_kubelet_config_decode(bad, strlen(bad), "k.yaml", &c, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "memorySwap.swapBehavior"));
        assert_non_null(strstr(err.msg, "UnlimitedSwap"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_formula),   cmocka_unit_test(test_no_controller),
                cmocka_unit_test(test_noswap),    cmocka_unit_test(test_limited),
                cmocka_unit_test(test_cgroup_v1), cmocka_unit_test(test_controller_check),
                cmocka_unit_test(test_config),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
