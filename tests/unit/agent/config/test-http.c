/* SPDX-License-Identifier: Apache-2.0 */
/* agent/config: the manifest URL against a real nginx (Debian's nginx-light,
 * started here on 127.0.0.1 with the config http-nginx.sh writes): one GET
 * at a time through curl_easy_perform, then the sd-event poller. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/config/podsrc.h"
#include "agent/util/time.h"

#include "http-fixture.h"

/* sorted compact JSON, so the UID can be computed here as kubelet's rule says */
static const char web_json[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\"},"
                               "\"spec\":{\"containers\":[{\"image\":\"busybox:1\",\"name\":\"app\"}]}}";
static const char web2_yaml[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n"
                                "  - name: app\n    image: busybox:2\n";
static const char broken_yaml[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n"
                                  "  - name: app\n    resources: {limits: {cpu: 1.5.5}}\n    image: x\n";
static const char list_yaml[] = "apiVersion: v1\nkind: PodList\nitems:\n"
                                "- metadata: {name: a}\n  spec: {containers: [{name: c, image: busybox:1}]}\n"
                                "- metadata: {name: b, namespace: jobs}\n"
                                "  spec: {containers: [{name: c, image: busybox:1}]}\n"
                                "- metadata: {name: a}\n  spec: {containers: [{name: d, image: busybox:1}]}\n";
static const char bad_list_yaml[] = "apiVersion: v1\nkind: PodList\nitems:\n"
                                    "- metadata: {name: a}\n  spec: {containers: [{name: c, image: busybox:1}]}\n"
                                    "- metadata: {name: b}\n  spec:\n    containers:\n    - name: c\n";

static void test_pod_then_304(void **state) {
        PodsrcHttp *h;
        PodsrcSet set = {};
        CubError err = {};
        char uid[POD_UID_DERIVED_MAX];
        const PodsrcHttpStats *st;

        (void) state;
        puts_("web.json", web_json);
        h = make("/web.json", NULL);
        assert_int_equal(fetch(h, &set, &err), 1);
        assert_int_equal(set.n, 1);
        assert_string_equal(set.items[0].pod->name, "web-" NODE);
        assert_string_equal(set.items[0].path, podsrc_http_stats(h)->url);
        /* kubelet's rule: md5(content || "url:<url>"), no host part */
        assert_int_equal(pod_static_uid(web_json, NODE, POD_SOURCE_HTTP, podsrc_http_stats(h)->url, uid, &err), 0);
        assert_string_equal(set.items[0].pod->uid, uid);
        for (size_t i = 0; i < set.items[0].pod->annotations.n; i++)
                if (strcmp(set.items[0].pod->annotations.keys[i], "kubernetes.io/config.source") == 0)
                        assert_string_equal(set.items[0].pod->annotations.values[i], "http");
        assert_int_equal(set.items[0].pod->n_tolerations, 0); /* no NoExecute toleration for http */
        podsrc_set_done(&set);

        /* unchanged: If-None-Match → 304, nothing decoded */
        assert_int_equal(fetch(h, &set, &err), 0);
        st = podsrc_http_stats(h);
        assert_int_equal(st->last_status, 304);
        assert_int_equal(st->last_result, PODSRC_HTTP_NOT_MODIFIED);
        assert_int_equal(st->fetches[PODSRC_HTTP_OK], 1);
        assert_int_equal(st->fetches[PODSRC_HTTP_NOT_MODIFIED], 1);
        assert_int_equal(st->n_pods, 1);
        assert_int_equal(set.n, 0);

        /* an edit: a new UID */
        puts_("web.json", web2_yaml);
        assert_int_equal(fetch(h, &set, &err), 1);
        assert_int_equal(set.n, 1);
        assert_string_not_equal(set.items[0].pod->uid, uid);
        assert_string_equal(set.items[0].pod->containers[0].image, "busybox:2");
        podsrc_set_done(&set);
        podsrc_http_free(h);
}

static void test_errors_keep_nothing_new(void **state) {
        PodsrcHttp *h;
        PodsrcSet set = {};
        CubError err = {};
        char want[512];

        (void) state;
        puts_("broken.yaml", broken_yaml);
        h = make("/broken.yaml", NULL);
        assert_true(fetch(h, &set, &err) < 0);
        snprintf(want, sizeof(want), "%s:8: spec.containers[0].resources.limits[cpu]: invalid quantity",
                 podsrc_http_stats(h)->url);
        assert_non_null(strstr(err.msg, want));
        assert_string_equal(podsrc_http_stats(h)->last_error, err.msg);
        assert_int_equal(podsrc_http_stats(h)->fetches[PODSRC_HTTP_ERROR], 1);
        assert_false(podsrc_http_stats(h)->have_set);
        assert_int_equal(set.n, 0);
        /* a broken body is never remembered: the next GET is not conditional */
        assert_true(fetch(h, &set, &err) < 0);
        assert_int_equal(podsrc_http_stats(h)->last_status, 200);
        podsrc_http_free(h);

        h = make("/nothing.yaml", NULL);
        assert_int_equal(fetch(h, &set, &err), -EIO);
        snprintf(want, sizeof(want), "%s: 404 Not Found", podsrc_http_stats(h)->url);
        assert_string_equal(err.msg, want);
        podsrc_http_free(h);

        put("empty.yaml", "", 0);
        h = make("/empty.yaml", NULL);
        assert_int_equal(fetch(h, &set, &err), -ENODATA);
        assert_non_null(strstr(err.msg, "zero-length body"));
        podsrc_http_free(h);

        puts_("bad-list.yaml", bad_list_yaml);
        h = make("/bad-list.yaml", NULL);
        assert_true(fetch(h, &set, &err) < 0);
        assert_non_null(strstr(err.msg, ": items[1].spec.containers[0].image: Required value"));
        podsrc_http_free(h);
}

static void test_list(void **state) {
        PodsrcHttp *h;
        PodsrcSet set = {};
        CubError err = {};

        (void) state;
        puts_("list.yaml", list_yaml);
        h = make("/list.yaml", NULL);
        assert_int_equal(fetch(h, &set, &err), 1);
        assert_int_equal(set.n, 3);
        assert_string_equal(set.items[0].pod->name, "a-" NODE);
        assert_string_equal(set.items[1].pod->name, "b-" NODE);
        assert_string_equal(set.items[1].pod->namespace_, "jobs");
        assert_null(set.items[2].pod);
        assert_non_null(
                strstr(set.items[2].error, ": items[2]: pod default/a-" NODE " is already defined by items[0]"));
        assert_int_equal(podsrc_http_stats(h)->n_pods, 2);
        podsrc_set_done(&set);
        /* an empty list: a new, empty set */
        puts_("list.yaml", "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[]}");
        assert_int_equal(fetch(h, &set, &err), 1);
        assert_int_equal(set.n, 0);
        assert_int_equal(podsrc_http_stats(h)->n_pods, 0);
        podsrc_set_done(&set);
        podsrc_http_free(h);
}

static void test_limits(void **state) {
        PodsrcHttp *h;
        PodsrcSet set = {};
        CubError err = {};
        size_t big = PODSRC_HTTP_BODY_MAX + 1;
        char *buf = malloc(big);

        (void) state;
        assert_non_null(buf);
        memset(buf, ' ', big);
        put("big.yaml", buf, big);
        free(buf);
        h = make("/big.yaml", NULL);
        assert_int_equal(fetch(h, &set, &err), -EFBIG);
        assert_non_null(strstr(err.msg, "the body is larger than 10485760 bytes (10 MiB), refused"));
        podsrc_http_free(h);

        puts_("web.json", web_json);
        h = make("/r1", NULL); /* 5 redirects */
        assert_int_equal(fetch(h, &set, &err), 1);
        assert_int_equal(set.n, 1);
        podsrc_set_done(&set);
        podsrc_http_free(h);
        h = make("/r0", NULL); /* 6 */
        assert_true(fetch(h, &set, &err) < 0);
        assert_non_null(strstr(err.msg, "Maximum (5) redirects followed"));
        podsrc_http_free(h);
}

static void test_headers_and_down(void **state) {
        const char *hdr[] = { "X-Token: s3cret" };
        PodsrcHttpOptions o = { .headers = hdr, .n_headers = 1 };
        PodsrcHttp *h;
        PodsrcSet set = {};
        CubError err = {};
        char url[128];
        int lfd, p;

        (void) state;
        puts_("secret/web.json", web_json);
        h = make("/secret/web.json", &o);
        assert_int_equal(fetch(h, &set, &err), 1);
        podsrc_set_done(&set);
        podsrc_http_free(h);
        h = make("/secret/web.json", NULL);
        assert_int_equal(fetch(h, &set, &err), -EIO);
        assert_non_null(strstr(err.msg, ": 403 Forbidden"));
        podsrc_http_free(h);

        /* nobody listens */
        p = free_port();
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/web.json", p);
        o = (PodsrcHttpOptions){ .url = url };
        h = make(NULL, &o);
        assert_int_equal(fetch(h, &set, &err), -EIO);
        assert_non_null(strstr(err.msg, "Failed to connect to 127.0.0.1 port"));
        assert_null(strstr(err.msg, " ms")); /* the elapsed time is left out: one message each time */
        podsrc_http_free(h);

        /* a server that accepts and never answers: the timeout */
        {
                struct sockaddr_in a = { .sin_family = AF_INET,
                                         .sin_port = htons((uint16_t) p),
                                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

                lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                assert_int_equal(bind(lfd, (struct sockaddr *) &a, sizeof(a)), 0);
                assert_int_equal(listen(lfd, 4), 0);
        }
        o.timeout_usec = 300 * CUB_USEC_PER_MSEC;
        h = make(NULL, &o);
        assert_int_equal(fetch(h, &set, &err), -ETIMEDOUT);
        assert_non_null(strstr(err.msg, "timed out with 0 bytes received"));
        assert_true(podsrc_http_stats(h)->last_duration_usec < 2 * CUB_USEC_PER_SEC);
        podsrc_http_free(h);
        close(lfd);
}

static void test_tls(void **state) {
        char url[128], ca[300], cert[300], key[300], wcert[300], wkey[300];
        PodsrcHttpOptions o = { .url = url, .ca_file = ca, .client_cert = cert, .client_key = key };
        PodsrcHttp *h;
        PodsrcSet set = {};
        CubError err = {};

        (void) state;
        snprintf(url, sizeof(url), "https://127.0.0.1:%d/web.json", tls_port);
        snprintf(ca, sizeof(ca), "%s/pki/ca.crt", dir);
        snprintf(cert, sizeof(cert), "%s/pki/client.crt", dir);
        snprintf(key, sizeof(key), "%s/pki/client.key", dir);
        snprintf(wcert, sizeof(wcert), "%s/pki/wrong.crt", dir);
        snprintf(wkey, sizeof(wkey), "%s/pki/wrong.key", dir);
        puts_("web.json", web_json);
        h = make(NULL, &o);
        assert_int_equal(fetch(h, &set, &err), 1);
        assert_int_equal(set.n, 1);
        podsrc_set_done(&set);
        assert_int_equal(fetch(h, &set, &err), 0); /* 304 over TLS too */
        podsrc_http_free(h);

        /* a client certificate of another CA: nginx answers 400 */
        o.client_cert = wcert;
        o.client_key = wkey;
        h = make(NULL, &o);
        assert_int_equal(fetch(h, &set, &err), -EIO);
        assert_non_null(strstr(err.msg, ": 400 Bad Request"));
        assert_non_null(strstr(err.msg, url));
        podsrc_http_free(h);

        /* none at all */
        o.client_cert = o.client_key = NULL;
        h = make(NULL, &o);
        assert_int_equal(fetch(h, &set, &err), -EIO);
        assert_non_null(strstr(err.msg, ": 400 Bad Request"));
        podsrc_http_free(h);

        /* the server's certificate checked against the wrong CA */
        snprintf(ca, sizeof(ca), "%s/pki/other-ca.crt", dir);
        o.client_cert = cert;
        o.client_key = key;
        h = make(NULL, &o);
        assert_int_equal(fetch(h, &set, &err), -EIO);
        assert_non_null(strstr(err.msg, "SSL certificate problem"));
        podsrc_http_free(h);
}

/* ---- the sd-event poller ------------------------------------------------- */

typedef struct Seen {
        int sets, unchanged, errors;
        size_t last_n;
        char last_uid[64];
        char last_error[CUB_ERR_MSG_MAX];
        uint64_t first_set_usec;
} Seen;

static void on_result(PodsrcHttp *h, int r, PodsrcSet *set, const CubError *err, void *userdata) {
        Seen *s = userdata;

        (void) h;
        if (r == 1) {
                s->sets++;
                s->last_n = set->n;
                snprintf(s->last_uid, sizeof(s->last_uid), "%s",
                         set->n && set->items[0].pod ? set->items[0].pod->uid : "");
                if (!s->first_set_usec)
                        s->first_set_usec = cub_now_usec(CLOCK_MONOTONIC);
        } else if (r == 0)
                s->unchanged++;
        else {
                s->errors++;
                snprintf(s->last_error, sizeof(s->last_error), "%s", err->msg);
        }
}

/* Runs the loop for usec. */
static void run_for(sd_event *e, uint64_t usec) {
        uint64_t end = cub_now_usec(CLOCK_MONOTONIC) + usec;

        for (uint64_t now; (now = cub_now_usec(CLOCK_MONOTONIC)) < end;)
                assert_true(sd_event_run(e, end - now) >= 0);
}

static void test_poller(void **state) {
        const uint64_t period = 200 * CUB_USEC_PER_MSEC;
        sd_event *e = NULL;
        PodsrcHttp *h;
        Seen s = {};
        CubError err = {};
        uint64_t t0;
        char uid[64];

        (void) state;
        puts_("poll.json", web_json);
        h = make("/poll.json", NULL);
        assert_int_equal(sd_event_new(&e), 0);
        t0 = cub_now_usec(CLOCK_MONOTONIC);
        assert_int_equal(podsrc_http_attach(h, e, period, on_result, &s, &err), 0);
        /* the pod within one period, then a 304 each period */
        run_for(e, 5 * period + period / 2);
        assert_int_equal(s.sets, 1);
        assert_true(s.first_set_usec - t0 < period);
        assert_true(s.unchanged >= 4);
        assert_int_equal(podsrc_http_stats(h)->fetches[PODSRC_HTTP_NOT_MODIFIED], (uint64_t) s.unchanged);
        snprintf(uid, sizeof(uid), "%s", s.last_uid);

        /* the server gone for three periods: errors, no new set */
        nginx_stop();
        run_for(e, 3 * period + period / 2);
        assert_int_equal(s.sets, 1);
        assert_true(s.errors >= 3);
        assert_non_null(strstr(s.last_error, "Failed to connect"));
        assert_int_equal(podsrc_http_stats(h)->last_result, PODSRC_HTTP_ERROR);
        assert_int_equal(podsrc_http_stats(h)->n_pods, 1);
        nginx_start();
        run_for(e, 2 * period);
        assert_int_equal(s.sets, 1); /* back: a 304, the same pod */
        assert_int_equal(podsrc_http_stats(h)->last_result, PODSRC_HTTP_NOT_MODIFIED);

        /* an edit reaches the set within one period */
        puts_("poll.json", web2_yaml);
        run_for(e, period + period / 2);
        assert_int_equal(s.sets, 2);
        assert_string_not_equal(s.last_uid, uid);
        /* an empty list removes the pods */
        puts_("poll.json", "apiVersion: v1\nkind: PodList\nitems: []\n");
        podsrc_http_poll_now(h);
        run_for(e, period / 2);
        assert_int_equal(s.sets, 3);
        assert_int_equal(s.last_n, 0);
        podsrc_http_free(h);
        sd_event_unref(e);
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* Figures, printed as TAP comments (ASan build: the release build is faster):
 * a 304 (conditional GET, nothing decoded) and a 200 with a PodList of 110
 * pods (decoded), each on a new connection to nginx on loopback. */
static void test_figures(void **state) {
        enum { N = 100 };
        static uint64_t t304[N], t200[N];
        char *list = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&list, &len);
        PodsrcHttp *h;
        PodsrcSet set = {};
        CubError err = {};

        (void) state;
        assert_non_null(f);
        fputs("apiVersion: v1\nkind: PodList\nitems:\n", f);
        for (int i = 0; i < 110; i++)
                fprintf(f,
                        "- metadata: {name: p%d}\n  spec:\n    containers:\n    - name: app\n"
                        "      image: busybox:1\n      resources: {requests: {cpu: 10m, memory: 16Mi}}\n",
                        i);
        fclose(f);
        put("figures.yaml", list, len);
        h = make("/figures.yaml", NULL);
        for (int i = 0; i < N; i++) {
                uint64_t t = cub_now_usec(CLOCK_MONOTONIC);

                if (i > 0) {
                        /* new bytes each time: the whole body again */
                        char *b = malloc(len + 32);
                        int n;

                        assert_non_null(b);
                        n = snprintf(b, len + 32, "%s# %d\n", list, i);
                        put("figures.yaml", b, (size_t) n);
                        free(b);
                        t = cub_now_usec(CLOCK_MONOTONIC);
                }
                assert_int_equal(fetch(h, &set, &err), 1);
                t200[i] = cub_now_usec(CLOCK_MONOTONIC) - t;
                assert_int_equal(set.n, 110);
                podsrc_set_done(&set);
                t = cub_now_usec(CLOCK_MONOTONIC);
                assert_int_equal(fetch(h, &set, &err), 0);
                t304[i] = cub_now_usec(CLOCK_MONOTONIC) - t;
        }
        qsort(t200, N, sizeof(uint64_t), cmp_u64);
        qsort(t304, N, sizeof(uint64_t), cmp_u64);
        printf("# figures: 304 (conditional GET, no decode) p50 %" PRIu64 " us, p99 %" PRIu64 " us; "
               "200 with a %zu-byte PodList of 110 pods (GET + decode) p50 %" PRIu64 " us, p99 %" PRIu64 " us\n",
               t304[N / 2], t304[N * 99 / 100], len, t200[N / 2], t200[N * 99 / 100]);
        podsrc_http_free(h);
        free(list);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pod_then_304),
                cmocka_unit_test(test_errors_keep_nothing_new),
                cmocka_unit_test(test_list),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_headers_and_down),
                cmocka_unit_test(test_tls),
                cmocka_unit_test(test_poller),
                cmocka_unit_test(test_figures),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
