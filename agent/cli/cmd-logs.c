/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `cubelet logs [-f] [--previous] [--tail N] [--timestamps] POD [-c CONTAINER]`:
 * a container's log as `kubectl logs` prints it, read from the CRI-format
 * files under the pod log directory (agent/logs), without asking the agent.
 * The pod is found by name (as `cubelet status` shows it) and namespace in
 * <podLogsDir>/<ns>_<name>_<uid>; the container's current attempt is its
 * highest <restart>.log, --previous the one before. -f follows the file
 * (through rotation) until the container has ended and no newer attempt
 * appeared (asked through the CRI socket), or SIGINT.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../cri/cri.h"
#include "../logs/logs.h"
#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../worker/worker.h"
#include "cli.h"

#define EXIT_FAIL 1
#define FOLLOW_POLL_USEC 200000

typedef struct LogsCli {
        const char *ns, *pod, *container, *root, *endpoint;
        bool follow, previous, timestamps;
        int64_t tail;
} LogsCli;

static void logs_usage(FILE *f) {
        fputs("Usage: cubelet logs [-f] [-p|--previous] [--tail N] [--timestamps] [-n NAMESPACE] POD [-c CONTAINER]\n"
              "\n"
              "Prints a container's log as kubectl logs does, from the CRI-format files in\n"
              "the pod log directory (default " LOGS_DEFAULT_ROOT ", --pod-logs-dir DIR).\n"
              "POD is the pod's name as 'cubelet status' shows it (NAMESPACE default \"default\").\n"
              "  -c, --container NAME   required when the pod has several containers\n"
              "  -f, --follow           keep printing until the container ends (or SIGINT)\n"
              "  -p, --previous         the previous attempt of the container\n"
              "      --tail N           the last N lines (-1: all)\n"
              "      --timestamps       each line starts with its RFC 3339 timestamp\n"
              "      --runtime-endpoint EP  the CRI socket -f asks whether the container runs\n"
              "                         (default " CRI_DEFAULT_ENDPOINT ")\n",
              f);
}

/* "<ns>_<pod>_<uid>" in root; the newest when several (an edited manifest) */
static int find_pod_dir(const LogsCli *c, char **ret_dir, char **ret_uid) {
        _cleanup_free_ char *prefix = NULL;
        DIR *d = opendir(c->root);
        struct dirent *de;
        struct timespec best = {};

        *ret_dir = *ret_uid = NULL;
        if (!d)
                return -errno;
        if (asprintf(&prefix, "%s_%s_", c->ns, c->pod) < 0) {
                closedir(d);
                return -ENOMEM;
        }
        while ((de = readdir(d))) {
                struct stat st;
                char *path;

                if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 || strchr(de->d_name + strlen(prefix), '_'))
                        continue;
                if (asprintf(&path, "%s/%s", c->root, de->d_name) < 0)
                        break;
                if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
                    (!*ret_dir || st.st_mtim.tv_sec > best.tv_sec ||
                     (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec > best.tv_nsec))) {
                        free(*ret_dir);
                        free(*ret_uid);
                        *ret_dir = path;
                        *ret_uid = strdup(de->d_name + strlen(prefix));
                        best = st.st_mtim;
                } else
                        free(path);
        }
        closedir(d);
        return *ret_dir ? 0 : -ENOENT;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* the container directories of the pod, sorted */
static char **list_containers(const char *dir, size_t *ret_n) {
        DIR *d = opendir(dir);
        struct dirent *de;
        char **l = calloc(1, sizeof(char *));
        size_t n = 0;

        *ret_n = 0;
        if (!d || !l) {
                if (d)
                        closedir(d);
                return l;
        }
        while ((de = readdir(d))) {
                char **nl;

                if (de->d_name[0] == '.' || de->d_type != DT_DIR)
                        continue;
                nl = realloc(l, (n + 2) * sizeof(char *));
                if (!nl)
                        break;
                l = nl;
                l[n] = strdup(de->d_name);
                if (!l[n])
                        break;
                l[++n] = NULL;
        }
        closedir(d);
        qsort(l, n, sizeof(char *), cmp_str);
        *ret_n = n;
        return l;
}

static void strv_free(char **l) {
        for (size_t i = 0; l && l[i]; i++)
                free(l[i]);
        free(l);
}

/* The highest attempt below `below` (UINT32_MAX+1: any), -1 when none. */
static int64_t find_attempt(const char *cdir, int64_t below) {
        DIR *d = opendir(cdir);
        struct dirent *de;
        int64_t best = -1;

        if (!d)
                return -1;
        while ((de = readdir(d))) {
                char *end;
                unsigned long long a;

                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                errno = 0;
                a = strtoull(de->d_name, &end, 10);
                if (errno || strcmp(end, ".log") != 0 || a > UINT32_MAX)
                        continue;
                if ((int64_t) a < below && (int64_t) a > best)
                        best = (int64_t) a;
        }
        closedir(d);
        return best;
}

/* Renders buf[0..len) to stdout; returns the bytes consumed. */
static size_t emit(const LogsCli *c, const char *buf, size_t len, bool final) {
        _cleanup_free_ char *out = NULL;
        size_t n_out = 0, used = 0, bad = 0;

        if (logs_render(buf, len, c->timestamps, final, &out, &n_out, &used, &bad) < 0) {
                cub_log(LOG_ERR, "logs: out of memory");
                return len;
        }
        if (n_out > 0)
                (void) cub_write_all(STDOUT_FILENO, out, n_out);
        return used;
}

static int read_all(int fd, char **ret, size_t *ret_n) {
        size_t cap = 65536, n = 0;
        char *buf = malloc(cap);

        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t r;

                if (n == cap) {
                        char *nb = realloc(buf, cap * 2);

                        if (!nb) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = nb;
                        cap *= 2;
                }
                r = read(fd, buf + n, cap - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        free(buf);
                        return -errno;
                }
                if (r == 0)
                        break;
                n += (size_t) r;
        }
        *ret = buf;
        *ret_n = n;
        return 0;
}

/* Whether the container's attempt still runs (or may: the runtime cannot
 * be asked). */
static bool still_running(CriClient *cri, const char *uid, const char *container, uint32_t attempt) {
        const char *selector[] = { WORKER_LABEL_UID, uid, WORKER_LABEL_CONTAINER, container, NULL };
        CriContainer *ct = NULL;
        size_t n = 0;
        bool running = false, seen = false;
        CubError err = {};

        if (!cri || cri_list_containers(cri, NULL, selector, &ct, &n, &err) < 0)
                return true;
        for (size_t i = 0; i < n; i++)
                if (ct[i].attempt == attempt) {
                        seen = true;
                        running = ct[i].state == CRI_CONTAINER_RUNNING || ct[i].state == CRI_CONTAINER_CREATED;
                }
        cri_containers_free(ct, n);
        return running || !seen ? running : false;
}

static int follow(const LogsCli *c, const char *cdir, const char *path, int fd, char *pending, size_t n_pending,
                  const char *uid, uint32_t attempt) {
        _cleanup_(cri_client_freep) CriClient *cri = NULL;
        CubError err = {};
        struct stat st_fd, st_path;
        char chunk[65536];
        uint64_t last_check = 0;

        if (cri_client_new(c->endpoint, 0, &cri, &err) < 0)
                cri = NULL;
        for (;;) {
                ssize_t r = read(fd, chunk, sizeof(chunk));

                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r > 0) {
                        char *np = realloc(pending, n_pending + (size_t) r);
                        size_t used;

                        if (!np)
                                return -ENOMEM;
                        pending = np;
                        memcpy(pending + n_pending, chunk, (size_t) r);
                        n_pending += (size_t) r;
                        used = emit(c, pending, n_pending, false);
                        memmove(pending, pending + used, n_pending - used);
                        n_pending -= used;
                        continue;
                }
                /* at the end: rotated (the path is a new file)? */
                if (fstat(fd, &st_fd) == 0 && stat(path, &st_path) == 0 &&
                    (st_fd.st_ino != st_path.st_ino || st_fd.st_dev != st_path.st_dev)) {
                        int nfd = open(path, O_RDONLY | O_CLOEXEC);

                        if (nfd >= 0) {
                                close(fd);
                                fd = nfd;
                                continue;
                        }
                }
                {
                        struct timespec ts;
                        uint64_t now;

                        clock_gettime(CLOCK_MONOTONIC, &ts);
                        now = (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
                        if (now - last_check >= 1000000ULL) {
                                last_check = now;
                                /* a newer attempt, or the runtime says it ended: done */
                                if (find_attempt(cdir, (int64_t) UINT32_MAX + 1) > (int64_t) attempt ||
                                    !still_running(cri, uid, c->container, attempt)) {
                                        (void) emit(c, pending, n_pending, true);
                                        free(pending);
                                        close(fd);
                                        return 0;
                                }
                        }
                }
                (void) usleep(FOLLOW_POLL_USEC);
        }
}

int cli_logs(int argc, char **argv) {
        static const struct option opts[] = {
                { "follow", no_argument, NULL, 'f' },
                { "previous", no_argument, NULL, 'p' },
                { "timestamps", no_argument, NULL, 't' },
                { "tail", required_argument, NULL, 'T' },
                { "container", required_argument, NULL, 'c' },
                { "namespace", required_argument, NULL, 'n' },
                { "pod-logs-dir", required_argument, NULL, 'd' },
                { "runtime-endpoint", required_argument, NULL, 'r' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        LogsCli c = { .ns = "default", .root = LOGS_DEFAULT_ROOT, .endpoint = CRI_DEFAULT_ENDPOINT, .tail = -1 };
        _cleanup_free_ char *dir = NULL, *uid = NULL, *cdir = NULL, *path = NULL, *buf = NULL;
        char **containers;
        size_t n_containers = 0, n = 0, off;
        int64_t attempt;
        int o, fd, r;

        optind = 1;
        while ((o = getopt_long(argc, argv, "fpc:n:h", opts, NULL)) >= 0) {
                char *end;

                switch (o) {
                case 'f':
                        c.follow = true;
                        break;
                case 'p':
                        c.previous = true;
                        break;
                case 't':
                        c.timestamps = true;
                        break;
                case 'T':
                        errno = 0;
                        c.tail = strtoll(optarg, &end, 10);
                        if (errno || *end || end == optarg || c.tail < -1) {
                                cub_log(LOG_ERR, "logs: --tail '%s': expected a number of lines, -1 for all", optarg);
                                return CLI_EXIT_BAD_INPUT;
                        }
                        break;
                case 'c':
                        c.container = optarg;
                        break;
                case 'n':
                        c.ns = optarg;
                        break;
                case 'd':
                        c.root = optarg;
                        break;
                case 'r':
                        c.endpoint = optarg;
                        break;
                case 'h':
                        logs_usage(stdout);
                        return 0;
                default:
                        logs_usage(stderr);
                        return CLI_EXIT_BAD_INPUT;
                }
        }
        /* getopt_long permutes: POD (and kubectl's positional CONTAINER) are left */
        if (optind < argc)
                c.pod = argv[optind++];
        if (optind < argc && !c.container)
                c.container = argv[optind++];
        if (optind < argc) {
                cub_log(LOG_ERR, "logs: unexpected argument '%s'", argv[optind]);
                return CLI_EXIT_BAD_INPUT;
        }
        if (!c.pod) {
                fputs("error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\n", stderr);
                return CLI_EXIT_BAD_INPUT;
        }
        if (c.follow && c.previous) {
                fputs("error: only one of follow (-f) or previous (-p) is allowed\n", stderr);
                return CLI_EXIT_BAD_INPUT;
        }
        r = find_pod_dir(&c, &dir, &uid);
        if (r < 0) {
                fprintf(stderr, "Error from server (NotFound): pods \"%s\" not found\n", c.pod);
                return EXIT_FAIL;
        }
        containers = list_containers(dir, &n_containers);
        if (!c.container) {
                if (n_containers == 1)
                        c.container = containers[0];
                else {
                        fprintf(stderr, "error: a container name must be specified for pod %s, choose one of: [",
                                c.pod);
                        for (size_t i = 0; i < n_containers; i++)
                                fprintf(stderr, "%s%s", i ? " " : "", containers[i]);
                        fputs("]\n", stderr);
                        strv_free(containers);
                        return EXIT_FAIL;
                }
        }
        if (asprintf(&cdir, "%s/%s", dir, c.container) < 0) {
                strv_free(containers);
                return EXIT_FAIL;
        }
        attempt = find_attempt(cdir, (int64_t) UINT32_MAX + 1);
        if (attempt < 0) {
                struct stat st;

                if (stat(cdir, &st) == 0)
                        fprintf(stderr,
                                "Error from server (BadRequest): container \"%s\" in pod \"%s\" is waiting to start: "
                                "ContainerCreating\n",
                                c.container, c.pod);
                else
                        fprintf(stderr, "error: container %s is not valid for pod %s\n", c.container, c.pod);
                strv_free(containers);
                return EXIT_FAIL;
        }
        if (c.previous) {
                attempt = find_attempt(cdir, attempt);
                if (attempt < 0) {
                        fprintf(stderr,
                                "Error from server (BadRequest): previous terminated container \"%s\" in pod \"%s\" "
                                "not found\n",
                                c.container, c.pod);
                        strv_free(containers);
                        return EXIT_FAIL;
                }
        }
        c.container = strdupa(c.container);
        strv_free(containers);
        if (asprintf(&path, "%s/%" PRId64 ".log", cdir, attempt) < 0)
                return EXIT_FAIL;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "error: '%s': %s\n", path, strerror(errno));
                return EXIT_FAIL;
        }
        r = read_all(fd, &buf, &n);
        if (r < 0) {
                fprintf(stderr, "error: '%s': %s\n", path, strerror(-r));
                close(fd);
                return EXIT_FAIL;
        }
        off = logs_tail_offset(buf, n, c.tail);
        if (!c.follow) {
                (void) emit(&c, buf + off, n - off, true);
                close(fd);
                return 0;
        }
        {
                size_t used = emit(&c, buf + off, n - off, false);
                char *pending = malloc(n - off - used + 1);

                if (!pending) {
                        close(fd);
                        return EXIT_FAIL;
                }
                memcpy(pending, buf + off + used, n - off - used);
                r = follow(&c, cdir, path, fd, pending, n - off - used, uid, (uint32_t) attempt);
        }
        return r < 0 ? EXIT_FAIL : 0;
}
