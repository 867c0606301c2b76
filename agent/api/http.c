/* SPDX-License-Identifier: Apache-2.0 */
/* The node's HTTP API: libmicrohttpd's own thread, reading the snapshot the
 * loop publishes (http.h). */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "../util/time.h"
#include "conns.h"
#include "http-internal.h"
#include "metrics.h"
#include "resource.h"

#define PEM_MAX (1024 * 1024)

/* ---- the loop's side ------------------------------------------------------------ */

void api_http_publish(ApiHttp *h, ApiSnapshot *s) {
        ApiSnapshot *old;

        pthread_mutex_lock(&h->lock);
        old = h->snap;
        h->snap = s;
        pthread_cond_broadcast(&h->fresh);
        pthread_mutex_unlock(&h->lock);
        api_snapshot_unref(old);
}

void api_http_heartbeat(ApiHttp *h, uint64_t now_usec, uint64_t runtime_down_since_usec, bool synced) {
        atomic_store(&h->synced, synced);
        atomic_store(&h->heartbeat, now_usec);
        atomic_store(&h->runtime_down_since, runtime_down_since_usec);
}

void api_http_set_network(ApiHttp *h, const char *error) {
        pthread_mutex_lock(&h->lock);
        (void) snprintf(h->network_error, sizeof(h->network_error), "%s", error ? error : "");
        pthread_mutex_unlock(&h->lock);
}

bool api_http_take_wanted(ApiHttp *h) {
        return atomic_exchange(&h->wanted, false);
}

const char *api_http_runtime_endpoint(ApiHttp *h) {
        return h->runtime_endpoint;
}

ApiStreams *api_http_streams(ApiHttp *h) {
        return h->streams;
}

ApiConns *api_http_conns(ApiHttp *h) {
        return h->conns;
}

bool api_http_stopping(ApiHttp *h) {
        return atomic_load(&h->stopping);
}

/* ---- the HTTP thread ------------------------------------------------------------- */

static uint64_t now_usec(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

bool api_http_loop_alive(ApiHttp *h, uint64_t now, uint64_t *ret_age) {
        uint64_t hb = atomic_load(&h->heartbeat);

        *ret_age = now > hb ? now - hb : 0;
        return *ret_age <= h->stall_usec;
}

/* A reference to the newest snapshot no older than max_age_usec; waits (up to
 * API_HTTP_STALE_USEC) for the loop to render a fresher one while the loop
 * lives. NULL before the first. */
ApiSnapshot *api_http_snapshot_within(ApiHttp *h, uint64_t max_age_usec) {
        uint64_t t0 = now_usec(), age;
        struct timespec deadline;
        ApiSnapshot *s;

        atomic_store(&h->wanted, true);
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += (time_t) (API_HTTP_STALE_USEC / CUB_USEC_PER_SEC);
        pthread_mutex_lock(&h->lock);
        if ((!h->snap || h->snap->made_usec + max_age_usec < t0) && h->wake_fd >= 0)
                (void) eventfd_write(h->wake_fd, 1); /* the loop renders now, not on its next tick */
        while ((!h->snap || h->snap->made_usec + max_age_usec < t0) && api_http_loop_alive(h, now_usec(), &age) &&
               pthread_cond_timedwait(&h->fresh, &h->lock, &deadline) == 0)
                ;
        s = api_snapshot_ref(h->snap);
        pthread_mutex_unlock(&h->lock);
        return s;
}

ApiSnapshot *api_http_snapshot(ApiHttp *h) {
        return api_http_snapshot_within(h, API_HTTP_STALE_USEC);
}

enum MHD_Result api_http_reply(struct MHD_Connection *c, unsigned status, const char *ctype, char *body, size_t len) {
        struct MHD_Response *r;
        enum MHD_Result ret;

        r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!r) {
                free(body);
                return MHD_NO;
        }
        (void) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
        if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
                (void) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        ret = MHD_queue_response(c, status, r);
        MHD_destroy_response(r);
        return ret;
}

enum MHD_Result api_http_reply_text(struct MHD_Connection *c, unsigned status, const char *text) {
        char *b = strdup(text);

        return b ? api_http_reply(c, status, "text/plain; charset=utf-8", b, strlen(b)) : MHD_NO;
}

bool api_http_client_cert_ok(struct MHD_Connection *c) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        gnutls_session_t s;
        unsigned n = 0, status = 0;

        if (!ci || !ci->tls_session)
                return false;
        s = (gnutls_session_t) ci->tls_session;
        if (!gnutls_certificate_get_peers(s, &n) || n == 0)
                return false;
        return gnutls_certificate_verify_peers2(s, &status) == GNUTLS_E_SUCCESS && status == 0;
}

/* ---- connection slots (conns.h): libmicrohttpd's events in, drops out ---- */

ApiConn *api_http_conn(struct MHD_Connection *c) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode what) {
        ApiHttp *h = cls;
        const union MHD_ConnectionInfo *fd, *peer;
        ApiConn *conn;

        if (what == MHD_CONNECTION_NOTIFY_STARTED) {
                fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
                peer = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
                /* without a slot (never while MHD's limit is the table's capacity) it was dropped */
                if (fd &&
                    api_conns_open(h->conns, fd->connect_fd, peer ? peer->client_addr : NULL, now_usec(), &conn) == 0)
                        *socket_context = conn;
        } else if (what == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
                /* libmicrohttpd closes the socket after this: the table drops it no more */
                api_conns_close(h->conns, *socket_context);
                *socket_context = NULL;
        }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
        ApiHttp *h = cls;
        ApiConn *conn = api_http_conn(c);

        (void) con_cls;
        (void) toe;
        if (conn)
                api_conns_response_done(h->conns, conn, now_usec());
}

/* The headers are in: true when the request goes on (in flight). Else
 * *ret is the handler's answer: its address has too many in flight (503,
 * and the connection closes), or it was dropped meanwhile (closed). */
static bool admit(ApiHttp *h, struct MHD_Connection *c, enum MHD_Result *ret) {
        static const char busy[] = "503 too many requests in flight from this address\n";
        ApiConn *conn = api_http_conn(c);
        struct MHD_Response *resp;
        int r = conn ? api_conns_request(h->conns, conn) : 0;

        if (r == 0)
                return true;
        *ret = MHD_NO;
        if (r != -EBUSY)
                return false;
        resp = MHD_create_response_from_buffer(sizeof(busy) - 1, (void *) busy, MHD_RESPMEM_PERSISTENT);
        if (!resp)
                return false;
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        *ret = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, resp);
        MHD_destroy_response(resp);
        return false;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
        ApiHttp *h = cls;
        const char *clen = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        enum MHD_Result r;
        bool has_body;

        (void) version;
        (void) upload_data;
        (void) con_cls;
        if (!admit(h, c, &r))
                return r;
        if (h->auth) {
                if (!api_kubelet_authorized(h->auth, c, url, method, &r))
                        return r;
        } else if (h->ca && !api_http_client_cert_ok(c))
                return api_http_reply_text(c, MHD_HTTP_UNAUTHORIZED,
                                           "Unauthorized: a client certificate signed by the "
                                           "clientCAFile is required\n");
        has_body = *upload_data_size > 0 || (clen && strcmp(clen, "0") != 0) ||
                   MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        if (h->auth && api_kubelet_path(url))
                return has_body ? api_http_reply_text(c, MHD_HTTP_CONTENT_TOO_LARGE, "413 no body is taken here\n")
                                : api_kubelet_serve(h, c, url, method);
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                return api_http_reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "405 method not allowed\n");
        if (has_body)
                return api_http_reply_text(c, MHD_HTTP_CONTENT_TOO_LARGE, "413 a GET takes no body\n");
        return api_readonly_serve(h, c, url);
}

/* ---- start and stop ------------------------------------------------------------- */

void api_http_config_init(ApiHttpConfig *c) {
        *c = (ApiHttpConfig){ .address = "127.0.0.1",
                              .port = 10255,
                              .cgroup_root = "/sys/fs/cgroup",
                              .proc = "/proc",
                              .fs_path = "/",
                              .stall_usec = 30 * CUB_USEC_PER_SEC,
                              .connection_limit = 64,
                              .timeout_sec = 10,
                              .wake_fd = -1 };
}

bool api_http_address_is_loopback(const char *address) {
        struct in_addr a4;
        struct in6_addr a6;

        if (inet_pton(AF_INET, address, &a4) == 1)
                return (ntohl(a4.s_addr) >> 24) == 127;
        return inet_pton(AF_INET6, address, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

static int read_pem(const char *field, const char *path, char **ret, CubError *err) {
        size_t len;
        int r = cub_read_file(path, PEM_MAX, ret, &len, err);

        return r < 0 ? cub_err_wrap_errno(err, r, "%s", field) : 0;
}

int api_http_new(const ApiHttpConfig *c, ApiHttp **ret, CubError *err) {
        struct sockaddr_storage ss = {};
        struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
        unsigned port = c->port == API_HTTP_PORT_ANY ? 0 : c->port;
        pthread_condattr_t ca;
        const union MHD_DaemonInfo *di;
        ApiHttp *h;
        int r;

        if (inet_pton(AF_INET, c->address, &s4->sin_addr) == 1) {
                s4->sin_family = AF_INET;
                s4->sin_port = htons((uint16_t) port);
        } else if (inet_pton(AF_INET6, c->address, &s6->sin6_addr) == 1) {
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons((uint16_t) port);
                flags |= MHD_USE_IPv6;
        } else
                return cub_err_set(err, EINVAL, "HTTP API address '%s': expected a numeric IPv4 or IPv6 address",
                                   c->address);
        if (!!c->tls_cert_file != !!c->tls_key_file)
                return cub_err_set(err, EINVAL, "HTTP API: tlsCertFile and tlsPrivateKeyFile go together");
        if (c->auth && !c->tls_cert_file)
                return cub_err_set(err, EINVAL, "kubelet server: tlsCertFile and tlsPrivateKeyFile are required");
        if (!c->auth && !api_http_address_is_loopback(c->address) && (!c->tls_cert_file || !c->client_ca_file))
                return cub_err_set(err, EPERM,
                                   "HTTP API on '%s' (not loopback): refusing to serve without TLS and client "
                                   "certificates: set tlsCertFile, tlsPrivateKeyFile and "
                                   "authentication.x509.clientCAFile, or readOnlyPort: 0",
                                   c->address);
        if (c->client_ca_file && !c->tls_cert_file)
                return cub_err_set(err, EINVAL, "HTTP API: authentication.x509.clientCAFile needs tlsCertFile");
        h = calloc(1, sizeof(*h));
        if (!h)
                return cub_err_set(err, ENOMEM, "out of memory");
        pthread_mutex_init(&h->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&h->fresh, &ca);
        pthread_condattr_destroy(&ca);
        h->stall_usec = c->stall_usec;
        h->wake_fd = c->wake_fd;
        atomic_store(&h->heartbeat, now_usec());
        h->address = strdup(c->address);
        h->cgroup_root = strdup(c->cgroup_root);
        h->proc = strdup(c->proc);
        h->fs_path = strdup(c->fs_path);
        if (c->auth) {
                h->auth = c->auth;
                flags = (flags & ~MHD_USE_AUTO) | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_ALLOW_UPGRADE;
                h->runtime_endpoint = strdup(c->runtime_endpoint ? c->runtime_endpoint : "");
                r = api_streams_new(&h->streams, err);
                if (r < 0)
                        goto fail;
        }
        if (!h->address || !h->cgroup_root || !h->proc || !h->fs_path || (c->auth && !h->runtime_endpoint)) {
                r = cub_err_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        if (c->tls_cert_file) {
                r = read_pem("tlsCertFile", c->tls_cert_file, &h->cert, err);
                if (r >= 0)
                        r = read_pem("tlsPrivateKeyFile", c->tls_key_file, &h->key, err);
                if (r >= 0 && c->client_ca_file)
                        r = read_pem("authentication.x509.clientCAFile", c->client_ca_file, &h->ca, err);
                if (r < 0)
                        goto fail;
                flags |= MHD_USE_TLS;
        }
        /* Slow and stalled clients (issue 25 §4): a connection has timeout_sec
         * from its accept to send complete request headers, however it
         * trickles them (a TLS handshake included), and libmicrohttpd's idle
         * timeout (timeout_sec without traffic) applies after; when
         * connection_limit connections are open, a new one takes the slot of
         * one still sending its headers (of those that sent the fewest
         * bytes, the oldest), and an address may have at most half of them
         * in flight: conns.h says why a good client is then served. The
         * request line and headers live in the per-connection memory: 32 KiB
         * is plenty for a GET and cuts off oversized requests (431/413).
         * Worst case: api_conns_capacity() = connection_limit + 32 (96)
         * connections of 32 KiB each, 3 MiB, plus a TLS session each under
         * HTTPS, and as many file descriptors (the unit's LimitNOFILE is
         * 1048576). */
        r = api_conns_new(&(ApiConnsConfig){ .limit = c->connection_limit,
                                             .per_peer = c->connection_limit / 2 ? c->connection_limit / 2 : 1,
                                             .header_usec = (uint64_t) c->timeout_sec * CUB_USEC_PER_SEC,
                                             .reaper = true },
                          &h->conns, err);
        if (r < 0)
                goto fail;
        {
                struct MHD_OptionItem tls[] = {
                        { MHD_OPTION_HTTPS_MEM_KEY, 0, h->key },
                        { MHD_OPTION_HTTPS_MEM_CERT, 0, h->cert },
                        { h->ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, h->ca },
                        { MHD_OPTION_END, 0, NULL },
                };

                h->d = MHD_start_daemon(flags, (uint16_t) port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
                                        (struct sockaddr *) &ss, MHD_OPTION_CONNECTION_TIMEOUT, c->timeout_sec,
                                        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) 32768, MHD_OPTION_CONNECTION_LIMIT,
                                        api_conns_capacity(h->conns), MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                                        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                                        h->cert ? MHD_OPTION_ARRAY : MHD_OPTION_END, tls, MHD_OPTION_END);
        }
        if (!h->d) {
                r = cub_err_set(err, EADDRNOTAVAIL,
                                "HTTP API on %s:%u: cannot start (address in use, or bad TLS certificate or key)",
                                c->address, port);
                goto fail;
        }
        di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
        h->port = di ? di->port : port;
        *ret = h;
        return 0;
fail:
        api_http_free(h);
        return r;
}

unsigned api_http_port(ApiHttp *h) {
        return h->port;
}

ApiHttp *api_http_free(ApiHttp *h) {
        if (!h)
                return NULL;
        /* the sessions first (libmicrohttpd wants upgraded connections
         * closed before it stops), then every connection thread: a
         * following log sees stopping and ends */
        atomic_store(&h->stopping, true);
        h->streams = api_streams_free(h->streams);
        if (h->d)
                MHD_stop_daemon(h->d); /* closes every connection: the table is empty after */
        api_conns_free(h->conns);
        api_snapshot_unref(h->snap);
        pthread_cond_destroy(&h->fresh);
        pthread_mutex_destroy(&h->lock);
        free(h->address);
        free(h->cgroup_root);
        free(h->proc);
        free(h->fs_path);
        free(h->runtime_endpoint);
        free(h->cert);
        free(h->key);
        free(h->ca);
        free(h);
        return NULL;
}
