/* SPDX-License-Identifier: Apache-2.0 */
/* What the tests of agent/loop as a whole share (test-loop.c,
 * test-loop-cpu.c): a fake worker pool (the linker sends the loop's
 * worker_pool_* calls here, -Wl,--wrap, see the Makefile; jobs wait in a
 * list and the test answers them as the runtime would), a fake cgroup
 * writer that records the groups written, and a fixture (a manifest
 * directory, state and cgroup root of the test's own). Included by one
 * file per test binary. */
#pragma once
#pragma GCC diagnostic ignored "-Wunused-function"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "agent/loop/agent-internal.h"
#include "agent/util/cleanup.h"
#include "agent/util/fileio.h"

/* ---- the fake pool ----------------------------------------------------------- */

struct WorkerPool {
        int efd;
        WorkerJob *submitted; /* in order */
        WorkerJob *done;
};

static WorkerPool *fake_pool; /* the pool of the agent under test */

int __wrap_worker_pool_new(unsigned n_threads, CriClient *cri, CgWriter *cg, WorkerPool **ret, int *ret_fd,
                           CubError *err);
void __wrap_worker_pool_submit(WorkerPool *p, WorkerJob *j);
WorkerJob *__wrap_worker_pool_take(WorkerPool *p);
WorkerPool *__wrap_worker_pool_free(WorkerPool *p);
int __wrap_worker_pool_check_runtime(WorkerPool *p, CubError *err);
int __wrap_worker_pool_set_node_env(WorkerPool *p, const WorkerNodeEnv *e);
int __wrap_worker_pool_set_network(WorkerPool *p, const WorkerNetwork *n, CubError *err);

int __wrap_worker_pool_new(unsigned n_threads, CriClient *cri, CgWriter *cg, WorkerPool **ret, int *ret_fd,
                           CubError *err) {
        WorkerPool *p = calloc(1, sizeof(*p));

        (void) n_threads;
        (void) cri;
        (void) cg;
        if (!p)
                return cub_err_set(err, ENOMEM, "out of memory");
        p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->efd < 0) {
                free(p);
                return cub_err_set(err, errno, "eventfd");
        }
        *ret = p;
        *ret_fd = p->efd;
        fake_pool = p;
        return 0;
}

static void append(WorkerJob **l, WorkerJob *j) {
        j->next = NULL;
        while (*l)
                l = &(*l)->next;
        *l = j;
}

void __wrap_worker_pool_submit(WorkerPool *p, WorkerJob *j) {
        append(&p->submitted, j);
}

WorkerJob *__wrap_worker_pool_take(WorkerPool *p) {
        WorkerJob *l = p->done;
        uint64_t v;

        p->done = NULL;
        (void) read(p->efd, &v, sizeof(v));
        return l;
}

static void jobs_free(WorkerJob *l) {
        while (l) {
                WorkerJob *next = l->next;

                worker_job_free(l);
                l = next;
        }
}

WorkerPool *__wrap_worker_pool_free(WorkerPool *p) {
        if (!p)
                return NULL;
        jobs_free(p->submitted);
        jobs_free(p->done);
        (void) close(p->efd);
        if (fake_pool == p)
                fake_pool = NULL;
        free(p);
        return NULL;
}

int __wrap_worker_pool_check_runtime(WorkerPool *p, CubError *err) {
        (void) p;
        (void) err;
        return 0;
}

int __wrap_worker_pool_set_node_env(WorkerPool *p, const WorkerNodeEnv *e) {
        (void) p;
        (void) e;
        return 0;
}

int __wrap_worker_pool_set_network(WorkerPool *p, const WorkerNetwork *n, CubError *err) {
        (void) p;
        (void) n;
        (void) err;
        return 0;
}

static size_t count_submitted(WorkerPool *p, WorkerJobKind kind);

/* ---- the fake cgroup writer: the groups written, in order ---------------------- */

#define CG_WRITES_MAX 32

typedef struct CgWrite {
        char path[512];
        size_t syncs;                       /* sync jobs submitted when it was written */
        char memory_min[CG_FILE_VALUE_MAX]; /* its memory.min ("": none) */
} CgWrite;

static struct { int unused; } fake_writer;
static CgWrite cg_writes[CG_WRITES_MAX];
static size_t n_cg_writes;

int __wrap_cg_writer_new_driver(const char *cgroup_root, CgDriverKind driver, CgWriter **ret, CubError *err);
int __wrap_cg_writer_apply(CgWriter *w, const CgGroupValues *g, CubError *err);
CgWriter *__wrap_cg_writer_free(CgWriter *w);

int __wrap_cg_writer_new_driver(const char *cgroup_root, CgDriverKind driver, CgWriter **ret, CubError *err) {
        (void) cgroup_root;
        (void) driver;
        (void) err;
        n_cg_writes = 0;
        *ret = (CgWriter *) &fake_writer;
        return 0;
}

int __wrap_cg_writer_apply(CgWriter *w, const CgGroupValues *g, CubError *err) {
        (void) err;
        assert_ptr_equal(w, &fake_writer);
        assert_true(n_cg_writes < CG_WRITES_MAX);
        (void) snprintf(cg_writes[n_cg_writes].path, sizeof(cg_writes[n_cg_writes].path), "%s", g->path);
        (void) snprintf(cg_writes[n_cg_writes].memory_min, sizeof(cg_writes[n_cg_writes].memory_min), "%s",
                        cg_group_get(g, "memory.min") ? cg_group_get(g, "memory.min") : "");
        cg_writes[n_cg_writes++].syncs = fake_pool ? count_submitted(fake_pool, WORKER_SYNC) : 0;
        return 0;
}

CgWriter *__wrap_cg_writer_free(CgWriter *w) {
        (void) w;
        return NULL;
}

/* the index of the first write of path (-1: none) */
static int cg_written(const char *path) {
        for (size_t i = 0; i < n_cg_writes; i++)
                if (strcmp(cg_writes[i].path, path) == 0)
                        return (int) i;
        return -1;
}

/* the memory.min of the last write of path (NULL: never written) */
static const char *cg_last_min(const char *path) {
        for (size_t i = n_cg_writes; i > 0; i--)
                if (strcmp(cg_writes[i - 1].path, path) == 0)
                        return cg_writes[i - 1].memory_min;
        return NULL;
}

/* The oldest submitted job of kind (NULL: none), out of the list. */
static WorkerJob *take_submitted(WorkerPool *p, WorkerJobKind kind) {
        for (WorkerJob **l = &p->submitted; *l; l = &(*l)->next)
                if ((*l)->kind == kind) {
                        WorkerJob *j = *l;

                        *l = j->next;
                        j->next = NULL;
                        return j;
                }
        return NULL;
}

static size_t count_submitted(WorkerPool *p, WorkerJobKind kind) {
        size_t n = 0;

        for (WorkerJob *j = p->submitted; j; j = j->next)
                n += j->kind == kind;
        return n;
}

/* j answered: back to the loop through the eventfd and sd-event */
static void answer(Agent *a, WorkerJob *j) {
        uint64_t one = 1;

        append(&a->core.pool->done, j);
        assert_int_equal(write(a->core.pool->efd, &one, sizeof(one)), sizeof(one));
        /* other sources (the managers' timers) may come first */
        for (int i = 0; i < 16 && a->core.pool->done; i++)
                assert_true(sd_event_run(a->core.event, 0) >= 0);
        assert_null(a->core.pool->done);
}

/* a relist's answer: uid running with its config hash (or nothing) */
static void answer_relist(Agent *a, const char *uid, const char *hash) {
        WorkerJob *j = take_submitted(a->core.pool, WORKER_RELIST);
        WorkerObserved *o;

        assert_non_null(j);
        if (uid) {
                o = calloc(1, sizeof(*o));
                assert_non_null(o);
                o->uid = strdup(uid);
                o->config_hash = strdup(hash);
                o->name = strdup("web-node1");
                o->namespace_ = strdup("default");
                o->cgroup = strdup("kubepods/besteffort/pod-web");
                o->grace = 30;
                o->ready = true;
                o->containers = calloc(1, sizeof(WorkerContainer));
                assert_non_null(o->containers);
                o->n_containers = 1;
                o->containers[0] = (WorkerContainer){
                        .id = strdup("c1"), .name = strdup("app"), .state = CRI_CONTAINER_RUNNING, .started_at = 1
                };
                j->observed = o;
                j->n_observed = 1;
        }
        answer(a, j);
}

/* ---- the test ------------------------------------------------------------------ */

typedef struct Fixture {
        char dir[64];
        char *manifests;
        AgentOptions o;
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));
        static const char *const subdirs[] = { "manifests", "state", "logs", "cgroup" };

        assert_non_null(f);
        (void) snprintf(f->dir, sizeof(f->dir), "/tmp/cubelet-test-loop-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        for (size_t i = 0; i < sizeof(subdirs) / sizeof(*subdirs); i++) {
                _cleanup_free_ char *d = NULL;

                assert_true(asprintf(&d, "%s/%s", f->dir, subdirs[i]) > 0);
                assert_int_equal(cub_mkdir_p(d, 0755), 0);
        }
        agent_options_init(&f->o);
        assert_true(asprintf(&f->o.manifest_dir, "%s/manifests", f->dir) > 0);
        assert_true(asprintf(&f->o.state_dir, "%s/state", f->dir) > 0);
        assert_true(asprintf(&f->o.cgroup_root, "%s/cgroup", f->dir) > 0);
        assert_true(asprintf(&f->o.socket_path, "%s/status.sock", f->dir) > 0);
        assert_true(asprintf(&f->o.runtime_endpoint, "unix://%s/no-runtime.sock", f->dir) > 0);
        assert_non_null(f->o.node_name = strdup("node1"));
        assert_true(asprintf(&f->o.kc.pod_logs_dir, "%s/logs", f->dir) > 0);
        f->o.kc.cgroup_driver = POD_CGROUP_DRIVER_CGROUPFS;
        assert_non_null(f->o.kc.device_plugin_dir = strdup(""));
        assert_non_null(f->o.kc.cni_conf_dir = strdup(""));
        f->o.events_relist_usec = 0; /* no event stream: the relist timer alone */
        f->manifests = f->o.manifest_dir;
        *state = f;
        return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

static int teardown(void **state) {
        Fixture *f = *state;

        (void) nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        agent_options_done(&f->o);
        free(f);
        return 0;
}

static const char WEB[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\n"
                          "spec:\n  containers:\n  - {name: app, image: busybox}\n";

static void write_manifest(const Fixture *f, const char *name, const char *text) {
        _cleanup_free_ char *path = NULL;
        CubError err = {};

        assert_true(asprintf(&path, "%s/%s", f->manifests, name) > 0);
        if (cub_write_file_atomic(path, text, strlen(text), 0644, &err) < 0)
                fail_msg("%s", err.msg);
}

static void remove_manifest(const Fixture *f, const char *name) {
        _cleanup_free_ char *path = NULL;

        assert_true(asprintf(&path, "%s/%s", f->manifests, name) > 0);
        assert_int_equal(unlink(path), 0);
}

static bool status_has(Agent *a, const char *needle) {
        _cleanup_free_ char *doc = agent_status_json(a);

        assert_non_null(doc);
        return strstr(doc, needle) != NULL;
}

