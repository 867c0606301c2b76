/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Logging to stderr. Under systemd (JOURNAL_STREAM set) each line carries an
 * sd-daemon "<N>" priority prefix that journald turns into the priority;
 * on a terminal lines read "cubelet: error: ...". Debug lines appear only
 * when CUBELET_LOG_LEVEL=debug. Only loop-owning code logs; libraries
 * return CubError.
 */

#include <syslog.h>

#include "err.h"

void cub_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs "<what>: <err->msg>" at level and returns r (a negative errno). */
int cub_log_errno(int level, int r, const CubError *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
