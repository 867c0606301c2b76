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

int cub_err_wrap(CubError *err, const char *fmt, ...) {
        char prefix[CUB_ERR_MSG_MAX], old[CUB_ERR_MSG_MAX];
        va_list ap;

        if (!err)
                return -EIO;
        if (err->code == 0)
                err->code = EIO;
        va_start(ap, fmt);
        (void) vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof(old));
        old[sizeof(old) - 1] = '\0';
        if (snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old) >= (int) sizeof(err->msg))
                memcpy(err->msg + sizeof(err->msg) - 4, "...", 4); /* truncated, say so */
        return -err->code;
}

void cub_err_clear(CubError *err) {
        if (!err)
                return;
        err->code = 0;
        err->msg[0] = '\0';
}
