/* SPDX-License-Identifier: Apache-2.0 */
/* agent/api/conns.c on a fake clock, with fake sockets (a file descriptor
 * is an index into the bytes each has received): header deadlines, who
 * makes room when the table is full, requests in flight per address, and
 * the reaper thread on the real clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>

#include "agent/api/conns.h"
#include "agent/util/time.h"

#define S CUB_USEC_PER_SEC
#define NFD 256

typedef struct Fake {
        uint64_t received[NFD];
        bool dropped[NFD];
        unsigned n_dropped;
        sem_t sem;
} Fake;

static void fake_drop(int fd, void *userdata) {
        Fake *f = userdata;

        assert_true(fd >= 0 && fd < NFD);
        assert_false(f->dropped[fd]);
        f->dropped[fd] = true;
        f->n_dropped++;
        sem_post(&f->sem);
}

static uint64_t fake_received(int fd, void *userdata) {
        Fake *f = userdata;

        return f->received[fd];
}

static ApiConns *table(Fake *f, unsigned limit, unsigned per_peer, bool reaper, uint64_t header_usec) {
        ApiConns *t = NULL;
        CubError err = {};

        memset(f, 0, sizeof(*f));
        sem_init(&f->sem, 0, 0);
        assert_int_equal(api_conns_new(&(ApiConnsConfig){ .limit = limit,
                                                          .per_peer = per_peer,
                                                          .header_usec = header_usec,
                                                          .drop = fake_drop,
                                                          .received = fake_received,
                                                          .userdata = f,
                                                          .reaper = reaper },
                                       &t, &err),
                         0);
        return t;
}

static struct sockaddr_in peer(const char *ip) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(40000) };

        assert_int_equal(inet_pton(AF_INET, ip, &sa.sin_addr), 1);
        return sa;
}

static ApiConn *open_at(ApiConns *t, int fd, const char *ip, uint64_t now) {
        struct sockaddr_in sa = peer(ip);
        ApiConn *c = NULL;

        assert_int_equal(api_conns_open(t, fd, (struct sockaddr *) &sa, now, &c), 0);
        assert_non_null(c);
        return c;
}

/* The deadline counts from the accept, or from the end of the previous
 * response, and nothing a client sends moves it. */
static void test_deadline(void **state) {
        Fake f;
        ApiConns *t = table(&f, 64, 32, false, 10 * S);
        ApiConn *a, *b, *c;
        ApiConnsStats st;

        (void) state;
        assert_int_equal(api_conns_capacity(t), 64 + API_CONNS_HEADROOM);
        assert_int_equal(api_conns_expire(t, 0), UINT64_MAX);
        a = open_at(t, 1, "127.0.0.1", 100 * S);
        b = open_at(t, 2, "127.0.0.1", 101 * S);
        c = open_at(t, 3, "127.0.0.1", 102 * S);
        f.received[1] = f.received[2] = 1000; /* a trickle: it changes nothing */
        assert_int_equal(api_conns_expire(t, 109 * S), 110 * S);
        assert_int_equal(f.n_dropped, 0);
        /* b's headers are in at 105 s; its response ends at 106 s: it waits again */
        assert_int_equal(api_conns_request(t, b), 0);
        assert_int_equal(api_conns_request(t, b), 0); /* idempotent */
        assert_int_equal(api_conns_expire(t, 110 * S), 112 * S);
        assert_true(f.dropped[1]);
        assert_int_equal(api_conns_request(t, a), -ECONNABORTED);
        api_conns_response_done(t, a, 110 * S); /* dropped: stays dropped */
        api_conns_response_done(t, b, 106 * S);
        api_conns_stats(t, &st);
        assert_int_equal(st.waiting, 2);
        assert_int_equal(st.dropped, 1);
        assert_int_equal(api_conns_expire(t, 112 * S - 1), 112 * S);
        assert_int_equal(api_conns_expire(t, 112 * S), 116 * S);
        assert_true(f.dropped[3]);
        assert_int_equal(api_conns_expire(t, 116 * S), UINT64_MAX);
        assert_true(f.dropped[2]);
        api_conns_stats(t, &st);
        assert_int_equal(st.deadline_total, 3);
        assert_int_equal(st.full_total, 0);
        api_conns_close(t, a);
        api_conns_close(t, b);
        api_conns_close(t, c);
        api_conns_stats(t, &st);
        assert_int_equal(st.waiting + st.in_flight + st.dropped, 0);
        api_conns_free(t);
}

/* A full table: of the others waiting, one that has sent the fewest bytes
 * goes, the oldest of those; a request in flight never does. */
static void test_full(void **state) {
        Fake f;
        ApiConns *t = table(&f, 4, 4, false, 10 * S);
        ApiConn *c[8];
        ApiConnsStats st;

        (void) state;
        c[1] = open_at(t, 1, "127.0.0.1", 0);
        c[2] = open_at(t, 2, "127.0.0.1", 1);
        c[3] = open_at(t, 3, "127.0.0.1", 2);
        c[4] = open_at(t, 4, "127.0.0.1", 3);
        assert_int_equal(f.n_dropped, 0);
        /* a ClientHello (517), a trickle (3 and 3), a complete request */
        f.received[1] = 517;
        f.received[2] = 3;
        f.received[3] = 3;
        f.received[4] = 80;
        assert_int_equal(api_conns_request(t, c[4]), 0);
        /* the new one has sent nothing yet: the older of the two trickles makes room */
        c[5] = open_at(t, 5, "127.0.0.1", 4);
        assert_true(f.dropped[2]);
        assert_int_equal(f.n_dropped, 1);
        /* then one that has sent nothing yet, before the other trickle */
        c[6] = open_at(t, 6, "127.0.0.1", 5);
        assert_true(f.dropped[5]);
        f.received[6] = 60;
        c[7] = open_at(t, 7, "127.0.0.1", 6);
        assert_true(f.dropped[3]);
        c[0] = open_at(t, 8, "127.0.0.1", 7);
        assert_true(f.dropped[7]);
        assert_int_equal(f.n_dropped, 4);
        /* left: the ClientHello, the request in flight, 6 and 8 */
        api_conns_stats(t, &st);
        assert_int_equal(st.waiting, 3);
        assert_int_equal(st.in_flight, 1);
        assert_int_equal(st.dropped, 4);
        assert_int_equal(st.full_total, 4);
        /* with every slot in flight, a new one has no other to push out: it goes */
        assert_int_equal(api_conns_request(t, c[1]), 0);
        assert_int_equal(api_conns_request(t, c[6]), 0);
        assert_int_equal(api_conns_request(t, c[0]), 0);
        f.received[9] = 1000;
        (void) open_at(t, 9, "127.0.0.1", 8);
        assert_true(f.dropped[9]);
        api_conns_free(t);
}

/* Slots run out only when the server ignores the table's capacity. */
static void test_capacity(void **state) {
        Fake f;
        ApiConns *t = table(&f, 1, 1, false, 10 * S);
        ApiConn *c = NULL;
        struct sockaddr_in sa = peer("10.0.0.1");
        unsigned cap = api_conns_capacity(t);

        (void) state;
        for (unsigned i = 0; i < cap; i++)
                (void) open_at(t, (int) i, "10.0.0.1", i);
        assert_int_equal(f.n_dropped, cap - 1);
        assert_int_equal(api_conns_open(t, (int) cap, (struct sockaddr *) &sa, cap, &c), -ENOBUFS);
        assert_true(f.dropped[cap]);
        api_conns_free(t);
}

/* An address has at most per_peer requests in flight; waiting ones do not count. */
static void test_per_peer(void **state) {
        Fake f;
        ApiConns *t = table(&f, 8, 2, false, 10 * S);
        ApiConn *a = open_at(t, 1, "10.0.0.1", 0), *b = open_at(t, 2, "10.0.0.1", 0);
        ApiConn *c = open_at(t, 3, "10.0.0.1", 0), *d = open_at(t, 4, "10.0.0.2", 0);
        ApiConn *e = open_at(t, 5, "10.0.0.1", 0);
        ApiConnsStats st;
        struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
        ApiConn *g = NULL;

        (void) state;
        assert_int_equal(api_conns_request(t, a), 0);
        assert_int_equal(api_conns_request(t, b), 0);
        assert_int_equal(api_conns_request(t, c), -EBUSY);
        assert_int_equal(api_conns_request(t, d), 0);
        assert_int_equal(api_conns_open(t, 6, (struct sockaddr *) &v6, 0, &g), 0);
        assert_int_equal(api_conns_request(t, g), 0);
        api_conns_response_done(t, a, 1);
        assert_int_equal(api_conns_request(t, c), 0);
        assert_int_equal(api_conns_request(t, e), -EBUSY);
        api_conns_close(t, b);
        assert_int_equal(api_conns_request(t, e), 0);
        api_conns_stats(t, &st);
        assert_int_equal(st.busy_total, 2);
        assert_int_equal(st.in_flight, 4);
        assert_int_equal(st.waiting, 1);
        api_conns_free(t);
}

static void test_bad_config(void **state) {
        ApiConns *t = NULL;
        CubError err = {};

        (void) state;
        assert_int_equal(api_conns_new(&(ApiConnsConfig){ .limit = 0, .per_peer = 1, .header_usec = 1 }, &t, &err),
                         -EINVAL);
        assert_int_equal(api_conns_new(&(ApiConnsConfig){ .limit = 1, .per_peer = 1, .header_usec = 0 }, &t, &err),
                         -EINVAL);
        assert_null(t);
}

/* The reaper thread drops a connection at its deadline, on the real clock,
 * and sleeps again until the next one. */
static void test_reaper(void **state) {
        Fake f;
        ApiConns *t = table(&f, 8, 8, true, 200 * CUB_USEC_PER_MSEC);
        uint64_t t0 = cub_now_usec(CLOCK_MONOTONIC), dt;
        struct timespec ts;
        ApiConn *a, *b;

        (void) state;
        a = open_at(t, 1, "127.0.0.1", t0);
        b = open_at(t, 2, "127.0.0.1", t0 + 100 * CUB_USEC_PER_MSEC);
        for (int i = 0; i < 2; i++) {
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 5;
                assert_int_equal(sem_timedwait(&f.sem, &ts), 0);
                dt = cub_now_usec(CLOCK_MONOTONIC) - t0;
                assert_true(f.dropped[1 + i]);
                assert_true(dt >= (200 + 100 * (uint64_t) i) * CUB_USEC_PER_MSEC);
        }
        api_conns_close(t, a);
        api_conns_close(t, b);
        api_conns_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_deadline), cmocka_unit_test(test_full),       cmocka_unit_test(test_capacity),
                cmocka_unit_test(test_per_peer), cmocka_unit_test(test_bad_config), cmocka_unit_test(test_reaper),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
