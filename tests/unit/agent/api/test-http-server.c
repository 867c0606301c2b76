/* SPDX-License-Identifier: Apache-2.0 */
/* agent/api/http.c on a real socket, libcurl as the client: routes, status
 * codes, health checks, the freshness wait, bad clients (malformed,
 * oversized and half-open requests), the loopback rule and TLS with
 * client certificates (tests/data/http, made by make-certs.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/api/http.h"
#include "agent/util/time.h"

#define PKI "tests/data/http/"

typedef struct Reply {
        long status;
        char body[65536];
        size_t len;
        char allow[64];
        char ctype[128];
        CURLcode rc;
} Reply;

static size_t on_body(char *p, size_t size, size_t n, void *userdata) {
        Reply *r = userdata;
        size_t k = size * n;

        if (r->len + k >= sizeof(r->body))
                k = sizeof(r->body) - r->len - 1;
        memcpy(r->body + r->len, p, k);
        r->len += k;
        r->body[r->len] = '\0';
        return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *userdata) {
        Reply *r = userdata;

        if (strncasecmp(p, "Allow: ", 7) == 0)
                (void) snprintf(r->allow, sizeof(r->allow), "%.*s", (int) strcspn(p + 7, "\r\n"), p + 7);
        if (strncasecmp(p, "Content-Type: ", 14) == 0)
                (void) snprintf(r->ctype, sizeof(r->ctype), "%.*s", (int) strcspn(p + 14, "\r\n"), p + 14);
        return size * n;
}

/* method NULL = GET; tls: "" none, else the client cert's base name ("-" = no client cert) */
static Reply *fetch(const char *scheme, unsigned port, const char *path, const char *method, const char *body,
                    const char *client) {
        Reply *r = calloc(1, sizeof(*r));
        CURL *c = curl_easy_init();
        char url[256], cert[128], key[128];

        assert_non_null(r);
        (void) snprintf(url, sizeof(url), "%s://127.0.0.1:%u%s", scheme, port, path);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
        if (method && strcmp(method, "HEAD") == 0)
                curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        else if (method)
                curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        if (body)
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        if (client) {
                curl_easy_setopt(c, CURLOPT_CAINFO, PKI "ca.pem");
                if (strcmp(client, "-") != 0) {
                        (void) snprintf(cert, sizeof(cert), PKI "%s.pem", client);
                        (void) snprintf(key, sizeof(key), PKI "%s-key.pem", client);
                        curl_easy_setopt(c, CURLOPT_SSLCERT, cert);
                        curl_easy_setopt(c, CURLOPT_SSLKEY, key);
                }
        }
        r->rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        curl_easy_cleanup(c);
        return r;
}

static Reply *get(unsigned port, const char *path) {
        return fetch("http", port, path, NULL, NULL, NULL);
}

static uint64_t now(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

static ApiSnapshot *snapshot(const char *pods, uint64_t made) {
        ApiSnapshot *s = api_snapshot_new();

        assert_non_null(s);
        s->made_usec = made;
        s->node_name = strdup("node1");
        s->pods_json = strdup(pods);
        s->metrics =
                strdup("# HELP kubelet_running_pods x\n# TYPE kubelet_running_pods gauge\nkubelet_running_pods 2\n");
        return s;
}

static ApiHttp *start(ApiHttpConfig *c) {
        ApiHttp *h = NULL;
        CubError err = {};

        c->port = API_HTTP_PORT_ANY;
        if (api_http_new(c, &h, &err) < 0)
                fail_msg("start: %s", err.msg);
        api_http_heartbeat(h, now(), 0, true);
        return h;
}

#define CHECK(r, code, text)                                 \
        do {                                                 \
                Reply *r_ = (r);                             \
                assert_int_equal(r_->rc, CURLE_OK);          \
                assert_int_equal(r_->status, code);          \
                if (text)                                    \
                        assert_string_equal(r_->body, text); \
                free(r_);                                    \
        } while (0)

static void test_routes(void **state) {
        ApiHttpConfig c;
        ApiHttp *h;
        Reply *r;
        unsigned port;

        (void) state;
        api_http_config_init(&c);
        h = start(&c);
        port = api_http_port(h);
        assert_true(port > 0 && port < 65536);
        CHECK(get(port, "/pods"), 503, "503 the agent is starting\n");
        api_http_publish(h, snapshot("{\"kind\":\"PodList\"}", now()));
        r = get(port, "/pods");
        assert_int_equal(r->status, 200);
        assert_string_equal(r->body, "{\"kind\":\"PodList\"}");
        assert_string_equal(r->ctype, "application/json");
        free(r);
        CHECK(get(port, "/pods/"), 200, "{\"kind\":\"PodList\"}");
        r = get(port, "/metrics");
        assert_int_equal(r->status, 200);
        assert_string_equal(r->ctype, "text/plain; version=0.0.4; charset=utf-8");
        assert_true(strncmp(r->body, "# HELP kubelet_running_pods x\n", 30) == 0);
        assert_non_null(strstr(r->body, "\nprocess_open_fds "));
        free(r);
        r = get(port, "/metrics/resource");
        assert_int_equal(r->status, 200);
        assert_non_null(strstr(r->body, "\nscrape_error "));
        free(r);
        r = get(port, "/stats/summary");
        assert_int_equal(r->status, 200);
        assert_non_null(strstr(r->body, "\"nodeName\": \"node1\""));
        free(r);
        CHECK(get(port, "/healthz"), 200, "ok");
        CHECK(get(port, "/livez"), 200, "ok");
        CHECK(get(port, "/readyz"), 200, "ok");
        CHECK(get(port, "/healthz?verbose"), 200, "[+]ping ok\n[+]syncloop ok\n[+]runtime ok\nhealthz check passed\n");
        CHECK(get(port, "/livez?verbose"), 200, "[+]ping ok\n[+]syncloop ok\nlivez check passed\n");
        CHECK(get(port, "/nope"), 404, "404 page not found\n");
        CHECK(get(port, "/podsx"), 404, "404 page not found\n");
        CHECK(get(port, "/"), 404, "404 page not found\n");
        r = fetch("http", port, "/pods", "POST", "x=1", NULL);
        assert_int_equal(r->status, 405);
        assert_string_equal(r->allow, "GET, HEAD");
        free(r);
        CHECK(fetch("http", port, "/pods", "DELETE", NULL, NULL), 405, "405 method not allowed\n");
        CHECK(fetch("http", port, "/pods", "GET", "a body", NULL), 413, "413 a GET takes no body\n");
        CHECK(fetch("http", port, "/pods", "HEAD", NULL, NULL), 200, "");
        api_http_free(h);
}

static void test_health(void **state) {
        ApiHttpConfig c;
        ApiHttp *h;
        Reply *r;
        unsigned port;

        (void) state;
        api_http_config_init(&c);
        c.stall_usec = 300 * 1000;
        h = start(&c);
        port = api_http_port(h);
        /* not listed yet: alive, not ready (with no snapshot published yet) */
        api_http_heartbeat(h, now(), 0, false);
        CHECK(get(port, "/livez"), 200, "ok");
        CHECK(get(port, "/healthz"), 200, "ok");
        CHECK(get(port, "/readyz"), 500,
              "[+]ping ok\n[+]syncloop ok\n[+]runtime ok\n[+]runtime-network ok\n[-]synced failed: the runtime has "
              "not been listed yet\nreadyz check failed\n");
        api_http_heartbeat(h, now(), 0, true);
        CHECK(get(port, "/readyz"), 200, "ok");
        /* the runtime's network not ready: not ready, still healthy */
        api_http_set_network(h, "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                                "message:cni plugin not initialized");
        CHECK(get(port, "/readyz"), 500,
              "[+]ping ok\n[+]syncloop ok\n[+]runtime ok\n[-]runtime-network failed: container runtime network not "
              "ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized\n[+]synced "
              "ok\nreadyz check failed\n");
        CHECK(get(port, "/healthz"), 200, "ok");
        api_http_set_network(h, "");
        CHECK(get(port, "/readyz"), 200, "ok");
        api_http_publish(h, snapshot("{}", now()));
        /* the loop stops beating */
        usleep(1200 * 1000);
        r = get(port, "/healthz");
        assert_int_equal(r->status, 500);
        assert_string_equal(r->body, "[+]ping ok\n[-]syncloop failed: the loop has not run for 1 s (watchdog 0 s)\n"
                                     "[+]runtime ok\nhealthz check failed\n");
        free(r);
        CHECK(get(port, "/livez"), 500, NULL);
        /* a stalled loop: the data request does not wait, it gets the last snapshot */
        CHECK(get(port, "/pods"), 200, "{}");
        /* the runtime unreachable for 61 s */
        api_http_heartbeat(h, now(), now() - 61 * CUB_USEC_PER_SEC, true);
        r = get(port, "/healthz");
        assert_int_equal(r->status, 500);
        assert_string_equal(r->body, "[+]ping ok\n[+]syncloop ok\n[-]runtime failed: the container runtime has been "
                                     "unreachable for 61 s\nhealthz check failed\n");
        free(r);
        CHECK(get(port, "/livez"), 200, "ok");
        /* for 10 s: healthy (kubelet's 1 min), but not ready */
        api_http_heartbeat(h, now(), now() - 10 * CUB_USEC_PER_SEC, true);
        CHECK(get(port, "/healthz"), 200, "ok");
        r = get(port, "/readyz");
        assert_int_equal(r->status, 500);
        assert_non_null(strstr(r->body, "[-]runtime failed: the container runtime has been unreachable for 10 s\n"));
        free(r);
        api_http_free(h);
}

typedef struct Async {
        unsigned port;
        Reply *r;
} Async;

static void *async_get(void *userdata) {
        Async *a = userdata;

        a->r = get(a->port, "/pods");
        return NULL;
}

/* A stale snapshot: the request asks the loop and waits for a fresh one. */
static void test_fresh_wait(void **state) {
        ApiHttpConfig c;
        ApiHttp *h;
        pthread_t t;
        Async a = {};
        bool asked = false;

        (void) state;
        api_http_config_init(&c);
        h = start(&c);
        a.port = api_http_port(h);
        api_http_publish(h, snapshot("old", now() - 10 * CUB_USEC_PER_SEC));
        (void) api_http_take_wanted(h);
        assert_int_equal(pthread_create(&t, NULL, async_get, &a), 0);
        for (int i = 0; i < 100 && !asked; i++) {
                usleep(10 * 1000);
                api_http_heartbeat(h, now(), 0, true);
                asked = api_http_take_wanted(h);
        }
        assert_true(asked);
        api_http_publish(h, snapshot("fresh", now()));
        pthread_join(t, NULL);
        assert_int_equal(a.r->status, 200);
        assert_string_equal(a.r->body, "fresh");
        free(a.r);
        api_http_free(h);
}

static int connect_to(unsigned port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        return fd;
}

/* What the server answers to raw bytes: the status line, or "" when it closed. */
static void raw(unsigned port, const char *req, size_t len, char *out, size_t outlen) {
        int fd = connect_to(port);
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t n;

        (void) send(fd, req, len, MSG_NOSIGNAL);
        out[0] = '\0';
        if (poll(&p, 1, 5000) == 1) {
                n = recv(fd, out, outlen - 1, 0);
                out[n > 0 ? n : 0] = '\0';
                out[strcspn(out, "\r")] = '\0';
        }
        close(fd);
}

static void test_bad_clients(void **state) {
        ApiHttpConfig c;
        ApiHttp *h;
        unsigned port;
        int half[20];
        char line[256], *big;
        struct pollfd p;
        uint64_t t0;

        (void) state;
        api_http_config_init(&c);
        c.timeout_sec = 2;
        h = start(&c);
        port = api_http_port(h);
        api_http_publish(h, snapshot("{}", now()));
        /* half-open: a request line and part of a header, then nothing */
        for (size_t i = 0; i < 20; i++) {
                half[i] = connect_to(port);
                assert_true(send(half[i], "GET /pods HTTP/1.1\r\nHost: loc", 29, MSG_NOSIGNAL) == 29);
        }
        raw(port, "\x01\x02garbage\r\n\r\n", 13, line, sizeof(line));
        assert_string_equal(line, ""); /* closed at once */
        raw(port, "GET /pods HTTP/9.9\r\nHost: x\r\n\r\n", 31, line, sizeof(line));
        assert_string_equal(line, "HTTP/1.1 505 HTTP Version Not Supported");
        raw(port, "GET /pods\r\n\r\n", 13, line, sizeof(line));
        assert_string_equal(line, "HTTP/1.1 400 Bad Request");
        /* 64 KiB of headers: over the 32 KiB per connection */
        big = malloc(70000);
        assert_non_null(big);
        {
                static const char head[] = "GET /pods HTTP/1.1\r\nHost: x\r\nX-Big: ";
                size_t hl = sizeof(head) - 1;

                memcpy(big, head, hl);
                memset(big + hl, 'a', 65536);
                memcpy(big + hl + 65536, "\r\n\r\n", 5);
        }
        raw(port, big, strlen(big), line, sizeof(line));
        assert_string_equal(line, "HTTP/1.1 431 Request Header Fields Too Large");
        free(big);
        /* the server still answers while the half-open ones hang */
        CHECK(get(port, "/healthz"), 200, "ok");
        CHECK(get(port, "/pods"), 200, "{}");
        /* they are still open */
        p = (struct pollfd){ .fd = half[0], .events = POLLIN };
        assert_int_equal(poll(&p, 1, 0), 0);
        /* and dropped after the connection timeout */
        t0 = now();
        for (size_t i = 0; i < 20; i++) {
                char b[64];

                p = (struct pollfd){ .fd = half[i], .events = POLLIN };
                assert_int_equal(poll(&p, 1, 6000), 1);
                assert_true(recv(half[i], b, sizeof(b), 0) <= 0);
                close(half[i]);
        }
        assert_true(now() - t0 < 6 * CUB_USEC_PER_SEC);
        CHECK(get(port, "/healthz"), 200, "ok");
        api_http_free(h);
}

static void test_addresses(void **state) {
        ApiHttpConfig c;
        ApiHttp *h = NULL;
        CubError err = {};

        (void) state;
        api_http_config_init(&c);
        c.port = API_HTTP_PORT_ANY;
        c.address = "0.0.0.0";
        assert_int_equal(api_http_new(&c, &h, &err), -EPERM);
        assert_string_equal(err.msg, "HTTP API on '0.0.0.0' (not loopback): refusing to serve without TLS and client "
                                     "certificates: set tlsCertFile, tlsPrivateKeyFile and "
                                     "authentication.x509.clientCAFile, or readOnlyPort: 0");
        c.tls_cert_file = PKI "server.pem";
        c.tls_key_file = PKI "server-key.pem";
        assert_int_equal(api_http_new(&c, &h, &err), -EPERM); /* TLS without client certificates */
        c.address = "localhost";
        assert_int_equal(api_http_new(&c, &h, &err), -EINVAL);
        assert_string_equal(err.msg, "HTTP API address 'localhost': expected a numeric IPv4 or IPv6 address");
        c.address = "127.0.0.1";
        c.tls_key_file = PKI "missing.pem";
        assert_int_equal(api_http_new(&c, &h, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "tlsPrivateKeyFile"));
        assert_true(api_http_address_is_loopback("127.0.0.2"));
        assert_true(api_http_address_is_loopback("::1"));
        assert_false(api_http_address_is_loopback("10.0.0.1"));
        assert_false(api_http_address_is_loopback("::"));
        /* with TLS and a client CA any address may serve */
        c.address = "0.0.0.0";
        c.tls_key_file = PKI "server-key.pem";
        c.client_ca_file = PKI "ca.pem";
        assert_int_equal(api_http_new(&c, &h, &err), 0);
        api_http_free(h);
}

static void test_tls(void **state) {
        ApiHttpConfig c;
        ApiHttp *h;
        unsigned port;
        Reply *r;

        (void) state;
        api_http_config_init(&c);
        c.tls_cert_file = PKI "server.pem";
        c.tls_key_file = PKI "server-key.pem";
        c.client_ca_file = PKI "ca.pem";
        h = start(&c);
        port = api_http_port(h);
        api_http_publish(h, snapshot("{\"items\":[]}", now()));
        CHECK(fetch("https", port, "/pods", NULL, NULL, "client"), 200, "{\"items\":[]}");
        CHECK(fetch("https", port, "/healthz", NULL, NULL, "client"), 200, "ok");
        r = fetch("https", port, "/pods", NULL, NULL, "-");
        assert_int_equal(r->rc, CURLE_OK);
        assert_int_equal(r->status, 401);
        assert_string_equal(r->body, "Unauthorized: a client certificate signed by the clientCAFile is required\n");
        free(r);
        CHECK(fetch("https", port, "/healthz", NULL, NULL, "rogue-client"), 401, NULL);
        /* plain HTTP on the TLS port gets nothing */
        r = get(port, "/pods");
        assert_int_not_equal(r->status, 200);
        free(r);
        api_http_free(h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_routes),      cmocka_unit_test(test_health),    cmocka_unit_test(test_fresh_wait),
                cmocka_unit_test(test_bad_clients), cmocka_unit_test(test_addresses), cmocka_unit_test(test_tls),
        };
        int r;

        curl_global_init(CURL_GLOBAL_DEFAULT);
        r = cmocka_run_group_tests(tests, NULL, NULL);
        curl_global_cleanup();
        return r;
}
