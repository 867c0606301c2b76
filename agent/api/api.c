/* SPDX-License-Identifier: Apache-2.0 */
#include "api.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"

/* At most this many replies are being written at once; a client that
 * reads nothing for REPLY_TIMEOUT_USEC is dropped. */
#define REPLIES_MAX 16
#define REPLY_TIMEOUT_USEC (5ULL * 1000000ULL)

/* One reply being written: the loop never blocks on a client, each
 * reply goes out as the socket drains. */
typedef struct ApiReply {
        struct ApiServer *server;
        sd_event_source *io, *timer;
        char *doc;
        size_t len, off;
} ApiReply;

struct ApiServer {
        sd_event_source *src;
        int fd;
        char *path;
        ApiRenderFn render;
        void *userdata;
        ApiReply *replies[REPLIES_MAX];
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

static void reply_free(ApiReply *r) {
        if (!r)
                return;
        for (size_t i = 0; i < REPLIES_MAX; i++)
                if (r->server->replies[i] == r)
                        r->server->replies[i] = NULL;
        sd_event_source_disable_unref(r->io); /* closes the fd it owns */
        sd_event_source_disable_unref(r->timer);
        free(r->doc);
        free(r);
}

static int on_reply_writable(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        ApiReply *r = userdata;

        (void) src;
        if (revents & (EPOLLERR | EPOLLHUP)) {
                reply_free(r);
                return 0;
        }
        while (r->off < r->len) {
                ssize_t w = send(fd, r->doc + r->off, r->len - r->off, MSG_NOSIGNAL | MSG_DONTWAIT);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0; /* the rest when it drains */
                        break;
                }
                r->off += (size_t) w;
        }
        reply_free(r);
        return 0;
}

static int on_reply_timeout(sd_event_source *src, uint64_t usec, void *userdata) {
        (void) src;
        (void) usec;
        reply_free(userdata);
        return 0;
}

static int on_connection(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        ApiServer *s = userdata;
        _cleanup_close_ int cfd = -EBADF;
        ApiReply *r;
        size_t slot = REPLIES_MAX;

        (void) src;
        (void) revents;
        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0)
                return 0;
        for (size_t i = 0; i < REPLIES_MAX; i++)
                if (!s->replies[i]) {
                        slot = i;
                        break;
                }
        if (slot == REPLIES_MAX)
                return 0; /* too many slow clients: this one is closed at once */
        r = calloc(1, sizeof(*r));
        if (!r)
                return 0;
        r->server = s;
        r->doc = s->render(s->userdata);
        if (!r->doc) {
                free(r);
                return 0;
        }
        r->len = strlen(r->doc);
        if (sd_event_add_io(sd_event_source_get_event(s->src), &r->io, cfd, EPOLLOUT, on_reply_writable, r) < 0) {
                free(r->doc);
                free(r);
                return 0;
        }
        (void) sd_event_source_set_io_fd_own(r->io, true);
        TAKE_FD(cfd);
        s->replies[slot] = r;
        (void) sd_event_source_set_description(r->io, "status-reply");
        if (sd_event_add_time_relative(sd_event_source_get_event(s->src), &r->timer, CLOCK_MONOTONIC,
                                       REPLY_TIMEOUT_USEC, 0, on_reply_timeout, r) < 0) {
                reply_free(r);
                return 0;
        }
        (void) sd_event_source_set_description(r->timer, "status-reply-timeout");
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
        for (size_t i = 0; i < REPLIES_MAX; i++)
                reply_free(s->replies[i]);
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
