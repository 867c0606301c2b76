/* SPDX-License-Identifier: Apache-2.0 */
/* eviction/rank.c: exact eviction orders under cubelet's policy (QoS,
 * priority, usage - request, key) and kubelet's rank functions
 * (section 6.4), and the exemption of critical and protected pods. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "eviction/eviction.h"

#define MI (UINT64_C(1024) * 1024)
#define GI (1024 * MI)

/* A pod with stats. */
#define POD(k, q, prio, ...) \
        { .key = (k), .qos = EVICT_QOS_##q, .priority = (prio), .stats = true, __VA_ARGS__ }
/* A pod without stats. */
#define NOSTATS(k, q, prio, ...) \
        { .key = (k), .qos = EVICT_QOS_##q, .priority = (prio), __VA_ARGS__ }

#define MEM(req, use) .memory_request = (req), .memory_usage = (use)
#define EPH(req, use) .ephemeral_request = (req), .ephemeral_usage = (use)

#define MEMORY EVICT_SIGNAL_MEMORY_AVAILABLE
#define CUBELET EVICT_POLICY_CUBELET
#define KUBELET EVICT_POLICY_KUBELET

typedef struct Vec {
        const char *name;
        EvictSignal signal;
        EvictPolicy policy;
        EvictPod pods[8];
        const char *order;  /* keys joined by ',' */
        const char *exempt; /* likewise */
} Vec;

/* Six pods used under several signals and policies. */
#define MIXED                                                                                           \
        {                                                                                               \
                POD("default/be-small", BESTEFFORT, 0, MEM(0, 50 * MI), EPH(0, 10 * MI)),               \
                        POD("default/be-big", BESTEFFORT, 0, MEM(0, 500 * MI), EPH(0, 1 * MI)),         \
                        POD("default/bu-over", BURSTABLE, 0, MEM(100 * MI, 400 * MI), EPH(GI, 2 * GI)), \
                        POD("default/bu-under", BURSTABLE, 0, MEM(GI, 200 * MI), EPH(0, 500 * MI)),     \
                        POD("default/gu", GUARANTEED, 0, MEM(2 * GI, 2 * GI - 200 * MI)),               \
                        POD("kube-system/hi", BURSTABLE, 1000, MEM(0, 2 * GI), EPH(0, 3 * GI)),         \
        }

static const Vec vectors[] = {
        /* ---- memory, cubelet policy ---- */
        { "cubelet: QoS class first, whatever the usage",
          MEMORY,
          CUBELET,
          { POD("ns/gu", GUARANTEED, 0, MEM(GI, GI)), POD("ns/bu", BURSTABLE, 0, MEM(0, 10 * MI)),
            POD("ns/be", BESTEFFORT, 0, MEM(0, MI)) },
          "ns/be,ns/bu,ns/gu",
          "" },
        { "cubelet: QoS before priority",
          MEMORY,
          CUBELET,
          { POD("ns/bu-lo", BURSTABLE, 0, MEM(0, GI)), POD("ns/be-hi", BESTEFFORT, 1000, MEM(0, MI)),
            POD("ns/bu-hi", BURSTABLE, 100, MEM(0, 2 * GI)) },
          "ns/be-hi,ns/bu-lo,ns/bu-hi",
          "" },
        { "cubelet: lower priority first within a class",
          MEMORY,
          CUBELET,
          { POD("ns/a", BURSTABLE, 100, MEM(0, GI)), POD("ns/b", BURSTABLE, -10, MEM(0, MI)),
            POD("ns/c", BURSTABLE, 0, MEM(0, MI)) },
          "ns/b,ns/c,ns/a",
          "" },
        { "cubelet: larger usage over request first",
          MEMORY,
          CUBELET,
          { POD("ns/a", BURSTABLE, 0, MEM(GI, 100 * MI)), POD("ns/b", BURSTABLE, 0, MEM(0, 150 * MI)),
            POD("ns/c", BURSTABLE, 0, MEM(100 * MI, 300 * MI)) },
          "ns/c,ns/b,ns/a",
          "" },
        { "cubelet: under request, the smaller margin first",
          MEMORY,
          CUBELET,
          { POD("ns/far", GUARANTEED, 0, MEM(GI, 524 * MI)), POD("ns/near", GUARANTEED, 0, MEM(GI, 924 * MI)) },
          "ns/near,ns/far",
          "" },
        { "cubelet: complete ties by key",
          MEMORY,
          CUBELET,
          { POD("ns/c", BESTEFFORT, 0, MEM(0, MI)), POD("ns/a", BESTEFFORT, 0, MEM(0, MI)),
            POD("ns/b", BESTEFFORT, 0, MEM(0, MI)) },
          "ns/a,ns/b,ns/c",
          "" },
        { "cubelet: key order compares namespace first",
          MEMORY,
          CUBELET,
          { POD("b/x", BESTEFFORT, 0, MEM(0, MI)), POD("a/z", BESTEFFORT, 0, MEM(0, MI)) },
          "a/z,b/x",
          "" },
        { "cubelet: pods without stats first within a class and priority",
          MEMORY,
          CUBELET,
          { POD("ns/big", BESTEFFORT, 0, MEM(0, 4 * GI)), NOSTATS("ns/unknown", BESTEFFORT, 0),
            NOSTATS("ns/unknown-bu", BURSTABLE, 0) },
          "ns/unknown,ns/big,ns/unknown-bu",
          "" },
        { "cubelet: critical priority is exempt",
          MEMORY,
          CUBELET,
          { POD("kube-system/dns", BESTEFFORT, 2000000000, MEM(0, GI)), POD("ns/a", GUARANTEED, 0, MEM(GI, GI)) },
          "ns/a",
          "kube-system/dns" },
        { "cubelet: node-critical priority is exempt",
          MEMORY,
          CUBELET,
          { POD("kube-system/proxy", BURSTABLE, 2000001000, MEM(0, GI)), POD("ns/a", BESTEFFORT, 0, MEM(0, 0)) },
          "ns/a",
          "kube-system/proxy" },
        { "cubelet: priority 1999999999 is not critical",
          MEMORY,
          CUBELET,
          { POD("ns/almost", BESTEFFORT, 1999999999, MEM(0, GI)), POD("ns/a", GUARANTEED, 0, MEM(GI, GI)) },
          "ns/almost,ns/a",
          "" },
        { "cubelet: the critical flag exempts a low-priority pod",
          MEMORY,
          CUBELET,
          { POD("ns/flagged", BESTEFFORT, 0, MEM(0, GI), .critical = true), POD("ns/a", BESTEFFORT, 0, MEM(0, 0)) },
          "ns/a",
          "ns/flagged" },
        { "cubelet: protected pods are exempt",
          MEMORY,
          CUBELET,
          { POD("ns/db", BESTEFFORT, 0, MEM(0, 8 * GI), .protected_ = true), POD("ns/web", GUARANTEED, 0, MEM(GI, GI)),
            POD("ns/job", BURSTABLE, 0, MEM(0, MI)) },
          "ns/job,ns/web",
          "ns/db" },
        { "cubelet: exempt pods are listed in ranking order",
          MEMORY,
          CUBELET,
          { POD("ns/p-gu", GUARANTEED, 0, MEM(GI, GI), .protected_ = true),
            POD("ns/crit", BURSTABLE, 2000000000, MEM(0, GI)), POD("ns/p-be", BESTEFFORT, 0, .protected_ = true) },
          "",
          "ns/p-be,ns/crit,ns/p-gu" },
        { "cubelet: no pods", MEMORY, CUBELET, { { 0 } }, "", "" },
        { "cubelet: six pods, memory", MEMORY, CUBELET, MIXED,
          "default/be-big,default/be-small,default/bu-over,default/bu-under,kube-system/hi,default/gu", "" },
        { "cubelet: allocatableMemory.available ranks as memory", EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, CUBELET,
          MIXED, "default/be-big,default/be-small,default/bu-over,default/bu-under,kube-system/hi,default/gu", "" },

        /* ---- memory, kubelet policy ---- */
        { "kubelet: usage above request before priority",
          MEMORY,
          KUBELET,
          { POD("ns/under", BESTEFFORT, 0, MEM(GI, 100 * MI)), POD("ns/over", GUARANTEED, 1000, MEM(GI, 2 * GI)) },
          "ns/over,ns/under",
          "" },
        { "kubelet: among pods above request, lower priority first",
          MEMORY,
          KUBELET,
          { POD("ns/a", BURSTABLE, 10, MEM(0, 2 * GI)), POD("ns/b", BURSTABLE, 0, MEM(0, MI)) },
          "ns/b,ns/a",
          "" },
        { "kubelet: same priority, larger usage over request first",
          MEMORY,
          KUBELET,
          { POD("ns/a", BURSTABLE, 0, MEM(100 * MI, 200 * MI)), POD("ns/b", BURSTABLE, 0, MEM(MI, 300 * MI)) },
          "ns/b,ns/a",
          "" },
        { "kubelet: QoS class is ignored",
          MEMORY,
          KUBELET,
          { POD("ns/be", BESTEFFORT, 0, MEM(0, 10 * MI)), POD("ns/gu", GUARANTEED, 0, MEM(GI, 2 * GI)) },
          "ns/gu,ns/be",
          "" },
        { "cubelet: the same pods, QoS first",
          MEMORY,
          CUBELET,
          { POD("ns/be", BESTEFFORT, 0, MEM(0, 10 * MI)), POD("ns/gu", GUARANTEED, 0, MEM(GI, 2 * GI)) },
          "ns/be,ns/gu",
          "" },
        { "kubelet: usage equal to request does not exceed it",
          MEMORY,
          KUBELET,
          { POD("ns/eq", BURSTABLE, 0, MEM(100 * MI, 100 * MI)),
            POD("ns/above", BURSTABLE, 5, MEM(100 * MI, 101 * MI)) },
          "ns/above,ns/eq",
          "" },
        { "kubelet: pods without stats first",
          MEMORY,
          KUBELET,
          { POD("ns/over", BESTEFFORT, 0, MEM(0, GI)), NOSTATS("ns/nostats", GUARANTEED, 1000, MEM(GI, 0)) },
          "ns/nostats,ns/over",
          "" },
        { "kubelet: complete ties by key",
          MEMORY,
          KUBELET,
          { POD("ns/b", BURSTABLE, 0, MEM(0, MI)), POD("ns/a", BURSTABLE, 0, MEM(0, MI)) },
          "ns/a,ns/b",
          "" },
        { "kubelet: six pods, memory", MEMORY, KUBELET, MIXED,
          "default/be-big,default/bu-over,default/be-small,kube-system/hi,default/gu,default/bu-under", "" },
        { "kubelet: critical and protected are exempt",
          MEMORY,
          KUBELET,
          { POD("ns/crit", BESTEFFORT, 2000000000, MEM(0, 4 * GI)),
            POD("ns/prot", BESTEFFORT, 0, MEM(0, 3 * GI), .protected_ = true),
            POD("ns/a", GUARANTEED, 0, MEM(GI, GI)) },
          "ns/a",
          "ns/prot,ns/crit" },

        /* ---- pid.available ---- */
        { "kubelet: pids by priority, then process count",
          EVICT_SIGNAL_PID_AVAILABLE,
          KUBELET,
          { POD("ns/a", BURSTABLE, 0, .processes = 5), POD("ns/b", BURSTABLE, 0, .processes = 50),
            POD("ns/c", BURSTABLE, -1, .processes = 1) },
          "ns/c,ns/b,ns/a",
          "" },
        { "kubelet: pids ignore QoS and requests",
          EVICT_SIGNAL_PID_AVAILABLE,
          KUBELET,
          { POD("ns/be", BESTEFFORT, 10, .processes = 1),
            POD("ns/gu", GUARANTEED, 10, MEM(GI, 2 * GI), .processes = 100) },
          "ns/gu,ns/be",
          "" },
        { "cubelet: pids by QoS, then priority, then process count",
          EVICT_SIGNAL_PID_AVAILABLE,
          CUBELET,
          { POD("ns/gu", GUARANTEED, 0, .processes = 100), POD("ns/be", BESTEFFORT, 0, .processes = 1),
            POD("ns/bu-few", BURSTABLE, 0, .processes = 10), POD("ns/bu-many", BURSTABLE, 0, .processes = 20),
            POD("ns/bu-lo", BURSTABLE, -1, .processes = 2) },
          "ns/be,ns/bu-lo,ns/bu-many,ns/bu-few,ns/gu",
          "" },

        /* ---- disk: ephemeral storage ---- */
        { "kubelet: nodefs.available, above the ephemeral request first",
          EVICT_SIGNAL_NODEFS_AVAILABLE,
          KUBELET,
          { POD("ns/a", BURSTABLE, 0, EPH(GI, 500 * MI)), POD("ns/b", BURSTABLE, 100, EPH(0, 10 * MI)) },
          "ns/b,ns/a",
          "" },
        { "kubelet: imagefs.available, priority among pods above request",
          EVICT_SIGNAL_IMAGEFS_AVAILABLE,
          KUBELET,
          { POD("ns/a", BURSTABLE, 5, EPH(0, 10 * GI)), POD("ns/b", BURSTABLE, 1, EPH(0, MI)),
            POD("ns/c", BURSTABLE, 1, EPH(0, 2 * MI)) },
          "ns/c,ns/b,ns/a",
          "" },
        { "kubelet: six pods, nodefs.available", EVICT_SIGNAL_NODEFS_AVAILABLE, KUBELET, MIXED,
          "default/bu-over,default/bu-under,default/be-small,default/be-big,kube-system/hi,default/gu", "" },
        { "cubelet: nodefs.available ranks by ephemeral storage, not memory",
          EVICT_SIGNAL_NODEFS_AVAILABLE,
          CUBELET,
          { POD("ns/mem", BESTEFFORT, 0, MEM(0, 8 * GI), EPH(0, GI)), POD("ns/disk", BESTEFFORT, 0, EPH(0, 2 * GI)) },
          "ns/disk,ns/mem",
          "" },
        { "cubelet: six pods, imagefs.available", EVICT_SIGNAL_IMAGEFS_AVAILABLE, CUBELET, MIXED,
          "default/be-small,default/be-big,default/bu-over,default/bu-under,kube-system/hi,default/gu", "" },

        /* ---- disk: inodes ---- */
        { "kubelet: nodefs.inodesFree by priority, then inode usage",
          EVICT_SIGNAL_NODEFS_INODES_FREE,
          KUBELET,
          { POD("ns/a", BURSTABLE, 0, .inodes_usage = 100), POD("ns/b", BURSTABLE, 0, .inodes_usage = 5000),
            POD("ns/c", BURSTABLE, -5, .inodes_usage = 1) },
          "ns/c,ns/b,ns/a",
          "" },
        { "kubelet: inodes have no request, zero usage does not exceed it",
          EVICT_SIGNAL_NODEFS_INODES_FREE,
          KUBELET,
          { POD("ns/empty", BURSTABLE, -5, .inodes_usage = 0), POD("ns/used", BURSTABLE, 0, .inodes_usage = 10) },
          "ns/used,ns/empty",
          "" },
        { "cubelet: imagefs.inodesFree by QoS, then inode usage",
          EVICT_SIGNAL_IMAGEFS_INODES_FREE,
          CUBELET,
          { POD("ns/gu", GUARANTEED, 0, .inodes_usage = 1000000), POD("ns/be", BESTEFFORT, 0, .inodes_usage = 10),
            POD("ns/bu-few", BURSTABLE, 0, .inodes_usage = 100, EPH(0, 10 * GI)),
            POD("ns/bu-many", BURSTABLE, 0, .inodes_usage = 1000) },
          "ns/be,ns/bu-many,ns/bu-few,ns/gu",
          "" },
};

static void join(const EvictPod *pods, const size_t *idx, size_t n, char *buf, size_t size) {
        buf[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(buf);

                (void) snprintf(buf + len, size - len, "%s%s", i ? "," : "", pods[idx[i]].key);
        }
}

static void test_vectors(void **state) {
        (void) state;
        assert_true(sizeof(vectors) / sizeof(vectors[0]) >= 30);
        for (size_t v = 0; v < sizeof(vectors) / sizeof(vectors[0]); v++) {
                const Vec *vec = &vectors[v];
                size_t n = 0, order[8], exempt[8], no = 99, ne = 99;
                char got_order[512], got_exempt[512];
                CubError err = {};

                while (n < 8 && vec->pods[n].key)
                        n++;
                if (evict_rank(vec->pods, n, vec->signal, vec->policy, order, &no, exempt, &ne, &err) < 0)
                        fail_msg("%s: %s", vec->name, err.msg);
                assert_int_equal(no + ne, n);
                join(vec->pods, order, no, got_order, sizeof(got_order));
                join(vec->pods, exempt, ne, got_exempt, sizeof(got_exempt));
                if (strcmp(got_order, vec->order) != 0 || strcmp(got_exempt, vec->exempt) != 0)
                        fail_msg("%s (%s, %s): order [%s] exempt [%s], expected [%s] [%s]", vec->name,
                                 evict_signal_to_string(vec->signal), evict_policy_to_string(vec->policy), got_order,
                                 got_exempt, vec->order, vec->exempt);
        }
}

/* The result does not depend on the input order. */
static void test_permutation_invariant(void **state) {
        static const EvictPod base[] = MIXED;
        EvictPod pods[6];
        char first[512] = "", got[512];

        (void) state;
        for (unsigned perm = 0; perm < 720; perm += 7) {
                bool used[6] = {};
                unsigned p = perm;
                size_t order[6], exempt[6], no, ne;
                CubError err = {};

                for (int i = 0; i < 6; i++) {
                        unsigned k = p % (unsigned) (6 - i), j = 0;

                        p /= (unsigned) (6 - i);
                        for (;; j++)
                                if (!used[j] && k-- == 0)
                                        break;
                        used[j] = true;
                        pods[i] = base[j];
                }
                for (int pol = 0; pol < _EVICT_POLICY_MAX; pol++) {
                        assert_int_equal(evict_rank(pods, 6, EVICT_SIGNAL_MEMORY_AVAILABLE, (EvictPolicy) pol, order,
                                                    &no, exempt, &ne, &err),
                                         0);
                        join(pods, order, no, got, sizeof(got));
                        if (pol == 0) {
                                if (!first[0])
                                        memcpy(first, got, strlen(got) + 1);
                                assert_string_equal(got, first);
                        }
                }
        }
}

static void test_invalid(void **state) {
        EvictPod pod = POD("ns/a", BESTEFFORT, 0);
        size_t order[1], exempt[1], no, ne;
        CubError err = {};

        (void) state;
        assert_int_equal(evict_rank(&pod, 1, _EVICT_SIGNAL_MAX, CUBELET, order, &no, exempt, &ne, &err), -EINVAL);
        assert_string_equal(err.msg, "unknown eviction signal 7");
        assert_int_equal(evict_rank(&pod, 1, MEMORY, _EVICT_POLICY_MAX, order, &no, exempt, &ne, &err), -EINVAL);
        assert_int_equal(evict_rank(&pod, 1, MEMORY, CUBELET, NULL, &no, exempt, &ne, &err), -EINVAL);
        assert_true(evict_pod_is_exempt(&(EvictPod){ .priority = EVICT_CRITICAL_PRIORITY }));
        assert_false(evict_pod_is_exempt(&pod));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vectors),
                cmocka_unit_test(test_permutation_invariant),
                cmocka_unit_test(test_invalid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
