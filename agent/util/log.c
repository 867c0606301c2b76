/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *level_name(int level) {
        switch (level) {
        case LOG_EMERG:
        case LOG_ALERT:
        case LOG_CRIT:
        case LOG_ERR:
                return "error";
        case LOG_WARNING:
                return "warning";
        case LOG_NOTICE:
        case LOG_INFO:
                return "info";
        default:
                return "debug";
        }
}

static bool level_enabled(int level) {
        const char *e;

        if (level < LOG_DEBUG)
                return true;
        e = getenv("CUBELET_LOG_LEVEL");
        return e && strcmp(e, "debug") == 0;
}

__attribute__((format(printf, 3, 0))) static void vlog(int level, const char *suffix, const char *fmt, va_list ap) {
        char line[2048];

        if (!level_enabled(level))
                return;
        (void) vsnprintf(line, sizeof(line), fmt, ap);
        if (getenv("JOURNAL_STREAM"))
                fprintf(stderr, "<%d>%s%s\n", level, line, suffix);
        else
                fprintf(stderr, "cubelet: %s: %s%s\n", level_name(level), line, suffix);
}

void cub_log(int level, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vlog(level, "", fmt, ap);
        va_end(ap);
}

int cub_log_errno(int level, int r, const CubError *err, const char *fmt, ...) {
        char suffix[CUB_ERR_MSG_MAX + 3] = "";
        va_list ap;

        if (err && err->msg[0])
                (void) snprintf(suffix, sizeof(suffix), ": %s", err->msg);
        else if (r < 0)
                (void) snprintf(suffix, sizeof(suffix), ": %s", strerror(-r));
        va_start(ap, fmt);
        vlog(level, suffix, fmt, ap);
        va_end(ap);
        return r;
}

bool cub_log_changed(int level, int r, const CubError *err, char last[static CUB_ERR_MSG_MAX], const char *what) {
        if (r < 0) {
                const char *msg = err && err->msg[0] ? err->msg : strerror(-r);

                if (strcmp(last, msg) != 0)
                        cub_log(level, "%s: %s", what, msg);
                (void) snprintf(last, CUB_ERR_MSG_MAX, "%s", msg);
                return true;
        }
        if (last[0])
                cub_log(LOG_INFO, "%s: working again", what);
        last[0] = '\0';
        return false;
}
