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
 * cub_err_wrap_errno() prepends context to the message of a failed call
 * and returns that call's code:
 *     r = cg_write(..., err);
 *     if (r < 0)
 *             return cub_err_wrap_errno(err, r, "pod %s", name);
 * giving "pod default/web: cgroup ...: write 'memory.max': Permission denied".
 *
 * `err` may be NULL: the functions then only return the code. Prefer
 * cub_err_wrap_errno() to cub_err_wrap(): the latter returns err->code, so
 * with a NULL err it cannot know the code and returns -EIO.
 */

#include <stddef.h>

#define CUB_ERR_MSG_MAX 1024

typedef struct CubError {
        int code; /* positive errno */
        char msg[CUB_ERR_MSG_MAX];
} CubError;

int cub_err_set(CubError *err, int errno_, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prepends context; returns -err->code (-EIO when err is NULL or holds no code). */
int cub_err_wrap(CubError *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends context and records errno_ (negative or positive; 0 becomes EIO)
 * as err->code; returns -errno_ whether or not err is NULL. */
int cub_err_wrap_errno(CubError *err, int errno_, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cub_err_clear(CubError *err);
