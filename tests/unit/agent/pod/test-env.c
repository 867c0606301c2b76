/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/env.c and decode-env.c: env[].valueFrom (fieldRef,
 * resourceFieldRef), the API's validation messages, kubelet's $(VAR)
 * expansion (third_party/forked/golang/expansion/expand_test.go vectors),
 * and ExtractContainerResourceValue's vectors (pkg/api/v1/resource). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"

static Pod *decode(const char *text) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(text, strlen(text), "t.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decoding failed: %s", err.msg);
        return pod;
}

#define HEAD                                                                                 \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: prod\n  uid: u-1\n" \
        "  labels: {app: nginx, tier: front}\n  annotations: {note: hello}\n"                \
        "spec:\n  serviceAccountName: robot\n  containers:\n  - name: c\n    image: busybox\n"

static void expect_err(const char *env_yaml, const char *want) {
        char text[4096];
        Pod *pod = NULL;
        CubError err = {};
        int r;

        (void) snprintf(text, sizeof(text), HEAD "    env:\n%s", env_yaml);
        r = pod_decode(text, strlen(text), "t.yaml", POD_FORMAT_YAML, &pod, &err);
        if (r >= 0) {
                pod_free(pod);
                fail_msg("decoded unexpectedly: %s", env_yaml);
        }
        assert_int_equal(r, -EINVAL);
        assert_string_equal(err.msg, want);
}

static const PodEnvContext ctx = {
        .node_name = "edge-1",
        .pod_ip = "10.88.0.5",
        .pod_ips = "10.88.0.5,fd00::5",
        .host_ip = "192.168.1.2",
        .host_ips = "192.168.1.2,fd01::2",
        .alloc_cpu_milli = 3500,
        .alloc_memory = 4 * 1024 * 1024 * 1024LL,
        .alloc_ephemeral_storage = 20 * 1000 * 1000 * 1000LL,
};

static const char *get(char **env, const char *k) {
        const char *v = NULL;

        for (size_t i = 0; env && env[i]; i += 2)
                if (strcmp(env[i], k) == 0)
                        v = env[i + 1];
        if (!v)
                fail_msg("env %s missing", k);
        return v;
}

static void test_field_ref_values(void **state) {
        (void) state;
        Pod *pod =
                decode(HEAD "    env:\n"
                            "    - {name: 'N', valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
                            "    - {name: NS, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: metadata.namespace}}}\n"
                            "    - {name: UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}\n"
                            "    - {name: APP, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['app']\"}}}\n"
                            "    - {name: MISSING, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['x']\"}}}\n"
                            "    - {name: NOTE, valueFrom: {fieldRef: {fieldPath: \"metadata.annotations['note']\"}}}\n"
                            "    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}\n"
                            "    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}\n"
                            "    - {name: HIP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}\n"
                            "    - {name: HIPS, valueFrom: {fieldRef: {fieldPath: status.hostIPs}}}\n"
                            "    - {name: PIP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n"
                            "    - {name: PIPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}\n"
                            "    - {name: GREETING, value: \"$(APP) in $(NS) on $(NODE)\"}\n");
        char **env = NULL;
        CubError err = {};

        assert_int_equal(pod->refused.n, 0);
        assert_int_equal(pod_env_resolve(pod, &pod->containers[0], &ctx, &env, &err), 0);
        assert_string_equal(get(env, "N"), "web");
        assert_string_equal(get(env, "NS"), "prod");
        assert_string_equal(get(env, "UID"), "u-1");
        assert_string_equal(get(env, "APP"), "nginx");
        assert_string_equal(get(env, "MISSING"), "");
        assert_string_equal(get(env, "NOTE"), "hello");
        assert_string_equal(get(env, "NODE"), "edge-1");
        assert_string_equal(get(env, "SA"), "robot");
        assert_string_equal(get(env, "HIP"), "192.168.1.2");
        assert_string_equal(get(env, "HIPS"), "192.168.1.2,fd01::2");
        assert_string_equal(get(env, "PIP"), "10.88.0.5");
        assert_string_equal(get(env, "PIPS"), "10.88.0.5,fd00::5");
        assert_string_equal(get(env, "GREETING"), "nginx in prod on edge-1");
        assert_string_equal(env[0], "N"); /* manifest order */
        pod_env_strv_free(env);
        pod_free(pod);
}

static void test_field_ref_errors(void **state) {
        (void) state;
        expect_err("    - {name: X, valueFrom: {fieldRef: {fieldPath: spec.restartPolicy}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "
                   "\"spec.restartPolicy\": supported values: \"metadata.name\", \"metadata.namespace\", "
                   "\"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", "
                   "\"status.hostIPs\", \"status.podIP\", \"status.podIPs\"");
        expect_err("    - {name: X, valueFrom: {fieldRef: {fieldPath: metadata.labels}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "
                   "\"metadata.labels\": supported values: \"metadata.name\", \"metadata.namespace\", "
                   "\"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", "
                   "\"status.hostIPs\", \"status.podIP\", \"status.podIPs\"");
        expect_err("    - {name: X, valueFrom: {fieldRef: {fieldPath: spec.bogus}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: "
                   "\"spec.bogus\": error converting fieldPath: field label not supported: spec.bogus");
        expect_err("    - {name: X, valueFrom: {fieldRef: {apiVersion: v2, fieldPath: metadata.name}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: "
                   "\"metadata.name\": error converting fieldPath: unsupported pod version: v2");
        expect_err("    - {name: X, valueFrom: {fieldRef: {fieldPath: \"spec.nodeName['a']\"}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: "
                   "\"spec.nodeName['a']\": error converting fieldPath: field label does not support subscript: "
                   "spec.nodeName['a']");
        expect_err("    - {name: X, valueFrom: {fieldRef: {}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Required value");
        expect_err("    - {name: X, value: 'y', valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified "
                   "when `value` is not empty");
        expect_err("    - {name: X, valueFrom: {}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: "
                   "`fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`");
        expect_err("    - {name: X, valueFrom: {fieldRef: {fieldPath: metadata.name}, resourceFieldRef: {resource: "
                   "limits.cpu}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not have more than one "
                   "field specified at a time");
        expect_err("    - {name: X, valueFrom: {resourceFieldRef: {resource: limits.gpu}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: Unsupported value: "
                   "\"limits.gpu\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", "
                   "\"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"");
        expect_err("    - {name: X, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 100m}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "
                   "\"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource");
        expect_err("    - {name: X, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 2Mi}}}\n",
                   "t.yaml:15: spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "
                   "\"requests.memory\": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, "
                   "1Pi, 1Ei are supported with the memory resource");
}

static void test_static_refs_refused(void **state) {
        (void) state;
        /* configMapKeyRef decodes but the field table refuses it (static pods) */
        Pod *pod = decode(HEAD "    env:\n    - {name: X, valueFrom: {configMapKeyRef: {name: a, key: b}}}\n"
                               "    envFrom:\n    - configMapRef: {name: a}\n");
        char *m = pod_field_notes_join(&pod->refused, NULL);

        assert_string_equal(m, "spec.containers[0].env[0].valueFrom.configMapKeyRef: static pods may not reference "
                               "configmaps; spec.containers[0].envFrom[0].configMapRef: static pods may not reference "
                               "configmaps");
        free(m);
        pod_free(pod);
}

/* ExtractContainerResourceValue's vectors (pkg/api/v1/resource/helpers_test.go) */
static void rv(const char *limits, const char *requests, const char *resource, const char *divisor, const char *want) {
        char text[2048];
        Pod *pod;
        CubQuantity d = {};
        char *v = NULL;
        CubError err = {};

        (void) snprintf(text, sizeof(text), HEAD "    resources: {limits: {%s}, requests: {%s}}\n", limits, requests);
        pod = decode(text);
        if (divisor)
                assert_int_equal(cub_quantity_parse(divisor, &d, &err), 0);
        assert_int_equal(pod_env_resource_value(&pod->containers[0], resource, d, &ctx, &v, &err), 0);
        if (strcmp(v, want) != 0)
                fail_msg("%s (limits {%s} requests {%s} divisor %s): got %s, want %s", resource, limits, requests,
                         divisor ? divisor : "-", v, want);
        free(v);
        pod_free(pod);
}

static void test_resource_values(void **state) {
        (void) state;
        rv("cpu: 9", "", "limits.cpu", NULL, "9");
        rv("", "", "requests.cpu", NULL, "0");
        rv("", "cpu: 8", "requests.cpu", NULL, "8");
        rv("", "cpu: 100m", "requests.cpu", NULL, "1");
        rv("", "cpu: 1200m", "requests.cpu", "100m", "12");
        rv("", "memory: 100Mi", "requests.memory", NULL, "104857600");
        rv("", "memory: 100Mi", "requests.memory", "1Mi", "100");
        rv("memory: 10Gi", "", "limits.memory", "1Gi", "10");
        rv("cpu: 1500m", "", "limits.cpu", "1m", "1500");
        rv("cpu: 1500m", "", "limits.cpu", "1", "2");         /* rounds up */
        rv("cpu: 250m", "", "requests.cpu", "1m", "250");     /* requests defaulted from limits */
        rv("memory: 1Gi", "", "limits.memory", "1M", "1074"); /* 1073741824 / 1e6, up */
        rv("ephemeral-storage: 2Gi", "", "limits.ephemeral-storage", "1Mi", "2048");
        /* limits default to node allocatable (MergeContainerResourceLimits) */
        rv("", "", "limits.cpu", NULL, "4");
        rv("", "", "limits.cpu", "1m", "3500");
        rv("", "", "limits.memory", "1Mi", "4096");
        rv("", "", "limits.ephemeral-storage", "1G", "20");
        rv("", "", "requests.memory", NULL, "0");
}

static void test_resource_container_name(void **state) {
        (void) state;
        Pod *pod = decode(HEAD
                          "    resources: {limits: {memory: 64Mi}}\n"
                          "    env:\n"
                          "    - {name: MINE, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}\n"
                          "    - {name: SIDE, valueFrom: {resourceFieldRef: {containerName: side, resource: "
                          "limits.cpu, divisor: 1m}}}\n"
                          "  - name: side\n    image: busybox\n    resources: {limits: {cpu: 250m}}\n"
                          "    env:\n"
                          "    - {name: NOPE, valueFrom: {resourceFieldRef: {containerName: ghost, resource: "
                          "limits.cpu}}}\n");
        char **env = NULL;
        CubError err = {};

        assert_int_equal(pod_env_resolve(pod, &pod->containers[0], &ctx, &env, &err), 0);
        assert_string_equal(get(env, "MINE"), "64");
        assert_string_equal(get(env, "SIDE"), "250");
        pod_env_strv_free(env);
        assert_int_equal(pod_env_resolve(pod, &pod->containers[1], &ctx, &env, &err), -ENOENT);
        assert_string_equal(err.msg, "env 'NOPE': container ghost not found");
        pod_free(pod);
}

/* kubelet_resources.go defaultPodLimitsForDownwardAPI (1.34): a limit the
 * container does not set is the pod-level one, else node allocatable */
static void test_resource_pod_level_limits(void **state) {
        Pod *pod = decode(
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n"
                "  resources: {limits: {cpu: 1500m, memory: 1Gi}}\n  containers:\n  - name: c\n    image: busybox\n"
                "    resources: {limits: {memory: 64Mi}}\n    env:\n"
                "    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}\n"
                "    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}\n"
                "    - {name: SIDE, valueFrom: {resourceFieldRef: {containerName: side, resource: "
                "limits.memory, divisor: 1Mi}}}\n"
                "    - {name: DISK, valueFrom: {resourceFieldRef: {resource: limits.ephemeral-storage, "
                "divisor: 1G}}}\n"
                "  - name: side\n    image: busybox\n");
        char **env = NULL;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_env_resolve(pod, &pod->containers[0], &ctx, &env, &err), 0);
        assert_string_equal(get(env, "CPU"), "1500");  /* the pod's */
        assert_string_equal(get(env, "MEM"), "64");    /* its own */
        assert_string_equal(get(env, "SIDE"), "1024"); /* the pod's, for the other container */
        assert_string_equal(get(env, "DISK"), "20");   /* not a pod-level resource: node allocatable */
        pod_env_strv_free(env);
        pod_free(pod);
        /* pod-level requests only: node allocatable */
        pod = decode("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n"
                     "  resources: {requests: {cpu: 1}}\n  containers:\n  - name: c\n    image: busybox\n    env:\n"
                     "    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}\n");
        assert_int_equal(pod_env_resolve(pod, &pod->containers[0], &ctx, &env, &err), 0);
        assert_string_equal(get(env, "CPU"), "3500");
        pod_env_strv_free(env);
        pod_free(pod);
}

/* expand_test.go TestMapping */
static void test_expand_vectors(void **state) {
        (void) state;
        const char *ctxv[] = { "VAR_A", "A", "VAR_B", "B", "VAR_C", "C", "VAR_REF", "$(VAR_A)", "VAR_EMPTY", "", NULL };
        const char *const *maps[] = { ctxv };
        static const char *const cases[][2] = {
                { "$(VAR_A)", "A" },
                { "$(VAR_A)-$(VAR_A)", "A-A" },
                { "$(VAR_A)-1", "A-1" },
                { "___$(VAR_B)___", "___B___" },
                { "___$(VAR_C)", "___C" },
                { "$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C" },
                { "$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A" },
                { "$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)" },
                { "f000-$$VAR_A", "f000-$VAR_A" },
                { "foo\\$(VAR_C)bar", "foo\\Cbar" },
                { "foo\\\\$(VAR_C)bar", "foo\\\\Cbar" },
                { "foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar" },
                { "$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))" },
                { "$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)" },
                { "$(VAR_REF)", "$(VAR_A)" },
                { "%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%" },
                { "foo$(VAR_EMPTY)bar", "foobar" },
                { "foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!" },
                { "f00__(VAR_A)__", "f00__(VAR_A)__" },
                { "$?_boo_$!", "$?_boo_$!" },
                { "$VAR_A", "$VAR_A" },
                { "$(VAR_DNE)", "$(VAR_DNE)" },
                { "$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)" },
                { "$$$$$$(VAR_A)", "$$$(VAR_A)" },
                { "$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)" },
                { "$$$$$$$(VAR_A)", "$$$A" },
                { "$VAR_A)", "$VAR_A)" },
                { "${VAR_A}", "${VAR_A}" },
                { "$(VAR_B)_______$(A", "B_______$(A" },
                { "$(VAR_C)_______$(", "C_______$(" },
                { "$(VAR_A)foobar$", "Afoobar$" },
                { "foo-\\$(VAR_A", "foo-\\$(VAR_A" },
                { "--$($($($($--", "--$($($($($--" },
                { "$($($($($--foo$(", "$($($($($--foo$(" },
                { "foo0--$($($($(", "foo0--$($($($(" },
                { "$(foo$$var)", "$(foo$$var)" },
                { "\n", "\n" },
                { "", "" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *got = pod_env_expand(cases[i][0], maps, 1);

                assert_non_null(got);
                if (strcmp(got, cases[i][1]) != 0)
                        fail_msg("Expand(%s): got %s, want %s", cases[i][0], got, cases[i][1]);
                free(got);
        }
}

/* TestMapReference: each value sees the env before it; a later one stays literal */
static void test_env_order_and_command(void **state) {
        (void) state;
        Pod *pod = decode(HEAD "    command: [sh, -c, \"echo $(BLU) $$(FOO) $(NOPE)\"]\n"
                               "    args: [\"$(ZOO)\", \"$(LATER)\"]\n"
                               "    env:\n"
                               "    - {name: FOO, value: bar}\n"
                               "    - {name: ZOO, value: $(FOO)-1}\n"
                               "    - {name: BLU, value: $(ZOO)-2}\n"
                               "    - {name: EARLY, value: $(LATER)}\n"
                               "    - {name: LATER, value: late}\n"
                               "    - {name: FOO, value: again}\n"
                               "    - {name: EMPTY}\n");
        char **env = NULL, **cmd = NULL, **args = NULL;
        CubError err = {};

        assert_int_equal(pod_env_resolve(pod, &pod->containers[0], &ctx, &env, &err), 0);
        assert_string_equal(env[3], "bar-1");
        assert_string_equal(env[5], "bar-1-2");
        assert_string_equal(env[7], "$(LATER)");
        assert_string_equal(env[13], "");
        assert_null(env[14]);
        assert_int_equal(pod_env_expand_command(&pod->containers[0], env, &cmd, &args, &err), 0);
        assert_string_equal(cmd[0], "sh");
        assert_string_equal(cmd[2], "echo bar-1-2 $(FOO) $(NOPE)");
        assert_null(cmd[3]);
        assert_string_equal(args[0], "bar-1");
        assert_string_equal(args[1], "late");
        pod_env_strv_free(cmd);
        pod_env_strv_free(args);
        pod_env_strv_free(env);
        pod_free(pod);

        /* no command: both stay NULL (the image's) */
        pod = decode(HEAD);
        assert_int_equal(pod_env_expand_command(&pod->containers[0], NULL, &cmd, &args, &err), 0);
        assert_null(cmd);
        assert_null(args);
        pod_free(pod);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_field_ref_values),        cmocka_unit_test(test_field_ref_errors),
                cmocka_unit_test(test_static_refs_refused),     cmocka_unit_test(test_resource_values),
                cmocka_unit_test(test_resource_container_name), cmocka_unit_test(test_resource_pod_level_limits),
                cmocka_unit_test(test_expand_vectors),          cmocka_unit_test(test_env_order_and_command),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
