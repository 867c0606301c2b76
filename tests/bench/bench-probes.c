/* SPDX-License-Identifier: Apache-2.0 */
/* Probes of 100 pods x 3 probes at periodSeconds 1 on one sd-event loop, on
 * this host (issue 11 point 6): per pod a tcpSocket liveness, an httpGet
 * readiness and a tcpSocket startup probe, against a local libmicrohttpd
 * server (its own thread). Printed beside a baseline of the same 300 timers
 * without probes: the loop thread's CPU per second, the timers' lateness
 * (jitter: when a tick ran against when it was due) p50/p99 and the
 * probes' round trip p99. Exec probes need a runtime (ExecSync on the
 * probe threads) and are not in this figure. Printed, not asserted. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "agent/probes/probes.h"
#include "agent/util/time.h"

#define N_PODS 100
#define N_PROBES (3 * N_PODS)
#define SECONDS 8
#define PERIOD_USEC CUB_USEC_PER_SEC

typedef struct Bench Bench;

typedef struct Slot {
        Bench *b;
        int i;
        sd_event_source *timer;
        uint64_t due, sent;
        bool busy;
} Slot;

struct Bench {
        sd_event *e;
        ProbeRunner *runner;
        bool probe;
        int port;
        Slot slots[N_PROBES];
        uint64_t *late, *rtt;
        size_t n_late, n_rtt, cap;
        size_t ok, failed;
        uint64_t end;
};

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, double p) {
        if (n == 0)
                return 0;
        qsort(v, n, sizeof(*v), cmp_u64);
        return v[(size_t) (p * (double) (n - 1))];
}

static void on_result(void *userdata, ProbeResult r, const char *output) {
        Slot *s = userdata;
        Bench *b = s->b;

        (void) output;
        s->busy = false;
        if (r == PROBE_RESULT_SUCCESS)
                b->ok++;
        else
                b->failed++;
        if (b->n_rtt < b->cap)
                b->rtt[b->n_rtt++] = cub_now_usec(CLOCK_MONOTONIC) - s->sent;
}

static int on_tick(sd_event_source *src, uint64_t usec, void *userdata) {
        Slot *s = userdata;
        Bench *b = s->b;
        uint64_t now = cub_now_usec(CLOCK_MONOTONIC);
        static const PodHTTPHeader none[1];
        ProbeTarget t = { .host = "127.0.0.1", .port = b->port, .timeout_s = 1 };
        CubError err = {};

        (void) usec;
        if (b->n_late < b->cap)
                b->late[b->n_late++] = now > s->due ? now - s->due : 0;
        s->due += PERIOD_USEC;
        (void) sd_event_source_set_time(src, s->due);
        if (now >= b->end) {
                (void) sd_event_source_set_enabled(src, SD_EVENT_OFF);
                return 0;
        }
        if (!b->probe || s->busy)
                return 0;
        if (s->i % 3 == 1) {
                t.kind = POD_HANDLER_HTTP_GET;
                t.scheme = "HTTP";
                t.path = "/healthz";
                t.headers = none;
                t.n_headers = 0;
        } else
                t.kind = POD_HANDLER_TCP_SOCKET;
        s->sent = now;
        s->busy = true;
        if (probe_run(b->runner, &t, on_result, s, NULL, &err) < 0) {
                s->busy = false;
                b->failed++;
        }
        return 0;
}

static int on_end(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        return sd_event_exit(userdata, 0);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *size, void **state) {
        struct MHD_Response *r = MHD_create_response_from_buffer(2, (void *) "ok", MHD_RESPMEM_PERSISTENT);
        enum MHD_Result ret;

        (void) cls;
        (void) url;
        (void) method;
        (void) version;
        (void) data;
        (void) size;
        (void) state;
        ret = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ret;
}

static void run(bool probe, int port) {
        Bench b = { .probe = probe, .port = port, .cap = (size_t) N_PROBES * (SECONDS + 2) };
        struct timespec c0, c1;
        uint64_t start, rnd;
        sd_event_source *end;
        CubError err = {};
        double cpu_ms;

        b.late = calloc(b.cap, sizeof(uint64_t));
        b.rtt = calloc(b.cap, sizeof(uint64_t));
        if (sd_event_new(&b.e) < 0 || !b.late || !b.rtt || probe_runner_new(b.e, NULL, 1, &b.runner, &err) < 0) {
                fprintf(stderr, "setup: %s\n", err.msg);
                exit(1);
        }
        start = cub_now_usec(CLOCK_MONOTONIC);
        b.end = start + SECONDS * CUB_USEC_PER_SEC;
        for (int i = 0; i < N_PROBES; i++) {
                Slot *s = &b.slots[i];

                (void) !getrandom(&rnd, sizeof(rnd), 0);
                *s = (Slot){ .b = &b, .i = i };
                /* kubelet's first-run jitter: a random part of the period */
                s->due = start + probe_first_delay_usec(PERIOD_USEC, 0, rnd);
                (void) sd_event_add_time(b.e, &s->timer, CLOCK_MONOTONIC, s->due, CUB_USEC_PER_MSEC, on_tick, s);
                (void) sd_event_source_set_enabled(s->timer, SD_EVENT_ON);
        }
        (void) sd_event_add_time(b.e, &end, CLOCK_MONOTONIC, b.end + 1500 * CUB_USEC_PER_MSEC, 0, on_end, b.e);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        (void) sd_event_loop(b.e);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        cpu_ms = ((double) (c1.tv_sec - c0.tv_sec) * 1e3 + (double) (c1.tv_nsec - c0.tv_nsec) / 1e6) / (SECONDS + 1.5);
        printf("%-28s loop CPU %6.2f ms/s (%4.2f%% of a core), timer lateness p50 %5.2f ms p99 %5.2f ms",
               probe ? "300 probes (200 tcp, 100 http)" : "baseline: 300 timers, no probe", cpu_ms, cpu_ms / 10.0,
               (double) pct(b.late, b.n_late, 0.5) / 1e3, (double) pct(b.late, b.n_late, 0.99) / 1e3);
        if (probe)
                printf(", probe round trip p99 %5.2f ms, %zu ok, %zu failed", (double) pct(b.rtt, b.n_rtt, 0.99) / 1e3,
                       b.ok, b.failed);
        printf("\n");
        for (int i = 0; i < N_PROBES; i++)
                sd_event_source_disable_unref(b.slots[i].timer);
        sd_event_source_disable_unref(end);
        probe_runner_free(b.runner);
        sd_event_unref(b.e);
        free(b.late);
        free(b.rtt);
}

int main(void) {
        struct MHD_Daemon *d;
        const union MHD_DaemonInfo *info;
        int port;

        d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, answer, NULL,
                             MHD_OPTION_CONNECTION_LIMIT, 2000, MHD_OPTION_SOCK_ADDR, NULL, MHD_OPTION_END);
        if (!d) {
                fprintf(stderr, "libmicrohttpd: cannot start\n");
                return 1;
        }
        info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        port = info ? info->port : 0;
        printf("probes of %d pods x 3 at periodSeconds 1, %d s each, one sd-event loop (127.0.0.1:%d)\n", N_PODS,
               SECONDS, port);
        run(false, port);
        run(true, port);
        MHD_stop_daemon(d);
        return 0;
}
