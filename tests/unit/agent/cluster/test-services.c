/* SPDX-License-Identifier: Apache-2.0 */
/* The Services' environment variables (agent/cluster/services.c) as
 * kubelet makes them: envvars.FromServices's own vectors
 * (pkg/kubelet/envvars/envvars_test.go), getServiceEnvVarMap's choice (the
 * master service always, the namespace's with enableServiceLinks, a
 * namespace's "kubernetes" in the master's place, headless and port-less
 * ones left out), and makeEnvironmentVariables with them (agent/pod/env.c):
 * $(VAR) sees them after the pod's env, a name the pod sets is not
 * appended again. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cluster/services.h"
#include "agent/pod/pod.h"

static json_t *svc(const char *ns, const char *name, const char *ip, const char *ports_json) {
        json_error_t e;
        json_t *ports = json_loads(ports_json, 0, &e);
        json_t *o;

        if (!ports)
                fail_msg("ports: %s", e.text);
        o = json_pack("{s:{s:s,s:s,s:s+},s:{s:s,s:o}}", "metadata", "name", name, "namespace", ns, "uid", ns, name,
                      "spec", "clusterIP", ip, "ports", ports);
        assert_non_null(o);
        return o;
}

static void add(json_t *set, json_t *s) {
        const char *uid = json_string_value(json_object_get(json_object_get(s, "metadata"), "uid"));

        json_object_set_new(set, uid, s);
}

/* envvars_test.go's services, in namespace ns */
static json_t *kubelet_services(const char *ns) {
        json_t *set = json_object();

        add(set, svc(ns, "foo-bar", "1.2.3.4", "[{\"port\":8080,\"protocol\":\"TCP\"}]"));
        add(set, svc(ns, "abc-123", "5.6.7.8",
                     "[{\"name\":\"u-d-p\",\"port\":8081,\"protocol\":\"UDP\"},"
                     "{\"name\":\"t-c-p\",\"port\":8081,\"protocol\":\"TCP\"}]"));
        add(set, svc(ns, "q-u-u-x", "9.8.7.6",
                     "[{\"port\":8082,\"protocol\":\"TCP\"},{\"name\":\"8083\",\"port\":8083,\"protocol\":\"TCP\"}]"));
        add(set, svc(ns, "svrc-clusterip-none", "None", "[{\"port\":8082,\"protocol\":\"TCP\"}]"));
        add(set, svc(ns, "svrc-clusterip-empty", "", "[{\"port\":8082,\"protocol\":\"TCP\"}]"));
        add(set, svc(ns, "super-ipv6", "2001:DB8::",
                     "[{\"name\":\"u-d-p\",\"port\":8084,\"protocol\":\"UDP\"},"
                     "{\"name\":\"t-c-p\",\"port\":8084,\"protocol\":\"TCP\"}]"));
        add(set, svc(ns, "sctp-1", "1.2.3.4", "[{\"port\":777,\"protocol\":\"SCTP\"}]"));
        return set;
}

/* envvars_test.go's expected list */
static const char *const kubelet_expected[] = {
        "FOO_BAR_SERVICE_HOST=1.2.3.4",
        "FOO_BAR_SERVICE_PORT=8080",
        "FOO_BAR_PORT=tcp://1.2.3.4:8080",
        "FOO_BAR_PORT_8080_TCP=tcp://1.2.3.4:8080",
        "FOO_BAR_PORT_8080_TCP_PROTO=tcp",
        "FOO_BAR_PORT_8080_TCP_PORT=8080",
        "FOO_BAR_PORT_8080_TCP_ADDR=1.2.3.4",
        "ABC_123_SERVICE_HOST=5.6.7.8",
        "ABC_123_SERVICE_PORT=8081",
        "ABC_123_SERVICE_PORT_U_D_P=8081",
        "ABC_123_SERVICE_PORT_T_C_P=8081",
        "ABC_123_PORT=udp://5.6.7.8:8081",
        "ABC_123_PORT_8081_UDP=udp://5.6.7.8:8081",
        "ABC_123_PORT_8081_UDP_PROTO=udp",
        "ABC_123_PORT_8081_UDP_PORT=8081",
        "ABC_123_PORT_8081_UDP_ADDR=5.6.7.8",
        "ABC_123_PORT_8081_TCP=tcp://5.6.7.8:8081",
        "ABC_123_PORT_8081_TCP_PROTO=tcp",
        "ABC_123_PORT_8081_TCP_PORT=8081",
        "ABC_123_PORT_8081_TCP_ADDR=5.6.7.8",
        "Q_U_U_X_SERVICE_HOST=9.8.7.6",
        "Q_U_U_X_SERVICE_PORT=8082",
        "Q_U_U_X_SERVICE_PORT_8083=8083",
        "Q_U_U_X_PORT=tcp://9.8.7.6:8082",
        "Q_U_U_X_PORT_8082_TCP=tcp://9.8.7.6:8082",
        "Q_U_U_X_PORT_8082_TCP_PROTO=tcp",
        "Q_U_U_X_PORT_8082_TCP_PORT=8082",
        "Q_U_U_X_PORT_8082_TCP_ADDR=9.8.7.6",
        "Q_U_U_X_PORT_8083_TCP=tcp://9.8.7.6:8083",
        "Q_U_U_X_PORT_8083_TCP_PROTO=tcp",
        "Q_U_U_X_PORT_8083_TCP_PORT=8083",
        "Q_U_U_X_PORT_8083_TCP_ADDR=9.8.7.6",
        "SUPER_IPV6_SERVICE_HOST=2001:DB8::",
        "SUPER_IPV6_SERVICE_PORT=8084",
        "SUPER_IPV6_SERVICE_PORT_U_D_P=8084",
        "SUPER_IPV6_SERVICE_PORT_T_C_P=8084",
        "SUPER_IPV6_PORT=udp://[2001:DB8::]:8084",
        "SUPER_IPV6_PORT_8084_UDP=udp://[2001:DB8::]:8084",
        "SUPER_IPV6_PORT_8084_UDP_PROTO=udp",
        "SUPER_IPV6_PORT_8084_UDP_PORT=8084",
        "SUPER_IPV6_PORT_8084_UDP_ADDR=2001:DB8::",
        "SUPER_IPV6_PORT_8084_TCP=tcp://[2001:DB8::]:8084",
        "SUPER_IPV6_PORT_8084_TCP_PROTO=tcp",
        "SUPER_IPV6_PORT_8084_TCP_PORT=8084",
        "SUPER_IPV6_PORT_8084_TCP_ADDR=2001:DB8::",
        "SCTP_1_SERVICE_HOST=1.2.3.4",
        "SCTP_1_SERVICE_PORT=777",
        "SCTP_1_PORT=sctp://1.2.3.4:777",
        "SCTP_1_PORT_777_SCTP=sctp://1.2.3.4:777",
        "SCTP_1_PORT_777_SCTP_PROTO=sctp",
        "SCTP_1_PORT_777_SCTP_PORT=777",
        "SCTP_1_PORT_777_SCTP_ADDR=1.2.3.4",
        NULL,
};

static const char *const master_expected[] = {
        "KUBERNETES_SERVICE_HOST=10.96.0.1",
        "KUBERNETES_SERVICE_PORT=443",
        "KUBERNETES_SERVICE_PORT_HTTPS=443",
        "KUBERNETES_PORT=tcp://10.96.0.1:443",
        "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443",
        "KUBERNETES_PORT_443_TCP_PROTO=tcp",
        "KUBERNETES_PORT_443_TCP_PORT=443",
        "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
        NULL,
};

static int cmp(const void *x, const void *y) {
        return strcmp(*(const char *const *) x, *(const char *const *) y);
}

/* env (flat pairs) as "K=V" lines sorted, against want (any order) */
static void expect_env(char **env, const char *const *want1, const char *const *want2) {
        char got[8192] = "", exp[8192] = "";
        const char *w[128];
        size_t n = 0, off = 0;

        for (size_t i = 0; want1 && want1[i]; i++)
                w[n++] = want1[i];
        for (size_t i = 0; want2 && want2[i]; i++)
                w[n++] = want2[i];
        qsort(w, n, sizeof(*w), cmp);
        for (size_t i = 0; i < n; i++)
                off += (size_t) snprintf(exp + off, sizeof(exp) - off, "%s\n", w[i]);
        off = 0;
        for (size_t i = 0; env && env[i]; i += 2) /* kube_service_env sorts by name */
                off += (size_t) snprintf(got + off, sizeof(got) - off, "%s=%s\n", env[i], env[i + 1]);
        assert_string_equal(got, exp);
}

static json_t *master(void) {
        return svc("default", "kubernetes", "10.96.0.1", "[{\"name\":\"https\",\"port\":443,\"protocol\":\"TCP\"}]");
}

static void test_from_services_vectors(void **state) {
        json_t *set = kubelet_services("team");
        char **env = NULL;
        CubError err = {};

        (void) state;
        add(set, master());
        assert_int_equal(kube_service_env(set, "team", true, &env, &err), 0);
        expect_env(env, kubelet_expected, master_expected);
        pod_env_strv_free(env);
        json_decref(set);
}

static void test_links_off_keeps_master(void **state) {
        json_t *set = kubelet_services("team");
        char **env = NULL;
        CubError err = {};

        (void) state;
        add(set, master());
        assert_int_equal(kube_service_env(set, "team", false, &env, &err), 0);
        expect_env(env, master_expected, NULL);
        pod_env_strv_free(env);
        /* another namespace's pod gets the master service's only */
        assert_int_equal(kube_service_env(set, "other", true, &env, &err), 0);
        expect_env(env, master_expected, NULL);
        pod_env_strv_free(env);
        json_decref(set);
}

static void test_namespace_kubernetes_wins(void **state) {
        json_t *set = json_object();
        char **env = NULL;
        CubError err = {};
        static const char *const own[] = {
                "KUBERNETES_SERVICE_HOST=10.0.0.9",   "KUBERNETES_SERVICE_PORT=80",
                "KUBERNETES_PORT=tcp://10.0.0.9:80",  "KUBERNETES_PORT_80_TCP=tcp://10.0.0.9:80",
                "KUBERNETES_PORT_80_TCP_PROTO=tcp",   "KUBERNETES_PORT_80_TCP_PORT=80",
                "KUBERNETES_PORT_80_TCP_ADDR=10.0.0.9", NULL,
        };

        (void) state;
        add(set, svc("team", "kubernetes", "10.0.0.9", "[{\"port\":80}]"));
        add(set, master());
        assert_int_equal(kube_service_env(set, "team", true, &env, &err), 0);
        expect_env(env, own, NULL);
        pod_env_strv_free(env);
        /* without links the namespace's is not the pod's */
        assert_int_equal(kube_service_env(set, "team", false, &env, &err), 0);
        expect_env(env, master_expected, NULL);
        pod_env_strv_free(env);
        /* the master service's own namespace: it is the master service */
        assert_int_equal(kube_service_env(set, "default", true, &env, &err), 0);
        expect_env(env, master_expected, NULL);
        pod_env_strv_free(env);
        json_decref(set);
}

static void test_broken_answers(void **state) {
        json_t *set = json_object();
        char **env = NULL;
        CubError err = {};

        (void) state;
        add(set, svc("team", "noports", "10.0.0.3", "[]"));
        json_object_set_new(set, "x", json_pack("{s:{s:s}}", "metadata", "name", "nothing"));
        json_object_set_new(set, "y", json_string("not an object"));
        assert_int_equal(kube_service_env(set, "team", true, &env, &err), 0);
        assert_non_null(env);
        assert_null(env[0]);
        pod_env_strv_free(env);
        json_decref(set);
}

static const char *get(char **env, const char *k, size_t *count) {
        const char *v = NULL;

        *count = 0;
        for (size_t i = 0; env && env[i]; i += 2)
                if (strcmp(env[i], k) == 0) {
                        v = env[i + 1];
                        (*count)++;
                }
        return v;
}

/* makeEnvironmentVariables: MappingFuncFor(tmpEnv, serviceEnv), and the
 * services' variables appended for names tmpEnv does not have */
static void test_pod_env_with_services(void **state) {
        static const char text[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team, uid: u}\n"
                                   "spec:\n  containers:\n  - name: c\n    image: busybox\n"
                                   "    command: [sh, -c, \"echo $(KUBERNETES_SERVICE_HOST)\"]\n"
                                   "    env:\n"
                                   "    - {name: API, value: \"https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)\"}\n"
                                   "    - {name: KUBERNETES_SERVICE_PORT, value: \"6443\"}\n"
                                   "    - {name: LATER, value: \"$(KUBERNETES_SERVICE_PORT)\"}\n";
        static const char *const svc_env[] = { "KUBERNETES_SERVICE_HOST", "10.96.0.1", "KUBERNETES_SERVICE_PORT",
                                               "443", NULL };
        PodEnvContext ctx = { .node_name = "n", .service_env = svc_env };
        char **env = NULL, **command = NULL, **args = NULL;
        Pod *pod = NULL;
        CubError err = {};
        size_t count;

        (void) state;
        if (pod_decode(text, strlen(text), "t.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decoding failed: %s", err.msg);
        assert_true(pod_service_links(pod));
        assert_int_equal(pod_env_resolve(pod, &pod->containers[0], &ctx, &env, &err), 0);
        /* the pod's KUBERNETES_SERVICE_PORT comes later: API sees the service's */
        assert_string_equal(get(env, "API", &count), "https://10.96.0.1:443");
        assert_string_equal(get(env, "LATER", &count), "6443");
        assert_string_equal(get(env, "KUBERNETES_SERVICE_PORT", &count), "6443");
        assert_int_equal(count, 1); /* the service's is not appended */
        assert_string_equal(get(env, "KUBERNETES_SERVICE_HOST", &count), "10.96.0.1");
        assert_int_equal(count, 1);
        assert_string_equal(env[0], "API"); /* the pod's own first, the services' after */
        assert_string_equal(env[6], "KUBERNETES_SERVICE_HOST");
        assert_null(env[8]);
        assert_int_equal(pod_env_expand_command(&pod->containers[0], env, &command, &args, &err), 0);
        assert_string_equal(command[2], "echo 10.96.0.1");
        pod_env_strv_free(command);
        pod_env_strv_free(args);
        pod_env_strv_free(env);
        pod_free(pod);
}

static void test_enable_service_links_decoded(void **state) {
        static const char text[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                                   "spec:\n  enableServiceLinks: false\n  containers:\n  - {name: c, image: busybox}\n";
        Pod *pod = NULL;
        CubError err = {};

        (void) state;
        if (pod_decode(text, strlen(text), "t.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decoding failed: %s", err.msg);
        assert_false(pod_service_links(pod));
        assert_int_equal(pod->warnings.n, 0); /* implemented: no "ignored" warning */
        pod_free(pod);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_from_services_vectors),  cmocka_unit_test(test_links_off_keeps_master),
                cmocka_unit_test(test_namespace_kubernetes_wins), cmocka_unit_test(test_broken_answers),
                cmocka_unit_test(test_pod_env_with_services),  cmocka_unit_test(test_enable_service_links_decoded),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
