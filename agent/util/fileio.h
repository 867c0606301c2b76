/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/* Reads a whole regular file (at most max_size bytes) into a NUL-terminated
 * heap buffer. -EFBIG when larger. */
int cub_read_file(const char *path, size_t max_size, char **ret_data, size_t *ret_size, CubError *err);

/* Atomically replaces path: write a temp file in the same directory, fsync,
 * rename over path, fsync the directory. Readers see the old or the new
 * content, never a mix, even across a crash. */
int cub_write_file_atomic(const char *path, const void *data, size_t size, mode_t mode, CubError *err);

/* mkdir -p: creates path and its missing parents; existing ones are fine. */
int cub_mkdir_p(const char *path, mode_t mode);

/* write(2) until all n bytes are out (EINTR retried); -errno on failure. */
int cub_write_all(int fd, const void *p, size_t n);
