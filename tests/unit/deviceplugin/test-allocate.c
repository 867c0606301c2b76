/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deviceplugin: the allocation pass with fake plugin calls (dp_manager_set_ops)
 * on a manager in a mkdtemp directory: init-container reuse, sidecars,
 * all-or-nothing rollback, kubelet's messages, preferred answers, adoption,
 * release; the pass's thread (pending reservations, the checkpoint only
 * after the answer) and PreStartContainer. No plugin process is involved:
 * the fakes run on the pass's thread, the test waits on the manager's fd.
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
#include <poll.h>
#include <pthread.h>

#include "deviceplugin/dp-internal.h"

typedef struct Fake {
        unsigned n_allocate, n_preferred, n_pre_start;
        const char *fail_resource; /* Allocate fails for it */
        const char *const *preferred;
        size_t n_preferred_ids;
        char last_ids[256];
        char last_target[256];
        /* gate: Allocate waits until it opens */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool gated, in_allocate;
} Fake;

static int fake_preferred(void *ud, const DpCall *c, const char *const *avail, size_t n_avail, const char *const *must,
                          size_t n_must, size_t size, char ***ret, size_t *ret_n, CubError *err) {
        Fake *f = ud;

        (void) c, (void) avail, (void) n_avail, (void) must, (void) n_must, (void) size, (void) err;
        f->n_preferred++;
        if (dp_strv_copy_sorted(f->preferred, f->n_preferred_ids, ret) < 0)
                return -ENOMEM;
        *ret_n = f->n_preferred_ids;
        return 0;
}

static int fake_allocate(void *ud, const DpCall *c, const char *const *ids, size_t n, DpContainerResponse *ret,
                         CubError *err) {
        Fake *f = ud;
        size_t k = 0;

        pthread_mutex_lock(&f->lock);
        f->in_allocate = true;
        pthread_cond_broadcast(&f->cond);
        while (f->gated)
                pthread_cond_wait(&f->cond, &f->lock);
        f->in_allocate = false;
        pthread_mutex_unlock(&f->lock);
        f->n_allocate++;
        (void) snprintf(f->last_target, sizeof(f->last_target), "%s", c->target);
        if (f->fail_resource && strcmp(c->resource, f->fail_resource) == 0)
                return cub_err_set(err, EIO, "boom from %s", c->resource);
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

static int fake_pre_start(void *ud, const DpCall *c, const char *const *ids, size_t n, CubError *err) {
        Fake *f = ud;

        (void) ids, (void) n;
        f->n_pre_start++;
        assert_int_equal(c->timeout_usec, DP_PRE_START_TIMEOUT_USEC);
        if (f->fail_resource && strcmp(c->resource, f->fail_resource) == 0)
                return cub_err_set(err, ETIMEDOUT, "DEADLINE_EXCEEDED (4)");
        return 0;
}

static const DpPluginOps fake_ops = { .preferred = fake_preferred, .allocate = fake_allocate, .pre_start = fake_pre_start };

typedef struct T {
        char dir[64];
        DpManager *m;
        Fake fake;
        /* on_allocated */
        bool done;
        int done_r;
        char done_msg[CUB_ERR_MSG_MAX];
        char done_uid[64];
} T;

static void on_allocated(void *ud, const char *uid, int r, const char *message, uint64_t took_usec) {
        T *t = ud;

        (void) took_usec;
        t->done = true;
        t->done_r = r;
        (void) snprintf(t->done_msg, sizeof(t->done_msg), "%s", message);
        (void) snprintf(t->done_uid, sizeof(t->done_uid), "%s", uid);
}

/* Dispatches until the pass's answer came. */
static void wait_done(T *t) {
        t->done = false;
        while (!t->done) {
                struct pollfd p = { .fd = dp_manager_fd(t->m), .events = POLLIN };

                assert_int_equal(poll(&p, 1, 10000), 1);
                (void) dp_manager_dispatch(t->m);
        }
}

/* The pass, and its thread's answer when it is pending. */
static int alloc_wait(T *t, const char *uid, const DpContainerRequest *cs, size_t n, CubError *err) {
        int r = dp_manager_allocate_pod(t->m, uid, cs, n, err);

        if (r <= 0)
                return r;
        assert_int_equal(r, 1);
        wait_done(t);
        assert_string_equal(t->done_uid, uid);
        if (t->done_r < 0)
                return cub_err_set(err, -t->done_r, "%s", t->done_msg);
        return 0;
}

static DpDevice dev(const char *id, int numa, bool healthy) {
        DpDevice d = { .healthy = healthy, .numa = numa };

        (void) snprintf(d.id, sizeof(d.id), "%s", id);
        return d;
}

static void add_resource(T *t, const char *name, const DpDevice *d, size_t n) {
        DpRes *r;

        assert_true(dp_manager_set_devices(t->m, name, d, n, true) >= 0);
        r = dp_manager_res(t->m, name);
        r->pub.registered_usec = 1;
        free(r->pub.endpoint);
        r->pub.endpoint = strdup("fake.sock");
}

static int setup(void **state) {
        T *t = calloc(1, sizeof(*t));
        CubError err = {};
        DpDevice gpus[] = { dev("g0", 0, true), dev("g1", 0, true), dev("g2", 1, true), dev("g3", 1, false) };

        (void) snprintf(t->dir, sizeof(t->dir), "/tmp/dp-test-XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        pthread_mutex_init(&t->fake.lock, NULL);
        pthread_cond_init(&t->fake.cond, NULL);
        if (dp_manager_new(&(DpManagerOptions){ .dir = t->dir, .on_allocated = on_allocated, .userdata = t }, &t->m,
                           &err) < 0)
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
        pthread_mutex_destroy(&t->fake.lock);
        pthread_cond_destroy(&t->fake.cond);
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

        if (alloc_wait(t, "pod-a", cs, 3, &err) < 0)
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

        if (alloc_wait(t, "pod-s", cs, 2, &err) < 0)
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
        assert_int_equal(alloc_wait(t, "pod-f", cs, 2, &err), -EIO);
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
        assert_int_equal(alloc_wait(t, "pod-p", &c, 1, &err), 0);
        assert_int_equal(t->fake.n_preferred, 1);
        assert_ids(get(t, "pod-p", "a", "x.com/gpu"), "g0,g2");
        assert_string_equal(t->fake.last_ids, "g0,g2");

        /* an unusable answer (an unhealthy device): the own choice */
        t->fake.preferred = (const char *const[]){ "g3" };
        t->fake.n_preferred_ids = 1;
        c.counts = (const int64_t[]){ 1 };
        assert_int_equal(alloc_wait(t, "pod-q", &c, 1, &err), 0);
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


static bool checkpoint_has(T *t, const char *needle) {
        char path[128], buf[8192] = "";
        FILE *f;
        size_t n;

        (void) snprintf(path, sizeof(path), "%s/%s", t->dir, DP_CHECKPOINT_FILE);
        f = fopen(path, "re");
        if (!f)
                return false;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
        return strstr(buf, needle) != NULL;
}

static void test_pending_pass(void **state) {
        T *t = *state;
        CubError err = {};
        DpContainerRequest c = { .name = "a", .resources = RES1, .counts = (const int64_t[]){ 2 }, .n_resources = 1 };
        DpContainerRequest c2 = { .name = "b", .resources = RES1, .counts = (const int64_t[]){ 2 }, .n_resources = 1 };
        const DpAllocation *const *v = NULL;
        size_t n = 0;

        /* the plugin does not answer yet: the pass returns at once, pending */
        t->fake.gated = true;
        assert_int_equal(dp_manager_allocate_pod(t->m, "pod-w", &c, 1, &err), 1);
        assert_true(dp_manager_pod_pending(t->m, "pod-w"));
        pthread_mutex_lock(&t->fake.lock);
        while (!t->fake.in_allocate)
                pthread_cond_wait(&t->fake.cond, &t->fake.lock);
        pthread_mutex_unlock(&t->fake.lock);
        /* its devices are reserved: never handed to another pod meanwhile */
        assert_true(get(t, "pod-w", "a", "x.com/gpu")->pending);
        assert_ids(get(t, "pod-w", "a", "x.com/gpu"), "g0,g1");
        assert_int_equal(dp_manager_allocate_pod(t->m, "pod-x", &c2, 1, &err), -ENOSPC);
        assert_string_equal(err.msg, "Requested number of devices unavailable for x.com/gpu. Requested: 2, "
                                     "Available: 1");
        /* asked again (a second admission): still pending, no second pass */
        assert_int_equal(dp_manager_allocate_pod(t->m, "pod-w", &c, 1, &err), 1);
        /* no response yet: no container config, and not in the checkpoint */
        assert_int_equal(dp_manager_container_allocations(t->m, "pod-w", "a", &v, &n, &err), -EINPROGRESS);
        assert_int_equal(dp_manager_release_pod(t->m, "pod-none", &err), 0);
        assert_false(checkpoint_has(t, "pod-w"));

        pthread_mutex_lock(&t->fake.lock);
        t->fake.gated = false;
        pthread_cond_broadcast(&t->fake.cond);
        pthread_mutex_unlock(&t->fake.lock);
        wait_done(t);
        assert_int_equal(t->done_r, 0);
        assert_string_equal(t->done_uid, "pod-w");
        assert_false(dp_manager_pod_pending(t->m, "pod-w"));
        assert_false(get(t, "pod-w", "a", "x.com/gpu")->pending);
        assert_true(checkpoint_has(t, "pod-w"));
        {
                char want[128];

                (void) snprintf(want, sizeof(want), "unix://%s/fake.sock", t->dir);
                assert_string_equal(t->fake.last_target, want);
        }
}

static void test_pre_start(void **state) {
        T *t = *state;
        CubError err = {};
        DpContainerRequest c = { .name = "a", .resources = RES1, .counts = (const int64_t[]){ 1 }, .n_resources = 1 };
        DpPreStart *ps = NULL;

        assert_int_equal(alloc_wait(t, "pod-s", &c, 1, &err), 0);
        /* the plugin does not ask for it: nothing to run */
        assert_int_equal(dp_manager_pre_start_prepare(t->m, "pod-s", "a", &ps, &err), 0);
        assert_null(ps);
        dp_manager_res(t->m, "x.com/gpu")->pub.pre_start_required = true;
        assert_int_equal(dp_manager_pre_start_prepare(t->m, "pod-s", "a", &ps, &err), 0);
        assert_non_null(ps);
        /* the manager may change meanwhile: the capture is the worker's own */
        assert_int_equal(dp_manager_release_pod(t->m, "pod-s", &err), 0);
        assert_int_equal(dp_pre_start_run(ps, &err), 0);
        assert_int_equal(t->fake.n_pre_start, 1);
        t->fake.fail_resource = "x.com/gpu";
        assert_int_equal(dp_pre_start_run(ps, &err), -ETIMEDOUT);
        assert_non_null(strstr(err.msg, "PreStartContainer of x.com/gpu at device plugin 'unix://"));
        assert_non_null(strstr(err.msg, "/fake.sock' failed: DEADLINE_EXCEEDED (4)"));
        dp_pre_start_free(ps);
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
                cmocka_unit_test_setup_teardown(test_pending_pass, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pre_start, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
