/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `cubelet devices`: the device manager alone (deviceplugin/, the library
 * the agent uses). Serves Registration in the device plugin directory for a
 * while, optionally allocates devices for a synthetic container, and prints
 * what the plugins said as one JSON document. Refuses to run beside a live
 * kubelet.sock; leaves the checkpoint as it is (read-only).
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/time.h"
#include "cli.h"
#include "deviceplugin/deviceplugin.h"

#define DEVICES_CONTAINER "devices-check"

typedef struct DevicesRequest {
        char *resource;
        int64_t count;
} DevicesRequest;

typedef struct DevicesCli {
        const char *dir;
        uint64_t wait_usec;
        DevicesRequest *reqs;
        size_t n_reqs;
} DevicesCli;

static void devices_usage(FILE *f) {
        fputs("Usage: cubelet devices [--device-plugin-dir DIR] [--wait SECONDS] [--allocate RESOURCE=N]...\n"
              "\n"
              "Serves device plugin Registration on DIR/kubelet.sock (default " DP_DEFAULT_DIR ")\n"
              "for SECONDS (default 10; with --allocate, until the devices are there), allocates\n"
              "N devices of each RESOURCE for a container '" DEVICES_CONTAINER "', and prints the\n"
              "resources and allocations as JSON. The checkpoint is left as it is.\n",
              f);
}

/* Whether something accepts connections on path: a live kubelet or cubelet. */
static bool socket_live(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;

        if (strlen(path) >= sizeof(sa.sun_path))
                return false;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return false;
        return connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0;
}

static int parse_args(int argc, char **argv, DevicesCli *c) {
        static const struct option opts[] = {
                { "device-plugin-dir", required_argument, NULL, 'd' },
                { "wait", required_argument, NULL, 'w' },
                { "allocate", required_argument, NULL, 'a' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int o;

        optind = 1;
        while ((o = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                char *end, *eq;
                double secs;
                long long n;
                DevicesRequest *v;

                switch (o) {
                case 'd':
                        c->dir = optarg;
                        break;
                case 'w':
                        errno = 0;
                        secs = strtod(optarg, &end);
                        if (errno || end == optarg || *end || secs < 0 || secs > 86400) {
                                fprintf(stderr, "cubelet devices: --wait '%s': expected seconds (0..86400)\n", optarg);
                                return -EINVAL;
                        }
                        c->wait_usec = (uint64_t) (secs * 1e6);
                        break;
                case 'a':
                        eq = strrchr(optarg, '=');
                        errno = 0;
                        n = eq ? strtoll(eq + 1, &end, 10) : 0;
                        if (!eq || eq == optarg || errno || end == eq + 1 || *end || n <= 0 || n > 1024) {
                                fprintf(stderr, "cubelet devices: --allocate '%s': expected RESOURCE=N (N 1..1024)\n",
                                        optarg);
                                return -EINVAL;
                        }
                        v = realloc(c->reqs, (c->n_reqs + 1) * sizeof(*v));
                        if (!v)
                                return -ENOMEM;
                        c->reqs = v;
                        c->reqs[c->n_reqs].resource = strndup(optarg, (size_t) (eq - optarg));
                        c->reqs[c->n_reqs].count = n;
                        if (!c->reqs[c->n_reqs++].resource)
                                return -ENOMEM;
                        break;
                case 'h':
                        devices_usage(stdout);
                        return 1;
                default:
                        devices_usage(stderr);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "cubelet devices: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 0;
}

static bool requests_satisfied(DpManager *m, const DevicesCli *c) {
        for (size_t i = 0; i < c->n_reqs; i++) {
                char **ids = NULL;
                size_t n = 0;

                if (dp_manager_free_devices(m, c->reqs[i].resource, &ids, &n, NULL) < 0)
                        return false;
                for (size_t j = 0; j < n; j++)
                        free(ids[j]);
                free(ids);
                if (n < (size_t) c->reqs[i].count)
                        return false;
        }
        return true;
}

static json_t *kv_json(const DpKeyValue *kv, size_t n) {
        json_t *o = json_object();

        for (size_t i = 0; o && i < n; i++)
                (void) json_object_set_new(o, kv[i].key, json_string(kv[i].value));
        return o;
}

static json_t *response_json(const DpContainerResponse *r) {
        json_t *mounts = json_array(), *devs = json_array();

        for (size_t i = 0; i < r->n_mounts; i++)
                (void) json_array_append_new(
                        mounts, json_pack("{s:s,s:s,s:b}", "containerPath", r->mounts[i].container_path, "hostPath",
                                          r->mounts[i].host_path, "readOnly", r->mounts[i].read_only));
        for (size_t i = 0; i < r->n_devices; i++)
                (void) json_array_append_new(
                        devs, json_pack("{s:s,s:s,s:s}", "containerPath", r->devices[i].container_path, "hostPath",
                                        r->devices[i].host_path, "permissions", r->devices[i].permissions));
        return json_pack("{s:o,s:o,s:o,s:o}", "envs", kv_json(r->envs, r->n_envs), "mounts", mounts, "devices", devs,
                         "annotations", kv_json(r->annotations, r->n_annotations));
}

static json_t *report_json(DpManager *m, const char *pod_uid) {
        json_t *resources = json_array(), *allocs = json_array();

        for (size_t i = 0; i < dp_manager_n_resources(m); i++) {
                const DpResource *r = dp_manager_resource(m, i);
                json_t *devs = json_array();

                for (size_t j = 0; j < r->n_devices; j++) {
                        const DpDevice *d = &r->devices[j];

                        (void) json_array_append_new(
                                devs, json_pack("{s:s,s:s,s:o}", "id", d->id, "health",
                                                d->healthy ? DP_HEALTHY : DP_UNHEALTHY, "numa",
                                                d->numa >= 0 ? json_pack("[i]", d->numa) : json_array()));
                }
                (void) json_array_append_new(resources, json_pack("{s:s,s:s,s:o}", "name", r->name, "endpoint",
                                                                  r->endpoint, "devices", devs));
        }
        for (size_t i = 0; i < dp_manager_n_allocations(m); i++) {
                const DpAllocation *a = dp_manager_allocation(m, i);
                json_t *ids = json_array();

                if (strcmp(a->pod_uid, pod_uid) != 0)
                        continue;
                for (size_t j = 0; j < a->n_ids; j++)
                        (void) json_array_append_new(ids, json_string(a->ids[j]));
                (void) json_array_append_new(allocs, json_pack("{s:s,s:o,s:o}", "resource", a->resource, "deviceIDs",
                                                               ids, "response", response_json(&a->resp)));
        }
        return json_pack("{s:o,s:o}", "resources", resources, "allocations", allocs);
}

/* Waits for plugins; reports on stderr how long each took from Register to allocatable. */
/* The end of the allocation pass (DpManagerOptions.on_allocated). */
typedef struct Allocated {
        bool done;
        int r;
        char message[CUB_ERR_MSG_MAX];
} Allocated;

static void on_allocated(void *userdata, const char *uid, int r, const char *message, uint64_t took_usec) {
        Allocated *a = userdata;

        (void) uid;
        (void) took_usec;
        a->done = true;
        a->r = r;
        (void) snprintf(a->message, sizeof(a->message), "%s", message);
}

/* The plugin calls run on the pass's thread: wait for its answer (bounded
 * by the calls' deadlines). */
static int wait_allocated(DpManager *m, Allocated *a, CubError *err) {
        while (!a->done) {
                struct pollfd p = { .fd = dp_manager_fd(m), .events = POLLIN };

                if (poll(&p, 1, -1) < 0 && errno != EINTR)
                        return cub_err_set(err, errno, "poll: %m");
                (void) dp_manager_dispatch(m);
        }
        return a->r < 0 ? cub_err_set(err, -a->r, "%s", a->message) : 0;
}

static void wait_for_plugins(DpManager *m, const DevicesCli *c) {
        uint64_t deadline = cub_now_usec(CLOCK_MONOTONIC) + c->wait_usec;
        _cleanup_free_ uint64_t *shown = NULL;
        size_t n_shown = 0;

        for (;;) {
                struct pollfd p = { .fd = dp_manager_fd(m), .events = POLLIN };
                uint64_t now = cub_now_usec(CLOCK_MONOTONIC);
                int timeout;

                if (c->n_reqs > 0 && requests_satisfied(m, c))
                        return;
                if (now >= deadline)
                        return;
                timeout = (int) ((deadline - now + 999) / 1000);
                if (poll(&p, 1, timeout) <= 0)
                        continue;
                (void) dp_manager_dispatch(m);
                now = cub_now_usec(CLOCK_MONOTONIC);
                for (size_t i = 0; i < dp_manager_n_resources(m); i++) {
                        const DpResource *r = dp_manager_resource(m, i);
                        bool seen = false;

                        if (dp_resource_allocatable(r) == 0 || r->registered_usec == 0)
                                continue;
                        for (size_t j = 0; j < n_shown && !seen; j++)
                                seen = shown[j] == r->registered_usec;
                        if (seen)
                                continue;
                        uint64_t *v = realloc(shown, (n_shown + 1) * sizeof(uint64_t));
                        if (!v)
                                continue;
                        shown = v;
                        shown[n_shown++] = r->registered_usec;
                        fprintf(stderr, "cubelet devices: %s: %zu devices allocatable %.3f ms after Register\n",
                                r->name, dp_resource_allocatable(r), (double) (now - r->registered_usec) / 1000.0);
                }
        }
}

int cli_devices(int argc, char **argv) {
        DevicesCli c = { .dir = DP_DEFAULT_DIR, .wait_usec = 10 * CUB_USEC_PER_SEC };
        _cleanup_(dp_manager_freep) DpManager *m = NULL;
        _cleanup_free_ char *sock = NULL;
        char pod_uid[64];
        CubError err = {};
        Allocated allocated = {};
        json_t *doc;
        int r, ret = 0;

        r = parse_args(argc, argv, &c);
        if (r != 0) {
                ret = r > 0 ? 0 : CLI_EXIT_BAD_INPUT;
                goto out;
        }
        if (asprintf(&sock, "%s/%s", c.dir, DP_KUBELET_SOCKET) < 0) {
                sock = NULL;
                ret = 1;
                goto out;
        }
        /* before the manager removes the sockets: never steal a live one */
        if (socket_live(sock)) {
                fprintf(stderr, "cubelet devices: %s is live (a kubelet or cubelet is serving it); stop it first\n",
                        sock);
                ret = CLI_EXIT_BAD_INPUT;
                goto out;
        }
        r = dp_manager_new(&(DpManagerOptions){ .dir = c.dir,
                                                .checkpoint_read_only = true,
                                                .on_allocated = on_allocated,
                                                .userdata = &allocated },
                           &m, &err);
        if (r < 0) {
                fprintf(stderr, "cubelet devices: %s\n", err.msg);
                ret = 1;
                goto out;
        }
        if (*dp_manager_checkpoint_note(m))
                fprintf(stderr, "cubelet devices: %s\n", dp_manager_checkpoint_note(m));

        wait_for_plugins(m, &c);

        (void) snprintf(pod_uid, sizeof(pod_uid), "cubelet-devices-%ld", (long) getpid());
        if (c.n_reqs > 0) {
                _cleanup_free_ const char **names = calloc(c.n_reqs, sizeof(char *));
                _cleanup_free_ int64_t *counts = calloc(c.n_reqs, sizeof(int64_t));
                DpContainerRequest req = { .name = DEVICES_CONTAINER, .n_resources = c.n_reqs };

                if (!names || !counts) {
                        ret = 1;
                        goto out;
                }
                for (size_t i = 0; i < c.n_reqs; i++) {
                        names[i] = c.reqs[i].resource;
                        counts[i] = c.reqs[i].count;
                }
                req.resources = names;
                req.counts = counts;
                r = dp_manager_allocate_pod(m, pod_uid, &req, 1, &err);
                if (r > 0)
                        r = wait_allocated(m, &allocated, &err);
                if (r < 0) {
                        fprintf(stderr, "cubelet devices: --allocate after %.1f s: %s\n", (double) c.wait_usec / 1e6,
                                err.msg);
                        ret = 1;
                        goto out;
                }
        }
        doc = report_json(m, pod_uid);
        if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) < 0) {
                json_decref(doc);
                fprintf(stderr, "cubelet devices: cannot print the report\n");
                ret = 1;
                goto out;
        }
        json_decref(doc);
        fputc('\n', stdout);
out:
        for (size_t i = 0; i < c.n_reqs; i++)
                free(c.reqs[i].resource);
        free(c.reqs);
        return ret;
}
