/* SPDX-License-Identifier: Apache-2.0 */
/* Image pull secrets as kubelet's keyring matches them: URLsMatch's cases
 * (keyring_test.go), the order credentials are tried in, `auth` decoded,
 * .dockercfg beside .dockerconfigjson, the default registry, a malformed
 * config skipped and named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cluster/pullcreds.h"

static void test_match(void **state) {
        static const struct {
                const char *glob, *target;
                bool match;
        } cases[] = {
                { "*.kubernetes.io", "prefix.kubernetes.io", true },
                { "prefix.*.io", "prefix.kubernetes.io", true },
                { "prefix.kubernetes.*", "prefix.kubernetes.io", true },
                { "*-good.kubernetes.io", "prefix-good.kubernetes.io", true },
                { "*.kubernetes.io", "kubernetes.io", false }, /* not as many labels */
                { "*.kubernetes.io", "a.b.kubernetes.io", false },
                { "registry.io:5000", "registry.io:5000/foo/bar", true },
                { "registry.io:5000", "registry.io/foo/bar", false }, /* ports differ */
                { "registry.io", "registry.io:5000/foo", false },
                { "registry.io/foo", "registry.io/foo/bar:1", true },
                { "registry.io/foo", "registry.io/bar/foo:1", false }, /* path not a prefix */
                { "localhost:5000", "localhost:5000/private/busybox:1", true },
                { "*.io", "registry.io/x", true },
                { "gcr.io", "us.gcr.io/x", false },
        };

        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
                if (kube_urls_match(cases[i].glob, cases[i].target) != cases[i].match)
                        fail_msg("%s ~ %s: want %d", cases[i].glob, cases[i].target, cases[i].match);
}

static json_t *secret(const char *key, const char *config) {
        return json_pack("{s:s}", key, config);
}

static void test_creds(void **state) {
        /* two secrets: the first's locations, the second a .dockercfg with auth */
        json_t *s[3] = {
                secret(".dockerconfigjson",
                       "{\"auths\":{\"https://localhost:5000/v2/\":{\"username\":\"u1\",\"password\":\"p1\"},"
                       "\"localhost:5000/private\":{\"username\":\"u2\",\"password\":\"p2\"},"
                       "\"index.docker.io\":{\"username\":\"hub\",\"password\":\"hp\"}}}"),
                secret(".dockercfg", "{\"localhost:5000\":{\"auth\":\"dTM6cDM=\"}}"), /* u3:p3 */
                secret(".dockerconfigjson", "{\"auths\": 1}"),
        };
        const char *names[] = { "default/a", "default/b", "default/bad" };
        KubePullCred *c = NULL;
        size_t n = 0;
        char *skipped = NULL;

        (void) state;
        assert_int_equal(kube_pull_creds((const json_t *const *) s, names, 3, "localhost:5000/private/busybox:1", &c,
                                         &n, &skipped),
                         0);
        /* most specific first; the same location: as added */
        assert_int_equal(n, 3);
        assert_string_equal(c[0].username, "u2");
        assert_string_equal(c[0].server, "localhost:5000");
        assert_string_equal(c[1].username, "u1");
        assert_string_equal(c[1].password, "p1");
        assert_string_equal(c[2].username, "u3");
        assert_string_equal(c[2].password, "p3");
        assert_string_equal(skipped, "default/bad: .dockerconfigjson: no \"auths\" object");
        kube_pull_creds_free(c, n);
        free(skipped);

        /* another path: the location without one */
        assert_int_equal(kube_pull_creds((const json_t *const *) s, names, 2, "localhost:5000/public/x", &c, &n, NULL),
                         0);
        assert_int_equal(n, 2);
        assert_string_equal(c[0].username, "u1");
        kube_pull_creds_free(c, n);
        /* the default registry: index.docker.io's */
        assert_int_equal(kube_pull_creds((const json_t *const *) s, names, 2, "busybox:1", &c, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(c[0].username, "hub");
        kube_pull_creds_free(c, n);
        /* no match: none, the pull goes without */
        assert_int_equal(kube_pull_creds((const json_t *const *) s, names, 2, "quay.io/x/y", &c, &n, NULL), 0);
        assert_int_equal(n, 0);
        kube_pull_creds_free(c, n);
        for (size_t i = 0; i < 3; i++)
                json_decref(s[i]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_match),
                cmocka_unit_test(test_creds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
