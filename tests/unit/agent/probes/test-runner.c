/* SPDX-License-Identifier: Apache-2.0 */
/* agent/probes/runner.c on a real sd-event loop against local listeners:
 * httpGet 200 and 500 (libmicrohttpd), a refused tcpSocket, an HTTP server
 * that never answers (timeoutSeconds), a cancelled probe; the result always
 * arrives from the loop, never inside probe_run(). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/probes/probes.h"
#include "agent/util/time.h"

typedef struct Got {
        int n;
        ProbeResult r;
        char out[256];
} Got;

static void on_done(void *userdata, ProbeResult r, const char *output) {
        Got *g = userdata;

        g->n++;
        g->r = r;
        (void) snprintf(g->out, sizeof(g->out), "%s", output);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *size, void **state) {
        struct MHD_Response *r = MHD_create_response_from_buffer(2, (void *) "ok", MHD_RESPMEM_PERSISTENT);
        const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
        const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Probe");
        enum MHD_Result ret;

        (void) cls;
        (void) method;
        (void) version;
        (void) data;
        (void) size;
        (void) state;
        ret = MHD_queue_response(c,
                                 strcmp(url, "/ok") == 0 && ua && strcmp(ua, "kube-probe/1.31") == 0 && x &&
                                                 strcmp(x, "yes") == 0
                                         ? MHD_HTTP_OK
                                         : MHD_HTTP_INTERNAL_SERVER_ERROR,
                                 r);
        MHD_destroy_response(r);
        return ret;
}

/* Runs the loop until the probe answered (at most 5 s). */
static void wait_result(sd_event *e, Got *g) {
        for (int i = 0; i < 500 && g->n == 0; i++)
                assert_true(sd_event_run(e, 10000) >= 0);
}

/* A port with a listener that never accepts, and one with none. */
static int listener(int backlog, int *ret_port) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &a, sizeof(a)), 0);
        if (backlog >= 0)
                assert_int_equal(listen(fd, backlog), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &a, &len), 0);
        *ret_port = ntohs(a.sin_port);
        return fd;
}

static void grpc_case(sd_event *e, ProbeRunner *r, int port, const char *service, ProbeResult want,
                      const char *want_out) {
        ProbeTarget t = {
                .kind = POD_HANDLER_GRPC, .host = "127.0.0.1", .port = port, .timeout_s = 2, .grpc_service = service
        };
        CubError err = {};
        Got g = {};

        assert_int_equal(probe_run(r, &t, on_done, &g, NULL, &err), 0);
        wait_result(e, &g);
        assert_int_equal(g.r, want);
        assert_true(strncmp(g.out, want_out, strlen(want_out)) == 0);
}

static void grpc_cases(sd_event *e, ProbeRunner *r) {
        int fds[2], port = 0, st;
        pid_t pid;
        FILE *f;

        if (access("/usr/bin/python3", X_OK) != 0) {
                print_message("# grpc probes: skipped, no python3\n");
                return;
        }
        assert_int_equal(pipe(fds), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dup2(fds[1], 1);
                close(fds[0]);
                close(fds[1]);
                execl("/usr/bin/python3", "python3", "tests/unit/agent/probes/health-server.py", (char *) NULL);
                _exit(127);
        }
        close(fds[1]);
        f = fdopen(fds[0], "r");
        assert_non_null(f);
        if (fscanf(f, "%d", &port) != 1) {
                /* no python3-grpcio: the server could not start */
                print_message("# grpc probes: skipped, no python3-grpcio\n");
                (void) waitpid(pid, &st, 0);
                fclose(f);
                return;
        }
        grpc_case(e, r, port, NULL, PROBE_RESULT_SUCCESS, "ok");
        grpc_case(e, r, port, "down", PROBE_RESULT_FAILURE, "service unhealthy (responded with \"NOT_SERVING\")");
        grpc_case(e, r, port, "other", PROBE_RESULT_FAILURE, "service unhealthy (responded with \"SERVICE_UNKNOWN\")");
        grpc_case(e, r, port, "unimpl", PROBE_RESULT_FAILURE,
                  "this server does not implement the grpc health protocol (grpc.health.v1.Health)");
        kill(pid, SIGTERM);
        (void) waitpid(pid, &st, 0);
        fclose(f);
}

static void test_runner(void **state) {
        struct MHD_Daemon *d;
        sd_event *e = NULL;
        ProbeRunner *r = NULL;
        ProbeCall *call = NULL;
        CubError err = {};
        PodHTTPHeader h = { .name = (char *) "X-Probe", .value = (char *) "yes" };
        Got g = {};
        int port, silent_port, closed_port, silent, closed;

        (void) state;
        d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer, NULL, MHD_OPTION_END);
        assert_non_null(d);
        port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
        silent = listener(16, &silent_port);
        closed = listener(-1, &closed_port); /* bound, not listening: refused */
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(probe_runner_new(e, NULL, 1, &r, &err), 0);

        /* httpGet 200 with the probe's header and kubelet's User-Agent */
        {
                ProbeTarget t = { .kind = POD_HANDLER_HTTP_GET,
                                  .host = "127.0.0.1",
                                  .port = port,
                                  .scheme = "HTTP",
                                  .path = "/ok",
                                  .headers = &h,
                                  .n_headers = 1,
                                  .timeout_s = 1 };

                assert_int_equal(probe_run(r, &t, on_done, &g, NULL, &err), 0);
                assert_int_equal(g.n, 0);
                wait_result(e, &g);
                assert_int_equal(g.r, PROBE_RESULT_SUCCESS);
                /* 500 */
                g = (Got){};
                t.path = "bad";
                assert_int_equal(probe_run(r, &t, on_done, &g, NULL, &err), 0);
                wait_result(e, &g);
                assert_int_equal(g.r, PROBE_RESULT_FAILURE);
                assert_string_equal(g.out, "HTTP probe failed with statuscode: 500");
                /* no answer within timeoutSeconds */
                g = (Got){};
                t.port = silent_port;
                assert_int_equal(probe_run(r, &t, on_done, &g, NULL, &err), 0);
                wait_result(e, &g);
                assert_int_equal(g.r, PROBE_RESULT_FAILURE);
                assert_non_null(strstr(g.out, "imeout"));
        }
        /* tcpSocket: open, refused */
        {
                ProbeTarget t = { .kind = POD_HANDLER_TCP_SOCKET, .host = "127.0.0.1", .port = port, .timeout_s = 1 };
                char want[128];

                g = (Got){};
                assert_int_equal(probe_run(r, &t, on_done, &g, NULL, &err), 0);
                assert_int_equal(g.n, 0);
                wait_result(e, &g);
                assert_int_equal(g.r, PROBE_RESULT_SUCCESS);
                g = (Got){};
                t.port = closed_port;
                assert_int_equal(probe_run(r, &t, on_done, &g, NULL, &err), 0);
                assert_int_equal(g.n, 0);
                wait_result(e, &g);
                assert_int_equal(g.r, PROBE_RESULT_FAILURE);
                (void) snprintf(want, sizeof(want), "dial tcp 127.0.0.1:%d: connect: Connection refused", closed_port);
                assert_string_equal(g.out, want);
                /* a cancelled probe never answers */
                g = (Got){};
                t.port = port;
                assert_int_equal(probe_run(r, &t, on_done, &g, &call, &err), 0);
                probe_cancel(call);
                for (int i = 0; i < 20; i++)
                        (void) sd_event_run(e, 10000);
                assert_int_equal(g.n, 0);
        }
        /* grpc against a python3-grpcio health server (skipped without it) */
        grpc_cases(e, r);
        {
                /* nothing listens: a failure */
                ProbeTarget t = { .kind = POD_HANDLER_GRPC, .host = "127.0.0.1", .port = closed_port, .timeout_s = 1 };
                char want[160];

                g = (Got){};
                assert_int_equal(probe_run(r, &t, on_done, &g, NULL, &err), 0);
                wait_result(e, &g);
                assert_int_equal(g.r, PROBE_RESULT_FAILURE);
                (void) snprintf(want, sizeof(want),
                                "timeout: failed to connect service \"ipv4:127.0.0.1:%d\" within 1s", closed_port);
                assert_string_equal(g.out, want);
        }
        probe_runner_free(r);
        sd_event_unref(e);
        close(silent);
        close(closed);
        MHD_stop_daemon(d);
}

/* hooks on the calling thread: httpGet fails only when the request does
 * (any status is fine, as kubelet's handler runner), sleep sleeps */
static void test_hooks(void **state) {
        struct MHD_Daemon *d;
        CubError err = {};
        int closed_port, closed;
        uint64_t t0;

        (void) state;
        d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer, NULL, MHD_OPTION_END);
        assert_non_null(d);
        closed = listener(-1, &closed_port);
        {
                ProbeTarget t = { .kind = POD_HANDLER_HTTP_GET,
                                  .host = "127.0.0.1",
                                  .port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port,
                                  .scheme = "HTTP",
                                  .path = "/quit",
                                  .timeout_s = 2 };

                assert_int_equal(probe_run_hook(NULL, &t, &err), 0); /* a 500 is no failure for a hook */
                t.port = closed_port;
                assert_int_equal(probe_run_hook(NULL, &t, &err), -EIO);
                assert_non_null(strstr(err.msg, "Get \"http://127.0.0.1:"));
        }
        {
                ProbeTarget t = { .kind = POD_HANDLER_SLEEP, .sleep_s = 1 };

                t0 = cub_now_usec(CLOCK_MONOTONIC);
                assert_int_equal(probe_run_hook(NULL, &t, &err), 0);
                assert_true(cub_now_usec(CLOCK_MONOTONIC) - t0 >= 1000000);
        }
        {
                ProbeTarget t = { .kind = POD_HANDLER_TCP_SOCKET };

                assert_int_equal(probe_run_hook(NULL, &t, &err), -EOPNOTSUPP);
        }
        close(closed);
        MHD_stop_daemon(d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_runner),
                cmocka_unit_test(test_hooks),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
