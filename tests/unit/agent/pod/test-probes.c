/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/decode-probes.c: probes and lifecycle hooks decoded, defaulted
 * (SetDefaults_Probe, HTTPGetAction) and validated with the API's messages. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"

#define HDR "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    image: x:1\n"

static Pod *decode_ok(const char *yaml) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(yaml, strlen(yaml), "p.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode: %s", err.msg);
        assert_int_equal(pod->refused.n, 0);
        return pod;
}

static void assert_error(const char *yaml, const char *msg) {
        Pod *pod = NULL;
        CubError err = {};

        assert_int_equal(pod_decode(yaml, strlen(yaml), "p.yaml", POD_FORMAT_YAML, &pod, &err), -EINVAL);
        assert_null(pod);
        assert_string_equal(err.msg, msg);
}

static void test_defaults(void **state) {
        Pod *pod;
        const PodContainer *c;

        (void) state;
        pod = decode_ok(HDR "    ports: [{name: web, containerPort: 8080}]\n"
                            "    livenessProbe: {httpGet: {port: web}}\n"
                            "    readinessProbe: {tcpSocket: {port: 81}, periodSeconds: 2, successThreshold: 2}\n"
                            "    startupProbe: {exec: {command: [cat, /f]}, failureThreshold: 30,\n"
                            "      terminationGracePeriodSeconds: 5}\n");
        c = &pod->containers[0];
        assert_true(c->liveness_probe_set && c->readiness_probe_set && c->startup_probe_set);
        assert_int_equal(c->liveness_probe.handler.kind, POD_HANDLER_HTTP_GET);
        assert_string_equal(c->liveness_probe.handler.http_get.path, "/");
        assert_string_equal(c->liveness_probe.handler.http_get.scheme, "HTTP");
        assert_string_equal(c->liveness_probe.handler.http_get.port.name, "web");
        assert_int_equal(c->liveness_probe.period_seconds, 10);
        assert_int_equal(c->liveness_probe.timeout_seconds, 1);
        assert_int_equal(c->liveness_probe.success_threshold, 1);
        assert_int_equal(c->liveness_probe.failure_threshold, 3);
        assert_int_equal(c->liveness_probe.initial_delay_seconds, 0);
        assert_false(c->liveness_probe.termination_grace_period_seconds_set);
        assert_int_equal(c->readiness_probe.handler.kind, POD_HANDLER_TCP_SOCKET);
        assert_int_equal(c->readiness_probe.handler.tcp_socket.port.number, 81);
        assert_int_equal(c->readiness_probe.period_seconds, 2);
        assert_int_equal(c->readiness_probe.success_threshold, 2);
        assert_int_equal(c->startup_probe.handler.kind, POD_HANDLER_EXEC);
        assert_string_equal(c->startup_probe.handler.exec.command.items[1], "/f");
        assert_int_equal(c->startup_probe.failure_threshold, 30);
        assert_true(c->startup_probe.termination_grace_period_seconds_set);
        assert_int_equal(c->startup_probe.termination_grace_period_seconds, 5);
        {
                int32_t port = 0;

                assert_int_equal(pod_port_resolve(c, &c->liveness_probe.handler.http_get.port, &port), 0);
                assert_int_equal(port, 8080);
                assert_int_equal(pod_port_resolve(c, &(PodPortRef){ .name = (char *) "nope" }, &port), -ENOENT);
        }
        pod_free(pod);
}

static void test_hooks(void **state) {
        Pod *pod;
        const PodContainer *c;

        (void) state;
        pod = decode_ok(HDR
                        "    lifecycle:\n      postStart: {exec: {command: [touch, /m]}}\n"
                        "      preStop: {httpGet: {path: /quit, port: 80, httpHeaders: [{name: X-A, value: b}]}}\n");
        c = &pod->containers[0];
        assert_true(c->lifecycle.post_start_set && c->lifecycle.pre_stop_set);
        assert_int_equal(c->lifecycle.post_start.kind, POD_HANDLER_EXEC);
        assert_int_equal(c->lifecycle.pre_stop.kind, POD_HANDLER_HTTP_GET);
        assert_string_equal(c->lifecycle.pre_stop.http_get.headers[0].name, "X-A");
        assert_string_equal(c->lifecycle.pre_stop.http_get.headers[0].value, "b");
        pod_free(pod);
        pod = decode_ok(HDR "    lifecycle: {preStop: {sleep: {seconds: 3}}}\n");
        assert_int_equal(pod->containers[0].lifecycle.pre_stop.kind, POD_HANDLER_SLEEP);
        assert_int_equal(pod->containers[0].lifecycle.pre_stop.sleep.seconds, 3);
        pod_free(pod);
}

static void test_validation_messages(void **state) {
        (void) state;
        assert_error(HDR "    livenessProbe: {exec: {command: [a]}, successThreshold: 2}\n",
                     "p.yaml:8: spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1");
        assert_error(HDR "    startupProbe: {exec: {command: [a]}, successThreshold: 3}\n",
                     "p.yaml:8: spec.containers[0].startupProbe.successThreshold: Invalid value: 3: must be 1");
        assert_error(HDR "    readinessProbe: {periodSeconds: 1}\n",
                     "p.yaml:8: spec.containers[0].readinessProbe: Required value: must specify a handler type");
        assert_error(HDR "    readinessProbe: {exec: {command: [a]}, tcpSocket: {port: 1}}\n",
                     "p.yaml:8: spec.containers[0].readinessProbe: Forbidden: may not specify more than 1 handler "
                     "type");
        assert_error(HDR "    readinessProbe: {exec: {command: [a]}, timeoutSeconds: -1}\n",
                     "p.yaml:8: spec.containers[0].readinessProbe.timeoutSeconds: Invalid value: -1: must be greater "
                     "than or equal to 0");
        assert_error(HDR "    readinessProbe: {exec: {command: [a]}, terminationGracePeriodSeconds: 0}\n",
                     "p.yaml:8: spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 0: "
                     "must be greater than 0");
        assert_error(HDR "    readinessProbe: {tcpSocket: {port: 70000}}\n",
                     "p.yaml:8: spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: 70000: must be "
                     "between 1 and 65535, inclusive");
        assert_error(HDR "    readinessProbe: {httpGet: {port: 80, scheme: FTP}}\n",
                     "p.yaml:8: spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: \"FTP\": "
                     "supported values: \"HTTP\", \"HTTPS\"");
        assert_error(HDR "    readinessProbe: {exec: {}}\n",
                     "p.yaml:8: spec.containers[0].readinessProbe.exec.command: Required value");
        assert_error(HDR "  initContainers:\n  - name: i\n    image: x:1\n    readinessProbe: {exec: {command: [a]}}\n",
                     "p.yaml:11: spec.initContainers[0].readinessProbe: Forbidden: may not be set for init "
                     "containers without restartPolicy=Always");
        assert_error(HDR "    lifecycle: {postStart: {}}\n",
                     "p.yaml:8: spec.containers[0].lifecycle.postStart: Required value: must specify a handler type");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_hooks),
                cmocka_unit_test(test_validation_messages),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
