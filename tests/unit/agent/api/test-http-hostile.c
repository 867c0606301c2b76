/* SPDX-License-Identifier: Apache-2.0 */
/* agent/api/http.c against hostile clients (issue 25, section 4): the
 * header deadline (not reset by each byte; a TLS handshake too), a full
 * table making room for a good client (one accepted mid-flood too), requests
 * in flight per address; and
 * http-hostile.py, as a new user would write it: 1,000 connections from
 * 127.0.0.1 that trickle request headers (and over TLS, 1,000 that stall in
 * the handshake) while it asks /healthz, /readyz and /metrics from a fresh
 * connection every 0.5 s. The servers have the agent's defaults there, and
 * a thread plays the loop (a tick a second). */
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
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/api/http.h"
#include "agent/util/time.h"

#define PKI "tests/data/http/"
#define PYTHON "/usr/bin/python3"

extern char **environ;

static uint64_t now(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

static ApiSnapshot *snapshot(uint64_t made) {
        ApiSnapshot *s = api_snapshot_new();

        assert_non_null(s);
        s->made_usec = made;
        s->node_name = strdup("node1");
        s->pods_json = strdup("{\"kind\":\"PodList\",\"items\":[]}");
        s->metrics =
                strdup("# HELP kubelet_running_pods x\n# TYPE kubelet_running_pods gauge\nkubelet_running_pods 0\n");
        return s;
}

static ApiHttp *start_with(const char *cert, const char *key, const char *ca, unsigned limit, unsigned timeout_sec) {
        ApiHttpConfig c;
        ApiHttp *h = NULL;
        CubError err = {};

        api_http_config_init(&c);
        c.port = API_HTTP_PORT_ANY;
        if (limit)
                c.connection_limit = limit;
        if (timeout_sec)
                c.timeout_sec = timeout_sec;
        c.tls_cert_file = cert;
        c.tls_key_file = key;
        c.client_ca_file = ca;
        if (api_http_new(&c, &h, &err) < 0)
                fail_msg("start: %s", err.msg);
        api_http_heartbeat(h, now(), 0, true);
        api_http_publish(h, snapshot(now()));
        return h;
}

static ApiHttp *start(const char *cert, const char *key, const char *ca) {
        return start_with(cert, key, ca, 0, 0);
}

static int connect_to(unsigned port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        return fd;
}

static void send_all(int fd, const char *s) {
        assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t) strlen(s));
}

/* Whether the server closed fd (reads what it sent until then). */
static bool closed(int fd, int wait_ms) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char b[4096];
        ssize_t n;

        while (poll(&p, 1, wait_ms) == 1) {
                n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
                if (n <= 0)
                        return n == 0 || errno != EAGAIN;
        }
        return false;
}

typedef struct Body {
        char *p;
        size_t size, len;
} Body;

static size_t on_body(char *p, size_t size, size_t n, void *userdata) {
        Body *b = userdata;
        size_t k = size * n;

        if (b->len + k >= b->size)
                k = b->size - b->len - 1;
        memcpy(b->p + b->len, p, k);
        b->len += k;
        b->p[b->len] = '\0';
        return size * n;
}

/* The status of GET path on a fresh connection (0: none), its body in body. */
static long get(unsigned port, const char *path, char *body, size_t size) {
        CURL *c = curl_easy_init();
        Body b = { .p = body, .size = size };
        char url[128];
        long status = 0;

        body[0] = '\0';
        (void) snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
        if (curl_easy_perform(c) == CURLE_OK)
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        return status;
}

/* A byte every 250 ms keeps libmicrohttpd's idle timeout (2 s here) from
 * ever firing: the header deadline closes the connection 2 s after its
 * accept all the same. Over TLS, a ClientHello trickled the same way. (A
 * second request on a kept-alive connection would have its own deadline
 * from the end of the first response, but libmicrohttpd 0.9.75 closes a
 * connection whose response was queued at the first call of the handler,
 * as http.c's are.) */
static void test_header_deadline(void **state) {
        ApiHttp *h = start_with(NULL, NULL, NULL, 0, 2), *hs;
        int fd[2];
        uint64_t t0, shut[2] = {};

        (void) state;
        hs = start_with(PKI "server.pem", PKI "server-key.pem", NULL, 0, 2);
        fd[0] = connect_to(api_http_port(h));
        fd[1] = connect_to(api_http_port(hs));
        t0 = now();
        send_all(fd[0], "GET /healthz HTTP/1.1\r\nHost: x\r\n");
        /* a handshake record of 512 bytes, a ClientHello of 508: its first bytes */
        send_all(fd[1], "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03");
        while (now() - t0 < 6 * CUB_USEC_PER_SEC && (!shut[0] || !shut[1])) {
                usleep(250 * 1000);
                for (size_t i = 0; i < 2; i++) {
                        if (shut[i])
                                continue;
                        if (closed(fd[i], 0))
                                shut[i] = now();
                        else
                                (void) send(fd[i], i == 0 ? "a" : "\x00", 1, MSG_NOSIGNAL);
                }
        }
        for (size_t i = 0; i < 2; i++) {
                print_message("# %s: closed %.2f s after its connect\n", i == 0 ? "headers" : "TLS handshake",
                              shut[i] ? (double) (shut[i] - t0) / 1e6 : -1.0);
                assert_true(shut[i] != 0);
                assert_true(shut[i] - t0 >= 1900 * CUB_USEC_PER_MSEC);
                assert_true(shut[i] - t0 <= 3000 * CUB_USEC_PER_MSEC);
                close(fd[i]);
        }
        api_http_free(h);
        api_http_free(hs);
}

/* Four slots, all taken by clients that stall in their headers: a good
 * client is served, and one of them made room for it. */
static void test_full_table(void **state) {
        ApiHttp *h = start_with(NULL, NULL, NULL, 4, 0);
        unsigned port = api_http_port(h), n_closed = 0;
        int fd[4];
        char body[256];

        (void) state;
        for (size_t i = 0; i < 4; i++) {
                fd[i] = connect_to(port);
                send_all(fd[i], "GET /healthz HTTP/1.1\r\nHo");
        }
        usleep(100 * 1000);
        for (int k = 0; k < 3; k++) {
                assert_int_equal(get(port, "/healthz", body, sizeof(body)), 200);
                assert_string_equal(body, "ok");
        }
        for (size_t i = 0; i < 4; i++) {
                n_closed += closed(fd[i], 100);
                close(fd[i]);
        }
        assert_int_equal(n_closed, 1); /* then the first good one's slot was free */
        api_http_free(h);
}

/* A good client accepted in the middle of a flood, its request not sent
 * yet: the silent connections older than it make room for the next two, so
 * its request is answered (the newest of equals made room before, so the
 * next connection pushed it out: a probe of http-hostile.py in a CI). */
static void test_good_client_mid_flood(void **state) {
        ApiHttp *h = start_with(NULL, NULL, NULL, 4, 0);
        unsigned port = api_http_port(h), n_closed = 0;
        int flood[6], good = -1;
        char b[4096];
        ssize_t n;

        (void) state;
        for (size_t i = 0; i < 6; i++) {
                if (i == 4) {
                        good = connect_to(port);
                        usleep(100 * 1000); /* accepted: the first silent one made room */
                }
                flood[i] = connect_to(port);
                usleep(100 * 1000);
        }
        assert_false(closed(good, 0));
        send_all(good, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        n = recv(good, b, sizeof(b) - 1, 0);
        assert_true(n > 0);
        b[n] = '\0';
        assert_non_null(strstr(b, "HTTP/1.1 200"));
        close(good);
        for (size_t i = 0; i < 6; i++) {
                bool shut = closed(flood[i], 100);

                n_closed += shut;
                assert_int_equal(shut, i < 3); /* the three oldest */
                close(flood[i]);
        }
        assert_int_equal(n_closed, 3);
        api_http_free(h);
}

/* Two requests in flight from 127.0.0.1 (of 4 slots): the third is 503
 * until one of them is done. The responses (32 MiB) outgrow the sockets'
 * buffers, so that they stay in flight while their clients do not read. */
static void test_in_flight_per_address(void **state) {
        ApiHttp *h = start_with(NULL, NULL, NULL, 4, 0);
        unsigned port = api_http_port(h);
        ApiSnapshot *s = snapshot(now());
        size_t big = 32u << 20;
        int fd[2];
        char body[256];

        (void) state;
        free(s->pods_json);
        s->pods_json = malloc(big + 1);
        assert_non_null(s->pods_json);
        memset(s->pods_json, ' ', big);
        s->pods_json[big] = '\0';
        api_http_publish(h, s);
        for (size_t i = 0; i < 2; i++) {
                fd[i] = connect_to(port);
                send_all(fd[i], "GET /pods HTTP/1.1\r\nHost: x\r\n\r\n");
        }
        usleep(300 * 1000);
        assert_int_equal(get(port, "/healthz", body, sizeof(body)), 503);
        assert_string_equal(body, "503 too many requests in flight from this address\n");
        close(fd[0]);
        usleep(300 * 1000);
        assert_int_equal(get(port, "/healthz", body, sizeof(body)), 200);
        close(fd[1]);
        api_http_free(h);
}

typedef struct Loop {
        ApiHttp *h[2];
        atomic_bool stop;
} Loop;

/* What agent/serve.c's tick does: a heartbeat, and a snapshot when asked. */
static void *loop(void *userdata) {
        Loop *l = userdata;

        while (!atomic_load(&l->stop)) {
                usleep(1000 * 1000);
                for (size_t i = 0; i < 2; i++) {
                        api_http_heartbeat(l->h[i], now(), 0, true);
                        if (api_http_take_wanted(l->h[i]))
                                api_http_publish(l->h[i], snapshot(now()));
                }
        }
        return NULL;
}

static void test_trickle(void **state) {
        Loop l = {};
        pthread_t t;
        char plain[16], tls[16];
        const char *argv[] = { PYTHON,    "tests/unit/agent/api/http-hostile.py",
                               "--plain", plain,
                               "--tls",   tls,
                               "--ca",    PKI "ca.pem",
                               "--cert",  PKI "client.pem",
                               "--key",   PKI "client-key.pem",
                               NULL };
        pid_t pid;
        int status;

        (void) state;
        if (access(PYTHON, X_OK) < 0) {
                print_message("# skipped: no " PYTHON "\n");
                skip();
        }
        l.h[0] = start(NULL, NULL, NULL);
        l.h[1] = start(PKI "server.pem", PKI "server-key.pem", PKI "ca.pem");
        (void) snprintf(plain, sizeof(plain), "%u", api_http_port(l.h[0]));
        (void) snprintf(tls, sizeof(tls), "%u", api_http_port(l.h[1]));
        assert_int_equal(pthread_create(&t, NULL, loop, &l), 0);
        fflush(stdout);
        assert_int_equal(posix_spawn(&pid, PYTHON, NULL, NULL, (char *const *) argv, environ), 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        atomic_store(&l.stop, true);
        pthread_join(t, NULL);
        api_http_free(l.h[0]);
        api_http_free(l.h[1]);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                skip(); /* it said why */
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_header_deadline),
                cmocka_unit_test(test_full_table),
                cmocka_unit_test(test_good_client_mid_flood),
                cmocka_unit_test(test_in_flight_per_address),
                cmocka_unit_test(test_trickle),
        };
        int r;

        curl_global_init(CURL_GLOBAL_DEFAULT);
        r = cmocka_run_group_tests(tests, NULL, NULL);
        curl_global_cleanup();
        return r;
}
