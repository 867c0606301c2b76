/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet server (agent/api/http.c with auth.h and kubelet.c) on a real
 * socket with TLS, libcurl as the client and a fake API server behind the
 * reviews: 401 without credentials or with a certificate of another CA,
 * 403 with kubelet's text, /containerLogs from log files (tail, previous,
 * timestamps, a follow that ends with the container), kubelet's errors,
 * and the streaming paths' refusals before any runtime is asked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/api/http.h"
#include "agent/util/time.h"

#define PKI "tests/data/http/"

typedef struct Reply {
        long status;
        char body[65536];
        size_t len;
        CURLcode rc;
} Reply;

typedef struct Fake {
        bool allow; /* the SubjectAccessReview's answer for the client certificate's user */
        char user[128];
} Fake;

static int review(void *userdata, const char *path, json_t *body, json_t **ret, CubError *err) {
        Fake *f = userdata;

        (void) err;
        assert_non_null(strstr(path, "subjectaccessreviews"));
        (void) snprintf(f->user, sizeof(f->user), "%s",
                        json_string_value(json_object_get(json_object_get(body, "spec"), "user")));
        *ret = json_pack("{s:b}", "allowed", f->allow);
        return 0;
}

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

/* client: the certificate's base name in tests/data/http, NULL for none */
static Reply *fetch(unsigned port, const char *path, const char *client) {
        Reply *r = calloc(1, sizeof(*r));
        CURL *c = curl_easy_init();
        char url[512], cert[128], key[128];

        assert_non_null(r);
        (void) snprintf(url, sizeof(url), "https://127.0.0.1:%u%s", port, path);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
        curl_easy_setopt(c, CURLOPT_CAINFO, PKI "ca.pem");
        if (client) {
                (void) snprintf(cert, sizeof(cert), PKI "%s.pem", client);
                (void) snprintf(key, sizeof(key), PKI "%s-key.pem", client);
                curl_easy_setopt(c, CURLOPT_SSLCERT, cert);
                curl_easy_setopt(c, CURLOPT_SSLKEY, key);
        }
        r->rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        curl_easy_cleanup(c);
        return r;
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

static char dir[64];

static void write_file(const char *name, const char *text, const char *mode) {
        char path[256];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, mode);
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* pod default/web (uid u1) with container app (running when id is set) and sidecar (not created) */
static ApiSnapshot *snapshot(const char *id, bool running) {
        ApiSnapshot *s = api_snapshot_new();
        ApiPodRef *p;

        assert_non_null(s);
        s->made_usec = cub_now_usec(CLOCK_MONOTONIC);
        s->node_name = strdup("n1");
        s->pods_json = strdup("{\"kind\":\"PodList\"}");
        s->metrics = strdup("");
        p = api_snapshot_add_pod(s, "default", "web", "u1", "kubepods/podu1", dir, 1);
        assert_non_null(p);
        assert_int_equal(api_pod_ref_add_container(p, "app", id, running, 1), 0);
        assert_int_equal(api_pod_ref_add_container(p, "sidecar", "", false, 0), 0);
        return s;
}

static ApiHttp *start(ApiAuth **ret_auth, Fake *f) {
        ApiHttpConfig c;
        ApiHttp *h = NULL;
        CubError err = {};

        assert_int_equal(
                api_auth_new(&(ApiAuthConfig){ .node_name = "n1", .webhook = true, .review = review, .userdata = f },
                             ret_auth, &err),
                0);
        api_http_config_init(&c);
        c.port = API_HTTP_PORT_ANY;
        c.tls_cert_file = PKI "server.pem";
        c.tls_key_file = PKI "server-key.pem";
        c.client_ca_file = PKI "ca.pem";
        c.auth = *ret_auth;
        c.runtime_endpoint = "unix:///nonexistent.sock";
        if (api_http_new(&c, &h, &err) < 0)
                fail_msg("start: %s", err.msg);
        api_http_heartbeat(h, cub_now_usec(CLOCK_MONOTONIC), 0, true);
        return h;
}

static void test_auth(void **state) {
        Fake f = {};
        ApiAuth *a;
        ApiHttp *h;
        unsigned port;

        (void) state;
        h = start(&a, &f);
        port = api_http_port(h);
        api_http_publish(h, snapshot("c1", true));
        CHECK(fetch(port, "/pods", NULL), 401, "Unauthorized");
        CHECK(fetch(port, "/pods", "rogue-client"), 401, "Unauthorized");
        CHECK(fetch(port, "/pods", "client"), 403,
              "Forbidden (user=system:node-scraper, verb=get, resource=nodes, subresource(s)=[pods proxy])\n");
        assert_string_equal(f.user, "system:node-scraper");
        api_http_free(h);
        api_auth_free(a);

        f.allow = true;
        h = start(&a, &f);
        port = api_http_port(h);
        api_http_publish(h, snapshot("c1", true));
        CHECK(fetch(port, "/pods", "client"), 200, "{\"kind\":\"PodList\"}");
        api_http_free(h);
        api_auth_free(a);
}

static void test_logs(void **state) {
        Fake f = { .allow = true };
        ApiAuth *a;
        ApiHttp *h;
        unsigned port;
        char cdir[128];

        (void) state;
        (void) snprintf(cdir, sizeof(cdir), "%s/app", dir);
        assert_int_equal(mkdir(cdir, 0755), 0);
        write_file("app/0.log", "2026-01-01T00:00:00.000000001Z stdout F first run\n", "w");
        write_file("app/1.log",
                   "2026-01-01T00:00:01.000000001Z stdout F one\n"
                   "2026-01-01T00:00:02.000000001Z stderr P tw\n"
                   "2026-01-01T00:00:02.000000002Z stderr F o\n",
                   "w");
        h = start(&a, &f);
        port = api_http_port(h);
        api_http_publish(h, snapshot("c1", true));
        CHECK(fetch(port, "/containerLogs/default/web/app", "client"), 200, "one\ntwo\n");
        CHECK(fetch(port, "/containerLogs/default/web/app?tailLines=2", "client"), 200, "two\n");
        /* a partial line's pieces are lines of the file: the last one alone (kubelet's tail too) */
        CHECK(fetch(port, "/containerLogs/default/web/app?tailLines=1", "client"), 200, "o\n");
        CHECK(fetch(port, "/containerLogs/default/web/app?previous=true", "client"), 200, "first run\n");
        CHECK(fetch(port, "/containerLogs/default/web/app?tailLines=2&timestamps=true", "client"), 200,
              "2026-01-01T00:00:02.000000001Z tw2026-01-01T00:00:02.000000002Z o\n");
        CHECK(fetch(port, "/containerLogs/default/web/app?limitBytes=2", "client"), 200, "on");
        CHECK(fetch(port, "/containerLogs/default/web/app?sinceTime=2026-01-01T00:00:02Z", "client"), 200, "two\n");
        CHECK(fetch(port, "/containerLogs/default/web/app?stream=Stdout", "client"), 200, "one\n");
        CHECK(fetch(port, "/containerLogs/default/web/app?tailLines=x", "client"), 422, NULL);
        CHECK(fetch(port, "/containerLogs/default/nosuch/app", "client"), 404, "pod \"nosuch\" does not exist");
        CHECK(fetch(port, "/containerLogs/default/web/nosuch", "client"), 404,
              "container \"nosuch\" not found in pod \"web\"");
        CHECK(fetch(port, "/containerLogs/default/web/sidecar", "client"), 400,
              "container \"sidecar\" in pod \"web\" is waiting to start: ContainerCreating");
        CHECK(fetch(port, "/containerLogs/default/web/app/extra", "client"), 404, NULL);
        /* the streaming paths refuse before asking the runtime */
        CHECK(fetch(port, "/exec/default/web/app?command=true&stdout=1", "client"), 400, "Upgrade request required");
        CHECK(fetch(port, "/portForward/default/nosuch", "client"), 404, "pod does not exist");
        api_http_free(h);
        api_auth_free(a);
}

typedef struct Follower {
        unsigned port;
        Reply *r;
} Follower;

static void *follow(void *arg) {
        Follower *fl = arg;

        fl->r = fetch(fl->port, "/containerLogs/default/web/app?follow=true", "client");
        return NULL;
}

/* follow: the lines appended come out; the container's end (the next snapshot) ends the answer */
static void test_follow(void **state) {
        Fake f = { .allow = true };
        ApiAuth *a;
        ApiHttp *h;
        Follower fl;
        pthread_t t;

        (void) state;
        h = start(&a, &f);
        fl.port = api_http_port(h);
        api_http_publish(h, snapshot("c1", true));
        assert_int_equal(pthread_create(&t, NULL, follow, &fl), 0);
        usleep(500000);
        write_file("app/1.log", "2026-01-01T00:00:03.000000001Z stdout F three\n", "a");
        usleep(500000);
        api_http_publish(h, snapshot("c1", false));
        assert_int_equal(pthread_join(t, NULL), 0);
        CHECK(fl.r, 200, "one\ntwo\nthree\n");
        api_http_free(h);
        api_auth_free(a);
}

static int setup(void **state) {
        (void) state;
        (void) snprintf(dir, sizeof(dir), "/tmp/cubelet-test-kubelet-XXXXXX");
        assert_non_null(mkdtemp(dir));
        return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

static int teardown(void **state) {
        (void) state;
        return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_auth),
                cmocka_unit_test(test_logs),
                cmocka_unit_test(test_follow),
        };
        int r;

        curl_global_init(CURL_GLOBAL_DEFAULT);
        r = cmocka_run_group_tests(tests, setup, teardown);
        curl_global_cleanup();
        return r;
}
