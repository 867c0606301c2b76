/* SPDX-License-Identifier: Apache-2.0 */
/* The kubeconfig: the current context's cluster and user, inline data and
 * files relative to the kubeconfig, tokens, and the errors that name the
 * file and the field. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/cluster/kubeconfig.h"
#include "agent/util/fileio.h"

/* "-----BEGIN X-----\n" in base64 */
#define PEM_B64 "LS0tLS1CRUdJTiBYLS0tLS0K"

static const char INLINE[] = "apiVersion: v1\n"
                             "kind: Config\n"
                             "clusters:\n"
                             "- name: other\n"
                             "  cluster: {server: https://10.0.0.1:6443}\n"
                             "- name: c1\n"
                             "  cluster:\n"
                             "    server: https://127.0.0.1:6443/\n"
                             "    certificate-authority-data: " PEM_B64 "\n"
                             "users:\n"
                             "- name: u1\n"
                             "  user:\n"
                             "    client-certificate-data: " PEM_B64 "\n"
                             "    client-key-data: " PEM_B64 "\n"
                             "contexts:\n"
                             "- name: ctx\n"
                             "  context: {cluster: c1, user: u1}\n"
                             "current-context: ctx\n";

static void test_inline(void **state) {
        KubeConfig c;
        CubError err = {};

        (void) state;
        if (kube_config_decode(INLINE, strlen(INLINE), "/etc/k/node.kubeconfig", &c, &err) < 0)
                fail_msg("%s", err.msg);
        assert_string_equal(c.server, "https://127.0.0.1:6443"); /* the trailing slash dropped */
        assert_string_equal(c.context, "ctx");
        assert_string_equal(c.cluster_name, "c1");
        assert_string_equal(c.user, "u1");
        assert_int_equal(c.ca.len, strlen("-----BEGIN X-----\n"));
        assert_memory_equal(c.ca.data, "-----BEGIN X-----\n", c.ca.len);
        assert_int_equal(c.cert.len, c.ca.len);
        assert_int_equal(c.key.len, c.ca.len);
        assert_null(c.token);
        assert_false(c.insecure);
        kube_config_done(&c);
}

static void write_file(const char *path, const char *text) {
        CubError err = {};

        if (cub_write_file_atomic(path, text, strlen(text), 0600, &err) < 0)
                fail_msg("%s", err.msg);
}

static void test_files_and_token(void **state) {
        char dir[] = "/tmp/cubelet-test-kubeconfig-XXXXXX", path[128], f[128];
        KubeConfig c;
        CubError err = {};

        (void) state;
        assert_non_null(mkdtemp(dir));
        (void) snprintf(f, sizeof(f), "%s/ca.crt", dir);
        write_file(f, "CA PEM\n");
        (void) snprintf(f, sizeof(f), "%s/token", dir);
        write_file(f, "s3cret\n");
        (void) snprintf(path, sizeof(path), "%s/kubeconfig", dir);
        write_file(path, "{\"clusters\": [{\"name\": \"c\", \"cluster\": {\"server\": \"https://127.0.0.1:6443\", "
                         "\"certificate-authority\": \"ca.crt\"}}],"
                         " \"users\": [{\"name\": \"u\", \"user\": {\"tokenFile\": \"token\"}}],"
                         " \"contexts\": [{\"name\": \"x\", \"context\": {\"cluster\": \"c\", \"user\": \"u\"}}],"
                         " \"current-context\": \"x\"}");
        if (kube_config_load(path, &c, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(c.ca.len, 7);
        assert_memory_equal(c.ca.data, "CA PEM\n", 7);
        assert_string_equal(c.token, "s3cret"); /* the first line */
        assert_null(c.cert.data);
        kube_config_done(&c);
        for (const char *const *n = (const char *const[]){ "ca.crt", "token", "kubeconfig", NULL }; *n; n++) {
                (void) snprintf(f, sizeof(f), "%s/%s", dir, *n);
                assert_int_equal(unlink(f), 0);
        }
        assert_int_equal(rmdir(dir), 0);
}

/* text with from replaced by to, decoded: the error */
static void expect_error(const char *from, const char *to, const char *want) {
        char buf[4096];
        const char *p = strstr(INLINE, from);
        KubeConfig c;
        CubError err = {};

        assert_non_null(p);
        (void) snprintf(buf, sizeof(buf), "%.*s%s%s", (int) (p - INLINE), INLINE, to, p + strlen(from));
        if (kube_config_decode(buf, strlen(buf), "/etc/k/node.kubeconfig", &c, &err) >= 0) {
                kube_config_done(&c);
                fail_msg("'%s' → '%s' decoded", from, to);
        }
        if (!strstr(err.msg, want))
                fail_msg("'%s' → '%s': got '%s', expected '%s'", from, to, err.msg, want);
}

static void test_errors(void **state) {
        (void) state;
        expect_error("current-context: ctx", "current-context: \"\"",
                     "/etc/k/node.kubeconfig: current-context: not set");
        expect_error("current-context: ctx", "current-context: nowhere",
                     "/etc/k/node.kubeconfig: contexts: no entry named 'nowhere'");
        expect_error("{cluster: c1, user: u1}", "{cluster: c2, user: u1}",
                     "/etc/k/node.kubeconfig: clusters: no entry named 'c2'");
        expect_error("{cluster: c1, user: u1}", "{cluster: c1}", "context 'ctx': no user");
        expect_error("https://127.0.0.1:6443/", "http://127.0.0.1:6443",
                     "cluster 'c1': server: expected an https:// URL, got 'http://127.0.0.1:6443'");
        expect_error("certificate-authority-data: " PEM_B64, "certificate-authority-data: not*base64",
                     "cluster.certificate-authority-data: not base64");
        expect_error("    client-key-data: " PEM_B64 "\n", "",
                     "user 'u1': a client certificate needs its key");
        expect_error("certificate-authority-data: " PEM_B64, "certificate-authority: /nonexistent/ca.crt",
                     "/nonexistent/ca.crt");
        expect_error("current-context: ctx", "current-context: [ctx]", "current-context: expected a string");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_inline),
                cmocka_unit_test(test_files_and_token),
                cmocka_unit_test(test_errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
