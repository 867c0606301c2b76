/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet server's own paths (port 10250), after authentication and
 * authorization (http.c, auth.h):
 *
 *   GET  /containerLogs/NS/POD/CONTAINER  follow, previous, timestamps,
 *        tailLines (or tail), limitBytes, sinceSeconds, sinceTime, stream
 *   GET|POST /exec/NS/POD[/UID]/CONTAINER?command=..&stdin&stdout&stderr&tty
 *   GET|POST /attach/NS/POD[/UID]/CONTAINER?stdin&stdout&stderr&tty
 *   GET|POST /portForward/NS/POD[/UID]
 *
 * Logs are read here from the pod's log directory (agent/logs reader);
 * the streams are the runtime's, proxied (stream.h).
 */
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../cri/cri.h"
#include "../logs/logs.h"
#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/time.h"
#include "../worker/worker.h"
#include "http-internal.h"
#include "request.h"

#define FOLLOW_WAIT_MS 200
#define RUNNING_CHECK_USEC 1000000ULL

static const ApiPodRef *find_pod(const ApiSnapshot *s, const char *ns, const char *name) {
        for (size_t i = 0; i < s->n_pods; i++)
                if (strcmp(s->pods[i].namespace_, ns) == 0 && strcmp(s->pods[i].name, name) == 0)
                        return &s->pods[i];
        return NULL;
}

static const ApiContainerRef *find_container(const ApiPodRef *p, const char *name) {
        for (size_t k = 0; k < p->n_containers; k++)
                if (strcmp(p->containers[k].name, name) == 0)
                        return &p->containers[k];
        return NULL;
}

static enum MHD_Result fail(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static enum MHD_Result fail(struct MHD_Connection *c, unsigned status, const char *fmt, ...) {
        char msg[1024];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return api_http_reply_text(c, status, msg);
}

/* a query argument of the connection (request.h's ApiArgFn) */
static const char *query_arg(void *ctx, const char *key) {
        return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

/* ---- authentication and authorization ---------------------------------------------- */

/* The verified client certificate's user: CN the name, each O a group. */
static int cert_user(struct MHD_Connection *c, ApiUser *ret) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        const gnutls_datum_t *chain;
        gnutls_x509_crt_t crt = NULL;
        char cn[256], groups[8][256];
        const char *gv[9] = {};
        size_t len = sizeof(cn);
        unsigned n = 0, k = 0;
        int r = -EACCES;

        if (!api_http_client_cert_ok(c) || !(chain = gnutls_certificate_get_peers(ci->tls_session, &n)) || n == 0 ||
            gnutls_x509_crt_init(&crt) < 0)
                return -EACCES;
        if (gnutls_x509_crt_import(crt, &chain[0], GNUTLS_X509_FMT_DER) >= 0 &&
            gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &len) >= 0) {
                for (k = 0; k < ELEMENTSOF(groups); k++) {
                        len = sizeof(groups[k]);
                        if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, k, 0, groups[k],
                                                          &len) < 0)
                                break;
                        gv[k] = groups[k];
                }
                r = api_user_set(ret, cn, "", gv);
        }
        gnutls_x509_crt_deinit(crt);
        return r;
}

/* The kubelet server's filter: 401 unless authenticated, 403 unless the
 * API server allows it (auth.h); true when the request goes on. */
bool api_kubelet_authorized(ApiAuth *a, struct MHD_Connection *c, const char *url, const char *method,
                            enum MHD_Result *ret) {
        ApiUser cu = {}, u = {};
        CubError err = {};
        int r;

        (void) cert_user(c, &cu);
        r = api_auth_authenticate(a, cu.name ? &cu : NULL,
                                  MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), &u,
                                  &err);
        api_user_done(&cu);
        if (r < 0) {
                if (r != -EACCES)
                        cub_log(LOG_WARNING, "kubelet server: authentication: %s", err.msg);
                *ret = api_http_reply_text(c, MHD_HTTP_UNAUTHORIZED, "Unauthorized");
                return false;
        }
        r = api_auth_authorize(a, &u, method, url, &err);
        api_user_done(&u);
        if (r == 0)
                return true;
        if (r != -EPERM)
                cub_log(LOG_WARNING, "kubelet server: %s", err.msg);
        *ret = api_http_reply_text(c, r == -EPERM ? MHD_HTTP_FORBIDDEN : MHD_HTTP_INTERNAL_SERVER_ERROR, err.msg);
        return false;
}

/* ---- /containerLogs --------------------------------------------------------------- */

typedef struct Follow {
        ApiHttp *h;
        LogsReader *reader;
        char *ns, *pod, *container, *id;
        int fd; /* the client's socket: a hang-up ends the wait */
        bool ended;
        uint64_t checked;
} Follow;

static void follow_free(void *cls) {
        Follow *f = cls;

        logs_reader_free(f->reader);
        free(f->ns);
        free(f->pod);
        free(f->container);
        free(f->id);
        free(f);
}

/* the container this reader follows has ended (or was replaced) */
static bool follow_ended(Follow *f) {
        ApiSnapshot *s = api_http_snapshot(f->h);
        const ApiPodRef *p = s ? find_pod(s, f->ns, f->pod) : NULL;
        const ApiContainerRef *ct = p ? find_container(p, f->container) : NULL;
        bool ended = !ct || !ct->running || strcmp(ct->id, f->id) != 0;

        api_snapshot_unref(s);
        return ended;
}

static ssize_t follow_read(void *cls, uint64_t pos, char *buf, size_t max) {
        Follow *f = cls;

        (void) pos;
        for (;;) {
                ssize_t r = logs_reader_read(f->reader, buf, max, f->ended);
                struct pollfd pfd = { .fd = f->fd, .events = POLLRDHUP };
                uint64_t now;

                if (r > 0)
                        return r;
                if (r == 0)
                        return MHD_CONTENT_READER_END_OF_STREAM;
                if (r != -EAGAIN || api_http_stopping(f->h))
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                now = cub_now_usec(CLOCK_MONOTONIC);
                if (!f->ended && now - f->checked >= RUNNING_CHECK_USEC) {
                        f->checked = now;
                        f->ended = follow_ended(f);
                        if (f->ended)
                                continue;
                }
                /* nothing new: wait, unless the client hung up */
                if (poll(&pfd, 1, FOLLOW_WAIT_MS) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)))
                        return MHD_CONTENT_READER_END_WITH_ERROR;
        }
}

/* The log streamed from the reader, chunked (no Content-Length) as kubelet's server sends it,
 * followed or not: the API server's WebSocket log reader (wsstream) drops the data of a read
 * that also returns EOF, which Go's client does for the last bytes of a body of known length
 * (a log fetched over WebSocket came out empty). */
static enum MHD_Result container_logs(ApiHttp *h, struct MHD_Connection *c, const ApiPodRef *p, const char *container) {
        const ApiContainerRef *ct = find_container(p, container);
        _cleanup_free_ char *dir = NULL;
        LogsReadOptions o;
        LogsReader *reader = NULL;
        CubError err = {};
        Follow *f;
        const union MHD_ConnectionInfo *fd;
        struct MHD_Response *resp;
        enum MHD_Result ret;

        if (api_log_options_parse(query_arg, c, (int64_t) time(NULL), &o) < 0)
                return api_http_reply_text(c, MHD_HTTP_UNPROCESSABLE_CONTENT, "{\"message\": \"Invalid request.\"}");
        if (!ct)
                return fail(c, MHD_HTTP_NOT_FOUND, "container \"%s\" not found in pod \"%s\"", container, p->name);
        if (!o.previous && !*ct->id)
                return fail(c, MHD_HTTP_BAD_REQUEST,
                            "container \"%s\" in pod \"%s\" is waiting to start: ContainerCreating", container,
                            p->name);
        if (asprintf(&dir, "%s/%s", p->log_dir, container) < 0)
                return MHD_NO;
        if (logs_reader_open(dir, p->name, &o, &reader, &err) < 0)
                return fail(c, err.code == ENOENT ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_INTERNAL_SERVER_ERROR, "%s",
                            err.msg);
        f = calloc(1, sizeof(*f));
        if (!f) {
                logs_reader_free(reader);
                return MHD_NO;
        }
        f->reader = reader;
        if (!(f->ns = strdup(p->namespace_)) || !(f->pod = strdup(p->name)) || !(f->container = strdup(container)) ||
            !(f->id = strdup(ct->id))) {
                follow_free(f);
                return MHD_NO;
        }
        fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        f->h = h;
        f->fd = fd ? fd->connect_fd : -1;
        f->checked = cub_now_usec(CLOCK_MONOTONIC);
        /* previous, or a container that is not running: nothing to follow, the file to its end */
        f->ended = !(o.follow && !o.previous && ct->running);
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32768, follow_read, f, follow_free);
        if (!resp) {
                follow_free(f);
                return MHD_NO;
        }
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
        ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return ret;
}

/* ---- /exec, /attach, /portForward ------------------------------------------------------ */

typedef struct Argv {
        char **v;
        size_t n;
} Argv;

static enum MHD_Result collect_command(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        Argv *a = cls;
        char **nv;

        (void) kind;
        if (strcmp(key, "command") != 0 || !value)
                return MHD_YES;
        nv = realloc(a->v, (a->n + 2) * sizeof(char *));
        if (!nv)
                return MHD_NO;
        a->v = nv;
        a->v[a->n] = strdup(value);
        a->v[a->n + 1] = NULL;
        if (a->v[a->n])
                a->n++;
        return MHD_YES;
}

static void argv_done(Argv *a) {
        for (size_t i = 0; i < a->n; i++)
                free(a->v[i]);
        free(a->v);
}

static int sandbox_of(CriClient *cri, const char *uid, char **ret, CubError *err) {
        const char *selector[] = { WORKER_LABEL_UID, uid, NULL };
        CriSandbox *sb = NULL;
        size_t n = 0;
        int r = cri_list_pod_sandboxes(cri, selector, &sb, &n, err);

        *ret = NULL;
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && !*ret; i++)
                if (sb[i].state == CRI_SANDBOX_READY)
                        *ret = strdup(sb[i].id);
        cri_sandboxes_free(sb, n);
        return *ret ? 0 : cub_err_set(err, ENOENT, "the pod has no ready sandbox");
}

static enum MHD_Result stream(ApiHttp *h, struct MHD_Connection *c, const char *method, ApiKubeletKind kind,
                              const ApiPodRef *p, const char *container) {
        _cleanup_(cri_client_freep) CriClient *cri = NULL;
        _cleanup_free_ char *url = NULL, *sandbox = NULL;
        const ApiContainerRef *ct = container ? find_container(p, container) : NULL;
        CriStreamFlags fl = api_stream_flags(query_arg, c);
        Argv cmd = {};
        CubError err = {};
        int r;

        if (!MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_UPGRADE))
                return api_http_reply_text(c, MHD_HTTP_BAD_REQUEST, "Upgrade request required");
        /* kubelet looks among the running containers: any other is "not found" (500) */
        if (container && (!ct || !ct->running || !*ct->id))
                return fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "container not found (\"%s\")", container);
        if (kind != API_KUBELET_PORT_FORWARD && !fl.in && !fl.out && !fl.err)
                return api_http_reply_text(c, MHD_HTTP_BAD_REQUEST,
                                           "you must specify at least 1 of stdin, stdout, stderr");
        if (cri_client_new(api_http_runtime_endpoint(h), 0, &cri, &err) < 0)
                return fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", err.msg);
        switch (kind) {
        case API_KUBELET_EXEC:
                (void) MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_command, &cmd);
                r = cmd.n ? cri_exec(cri, ct->id, (const char *const *) cmd.v, &fl, &url, &err)
                          : cub_err_set(&err, EINVAL, "no command given (the command argument)");
                argv_done(&cmd);
                break;
        case API_KUBELET_ATTACH:
                r = cri_attach(cri, ct->id, &fl, &url, &err);
                break;
        case API_KUBELET_PORT_FORWARD:
                r = sandbox_of(cri, p->uid, &sandbox, &err);
                if (r >= 0)
                        r = cri_port_forward(cri, sandbox, NULL, 0, &url, &err);
                break;
        default: /* logs are not a stream (api_kubelet_serve) */
                r = cub_err_set(&err, EINVAL, "not a stream");
        }
        if (r < 0)
                return fail(c, r == -EINVAL ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_INTERNAL_SERVER_ERROR, "%s", err.msg);
        return api_stream_proxy(api_http_streams(h), c, method, url, api_http_conns(h), api_http_conn(c));
}

/* the request's pod (and container, when it names one) as the client expects it: its container has started */
static bool found(const ApiPodRef *p, const ApiKubeletRoute *rt) {
        const ApiContainerRef *ct;

        if (!p || (rt->uid && strcmp(p->uid, rt->uid) != 0))
                return false;
        if (!rt->container || !*rt->container)
                return true;
        ct = find_container(p, rt->container);
        return ct && *ct->id;
}

enum MHD_Result api_kubelet_serve(ApiHttp *h, struct MHD_Connection *c, const char *url, const char *method) {
        ApiKubeletRoute rt;
        unsigned status = api_kubelet_route(url, method, &rt);
        ApiSnapshot *s;
        const ApiPodRef *p;
        enum MHD_Result ret;

        if (status == 404 || status == 405)
                return api_http_reply_text(c, status,
                                           status == 404 ? "404 page not found\n" : "405 method not allowed\n");
        if (status)
                return MHD_NO;
        s = api_http_snapshot(h);
        if (!s) {
                api_kubelet_route_done(&rt);
                return api_http_reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "503 the agent is starting\n");
        }
        p = find_pod(s, rt.ns, rt.pod);
        if (!found(p, &rt)) {
                /* the snapshot may be older than what the client knows (a
                 * pod the API server already shows Running or Succeeded): once
                 * more, with one the loop renders after this request */
                api_snapshot_unref(s);
                s = api_http_snapshot_within(h, 0);
                p = s ? find_pod(s, rt.ns, rt.pod) : NULL;
        }
        if (!s) {
                api_kubelet_route_done(&rt);
                return api_http_reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "503 the agent is starting\n");
        }
        if (!p || (rt.uid && strcmp(p->uid, rt.uid) != 0))
                ret = rt.kind == API_KUBELET_LOGS ? fail(c, MHD_HTTP_NOT_FOUND, "pod \"%s\" does not exist", rt.pod)
                                                  : fail(c, MHD_HTTP_NOT_FOUND, "pod does not exist");
        else if (rt.kind == API_KUBELET_LOGS)
                ret = container_logs(h, c, p, rt.container);
        else
                ret = stream(h, c, method, rt.kind, p, rt.container);
        api_snapshot_unref(s);
        api_kubelet_route_done(&rt);
        return ret;
}
