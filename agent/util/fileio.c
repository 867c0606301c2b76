/* SPDX-License-Identifier: Apache-2.0 */

#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

int cub_read_file(const char *path, size_t max_size, char **ret_data, size_t *ret_size, CubError *err) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, cap = 0;
        struct stat st;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return cub_err_set(err, errno, "'%s': %s", path, strerror(errno));
        if (fstat(fd, &st) < 0)
                return cub_err_set(err, errno, "'%s': %s", path, strerror(errno));
        if (S_ISDIR(st.st_mode))
                return cub_err_set(err, EISDIR, "'%s': is a directory", path);

        for (;;) {
                ssize_t n;

                if (size + 1 >= cap) {
                        size_t ncap = cap ? cap * 2 : 4096;
                        char *nbuf;

                        if (ncap > max_size + 2)
                                ncap = max_size + 2;
                        if (ncap <= size + 1)
                                return cub_err_set(err, EFBIG, "'%s': file is larger than %zu bytes", path, max_size);
                        nbuf = realloc(buf, ncap);
                        if (!nbuf)
                                return cub_err_set(err, ENOMEM, "'%s': out of memory", path);
                        buf = nbuf;
                        cap = ncap;
                }
                n = read(fd, buf + size, cap - size - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return cub_err_set(err, errno, "'%s': read: %s", path, strerror(errno));
                }
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size > max_size)
                        return cub_err_set(err, EFBIG, "'%s': file is larger than %zu bytes", path, max_size);
        }
        if (!buf) {
                buf = malloc(1);
                if (!buf)
                        return cub_err_set(err, ENOMEM, "'%s': out of memory", path);
        }
        buf[size] = '\0';
        *ret_data = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = size;
        return 0;
}

static int fsync_dir_of(const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        _cleanup_close_ int dfd = -EBADF;

        if (!copy)
                return -ENOMEM;
        dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (fsync(dfd) < 0)
                return -errno;
        return 0;
}

int cub_write_file_atomic(const char *path, const void *data, size_t size, mode_t mode, CubError *err) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *p = data;
        int r;

        if (asprintf(&tmp, "%s.tmpXXXXXX", path) < 0) {
                tmp = NULL;
                return cub_err_set(err, ENOMEM, "'%s': out of memory", path);
        }
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return cub_err_set(err, errno, "'%s': create temporary file: %s", path, strerror(errno));

        while (size > 0) {
                ssize_t n = write(fd, p, size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        goto fail;
                }
                p += n;
                size -= (size_t) n;
        }
        if (fchmod(fd, mode) < 0 || fsync(fd) < 0) {
                r = -errno;
                goto fail;
        }
        if (rename(tmp, path) < 0) {
                r = -errno;
                goto fail;
        }
        r = fsync_dir_of(path);
        if (r < 0)
                return cub_err_set(err, -r, "'%s': fsync directory: %s", path, strerror(-r));
        return 0;

fail:
        (void) unlink(tmp);
        return cub_err_set(err, -r, "'%s': write: %s", path, strerror(-r));
}

int cub_mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *copy = strdup(path);

        if (!copy)
                return -ENOMEM;
        for (char *p = copy + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        if (mkdir(copy, mode) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        if (mkdir(copy, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int cub_write_all(int fd, const void *p, size_t n) {
        const char *c = p;

        while (n > 0) {
                ssize_t w = write(fd, c, n);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                c += w;
                n -= (size_t) w;
        }
        return 0;
}
