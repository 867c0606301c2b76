/* SPDX-License-Identifier: Apache-2.0 */
/* agent/cgroup/driver-cgroupfs.c through the writer, on a fake cgroup tree
 * in a tmpdir: the files the kernel would show are made by the tests (a
 * tmpfs mkdir makes none). Covers the root being honoured, the write order,
 * error texts naming the group, file and value, controller hints, creation,
 * removal, the cgroup.events wait and the systemd stubs. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-daemon.h>

#include "agent/cgroup/cgroup-internal.h"
#include "agent/cgroup/cgroup.h"

#define POD "kubepods/burstable/pod7e3c"

typedef struct Fixture {
        char root[64];
        char other[64]; /* a second root that must stay untouched */
} Fixture;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) ftw;
        return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void rm_rf(const char *path) {
        (void) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        (void) snprintf(f->root, sizeof(f->root), "/tmp/cubelet-test-cgfs-XXXXXX");
        (void) snprintf(f->other, sizeof(f->other), "/tmp/cubelet-test-cgfs-XXXXXX");
        if (!mkdtemp(f->root) || !mkdtemp(f->other))
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        rm_rf(f->root);
        rm_rf(f->other);
        free(f);
        return 0;
}

static void put_file(const char *root, const char *rel, const char *content) {
        char p[PATH_MAX];
        FILE *fp;

        assert_true((size_t) snprintf(p, sizeof(p), "%s/%s", root, rel) < sizeof(p));
        fp = fopen(p, "we");
        assert_non_null(fp);
        assert_int_equal(fputs(content, fp) >= 0, 1);
        assert_int_equal(fclose(fp), 0);
}

/* The file's content, or "<missing>". */
static const char *get_file(const char *root, const char *rel, char *buf, size_t size) {
        char p[PATH_MAX];
        FILE *fp;
        size_t n;

        assert_true((size_t) snprintf(p, sizeof(p), "%s/%s", root, rel) < sizeof(p));
        fp = fopen(p, "re");
        if (!fp)
                return "<missing>";
        n = fread(buf, 1, size - 1, fp);
        buf[n] = '\0';
        (void) fclose(fp);
        return buf;
}

static bool is_dir(const char *root, const char *rel) {
        char p[PATH_MAX];
        struct stat st;

        (void) snprintf(p, sizeof(p), "%s/%s", root, rel);
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void make_dir(const char *root, const char *rel) {
        char p[PATH_MAX];

        (void) snprintf(p, sizeof(p), "%s/%s", root, rel);
        assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
}

/* A group as the kernel shows it, with empty interface files: the ones named
 * (NULL-terminated) besides cgroup.subtree_control and cgroup.events. */
static void make_group(const char *root, const char *path, ...) {
        char rel[PATH_MAX];
        const char *name;
        va_list ap;

        make_dir(root, path);
        (void) snprintf(rel, sizeof(rel), "%s/cgroup.subtree_control", path);
        put_file(root, rel, "");
        (void) snprintf(rel, sizeof(rel), "%s/cgroup.events", path);
        put_file(root, rel, "populated 0\nfrozen 0\n");
        va_start(ap, path);
        while ((name = va_arg(ap, const char *))) {
                (void) snprintf(rel, sizeof(rel), "%s/%s", path, name);
                put_file(root, rel, "");
        }
        va_end(ap);
}

static void make_pod_tree(const char *root) {
        put_file(root, "cgroup.subtree_control", "cpu memory pids\n");
        make_group(root, "kubepods", "cpu.weight", "memory.max", NULL);
        make_group(root, "kubepods/burstable", "cpu.weight", NULL);
        make_group(root, POD, "cpu.weight", "cpu.max", "memory.max", "pids.max", NULL);
}

static CgGroupValues pod_group(void) {
        CgGroupValues g = { .path = POD,
                            .files = {
                                    { .name = "cpu.weight", .value = "10" },
                                    { .name = "cpu.max", .value = "50000 100000" },
                                    { .name = "memory.max", .value = "1048576" },
                                    { .name = "pids.max", .value = "max" },
                            },
                            .n_files = 4 };
        return g;
}

static CgWriter *writer_on(const char *root, CgDriverKind kind) {
        CgWriter *w = NULL;
        CubError err = {};

        if (cg_writer_new_full(root, kind, CG_WRITER_ANY_FS, &w, &err) < 0)
                fail_msg("cg_writer_new_full: %s", err.msg);
        return w;
}

/* ---- construction ------------------------------------------------------- */

static void test_new_refuses_a_root_that_is_not_cgroup2(void **state) {
        Fixture *f = *state;
        CgWriter *w = NULL;
        CubError err = {};
        char want[256];

        assert_int_equal(cg_writer_new(f->root, &w, &err), -ENOTSUP);
        assert_null(w);
        (void) snprintf(want, sizeof(want), "cgroup root '%s' is not a cgroup v2 mount", f->root);
        assert_string_equal(err.msg, want);
}

static void test_new_missing_root_names_it(void **state) {
        Fixture *f = *state;
        CgWriter *w = NULL;
        CubError err = {};
        char root[128], want[256];

        (void) snprintf(root, sizeof(root), "%s/nope", f->root);
        assert_int_equal(cg_writer_new_full(root, CG_DRIVER_CGROUPFS, CG_WRITER_ANY_FS, &w, &err), -ENOENT);
        assert_null(w);
        (void) snprintf(want, sizeof(want), "cgroup root '%s': No such file or directory", root);
        assert_string_equal(err.msg, want);
        assert_int_equal(cg_writer_new_full(f->root, _CG_DRIVER_MAX, CG_WRITER_ANY_FS, &w, &err), -EINVAL);
        assert_int_equal(cg_writer_new_full(f->root, _CG_DRIVER_INVALID, CG_WRITER_ANY_FS, &w, &err), -EINVAL);
        assert_null(w);
}

static void test_driver_table(void **state) {
        (void) state;
        for (int k = 0; k < _CG_DRIVER_MAX; k++) {
                const CgDriver *d = cg_driver_get((CgDriverKind) k);

                assert_non_null(d);
                assert_int_equal(d->kind, k);
                assert_string_equal(d->name, cg_driver_to_string((CgDriverKind) k));
                assert_int_equal(cg_driver_from_string(d->name), k);
                /* no empty slot: a missing backend is a stub, not NULL */
                assert_non_null(d->init);
                assert_non_null(d->exists);
                assert_non_null(d->create);
                assert_non_null(d->update);
                assert_non_null(d->read);
                assert_non_null(d->wait_unpopulated);
                assert_non_null(d->destroy);
        }
        assert_null(cg_driver_get(_CG_DRIVER_MAX));
        assert_null(cg_driver_get(_CG_DRIVER_INVALID));
        assert_null(cg_driver_to_string(_CG_DRIVER_MAX));
        assert_int_equal(cg_driver_from_string("cgroupfs"), CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_driver_from_string("systemd"), CG_DRIVER_SYSTEMD);
        assert_int_equal(cg_driver_from_string("Systemd"), _CG_DRIVER_INVALID);
        assert_int_equal(cg_driver_from_string(NULL), _CG_DRIVER_INVALID);
}

/* The systemd driver needs PID 1 to be systemd and a cgroup v2 root; its
 * bus work is proven in the VM (tests/vm, the driver matrix). */
static void test_systemd_driver_needs_systemd(void **state) {
        Fixture *f = *state;
        CgWriter *w = NULL;
        CubError err = {};

        if (sd_booted() > 0) {
                assert_int_equal(cg_writer_new_full(f->root, CG_DRIVER_SYSTEMD, CG_WRITER_ANY_FS, &w, &err),
                                 -EOPNOTSUPP);
                char want[PATH_MAX + 64];

                (void) snprintf(want, sizeof(want), "cgroup driver 'systemd': '%s' is not a cgroup v2 mount", f->root);
                assert_string_equal(err.msg, want);
                return;
        }
        assert_int_equal(cg_writer_new_full(f->root, CG_DRIVER_SYSTEMD, CG_WRITER_ANY_FS, &w, &err), -EOPNOTSUPP);
        assert_null(w);
        assert_string_equal(err.msg, "cgroup driver 'systemd': PID 1 is not systemd (use cgroupDriver: cgroupfs)");
        assert_int_equal(cg_driver_default(), CG_DRIVER_CGROUPFS);
}

/* ---- apply -------------------------------------------------------------- */

static void test_apply_writes_the_values_under_the_given_root_only(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CgGroupValues g = pod_group();
        CubError err = {};
        char buf[64];

        make_pod_tree(f->root);
        make_pod_tree(f->other);
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_writer_driver(w), CG_DRIVER_CGROUPFS);
        if (cg_writer_apply(w, &g, &err) < 0)
                fail_msg("apply: %s", err.msg);
        assert_string_equal(get_file(f->root, POD "/cpu.weight", buf, sizeof(buf)), "10");
        assert_string_equal(get_file(f->root, POD "/cpu.max", buf, sizeof(buf)), "50000 100000");
        assert_string_equal(get_file(f->root, POD "/memory.max", buf, sizeof(buf)), "1048576");
        assert_string_equal(get_file(f->root, POD "/pids.max", buf, sizeof(buf)), "max");
        /* the group existed: nothing enabled, nothing made */
        assert_string_equal(get_file(f->root, "cgroup.subtree_control", buf, sizeof(buf)), "cpu memory pids\n");
        /* the other tree is as it was */
        assert_string_equal(get_file(f->other, POD "/cpu.weight", buf, sizeof(buf)), "");
        assert_string_equal(get_file(f->other, POD "/memory.max", buf, sizeof(buf)), "");
        cg_writer_free(w);
}

static void test_apply_writes_in_the_documented_order(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CgGroupValues g = pod_group();
        CubError err = {};
        char dir[PATH_MAX], names[4][32], ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        size_t n_names = 0;
        ssize_t len;
        int ifd;

        make_pod_tree(f->root);
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        assert_true(ifd >= 0);
        (void) snprintf(dir, sizeof(dir), "%s/" POD, f->root);
        assert_true(inotify_add_watch(ifd, dir, IN_CLOSE_WRITE) >= 0);
        if (cg_writer_apply(w, &g, &err) < 0)
                fail_msg("apply: %s", err.msg);
        len = read(ifd, ev, sizeof(ev));
        assert_true(len > 0);
        for (char *p = ev; p < ev + len;) {
                struct inotify_event *e = (struct inotify_event *) p;

                assert_true(n_names < 4);
                (void) snprintf(names[n_names++], sizeof(names[0]), "%s", e->name);
                p += sizeof(*e) + e->len;
        }
        assert_int_equal(n_names, 4);
        assert_string_equal(names[0], "cpu.weight");
        assert_string_equal(names[1], "cpu.max");
        assert_string_equal(names[2], "memory.max");
        assert_string_equal(names[3], "pids.max");
        (void) close(ifd);
        cg_writer_free(w);
}

static void test_failed_write_names_group_file_and_value_and_stops(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CgGroupValues g = pod_group();
        CubError err = {};
        char p[PATH_MAX], buf[64];

        make_pod_tree(f->root);
        /* memory.max that cannot be written: the kernel's EBUSY is not at hand,
         * a directory gives EISDIR through the same path */
        (void) snprintf(p, sizeof(p), "%s/" POD "/memory.max", f->root);
        assert_int_equal(unlink(p), 0);
        assert_int_equal(mkdir(p, 0755), 0);
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_writer_apply(w, &g, &err), -EISDIR);
        assert_string_equal(err.msg, "cgroup '" POD "': write 'memory.max' = '1048576': Is a directory");
        assert_int_equal(err.code, EISDIR);
        /* the files before it were written, the one after it was not */
        assert_string_equal(get_file(f->root, POD "/cpu.weight", buf, sizeof(buf)), "10");
        assert_string_equal(get_file(f->root, POD "/cpu.max", buf, sizeof(buf)), "50000 100000");
        assert_string_equal(get_file(f->root, POD "/pids.max", buf, sizeof(buf)), "");
        cg_writer_free(w);
}

static void test_missing_controller_file_names_the_parent_subtree_control(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CgGroupValues g = pod_group();
        CgGroupValues top = { .path = "kubepods",
                              .files = { { .name = "cpu.weight", .value = "100" },
                                         { .name = "cpuset.cpus", .value = "0-3" } },
                              .n_files = 2 };
        CubError err = {};
        char p[PATH_MAX], want[512];

        make_pod_tree(f->root);
        (void) snprintf(p, sizeof(p), "%s/" POD "/cpu.max", f->root);
        assert_int_equal(unlink(p), 0);
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_writer_apply(w, &g, &err), -ENOENT);
        assert_string_equal(err.msg, "cgroup '" POD "': write 'cpu.max' = '50000 100000': controller 'cpu' not "
                                     "enabled in 'kubepods/burstable/cgroup.subtree_control'");
        /* never created: O_CREAT is not used */
        assert_string_equal(get_file(f->root, POD "/cpu.max", p, sizeof(p)), "<missing>");
        /* a top-level group's parent is the root itself */
        assert_int_equal(cg_writer_apply(w, &top, &err), -ENOENT);
        (void) snprintf(want, sizeof(want),
                        "cgroup 'kubepods': write 'cpuset.cpus' = '0-3': controller 'cpuset' not enabled in "
                        "'%s/cgroup.subtree_control'",
                        f->root);
        assert_string_equal(err.msg, want);
        cg_writer_free(w);
}

static void test_create_makes_the_group_and_enables_controllers_in_parents(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CgGroupValues g = pod_group();
        CubError err = {};
        char buf[64];

        /* the QoS groups exist (burstable already delegates all three); the pod's does not */
        put_file(f->root, "cgroup.subtree_control", "");
        make_group(f->root, "kubepods", NULL);
        make_group(f->root, "kubepods/burstable", NULL);
        put_file(f->root, "kubepods/burstable/cgroup.subtree_control", "cpu memory pids\n");
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        /* a real kernel would now show cpu.weight in the new group; the fake
         * tree does not, which shows the create step ended and the first write came */
        assert_int_equal(cg_writer_apply(w, &g, &err), -ENOENT);
        assert_string_equal(err.msg, "cgroup '" POD "': write 'cpu.weight' = '10': controller 'cpu' not enabled "
                                     "in 'kubepods/burstable/cgroup.subtree_control'");
        assert_true(is_dir(f->root, POD));
        assert_string_equal(get_file(f->root, POD "/cpu.weight", buf, sizeof(buf)), "<missing>");
        assert_string_equal(get_file(f->root, "cgroup.subtree_control", buf, sizeof(buf)), "+cpu +memory +pids");
        assert_string_equal(get_file(f->root, "kubepods/cgroup.subtree_control", buf, sizeof(buf)),
                            "+cpu +memory +pids");
        /* already enabled: not written again */
        assert_string_equal(get_file(f->root, "kubepods/burstable/cgroup.subtree_control", buf, sizeof(buf)),
                            "cpu memory pids\n");
        assert_false(is_dir(f->other, "kubepods"));
        cg_writer_free(w);
}

static void test_create_needs_subtree_control_in_parents(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CgGroupValues g = pod_group();
        CubError err = {};

        put_file(f->root, "cgroup.subtree_control", "cpu memory pids\n");
        make_dir(f->root, "kubepods"); /* a plain directory, not a group */
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_writer_apply(w, &g, &err), -ENOENT);
        assert_string_equal(err.msg, "cgroup 'kubepods': read 'cgroup.subtree_control': No such file or directory");
        assert_false(is_dir(f->root, "kubepods/burstable"));
        cg_writer_free(w);
}

static void test_silently_dropped_write_is_an_error(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CgGroupValues g = pod_group();
        CubError err = {};
        char p[PATH_MAX];

        make_pod_tree(f->root);
        (void) snprintf(p, sizeof(p), "%s/" POD "/pids.max", f->root);
        assert_int_equal(unlink(p), 0);
        assert_int_equal(symlink("/dev/null", p), 0);
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_writer_apply(w, &g, &err), -EIO);
        assert_string_equal(err.msg, "cgroup '" POD "': 'pids.max' reads '' after writing 'max'");
        cg_writer_free(w);
}

static void test_bad_paths_and_file_names(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CgGroupValues g = pod_group();
        CubError err = {};
        char buf[16];
        static const char *const bad[] = { "",   "/kubepods",     "kubepods/", "kubepods//pod",
                                           "..", "kubepods/../x", "./kubepods" };

        make_pod_tree(f->root);
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                (void) snprintf(g.path, sizeof(g.path), "%s", bad[i]);
                assert_int_equal(cg_writer_apply(w, &g, &err), -EINVAL);
                assert_int_equal(cg_writer_remove(w, bad[i], &err), -EINVAL);
                assert_int_equal(cg_writer_read(w, bad[i], "cpu.max", buf, sizeof(buf), &err), -EINVAL);
        }
        assert_true(cg_path_is_valid("kubepods"));
        assert_true(cg_path_is_valid("kubepods/burstable/pod..x"));
        g = pod_group();
        g.files[1].name = "../cpu.max";
        assert_int_equal(cg_writer_apply(w, &g, &err), -EINVAL);
        assert_string_equal(err.msg, "cgroup '" POD "': bad file name '../cpu.max'");
        assert_int_equal(cg_writer_read(w, POD, "../cgroup.events", buf, sizeof(buf), &err), -EINVAL);
        cg_writer_free(w);
}

/* ---- read --------------------------------------------------------------- */

static void test_read_strips_newlines_and_bounds(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CubError err = {};
        char buf[16];

        make_pod_tree(f->root);
        put_file(f->root, POD "/memory.max", "max\n");
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_writer_read(w, POD, "memory.max", buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "max");
        assert_int_equal(cg_writer_read(w, POD, "memory.max", buf, 4, &err), 0);
        assert_string_equal(buf, "max");
        assert_int_equal(cg_writer_read(w, POD, "memory.max", buf, 3, &err), -ERANGE);
        assert_string_equal(err.msg, "cgroup '" POD "': read 'memory.max': longer than 2 bytes");
        assert_int_equal(cg_writer_read(w, POD, "io.max", buf, sizeof(buf), &err), -ENOENT);
        assert_string_equal(err.msg, "cgroup '" POD "': read 'io.max': No such file or directory");
        assert_int_equal(cg_writer_read(w, "kubepods/nope", "io.max", buf, sizeof(buf), &err), -ENOENT);
        assert_string_equal(err.msg, "cgroup 'kubepods/nope': open: No such file or directory");
        cg_writer_free(w);
}

/* ---- remove and the cgroup.events wait ---------------------------------- */

static void test_remove_rmdirs_under_the_given_root(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CubError err = {};
        char p[PATH_MAX];

        make_dir(f->root, "kubepods");
        make_dir(f->root, "kubepods/podA");
        make_dir(f->other, "kubepods");
        make_dir(f->other, "kubepods/podA");
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_writer_remove(w, "kubepods/podA", &err), 0);
        assert_false(is_dir(f->root, "kubepods/podA"));
        assert_true(is_dir(f->other, "kubepods/podA"));
        /* missing is fine */
        assert_int_equal(cg_writer_remove(w, "kubepods/podA", &err), 0);
        assert_int_equal(cg_writer_remove(w, "nothere/podA", &err), 0);
        /* a failure names the group */
        (void) snprintf(p, sizeof(p), "%s/kubepods/podB", f->root);
        assert_int_equal(mkdir(p, 0755), 0);
        put_file(f->root, "kubepods/podB/cgroup.procs", "");
        assert_int_equal(cg_writer_remove(w, "kubepods/podB", &err), -ENOTEMPTY);
        assert_string_equal(err.msg, "cgroup 'kubepods/podB': rmdir: Directory not empty");
        cg_writer_free(w);
}

typedef struct Unpopulate {
        const char *root;
        const char *path;
} Unpopulate;

static void *unpopulate_later(void *arg) {
        const Unpopulate *u = arg;
        char p[PATH_MAX];
        struct timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
        int fd;

        /* not a timed assertion: the outcome is the same either way, the pause
         * only makes the writer likely to be waiting already */
        (void) nanosleep(&ts, NULL);
        (void) snprintf(p, sizeof(p), "%s/%s/cgroup.events", u->root, u->path);
        /* one byte in place, as the kernel's file never reads half-written:
         * "populated 1" becomes "populated 0" */
        fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void) !pwrite(fd, "0", 1, strlen("populated "));
                (void) close(fd);
        }
        return NULL;
}

static void test_wait_returns_on_populated_0(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CubError err = {};
        Unpopulate u = { .root = f->root, .path = POD };
        pthread_t t;

        make_pod_tree(f->root);
        put_file(f->root, POD "/cgroup.events", "populated 1\nfrozen 0\n");
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(pthread_create(&t, NULL, unpopulate_later, &u), 0);
        if (cg_writer_wait_unpopulated(w, POD, 60ULL * 1000000ULL, &err) < 0)
                fail_msg("wait: %s", err.msg);
        assert_int_equal(pthread_join(t, NULL), 0);
        cg_writer_free(w);
}

static void test_wait_on_empty_or_missing_group(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CubError err = {};

        make_pod_tree(f->root);
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_writer_wait_unpopulated(w, POD, 0, &err), 0);
        assert_int_equal(cg_writer_wait_unpopulated(w, "kubepods/podgone", 0, &err), 0);
        put_file(f->root, POD "/cgroup.events", "frozen 0\n");
        assert_int_equal(cg_writer_wait_unpopulated(w, POD, 0, &err), -EBADMSG);
        assert_string_equal(err.msg, "cgroup '" POD "': read 'cgroup.events': Bad message");
        cg_writer_free(w);
}

static void test_wait_times_out_naming_the_group(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CubError err = {};

        make_pod_tree(f->root);
        put_file(f->root, POD "/cgroup.events", "populated 1\nfrozen 0\n");
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_writer_wait_unpopulated(w, POD, 20 * 1000, &err), -ETIMEDOUT);
        assert_string_equal(err.msg, "cgroup '" POD "': still populated after 20 ms");
        /* remove_wait tries the rmdir anyway, and reports the timeout */
        assert_int_equal(cg_writer_remove_wait(w, POD, 20 * 1000, &err), -ETIMEDOUT);
        assert_string_equal(err.msg, "cgroup '" POD "': still populated after 20 ms");
        assert_true(is_dir(f->root, POD));
        cg_writer_free(w);
}

static void test_remove_wait_removes_an_empty_group(void **state) {
        Fixture *f = *state;
        CgWriter *w;
        CubError err = {};

        make_dir(f->root, "kubepods");
        make_dir(f->root, "kubepods/podA");
        make_dir(f->other, "kubepods");
        make_dir(f->other, "kubepods/podA");
        w = writer_on(f->root, CG_DRIVER_CGROUPFS);
        assert_int_equal(cg_writer_remove_wait(w, "kubepods/podA", 5ULL * 1000000ULL, &err), 0);
        assert_false(is_dir(f->root, "kubepods/podA"));
        assert_true(is_dir(f->other, "kubepods/podA"));
        assert_int_equal(cg_writer_remove_wait(w, "kubepods/podA", 5ULL * 1000000ULL, &err), 0);
        cg_writer_free(w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_new_refuses_a_root_that_is_not_cgroup2, setup, teardown),
                cmocka_unit_test_setup_teardown(test_new_missing_root_names_it, setup, teardown),
                cmocka_unit_test_setup_teardown(test_driver_table, setup, teardown),
                cmocka_unit_test_setup_teardown(test_systemd_driver_needs_systemd, setup, teardown),
                cmocka_unit_test_setup_teardown(test_apply_writes_the_values_under_the_given_root_only, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_apply_writes_in_the_documented_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_failed_write_names_group_file_and_value_and_stops, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_missing_controller_file_names_the_parent_subtree_control, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_create_makes_the_group_and_enables_controllers_in_parents, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_create_needs_subtree_control_in_parents, setup, teardown),
                cmocka_unit_test_setup_teardown(test_silently_dropped_write_is_an_error, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_paths_and_file_names, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_strips_newlines_and_bounds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_remove_rmdirs_under_the_given_root, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wait_returns_on_populated_0, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wait_on_empty_or_missing_group, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wait_times_out_naming_the_group, setup, teardown),
                cmocka_unit_test_setup_teardown(test_remove_wait_removes_an_empty_group, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
