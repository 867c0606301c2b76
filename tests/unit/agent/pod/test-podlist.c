/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod: the body of a manifest URL (pod_decode_static_list: a Pod or a
 * PodList) and the URL's KubeletConfiguration fields. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"

#define URL "https://config.example/node1/pods.yaml"

static const char pod_yaml[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n"
                               "  - name: c\n    image: busybox:1\n";
static const char list_yaml[] = "apiVersion: v1\n"
                                "kind: PodList\n"
                                "items:\n"
                                "- metadata:\n"
                                "    name: a\n"
                                "  spec:\n"
                                "    containers:\n"
                                "    - name: c\n"
                                "      image: busybox:1\n"
                                "- apiVersion: v1\n"
                                "  kind: Pod\n"
                                "  metadata: {name: b, namespace: jobs}\n"
                                "  spec: {containers: [{name: c, image: busybox:1}]}\n";

static void test_single_pod(void **state) {
        Pod **pods = NULL;
        size_t n = 0;
        CubError err = {};
        char uid[POD_UID_DERIVED_MAX];

        (void) state;
        assert_int_equal(pod_decode_static_list(pod_yaml, strlen(pod_yaml), URL, POD_FORMAT_YAML, "Node1",
                                                POD_SOURCE_HTTP, URL, &pods, &n, &err),
                         0);
        assert_int_equal(n, 1);
        assert_string_equal(pods[0]->name, "a-node1");
        assert_string_equal(pods[0]->node_name, "Node1");
        /* no host part for a URL: the same body on two nodes gives one UID */
        assert_int_equal(pod_static_uid("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"},"
                                        "\"spec\":{\"containers\":[{\"image\":\"busybox:1\",\"name\":\"c\"}]}}",
                                        "other", POD_SOURCE_HTTP, URL, uid, &err),
                         0);
        assert_string_equal(pods[0]->uid, uid);
        pod_list_free(pods, n);
}

static void test_list(void **state) {
        Pod **pods = NULL, *alone = NULL;
        size_t n = 0;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_decode_static_list(list_yaml, strlen(list_yaml), URL, POD_FORMAT_YAML, "node1",
                                                POD_SOURCE_HTTP, URL, &pods, &n, &err),
                         0);
        assert_int_equal(n, 2);
        assert_string_equal(pods[0]->name, "a-node1");
        assert_string_equal(pods[0]->namespace_, "default");
        assert_string_equal(pods[1]->name, "b-node1");
        assert_string_equal(pods[1]->namespace_, "jobs");
        assert_int_equal(pods[0]->n_tolerations, 0);
        /* an item has the UID the same pod served alone has */
        assert_int_equal(pod_decode_static(pod_yaml, strlen(pod_yaml), URL, POD_FORMAT_YAML, "node1", POD_SOURCE_HTTP,
                                           URL, &alone, &err),
                         0);
        assert_string_equal(pods[0]->uid, alone->uid);
        /* and not the UID of a file */
        pod_free(alone);
        alone = NULL;
        assert_int_equal(pod_decode_static(pod_yaml, strlen(pod_yaml), URL, POD_FORMAT_YAML, "node1", POD_SOURCE_FILE,
                                           URL, &alone, &err),
                         0);
        assert_string_not_equal(pods[0]->uid, alone->uid);
        pod_free(alone);
        pod_list_free(pods, n);

        /* JSON, and an empty list */
        assert_int_equal(pod_decode_static_list("{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[]}", 47, URL,
                                                POD_FORMAT_JSON, "node1", POD_SOURCE_HTTP, URL, &pods, &n, &err),
                         0);
        assert_int_equal(n, 0);
        pod_list_free(pods, n);
        assert_int_equal(pod_decode_static_list("apiVersion: v1\nkind: PodList\n", 29, URL, POD_FORMAT_YAML, "node1",
                                                POD_SOURCE_HTTP, URL, &pods, &n, &err),
                         0);
        assert_int_equal(n, 0);
        pod_list_free(pods, n);
}

static void expect_error(const char *body, PodFormat fmt, const char *want) {
        Pod **pods = NULL;
        size_t n = 7;
        CubError err = {};

        assert_int_equal(
                pod_decode_static_list(body, strlen(body), URL, fmt, "node1", POD_SOURCE_HTTP, URL, &pods, &n, &err),
                -EINVAL);
        assert_null(pods);
        assert_string_equal(err.msg, want);
}

static void test_errors(void **state) {
        (void) state;
        expect_error("apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec:\n    containers:\n"
                     "    - name: c\n      image: busybox:1\n- metadata: {name: b}\n  spec:\n    containers:\n"
                     "    - name: c\n",
                     POD_FORMAT_YAML, URL ":12: items[1].spec.containers[0].image: Required value");
        expect_error("{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"A\"},"
                     "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}]}",
                     POD_FORMAT_JSON,
                     URL ": items[0].metadata.name: Invalid value: \"A\": a lowercase RFC 1123 subdomain must "
                         "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                         "alphanumeric character");
        expect_error("apiVersion: v2\nkind: PodList\nitems: []\n", POD_FORMAT_YAML,
                     URL ": apiVersion: Unsupported value: a PodList must be \"v1\"");
        expect_error("apiVersion: v1\nkind: PodList\nitems: {a: 1}\n", POD_FORMAT_YAML,
                     URL ": items: Invalid type: expected array, got object");
        expect_error("apiVersion: v1\nkind: PodList\nitems: [3]\n", POD_FORMAT_YAML,
                     URL ": items[0]: Invalid type: expected object, got number");
        expect_error("apiVersion: v1\nkind: Deployment\nmetadata: {name: a}\nspec: {}\n", POD_FORMAT_YAML,
                     URL ":2: kind: Unsupported value: \"Deployment\": supported values: \"Pod\"");
}

static void test_config(void **state) {
        static const char yaml[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                   "kind: KubeletConfiguration\n"
                                   "staticPodURL: https://config.example/pods\n"
                                   "staticPodURLHeader:\n"
                                   "  Authorization: [\"Bearer abc\"]\n"
                                   "  X-Node: [edge-1, rack-4]\n"
                                   "httpCheckFrequency: 5s\n"
                                   "fileCheckFrequency: 7s\n"
                                   "cubelet:\n"
                                   "  staticPodURLCAFile: /etc/cubelet/ca.crt\n"
                                   "  staticPodURLClientCert: /etc/cubelet/node.crt\n"
                                   "  staticPodURLClientKey: /etc/cubelet/node.key\n"
                                   "  staticPodURLTimeout: 3s\n";
        PodKubeletConfig c;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_kubelet_config_decode(yaml, strlen(yaml), "c.yaml", &c, &err), 0);
        assert_string_equal(c.static_pod_url, "https://config.example/pods");
        assert_int_equal(c.static_pod_url_header.n, 3);
        assert_string_equal(c.static_pod_url_header.items[0], "Authorization: Bearer abc");
        assert_string_equal(c.static_pod_url_header.items[1], "X-Node: edge-1");
        assert_string_equal(c.static_pod_url_header.items[2], "X-Node: rack-4");
        assert_true(c.http_check_frequency.usec == 5000000);
        assert_true(c.file_check_frequency.usec == 7000000);
        assert_string_equal(c.static_pod_url_ca_file, "/etc/cubelet/ca.crt");
        assert_string_equal(c.static_pod_url_client_cert, "/etc/cubelet/node.crt");
        assert_string_equal(c.static_pod_url_client_key, "/etc/cubelet/node.key");
        assert_true(c.static_pod_url_timeout.set && c.static_pod_url_timeout.usec == 3000000);
        assert_int_equal(c.ignored.n, 0);
        pod_kubelet_config_done(&c);

        assert_int_equal(pod_kubelet_config_decode("staticPodURLHeader:\n  X-Node: edge-1\n", 35, "c.yaml", &c, &err),
                         -EINVAL);
        assert_string_equal(err.msg, "c.yaml:2: staticPodURLHeader: [X-Node]: Invalid value: expected a header name "
                                     "and a list of values");
        assert_int_equal(
                pod_kubelet_config_decode("staticPodURLHeader:\n  X-Node: [\"a\\nb\"]\n", 38, "c.yaml", &c, &err),
                -EINVAL);
        assert_string_equal(err.msg, "c.yaml:2: staticPodURLHeader: [X-Node][0]: Invalid value: expected a one-line "
                                     "string");
}

/* Each item is checked against the field table, with its items[i] path: the
 * PodList's own fields (items, kind) are not the pod's (a merge had walked
 * the list's root and refused every URL pod for "items: unknown field"). */
static void test_list_items_field_check(void **state) {
        static const char text[] = "apiVersion: v1\n"
                                   "kind: PodList\n"
                                   "items:\n"
                                   "- metadata: {name: a}\n"
                                   "  spec: {containers: [{name: c, image: busybox:1}]}\n"
                                   "- metadata: {name: b}\n"
                                   "  spec:\n"
                                   "    containers:\n"
                                   "    - name: c\n"
                                   "      image: busybox:1\n"
                                   "      volumeDevices: [{name: d, devicePath: /d}]\n";
        Pod **pods = NULL;
        size_t n = 0;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_decode_static_list(text, strlen(text), URL, POD_FORMAT_YAML, "node1", POD_SOURCE_HTTP,
                                                URL, &pods, &n, &err),
                         0);
        assert_int_equal(n, 2);
        assert_int_equal(pods[0]->refused.n, 0);
        assert_int_equal(pods[0]->warnings.n, 0);
        assert_int_equal(pods[1]->refused.n, 1);
        assert_string_equal(pods[1]->refused.items[0].path, "items[1].spec.containers[0].volumeDevices");
        pod_list_free(pods, n);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_single_pod),
                cmocka_unit_test(test_list_items_field_check),
                cmocka_unit_test(test_list),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_config),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
