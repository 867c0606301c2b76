/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The error contract (crun's and systemd's, merged):
 *
 *   int f(..., CubError *err);
 *
 * returns >= 0 on success and exactly -errno on failure. On failure `err`
 * is filled with a human message; on success it is left untouched. The
 * struct is caller-owned and allocation-free so that error paths work under
 * memory pressure and a dropped error never leaks.
 *
 * cub_err_set() fills the message and returns -errno_, so callers write
 *     return cub_err_set(err, EINVAL, "field '%s': ...", name);
 * cub_err_wrap() prepends context to an existing message:
 *     return cub_err_wrap(err, "pod %s", name);
 * giving "pod default/web: cgroup ...: write 'memory.max': Permission denied".
 *
 * `err` may be NULL: the functions then only return the code.
 */

#include <stddef.h>

#define CUB_ERR_MSG_MAX 1024

typedef struct CubError {
        int code; /* positive errno */
        char msg[CUB_ERR_MSG_MAX];
} CubError;

int cub_err_set(CubError *err, int errno_, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int cub_err_wrap(CubError *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cub_err_clear(CubError *err);
