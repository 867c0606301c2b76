/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU manager's reconcile through the loop (issue: a sidecar kept a
 * stale shared pool): a pod's containers created by a sync whose configs
 * were taken before the shared pool changed, or running beside a sync that
 * creates others, get the pool as it is now (an UPDATE job), as kubelet's
 * reconcileState brings every running container to its assignment. Static
 * CPU manager on a topology of the test's own (4 CPUs, CPU 0 reserved). */
#include "loop-fixture.h"

static void write_file(const char *dir, const char *name, const char *text) {
        _cleanup_free_ char *path = NULL;
        CubError err = {};

        assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
        if (cub_write_file_atomic(path, text, strlen(text), 0644, &err) < 0)
                fail_msg("%s", err.msg);
}

/* a sysfs of 4 CPUs, one core each, one socket */
static void fake_sys(Fixture *f) {
        _cleanup_free_ char *root = NULL;

        assert_true(asprintf(&root, "%s/sys", f->dir) > 0);
        for (int c = 0; c < 4; c++) {
                _cleanup_free_ char *d = NULL;
                char id[16];

                assert_true(asprintf(&d, "%s/devices/system/cpu/cpu%d/topology", root, c) > 0);
                assert_int_equal(cub_mkdir_p(d, 0755), 0);
                (void) snprintf(id, sizeof(id), "%d\n", c);
                write_file(d, "core_id", id);
                write_file(d, "physical_package_id", "0\n");
        }
        {
                _cleanup_free_ char *d = NULL;

                assert_true(asprintf(&d, "%s/devices/system/cpu", root) > 0);
                write_file(d, "online", "0-3\n");
        }
        f->o.sys_root = TAKE_PTR(root);
        f->o.kc.cpu_manager_policy = POD_CPU_MANAGER_STATIC;
        assert_non_null(f->o.kc.reserved_system_cpus = strdup("0"));
}

/* two containers in the shared pool */
static const char SHARED[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: two, namespace: default}\n"
                             "spec:\n  containers:\n"
                             "  - {name: a, image: busybox, resources: {requests: {cpu: 100m}}}\n"
                             "  - {name: b, image: busybox, resources: {requests: {cpu: 100m}}}\n";
/* a whole CPU of its own */
static const char EXCLUSIVE[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: pinned, namespace: default}\n"
                                "spec:\n  containers:\n"
                                "  - name: app\n    image: busybox\n"
                                "    resources: {limits: {cpu: '1', memory: 64Mi}}\n";

/* a relist's answer: p observed with the containers named in running */
static void answer_relist_running(Agent *a, const LcPod *p, const char *const *running, size_t n) {
        WorkerJob *j = take_submitted(a->core.pool, WORKER_RELIST);
        WorkerObserved *o = calloc(1, sizeof(*o));

        assert_non_null(j);
        assert_non_null(o);
        o->uid = strdup(p->spec->pod->uid);
        o->config_hash = strdup(p->spec->pod->config_hash);
        o->name = strdup("two-node1");
        o->namespace_ = strdup("default");
        o->cgroup = strdup(p->spec->cgroup.path);
        o->grace = 30;
        o->ready = true;
        o->containers = calloc(n + 1, sizeof(WorkerContainer));
        assert_non_null(o->containers);
        for (size_t i = 0; i < n; i++)
                o->containers[i] = (WorkerContainer){ .id = strdup(running[i]),
                                                      .name = strdup(running[i]),
                                                      .state = CRI_CONTAINER_RUNNING,
                                                      .started_at = 1 };
        o->n_containers = n;
        j->observed = o;
        j->n_observed = 1;
        answer(a, j);
}

static LcPod *pod_named(Agent *a, const char *name) {
        for (size_t i = 0; i < a->table.n_pods; i++)
                if (strcmp(a->table.pods[i]->spec->pod->name, name) == 0)
                        return a->table.pods[i];
        return NULL;
}

/* the oldest job of kind for p (NULL: none), out of the list */
static WorkerJob *take_job_of(Agent *a, WorkerJobKind kind, const LcPod *p) {
        for (WorkerJob **l = &a->core.pool->submitted; *l; l = &(*l)->next)
                if ((*l)->kind == kind && (*l)->spec == p->spec) {
                        WorkerJob *j = *l;

                        *l = j->next;
                        j->next = NULL;
                        return j;
                }
        return NULL;
}

static void run_events(Agent *a, bool (*done)(Agent *)) {
        for (int i = 0; i < 32 && !done(a); i++)
                assert_true(sd_event_run(a->core.event, 100000) >= 0);
}

static bool pinned_admitted(Agent *a) {
        LcPod *p = pod_named(a, "pinned-node1");

        return p && p->admitted;
}

/* The sequence of the report: a's sync is in flight with the full pool when
 * another pod takes a CPU of its own; a's containers come up one sync after
 * another (b in a second sync, submitted by the relist that found a
 * running). a, created with the old pool, must get the new one. */
static void test_pool_change_reaches_running_containers(void **state) {
        Fixture *f = *state;
        Agent *a = NULL;
        CubError err = {};
        WorkerJob *j, *u;
        LcPod *two, *pinned;
        const char *only_a[] = { "a" }, *both[] = { "a", "b" };

        fake_sys(f);
        write_manifest(f, "two.yaml", SHARED);
        if (agent_new(&f->o, &a, &err) < 0)
                fail_msg("agent_new: %s", err.msg);
        two = pod_named(a, "two-node1");
        assert_non_null(two);
        assert_true(two->admitted && two->busy);
        j = take_job_of(a, WORKER_SYNC, two);
        assert_non_null(j);
        assert_string_equal(j->configs[0].cpuset, "0-3"); /* the whole shared pool */

        /* while it is in flight, pinned takes a CPU of its own */
        write_manifest(f, "pinned.yaml", EXCLUSIVE);
        run_events(a, pinned_admitted);
        pinned = pod_named(a, "pinned-node1");
        assert_non_null(pinned);
        assert_true(pinned->admitted);
        assert_string_equal(pinned->spec->pod->name, "pinned-node1");
        assert_null(take_job_of(a, WORKER_UPDATE, two)); /* busy: no update now */

        /* the first sync made a (its config: the old pool); the relist finds
         * a running and b not yet there: a second sync for b */
        j->r = 0;
        answer(a, j);
        answer_relist_running(a, two, only_a, 1);
        j = take_job_of(a, WORKER_SYNC, two);
        assert_non_null(j);
        assert_string_equal(j->configs[1].cpuset, "0,2-3"); /* b: the pool as it is now */
        j->r = 0;
        answer(a, j);

        /* both run: a still has the old pool, and gets the new one */
        while (count_submitted(a->core.pool, WORKER_RELIST) > 0)
                answer_relist_running(a, two, both, 2);
        u = take_job_of(a, WORKER_UPDATE, two);
        if (!u)
                fail_msg("no UPDATE job for the pod whose container 'a' runs with the old pool 0-3");
        assert_string_equal(u->configs[0].cpuset, "0,2-3");
        assert_string_equal(u->configs[1].cpuset, "0,2-3");
        u->r = 0;
        answer(a, u);
        /* done: nothing more to send */
        while (count_submitted(a->core.pool, WORKER_RELIST) > 0)
                answer_relist_running(a, two, both, 2);
        assert_null(take_job_of(a, WORKER_UPDATE, two));
        agent_free(a);
}

/* The reconcile period alone: the pool changes while a's sync is in
 * flight, the relist that finds a running comes while b's sync is in
 * flight, and no relist answers after b's; the cpuManagerReconcilePeriod
 * tick (100 ms here) sends the UPDATE with the pool as it is now. */
static bool update_submitted(Agent *a) {
        return count_submitted(a->core.pool, WORKER_UPDATE) > 0;
}

static void test_reconcile_period(void **state) {
        Fixture *f = *state;
        Agent *a = NULL;
        CubError err = {};
        WorkerJob *j, *u;
        LcPod *two;
        const char *only_a[] = { "a" };

        fake_sys(f);
        f->o.cpu_reconcile_usec = 100000;
        write_manifest(f, "two.yaml", SHARED);
        if (agent_new(&f->o, &a, &err) < 0)
                fail_msg("agent_new: %s", err.msg);
        two = pod_named(a, "two-node1");
        assert_non_null(two);
        j = take_job_of(a, WORKER_SYNC, two);
        assert_non_null(j);
        assert_string_equal(j->configs[0].cpuset, "0-3");
        write_manifest(f, "pinned.yaml", EXCLUSIVE);
        run_events(a, pinned_admitted);
        j->r = 0;
        answer(a, j);
        answer_relist_running(a, two, only_a, 1); /* a runs (old pool); b's sync goes out */
        j = take_job_of(a, WORKER_SYNC, two);
        assert_non_null(j);
        assert_null(take_job_of(a, WORKER_UPDATE, two)); /* busy */
        j->r = 0;
        answer(a, j);
        /* no relist is answered from here: the period's tick alone */
        run_events(a, update_submitted);
        u = take_job_of(a, WORKER_UPDATE, two);
        if (!u)
                fail_msg("no UPDATE job within the reconcile period for container 'a' on the old pool 0-3");
        assert_string_equal(u->configs[0].cpuset, "0,2-3");
        u->r = 0;
        answer(a, u);
        agent_free(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_pool_change_reaches_running_containers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reconcile_period, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
