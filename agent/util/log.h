/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Logging to stderr. Under systemd (JOURNAL_STREAM set) each line carries an
 * sd-daemon "<N>" priority prefix that journald turns into the priority;
 * on a terminal lines read "cubelet: error: ...". Debug lines appear only
 * when CUBELET_LOG_LEVEL=debug. Only loop-owning code logs; libraries
 * return CubError.
 */

#include <stdbool.h>
#include <syslog.h>

#include "err.h"

void cub_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A task that fails the same way again and again (a periodic pass while
 * the runtime is away, a checkpoint on a full disk) is journaled once per
 * distinct error and once when it succeeds again: r < 0 logs "<what>:
 * <err->msg>" at level unless last already holds that message, r >= 0
 * logs "<what>: working again" (LOG_INFO) when last held one. last is the
 * caller's, "" at first. Returns whether r < 0. */
bool cub_log_changed(int level, int r, const CubError *err, char last[static CUB_ERR_MSG_MAX], const char *what);

/* Logs "<what>: <err->msg>" at level and returns r (a negative errno). */
int cub_log_errno(int level, int r, const CubError *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
