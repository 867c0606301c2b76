/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The raw-CRI baseline of `make bench` (issue #9): starts N pause pods one at
 * a time through cri/ (the client cubelet itself uses), making only the calls
 * a pod needs: RunPodSandbox, CreateContainer, StartContainer. The sandboxes
 * are shaped like cubelet's (host network, or with -N the pod network
 * through containerd's CNI as cubelet's pods without hostNetwork, cgroup parent
 * /kubepods/burstable/pod<uid>, log directory, the container's CRI resources
 * of `cubelet plan` for the bench pod) but carry no labels. Pods stay running
 * while the next one starts, as in cubelet's bench; then every sandbox is
 * stopped and removed.
 *
 *   cri-baseline [-N] [-e ENDPOINT] [-p UID_PREFIX] [-l LOG_ROOT] N
 *
 * stdout: one line a pod, "I SANDBOX_US CREATE_US START_US TOTAL_US" (each
 * from the pod's start; TOTAL = StartContainer returned), then "# cleanup MS".
 * Exit status 1 on the first failed call (after cleaning up).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cri/cri.h"

#define IMAGE "localhost/cubelet/pause:1"

static uint64_t now_us(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static int mkdir_p(const char *path) {
        char buf[512];
        size_t n = strlen(path);

        if (n >= sizeof(buf))
                return -ENAMETOOLONG;
        memcpy(buf, path, n + 1);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = 0;
                if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int start_pod(CriClient *c, const char *prefix, const char *log_root, unsigned i, char **ret_sandbox,
                     bool host_network, uint64_t t[4], CubError *err) {
        char name[64], uid[64], parent[128], logdir[256];
        char *sandbox_id = NULL, *ctr_id = NULL;
        uint64_t t0;
        int r;

        (void) snprintf(name, sizeof(name), "%s%u", prefix, i);
        (void) snprintf(uid, sizeof(uid), "%s-%u", prefix, i);
        (void) snprintf(parent, sizeof(parent), "/kubepods/burstable/pod%s", uid);
        (void) snprintf(logdir, sizeof(logdir), "%s/default_%s_%s", log_root, name, uid);

        CriSandboxConfig sbc = {
                .name = name,
                .uid = uid,
                .namespace_ = "default",
                .hostname = name,
                .log_directory = logdir,
                .cgroup_parent = parent,
                .host_network = host_network,
        };
        CriContainerConfig cc = {
                .name = "p",
                .image = IMAGE,
                .log_path = "p/0.log",
                /* `cubelet plan` for requests {cpu: 10m, memory: 8Mi}: Burstable */
                .resources = { .cpu_period = 100000, .cpu_shares = 10, .oom_score_adj = 999 },
        };

        t0 = now_us();
        r = mkdir_p(logdir);
        if (r < 0)
                return cub_err_set(err, -r, "mkdir '%s'", logdir);
        r = cri_run_pod_sandbox(c, &sbc, &sandbox_id, err);
        if (r < 0)
                return r;
        *ret_sandbox = sandbox_id;
        t[0] = now_us() - t0;
        r = cri_create_container(c, sandbox_id, &cc, &sbc, &ctr_id, err);
        if (r < 0)
                return r;
        t[1] = now_us() - t0;
        r = cri_start_container(c, ctr_id, err);
        free(ctr_id);
        if (r < 0)
                return r;
        t[2] = now_us() - t0;
        t[3] = t[2];
        return 0;
}

int main(int argc, char **argv) {
        const char *endpoint = CRI_DEFAULT_ENDPOINT, *prefix = "base", *log_root = "/var/log/pods";
        CriClient *c = NULL;
        CubError err = {};
        char **ids;
        unsigned n, started = 0;
        uint64_t t0;
        bool host_network = true;
        int opt, r, rc = 0;

        while ((opt = getopt(argc, argv, "Ne:p:l:")) >= 0) {
                switch (opt) {
                case 'N':
                        host_network = false;
                        break;
                case 'e':
                        endpoint = optarg;
                        break;
                case 'p':
                        prefix = optarg;
                        break;
                case 'l':
                        log_root = optarg;
                        break;
                default:
                        fprintf(stderr, "usage: %s [-N] [-e ENDPOINT] [-p UID_PREFIX] [-l LOG_ROOT] N\n", argv[0]);
                        return 2;
                }
        }
        if (optind != argc - 1 || (n = (unsigned) strtoul(argv[optind], NULL, 10)) == 0) {
                fprintf(stderr, "usage: %s [-N] [-e ENDPOINT] [-p UID_PREFIX] [-l LOG_ROOT] N\n", argv[0]);
                return 2;
        }
        ids = calloc(n, sizeof(char *));
        if (!ids)
                return 1;
        r = cri_client_new(endpoint, 0, &c, &err);
        if (r < 0) {
                fprintf(stderr, "cri-baseline: %s\n", err.msg);
                return 1;
        }
        for (unsigned i = 0; i < n; i++) {
                uint64_t t[4] = {};

                r = start_pod(c, prefix, log_root, i + 1, &ids[i], host_network, t, &err);
                if (ids[i])
                        started = i + 1;
                if (r < 0) {
                        fprintf(stderr, "cri-baseline: pod %u: %s\n", i + 1, err.msg);
                        rc = 1;
                        break;
                }
                printf("%u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", i + 1, t[0], t[1], t[2], t[3]);
                fflush(stdout);
        }
        t0 = now_us();
        for (unsigned i = 0; i < started; i++) {
                if (!ids[i])
                        continue;
                if (cri_stop_pod_sandbox(c, ids[i], &err) < 0 || cri_remove_pod_sandbox(c, ids[i], &err) < 0) {
                        fprintf(stderr, "cri-baseline: cleanup of pod %u: %s\n", i + 1, err.msg);
                        rc = 1;
                }
                free(ids[i]);
        }
        printf("# cleanup %" PRIu64 " ms\n", (now_us() - t0) / 1000);
        free(ids);
        cri_client_free(c);
        return rc;
}
