/* SPDX-License-Identifier: Apache-2.0 */
#include "api.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"

struct ApiServer {
        sd_event_source *src;
        int fd;
        char *path;
        ApiRenderFn render;
        void *userdata;
};

static int make_addr(const char *path, struct sockaddr_un *sa, CubError *err) {
        *sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa->sun_path))
                return cub_err_set(err, ENAMETOOLONG, "status socket '%s': path too long", path);
        memcpy(sa->sun_path, path, strlen(path) + 1);
        return 0;
}

static int mkdir_parents(const char *path) {
        _cleanup_free_ char *copy = strdup(path);

        return copy ? cub_mkdir_p(dirname(copy), 0755) : -ENOMEM;
}

static void write_all(int fd, const char *s, size_t n) {
        while (n > 0) {
                ssize_t w = write(fd, s, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return;
                }
                s += w;
                n -= (size_t) w;
        }
}

static int on_connection(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        ApiServer *s = userdata;
        _cleanup_close_ int cfd = -EBADF;
        _cleanup_free_ char *doc = NULL;
        struct timeval tv = { .tv_sec = 2 };

        (void) src;
        (void) revents;
        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0)
                return 0;
        /* a stuck client must not stall the loop for long */
        (void) setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        doc = s->render(s->userdata);
        if (doc)
                write_all(cfd, doc, strlen(doc));
        return 0;
}

int api_server_new(sd_event *e, const char *path, ApiRenderFn render, void *userdata, ApiServer **ret, CubError *err) {
        struct sockaddr_un sa;
        ApiServer *s;
        mode_t old;
        int r;

        r = make_addr(path, &sa, err);
        if (r < 0)
                return r;
        r = mkdir_parents(path);
        if (r < 0)
                return cub_err_set(err, -r, "status socket '%s': create directory: %s", path, strerror(-r));
        s = calloc(1, sizeof(*s));
        if (!s || !(s->path = strdup(path))) {
                free(s);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        s->render = render;
        s->userdata = userdata;
        s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s->fd < 0) {
                r = cub_err_set(err, errno, "status socket '%s': %s", path, strerror(errno));
                goto fail;
        }
        (void) unlink(path);
        old = umask(0077);
        r = bind(s->fd, (struct sockaddr *) &sa, sizeof(sa));
        umask(old);
        if (r < 0 || listen(s->fd, 16) < 0) {
                r = cub_err_set(err, errno, "status socket '%s': %s", path, strerror(errno));
                goto fail;
        }
        r = sd_event_add_io(e, &s->src, s->fd, EPOLLIN, on_connection, s);
        if (r < 0) {
                r = cub_err_set(err, -r, "status socket '%s': %s", path, strerror(-r));
                goto fail;
        }
        (void) sd_event_source_set_description(s->src, "status-api");
        *ret = s;
        return 0;
fail:
        api_server_free(s);
        return r;
}

ApiServer *api_server_free(ApiServer *s) {
        if (!s)
                return NULL;
        sd_event_source_disable_unref(s->src);
        if (s->fd >= 0) {
                close(s->fd);
                (void) unlink(s->path);
        }
        free(s->path);
        free(s);
        return NULL;
}

int api_fetch(const char *path, char **ret, CubError *err) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;
        struct sockaddr_un sa;
        int r;

        r = make_addr(path, &sa, err);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return cub_err_set(err, errno, "status socket '%s': %s", path, strerror(errno));
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return cub_err_set(err, errno, "status socket '%s': %s (is cubelet running?)", path, strerror(errno));
        for (;;) {
                ssize_t n;

                if (len + 4096 + 1 > cap) {
                        char *nb = realloc(buf, cap = cap ? cap * 2 : 16384);
                        if (!nb)
                                return cub_err_set(err, ENOMEM, "out of memory");
                        buf = nb;
                }
                n = read(fd, buf + len, cap - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return cub_err_set(err, errno, "status socket '%s': read: %s", path, strerror(errno));
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        if (!buf || len == 0)
                return cub_err_set(err, EPROTO, "status socket '%s': empty reply", path);
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}
