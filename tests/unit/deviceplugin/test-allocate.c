/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deviceplugin: the allocation pass with fake plugin calls (dp_manager_set_ops)
 * on a manager in a mkdtemp directory: init-container reuse, sidecars,
 * all-or-nothing rollback, kubelet's messages, preferred answers, adoption,
 * release. No plugin process is involved.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "deviceplugin/dp-internal.h"

typedef struct Fake {
        unsigned n_allocate, n_preferred;
        const char *fail_resource; /* Allocate fails for it */
        const char *const *preferred;
        size_t n_preferred_ids;
        char last_ids[256];
} Fake;

static int fake_preferred(void *ud, DpManager *m, const DpResource *r, const char *const *avail, size_t n_avail,
                          const char *const *must, size_t n_must, size_t size, char ***ret, size_t *ret_n,
                          CubError *err) {
        Fake *f = ud;

        (void) m, (void) r, (void) avail, (void) n_avail, (void) must, (void) n_must, (void) size, (void) err;
        f->n_preferred++;
        assert_int_equal(dp_strv_copy_sorted(f->preferred, f->n_preferred_ids, ret), 0);
        *ret_n = f->n_preferred_ids;
        return 0;
}

static int fake_allocate(void *ud, DpManager *m, const DpResource *r, const char *const *ids, size_t n,
                         DpContainerResponse *ret, CubError *err) {
        Fake *f = ud;
        size_t k = 0;

        (void) m;
        f->n_allocate++;
        if (f->fail_resource && strcmp(r->name, f->fail_resource) == 0)
                return cub_err_set(err, EIO, "boom from %s", r->name);
        f->last_ids[0] = 0;
        for (size_t i = 0; i < n; i++)
                k += (size_t) snprintf(f->last_ids + k, sizeof(f->last_ids) - k, "%s%s", i ? "," : "", ids[i]);
        *ret = (DpContainerResponse){};
        ret->envs = calloc(1, sizeof(DpKeyValue));
        ret->envs[0].key = strdup("IDS");
        ret->envs[0].value = strdup(f->last_ids);
        ret->n_envs = 1;
        ret->raw = malloc(1);
        ret->raw_len = 0;
        return 0;
}

static const DpPluginOps fake_ops = { .preferred = fake_preferred, .allocate = fake_allocate };

typedef struct T {
        char dir[64];
        DpManager *m;
        Fake fake;
} T;

static DpDevice dev(const char *id, int numa, bool healthy) {
        DpDevice d = { .healthy = healthy, .numa = numa };

        (void) snprintf(d.id, sizeof(d.id), "%s", id);
        return d;
}

static void add_resource(T *t, const char *name, const DpDevice *d, size_t n) {
        assert_true(dp_manager_set_devices(t->m, name, d, n, true) >= 0);
        dp_manager_res(t->m, name)->pub.registered_usec = 1;
}

static int setup(void **state) {
        T *t = calloc(1, sizeof(*t));
        CubError err = {};
        DpDevice gpus[] = { dev("g0", 0, true), dev("g1", 0, true), dev("g2", 1, true), dev("g3", 1, false) };

        (void) snprintf(t->dir, sizeof(t->dir), "/tmp/dp-test-XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        if (dp_manager_new(&(DpManagerOptions){ .dir = t->dir }, &t->m, &err) < 0)
                fail_msg("dp_manager_new: %s", err.msg);
        dp_manager_set_ops(t->m, &fake_ops, &t->fake);
        add_resource(t, "x.com/gpu", gpus, 4);
        *state = t;
        return 0;
}

static int teardown(void **state) {
        T *t = *state;
        char path[128];

        dp_manager_free(t->m);
        (void) snprintf(path, sizeof(path), "%s/%s", t->dir, DP_CHECKPOINT_FILE);
        (void) unlink(path);
        (void) rmdir(t->dir);
        free(t);
        return 0;
}

static const DpAllocation *get(T *t, const char *pod, const char *c, const char *res) {
        for (size_t i = 0; i < dp_manager_n_allocations(t->m); i++) {
                const DpAllocation *a = dp_manager_allocation(t->m, i);

                if (strcmp(a->pod_uid, pod) == 0 && strcmp(a->container, c) == 0 && strcmp(a->resource, res) == 0)
                        return a;
        }
        return NULL;
}

static void assert_ids(const DpAllocation *a, const char *joined) {
        char buf[256] = "";
        size_t k = 0;

        assert_non_null(a);
        for (size_t i = 0; i < a->n_ids; i++)
                k += (size_t) snprintf(buf + k, sizeof(buf) - k, "%s%s", i ? "," : "", a->ids[i]);
        assert_string_equal(buf, joined);
}

#define RES1 ((const char *const[]){ "x.com/gpu" })

static void test_init_reuse(void **state) {
        T *t = *state;
        CubError err = {};
        DpContainerRequest cs[] = {
                { .name = "init", .init = true, .resources = RES1, .counts = (const int64_t[]){ 2 }, .n_resources = 1 },
                { .name = "app", .resources = RES1, .counts = (const int64_t[]){ 1 }, .n_resources = 1 },
                { .name = "app2", .resources = RES1, .counts = (const int64_t[]){ 1 }, .n_resources = 1 },
        };

        if (dp_manager_allocate_pod(t->m, "pod-a", cs, 3, &err) < 0)
                fail_msg("%s", err.msg);
        /* the init container takes node 0; the app containers reuse its devices */
        assert_ids(get(t, "pod-a", "init", "x.com/gpu"), "g0,g1");
        assert_ids(get(t, "pod-a", "app", "x.com/gpu"), "g0");
        assert_ids(get(t, "pod-a", "app2", "x.com/gpu"), "g1");
        assert_int_equal(t->fake.n_allocate, 3);
        /* one healthy device left: g2 (g3 is unhealthy) */
        char **ids = NULL;
        size_t n = 0;
        assert_int_equal(dp_manager_free_devices(t->m, "x.com/gpu", &ids, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(ids[0], "g2");
        dp_strv_free(ids, n);

        /* again (a restart): the held devices, no new Allocate */
        assert_int_equal(dp_manager_allocate_pod(t->m, "pod-a", cs, 3, &err), 0);
        assert_int_equal(t->fake.n_allocate, 3);

        /* a changed count is refused */
        DpContainerRequest changed = {
                .name = "app", .resources = RES1, .counts = (const int64_t[]){ 2 }, .n_resources = 1
        };
        assert_int_equal(dp_manager_allocate_pod(t->m, "pod-a", &changed, 1, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "changed request for resource x.com/gpu from 1 to 2"));

        assert_int_equal(dp_manager_release_pod(t->m, "pod-a", &err), 0);
        assert_int_equal(dp_manager_n_allocations(t->m), 0);
        assert_int_equal(dp_manager_release_pod(t->m, "pod-a", &err), 0);
}

static void test_sidecar_keeps(void **state) {
        T *t = *state;
        CubError err = {};
        DpContainerRequest cs[] = {
                { .name = "sidecar",
                  .init = true,
                  .restartable = true,
                  .resources = RES1,
                  .counts = (const int64_t[]){ 1 },
                  .n_resources = 1 },
                { .name = "app", .resources = RES1, .counts = (const int64_t[]){ 1 }, .n_resources = 1 },
        };

        if (dp_manager_allocate_pod(t->m, "pod-s", cs, 2, &err) < 0)
                fail_msg("%s", err.msg);
        const DpAllocation *s = get(t, "pod-s", "sidecar", "x.com/gpu"), *a = get(t, "pod-s", "app", "x.com/gpu");
        assert_non_null(s);
        assert_non_null(a);
        assert_string_not_equal(s->ids[0], a->ids[0]);
}

static void test_unavailable_rolls_back(void **state) {
        T *t = *state;
        CubError err = {};
        DpContainerRequest cs[] = {
                { .name = "a", .resources = RES1, .counts = (const int64_t[]){ 2 }, .n_resources = 1 },
                { .name = "b", .resources = RES1, .counts = (const int64_t[]){ 2 }, .n_resources = 1 },
        };

        assert_int_equal(dp_manager_allocate_pod(t->m, "pod-u", cs, 2, &err), -ENOSPC);
        assert_string_equal(err.msg, "Requested number of devices unavailable for x.com/gpu. Requested: 2, "
                                     "Available: 1");
        /* all or nothing: container a's devices went back */
        assert_int_equal(dp_manager_n_allocations(t->m), 0);
}

static void test_allocate_failure_rolls_back(void **state) {
        T *t = *state;
        CubError err = {};
        DpDevice nics[] = { dev("n0", -1, true) };
        DpContainerRequest cs[] = {
                { .name = "a", .resources = RES1, .counts = (const int64_t[]){ 1 }, .n_resources = 1 },
                { .name = "b",
                  .resources = (const char *const[]){ "y.com/nic" },
                  .counts = (const int64_t[]){ 1 },
                  .n_resources = 1 },
        };

        add_resource(t, "y.com/nic", nics, 1);
        t->fake.fail_resource = "y.com/nic";
        assert_int_equal(dp_manager_allocate_pod(t->m, "pod-f", cs, 2, &err), -EIO);
        assert_string_equal(err.msg, "Allocate failed due to boom from y.com/nic, which is unexpected");
        assert_int_equal(dp_manager_n_allocations(t->m), 0);

        DpContainerRequest unknown = { .name = "c",
                                       .resources = (const char *const[]){ "z.com/none" },
                                       .counts = (const int64_t[]){ 1 },
                                       .n_resources = 1 };
        assert_int_equal(dp_manager_allocate_pod(t->m, "pod-f", &unknown, 1, &err), -ENODEV);
        assert_string_equal(err.msg, "Resource z.com/none has no registered device plugin");
}

static void test_preferred(void **state) {
        T *t = *state;
        CubError err = {};
        DpContainerRequest c = { .name = "a", .resources = RES1, .counts = (const int64_t[]){ 2 }, .n_resources = 1 };

        dp_manager_res(t->m, "x.com/gpu")->pub.preferred_allocation_available = true;
        t->fake.preferred = (const char *const[]){ "g2", "g0" };
        t->fake.n_preferred_ids = 2;
        assert_int_equal(dp_manager_allocate_pod(t->m, "pod-p", &c, 1, &err), 0);
        assert_int_equal(t->fake.n_preferred, 1);
        assert_ids(get(t, "pod-p", "a", "x.com/gpu"), "g0,g2");
        assert_string_equal(t->fake.last_ids, "g0,g2");

        /* an unusable answer (an unhealthy device): the own choice */
        t->fake.preferred = (const char *const[]){ "g3" };
        t->fake.n_preferred_ids = 1;
        c.counts = (const int64_t[]){ 1 };
        assert_int_equal(dp_manager_allocate_pod(t->m, "pod-q", &c, 1, &err), 0);
        assert_ids(get(t, "pod-q", "a", "x.com/gpu"), "g1");
}

static void test_adopt_and_retain(void **state) {
        T *t = *state;
        CubError err = {};
        const DpAllocation *const *v = NULL;
        size_t n = 0;

        assert_int_equal(dp_manager_adopt(t->m, "pod-1", "c", "x.com/gpu", (const char *const[]){ "g1" }, 1, &err), 0);
        assert_int_equal(dp_manager_adopt(t->m, "pod-2", "c", "x.com/gpu", (const char *const[]){ "g1" }, 1, &err),
                         -EBUSY);
        assert_non_null(strstr(err.msg, "held by pod pod-1"));
        assert_int_equal(dp_manager_adopt(t->m, "pod-2", "c", "x.com/gpu", (const char *const[]){ "g2" }, 1, &err), 0);
        assert_null(get(t, "pod-1", "c", "x.com/gpu")->resp.raw);

        /* the adopted allocation has no response: Allocate runs again */
        assert_int_equal(dp_manager_container_allocations(t->m, "pod-1", "c", &v, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_int_equal(t->fake.n_allocate, 1);
        assert_string_equal(v[0]->resp.envs[0].value, "g1");
        assert_non_null(v[0]->resp.raw);
        assert_int_equal(dp_manager_container_allocations(t->m, "pod-1", "none", &v, &n, &err), 0);
        assert_int_equal(n, 0);
        assert_null(v);

        assert_int_equal(dp_manager_retain_pods(t->m, (const char *const[]){ "pod-2" }, 1, &err), 0);
        assert_null(get(t, "pod-1", "c", "x.com/gpu"));
        assert_non_null(get(t, "pod-2", "c", "x.com/gpu"));
}

static void test_grace(void **state) {
        T *t = *state;
        DpRes *r = dp_manager_res(t->m, "x.com/gpu");

        r->pub.connected = false;
        r->pub.disconnected_usec = 1000;
        assert_int_equal(dp_resource_capacity(&r->pub), 4);
        assert_int_equal(dp_resource_allocatable(&r->pub), 0);
        assert_int_equal(dp_manager_expire(t->m, 1000 + DP_ENDPOINT_GRACE_USEC - 1), 0);
        assert_int_equal(dp_resource_capacity(&r->pub), 4);
        assert_int_equal(dp_manager_expire(t->m, 1000 + DP_ENDPOINT_GRACE_USEC), 1);
        assert_int_equal(dp_resource_capacity(&r->pub), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_init_reuse, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sidecar_keeps, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unavailable_rolls_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_allocate_failure_rolls_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_preferred, setup, teardown),
                cmocka_unit_test_setup_teardown(test_adopt_and_retain, setup, teardown),
                cmocka_unit_test_setup_teardown(test_grace, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
