/* SPDX-License-Identifier: Apache-2.0 */
/* `cubelet admit` (placeholder until its module lands). */
#include "cli.h"
#include "util/log.h"

int cli_admit(int argc, char **argv) {
        (void) argc;
        (void) argv;
        cub_log(LOG_ERR, "admit: not implemented yet");
        return CLI_EXIT_BAD_INPUT;
}
