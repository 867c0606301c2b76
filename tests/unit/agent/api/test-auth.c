/* SPDX-License-Identifier: Apache-2.0 */
/* agent/api/auth.c with a fake API server (the review function): kubelet's
 * verb and subresource mapping, the order of authentication (certificate,
 * token, anonymous), the reviews' bodies, their caching, and kubelet's 403
 * text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "agent/api/auth.h"

typedef struct Fake {
        unsigned tokens, sars;
        char last_sub[64], last_user[128], last_verb[16], last_name[64];
        bool allow_proxy, allow_pods, fail;
} Fake;

static int fake_review(void *userdata, const char *path, json_t *body, json_t **ret, CubError *err) {
        Fake *f = userdata;
        json_t *spec = json_object_get(body, "spec");

        if (f->fail)
                return cub_err_set(err, EIO, "POST %s: connection refused", path);
        if (strstr(path, "tokenreviews")) {
                const char *t = json_string_value(json_object_get(spec, "token"));

                f->tokens++;
                assert_string_equal(json_string_value(json_object_get(body, "kind")), "TokenReview");
                *ret = strcmp(t, "good") == 0
                               ? json_pack("{s:b,s:{s:s,s:s,s:[s,s]}}", "authenticated", 1, "user", "username", "alice",
                                           "uid", "u-1", "groups", "dev", "system:authenticated")
                               : json_pack("{s:b}", "authenticated", 0);
                return 0;
        }
        assert_non_null(strstr(path, "subjectaccessreviews"));
        f->sars++;
        {
                json_t *ra = json_object_get(spec, "resourceAttributes");
                const char *sub = json_string_value(json_object_get(ra, "subresource"));

                snprintf(f->last_sub, sizeof(f->last_sub), "%s", sub);
                snprintf(f->last_user, sizeof(f->last_user), "%s", json_string_value(json_object_get(spec, "user")));
                snprintf(f->last_verb, sizeof(f->last_verb), "%s", json_string_value(json_object_get(ra, "verb")));
                snprintf(f->last_name, sizeof(f->last_name), "%s", json_string_value(json_object_get(ra, "name")));
                assert_string_equal(json_string_value(json_object_get(ra, "resource")), "nodes");
                *ret = json_pack("{s:b}", "allowed",
                                 (strcmp(sub, "proxy") == 0 && f->allow_proxy) ||
                                         (strcmp(sub, "pods") == 0 && f->allow_pods));
        }
        return 0;
}

static ApiAuth *auth(Fake *f, bool anonymous, bool webhook) {
        ApiAuth *a = NULL;
        CubError err = {};

        memset(f, 0, sizeof(*f));
        assert_int_equal(api_auth_new(&(ApiAuthConfig){ .node_name = "n1",
                                                        .anonymous = anonymous,
                                                        .webhook = webhook,
                                                        .review = fake_review,
                                                        .userdata = f },
                                      &a, &err),
                         0);
        return a;
}

static void test_mapping(void **state) {
        const char *s[2];

        (void) state;
        assert_string_equal(api_auth_verb("GET"), "get");
        assert_string_equal(api_auth_verb("POST"), "create");
        assert_string_equal(api_auth_verb("HEAD"), "");
        assert_int_equal(api_auth_subresources("/stats/summary", s), 1);
        assert_string_equal(s[0], "stats");
        assert_int_equal(api_auth_subresources("/metrics/resource", s), 1);
        assert_string_equal(s[0], "metrics");
        assert_int_equal(api_auth_subresources("/metricsx", s), 1);
        assert_string_equal(s[0], "proxy");
        assert_int_equal(api_auth_subresources("/logs/", s), 1);
        assert_string_equal(s[0], "log");
        assert_int_equal(api_auth_subresources("/containerLogs/ns/p/c", s), 1);
        assert_string_equal(s[0], "proxy");
        assert_int_equal(api_auth_subresources("/exec/ns/p/c", s), 1);
        assert_string_equal(s[0], "proxy");
        assert_int_equal(api_auth_subresources("/pods", s), 2);
        assert_string_equal(s[0], "pods");
        assert_string_equal(s[1], "proxy");
        assert_int_equal(api_auth_subresources("/healthz", s), 2);
        assert_string_equal(s[0], "healthz");
        assert_int_equal(api_auth_subresources("/configz", s), 2);
        assert_string_equal(s[0], "configz");
}

static void test_authenticate(void **state) {
        Fake f;
        ApiAuth *a = auth(&f, false, true);
        ApiUser cert = {}, u = {};
        CubError err = {};

        (void) state;
        /* a certificate wins over a token, and asks nobody */
        assert_int_equal(api_user_set(&cert, "system:node:n1", "", (const char *const[]){ "system:nodes", NULL }), 0);
        assert_int_equal(api_auth_authenticate(a, &cert, "Bearer good", &u, &err), 0);
        assert_string_equal(u.name, "system:node:n1");
        assert_string_equal(u.groups[0], "system:nodes");
        assert_int_equal(f.tokens, 0);
        api_user_done(&u);
        /* a token: reviewed once, then cached */
        assert_int_equal(api_auth_authenticate(a, NULL, "Bearer good", &u, &err), 0);
        assert_string_equal(u.name, "alice");
        assert_string_equal(u.uid, "u-1");
        assert_string_equal(u.groups[1], "system:authenticated");
        assert_null(u.groups[2]);
        api_user_done(&u);
        assert_int_equal(api_auth_authenticate(a, NULL, "bearer  good", &u, &err), 0);
        api_user_done(&u);
        assert_int_equal(f.tokens, 1);
        /* a refused token, cached too */
        assert_int_equal(api_auth_authenticate(a, NULL, "Bearer bad", &u, &err), -EACCES);
        assert_int_equal(api_auth_authenticate(a, NULL, "Bearer bad", &u, &err), -EACCES);
        assert_int_equal(f.tokens, 2);
        /* nothing, or not a bearer token: 401 without anonymous */
        assert_int_equal(api_auth_authenticate(a, NULL, NULL, &u, &err), -EACCES);
        assert_int_equal(api_auth_authenticate(a, NULL, "Basic Zm9vOmJhcg==", &u, &err), -EACCES);
        /* the API server down: an error, not cached */
        f.fail = true;
        assert_int_equal(api_auth_authenticate(a, NULL, "Bearer other", &u, &err), -EIO);
        assert_non_null(strstr(err.msg, "connection refused"));
        api_user_done(&cert);
        api_auth_free(a);

        a = auth(&f, true, false);
        assert_int_equal(api_auth_authenticate(a, NULL, "Bearer good", &u, &err), 0);
        assert_string_equal(u.name, "system:anonymous");
        assert_string_equal(u.groups[0], "system:unauthenticated");
        assert_int_equal(f.tokens, 0); /* webhook off: the token is not asked about */
        api_user_done(&u);
        api_auth_free(a);
}

static void test_authorize(void **state) {
        Fake f;
        ApiAuth *a = auth(&f, false, true);
        ApiUser u = {};
        CubError err = {};

        (void) state;
        assert_int_equal(api_user_set(&u, "bob", "", (const char *const[]){ "dev", NULL }), 0);
        assert_int_equal(api_auth_authorize(a, &u, "GET", "/containerLogs/default/p/c", &err), -EPERM);
        assert_string_equal(err.msg, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[proxy])\n");
        assert_string_equal(f.last_user, "bob");
        assert_string_equal(f.last_name, "n1");
        /* denied: cached for 30 s */
        assert_int_equal(api_auth_authorize(a, &u, "GET", "/containerLogs/default/p/c", &err), -EPERM);
        assert_int_equal(f.sars, 1);
        /* /pods asks for pods, then proxy */
        assert_int_equal(api_auth_authorize(a, &u, "GET", "/pods", &err), -EPERM);
        assert_string_equal(err.msg, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])\n");
        assert_int_equal(f.sars, 2); /* proxy's answer was cached */
        api_auth_free(a);

        a = auth(&f, false, true);
        f.allow_pods = true;
        assert_int_equal(api_auth_authorize(a, &u, "GET", "/pods/", &err), 0);
        assert_string_equal(f.last_sub, "pods");
        assert_int_equal(api_auth_authorize(a, &u, "POST", "/exec/ns/p/c", &err), -EPERM);
        assert_string_equal(f.last_verb, "create");
        f.allow_proxy = true;
        assert_int_equal(api_auth_authorize(a, &u, "POST", "/exec/ns/p/c", &err), -EPERM); /* cached denial */
        assert_int_equal(api_auth_authorize(a, &u, "GET", "/exec/ns/p/c", &err), 0);
        f.fail = true;
        assert_int_equal(api_auth_authorize(a, &u, "GET", "/stats/summary", &err), -EIO);
        assert_non_null(strstr(err.msg, "Authorization error (user=bob, verb=get, resource=nodes, subresource=stats)"));
        api_user_done(&u);
        api_auth_free(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mapping),
                cmocka_unit_test(test_authenticate),
                cmocka_unit_test(test_authorize),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
