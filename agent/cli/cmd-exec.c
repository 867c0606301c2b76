/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `cubelet exec POD [-c CONTAINER] -- CMD...`: a non-interactive command in
 * a running container of a pod cubelet manages, through the CRI's ExecSync
 * (no TTY, no stdin). Its stdout and stderr are passed through and its exit
 * code is cubelet's, as `kubectl exec` (which adds "command terminated with
 * exit code N" on stderr).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cri/cri.h"
#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../worker/worker.h"
#include "cli.h"

#define EXIT_FAIL 1

static void exec_usage(FILE *f) {
        fputs("Usage: cubelet exec [-n NAMESPACE] POD [-c CONTAINER] [--timeout SECONDS] -- CMD [ARG...]\n"
              "\n"
              "Runs CMD in the pod's running container through the CRI's ExecSync, passes\n"
              "its stdout and stderr through and exits with its exit code. POD is the pod's\n"
              "name as 'cubelet status' shows it (NAMESPACE default \"default\").\n"
              "  -c, --container NAME      required when the pod has several containers\n"
              "      --timeout SECONDS     ExecSync's timeout (default 0: none)\n"
              "      --runtime-endpoint EP the CRI socket (default " CRI_DEFAULT_ENDPOINT ")\n",
              f);
}

int cli_exec(int argc, char **argv) {
        static const struct option opts[] = {
                { "container", required_argument, NULL, 'c' },
                { "namespace", required_argument, NULL, 'n' },
                { "timeout", required_argument, NULL, 't' },
                { "runtime-endpoint", required_argument, NULL, 'r' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *ns = "default", *pod = NULL, *container = NULL, *endpoint = CRI_DEFAULT_ENDPOINT;
        _cleanup_(cri_client_freep) CriClient *cri = NULL;
        CriContainer *ct = NULL;
        const CriContainer *target = NULL;
        CriExecResult res = {};
        CubError err = {};
        int64_t timeout = 0;
        size_t n = 0;
        char **cmd;
        int o, r, dash;

        /* options and POD before "--", the command after it */
        for (dash = 1; dash < argc && strcmp(argv[dash], "--") != 0; dash++)
                ;
        optind = 1;
        while ((o = getopt_long(dash, argv, "c:n:h", opts, NULL)) >= 0) {
                char *end;

                switch (o) {
                case 'c':
                        container = optarg;
                        break;
                case 'n':
                        ns = optarg;
                        break;
                case 't':
                        errno = 0;
                        timeout = strtoll(optarg, &end, 10);
                        if (errno || *end || end == optarg || timeout < 0) {
                                cub_log(LOG_ERR, "exec: --timeout '%s': expected seconds", optarg);
                                return CLI_EXIT_BAD_INPUT;
                        }
                        break;
                case 'r':
                        endpoint = optarg;
                        break;
                case 'h':
                        exec_usage(stdout);
                        return 0;
                default:
                        exec_usage(stderr);
                        return CLI_EXIT_BAD_INPUT;
                }
        }
        if (optind < dash)
                pod = argv[optind++];
        if (!pod || optind != dash || dash + 1 >= argc) {
                fputs("error: expected 'exec POD [-c CONTAINER] -- COMMAND [args...]'.\n", stderr);
                return CLI_EXIT_BAD_INPUT;
        }
        cmd = argv + dash + 1;

        r = cri_client_new(endpoint, 0, &cri, &err);
        if (r >= 0) {
                const char *selector[] = { WORKER_LABEL_NAME, pod, WORKER_LABEL_NAMESPACE, ns, NULL };

                r = cri_list_containers(cri, NULL, selector, &ct, &n, &err);
        }
        if (r < 0) {
                fprintf(stderr, "error: %s\n", err.msg);
                return EXIT_FAIL;
        }
        if (n == 0) {
                fprintf(stderr, "Error from server (NotFound): pods \"%s\" not found\n", pod);
                return EXIT_FAIL;
        }
        if (!container) {
                /* the distinct container names in the pod's order, as kubectl
                 * lists them: by each name's first creation (the sync creates
                 * them in spec order; ListContainers' own order is the
                 * runtime's map order) */
                _cleanup_free_ size_t *first = calloc(n + 1, sizeof(size_t));
                size_t distinct = 0;

                if (!first) {
                        cri_containers_free(ct, n);
                        return EXIT_FAIL;
                }
                for (size_t i = 0; i < n; i++) {
                        size_t k = 0;

                        while (k < distinct && strcmp(ct[first[k]].name, ct[i].name) != 0)
                                k++;
                        if (k == distinct)
                                first[distinct++] = i;
                        else if (ct[i].created_at < ct[first[k]].created_at)
                                first[k] = i;
                }
                for (size_t i = 1; i < distinct; i++)
                        for (size_t k = i; k > 0 && ct[first[k]].created_at < ct[first[k - 1]].created_at; k--) {
                                size_t t = first[k];

                                first[k] = first[k - 1];
                                first[k - 1] = t;
                        }
                if (distinct > 1) {
                        fprintf(stderr, "error: a container name must be specified for pod %s, choose one of: [", pod);
                        for (size_t i = 0; i < distinct; i++)
                                fprintf(stderr, "%s%s", i ? " " : "", ct[first[i]].name);
                        fputs("]\n", stderr);
                        cri_containers_free(ct, n);
                        return EXIT_FAIL;
                }
                container = ct[0].name;
        }
        for (size_t i = 0; i < n; i++)
                if (strcmp(ct[i].name, container) == 0 && ct[i].state == CRI_CONTAINER_RUNNING &&
                    (!target || ct[i].attempt > target->attempt))
                        target = &ct[i];
        if (!target) {
                bool known = false;

                for (size_t i = 0; i < n; i++)
                        known = known || strcmp(ct[i].name, container) == 0;
                if (known)
                        fprintf(stderr, "error: unable to upgrade connection: container not found (\"%s\")\n",
                                container);
                else
                        fprintf(stderr, "Error from server (BadRequest): container %s is not valid for pod %s\n",
                                container, pod);
                cri_containers_free(ct, n);
                return EXIT_FAIL;
        }
        r = cri_exec_sync(cri, target->id, (const char *const *) cmd, timeout, &res, &err);
        cri_containers_free(ct, n);
        if (r < 0) {
                fprintf(stderr, "error: %s\n", err.msg);
                return EXIT_FAIL;
        }
        (void) cub_write_all(STDOUT_FILENO, res.out, res.n_out);
        (void) cub_write_all(STDERR_FILENO, res.err_out, res.n_err);
        r = res.exit_code;
        cri_exec_result_done(&res);
        if (r != 0)
                fprintf(stderr, "command terminated with exit code %d\n", r);
        return r < 0 || r > 255 ? EXIT_FAIL : r;
}
