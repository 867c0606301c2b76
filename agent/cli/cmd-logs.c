/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `cubelet logs [-f] [--previous] [--tail N] [--timestamps] POD [-c CONTAINER]`:
 * a container's log as `kubectl logs` prints it, read from the CRI-format
 * files under the pod log directory (agent/logs/read.c), without asking the agent.
 * The pod is found by name (as `cubelet status` shows it) and namespace in
 * <podLogsDir>/<ns>_<name>_<uid>; the container's current attempt is its
 * highest <restart>.log, --previous the one before. -f follows the file
 * (through rotation) until the container has ended and no newer attempt
 * appeared (asked through the CRI socket), or SIGINT.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
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

static void strv_freep(char ***l) {
        for (size_t i = 0; *l && (*l)[i]; i++)
                free((*l)[i]);
        free(*l);
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

static uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

/* Prints the reader's output; following, until the attempt ended (a newer
 * one appeared, which the reader sees, or the runtime says it no longer
 * runs, asked at most once a second). */
static int print_log(const LogsCli *c, LogsReader *rd, const char *uid) {
        _cleanup_(cri_client_freep) CriClient *cri = NULL;
        CubError err = {};
        char buf[65536];
        uint64_t last_check = 0;
        bool ended = false;

        if (c->follow && cri_client_new(c->endpoint, 0, &cri, &err) < 0)
                cri = NULL;
        for (;;) {
                ssize_t n = logs_reader_read(rd, buf, sizeof(buf), ended);
                uint64_t now;

                if (n > 0) {
                        (void) cub_write_all(STDOUT_FILENO, buf, (size_t) n);
                        continue;
                }
                if (n != -EAGAIN)
                        return (int) n;
                now = now_usec();
                if (now - last_check >= 1000000ULL) {
                        last_check = now;
                        if (!still_running(cri, uid, c->container, logs_reader_attempt(rd))) {
                                ended = true;
                                continue;
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
        _cleanup_free_ char *dir = NULL, *uid = NULL, *cdir = NULL;
        _cleanup_(strv_freep) char **containers = NULL;
        _cleanup_(logs_reader_freep) LogsReader *rd = NULL;
        LogsReadOptions o = { .tail_lines = -1, .stream = -1 };
        CubError err = {};
        size_t n_containers = 0;
        int opt, r;

        optind = 1;
        while ((opt = getopt_long(argc, argv, "fpc:n:h", opts, NULL)) >= 0) {
                char *end;

                switch (opt) {
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
        o.follow = c.follow;
        o.previous = c.previous;
        o.timestamps = c.timestamps;
        o.tail_lines = c.tail;
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
                        return EXIT_FAIL;
                }
        }
        if (asprintf(&cdir, "%s/%s", dir, c.container) < 0) {
                cdir = NULL;
                return EXIT_FAIL;
        }
        r = logs_reader_open(cdir, c.pod, &o, &rd, &err);
        if (r == -ENOENT && c.previous) {
                /* no previous attempt: is there a current one? */
                _cleanup_(logs_reader_freep) LogsReader *cur = NULL;
                LogsReadOptions oc = { .tail_lines = 0, .stream = -1 };

                if (logs_reader_open(cdir, c.pod, &oc, &cur, &err) == 0) {
                        fprintf(stderr,
                                "Error from server (BadRequest): previous terminated container \"%s\" in pod \"%s\" "
                                "not found\n",
                                c.container, c.pod);
                        return EXIT_FAIL;
                }
        }
        if (r == -ENOENT) {
                struct stat st;

                if (stat(cdir, &st) == 0)
                        fprintf(stderr,
                                "Error from server (BadRequest): container \"%s\" in pod \"%s\" is waiting to start: "
                                "ContainerCreating\n",
                                c.container, c.pod);
                else
                        fprintf(stderr, "error: container %s is not valid for pod %s\n", c.container, c.pod);
                return EXIT_FAIL;
        }
        if (r < 0) {
                fprintf(stderr, "error: %s\n", err.msg);
                return EXIT_FAIL;
        }
        r = print_log(&c, rd, uid);
        return r < 0 ? EXIT_FAIL : 0;
}
