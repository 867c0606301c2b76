/* SPDX-License-Identifier: Apache-2.0 */
/* The streaming proxy of the kubelet server (stream.h). */
#include "stream.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../util/time.h"
#include "request.h"

#define HEAD_MAX 16384
#define CONNECT_MS 10000
#define HEAD_MS 30000
/* a 101 queued whose connection never upgraded (the client left first) is
 * freed after this long */
#define PENDING_USEC (60ULL * 1000000ULL)

typedef struct Session Session;

struct ApiStreams {
        pthread_mutex_t lock;
        pthread_cond_t idle;
        unsigned active;
        int stop_fd;      /* an eventfd: readable once the server stops */
        Session *pending; /* 101 queued, not upgraded yet: under lock */
};

struct Session {
        Session *next;               /* in pending */
        struct MHD_Connection *conn; /* whose upgrade it waits for */
        uint64_t queued_usec;
        ApiStreams *streams;
        int backend;
        char *early; /* the runtime's bytes read after its head */
        size_t n_early;
        int client;
        struct MHD_UpgradeResponseHandle *urh;
        char *client_early; /* the client's bytes libmicrohttpd read after the request */
        size_t n_client_early;
};

static void session_free(Session *x) {
        if (x->backend >= 0)
                close(x->backend);
        free(x->early);
        free(x->client_early);
        free(x);
}

/* The session waiting for c's upgrade, out of pending; NULL when there is
 * none (swept). */
static Session *unpend(ApiStreams *s, struct MHD_Connection *c) {
        Session *x = NULL;

        pthread_mutex_lock(&s->lock);
        for (Session **p = &s->pending; *p; p = &(*p)->next)
                if ((*p)->conn == c) {
                        x = *p;
                        *p = x->next;
                        break;
                }
        pthread_mutex_unlock(&s->lock);
        return x;
}

/* Frees the sessions whose 101 never led to an upgrade within
 * PENDING_USEC (all of them when all is true). */
static void sweep(ApiStreams *s, bool all) {
        uint64_t now = cub_now_usec(CLOCK_MONOTONIC);
        Session *old = NULL;

        pthread_mutex_lock(&s->lock);
        for (Session **p = &s->pending; *p;) {
                Session *x = *p;

                if (all || now - x->queued_usec > PENDING_USEC) {
                        *p = x->next;
                        x->next = old;
                        old = x;
                } else
                        p = &x->next;
        }
        pthread_mutex_unlock(&s->lock);
        while (old) {
                Session *next = old->next;

                session_free(old);
                old = next;
        }
}

int api_streams_new(ApiStreams **ret, CubError *err) {
        ApiStreams *s = calloc(1, sizeof(*s));

        if (!s)
                return cub_err_set(err, ENOMEM, "out of memory");
        s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->stop_fd < 0) {
                free(s);
                return cub_err_set(err, errno, "eventfd: %s", strerror(errno));
        }
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->idle, NULL);
        *ret = s;
        return 0;
}

ApiStreams *api_streams_free(ApiStreams *s) {
        uint64_t one = 1;

        if (!s)
                return NULL;
        (void) !write(s->stop_fd, &one, sizeof(one));
        pthread_mutex_lock(&s->lock);
        while (s->active > 0)
                pthread_cond_wait(&s->idle, &s->lock);
        pthread_mutex_unlock(&s->lock);
        sweep(s, true);
        close(s->stop_fd);
        pthread_cond_destroy(&s->idle);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

unsigned api_streams_active(ApiStreams *s) {
        unsigned n;

        pthread_mutex_lock(&s->lock);
        n = s->active;
        pthread_mutex_unlock(&s->lock);
        return n;
}

/* ---- the runtime's side ------------------------------------------------------ */

static int dial(const char *host, const char *port, CubError *err) {
        struct sockaddr_storage ss = {};
        struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
        unsigned long p = strtoul(port, NULL, 10);
        struct pollfd pfd;
        socklen_t len;
        int fd, e = 0;

        if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
                s4->sin_family = AF_INET;
                s4->sin_port = htons((uint16_t) p);
                len = sizeof(*s4);
        } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons((uint16_t) p);
                len = sizeof(*s6);
        } else
                return cub_err_set(err, EINVAL, "the runtime's streaming host '%s' is not a numeric address", host);
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return cub_err_set(err, errno, "socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *) &ss, len) < 0 && errno != EINPROGRESS) {
                e = errno;
                close(fd);
                return cub_err_set(err, e, "connect to the runtime's streaming server %s:%s: %s", host, port,
                                   strerror(e));
        }
        pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
        len = sizeof(e);
        if (poll(&pfd, 1, CONNECT_MS) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0 || e) {
                close(fd);
                return cub_err_set(err, e ? e : ETIMEDOUT, "connect to the runtime's streaming server %s:%s: %s", host,
                                   port, strerror(e ? e : ETIMEDOUT));
        }
        return fd;
}

static int send_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

                if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
                        if (poll(&pfd, 1, HEAD_MS) <= 0)
                                return -ETIMEDOUT;
                        continue;
                }
                if (w < 0)
                        return -errno;
                p += w;
                n -= (size_t) w;
        }
        return 0;
}

typedef struct HeadCtx {
        FILE *f;
} HeadCtx;

/* the client's headers go along, but for those of this hop (request.h) */
static enum MHD_Result copy_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        HeadCtx *h = cls;

        (void) kind;
        if (api_stream_header_passes(key, value))
                fprintf(h->f, "%s: %s\r\n", key, value ? value : "");
        return MHD_YES;
}

/* The runtime's answer head: reads until the blank line (at most HEAD_MAX);
 * *ret_head NUL-terminated (the blank line cut), the bytes after it in
 * *ret_early. */
static int read_head(int fd, char **ret_head, char **ret_early, size_t *ret_n_early, CubError *err) {
        _cleanup_free_ char *buf = malloc(HEAD_MAX + 1);
        size_t n = 0;
        char *end;

        if (!buf)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                ssize_t r;

                if (n == HEAD_MAX)
                        return cub_err_set(err, EMSGSIZE, "the runtime's streaming answer has a head over %d bytes",
                                           HEAD_MAX);
                if (poll(&pfd, 1, HEAD_MS) <= 0)
                        return cub_err_set(err, ETIMEDOUT, "the runtime's streaming server did not answer in %d s",
                                           HEAD_MS / 1000);
                r = recv(fd, buf + n, HEAD_MAX - n, 0);
                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (r <= 0)
                        return cub_err_set(err, r < 0 ? errno : ECONNRESET,
                                           "the runtime's streaming server closed before answering");
                n += (size_t) r;
                buf[n] = '\0';
                end = strstr(buf, "\r\n\r\n");
                if (end)
                        break;
        }
        *end = '\0';
        *ret_n_early = n - (size_t) (end + 4 - buf);
        *ret_early = malloc(*ret_n_early + 1);
        if (!*ret_early)
                return cub_err_set(err, ENOMEM, "out of memory");
        memcpy(*ret_early, end + 4, *ret_n_early);
        *ret_head = TAKE_PTR(buf);
        return 0;
}

/* ---- copying ------------------------------------------------------------------ */

static void *pump(void *arg) {
        Session *x = arg;
        int fds[2] = { x->client, x->backend };
        bool open_in[2] = { true, true };
        char buf[65536];

        if ((x->n_client_early && send_all(x->backend, x->client_early, x->n_client_early) < 0) ||
            (x->n_early && send_all(x->client, x->early, x->n_early) < 0))
                open_in[0] = open_in[1] = false;
        while (open_in[0] || open_in[1]) {
                struct pollfd p[3] = { { .fd = open_in[0] ? fds[0] : -1, .events = POLLIN },
                                       { .fd = open_in[1] ? fds[1] : -1, .events = POLLIN },
                                       { .fd = x->streams->stop_fd, .events = POLLIN } };

                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[2].revents)
                        break;
                for (int i = 0; i < 2; i++) {
                        ssize_t r;

                        if (!open_in[i] || !p[i].revents)
                                continue;
                        r = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
                        if (r < 0 && (errno == EAGAIN || errno == EINTR))
                                continue;
                        if (r <= 0 || send_all(fds[1 - i], buf, (size_t) r) < 0) {
                                /* this side is done: the other reads its end */
                                open_in[i] = false;
                                (void) shutdown(fds[1 - i], SHUT_WR);
                                if (r < 0 || (r > 0))
                                        open_in[0] = open_in[1] = false;
                        }
                }
        }
        (void) MHD_upgrade_action(x->urh, MHD_UPGRADE_ACTION_CLOSE);
        pthread_mutex_lock(&x->streams->lock);
        if (--x->streams->active == 0)
                pthread_cond_broadcast(&x->streams->idle);
        pthread_mutex_unlock(&x->streams->lock);
        session_free(x);
        return NULL;
}

static void on_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra_in, size_t extra_in_size,
                        MHD_socket sock, struct MHD_UpgradeResponseHandle *urh) {
        Session *x = unpend(cls, c);
        pthread_attr_t attr;
        pthread_t t;

        (void) con_cls;
        /* swept meanwhile: nothing to copy */
        if (!x) {
                (void) MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
                return;
        }
        x->client = sock;
        x->urh = urh;
        if (extra_in_size > 0 && (x->client_early = malloc(extra_in_size)))
                memcpy(x->client_early, extra_in, x->n_client_early = extra_in_size);
        pthread_mutex_lock(&x->streams->lock);
        x->streams->active++;
        pthread_mutex_unlock(&x->streams->lock);
        /* its own thread: for HTTPS, libmicrohttpd forwards the TLS bytes only once this returns */
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, pump, x) != 0) {
                cub_log(LOG_ERR, "kubelet server: cannot start a streaming session's thread");
                x->n_early = x->n_client_early = 0;
                (void) MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
                pthread_mutex_lock(&x->streams->lock);
                if (--x->streams->active == 0)
                        pthread_cond_broadcast(&x->streams->idle);
                pthread_mutex_unlock(&x->streams->lock);
                session_free(x);
        }
        pthread_attr_destroy(&attr);
}

/* ---- the request ---------------------------------------------------------------- */

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text) {
        struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *) text, MHD_RESPMEM_MUST_COPY);
        enum MHD_Result ret;

        if (!r)
                return MHD_NO;
        (void) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
        ret = MHD_queue_response(c, status, r);
        MHD_destroy_response(r);
        return ret;
}

static int send_request(int fd, struct MHD_Connection *c, const char *method, const char *host, const char *port,
                        const char *path, const char *query, CubError *err) {
        _cleanup_free_ char *req = NULL;
        size_t len = 0;
        HeadCtx h = { .f = open_memstream(&req, &len) };

        if (!h.f)
                return cub_err_set(err, ENOMEM, "out of memory");
        fprintf(h.f, "%s %s%s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\n", method, path, query ? "?" : "", query ? query : "",
                strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
        (void) MHD_get_connection_values(c, MHD_HEADER_KIND, copy_header, &h);
        fputs("\r\n", h.f);
        if (fclose(h.f) != 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        return send_all(fd, req, len) < 0 ? cub_err_set(err, EPIPE, "the runtime's streaming server took no request")
                                          : 0;
}

typedef struct Answer {
        struct MHD_Response *r;
        unsigned status;
} Answer;

static void add_header(void *ctx, const char *key, const char *value) {
        (void) MHD_add_response_header(ctx, key, value);
}

/* the runtime's head as libmicrohttpd's response: an upgrade for 101 */
static int make_answer(Session *x, char *head, Answer *ret, CubError *err) {
        if (api_stream_head_status(head, &ret->status) < 0)
                return cub_err_set(err, EPROTO, "the runtime's streaming server answered no HTTP status");
        ret->r = ret->status == MHD_HTTP_SWITCHING_PROTOCOLS
                         ? MHD_create_response_for_upgrade(on_upgraded, x->streams)
                         : MHD_create_response_from_buffer(x->n_early, x->early, MHD_RESPMEM_MUST_COPY);
        if (!ret->r)
                return cub_err_set(err, ENOMEM, "out of memory");
        api_stream_head_headers(head, add_header, ret->r);
        return 0;
}

enum MHD_Result api_stream_proxy(ApiStreams *s, struct MHD_Connection *c, const char *method, const char *url,
                                 ApiConns *conns, ApiConn *conn) {
        _cleanup_free_ char *host = NULL, *port = NULL, *path = NULL, *query = NULL, *head = NULL;
        Session *x = calloc(1, sizeof(*x));
        Answer a = {};
        CubError err = {};
        enum MHD_Result ret;
        int r;

        if (!x)
                return MHD_NO;
        sweep(s, false);
        *x = (Session){ .streams = s, .backend = -1, .client = -1 };
        r = api_stream_split_url(url, &host, &port, &path, &query, &err);
        if (r >= 0)
                r = x->backend = dial(host, port, &err);
        if (r >= 0)
                r = send_request(x->backend, c, method, host, port, path, query, &err);
        if (r >= 0)
                r = read_head(x->backend, &head, &x->early, &x->n_early, &err);
        if (r >= 0)
                r = make_answer(x, head, &a, &err);
        if (r < 0) {
                cub_log(LOG_WARNING, "kubelet server: %s", err.msg);
                session_free(x);
                return answer_text(c, MHD_HTTP_BAD_GATEWAY, err.msg);
        }
        ret = MHD_queue_response(c, a.status, a.r);
        MHD_destroy_response(a.r);
        if (a.status != MHD_HTTP_SWITCHING_PROTOCOLS || ret != MHD_YES) {
                session_free(x);
                return ret;
        }
        if (conns && conn)
                api_conns_upgraded(conns, conn);
        /* the upgrade handler's from here (freed by the pump), or swept
         * if the connection ends before its 101 is sent */
        x->queued_usec = cub_now_usec(CLOCK_MONOTONIC);
        x->conn = c;
        pthread_mutex_lock(&s->lock);
        x->next = s->pending;
        s->pending = x;
        pthread_mutex_unlock(&s->lock);
        return ret;
}
