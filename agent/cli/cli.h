/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Subcommands of the cubelet binary. Each returns the process exit code:
 * 0 on a decision, 2 on bad input (message on stderr). */

int cli_main(int argc, char **argv);
int cli_plan(int argc, char **argv);
int cli_version(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_describe(int argc, char **argv);
int cli_admit(int argc, char **argv);
int cli_rank(int argc, char **argv);
int cli_devices(int argc, char **argv);
int cli_logs(int argc, char **argv);
int cli_exec(int argc, char **argv);

#define CLI_EXIT_BAD_INPUT 2
