/* SPDX-License-Identifier: Apache-2.0 */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int normalize(int e) {
        if (e < 0)
                e = -e;
        return e == 0 ? EIO : e;
}

int cub_err_set(CubError *err, int errno_, const char *fmt, ...) {
        int e = normalize(errno_);
        va_list ap;

        if (!err)
                return -e;
        err->code = e;
        va_start(ap, fmt);
        (void) vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        return -e;
}

__attribute__((format(printf, 2, 0))) static void prepend(CubError *err, const char *fmt, va_list ap) {
        char prefix[CUB_ERR_MSG_MAX], old[CUB_ERR_MSG_MAX];

        (void) vsnprintf(prefix, sizeof(prefix), fmt, ap);
        memcpy(old, err->msg, sizeof(old));
        old[sizeof(old) - 1] = '\0';
        if (snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old) >= (int) sizeof(err->msg))
                memcpy(err->msg + sizeof(err->msg) - 4, "...", 4); /* truncated, say so */
}

int cub_err_wrap(CubError *err, const char *fmt, ...) {
        va_list ap;

        /* without err there is no code to return: the caller's r is not
         * passed in (use cub_err_wrap_errno()) */
        if (!err)
                return -EIO;
        if (err->code == 0)
                err->code = EIO;
        va_start(ap, fmt);
        prepend(err, fmt, ap);
        va_end(ap);
        return -err->code;
}

int cub_err_wrap_errno(CubError *err, int errno_, const char *fmt, ...) {
        int e = normalize(errno_);
        va_list ap;

        if (!err)
                return -e;
        err->code = e;
        va_start(ap, fmt);
        prepend(err, fmt, ap);
        va_end(ap);
        return -e;
}

void cub_err_clear(CubError *err) {
        if (!err)
                return;
        err->code = 0;
        err->msg[0] = '\0';
}
