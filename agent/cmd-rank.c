/* SPDX-License-Identifier: Apache-2.0 */
/* `cubelet rank` (placeholder until its module lands). */
#include "cli.h"
#include "util/log.h"

int cli_rank(int argc, char **argv) {
        (void) argc;
        (void) argv;
        cub_log(LOG_ERR, "rank: not implemented yet");
        return CLI_EXIT_BAD_INPUT;
}
