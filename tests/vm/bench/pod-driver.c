/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet's side of `make bench`: adds N pause pods to the manifest directory
 * one at a time (written beside it as .bI.yaml, then renamed in) and times,
 * from the rename, with a poll every POLL_US:
 *   - the pod cgroup configured: CGPARENT/podbench-I/cpu.weight reads WEIGHT
 *     (the plan's value; the kernel's default is 100),
 *   - the pod's container running: the pod cgroup has two child cgroups
 *     (sandbox, container) and both say "populated 1" in cgroup.events.
 *
 *   pod-driver [-H] [-B] [-p POLL_US] [-t TIMEOUT_S] MANIFEST_DIR CGPARENT WEIGHT FIRST LAST
 *
 * The pods are on the pod network; -H puts them on the host network
 * (hostNetwork: true), like cri-baseline's default. -B drops them all at
 * once (written first, then renamed in one after the other) and times each
 * from its own rename. The pod cgroup is pod<uid> (uid bench-I), under
 * cubelet and under kubelet alike, so both agents are timed the same way.
 *
 * stdout: "I CGROUP_US RUNNING_US" a pod. Exit status 1 when a pod timed out.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_us(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static void sleep_us(unsigned us) {
        struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long) (us % 1000000) * 1000 };

        (void) nanosleep(&ts, NULL);
}

static int read_file(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        return (int) n;
}

static bool weight_is(const char *cg, const char *want) {
        char path[600], buf[64];

        (void) snprintf(path, sizeof(path), "%s/cpu.weight", cg);
        if (read_file(path, buf, sizeof(buf)) < 0)
                return false;
        buf[strcspn(buf, "\n")] = 0;
        return strcmp(buf, want) == 0;
}

static bool running(const char *cg) {
        DIR *d = opendir(cg);
        struct dirent *de;
        unsigned populated = 0;

        if (!d)
                return false;
        while ((de = readdir(d))) {
                char path[1024], buf[128];

                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                (void) snprintf(path, sizeof(path), "%s/%s/cgroup.events", cg, de->d_name);
                if (read_file(path, buf, sizeof(buf)) > 0 && strstr(buf, "populated 1"))
                        populated++;
        }
        closedir(d);
        return populated >= 2;
}

/* the pod's manifest, written beside MANIFEST_DIR's files as .bI.yaml */
static int write_manifest(const char *dir, unsigned i, bool host_network) {
        char tmp[512];
        FILE *f;

        (void) snprintf(tmp, sizeof(tmp), "%s/.b%u.yaml", dir, i);
        f = fopen(tmp, "we");
        if (!f) {
                fprintf(stderr, "pod-driver: '%s': %m\n", tmp);
                return -1;
        }
        fprintf(f,
                "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata: {name: b%u, uid: bench-%u}\n"
                "spec:\n"
                "%s"
                "  containers:\n"
                "  - name: p\n"
                "    image: localhost/cubelet/pause:1\n"
                "    resources: {requests: {cpu: 10m, memory: 8Mi}}\n",
                i, i, host_network ? "  hostNetwork: true\n" : "");
        if (fclose(f) != 0) {
                fprintf(stderr, "pod-driver: '%s': %m\n", tmp);
                return -1;
        }
        return 0;
}

static int drop_in(const char *dir, unsigned i) {
        char tmp[512], dst[512];

        (void) snprintf(tmp, sizeof(tmp), "%s/.b%u.yaml", dir, i);
        (void) snprintf(dst, sizeof(dst), "%s/b%u.yaml", dir, i);
        if (rename(tmp, dst) < 0) {
                fprintf(stderr, "pod-driver: rename '%s': %m\n", dst);
                return -1;
        }
        return 0;
}

/* -B: every pod at once; each timed from its own rename */
static int batch(const char *dir, const char *parent, const char *weight, unsigned first, unsigned last,
                 bool host_network, unsigned poll_us, unsigned timeout_s) {
        unsigned n = last - first + 1, left = n;
        uint64_t *t0 = calloc(n, sizeof(uint64_t)), *t1 = calloc(n, sizeof(uint64_t)),
                 *t2 = calloc(n, sizeof(uint64_t)), deadline;
        int rc = 0;

        if (!t0 || !t1 || !t2) {
                fprintf(stderr, "pod-driver: out of memory\n");
                rc = 1;
                goto out;
        }
        for (unsigned i = first; i <= last; i++)
                if (write_manifest(dir, i, host_network) < 0) {
                        rc = 1;
                        goto out;
                }
        for (unsigned i = first; i <= last; i++) {
                t0[i - first] = now_us();
                if (drop_in(dir, i) < 0) {
                        rc = 1;
                        goto out;
                }
        }
        deadline = now_us() + (uint64_t) timeout_s * 1000000ULL;
        while (left > 0) {
                for (unsigned i = first; i <= last; i++) {
                        unsigned k = i - first;
                        char cg[512];

                        if (t2[k])
                                continue;
                        (void) snprintf(cg, sizeof(cg), "%s/podbench-%u", parent, i);
                        if (!t1[k] && weight_is(cg, weight))
                                t1[k] = now_us() - t0[k];
                        if (t1[k] && running(cg)) {
                                t2[k] = now_us() - t0[k];
                                left--;
                        }
                }
                if (left > 0 && now_us() > deadline) {
                        fprintf(stderr, "pod-driver: %u of %u pods not running after %u s\n", left, n, timeout_s);
                        rc = 1;
                        break;
                }
                sleep_us(poll_us);
        }
        for (unsigned k = 0; k < n; k++)
                if (t2[k])
                        printf("%u %" PRIu64 " %" PRIu64 "\n", first + k, t1[k], t2[k]);
out:
        free(t0);
        free(t1);
        free(t2);
        return rc;
}

int main(int argc, char **argv) {
        unsigned poll_us = 2000, timeout_s = 600, first, last;
        const char *dir, *parent, *weight;
        bool host_network = false, at_once = false;
        int opt, rc = 0;

        while ((opt = getopt(argc, argv, "HBp:t:")) >= 0) {
                switch (opt) {
                case 'H':
                        host_network = true;
                        break;
                case 'B':
                        at_once = true;
                        break;
                case 'p':
                        poll_us = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 't':
                        timeout_s = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                default:
                        goto usage;
                }
        }
        if (argc - optind != 5)
                goto usage;
        dir = argv[optind];
        parent = argv[optind + 1];
        weight = argv[optind + 2];
        first = (unsigned) strtoul(argv[optind + 3], NULL, 10);
        last = (unsigned) strtoul(argv[optind + 4], NULL, 10);
        if (last < first)
                goto usage;

        if (at_once)
                return batch(dir, parent, weight, first, last, host_network, poll_us, timeout_s);
        for (unsigned i = first; i <= last; i++) {
                char cg[512];
                uint64_t t0, t1 = 0, t2 = 0, deadline;

                (void) snprintf(cg, sizeof(cg), "%s/podbench-%u", parent, i);
                if (write_manifest(dir, i, host_network) < 0)
                        return 1;
                t0 = now_us();
                deadline = t0 + (uint64_t) timeout_s * 1000000ULL;
                if (drop_in(dir, i) < 0)
                        return 1;
                for (;;) {
                        uint64_t t = now_us();

                        if (!t1 && weight_is(cg, weight))
                                t1 = t - t0;
                        if (t1 && running(cg)) {
                                t2 = now_us() - t0;
                                break;
                        }
                        if (t > deadline) {
                                fprintf(stderr, "pod-driver: pod b%u: not %s after %u s\n", i,
                                        t1 ? "running" : "configured", timeout_s);
                                rc = 1;
                                break;
                        }
                        sleep_us(poll_us);
                }
                if (rc)
                        break;
                printf("%u %" PRIu64 " %" PRIu64 "\n", i, t1, t2);
                fflush(stdout);
        }
        return rc;
usage:
        fprintf(stderr, "usage: pod-driver [-H] [-B] [-p POLL_US] [-t TIMEOUT_S] MANIFEST_DIR CGPARENT WEIGHT FIRST LAST\n");
        return 2;
}
