/* SPDX-License-Identifier: Apache-2.0 */
/* Runs probes off the loop's critical path: tcpSocket as a non-blocking
 * connect (sd-event io source + timer), httpGet through the shared libcurl
 * multi glue on sd-event, exec through CRI ExecSync on a few probe threads
 * whose results come back through an eventfd. A result reaches the
 * caller's function from the loop, never from inside probe_run(). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../proto/grpcx.h"
#include "../util/curl-event.h"
#include "../util/time.h"
#include "probes.h"

#define PROBE_OUTPUT_MAX 256
#define PROBE_USER_AGENT "kube-probe/1.31"

struct ProbeCall {
        ProbeRunner *r;
        PodHandlerKind kind;
        ProbeDoneFn fn;
        void *userdata;
        bool cancelled; /* exec: under the runner's lock */
        /* tcp */
        int fd;
        sd_event_source *io, *timer;
        char where[1024];
        /* http */
        CURL *easy;
        struct curl_slist *headers;
        /* exec; grpc: the target and service */
        char *grpc_target, *grpc_service;
        char *container_id;
        char **command;
        int64_t timeout_s;
        /* result */
        ProbeResult result;
        char output[PROBE_OUTPUT_MAX];
        struct ProbeCall *next;
};

struct ProbeRunner {
        sd_event *event;
        CriClient *cri;
        CubCurl *curl;
        /* the exec threads */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        ProbeCall *queue_head, *queue_tail, *done;
        bool stopping;
        pthread_t *threads;
        unsigned n_threads;
        int efd;
        sd_event_source *efd_src;
};

static void call_free(ProbeCall *c) {
        if (!c)
                return;
        c->io = sd_event_source_disable_unref(c->io);
        c->timer = sd_event_source_disable_unref(c->timer);
        if (c->fd >= 0)
                close(c->fd);
        if (c->easy) {
                cub_curl_remove(c->r->curl, c->easy);
                curl_easy_cleanup(c->easy);
        }
        curl_slist_free_all(c->headers);
        free(c->grpc_target);
        free(c->grpc_service);
        free(c->container_id);
        if (c->command)
                for (char **s = c->command; *s; s++)
                        free(*s);
        free(c->command);
        free(c);
}

static void deliver(ProbeCall *c) {
        if (c->fn)
                c->fn(c->userdata, c->result, c->output);
        call_free(c);
}

static void set_result(ProbeCall *c, ProbeResult r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_result(ProbeCall *c, ProbeResult r, const char *fmt, ...) {
        va_list ap;

        c->result = r;
        va_start(ap, fmt);
        (void) vsnprintf(c->output, sizeof(c->output), fmt, ap);
        va_end(ap);
}

/* ---- tcpSocket ----------------------------------------------------------------- */

static int on_tcp_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ProbeCall *c = userdata;
        int e = 0;
        socklen_t len = sizeof(e);

        (void) s;
        (void) revents;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
                e = errno;
        if (e == 0)
                set_result(c, PROBE_RESULT_SUCCESS, "%s", "ok");
        else
                set_result(c, PROBE_RESULT_FAILURE, "dial tcp %s: connect: %s", c->where, strerror(e));
        deliver(c);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ProbeCall *c = userdata;

        (void) s;
        (void) usec;
        if (c->kind == POD_HANDLER_TCP_SOCKET && c->io)
                set_result(c, PROBE_RESULT_FAILURE, "dial tcp %s: i/o timeout", c->where);
        deliver(c);
        return 0;
}

/* The address of host:port; a name is resolved (blocking: names other than
 * localhost are the exception for probes, which target the pod's IP). */
static int resolve(const char *host, int32_t port, struct sockaddr_storage *ss, socklen_t *len) {
        struct sockaddr_in *in = (struct sockaddr_in *) ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
        char ps[16];

        memset(ss, 0, sizeof(*ss));
        if (!host || !*host || strcmp(host, "localhost") == 0)
                host = "127.0.0.1";
        if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
                in->sin_family = AF_INET;
                in->sin_port = htons((uint16_t) port);
                *len = sizeof(*in);
                return 0;
        }
        if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t) port);
                *len = sizeof(*in6);
                return 0;
        }
        (void) snprintf(ps, sizeof(ps), "%d", port);
        if (getaddrinfo(host, ps, &hints, &ai) != 0 || !ai)
                return -EHOSTUNREACH;
        memcpy(ss, ai->ai_addr, ai->ai_addrlen);
        *len = ai->ai_addrlen;
        freeaddrinfo(ai);
        return 0;
}

static int start_timer(ProbeCall *c, uint64_t usec) {
        int r = sd_event_add_time_relative(c->r->event, &c->timer, CLOCK_MONOTONIC, usec, CUB_USEC_PER_MSEC, on_timer,
                                           c);

        if (r >= 0)
                (void) sd_event_source_set_description(c->timer, "probe-timeout");
        return r;
}

static int start_tcp(ProbeCall *c, const ProbeTarget *t) {
        struct sockaddr_storage ss;
        socklen_t len;
        int r;

        (void) snprintf(c->where, sizeof(c->where), "%s:%d", t->host && *t->host ? t->host : "127.0.0.1", t->port);
        r = resolve(t->host, t->port, &ss, &len);
        if (r < 0) {
                set_result(c, PROBE_RESULT_FAILURE, "dial tcp %s: lookup failed", c->where);
                return start_timer(c, 0);
        }
        c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0)
                return -errno;
        if (connect(c->fd, (struct sockaddr *) &ss, len) < 0 && errno != EINPROGRESS) {
                set_result(c, PROBE_RESULT_FAILURE, "dial tcp %s: connect: %s", c->where, strerror(errno));
                return start_timer(c, 0);
        }
        r = sd_event_add_io(c->r->event, &c->io, c->fd, EPOLLOUT, on_tcp_io, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(c->io, "probe-tcp");
        return start_timer(c, (uint64_t) (t->timeout_s > 0 ? t->timeout_s : 1) * CUB_USEC_PER_SEC);
}

/* ---- httpGet ------------------------------------------------------------------- */

static size_t discard(char *p, size_t size, size_t n, void *u) {
        (void) p;
        (void) u;
        return size * n;
}

static void on_http_done(CURL *easy, CURLcode code, void *userdata) {
        ProbeCall *c = NULL;
        long status = 0;

        (void) userdata;
        if (curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **) &c) != CURLE_OK || !c)
                return;
        if (code != CURLE_OK)
                set_result(c, PROBE_RESULT_FAILURE, "Get \"%s\": %s", c->where, curl_easy_strerror(code));
        else {
                (void) curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
                if (status >= 200 && status < 400)
                        set_result(c, PROBE_RESULT_SUCCESS, "%s", "ok");
                else
                        set_result(c, PROBE_RESULT_FAILURE, "HTTP probe failed with statuscode: %ld", status);
        }
        /* the glue removed it from the multi handle already */
        curl_easy_cleanup(c->easy);
        c->easy = NULL;
        deliver(c);
}

/* A libcurl handle for a GET of t: the URL, kubelet's User-Agent and
 * Accept (the probe's own headers win), no certificate check (kubelet's
 * InsecureSkipVerify), redirects followed. */
static CURL *http_easy(const ProbeTarget *t, char *url, size_t url_size, struct curl_slist **headers) {
        const char *host = t->host && *t->host ? t->host : "127.0.0.1";
        bool v6 = strchr(host, ':') != NULL, ua = false, accept = false;
        const char *path = t->path && *t->path ? t->path : "/";
        CURL *e;

        (void) snprintf(url, url_size, "%s://%s%s%s:%d%s%s",
                        t->scheme && strcmp(t->scheme, "HTTPS") == 0 ? "https" : "http", v6 ? "[" : "", host,
                        v6 ? "]" : "", t->port, path[0] == '/' ? "" : "/", path);
        for (size_t i = 0; i < t->n_headers; i++) {
                char line[1024];

                ua = ua || strcasecmp(t->headers[i].name, "User-Agent") == 0;
                accept = accept || strcasecmp(t->headers[i].name, "Accept") == 0;
                (void) snprintf(line, sizeof(line), "%s: %s", t->headers[i].name,
                                t->headers[i].value ? t->headers[i].value : "");
                *headers = curl_slist_append(*headers, line);
        }
        if (!ua)
                *headers = curl_slist_append(*headers, "User-Agent: " PROBE_USER_AGENT);
        if (!accept)
                *headers = curl_slist_append(*headers, "Accept: */*");
        e = curl_easy_init();
        if (!e)
                return NULL;
        if (curl_easy_setopt(e, CURLOPT_URL, url) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_HTTPHEADER, *headers) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long) (t->timeout_s > 0 ? t->timeout_s : 1) * 1000L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_MAXREDIRS, 10L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_NOPROXY, "*") != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard) != CURLE_OK) {
                curl_easy_cleanup(e);
                return NULL;
        }
        return e;
}

static int start_http(ProbeCall *c, const ProbeTarget *t) {
        char url[1024];

        c->easy = http_easy(t, url, sizeof(url), &c->headers);
        (void) snprintf(c->where, sizeof(c->where), "%s", url);
        if (!c->easy || curl_easy_setopt(c->easy, CURLOPT_PRIVATE, c) != CURLE_OK)
                return -ENOMEM;
        if (cub_curl_add(c->r->curl, c->easy) < 0) {
                curl_easy_cleanup(c->easy);
                c->easy = NULL;
                return -EIO;
        }
        return 0;
}

/* ---- exec ---------------------------------------------------------------------- */

/* kubelet's grpc prober (probe/grpc): SERVING is success, anything else a
 * failure with its messages */
static void grpc_one(ProbeCall *c) {
        CubError err = {};
        int status = 0, code = -1, k;

        k = grpcx_health_check(c->grpc_target, c->grpc_service, (uint64_t) c->timeout_s * CUB_USEC_PER_SEC, &status,
                               &code, &err);
        if (k >= 0 && status == GRPCX_HEALTH_SERVING)
                set_result(c, PROBE_RESULT_SUCCESS, "%s", "ok");
        else if (k >= 0)
                set_result(c, PROBE_RESULT_FAILURE, "service unhealthy (responded with \"%s\")",
                           grpcx_health_status_name(status));
        else if (code == GRPCX_UNIMPLEMENTED)
                set_result(c, PROBE_RESULT_FAILURE,
                           "this server does not implement the grpc health protocol (grpc.health.v1.Health): %.160s",
                           err.msg);
        else if (code == GRPCX_DEADLINE_EXCEEDED)
                set_result(c, PROBE_RESULT_FAILURE, "timeout: health rpc did not complete within %" PRId64 "s",
                           c->timeout_s);
        else if (code == GRPCX_UNAVAILABLE)
                set_result(c, PROBE_RESULT_FAILURE, "timeout: failed to connect service \"%s\" within %" PRId64 "s",
                           c->grpc_target, c->timeout_s);
        else
                set_result(c, PROBE_RESULT_FAILURE, "error: health rpc probe failed: %.180s", err.msg);
}

static void exec_one(ProbeRunner *r, ProbeCall *c) {
        CriExecResult res = {};
        CubError err = {};
        int k;

        if (c->kind == POD_HANDLER_GRPC) {
                grpc_one(c);
                return;
        }
        k = cri_exec_sync(r->cri, c->container_id, (const char *const *) c->command, c->timeout_s, &res, &err);
        if (k == -ETIMEDOUT)
                set_result(c, PROBE_RESULT_FAILURE, "command timed out after %" PRId64 "s", c->timeout_s);
        else if (k < 0)
                set_result(c, PROBE_RESULT_UNKNOWN, "%s", err.msg);
        else if (res.exit_code == 0)
                set_result(c, PROBE_RESULT_SUCCESS, "%.200s", res.out);
        else
                set_result(c, PROBE_RESULT_FAILURE, "command exited with %d: %.200s%.40s", res.exit_code, res.out,
                           res.err_out);
        cri_exec_result_done(&res);
}

static void *exec_main(void *arg) {
        ProbeRunner *r = arg;

        for (;;) {
                ProbeCall *c;
                uint64_t one = 1;

                pthread_mutex_lock(&r->lock);
                while (!r->queue_head && !r->stopping)
                        pthread_cond_wait(&r->cond, &r->lock);
                if (r->stopping) {
                        pthread_mutex_unlock(&r->lock);
                        return NULL;
                }
                c = r->queue_head;
                r->queue_head = c->next;
                if (!r->queue_head)
                        r->queue_tail = NULL;
                c->next = NULL;
                pthread_mutex_unlock(&r->lock);

                exec_one(r, c);

                pthread_mutex_lock(&r->lock);
                c->next = r->done;
                r->done = c;
                pthread_mutex_unlock(&r->lock);
                (void) !write(r->efd, &one, sizeof(one));
        }
}

static int on_exec_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ProbeRunner *r = userdata;
        ProbeCall *c;
        uint64_t v;

        (void) s;
        (void) revents;
        (void) !read(fd, &v, sizeof(v));
        pthread_mutex_lock(&r->lock);
        c = r->done;
        r->done = NULL;
        pthread_mutex_unlock(&r->lock);
        while (c) {
                ProbeCall *next = c->next;

                if (c->cancelled)
                        call_free(c);
                else
                        deliver(c);
                c = next;
        }
        return 0;
}

static void enqueue(ProbeRunner *r, ProbeCall *c) {
        pthread_mutex_lock(&r->lock);
        if (r->queue_tail)
                r->queue_tail->next = c;
        else
                r->queue_head = c;
        r->queue_tail = c;
        pthread_cond_signal(&r->cond);
        pthread_mutex_unlock(&r->lock);
}

static int start_grpc(ProbeCall *c, const ProbeTarget *t) {
        const char *host = t->host && *t->host ? t->host : "127.0.0.1";
        struct in_addr a4;
        struct in6_addr a6;
        int k;

        if (inet_pton(AF_INET, host, &a4) == 1)
                k = asprintf(&c->grpc_target, "ipv4:%s:%d", host, t->port);
        else if (inet_pton(AF_INET6, host, &a6) == 1)
                k = asprintf(&c->grpc_target, "ipv6:[%s]:%d", host, t->port);
        else
                k = asprintf(&c->grpc_target, "dns:%s:%d", host, t->port);
        if (k < 0) {
                c->grpc_target = NULL;
                return -ENOMEM;
        }
        c->grpc_service = strdup(t->grpc_service ? t->grpc_service : "");
        if (!c->grpc_service)
                return -ENOMEM;
        c->timeout_s = t->timeout_s > 0 ? t->timeout_s : 1;
        enqueue(c->r, c);
        return 0;
}

static int start_exec(ProbeCall *c, const ProbeTarget *t) {
        size_t n = 0;

        while (t->command && t->command[n])
                n++;
        c->command = calloc(n + 1, sizeof(char *));
        c->container_id = strdup(t->container_id ? t->container_id : "");
        if (!c->command || !c->container_id)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(c->command[i] = strdup(t->command[i])))
                        return -ENOMEM;
        c->timeout_s = t->timeout_s > 0 ? t->timeout_s : 1;
        enqueue(c->r, c);
        return 0;
}

/* ---- the runner ---------------------------------------------------------------- */

int probe_run(ProbeRunner *r, const ProbeTarget *t, ProbeDoneFn fn, void *userdata, ProbeCall **ret, CubError *err) {
        ProbeCall *c = calloc(1, sizeof(*c));
        int k;

        if (!c)
                return cub_err_set(err, ENOMEM, "out of memory");
        c->r = r;
        c->fd = -1;
        c->kind = t->kind;
        c->fn = fn;
        c->userdata = userdata;
        c->result = PROBE_RESULT_UNKNOWN;
        switch (t->kind) {
        case POD_HANDLER_TCP_SOCKET:
                k = start_tcp(c, t);
                break;
        case POD_HANDLER_HTTP_GET:
                k = start_http(c, t);
                break;
        case POD_HANDLER_EXEC:
                k = start_exec(c, t);
                break;
        case POD_HANDLER_GRPC:
                k = start_grpc(c, t);
                break;
        default:
                set_result(c, PROBE_RESULT_UNKNOWN, "probe handler not supported by cubelet");
                k = start_timer(c, 0);
        }
        if (k < 0) {
                call_free(c);
                return cub_err_set(err, -k, "probe: %s", strerror(-k));
        }
        if (ret)
                *ret = c;
        return 0;
}

void probe_cancel(ProbeCall *c) {
        ProbeRunner *r;

        if (!c)
                return;
        r = c->r;
        if (c->kind == POD_HANDLER_EXEC || c->kind == POD_HANDLER_GRPC) {
                /* a thread may hold it: its completion frees it */
                pthread_mutex_lock(&r->lock);
                c->cancelled = true;
                c->fn = NULL;
                pthread_mutex_unlock(&r->lock);
                return;
        }
        call_free(c);
}

int probe_runner_new(sd_event *e, CriClient *cri, unsigned exec_threads, ProbeRunner **ret, CubError *err) {
        ProbeRunner *r = calloc(1, sizeof(*r));
        int k;

        if (!r)
                return cub_err_set(err, ENOMEM, "out of memory");
        r->event = sd_event_ref(e);
        r->cri = cri;
        r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cond, NULL);
        if (r->efd < 0) {
                k = cub_err_set(err, errno, "probes: eventfd: %s", strerror(errno));
                probe_runner_free(r);
                return k;
        }
        k = cub_curl_new(e, "probe-http", on_http_done, r, &r->curl, err);
        if (k < 0) {
                probe_runner_free(r);
                return k;
        }
        k = sd_event_add_io(e, &r->efd_src, r->efd, EPOLLIN, on_exec_done, r);
        if (k < 0) {
                probe_runner_free(r);
                return cub_err_set(err, -k, "probes: sd-event: %s", strerror(-k));
        }
        (void) sd_event_source_set_description(r->efd_src, "probe-exec");
        r->threads = calloc(exec_threads ? exec_threads : 1, sizeof(pthread_t));
        for (unsigned i = 0; r->threads && i < (exec_threads ? exec_threads : 1); i++) {
                if (pthread_create(&r->threads[i], NULL, exec_main, r) != 0)
                        break;
                (void) pthread_setname_np(r->threads[i], "cub-probe-exec");
                r->n_threads++;
        }
        if (r->n_threads == 0) {
                probe_runner_free(r);
                return cub_err_set(err, EAGAIN, "probes: cannot start the exec threads");
        }
        *ret = r;
        return 0;
}

ProbeRunner *probe_runner_free(ProbeRunner *r) {
        if (!r)
                return NULL;
        pthread_mutex_lock(&r->lock);
        r->stopping = true;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
        for (unsigned i = 0; i < r->n_threads; i++)
                pthread_join(r->threads[i], NULL);
        free(r->threads);
        for (ProbeCall *c = r->queue_head, *n; c; c = n) {
                n = c->next;
                call_free(c);
        }
        for (ProbeCall *c = r->done, *n; c; c = n) {
                n = c->next;
                call_free(c);
        }
        r->efd_src = sd_event_source_disable_unref(r->efd_src);
        r->curl = cub_curl_free(r->curl);
        if (r->efd >= 0)
                close(r->efd);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->cond);
        sd_event_unref(r->event);
        free(r);
        return NULL;
}
