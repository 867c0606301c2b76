/* SPDX-License-Identifier: Apache-2.0 */
/* eviction/signals.c over fixture /proc and cgroup trees built in a
 * tmpdir: node and kubepods memory, per-cgroup working set and pids,
 * pid.available, statvfs, PSI parsing, and PSI trigger
 * setup against a regular file. */
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "eviction/eviction.h"

#define KI UINT64_C(1024)
#define MI (1024 * KI)

typedef struct Fixture {
        char root[64];
        char proc[128];
        char cg[128];
} Fixture;

static void put(const Fixture *f, const char *rel, const char *text) {
        char path[512];
        FILE *fp;

        assert_true((size_t) snprintf(path, sizeof(path), "%s/%s", f->root, rel) < sizeof(path));
        for (char *p = path + strlen(f->root) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                (void) mkdir(path, 0755);
                *p = '/';
        }
        fp = fopen(path, "we");
        assert_non_null(fp);
        assert_int_equal(fputs(text, fp) >= 0, 1);
        assert_int_equal(fclose(fp), 0);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));

        if (!f)
                return -1;
        (void) snprintf(f->root, sizeof(f->root), "/tmp/test-signals.XXXXXX");
        if (!mkdtemp(f->root))
                return -1;
        (void) snprintf(f->proc, sizeof(f->proc), "%s/proc", f->root);
        (void) snprintf(f->cg, sizeof(f->cg), "%s/cgroup", f->root);
        put(f, "proc/meminfo",
            "MemTotal:       16318460 kB\n"
            "MemFree:         1000000 kB\n"
            "MemAvailable:    9000000 kB\n"
            "Buffers:          200000 kB\n");
        put(f, "proc/loadavg", "0.52 0.58 0.59 3/1234 56789\n");
        put(f, "proc/sys/kernel/pid_max", "4194304\n");
        put(f, "cgroup/memory.stat",
            "anon 5000000000\n"
            "file 4000000000\n"
            "active_file 1000000000\n"
            "inactive_file 3000000000\n");
        put(f, "cgroup/kubepods/memory.max", "15569256448\n");
        put(f, "cgroup/kubepods/memory.current", "4000000000\n");
        put(f, "cgroup/kubepods/memory.stat", "anon 2500000000\ninactive_file 1000000000\nactive_file 5\n");
        put(f, "cgroup/kubepods/burstable/podx/memory.current", "104857600\n");
        put(f, "cgroup/kubepods/burstable/podx/memory.stat", "inactive_file 209715200\n");
        put(f, "cgroup/kubepods/burstable/podx/pids.current", "17\n");
        put(f, "cgroup/kubepods/besteffort/memory.max", "max\n");
        put(f, "cgroup/kubepods/besteffort/memory.current", "1048576\n");
        put(f, "cgroup/kubepods/besteffort/memory.stat", "inactive_file 0\n");
        put(f, "cgroup/memory.pressure",
            "some avg10=1.50 avg60=0.75 avg300=0.10 total=123456\n"
            "full avg10=0.50 avg60=0.25 avg300=0.00 total=6543\n");
        put(f, "trigger", "");
        *state = f;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path) < 0 ? -1 : 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        (void) nftw(f->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

static void test_node_memory(void **state) {
        Fixture *f = *state;
        EvictSignalObservation o;
        CubError err = {};
        uint64_t total = 16318460 * KI, usage = total - 1000000 * KI, ws = usage - UINT64_C(3000000000);

        assert_int_equal(evict_read_node_memory(f->proc, f->cg, &o, &err), 0);
        assert_true(o.present);
        assert_int_equal(o.capacity, total);
        assert_int_equal(o.available, total - ws);

        /* inactive_file above usage: the working set is 0 */
        put(f, "cgroup/memory.stat", "inactive_file 99999999999\n");
        assert_int_equal(evict_read_node_memory(f->proc, f->cg, &o, &err), 0);
        assert_int_equal(o.available, total);
        put(f, "cgroup/memory.stat", "anon 1\ninactive_file 3000000000\n");
}

static void test_node_memory_errors(void **state) {
        Fixture *f = *state;
        EvictSignalObservation o = { .available = 7 };
        CubError err = {};
        char want[512];

        put(f, "proc2/meminfo", "MemTotal:       1000 kB\n");
        (void) snprintf(want, sizeof(want), "%s/proc2", f->root);
        assert_int_equal(evict_read_node_memory(want, f->cg, &o, &err), -ENOENT);
        (void) snprintf(want, sizeof(want), "'%s/proc2/meminfo': no 'MemFree' line", f->root);
        assert_string_equal(err.msg, want);
        assert_int_equal(o.available, 7);

        (void) snprintf(want, sizeof(want), "%s/nothing", f->root);
        assert_int_equal(evict_read_node_memory(want, f->cg, &o, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "/nothing/meminfo'"));

        put(f, "proc2/meminfo", "MemTotal: 1000 kB\nMemFree: lots kB\n");
        (void) snprintf(want, sizeof(want), "%s/proc2", f->root);
        assert_int_equal(evict_read_node_memory(want, f->cg, &o, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "/proc2/meminfo': bad value of 'MemFree'"));

        put(f, "cg2/memory.stat", "anon 5\n");
        put(f, "proc2/meminfo", "MemTotal: 1000 kB\nMemFree: 10 kB\n");
        (void) snprintf(want, sizeof(want), "%s/cg2", f->root);
        assert_int_equal(evict_read_node_memory(f->proc, want, &o, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "/cg2/memory.stat': no 'inactive_file' line"));
}

static void test_group_memory(void **state) {
        Fixture *f = *state;
        EvictSignalObservation o;
        CubError err = {};
        uint64_t ws;

        assert_int_equal(evict_read_group_memory(f->cg, "kubepods", 1, &o, &err), 0);
        assert_int_equal(o.capacity, UINT64_C(15569256448));
        assert_int_equal(o.available, UINT64_C(15569256448) - UINT64_C(3000000000));
        /* "max": the caller's allocatable */
        assert_int_equal(evict_read_group_memory(f->cg, "kubepods/besteffort", 64 * MI, &o, &err), 0);
        assert_int_equal(o.capacity, 64 * MI);
        assert_int_equal(o.available, 63 * MI);

        assert_int_equal(evict_read_cgroup_working_set(f->cg, "kubepods/burstable/podx", &ws, &err), 0);
        assert_int_equal(ws, 0); /* inactive_file 200Mi > current 100Mi */
        assert_int_equal(evict_read_cgroup_working_set(f->cg, "kubepods", &ws, &err), 0);
        assert_int_equal(ws, UINT64_C(3000000000));

        put(f, "cgroup/bad/memory.max", "lots\n");
        assert_int_equal(evict_read_group_memory(f->cg, "bad", 0, &o, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "/cgroup/bad/memory.max': not a number: \"lots\""));
        assert_int_equal(evict_read_cgroup_working_set(f->cg, "missing", &ws, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "/cgroup/missing/memory.current'"));
}

static void test_cgroup_pids(void **state) {
        Fixture *f = *state;
        CubError err = {};
        uint64_t n;

        assert_int_equal(evict_read_cgroup_pids(f->cg, "kubepods/burstable/podx", &n, &err), 0);
        assert_int_equal(n, 17);
        assert_int_equal(evict_read_cgroup_pids(f->cg, "kubepods", &n, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "/cgroup/kubepods/pids.current'"));
}

static void test_pid_available(void **state) {
        Fixture *f = *state;
        EvictSignalObservation o;
        CubError err = {};
        char p[256];

        assert_int_equal(evict_read_pids(f->proc, &o, &err), 0);
        assert_true(o.present);
        assert_int_equal(o.capacity, 4194304);
        assert_int_equal(o.available, 4194304 - 1234);

        put(f, "proc3/sys/kernel/pid_max", "32768\n");
        put(f, "proc3/loadavg", "0.52 0.58 0.59 31234 56789\n");
        (void) snprintf(p, sizeof(p), "%s/proc3", f->root);
        assert_int_equal(evict_read_pids(p, &o, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "/proc3/loadavg': no \"running/total\" field"));
        put(f, "proc3/loadavg", "0.52 0.58 0.59 1/\n");
        assert_int_equal(evict_read_pids(p, &o, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "/proc3/loadavg': bad process count"));
        put(f, "proc3/loadavg", "0.52 0.58 0.59 1/40000 5\n");
        assert_int_equal(evict_read_pids(p, &o, &err), 0);
        assert_int_equal(o.available, 0);
}

static void test_fs(void **state) {
        Fixture *f = *state;
        EvictFsStats fs;
        EvictSignalObservation b, i;
        CubError err = {};
        char p[256];

        assert_int_equal(evict_read_fs(f->root, &fs, &err), 0);
        assert_true(fs.capacity > 0);
        assert_true(fs.available <= fs.capacity);
        assert_true(fs.inodes_free <= fs.inodes);
        evict_fs_observe(&fs, &b, &i);
        assert_true(b.present);
        assert_int_equal(b.available, fs.available);
        assert_int_equal(b.capacity, fs.capacity);
        assert_int_equal(i.available, fs.inodes_free);

        (void) snprintf(p, sizeof(p), "%s/no/such/dir", f->root);
        assert_int_equal(evict_read_fs(p, &fs, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "statvfs '"));
        assert_non_null(strstr(err.msg, "/no/such/dir': "));

        fs = (EvictFsStats){ .available = 1, .capacity = 2 };
        evict_fs_observe(&fs, &b, &i);
        assert_false(i.present); /* a filesystem without inodes (btrfs) */
}

static void test_psi(void **state) {
        Fixture *f = *state;
        EvictPsi psi;
        CubError err = {};
        char p[256];

        (void) snprintf(p, sizeof(p), "%s/memory.pressure", f->cg);
        assert_int_equal(evict_read_psi(p, &psi, &err), 0);
        assert_true(psi.present);
        assert_true(psi.some.avg10 == 1.5);
        assert_true(psi.some.avg60 == 0.75);
        assert_true(psi.some.avg300 == 0.1);
        assert_int_equal(psi.some.total_usec, 123456);
        assert_true(psi.has_full);
        assert_true(psi.full.avg10 == 0.5);
        assert_int_equal(psi.full.total_usec, 6543);

        assert_int_equal(evict_psi_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &psi, &err), 0);
        assert_false(psi.has_full);
        assert_int_equal(evict_psi_parse("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &psi, &err), -EINVAL);
        assert_string_equal(err.msg, "no \"some\" line");
        assert_int_equal(evict_psi_parse("some avg10=x avg60=0.00 avg300=0.00 total=0\n", &psi, &err), -EINVAL);
        assert_string_equal(err.msg, "malformed line \"some avg10=x avg60=0.00 avg300=0.00 total=0\"");
        assert_int_equal(evict_psi_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0 extra\n", &psi, &err),
                         -EINVAL);
        assert_int_equal(evict_psi_parse("half avg10=0.00\n", &psi, &err), -EINVAL);
        assert_string_equal(err.msg, "expected a \"some\" or \"full\" line, got \"half avg10=0.00\"");

        put(f, "cgroup/bad.pressure", "nonsense\n");
        (void) snprintf(p, sizeof(p), "%s/bad.pressure", f->cg);
        assert_int_equal(evict_read_psi(p, &psi, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "/cgroup/bad.pressure': expected a \"some\" or \"full\" line"));
}

static void test_psi_trigger_open(void **state) {
        static const char want[] = "some 150000 1000000";
        Fixture *f = *state;
        CubError err = {};
        char p[256], got[64];
        int fd, rfd;
        ssize_t n;

        (void) snprintf(p, sizeof(p), "%s/trigger", f->root);
        fd = evict_psi_trigger_open(p, want, &err);
        if (fd < 0)
                fail_msg("%s", err.msg);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
        assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
        assert_int_equal(close(fd), 0);

        rfd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(rfd >= 0);
        n = read(rfd, got, sizeof(got));
        assert_int_equal(close(rfd), 0);
        assert_int_equal(n, sizeof(want)); /* the text and its NUL */
        assert_memory_equal(got, want, sizeof(want));

        (void) snprintf(p, sizeof(p), "%s/no-such.pressure", f->root);
        assert_int_equal(evict_psi_trigger_open(p, want, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "open '"));
        assert_non_null(strstr(err.msg, "/no-such.pressure': "));
        /* an invalid trigger is refused before anything is opened */
        assert_int_equal(evict_psi_trigger_open(p, "some 1 1", &err), -EINVAL);
        assert_string_equal(err.msg, "PSI trigger \"some 1 1\": window 1us not in 500000..10000000");
}

static void test_psi_trigger_validate(void **state) {
        static const struct {
                const char *t;
                const char *msg; /* NULL: valid */
        } vec[] = {
                { "some 150000 1000000", NULL },
                { "full 500000 500000", NULL },
                { "some 1 10000000", NULL },
                { "some 100 499999", "PSI trigger \"some 100 499999\": window 499999us not in 500000..10000000" },
                { "some 100 10000001", "PSI trigger \"some 100 10000001\": window 10000001us not in 500000..10000000" },
                { "full 2000000 1000000",
                  "PSI trigger \"full 2000000 1000000\": stall 2000000us must be in 1..window (1000000us)" },
                { "some 0 1000000", "PSI trigger \"some 0 1000000\": stall 0us must be in 1..window (1000000us)" },
                { "half 1 1000000",
                  "PSI trigger \"half 1 1000000\": expected \"some|full <stall usec> <window usec>\"" },
                { "some  150000 1000000",
                  "PSI trigger \"some  150000 1000000\": expected \"some|full <stall usec> <window usec>\"" },
                { "some 150000 1000000\n",
                  "PSI trigger \"some 150000 1000000\n\": expected \"some|full <stall usec> <window usec>\"" },
                { "some 150000", "PSI trigger \"some 150000\": expected \"some|full <stall usec> <window usec>\"" },
                { "some -1 1000000",
                  "PSI trigger \"some -1 1000000\": expected \"some|full <stall usec> <window usec>\"" },
                { "", "PSI trigger \"\": expected \"some|full <stall usec> <window usec>\"" },
        };
        CubError err = {};

        (void) state;
        for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
                int r = evict_psi_trigger_validate(vec[i].t, &err);

                if (!vec[i].msg) {
                        if (r < 0)
                                fail_msg("\"%s\": %s", vec[i].t, err.msg);
                        continue;
                }
                assert_int_equal(r, -EINVAL);
                assert_string_equal(err.msg, vec[i].msg);
        }
        assert_int_equal(evict_psi_trigger_validate(NULL, &err), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_node_memory),
                cmocka_unit_test(test_node_memory_errors),
                cmocka_unit_test(test_group_memory),
                cmocka_unit_test(test_cgroup_pids),
                cmocka_unit_test(test_pid_available),
                cmocka_unit_test(test_fs),
                cmocka_unit_test(test_psi),
                cmocka_unit_test(test_psi_trigger_open),
                cmocka_unit_test(test_psi_trigger_validate),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
