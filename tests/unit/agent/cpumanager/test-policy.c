/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent/cpumanager/policy.c: the static policy (shared/kubelet-semantics.md
 * 5.3-5.7, 5.10) on 1 socket × 4 cores × 2 threads, siblings (0,4),(1,5),
 * (2,6),(3,7), with cpu 0 reserved; and on the VM's 2 × 2 layout.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cpumanager/cpumanager.h"
#include "agent/pod/pod.h"

#define HDR(uid) "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  uid: " uid "\nspec:\n"
#define C(name, extra) "  - name: '" name "'\n    image: x:1\n" extra /* quoted: y is YAML 1.1's true */
#define RES(req, lim) "    resources:\n      requests: {" req "}\n      limits: {" lim "}\n"
#define GUAR(cpu) RES("cpu: \"" cpu "\", memory: 1Gi", "cpu: \"" cpu "\", memory: 1Gi")
#define SIDECAR "    restartPolicy: Always\n"

static Pod *pod_of(const char *text) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(text, strlen(text), "p.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode failed: %s", err.msg);
        return pod;
}

static CpumgrState *state_of(const CpumgrCpu *cpus, size_t n, const char *reserved, CpumgrPolicy policy) {
        CpumgrTopology t;
        CpumgrSet r;
        CpumgrState *s = NULL;
        CubError err = {};

        assert_int_equal(cpumgr_topology_from_cpus(cpus, n, &t, &err), 0);
        assert_int_equal(cpumgr_set_parse(reserved, &r, NULL), 0);
        if (cpumgr_new(policy, &t, &r, &s, &err) < 0)
                fail_msg("cpumgr_new: %s", err.msg);
        cpumgr_topology_done(&t); /* the state keeps its own copy */
        return s;
}

static const CpumgrCpu cpus_a[] = { { 0, 0, 0, 0 }, { 1, 1, 0, 0 }, { 2, 2, 0, 0 }, { 3, 3, 0, 0 },
                                    { 4, 0, 0, 0 }, { 5, 1, 0, 0 }, { 6, 2, 0, 0 }, { 7, 3, 0, 0 } };
static const CpumgrCpu cpus_vm[] = { { 0, 0, 0, 0 }, { 1, 0, 0, 0 }, { 2, 2, 0, 0 }, { 3, 2, 0, 0 } };

static CpumgrState *state_a(void) {
        return state_of(cpus_a, 8, "0", CPUMGR_POLICY_STATIC);
}

static const char *fmt(const CpumgrSet *set) {
        static char buf[CPUMGR_SET_STR_MAX]; /* test-only scratch */

        return set ? cpumgr_set_format(set, buf, sizeof(buf)) : "(shared)";
}

static void assert_cpuset(const CpumgrState *s, const char *uid, const char *name, const char *want) {
        char buf[CPUMGR_SET_STR_MAX];

        assert_string_equal(cpumgr_container_cpuset(s, uid, name, buf, sizeof(buf)), want);
}

static void assert_pool(const CpumgrState *s, const char *want) {
        assert_string_equal(fmt(cpumgr_shared_pool(s)), want);
}

static void allocate_ok(CpumgrState *s, const Pod *pod) {
        CubError err = {};

        assert_true(cpumgr_pod_fits(s, pod, pod_qos_class(pod), &err));
        if (cpumgr_allocate_pod(s, pod, pod_qos_class(pod), &err) < 0)
                fail_msg("allocate: %s", err.msg);
}

/* ---- what a container gets ---------------------------------------------- */

static void test_guaranteed_cpus(void **state) {
        Pod *pod = pod_of(HDR("u1") "  containers:\n" C("a", GUAR("2")) C("b", GUAR("1500m")) C("c", GUAR("0.5"))
                                  C("d", GUAR("3000m")));

        (void) state;
        assert_int_equal(pod_qos_class(pod), POD_QOS_GUARANTEED);
        assert_int_equal(cpumgr_guaranteed_cpus(POD_QOS_GUARANTEED, &pod->containers[0]), 2);
        assert_int_equal(cpumgr_guaranteed_cpus(POD_QOS_GUARANTEED, &pod->containers[1]), 0);
        assert_int_equal(cpumgr_guaranteed_cpus(POD_QOS_GUARANTEED, &pod->containers[2]), 0);
        assert_int_equal(cpumgr_guaranteed_cpus(POD_QOS_GUARANTEED, &pod->containers[3]), 3);
        assert_int_equal(cpumgr_guaranteed_cpus(POD_QOS_BURSTABLE, &pod->containers[0]), 0);
        assert_int_equal(cpumgr_pod_exclusive_cpus(pod, POD_QOS_GUARANTEED), 5);
        assert_int_equal(cpumgr_pod_exclusive_cpus(pod, POD_QOS_BURSTABLE), 0);
        pod_free(pod);
}

static void test_pod_exclusive_cpus_init_and_sidecars(void **state) {
        /* init 4 alone; then sidecar 1 + app 2 → max(4, 3) */
        Pod *a = pod_of(HDR("u1") "  initContainers:\n" C("init", GUAR("4"))
                                C("sc", SIDECAR GUAR("1")) "  containers:\n" C("app", GUAR("2")));
        /* sidecar 2 before a regular init 3 → 5 at once */
        Pod *b = pod_of(HDR("u2") "  initContainers:\n" C("sc", SIDECAR GUAR("2"))
                                C("init", GUAR("3")) "  containers:\n" C("app", GUAR("1")));

        (void) state;
        assert_int_equal(cpumgr_pod_exclusive_cpus(a, pod_qos_class(a)), 4);
        assert_int_equal(cpumgr_pod_exclusive_cpus(b, pod_qos_class(b)), 5);
        pod_free(a);
        pod_free(b);
}

static void test_policy_strings(void **state) {
        (void) state;
        assert_string_equal(cpumgr_policy_to_string(CPUMGR_POLICY_NONE), "none");
        assert_string_equal(cpumgr_policy_to_string(CPUMGR_POLICY_STATIC), "static");
        assert_null(cpumgr_policy_to_string(_CPUMGR_POLICY_MAX));
        assert_int_equal(cpumgr_policy_from_string("static"), CPUMGR_POLICY_STATIC);
        assert_int_equal(cpumgr_policy_from_string("none"), CPUMGR_POLICY_NONE);
        assert_int_equal(cpumgr_policy_from_string("Static"), _CPUMGR_POLICY_INVALID);
        assert_int_equal(cpumgr_policy_from_string(NULL), _CPUMGR_POLICY_INVALID);
}

static void test_new_errors(void **state) {
        CpumgrTopology t;
        CpumgrSet r = {};
        CpumgrState *s = NULL;
        CubError err = {};

        (void) state;
        assert_int_equal(cpumgr_topology_from_cpus(cpus_a, 8, &t, NULL), 0);
        assert_int_equal(cpumgr_new(CPUMGR_POLICY_STATIC, &t, &r, &s, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero");
        cpumgr_set_add(&r, 8);
        assert_int_equal(cpumgr_new(CPUMGR_POLICY_STATIC, &t, &r, &s, &err), -EINVAL);
        assert_string_equal(err.msg, "reserved cpus '8' not on this node");
        assert_int_equal(cpumgr_new(_CPUMGR_POLICY_MAX, &t, NULL, &s, &err), -EINVAL);
        assert_null(s);
        /* policy none needs no reservation */
        assert_int_equal(cpumgr_new(CPUMGR_POLICY_NONE, &t, NULL, &s, &err), 0);
        assert_int_equal(cpumgr_policy(s), CPUMGR_POLICY_NONE);
        assert_int_equal(cpumgr_topology(s)->n, 8);
        cpumgr_free(s);
        cpumgr_topology_done(&t);
}

static void test_policy_none(void **state) {
        CpumgrState *s = state_of(cpus_a, 8, "", CPUMGR_POLICY_NONE);
        Pod *pod = pod_of(HDR("u1") "  containers:\n" C("app", GUAR("2")));
        CpumgrSet f;

        (void) state;
        allocate_ok(s, pod);
        assert_null(cpumgr_container_cpus(s, "u1", "app"));
        assert_cpuset(s, "u1", "app", "");
        cpumgr_free_exclusive(s, &f);
        assert_true(cpumgr_set_is_empty(&f));
        pod_free(pod);
        cpumgr_free(s);
}

/* ---- allocation ---------------------------------------------------------- */

static void test_guaranteed_integer(void **state) {
        CpumgrState *s = state_a();
        Pod *pod = pod_of(HDR("u1") "  containers:\n" C("app", GUAR("2")));
        CpumgrSet f;

        (void) state;
        assert_pool(s, "0-7");
        assert_string_equal(fmt(cpumgr_reserved_set(s)), "0");
        cpumgr_free_exclusive(s, &f);
        assert_string_equal(fmt(&f), "1-7");
        allocate_ok(s, pod);
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "app")), "1,5");
        assert_cpuset(s, "u1", "app", "1,5");
        assert_pool(s, "0,2-4,6-7");
        cpumgr_free_exclusive(s, &f);
        assert_string_equal(fmt(&f), "2-4,6-7");
        /* idempotent */
        allocate_ok(s, pod);
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "app")), "1,5");
        assert_pool(s, "0,2-4,6-7");
        /* other containers, known or not, run on the pool */
        assert_cpuset(s, "u1", "other", "0,2-4,6-7");
        assert_cpuset(s, "nope", "app", "0,2-4,6-7");
        pod_free(pod);
        cpumgr_free(s);
}

/* in-place resize: whole CPUs taken and returned, the held ones kept */
static void test_resize(void **state) {
        CpumgrState *s = state_a();
        Pod *pod = pod_of(HDR("u1") "  containers:\n" C("app", GUAR("2"))), *p3, *p1, *frac, *big;
        const CpumgrSet *held;
        CubError err = {};

        (void) state;
        allocate_ok(s, pod);
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "app")), "1,5");
        p3 = pod_of(HDR("u1") "  containers:\n" C("app", GUAR("3")));
        assert_int_equal(cpumgr_resize_pod(s, p3, pod_qos_class(p3), &err), 0);
        held = cpumgr_container_cpus(s, "u1", "app");
        assert_int_equal(cpumgr_set_count(held), 3);
        assert_true(cpumgr_set_has(held, 1) && cpumgr_set_has(held, 5));
        assert_int_equal(cpumgr_set_count(cpumgr_shared_pool(s)), 5);
        p1 = pod_of(HDR("u1") "  containers:\n" C("app", GUAR("1")));
        assert_int_equal(cpumgr_resize_pod(s, p1, pod_qos_class(p1), &err), 0);
        assert_int_equal(cpumgr_set_count(cpumgr_container_cpus(s, "u1", "app")), 1);
        assert_int_equal(cpumgr_set_count(cpumgr_shared_pool(s)), 7);
        /* too many: nothing changes, kubelet's words */
        big = pod_of(HDR("u1") "  containers:\n" C("app", GUAR("9")));
        held = cpumgr_container_cpus(s, "u1", "app");
        assert_int_equal(cpumgr_resize_pod(s, big, pod_qos_class(big), &err), -ENOSPC);
        assert_string_equal(err.msg, "not enough cpus available to satisfy request: requested=8, available=6");
        assert_int_equal(cpumgr_set_count(held), 1);
        /* a fraction of a CPU: all of them back to the pool */
        frac = pod_of(HDR("u1") "  containers:\n" C("app", GUAR("1500m")));
        assert_int_equal(cpumgr_resize_pod(s, frac, pod_qos_class(frac), &err), 0);
        assert_null(cpumgr_container_cpus(s, "u1", "app"));
        assert_pool(s, "0-7");
        pod_free(pod);
        pod_free(p3);
        pod_free(p1);
        pod_free(big);
        pod_free(frac);
        cpumgr_free(s);
}

static void test_guaranteed_non_integer_is_shared(void **state) {
        CpumgrState *s = state_a();
        Pod *pod = pod_of(HDR("u1") "  containers:\n" C("app", GUAR("1500m")) C("b", GUAR("1")));

        (void) state;
        allocate_ok(s, pod);
        assert_null(cpumgr_container_cpus(s, "u1", "app"));
        /* the other container is whole: packing takes cpu 4, sibling of reserved 0 */
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "b")), "4");
        assert_cpuset(s, "u1", "app", "0-3,5-7");
        pod_free(pod);
        cpumgr_free(s);
}

/* policy_static.go (1.34): a pod with pod-level resources gets no exclusive
 * CPUs, Guaranteed and whole-cpu containers included */
static void test_pod_level_resources_are_shared(void **state) {
        CpumgrState *s = state_a();
        Pod *pod = pod_of(HDR("u1") "  resources:\n    requests: {cpu: \"3\", memory: 2Gi}\n"
                                    "    limits: {cpu: \"3\", memory: 2Gi}\n"
                                    "  containers:\n" C("app", GUAR("2")) C("bare", ""));
        Pod *huge = pod_of(HDR("u2") "  resources:\n    limits: {cpu: \"64\", memory: 1Gi}\n"
                                     "  containers:\n" C("app", ""));
        CubError err = {};

        (void) state;
        assert_int_equal(pod_qos_class(pod), POD_QOS_GUARANTEED);
        assert_int_equal(cpumgr_guaranteed_cpus(POD_QOS_GUARANTEED, &pod->containers[0]), 2);
        assert_int_equal(cpumgr_pod_exclusive_cpus(pod, POD_QOS_GUARANTEED), 0);
        allocate_ok(s, pod);
        assert_null(cpumgr_container_cpus(s, "u1", "app"));
        assert_null(cpumgr_container_cpus(s, "u1", "bare"));
        assert_cpuset(s, "u1", "app", "0-7");
        assert_pool(s, "0-7");
        /* more cpus than the node has: still fits, nothing exclusive is asked */
        assert_int_equal(pod_qos_class(huge), POD_QOS_GUARANTEED);
        assert_true(cpumgr_pod_fits(s, huge, POD_QOS_GUARANTEED, &err));
        assert_int_equal(cpumgr_allocate_pod(s, huge, POD_QOS_GUARANTEED, &err), 0);
        assert_pool(s, "0-7");
        pod_free(huge);
        pod_free(pod);
        cpumgr_free(s);
}

static void test_burstable_is_shared(void **state) {
        CpumgrState *s = state_a();
        Pod *pod = pod_of(HDR("u1") "  containers:\n" C("app", RES("cpu: \"2\"", "cpu: \"3\"")));
        Pod *be = pod_of(HDR("u2") "  containers:\n" C("app", ""));
        CubError err = {};

        (void) state;
        assert_int_equal(pod_qos_class(pod), POD_QOS_BURSTABLE);
        assert_int_equal(cpumgr_pod_exclusive_cpus(pod, POD_QOS_BURSTABLE), 0);
        allocate_ok(s, pod);
        allocate_ok(s, be);
        assert_null(cpumgr_container_cpus(s, "u1", "app"));
        assert_cpuset(s, "u1", "app", "0-7");
        assert_cpuset(s, "u2", "app", "0-7");
        assert_true(cpumgr_pod_fits(s, pod, POD_QOS_BURSTABLE, &err));
        pod_free(pod);
        pod_free(be);
        cpumgr_free(s);
}

static void test_init_reuse(void **state) {
        CpumgrState *s = state_a();
        Pod *pod = pod_of(HDR("u1") "  initContainers:\n" C("init", GUAR("2")) "  containers:\n" C("app", GUAR("2")));

        (void) state;
        assert_int_equal(cpumgr_pod_exclusive_cpus(pod, POD_QOS_GUARANTEED), 2);
        allocate_ok(s, pod);
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "init")), "1,5");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "app")), "1,5");
        assert_pool(s, "0,2-4,6-7");
        cpumgr_release_pod(s, "u1");
        assert_pool(s, "0-7");
        assert_null(cpumgr_container_cpus(s, "u1", "init"));
        assert_null(cpumgr_container_cpus(s, "u1", "app"));
        pod_free(pod);
        cpumgr_free(s);
}

static void test_init_reuse_partial_and_release_container(void **state) {
        CpumgrState *s = state_a();
        Pod *pod = pod_of(HDR("u1") "  initContainers:\n" C("init", GUAR("4")) "  containers:\n" C("app", GUAR("2")));

        (void) state;
        allocate_ok(s, pod);
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "init")), "1-2,5-6");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "app")), "1,5");
        assert_pool(s, "0,3-4,7");
        /* RemoveContainer: back to the pool minus what the app container still holds */
        cpumgr_release_container(s, "u1", "init");
        assert_pool(s, "0,2-4,6-7");
        cpumgr_release_container(s, "u1", "init"); /* gone: no-op */
        assert_pool(s, "0,2-4,6-7");
        cpumgr_release_container(s, "u1", "app");
        assert_pool(s, "0-7");
        pod_free(pod);
        cpumgr_free(s);
}

static void test_sidecar_not_reused(void **state) {
        CpumgrState *s = state_a();
        /* sidecar first: a later init container cannot take its CPUs, and
         * the app container gets the regular init container's */
        Pod *a = pod_of(HDR("u1") "  initContainers:\n" C("sc", SIDECAR GUAR("2"))
                                C("init", GUAR("2")) "  containers:\n" C("app", GUAR("2")));
        /* sidecar after a regular init container: it may take the init
         * container's CPUs, but the app container never gets the sidecar's */
        Pod *b = pod_of(HDR("u2") "  initContainers:\n" C("init", GUAR("2"))
                                C("sc", SIDECAR GUAR("2")) "  containers:\n" C("app", GUAR("2")));

        (void) state;
        allocate_ok(s, a);
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "sc")), "1,5");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "init")), "2,6");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u1", "app")), "2,6");
        assert_pool(s, "0,3-4,7");
        cpumgr_release_pod(s, "u1");
        assert_pool(s, "0-7");

        allocate_ok(s, b);
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u2", "init")), "1,5");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u2", "sc")), "1,5");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u2", "app")), "2,6");
        assert_pool(s, "0,3-4,7");
        cpumgr_release_pod(s, "u2");
        assert_pool(s, "0-7");
        pod_free(a);
        pod_free(b);
        cpumgr_free(s);
}

static void test_fits_messages(void **state) {
        CpumgrState *s = state_a();
        Pod *big = pod_of(HDR("u1") "  containers:\n" C("app", GUAR("8")));
        Pod *two = pod_of(HDR("u2") "  containers:\n" C("a", GUAR("4")) C("b", GUAR("4")));
        Pod *seven = pod_of(HDR("u3") "  containers:\n" C("a", GUAR("4")) C("b", GUAR("3")));
        Pod *init = pod_of(HDR("u4") "  initContainers:\n" C("i", GUAR("7")) "  containers:\n" C("a", GUAR("7")));
        CubError err = {};

        (void) state;
        assert_false(cpumgr_pod_fits(s, big, POD_QOS_GUARANTEED, &err));
        assert_string_equal(err.msg, "not enough cpus available to satisfy request: requested=8, available=7");
        assert_int_equal(err.code, ENOSPC);
        assert_false(cpumgr_pod_fits(s, two, POD_QOS_GUARANTEED, &err));
        assert_string_equal(err.msg, "not enough cpus available to satisfy request: requested=4, available=3");
        assert_true(cpumgr_pod_fits(s, seven, POD_QOS_GUARANTEED, &err));
        assert_true(cpumgr_pod_fits(s, init, POD_QOS_GUARANTEED, &err));

        /* allocate says the same and changes nothing */
        cub_err_clear(&err);
        assert_int_equal(cpumgr_allocate_pod(s, two, POD_QOS_GUARANTEED, &err), -ENOSPC);
        assert_string_equal(err.msg, "not enough cpus available to satisfy request: requested=4, available=3");
        assert_null(cpumgr_container_cpus(s, "u2", "a"));
        assert_pool(s, "0-7");

        allocate_ok(s, init);
        assert_string_equal(fmt(cpumgr_container_cpus(s, "u4", "a")), "1-7");
        assert_pool(s, "0");
        assert_false(cpumgr_pod_fits(s, seven, POD_QOS_GUARANTEED, &err));
        assert_string_equal(err.msg, "not enough cpus available to satisfy request: requested=4, available=0");
        pod_free(big);
        pod_free(two);
        pod_free(seven);
        pod_free(init);
        cpumgr_free(s);
}

static void test_pool_shrinks_and_grows(void **state) {
        CpumgrState *s = state_a();
        Pod *a = pod_of(HDR("ua") "  containers:\n" C("app", GUAR("2")));
        Pod *b = pod_of(HDR("ub") "  containers:\n" C("x", GUAR("1")) C("y", GUAR("3")));
        Pod *c = pod_of(HDR("uc") "  containers:\n" C("app", GUAR("1")));

        (void) state;
        allocate_ok(s, a);
        assert_pool(s, "0,2-4,6-7");
        allocate_ok(s, b);
        /* x: the free sibling of reserved 0; y: a whole core plus a thread */
        assert_string_equal(fmt(cpumgr_container_cpus(s, "ub", "x")), "4");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "ub", "y")), "2-3,6");
        assert_pool(s, "0,7");
        assert_cpuset(s, "zz", "shared", "0,7");
        allocate_ok(s, c);
        assert_string_equal(fmt(cpumgr_container_cpus(s, "uc", "app")), "7");
        assert_pool(s, "0");
        cpumgr_release_pod(s, "ub");
        assert_pool(s, "0,2-4,6");
        cpumgr_release_pod(s, "ua");
        assert_pool(s, "0-6");
        cpumgr_release_pod(s, "nope");
        assert_pool(s, "0-6");
        cpumgr_release_pod(s, "uc");
        assert_pool(s, "0-7");
        pod_free(a);
        pod_free(b);
        pod_free(c);
        cpumgr_free(s);
}

static void test_release_stale(void **state) {
        CpumgrState *s = state_a();
        Pod *a = pod_of(HDR("ua") "  containers:\n" C("app", GUAR("2")));
        Pod *b = pod_of(HDR("ub") "  containers:\n" C("x", GUAR("1")) C("y", GUAR("1")));
        Pod *c = pod_of(HDR("uc") "  containers:\n" C("app", GUAR("2")));
        const char *live[] = { "ub", "unrelated" };

        (void) state;
        allocate_ok(s, a);
        allocate_ok(s, b);
        allocate_ok(s, c);
        assert_string_equal(fmt(cpumgr_container_cpus(s, "ub", "x")), "4");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "ub", "y")), "2");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "uc", "app")), "3,7");
        assert_pool(s, "0,6");
        assert_int_equal(cpumgr_release_stale(s, live, 2), 2);
        assert_null(cpumgr_container_cpus(s, "ua", "app"));
        assert_null(cpumgr_container_cpus(s, "uc", "app"));
        assert_string_equal(fmt(cpumgr_container_cpus(s, "ub", "x")), "4");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "ub", "y")), "2");
        assert_pool(s, "0-1,3,5-7");
        assert_int_equal(cpumgr_release_stale(s, live, 2), 0);
        assert_int_equal(cpumgr_release_stale(s, NULL, 0), 1);
        assert_pool(s, "0-7");
        pod_free(a);
        pod_free(b);
        pod_free(c);
        cpumgr_free(s);
}

static void test_clone_is_independent(void **state) {
        CpumgrState *s = state_a(), *c = NULL, *c2 = NULL;
        Pod *a = pod_of(HDR("ua") "  containers:\n" C("app", GUAR("2")));
        Pod *b = pod_of(HDR("ub") "  containers:\n" C("app", GUAR("1")));
        CubError err = {};

        (void) state;
        allocate_ok(s, a);
        assert_int_equal(cpumgr_clone(s, &c, &err), 0);
        allocate_ok(c, b);
        cpumgr_release_pod(c, "ua");
        assert_string_equal(fmt(cpumgr_container_cpus(c, "ub", "app")), "4");
        assert_pool(c, "0-3,5-7");
        /* the original is untouched */
        assert_string_equal(fmt(cpumgr_container_cpus(s, "ua", "app")), "1,5");
        assert_null(cpumgr_container_cpus(s, "ub", "app"));
        assert_pool(s, "0,2-4,6-7");
        cpumgr_free(s);
        /* a clone outlives its original (shared topology is refcounted) */
        assert_int_equal(cpumgr_clone(c, &c2, &err), 0);
        cpumgr_free(c);
        assert_string_equal(fmt(cpumgr_container_cpus(c2, "ub", "app")), "4");
        assert_int_equal(cpumgr_topology(c2)->n, 8);
        cpumgr_free(c2);
        pod_free(a);
        pod_free(b);
}

static void test_many_pods_arena(void **state) {
        CpumgrState *s = state_of(cpus_a, 8, "0", CPUMGR_POLICY_STATIC);
        Pod *pods[7];
        char text[512], uid[32];

        (void) state;
        for (int i = 0; i < 7; i++) {
                snprintf(uid, sizeof(uid), "uid-%d", i);
                snprintf(text, sizeof(text), HDR("%s") "  containers:\n" C("c%d", GUAR("1")), uid, i);
                pods[i] = pod_of(text);
                allocate_ok(s, pods[i]);
        }
        assert_pool(s, "0");
        /* release in a mixed order: names stay right after the arena is compacted */
        cpumgr_release_pod(s, "uid-3");
        cpumgr_release_pod(s, "uid-0");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "uid-6", "c6")), "7");
        assert_string_equal(fmt(cpumgr_container_cpus(s, "uid-1", "c1")), "1");
        assert_null(cpumgr_container_cpus(s, "uid-3", "c3"));
        for (int i = 0; i < 7; i++)
                pod_free(pods[i]);
        cpumgr_free(s);
}

static void test_assign_container(void **state) {
        CpumgrState *s = state_a();
        CpumgrSet set;
        CubError err = {};

        (void) state;
        /* an aligned placement chosen by admission: exactly these CPUs */
        assert_int_equal(cpumgr_set_parse("2,6", &set, NULL), 0);
        assert_int_equal(cpumgr_assign_container(s, "p1", "init", &set, &err), 0);
        assert_cpuset(s, "p1", "init", "2,6");
        assert_pool(s, "0-1,3-5,7");
        /* the pod's own CPUs may be reused by its next container */
        assert_int_equal(cpumgr_assign_container(s, "p1", "app", &set, &err), 0);
        assert_cpuset(s, "p1", "app", "2,6");
        assert_int_equal(cpumgr_assign_container(s, "p1", "app", &set, &err), -EEXIST);
        assert_string_equal(err.msg, "container 'app' of pod 'p1' already holds cpus");
        /* another pod's and reserved CPUs are not free */
        assert_int_equal(cpumgr_set_parse("0-2", &set, NULL), 0);
        assert_int_equal(cpumgr_assign_container(s, "p2", "app", &set, &err), -ENOSPC);
        assert_string_equal(err.msg, "cpus '0,2' are not free");
        assert_pool(s, "0-1,3-5,7");
        cpumgr_release_pod(s, "p1");
        assert_pool(s, "0-7");
        cpumgr_free(s);
}

static void test_vm_layout(void **state) {
        CpumgrState *s = state_of(cpus_vm, 4, "0", CPUMGR_POLICY_STATIC);
        Pod *one = pod_of(HDR("u1") "  containers:\n" C("app", GUAR("1")));
        Pod *two = pod_of(HDR("u2") "  containers:\n" C("app", GUAR("2")));
        Pod *big = pod_of(HDR("u3") "  containers:\n" C("app", GUAR("1")));
        CubError err = {};

        (void) state;
        allocate_ok(s, one);
        assert_cpuset(s, "u1", "app", "1");
        assert_pool(s, "0,2-3");
        allocate_ok(s, two);
        assert_cpuset(s, "u2", "app", "2-3");
        assert_pool(s, "0");
        assert_cpuset(s, "u9", "app", "0");
        assert_false(cpumgr_pod_fits(s, big, POD_QOS_GUARANTEED, &err));
        assert_string_equal(err.msg, "not enough cpus available to satisfy request: requested=1, available=0");
        cpumgr_release_pod(s, "u1");
        assert_pool(s, "0-1");
        pod_free(one);
        pod_free(two);
        pod_free(big);
        cpumgr_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_guaranteed_cpus),
                cmocka_unit_test(test_pod_exclusive_cpus_init_and_sidecars),
                cmocka_unit_test(test_policy_strings),
                cmocka_unit_test(test_new_errors),
                cmocka_unit_test(test_policy_none),
                cmocka_unit_test(test_guaranteed_integer),
                cmocka_unit_test(test_guaranteed_non_integer_is_shared),
                cmocka_unit_test(test_resize),
                cmocka_unit_test(test_burstable_is_shared),
                cmocka_unit_test(test_pod_level_resources_are_shared),
                cmocka_unit_test(test_init_reuse),
                cmocka_unit_test(test_init_reuse_partial_and_release_container),
                cmocka_unit_test(test_sidecar_not_reused),
                cmocka_unit_test(test_fits_messages),
                cmocka_unit_test(test_pool_shrinks_and_grows),
                cmocka_unit_test(test_release_stale),
                cmocka_unit_test(test_assign_container),
                cmocka_unit_test(test_clone_is_independent),
                cmocka_unit_test(test_many_pods_arena),
                cmocka_unit_test(test_vm_layout),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
