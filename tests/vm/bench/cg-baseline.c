/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup baseline of `make bench` (issue #9): what configuring a pod
 * cgroup costs when nothing else is done. For each of N pods, timed from
 * before the mkdir to after the last write: mkdir PARENT/pod<PREFIX>-<i>, open
 * it O_PATH, then each FILE=VALUE in the order given with
 * openat(O_WRONLY) + write + close (the files and values cubelet writes for
 * the bench pod, from `cubelet plan`). The pod cgroups are removed at the end.
 *
 *   cg-baseline [-r CGROUP_ROOT] PARENT PREFIX N FILE=VALUE...
 *
 * PARENT is relative to CGROUP_ROOT (/sys/fs/cgroup), e.g. kubepods/burstable;
 * it and its ancestors are created if missing, with +cpu +memory +pids in
 * their cgroup.subtree_control (untimed). stdout: "I US" a pod.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_us(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static int write_at(int dirfd, const char *file, const char *value) {
        size_t n = strlen(value);
        int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (write(fd, value, n) != (ssize_t) n) {
                int r = -errno;
                close(fd);
                return r;
        }
        return close(fd) < 0 ? -errno : 0;
}

/* mkdir -p ROOT/PARENT, enabling the controllers of each level in its parent */
static int prepare(const char *root, const char *parent) {
        char path[512], rel[256];
        size_t n;
        int fd;

        if ((size_t) snprintf(rel, sizeof(rel), "%s", parent) >= sizeof(rel))
                return -ENAMETOOLONG;
        n = (size_t) snprintf(path, sizeof(path), "%s", root);
        for (char *save = NULL, *c = strtok_r(rel, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                (void) write_at(fd, "cgroup.subtree_control", "+cpu +memory +pids");
                close(fd);
                n += (size_t) snprintf(path + n, sizeof(path) - n, "/%s", c);
                if (n >= sizeof(path))
                        return -ENAMETOOLONG;
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        return -errno;
        }
        fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        (void) write_at(fd, "cgroup.subtree_control", "+cpu +memory +pids");
        close(fd);
        return 0;
}

int main(int argc, char **argv) {
        const char *root = "/sys/fs/cgroup", *parent, *prefix;
        char path[512], pod[128];
        unsigned n;
        int opt, r, pfd;

        while ((opt = getopt(argc, argv, "r:")) >= 0) {
                if (opt != 'r')
                        goto usage;
                root = optarg;
        }
        if (argc - optind < 4)
                goto usage;
        parent = argv[optind];
        prefix = argv[optind + 1];
        n = (unsigned) strtoul(argv[optind + 2], NULL, 10);
        if (n == 0)
                goto usage;
        r = prepare(root, parent);
        if (r < 0) {
                fprintf(stderr, "cg-baseline: '%s/%s': %s\n", root, parent, strerror(-r));
                return 1;
        }
        (void) snprintf(path, sizeof(path), "%s/%s", root, parent);
        pfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0) {
                fprintf(stderr, "cg-baseline: '%s': %m\n", path);
                return 1;
        }
        for (unsigned i = 1; i <= n; i++) {
                uint64_t t0;
                int dfd;

                (void) snprintf(pod, sizeof(pod), "pod%s-%u", prefix, i);
                t0 = now_us();
                if (mkdirat(pfd, pod, 0755) < 0 && errno != EEXIST) {
                        fprintf(stderr, "cg-baseline: mkdir '%s/%s': %m\n", path, pod);
                        return 1;
                }
                dfd = openat(pfd, pod, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0) {
                        fprintf(stderr, "cg-baseline: '%s/%s': %m\n", path, pod);
                        return 1;
                }
                for (int k = optind + 3; k < argc; k++) {
                        char file[64];
                        const char *eq = strchr(argv[k], '=');

                        if (!eq || (size_t) (eq - argv[k]) >= sizeof(file))
                                goto usage;
                        memcpy(file, argv[k], (size_t) (eq - argv[k]));
                        file[eq - argv[k]] = 0;
                        r = write_at(dfd, file, eq + 1);
                        if (r < 0) {
                                fprintf(stderr, "cg-baseline: '%s/%s': write '%s': %s\n", path, pod, file,
                                        strerror(-r));
                                return 1;
                        }
                }
                close(dfd);
                printf("%u %" PRIu64 "\n", i, now_us() - t0);
        }
        for (unsigned i = 1; i <= n; i++) {
                (void) snprintf(pod, sizeof(pod), "pod%s-%u", prefix, i);
                if (unlinkat(pfd, pod, AT_REMOVEDIR) < 0)
                        fprintf(stderr, "cg-baseline: rmdir '%s/%s': %m\n", path, pod);
        }
        close(pfd);
        return 0;
usage:
        fprintf(stderr, "usage: cg-baseline [-r CGROUP_ROOT] PARENT PREFIX N FILE=VALUE...\n");
        return 2;
}
