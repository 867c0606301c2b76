/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deviceplugin/gpu/alloc.c: replica IDs, NVIDIA_VISIBLE_DEVICES, Allocate's
 * device nodes, GetPreferredAllocation's choice and the XID filter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../../deviceplugin/gpu/alloc.c"

#define U0 "GPU-00000000-aaaa-0000-0000-000000000000"
#define U1 "GPU-11111111-bbbb-0000-0000-000000000001"
#define U2 "GPU-22222222-cccc-0000-0000-000000000002"
#define U3 "GPU-33333333-dddd-0000-0000-000000000003"

/* four GPUs: 0 and 1 on NUMA node 0, 2 and 3 on node 1; minors reversed */
static GpuDevice devs[4] = {
        { .uuid = U0, .minor = 3, .index = 0, .numa = 0, .healthy = true },
        { .uuid = U1, .minor = 2, .index = 1, .numa = 0, .healthy = true },
        { .uuid = U2, .minor = 1, .index = 2, .numa = 1, .healthy = true },
        { .uuid = U3, .minor = 0, .index = 3, .numa = 1, .healthy = true },
};

static void test_id_parse(void **state) {
        char uuid[GPU_UUID_MAX];
        int k;

        (void) state;
        assert_int_equal(gpu_id_parse(U0, uuid, sizeof(uuid), &k), 0);
        assert_string_equal(uuid, U0);
        assert_int_equal(k, -1);
        assert_int_equal(gpu_id_parse(U0 "::0", uuid, sizeof(uuid), &k), 0);
        assert_string_equal(uuid, U0);
        assert_int_equal(k, 0);
        assert_int_equal(gpu_id_parse(U1 "::17", uuid, sizeof(uuid), &k), 0);
        assert_string_equal(uuid, U1);
        assert_int_equal(k, 17);
        assert_int_equal(gpu_id_parse("", uuid, sizeof(uuid), &k), -EINVAL);
        assert_int_equal(gpu_id_parse("::1", uuid, sizeof(uuid), &k), -EINVAL);
        assert_int_equal(gpu_id_parse(U0 "::", uuid, sizeof(uuid), &k), -EINVAL);
        assert_int_equal(gpu_id_parse(U0 "::-1", uuid, sizeof(uuid), &k), -EINVAL);
        assert_int_equal(gpu_id_parse(U0 "::01", uuid, sizeof(uuid), &k), -EINVAL);
        assert_int_equal(gpu_id_parse(U0 "::1x", uuid, sizeof(uuid), &k), -EINVAL);
        assert_int_equal(gpu_id_parse(U0 "::99999999999", uuid, sizeof(uuid), &k), -EINVAL);
        assert_int_equal(gpu_id_parse(U0, uuid, 8, &k), -EINVAL);
}

static void test_id_format(void **state) {
        char buf[GPU_UUID_MAX + 8];

        (void) state;
        assert_int_equal(gpu_id_format(U0, -1, buf, sizeof(buf)), 0);
        assert_string_equal(buf, U0);
        assert_int_equal(gpu_id_format(U0, 3, buf, sizeof(buf)), 0);
        assert_string_equal(buf, U0 "::3");
        assert_int_equal(gpu_id_format(U0, 3, buf, 10), -ENAMETOOLONG);
}

static void test_id_lookup(void **state) {
        size_t i = 99;

        (void) state;
        assert_int_equal(gpu_id_lookup(devs, 4, 1, U2, &i), 0);
        assert_int_equal(i, 2);
        /* no replicas: "::k" is unknown */
        assert_int_equal(gpu_id_lookup(devs, 4, 1, U2 "::0", &i), -ENOENT);
        /* replicas: only "::k" with k < replicas */
        assert_int_equal(gpu_id_lookup(devs, 4, 3, U2, &i), -ENOENT);
        assert_int_equal(gpu_id_lookup(devs, 4, 3, U3 "::2", &i), 0);
        assert_int_equal(i, 3);
        assert_int_equal(gpu_id_lookup(devs, 4, 3, U3 "::3", &i), -ENOENT);
        assert_int_equal(gpu_id_lookup(devs, 4, 3, "GPU-nope::0", &i), -ENOENT);
}

static void test_visible_devices(void **state) {
        size_t idx[] = { 3, 0, 3, 1, 0 };
        char *s = NULL;

        (void) state;
        assert_int_equal(gpu_visible_devices(devs, idx, ELEMENTSOF(idx), &s), 0);
        assert_string_equal(s, U0 "," U1 "," U3);
        free(s);
        assert_int_equal(gpu_visible_devices(devs, idx, 1, &s), 0);
        assert_string_equal(s, U3);
        free(s);
        assert_int_equal(gpu_visible_devices(devs, idx, 0, &s), 0);
        assert_string_equal(s, "");
        free(s);
}

static void test_alloc_container(void **state) {
        const char *ids[] = { U1 "::1", U0 "::0", U1 "::0" };
        const bool present[3] = { true, true, false };
        GpuAlloc a = { 0 };
        CubError err = { 0 };

        (void) state;
        assert_int_equal(gpu_alloc_container(devs, 4, 2, ids, 3, present, &a, &err), 0);
        assert_string_equal(a.visible, U0 "," U1);
        assert_int_equal(a.n_paths, 4);
        /* by minor: GPU 1 is /dev/nvidia2, GPU 0 /dev/nvidia3 */
        assert_string_equal(a.paths[0], "/dev/nvidia2");
        assert_string_equal(a.paths[1], "/dev/nvidia3");
        assert_string_equal(a.paths[2], "/dev/nvidiactl");
        assert_string_equal(a.paths[3], "/dev/nvidia-uvm");
        gpu_alloc_done(&a);

        ids[0] = U2;
        assert_int_equal(gpu_alloc_container(devs, 4, 1, ids, 1, present, &a, &err), 0);
        assert_string_equal(a.visible, U2);
        assert_int_equal(a.n_paths, 3);
        assert_string_equal(a.paths[0], "/dev/nvidia1");
        gpu_alloc_done(&a);

        ids[1] = "GPU-unknown";
        assert_int_equal(gpu_alloc_container(devs, 4, 1, ids, 2, present, &a, &err), -EINVAL);
        assert_string_equal(err.msg, "unknown device ID 'GPU-unknown'");
        assert_null(a.visible);

        devs[2].healthy = false;
        assert_int_equal(gpu_alloc_container(devs, 4, 1, ids, 1, present, &a, &err), -EINVAL);
        assert_string_equal(err.msg, "device '" U2 "' is unhealthy");
        devs[2].healthy = true;

        assert_int_equal(gpu_alloc_container(devs, 4, 1, ids, 0, present, &a, &err), -EINVAL);
}

/* runs gpu_preferred and compares with want (NULL-terminated) */
static void check_preferred(unsigned replicas, const char *const *avail, size_t n_avail, const char *const *must,
                            size_t n_must, int size, const char *const *want) {
        const char **got = NULL;
        CubError err = { 0 };
        int r = gpu_preferred(devs, 4, replicas, avail, n_avail, must, n_must, size, &got, &err);

        if (r < 0)
                fail_msg("gpu_preferred: %s", err.msg);
        for (int i = 0; i < size; i++) {
                assert_non_null(want[i]);
                assert_string_equal(got[i], want[i]);
        }
        assert_null(want[size]);
        free(got);
}

static void test_preferred_lowest_index(void **state) {
        const char *avail[] = { U3, U2, U1, U0 };

        (void) state;
        check_preferred(1, avail, 4, NULL, 0, 1, (const char *[]){ U0, NULL });
        check_preferred(1, avail, 4, NULL, 0, 2, (const char *[]){ U0, U1, NULL });
        check_preferred(1, avail, 4, NULL, 0, 4, (const char *[]){ U0, U1, U2, U3, NULL });
}

static void test_preferred_numa(void **state) {
        const char *avail[] = { U0, U2, U3 };

        (void) state;
        /* 2 devices: node 1 holds U2 and U3, node 0 only U0 */
        check_preferred(1, avail, 3, NULL, 0, 2, (const char *[]){ U2, U3, NULL });
        /* 3 devices: no single node; lowest indexes */
        check_preferred(1, avail, 3, NULL, 0, 3, (const char *[]){ U0, U2, U3, NULL });
        /* unknown topology counts as no node */
        devs[2].numa = -1;
        check_preferred(1, avail, 3, NULL, 0, 2, (const char *[]){ U0, U2, NULL });
        devs[2].numa = 1;
}

static void test_preferred_must_include(void **state) {
        const char *avail[] = { U0, U1, U2, U3 };
        const char *must[] = { U3 };
        const char *must2[] = { U2, U0 };

        (void) state;
        /* must U3 (node 1): its neighbour U2 before the lower U0 */
        check_preferred(1, avail, 4, must, 1, 2, (const char *[]){ U3, U2, NULL });
        /* must on two nodes: must first, then the lowest index */
        check_preferred(1, avail, 4, must2, 2, 3, (const char *[]){ U2, U0, U1, NULL });
        /* must alone fills the size */
        check_preferred(1, avail, 4, must2, 2, 2, (const char *[]){ U2, U0, NULL });
        /* must not listed in available still counts */
        check_preferred(1, avail + 1, 2, (const char *[]){ U0 }, 1, 2, (const char *[]){ U0, U1, NULL });
}

static void test_preferred_replicas(void **state) {
        const char *avail[] = { U0 "::0", U0 "::1", U1 "::0", U1 "::1", U1 "::2", U2 "::0", U2 "::1", U3 "::0" };
        const char *must[] = { U2 "::1" };

        (void) state;
        /* fewest GPUs: three replicas fit on U1 alone */
        check_preferred(3, avail, 8, NULL, 0, 3, (const char *[]){ U1 "::0", U1 "::1", U1 "::2", NULL });
        /* two fit on U0 (lowest index that fits) */
        check_preferred(3, avail, 8, NULL, 0, 2, (const char *[]){ U0 "::0", U0 "::1", NULL });
        /* must U2::1: its GPU's other replica first, then its NUMA node */
        check_preferred(3, avail, 8, must, 1, 2, (const char *[]){ U2 "::1", U2 "::0", NULL });
        check_preferred(3, avail, 8, must, 1, 3, (const char *[]){ U2 "::1", U2 "::0", U3 "::0", NULL });
        /* four on node 0: U1's three and one of U0 (two GPUs) */
        check_preferred(3, avail, 8, NULL, 0, 4, (const char *[]){ U1 "::0", U1 "::1", U1 "::2", U0 "::0", NULL });
}

static void test_preferred_impossible(void **state) {
        const char *avail[] = { U0, U1 };
        const char **got = NULL;
        CubError err = { 0 };

        (void) state;
        assert_int_equal(gpu_preferred(devs, 4, 1, avail, 2, NULL, 0, 3, &got, &err), -EINVAL);
        assert_string_equal(err.msg, "cannot choose 3 devices: 0 must-include and 2 more available");
        assert_int_equal(gpu_preferred(devs, 4, 1, avail, 2, NULL, 0, 0, &got, &err), -EINVAL);
        assert_int_equal(gpu_preferred(devs, 4, 1, avail, 2, NULL, 0, -1, &got, &err), -EINVAL);
        assert_int_equal(gpu_preferred(devs, 4, 1, avail, 2, avail, 2, 1, &got, &err), -EINVAL);
        assert_string_equal(err.msg, "2 must-include devices exceed the allocation size 1");
        assert_int_equal(gpu_preferred(devs, 4, 1, (const char *[]){ "GPU-x" }, 1, NULL, 0, 1, &got, &err), -EINVAL);
        assert_string_equal(err.msg, "unknown device ID 'GPU-x'");
        /* replica IDs without --replicas are unknown */
        assert_int_equal(gpu_preferred(devs, 4, 1, (const char *[]){ U0 "::0" }, 1, NULL, 0, 1, &got, &err), -EINVAL);
        assert_null(got);
}

static void test_xid(void **state) {
        static const unsigned long long ignored[] = { 13, 31, 43, 45, 68, 94, 109 };
        GpuXidPolicy p;

        (void) state;
        gpu_xid_policy_default(&p);
        for (size_t i = 0; i < ELEMENTSOF(ignored); i++)
                assert_false(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, ignored[i]));
        assert_true(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 79));
        assert_true(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 48));
        assert_true(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 999));
        assert_true(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL | 0x2, 95));
        /* ECC and other events are not acted upon */
        assert_false(gpu_xid_is_critical(&p, 0x2, 79));
        assert_false(gpu_xid_is_critical(&p, 0x1, 0));
}

static void test_xid_policy(void **state) {
        CubError err = { 0 };
        GpuXidPolicy p;

        (void) state;
        /* --health-ignore-xids replaces the list */
        gpu_xid_policy_default(&p);
        assert_int_equal(gpu_xid_policy_parse(&p, "48, 79", &err), 0);
        assert_int_equal(p.n_ignored, 2);
        assert_false(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 48));
        assert_true(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 13));
        assert_int_equal(gpu_xid_policy_parse(&p, "none", &err), 0);
        assert_int_equal(p.n_ignored, 0);
        assert_true(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 94));
        /* a bad item: named, the policy unchanged */
        assert_int_equal(gpu_xid_policy_parse(&p, "13,x1", &err), -EINVAL);
        assert_string_equal(err.msg, "--health-ignore-xids '13,x1': 'x1' is not an XID (a number from 1)");
        assert_int_equal(gpu_xid_policy_parse(&p, "0", &err), -EINVAL);
        assert_int_equal(p.n_ignored, 0);

        /* NVIDIA's variables */
        gpu_xid_policy_default(&p);
        assert_int_equal(gpu_xid_policy_env(&p, "79", "13,94", &err), 0);
        assert_false(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 79));
        assert_true(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 13));
        assert_true(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 94));
        assert_false(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 31));
        assert_int_equal(gpu_xid_policy_env(&p, NULL, "all", &err), 0);
        assert_true(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 31));
        assert_int_equal(gpu_xid_policy_env(&p, "all", NULL, &err), 0);
        assert_false(gpu_xid_is_critical(&p, GPU_EVENT_XID_CRITICAL, 79));
        gpu_xid_policy_default(&p);
        assert_int_equal(gpu_xid_policy_env(&p, "", "", &err), 0);
        assert_int_equal(p.n_ignored, GPU_DEFAULT_IGNORED_XIDS);
        assert_int_equal(gpu_xid_policy_env(&p, "13,-4", NULL, &err), -EINVAL);
        assert_string_equal(err.msg, "DP_DISABLE_HEALTHCHECKS '13,-4': '-4' is not an XID (a number from 1)");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_id_parse),
                cmocka_unit_test(test_id_format),
                cmocka_unit_test(test_id_lookup),
                cmocka_unit_test(test_visible_devices),
                cmocka_unit_test(test_alloc_container),
                cmocka_unit_test(test_preferred_lowest_index),
                cmocka_unit_test(test_preferred_numa),
                cmocka_unit_test(test_preferred_must_include),
                cmocka_unit_test(test_preferred_replicas),
                cmocka_unit_test(test_preferred_impossible),
                cmocka_unit_test(test_xid),
                cmocka_unit_test(test_xid_policy),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
