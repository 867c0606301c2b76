/* SPDX-License-Identifier: Apache-2.0 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "../util/log.h"

#ifndef CUBELET_VERSION
#define CUBELET_VERSION "0.0.0-dev"
#endif

static void usage(FILE *f) {
        fputs("Usage: cubelet COMMAND [OPTIONS...]\n"
              "\n"
              "A small node agent for Kubernetes-style pods.\n"
              "\n"
              "Commands:\n"
              "  run [OPTIONS]     Run the agent (see 'cubelet run --help')\n"
              "  status [--socket PATH] [-o table|json]\n"
              "                    Pods, phases, restarts and errors of the running agent\n"
              "  describe [-n NAMESPACE] POD\n"
              "                    One pod as `kubectl describe pod` prints it, events last\n"
              "  plan [--config FILE] [--node FILE] MANIFEST...\n"
              "                    What the agent would do for these static pod manifests:\n"
              "                    QoS class, effective resources, cgroup v2 values and the\n"
              "                    CRI container resources, as one JSON document\n"
              "  admit --node NODE [--running PODLIST] [--config FILE] MANIFEST\n"
              "                    The admission decision for one pod on this node: filters,\n"
              "                    placement (exclusive CPUs), scores and preemption victims\n"
              "  rank --input SNAPSHOT [--policy cubelet|kubelet]\n"
              "                    The eviction order of pods for one pressure signal\n"
              "  devices [--device-plugin-dir DIR] [--wait SECONDS] [--allocate RESOURCE=N]...\n"
              "                    Device plugins that register in DIR, and an allocation\n"
              "  logs [-f] [-p] [--tail N] [--timestamps] [-n NS] POD [-c CONTAINER]\n"
              "                    A container's log, as kubectl logs prints it\n"
              "  exec [-n NS] POD [-c CONTAINER] -- CMD...\n"
              "                    Runs a command in a container (ExecSync), exit code passed through\n"
              "  version           Print the version as JSON\n"
              "\n"
              "Run 'cubelet COMMAND --help' for a command's options.\n",
              f);
}

int cli_version(int argc, char **argv) {
        (void) argv;
        if (argc > 1) {
                cub_log(LOG_ERR, "version: unexpected argument '%s'", argv[1]);
                return CLI_EXIT_BAD_INPUT;
        }
        printf("{\"version\":\"%s\"}\n", CUBELET_VERSION);
        return 0;
}

int cli_main(int argc, char **argv) {
        static const struct {
                const char *name;
                int (*run)(int argc, char **argv);
        } commands[] = {
                { "run", cli_run },         { "status", cli_status },   { "describe", cli_describe },
                { "plan", cli_plan },       { "admit", cli_admit },     { "rank", cli_rank },
                { "version", cli_version }, { "devices", cli_devices }, { "logs", cli_logs },
                { "exec", cli_exec },
        };

        if (argc < 2) {
                usage(stderr);
                return CLI_EXIT_BAD_INPUT;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
                usage(stdout);
                return 0;
        }
        if (strcmp(argv[1], "--version") == 0)
                return cli_version(1, argv + 1);
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return commands[i].run(argc - 1, argv + 1);
        cub_log(LOG_ERR, "unknown command '%s' (try 'cubelet --help')", argv[1]);
        return CLI_EXIT_BAD_INPUT;
}
