/* SPDX-License-Identifier: Apache-2.0 */
/* agent/volumes storage.c: kubelet's podEphemeralStorageLimitEviction and
 * containerEphemeralStorageLimitEviction on given usages (the messages,
 * the signals, which parts are summed, when a pod limit exists). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/volumes/volumes.h"

#define MI (1024ULL * 1024ULL)

static Pod *decode(const char *text) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(text, strlen(text), "s.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decoding failed: %s", err.msg);
        if (pod->refused.n > 0)
                fail_msg("refused: %s", pod->refused.items[0].path);
        return pod;
}

/* two app containers, a 2Mi and a 3Mi limit: the pod limit is 5Mi */
static const char two_limits[] = "apiVersion: v1\n"
                                 "kind: Pod\n"
                                 "metadata: {name: s, namespace: default, uid: u1}\n"
                                 "spec:\n"
                                 "  containers:\n"
                                 "  - name: a\n"
                                 "    image: busybox\n"
                                 "    resources: {limits: {ephemeral-storage: 2Mi}}\n"
                                 "  - name: b\n"
                                 "    image: busybox\n"
                                 "    resources: {limits: {ephemeral-storage: 3Mi}}\n";

static int check(const Pod *pod, uint64_t ra, uint64_t la, uint64_t rb, uint64_t lb, uint64_t vols,
                 VolStorageVerdict *v) {
        VolContainerUsage c[] = { { .name = "a", .rootfs = ra, .logs = la }, { .name = "b", .rootfs = rb, .logs = lb } };
        VolPodUsage u = { .containers = c, .n_containers = 2, .volumes = vols };
        CubError err = {};
        int r = vol_storage_check(pod, &u, v, &err);

        assert_true(r >= 0);
        return r;
}

static void test_container_limit(void **state) {
        Pod *pod = decode(two_limits);
        VolStorageVerdict v;

        (void) state;
        assert_true(vol_storage_limited(pod));
        /* exactly at the limit: kept (Cmp < 0 evicts) */
        assert_int_equal(check(pod, 1 * MI, 1 * MI, 0, 0, 0, &v), 0);
        assert_null(v.signal);
        /* writable layer + logs over 2Mi */
        assert_int_equal(check(pod, 2 * MI, 1, 0, 0, 0, &v), 1);
        assert_string_equal(v.signal, "ephemeralcontainerfs.limit");
        assert_string_equal(v.message, "Container a exceeded its local ephemeral storage limit \"2Mi\". ");
        assert_int_equal(v.used, 2 * MI + 1);
        /* logs alone count too */
        assert_int_equal(check(pod, 0, 0, 0, 3 * MI + 4096, 0, &v), 1);
        assert_string_equal(v.message, "Container b exceeded its local ephemeral storage limit \"3Mi\". ");
        pod_free(pod);
}

static void test_pod_limit(void **state) {
        Pod *pod = decode(two_limits);
        VolStorageVerdict v;

        (void) state;
        /* each container under its own limit, emptyDirs push the pod over 5Mi */
        assert_int_equal(check(pod, 1 * MI, 0, 1 * MI, 0, 3 * MI, &v), 0);
        assert_int_equal(check(pod, 1 * MI, 0, 1 * MI, 0, 3 * MI + 1, &v), 1);
        assert_string_equal(v.signal, "ephemeralpodfs.limit");
        assert_string_equal(v.message, "Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. ");
        assert_int_equal(v.used, 5 * MI + 1);
        /* the pod check comes first: a container over its limit that also
         * brings the pod over reads as the pod's */
        assert_int_equal(check(pod, 6 * MI, 0, 0, 0, 0, &v), 1);
        assert_string_equal(v.signal, "ephemeralpodfs.limit");
        pod_free(pod);
}

/* PodLimits: a limit exists when any container sets one (the sum over
 * those that do); a container without one is never evicted alone */
static void test_partial_limits(void **state) {
        Pod *pod = decode("apiVersion: v1\n"
                          "kind: Pod\n"
                          "metadata: {name: s, namespace: default, uid: u2}\n"
                          "spec:\n"
                          "  containers:\n"
                          "  - name: a\n"
                          "    image: busybox\n"
                          "    resources: {limits: {ephemeral-storage: 4Mi}}\n"
                          "  - name: b\n"
                          "    image: busybox\n");
        VolStorageVerdict v;

        (void) state;
        assert_true(vol_storage_limited(pod));
        assert_int_equal(check(pod, 0, 0, 3 * MI, 0, 0, &v), 0);
        assert_int_equal(check(pod, 1 * MI, 0, 3 * MI + 1, 0, 0, &v), 1);
        assert_string_equal(v.message, "Pod ephemeral local storage usage exceeds the total limit of containers 4Mi. ");
        pod_free(pod);
}

/* init containers: max with the app sum for the pod limit (PodLimits), but
 * no container limit of their own (spec.containers only) */
static void test_init_containers(void **state) {
        Pod *pod = decode("apiVersion: v1\n"
                          "kind: Pod\n"
                          "metadata: {name: s, namespace: default, uid: u3}\n"
                          "spec:\n"
                          "  initContainers:\n"
                          "  - name: a\n"
                          "    image: busybox\n"
                          "    resources: {limits: {ephemeral-storage: 1Mi}}\n"
                          "  containers:\n"
                          "  - name: b\n"
                          "    image: busybox\n");
        VolStorageVerdict v;

        (void) state;
        assert_true(vol_storage_limited(pod));
        /* the init container "a" at 1Mi + 1 byte: the pod's 1Mi, not a's own */
        assert_int_equal(check(pod, 1 * MI, 1, 0, 0, 0, &v), 1);
        assert_string_equal(v.signal, "ephemeralpodfs.limit");
        assert_string_equal(v.message, "Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. ");
        pod_free(pod);
}

static void test_no_limit(void **state) {
        Pod *pod = decode("apiVersion: v1\n"
                          "kind: Pod\n"
                          "metadata: {name: s, namespace: default, uid: u4}\n"
                          "spec:\n"
                          "  containers:\n"
                          "  - name: a\n"
                          "    image: busybox\n"
                          "    resources: {limits: {memory: 64Mi}}\n"
                          "  - name: b\n"
                          "    image: busybox\n");
        VolStorageVerdict v;

        (void) state;
        assert_false(vol_storage_limited(pod));
        assert_int_equal(check(pod, 100 * MI, 100 * MI, 100 * MI, 0, 100 * MI, &v), 0);
        assert_null(v.signal);
        pod_free(pod);
}

/* a usage that does not fit in int64 still compares as over */
static void test_huge_usage(void **state) {
        Pod *pod = decode(two_limits);
        VolStorageVerdict v;

        (void) state;
        assert_int_equal(check(pod, UINT64_MAX, UINT64_MAX, 0, 0, UINT64_MAX, &v), 1);
        assert_string_equal(v.signal, "ephemeralpodfs.limit");
        assert_int_equal(v.used, UINT64_MAX);
        pod_free(pod);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_container_limit), cmocka_unit_test(test_pod_limit),
                cmocka_unit_test(test_partial_limits),  cmocka_unit_test(test_init_containers),
                cmocka_unit_test(test_no_limit),        cmocka_unit_test(test_huge_usage),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
