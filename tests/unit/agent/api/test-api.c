/* SPDX-License-Identifier: Apache-2.0 */
/* agent/api/api.c: the status socket writes its replies without blocking
 * the loop: a client that reads nothing does not hold up the next one. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/api/api.h"

#define DOC_SIZE (4 * 1024 * 1024)

static char *render(void *userdata) {
        char *doc = malloc(DOC_SIZE + 1);

        (void) userdata;
        if (!doc)
                return NULL;
        memset(doc, 'x', DOC_SIZE);
        doc[0] = '{';
        doc[DOC_SIZE - 1] = '}';
        doc[DOC_SIZE] = '\0';
        return doc;
}

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

typedef struct Fetch {
        const char *path;
        char *doc;
        int r;
        volatile int done;
} Fetch;

static void *fetch_thread(void *arg) {
        Fetch *f = arg;
        CubError err = {};

        f->r = api_fetch(f->path, &f->doc, &err);
        f->done = 1;
        return NULL;
}

static int connect_to(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        memcpy(sa.sun_path, path, strlen(path) + 1);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        return fd;
}

static void test_slow_client_does_not_block(void **state) {
        char dir[] = "/tmp/cubelet-api-XXXXXX", path[128];
        sd_event *e = NULL;
        ApiServer *s = NULL;
        CubError err = {};
        Fetch f = {};
        pthread_t t;
        size_t got = 0;
        char buf[65536];
        int slow;
        uint64_t t0;

        (void) state;
        assert_non_null(mkdtemp(dir));
        (void) snprintf(path, sizeof(path), "%s/status.sock", dir);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(api_server_new(e, path, render, NULL, &s, &err), 0);

        /* a client that connects and reads nothing yet (the old server
         * blocked the loop up to 2 s on it) */
        t0 = now_ms();
        slow = connect_to(path);
        for (int i = 0; i < 10; i++)
                assert_true(sd_event_run(e, 10000) >= 0);

        /* the next client gets its whole document meanwhile */
        f.path = path;
        assert_int_equal(pthread_create(&t, NULL, fetch_thread, &f), 0);
        for (int i = 0; i < 2000 && !f.done; i++)
                assert_true(sd_event_run(e, 10000) >= 0);
        assert_true(f.done);
        assert_true(now_ms() - t0 < 1500);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(f.r, 0);
        assert_int_equal(strlen(f.doc), DOC_SIZE);
        free(f.doc);

        /* and the slow one still gets all of its own */
        for (int i = 0; i < 20000 && got < DOC_SIZE; i++) {
                ssize_t n = recv(slow, buf, sizeof(buf), MSG_DONTWAIT);

                if (n > 0)
                        got += (size_t) n;
                else if (n == 0)
                        break;
                assert_true(sd_event_run(e, 1000) >= 0);
        }
        assert_int_equal(got, DOC_SIZE);
        close(slow);

        api_server_free(s);
        sd_event_unref(e);
        assert_int_equal(access(path, F_OK), -1);
        (void) rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_slow_client_does_not_block),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
