/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/decode.c, dec.c, tree.c, defaults.c: pod_decode() on in-memory
 * JSON and YAML manifests: every field of pod.h, API defaulting, fields
 * the decoder does not read, and error messages "<source>:<line>: <field path>: <what>". */
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

#include "agent/pod/pod.h"

/* ---- helpers ------------------------------------------------------------ */

static Pod *decode_fmt(const char *source, const char *text, PodFormat fmt) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(text, strlen(text), source, fmt, &pod, &err) < 0)
                fail_msg("decoding %s failed: %s", source, err.msg);
        assert_non_null(pod);
        return pod;
}

static Pod *decode(const char *source, const char *text) {
        return decode_fmt(source, text, POD_FORMAT_AUTO);
}

#define DECODE_ERR(source, text, ecode, want)                                                   \
        do {                                                                                    \
                Pod *p_ = NULL;                                                                 \
                CubError e_ = {};                                                               \
                int r_ = pod_decode((text), strlen(text), (source), POD_FORMAT_AUTO, &p_, &e_); \
                if (r_ >= 0) {                                                                  \
                        pod_free(p_);                                                           \
                        fail_msg("%s decoded unexpectedly", (source));                          \
                }                                                                               \
                assert_null(p_);                                                                \
                assert_int_equal(r_, -(ecode));                                                 \
                assert_int_equal(e_.code, (ecode));                                             \
                assert_string_equal(e_.msg, (want));                                            \
        } while (0)

static CubQuantity res(const PodResourceList *l, const char *name) {
        CubQuantity q;

        if (!pod_resource_get(l, name, &q))
                fail_msg("resource %s missing", name);
        return q;
}

#define ASSERT_Q(l, name, u, m)                                                                                      \
        do {                                                                                                         \
                CubQuantity q_ = res((l), (name));                                                                   \
                if (q_.units != (int64_t) (u) || q_.milli != (m))                                                    \
                        fail_msg("%s: got %lld/%u, want %lld/%u", (name), (long long) q_.units, (unsigned) q_.milli, \
                                 (long long) (u), (unsigned) (m));                                                   \
        } while (0)

static const char *map_get(const PodStringMap *m, const char *k) {
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->keys[i], k) == 0)
                        return m->values[i];
        return NULL;
}

/* Lines 1-5 of most YAML vectors below. */
#define HDR "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
/* Lines 1-8: one plain container "a" at line 7. */
#define CTR "  containers:\n  - name: a\n    image: nginx:1\n"
#define MIN HDR CTR

/* ---- every field --------------------------------------------------------- */

static const char full_yaml[] = "apiVersion: v1\n"                                        /* 1 */
                                "kind: Pod\n"                                             /* 2 */
                                "metadata:\n"                                             /* 3 */
                                "  name: web\n"                                           /* 4 */
                                "  namespace: prod\n"                                     /* 5 */
                                "  uid: 11111111-2222-3333-4444-555555555555\n"           /* 6 */
                                "  labels:\n"                                             /* 7 */
                                "    app: web\n"                                          /* 8 */
                                "    tier: front\n"                                       /* 9 */
                                "  annotations:\n"                                        /* 10 */
                                "    note: hello\n"                                       /* 11 */
                                "spec:\n"                                                 /* 12 */
                                "  restartPolicy: OnFailure\n"                            /* 13 */
                                "  terminationGracePeriodSeconds: 45\n"                   /* 14 */
                                "  priorityClassName: system-node-critical\n"             /* 15 */
                                "  preemptionPolicy: Never\n"                             /* 16 */
                                "  nodeName: node-a\n"                                    /* 17 */
                                "  nodeSelector:\n"                                       /* 18 */
                                "    disk: ssd\n"                                         /* 19 */
                                "  affinity:\n"                                           /* 20 */
                                "    nodeAffinity:\n"                                     /* 21 */
                                "      requiredDuringSchedulingIgnoredDuringExecution:\n" /* 22 */
                                "        nodeSelectorTerms:\n"                            /* 23 */
                                "        - matchExpressions:\n"                           /* 24 */
                                "          - key: zone\n"                                 /* 25 */
                                "            operator: In\n"                              /* 26 */
                                "            values: [a, b]\n"                            /* 27 */
                                "          - key: gpu\n"                                  /* 28 */
                                "            operator: Exists\n"                          /* 29 */
                                "          matchFields:\n"                                /* 30 */
                                "          - key: metadata.name\n"                        /* 31 */
                                "            operator: NotIn\n"                           /* 32 */
                                "            values: [bad]\n"                             /* 33 */
                                "        - matchExpressions:\n"                           /* 34 */
                                "          - key: cores\n"                                /* 35 */
                                "            operator: Gt\n"                              /* 36 */
                                "            values: [\"4\"]\n"                           /* 37 */
                                "  tolerations:\n"                                        /* 38 */
                                "  - key: dedicated\n"                                    /* 39 */
                                "    operator: Equal\n"                                   /* 40 */
                                "    value: web\n"                                        /* 41 */
                                "    effect: NoSchedule\n"                                /* 42 */
                                "  - operator: Exists\n"                                  /* 43 */
                                "    effect: NoExecute\n"                                 /* 44 */
                                "    tolerationSeconds: 300\n"                            /* 45 */
                                "  - key: k\n"                                            /* 46 */
                                "  hostNetwork: false\n"                                  /* 47 */
                                "  overhead:\n"                                           /* 48 */
                                "    cpu: 250m\n"                                         /* 49 */
                                "    memory: 120Mi\n"                                     /* 50 */
                                "  securityContext:\n"                                    /* 51 */
                                "    seccompProfile:\n"                                   /* 52 */
                                "      type: RuntimeDefault\n"                            /* 53 */
                                "  initContainers:\n"                                     /* 54 */
                                "  - name: setup\n"                                       /* 55 */
                                "    image: busybox:1.36\n"                               /* 56 */
                                "    command: [sh, -c, \"echo hi\"]\n"                    /* 57 */
                                "  - name: proxy\n"                                       /* 58 */
                                "    image: envoy:v1.30\n"                                /* 59 */
                                "    restartPolicy: Always\n"                             /* 60 */
                                "    resources:\n"                                        /* 61 */
                                "      limits: {cpu: 100m, memory: 64Mi}\n"               /* 62 */
                                "  containers:\n"                                         /* 63 */
                                "  - name: app\n"                                         /* 64 */
                                "    image: registry.example/app:1.0\n"                   /* 65 */
                                "    imagePullPolicy: Always\n"                           /* 66 */
                                "    command: [\"/bin/app\"]\n"                           /* 67 */
                                "    args: [\"--port\", \"8080\"]\n"                      /* 68 */
                                "    workingDir: /srv\n"                                  /* 69 */
                                "    env:\n"                                              /* 70 */
                                "    - name: A\n"                                         /* 71 */
                                "      value: \"1\"\n"                                    /* 72 */
                                "    - name: B\n"                                         /* 73 */
                                "      valueFrom:\n"                                      /* 74 */
                                "        fieldRef: {fieldPath: metadata.name}\n"          /* 75 */
                                "    ports:\n"                                            /* 76 */
                                "    - name: http\n"                                      /* 77 */
                                "      containerPort: 8080\n"                             /* 78 */
                                "      hostPort: 80\n"                                    /* 79 */
                                "      hostIP: 127.0.0.1\n"                               /* 80 */
                                "    - containerPort: 53\n"                               /* 81 */
                                "      protocol: UDP\n"                                   /* 82 */
                                "    resources:\n"                                        /* 83 */
                                "      requests:\n"                                       /* 84 */
                                "        cpu: 500m\n"                                     /* 85 */
                                "        memory: 256Mi\n"                                 /* 86 */
                                "      limits:\n"                                         /* 87 */
                                "        cpu: \"1\"\n"                                    /* 88 */
                                "        memory: 512Mi\n"                                 /* 89 */
                                "        example.com/foo: 2\n"                            /* 90 */
                                "    securityContext:\n"                                  /* 91 */
                                "      seccompProfile:\n"                                 /* 92 */
                                "        type: Localhost\n"                               /* 93 */
                                "        localhostProfile: profiles/app.json\n"           /* 94 */
                                "  - name: sidecar-less\n"                                /* 95 */
                                "    image: busybox\n";                                   /* 96 */

static void check_full_pod(const Pod *pod) {
        const PodContainer *c;
        const PodNodeSelectorTerm *t;

        /* metadata */
        assert_string_equal(pod->name, "web");
        assert_string_equal(pod->namespace_, "prod");
        assert_string_equal(pod->uid, "11111111-2222-3333-4444-555555555555");
        assert_int_equal(pod->labels.n, 2);
        assert_string_equal(map_get(&pod->labels, "app"), "web");
        assert_string_equal(map_get(&pod->labels, "tier"), "front");
        assert_int_equal(pod->annotations.n, 1);
        assert_string_equal(map_get(&pod->annotations, "note"), "hello");

        /* spec scalars */
        assert_string_equal(pod->restart_policy, "OnFailure");
        assert_true(pod->termination_grace_period_seconds == 45);
        assert_true(pod->termination_grace_period_seconds_set);
        assert_string_equal(pod->priority_class_name, "system-node-critical");
        assert_true(pod->priority_set);
        assert_int_equal(pod->priority, 2000001000);
        assert_string_equal(pod->preemption_policy, "Never");
        assert_string_equal(pod->node_name, "node-a");
        assert_int_equal(pod->node_selector.n, 1);
        assert_string_equal(map_get(&pod->node_selector, "disk"), "ssd");
        assert_false(pod->host_network);

        /* affinity */
        assert_true(pod->affinity_required_set);
        assert_int_equal(pod->n_affinity_terms, 2);
        t = &pod->affinity_terms[0];
        assert_int_equal(t->n_match_expressions, 2);
        assert_string_equal(t->match_expressions[0].key, "zone");
        assert_string_equal(t->match_expressions[0].op, "In");
        assert_int_equal(t->match_expressions[0].values.n, 2);
        assert_string_equal(t->match_expressions[0].values.items[0], "a");
        assert_string_equal(t->match_expressions[0].values.items[1], "b");
        assert_string_equal(t->match_expressions[1].key, "gpu");
        assert_string_equal(t->match_expressions[1].op, "Exists");
        assert_int_equal(t->match_expressions[1].values.n, 0);
        assert_int_equal(t->n_match_fields, 1);
        assert_string_equal(t->match_fields[0].key, "metadata.name");
        assert_string_equal(t->match_fields[0].op, "NotIn");
        assert_string_equal(t->match_fields[0].values.items[0], "bad");
        t = &pod->affinity_terms[1];
        assert_int_equal(t->n_match_expressions, 1);
        assert_int_equal(t->n_match_fields, 0);
        assert_string_equal(t->match_expressions[0].op, "Gt");
        assert_string_equal(t->match_expressions[0].values.items[0], "4");

        /* tolerations; operator defaults to Equal */
        assert_int_equal(pod->n_tolerations, 3);
        assert_string_equal(pod->tolerations[0].key, "dedicated");
        assert_string_equal(pod->tolerations[0].op, "Equal");
        assert_string_equal(pod->tolerations[0].value, "web");
        assert_string_equal(pod->tolerations[0].effect, "NoSchedule");
        assert_false(pod->tolerations[0].toleration_seconds_set);
        assert_null(pod->tolerations[1].key);
        assert_string_equal(pod->tolerations[1].op, "Exists");
        assert_string_equal(pod->tolerations[1].effect, "NoExecute");
        assert_true(pod->tolerations[1].toleration_seconds_set);
        assert_true(pod->tolerations[1].toleration_seconds == 300);
        assert_string_equal(pod->tolerations[2].key, "k");
        assert_string_equal(pod->tolerations[2].op, "Equal");
        assert_null(pod->tolerations[2].effect);

        /* overhead, pod seccomp */
        assert_int_equal(pod->overhead.n, 2);
        ASSERT_Q(&pod->overhead, "cpu", 0, 250);
        ASSERT_Q(&pod->overhead, "memory", 125829120, 0);
        assert_string_equal(pod->seccomp.type, "RuntimeDefault");
        assert_null(pod->seccomp.localhost_profile);

        /* init containers */
        assert_int_equal(pod->n_init_containers, 2);
        c = &pod->init_containers[0];
        assert_string_equal(c->name, "setup");
        assert_string_equal(c->image, "busybox:1.36");
        assert_string_equal(c->image_pull_policy, "IfNotPresent");
        assert_int_equal(c->command.n, 3);
        assert_string_equal(c->command.items[0], "sh");
        assert_string_equal(c->command.items[1], "-c");
        assert_string_equal(c->command.items[2], "echo hi");
        assert_null(c->restart_policy);
        assert_false(pod_container_is_sidecar(c));
        c = &pod->init_containers[1];
        assert_string_equal(c->name, "proxy");
        assert_string_equal(c->restart_policy, "Always");
        assert_true(pod_container_is_sidecar(c));
        ASSERT_Q(&c->limits, "cpu", 0, 100);
        ASSERT_Q(&c->requests, "cpu", 0, 100);
        ASSERT_Q(&c->requests, "memory", 67108864, 0);

        /* app containers */
        assert_int_equal(pod->n_containers, 2);
        c = &pod->containers[0];
        assert_string_equal(c->name, "app");
        assert_string_equal(c->image, "registry.example/app:1.0");
        assert_string_equal(c->image_pull_policy, "Always");
        assert_int_equal(c->command.n, 1);
        assert_string_equal(c->command.items[0], "/bin/app");
        assert_int_equal(c->args.n, 2);
        assert_string_equal(c->args.items[0], "--port");
        assert_string_equal(c->args.items[1], "8080");
        assert_string_equal(c->working_dir, "/srv");
        assert_int_equal(c->n_env, 2);
        assert_string_equal(c->env[0].name, "A");
        assert_string_equal(c->env[0].value, "1");
        assert_string_equal(c->env[1].name, "B");
        assert_null(c->env[1].value);
        assert_int_equal(c->n_ports, 2);
        assert_string_equal(c->ports[0].name, "http");
        assert_int_equal(c->ports[0].container_port, 8080);
        assert_int_equal(c->ports[0].host_port, 80);
        assert_string_equal(c->ports[0].host_ip, "127.0.0.1");
        assert_string_equal(c->ports[0].protocol, "TCP");
        assert_null(c->ports[1].name);
        assert_int_equal(c->ports[1].container_port, 53);
        assert_int_equal(c->ports[1].host_port, 0);
        assert_string_equal(c->ports[1].protocol, "UDP");
        /* requests keep manifest order; defaulted ones follow */
        assert_int_equal(c->requests.n, 3);
        assert_string_equal(c->requests.items[0].name, "cpu");
        assert_string_equal(c->requests.items[1].name, "memory");
        assert_string_equal(c->requests.items[2].name, "example.com/foo");
        ASSERT_Q(&c->requests, "cpu", 0, 500);
        ASSERT_Q(&c->requests, "memory", 268435456, 0);
        ASSERT_Q(&c->requests, "example.com/foo", 2, 0);
        assert_int_equal(c->limits.n, 3);
        ASSERT_Q(&c->limits, "cpu", 1, 0);
        ASSERT_Q(&c->limits, "memory", 536870912, 0);
        assert_null(c->restart_policy);
        assert_string_equal(c->seccomp.type, "Localhost");
        assert_string_equal(c->seccomp.localhost_profile, "profiles/app.json");
        c = &pod->containers[1];
        assert_string_equal(c->name, "sidecar-less");
        assert_string_equal(c->image_pull_policy, "Always");
        assert_int_equal(c->requests.n, 0);
        assert_int_equal(c->limits.n, 0);
        assert_null(c->seccomp.type);
        assert_int_equal(c->command.n, 0);
        assert_null(c->working_dir);
}

static void test_full_pod_yaml(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("web.yaml", full_yaml);
        check_full_pod(pod);
        pod_free(pod);
}

static const char full_json[] =
        "{\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n"
        " \"metadata\": {\"name\": \"web\", \"namespace\": \"prod\",\n"
        "   \"uid\": \"11111111-2222-3333-4444-555555555555\",\n"
        "   \"labels\": {\"app\": \"web\", \"tier\": \"front\"}, \"annotations\": {\"note\": \"hello\"}},\n"
        " \"spec\": {\"restartPolicy\": \"OnFailure\", \"terminationGracePeriodSeconds\": 45,\n"
        "   \"priorityClassName\": \"system-node-critical\", \"preemptionPolicy\": \"Never\",\n"
        "   \"nodeName\": \"node-a\", \"nodeSelector\": {\"disk\": \"ssd\"},\n"
        "   \"affinity\": {\"nodeAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": {\n"
        "     \"nodeSelectorTerms\": [\n"
        "       {\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": [\"a\", \"b\"]},\n"
        "                             {\"key\": \"gpu\", \"operator\": \"Exists\"}],\n"
        "        \"matchFields\": [{\"key\": \"metadata.name\", \"operator\": \"NotIn\", \"values\": [\"bad\"]}]},\n"
        "       {\"matchExpressions\": [{\"key\": \"cores\", \"operator\": \"Gt\", \"values\": [\"4\"]}]}]}}},\n"
        "   \"tolerations\": [{\"key\": \"dedicated\", \"operator\": \"Equal\", \"value\": \"web\", \"effect\": "
        "\"NoSchedule\"},\n"
        "     {\"operator\": \"Exists\", \"effect\": \"NoExecute\", \"tolerationSeconds\": 300}, {\"key\": \"k\"}],\n"
        "   \"hostNetwork\": false, \"overhead\": {\"cpu\": \"250m\", \"memory\": \"120Mi\"},\n"
        "   \"securityContext\": {\"seccompProfile\": {\"type\": \"RuntimeDefault\"}},\n"
        "   \"initContainers\": [{\"name\": \"setup\", \"image\": \"busybox:1.36\", \"command\": [\"sh\", \"-c\", "
        "\"echo hi\"]},\n"
        "     {\"name\": \"proxy\", \"image\": \"envoy:v1.30\", \"restartPolicy\": \"Always\",\n"
        "      \"resources\": {\"limits\": {\"cpu\": \"100m\", \"memory\": \"64Mi\"}}}],\n"
        "   \"containers\": [{\"name\": \"app\", \"image\": \"registry.example/app:1.0\", \"imagePullPolicy\": "
        "\"Always\",\n"
        "     \"command\": [\"/bin/app\"], \"args\": [\"--port\", \"8080\"], \"workingDir\": \"/srv\",\n"
        "     \"env\": [{\"name\": \"A\", \"value\": \"1\"}, {\"name\": \"B\", \"valueFrom\": {\"fieldRef\": "
        "{\"fieldPath\": \"metadata.name\"}}}],\n"
        "     \"ports\": [{\"name\": \"http\", \"containerPort\": 8080, \"hostPort\": 80, \"hostIP\": "
        "\"127.0.0.1\"},\n"
        "                {\"containerPort\": 53, \"protocol\": \"UDP\"}],\n"
        "     \"resources\": {\"requests\": {\"cpu\": \"500m\", \"memory\": \"256Mi\"},\n"
        "                   \"limits\": {\"cpu\": 1, \"memory\": \"512Mi\", \"example.com/foo\": 2}},\n"
        "     \"securityContext\": {\"seccompProfile\": {\"type\": \"Localhost\", \"localhostProfile\": "
        "\"profiles/app.json\"}}},\n"
        "    {\"name\": \"sidecar-less\", \"image\": \"busybox\"}]}}\n";

static void test_full_pod_json(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("web.json", full_json);
        check_full_pod(pod);
        pod_free(pod);
}

static void test_format_auto_and_forced(void **state) {
        Pod *pod;

        (void) state;
        /* a leading '{' (after blanks) means JSON whatever the name */
        pod = decode("manifest", "\n  \t{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"j\"},"
                                 "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\"}]}}");
        assert_string_equal(pod->name, "j");
        pod_free(pod);
        /* JSON is YAML: forcing YAML on JSON text works too */
        pod = decode_fmt("x.json", full_json, POD_FORMAT_YAML);
        check_full_pod(pod);
        pod_free(pod);
        /* a ".json" name means JSON even when the text is YAML: error */
        DECODE_ERR("p.json", MIN, EINVAL, "p.json:1:10: invalid JSON: '[' or '{' expected near 'apiVersion'");
}

/* ---- defaults ------------------------------------------------------------ */

static void test_defaults(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("min.yaml", MIN);
        assert_string_equal(pod->name, "p");
        assert_string_equal(pod->namespace_, "default");
        assert_null(pod->uid);
        assert_string_equal(pod->restart_policy, "Always");
        assert_true(pod->termination_grace_period_seconds == 30);
        assert_false(pod->termination_grace_period_seconds_set);
        assert_string_equal(pod->preemption_policy, "PreemptLowerPriority");
        assert_false(pod->priority_set);
        assert_int_equal(pod->priority, 0);
        assert_null(pod->priority_class_name);
        assert_null(pod->node_name);
        assert_false(pod->host_network);
        assert_false(pod->affinity_required_set);
        assert_int_equal(pod->n_affinity_terms, 0);
        assert_int_equal(pod->n_tolerations, 0);
        assert_int_equal(pod->n_init_containers, 0);
        assert_int_equal(pod->overhead.n, 0);
        assert_int_equal(pod->labels.n, 0);
        assert_null(pod->seccomp.type);
        assert_int_equal(pod->n_containers, 1);
        assert_string_equal(pod->containers[0].image_pull_policy, "IfNotPresent");
        pod_free(pod);
}

static void test_empty_namespace_and_zero_grace(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("ns.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: \"\"\n"
                                "spec:\n  terminationGracePeriodSeconds: 0\n"
                                "  containers:\n  - name: a\n    image: nginx:1\n");
        assert_string_equal(pod->namespace_, "default");
        assert_true(pod->termination_grace_period_seconds == 0);
        assert_true(pod->termination_grace_period_seconds_set);
        pod_free(pod);
}

static const char *pull_policy_for(const char *image, char *out, size_t size) {
        char text[512];
        Pod *pod;

        (void) snprintf(text, sizeof(text), HDR "  containers:\n  - name: a\n    image: \"%s\"\n", image);
        pod = decode("pull.yaml", text);
        (void) snprintf(out, size, "%s", pod->containers[0].image_pull_policy);
        pod_free(pod);
        return out;
}

static void test_image_pull_policy_defaults(void **state) {
        char b[64];

        (void) state;
        assert_string_equal(pull_policy_for("nginx", b, sizeof(b)), "Always");
        assert_string_equal(pull_policy_for("nginx:latest", b, sizeof(b)), "Always");
        assert_string_equal(pull_policy_for("nginx:1.25", b, sizeof(b)), "IfNotPresent");
        assert_string_equal(pull_policy_for("docker.io/library/nginx", b, sizeof(b)), "Always");
        assert_string_equal(pull_policy_for("registry:5000/nginx", b, sizeof(b)), "Always");
        assert_string_equal(pull_policy_for("registry:5000/nginx:1.0", b, sizeof(b)), "IfNotPresent");
        assert_string_equal(pull_policy_for("registry:5000/team/nginx:latest", b, sizeof(b)), "Always");
        assert_string_equal(pull_policy_for("nginx@sha256:"
                                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                            b, sizeof(b)),
                            "IfNotPresent");
        assert_string_equal(pull_policy_for("nginx:1.25@sha256:"
                                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                            b, sizeof(b)),
                            "IfNotPresent");
}

static void test_image_pull_policy_latest_with_digest(void **state) {
        char b[64];

        (void) state;
        /* SetDefaults_Container: ParseImageName gives tag "latest" (the digest
         * does not clear the tag), so the policy is Always. */
        assert_string_equal(pull_policy_for("nginx:latest@sha256:"
                                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                            b, sizeof(b)),
                            "Always");
}

static void test_image_pull_policy_explicit_kept(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("pull.yaml", HDR "  containers:\n  - name: a\n    image: nginx\n    imagePullPolicy: Never\n"
                                      "  - name: b\n    image: nginx:1\n    imagePullPolicy: Always\n");
        assert_string_equal(pod->containers[0].image_pull_policy, "Never");
        assert_string_equal(pod->containers[1].image_pull_policy, "Always");
        pod_free(pod);
}

static void test_requests_default_from_limits(void **state) {
        Pod *pod;
        const PodContainer *c;

        (void) state;
        pod = decode("req.yaml", HDR "  containers:\n  - name: a\n    image: nginx:1\n    resources:\n"
                                     "      requests:\n        cpu: 250m\n"
                                     "      limits:\n        cpu: 500m\n        memory: 1Gi\n"
                                     "        ephemeral-storage: 2Gi\n");
        c = &pod->containers[0];
        assert_int_equal(c->requests.n, 3);
        ASSERT_Q(&c->requests, "cpu", 0, 250); /* an explicit request is kept */
        ASSERT_Q(&c->requests, "memory", 1073741824, 0);
        ASSERT_Q(&c->requests, "ephemeral-storage", 2147483648LL, 0);
        assert_int_equal(c->limits.n, 3);
        pod_free(pod);
}

static void test_explicit_zero_request_not_defaulted(void **state) {
        Pod *pod;
        const PodContainer *c;

        (void) state;
        pod = decode("zero.yaml", HDR "  containers:\n  - name: a\n    image: nginx:1\n    resources:\n"
                                      "      requests:\n        cpu: \"0\"\n      limits:\n        cpu: \"2\"\n");
        c = &pod->containers[0];
        assert_int_equal(c->requests.n, 1);
        ASSERT_Q(&c->requests, "cpu", 0, 0);
        ASSERT_Q(&c->limits, "cpu", 2, 0);
        pod_free(pod);
}

static void test_protocol_defaults_to_tcp(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("ports.yaml", HDR "  initContainers:\n  - name: i\n    image: x:1\n    ports:\n"
                                       "    - containerPort: 1\n"
                                       "  containers:\n  - name: a\n    image: x:1\n    ports:\n"
                                       "    - containerPort: 80\n    - containerPort: 81\n      protocol: SCTP\n");
        assert_string_equal(pod->init_containers[0].ports[0].protocol, "TCP");
        assert_string_equal(pod->containers[0].ports[0].protocol, "TCP");
        assert_string_equal(pod->containers[0].ports[1].protocol, "SCTP");
        assert_int_equal(pod->containers[0].ports[0].host_port, 0); /* no hostNetwork: no default */
        pod_free(pod);
}

static void test_host_network_defaults_host_port(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("hn.yaml", HDR "  hostNetwork: true\n"
                                    "  initContainers:\n  - name: i\n    image: x:1\n    ports:\n"
                                    "    - containerPort: 9000\n"
                                    "  containers:\n  - name: a\n    image: x:1\n    ports:\n"
                                    "    - containerPort: 8080\n    - containerPort: 9090\n      hostPort: 9090\n");
        assert_true(pod->host_network);
        assert_int_equal(pod->init_containers[0].ports[0].host_port, 9000);
        assert_int_equal(pod->containers[0].ports[0].host_port, 8080);
        assert_int_equal(pod->containers[0].ports[1].host_port, 9090);
        pod_free(pod);
}

static void test_priority(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("prio.yaml", HDR "  priorityClassName: system-cluster-critical\n"
                                      "  containers:\n"
                                      "  - name: a\n    image: x:1\n");
        assert_true(pod->priority_set);
        assert_int_equal(pod->priority, 2000000000);
        pod_free(pod);

        /* a user class resolves to nothing; an explicit priority wins */
        pod = decode("prio.yaml", HDR "  priorityClassName: high\n"
                                      "  containers:\n  - name: a\n    image: x:1\n");
        assert_false(pod->priority_set);
        assert_int_equal(pod->priority, 0);
        assert_string_equal(pod->priority_class_name, "high");
        pod_free(pod);

        pod = decode("prio.yaml", HDR "  priorityClassName: high\n  priority: 1000000\n"
                                      "  containers:\n  - name: a\n    image: x:1\n");
        assert_true(pod->priority_set);
        assert_int_equal(pod->priority, 1000000);
        pod_free(pod);

        pod = decode("prio.yaml", HDR "  priority: -5\n  containers:\n  - name: a\n    image: x:1\n");
        assert_true(pod->priority_set);
        assert_int_equal(pod->priority, -5);
        pod_free(pod);
}

/* ---- YAML specifics ------------------------------------------------------ */

/* Fields the decoder does not read decode around; the field table notes
 * each (test-fields.c has the rules). */
static void test_unread_fields_noted(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("unk.yaml",
                     "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
                     "  creationTimestamp: null\n  generateName: x-\n  ownerReferences: [{a: 1}]\n"
                     "spec:\n  dnsPolicy: ClusterFirst\n  volumes: [{name: v, nfs: {server: s, path: /}}]\n"
                     "  containers:\n  - name: a\n    image: x:1\n"
                     "    stdin: true\n"
                     "    resources: {claims: [{name: c}]}\n"
                     "    securityContext: {privileged: true, runAsUser: 0, appArmorProfile: {type: Unconfined}}\n"
                     "status:\n  phase: Running\n");
        assert_string_equal(pod->containers[0].name, "a");
        assert_int_equal(pod->containers[0].requests.n, 0);
        assert_int_equal(pod->refused.n, 3);
        assert_string_equal(pod->refused.items[0].path, "spec.volumes[0].nfs");
        assert_string_equal(pod->refused.items[1].path, "spec.containers[0].resources.claims");
        assert_string_equal(pod->refused.items[2].path, "spec.containers[0].securityContext.appArmorProfile.type");
        assert_true(pod->containers[0].stdin_); /* handed to the runtime */
        assert_int_equal(pod->warnings.n, 3);
        assert_string_equal(pod->warnings.items[0].path, "metadata.generateName");
        assert_string_equal(pod->warnings.items[1].path, "metadata.ownerReferences");
        assert_string_equal(pod->warnings.items[2].path, "status");
        pod_free(pod);
}

static void test_null_fields_are_absent(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("null.yaml", HDR "  nodeName: null\n  initContainers: ~\n  tolerations:\n"
                                      "  overhead: null\n  containers:\n  - name: a\n    image: x:1\n"
                                      "    command: ~\n    resources: {limits: null}\n");
        assert_null(pod->node_name);
        assert_int_equal(pod->n_init_containers, 0);
        assert_int_equal(pod->n_tolerations, 0);
        assert_int_equal(pod->containers[0].command.n, 0);
        assert_int_equal(pod->containers[0].limits.n, 0);
        pod_free(pod);
}

static void test_anchors_and_aliases(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("anchors.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: anchors\n"
                                     "  labels: &labels\n    app: web\n  annotations: *labels\n"
                                     "spec:\n  containers:\n"
                                     "  - name: a\n    image: &img nginx:1.25\n    resources:\n"
                                     "      limits: &res\n        cpu: 250m\n        memory: 64Mi\n"
                                     "      requests: *res\n"
                                     "  - name: b\n    image: *img\n    resources:\n      limits: *res\n");
        assert_string_equal(map_get(&pod->annotations, "app"), "web");
        assert_string_equal(pod->containers[1].image, "nginx:1.25");
        ASSERT_Q(&pod->containers[0].requests, "cpu", 0, 250);
        ASSERT_Q(&pod->containers[1].requests, "memory", 67108864, 0);
        ASSERT_Q(&pod->containers[1].limits, "cpu", 0, 250);
        pod_free(pod);
}

static void test_merge_key(void **state) {
        Pod *pod;

        (void) state;
        /* kubelet reads manifests with go-yaml v2, which applies "<<" merge keys */
        pod = decode("merge.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
                                   "x-defaults: &base\n  image: nginx:1.25\n  imagePullPolicy: Never\n"
                                   "spec:\n  containers:\n  - <<: *base\n    name: a\n");
        assert_string_equal(pod->containers[0].image, "nginx:1.25");
        assert_string_equal(pod->containers[0].image_pull_policy, "Never");
        pod_free(pod);
}

static void test_quoted_and_plain_quantities(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("q.yaml", HDR "  containers:\n  - name: a\n    image: x:1\n    resources:\n      limits:\n"
                                   "        cpu: 1\n        memory: \"1\"\n        ephemeral-storage: 1e3\n"
                                   "        hugepages-2Mi: '2Mi'\n        example.com/a: 0x10\n"
                                   "        example.com/b: 1.0\n        example.com/c: 010\n"
                                   "        example.com/d: '010'\n        example.com/e: 08\n"
                                   "      requests:\n        cpu: 0.5\n        memory: \"1\"\n");
        ASSERT_Q(&pod->containers[0].limits, "cpu", 1, 0);
        ASSERT_Q(&pod->containers[0].limits, "memory", 1, 0);
        ASSERT_Q(&pod->containers[0].limits, "ephemeral-storage", 1000, 0);
        ASSERT_Q(&pod->containers[0].limits, "hugepages-2Mi", 2097152, 0);
        ASSERT_Q(&pod->containers[0].limits, "example.com/a", 16, 0);
        ASSERT_Q(&pod->containers[0].limits, "example.com/b", 1, 0);
        /* a plain leading 0 is octal, as kubelet's YAML 1.1 reader; quoted it is a string */
        ASSERT_Q(&pod->containers[0].limits, "example.com/c", 8, 0);
        ASSERT_Q(&pod->containers[0].limits, "example.com/d", 10, 0);
        ASSERT_Q(&pod->containers[0].limits, "example.com/e", 8, 0);
        ASSERT_Q(&pod->containers[0].requests, "cpu", 0, 500);
        pod_free(pod);
}

static void test_json_number_quantities(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("n.json", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"n\"},"
                               "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\",\"resources\":{"
                               "\"limits\":{\"cpu\":1.5,\"memory\":1e9,\"ephemeral-storage\":1073741824},"
                               "\"requests\":{\"cpu\":0.0001}}}]}}");
        ASSERT_Q(&pod->containers[0].limits, "cpu", 1, 500);
        ASSERT_Q(&pod->containers[0].limits, "memory", 1000000000, 0);
        ASSERT_Q(&pod->containers[0].limits, "ephemeral-storage", 1073741824, 0);
        ASSERT_Q(&pod->containers[0].requests, "cpu", 0, 1);
        pod_free(pod);
}

static void test_quoted_number_name_is_a_string(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("s.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"123\"\n  labels:\n"
                               "    version: \"1.0\"\n    on: !!str true\n"
                               "spec:\n  containers:\n  - name: '1'\n    image: x:1\n");
        assert_string_equal(pod->name, "123");
        assert_string_equal(map_get(&pod->labels, "version"), "1.0");
        /* a plain `on` key is kubelet's boolean key: "true" (sigs.k8s.io/yaml) */
        assert_string_equal(map_get(&pod->labels, "true"), "true");
        assert_string_equal(pod->containers[0].name, "1");
        pod_free(pod);
}

/* kubelet's YAML 1.1 booleans (go-yaml v2's resolve table): unquoted, each
 * is a boolean, so a string field refuses it as kubelet does ("cannot
 * unmarshal bool into ... of type string"); quoted, a string; as a plain
 * key, "true" or "false" */
static void test_yaml11_booleans(void **state) {
        static const char *const forms[] = { "y",    "Y",    "yes",  "Yes",   "YES",   "on",   "On",  "ON",
                                             "n",    "N",    "no",   "No",    "NO",    "off",  "Off", "OFF",
                                             "true", "True", "TRUE", "false", "False", "FALSE" };
        char text[512];

        (void) state;
        for (size_t i = 0; i < sizeof(forms) / sizeof(*forms); i++) {
                Pod *pod = NULL;
                CubError err = {};
                bool truth = strchr("yYoOtT", forms[i][0]) && strcmp(forms[i], "off") != 0 &&
                             strcmp(forms[i], "Off") != 0 && strcmp(forms[i], "OFF") != 0;

                (void) snprintf(text, sizeof(text),
                                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                                "  - name: %s\n    image: x:1\n",
                                forms[i]);
                assert_int_equal(pod_decode(text, strlen(text), "b.yaml", POD_FORMAT_YAML, &pod, &err), -EINVAL);
                assert_string_equal(err.msg,
                                    "b.yaml:6: spec.containers[0].name: Invalid type: expected string, got boolean");
                /* quoted: the string */
                (void) snprintf(text, sizeof(text),
                                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {a: '%s'}\n"
                                "spec:\n  containers:\n  - {name: a, image: 'x:1'}\n",
                                forms[i]);
                if (pod_decode(text, strlen(text), "q.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                        fail_msg("%s quoted: %s", forms[i], err.msg);
                assert_string_equal(map_get(&pod->labels, "a"), forms[i]);
                pod_free(pod);
                /* a plain key */
                (void) snprintf(text, sizeof(text),
                                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {%s: v}\n"
                                "spec:\n  containers:\n  - {name: a, image: 'x:1'}\n",
                                forms[i]);
                if (pod_decode(text, strlen(text), "k.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                        fail_msg("%s as a key: %s", forms[i], err.msg);
                assert_string_equal(map_get(&pod->labels, truth ? "true" : "false"), "v");
                pod_free(pod);
        }
}

static void test_trailing_empty_document(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("doc.yaml", "---\n" MIN "---\n");
        assert_string_equal(pod->name, "p");
        pod_free(pod);
        pod = decode("doc.yaml", MIN "---\n# only a comment\n...\n");
        assert_string_equal(pod->name, "p");
        pod_free(pod);
}

static void test_comments_and_flow_style(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("flow.yaml", "# a static pod\n{apiVersion: v1, kind: Pod, metadata: {name: flow},  # c\n"
                                  " spec: {containers: [{name: a, image: 'x:1', args: [\"a b\", 'c''d']}]}}\n");
        assert_string_equal(pod->name, "flow");
        assert_string_equal(pod->containers[0].args.items[0], "a b");
        assert_string_equal(pod->containers[0].args.items[1], "c'd");
        pod_free(pod);
}

static void test_block_scalars(void **state) {
        Pod *pod;

        (void) state;
        pod = decode("block.yaml", HDR "  containers:\n  - name: a\n    image: x:1\n    command:\n    - sh\n"
                                       "    - -c\n    - |\n      echo one\n      echo two\n    args:\n    - >\n"
                                       "      folded\n      text\n");
        assert_string_equal(pod->containers[0].command.items[2], "echo one\necho two\n");
        assert_string_equal(pod->containers[0].args.items[0], "folded text\n");
        pod_free(pod);
}

/* ---- errors: document level ---------------------------------------------- */

static void test_err_empty_manifest(void **state) {
        (void) state;
        DECODE_ERR("empty.yaml", "", ENODATA, "empty.yaml: empty manifest");
        DECODE_ERR("empty.yaml", "# nothing\n", ENODATA, "empty.yaml: empty manifest");
        DECODE_ERR("empty.yaml", "---\n", ENODATA, "empty.yaml: empty manifest");
        DECODE_ERR("null.yaml", "null\n", ENODATA, "null.yaml: empty manifest");
}

static void test_err_not_an_object(void **state) {
        (void) state;
        DECODE_ERR("list.yaml", "- a\n- b\n", EINVAL,
                   "list.yaml: the manifest must be an object (a v1 Pod), got array");
        DECODE_ERR("s.yaml", "hello\n", EINVAL, "s.yaml: the manifest must be an object (a v1 Pod), got string");
        DECODE_ERR("a.json", "[1]", EINVAL, "a.json: the manifest must be an object (a v1 Pod), got array");
}

static void test_err_second_document(void **state) {
        (void) state;
        DECODE_ERR("two.yaml", MIN "---\n" MIN, EINVAL,
                   "two.yaml:9: a second YAML document starts here; a manifest file holds exactly one pod");
        DECODE_ERR("two.yaml", MIN "---\n---\nfoo: bar\n", EINVAL,
                   "two.yaml:10: a second YAML document starts here; a manifest file holds exactly one pod");
}

static void test_err_yaml_syntax(void **state) {
        (void) state;
        DECODE_ERR("bad.yaml", HDR "  containers: [a, b\n", EINVAL,
                   "bad.yaml:7:1: invalid YAML: did not find expected ',' or ']' while parsing a flow sequence");
        DECODE_ERR("tab.yaml", "apiVersion: v1\n\tkind: Pod\n", EINVAL,
                   "tab.yaml:2:1: invalid YAML: found a tab character that violates indentation while scanning a "
                   "plain scalar");
        DECODE_ERR("indent.yaml", "a:\n  b: 1\n c: 2\n", EINVAL,
                   "indent.yaml:3:2: invalid YAML: did not find expected key while parsing a block mapping");
}

static void test_err_yaml_duplicate_key(void **state) {
        (void) state;
        DECODE_ERR("dup.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  name: q\n", EINVAL,
                   "dup.yaml:5: invalid YAML: duplicate key \"name\"");
}

static void test_err_yaml_unknown_alias(void **state) {
        (void) state;
        DECODE_ERR("alias.yaml", HDR "  containers: *nope\n", EINVAL,
                   "alias.yaml:6:15: invalid YAML: unknown anchor \"nope\"");
}

static void test_err_json_syntax(void **state) {
        (void) state;
        DECODE_ERR("t.json", "{\"apiVersion\": \"v1\",\n \"kind\": }", EINVAL,
                   "t.json:2:10: invalid JSON: unexpected token near '}'");
        DECODE_ERR("dup.json", "{\"a\": 1, \"a\": 2}", EINVAL,
                   "dup.json:1:12: invalid JSON: duplicate object key near '\"a\"'");
}

/* ---- errors: fields (YAML names the line, JSON does not) ---------------- */

static void test_err_json_paths_have_no_line(void **state) {
        (void) state;
        DECODE_ERR(
                "x.json",
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\n"
                "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\",\n"
                "\"resources\":{\"limits\":{\"memory\":\"1.5.5\"}}}]}}",
                EINVAL,
                "x.json: spec.containers[0].resources.limits[memory]: invalid quantity \"1.5.5\": more than one '.'");
        DECODE_ERR("x.json",
                   "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                   "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\"},"
                   "{\"name\":\"a\",\"image\":\"x:1\"}]}}",
                   EINVAL, "x.json: spec.containers[1].name: Duplicate value: \"a\"");
        DECODE_ERR("x.json", "{\"kind\":\"Pod\"}", EINVAL, "x.json: apiVersion: Required value");
}

static void test_load_file(void **state) {
        char path[] = "/tmp/cubelet-test-decode-XXXXXX.yaml";
        char want[128];
        Pod *pod = NULL;
        CubError err = {};
        FILE *f;
        int fd;

        (void) state;
        fd = mkstemps(path, 5);
        assert_true(fd >= 0);
        f = fdopen(fd, "w");
        assert_non_null(f);
        assert_int_equal(fputs(HDR "  containers:\n  - name: a\n", f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(pod_load_file(path, &pod, &err), -EINVAL);
        (void) snprintf(want, sizeof(want), "%s:7: spec.containers[0].image: Required value", path);
        assert_string_equal(err.msg, want);
        assert_null(pod);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(pod_load_file(path, &pod, &err), -ENOENT);
        (void) snprintf(want, sizeof(want), "'%s': No such file or directory", path);
        assert_string_equal(err.msg, want);
        assert_null(pod);
}

static void test_err_missing_api_version_and_kind(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", "kind: Pod\nmetadata:\n  name: p\nspec: {}\n", EINVAL,
                   "x.yaml:1: apiVersion: Required value");
        DECODE_ERR("x.yaml", "apiVersion: v1\nmetadata:\n  name: p\nspec: {}\n", EINVAL,
                   "x.yaml:1: kind: Required value");
        DECODE_ERR("x.yaml", "apiVersion: v2\nkind: Pod\n", EINVAL,
                   "x.yaml:1: apiVersion: Unsupported value: \"v2\": supported values: \"v1\"");
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Deployment\n", EINVAL,
                   "x.yaml:2: kind: Unsupported value: \"Deployment\": supported values: \"Pod\"");
}

static void test_err_missing_metadata_and_spec(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Pod\nspec: {}\n", EINVAL, "x.yaml:1: metadata: Required value");
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n", EINVAL,
                   "x.yaml:1: spec: Required value");
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: a\nspec: {}\n", EINVAL,
                   "x.yaml:4: metadata.name: Required value");
}

static void test_err_name_type(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: 123\n", EINVAL,
                   "x.yaml:4: metadata.name: Invalid type: expected string, got number");
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [a]\n", EINVAL,
                   "x.yaml:4: metadata.name: Invalid type: expected string, got array");
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: true\n", EINVAL,
                   "x.yaml:4: metadata.name: Invalid type: expected string, got boolean");
        DECODE_ERR("x.json", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":1}}", EINVAL,
                   "x.json: metadata.name: Invalid type: expected string, got number");
}

static void test_err_invalid_names(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Web_1\nspec: {}\n", EINVAL,
                   "x.yaml:4: metadata.name: Invalid value: \"Web_1\": a lowercase RFC 1123 subdomain must consist "
                   "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                   "character");
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: Prod\nspec: {}\n", EINVAL,
                   "x.yaml:5: metadata.namespace: Invalid value: \"Prod\": a lowercase RFC 1123 label must consist "
                   "of lower case alphanumeric characters or '-', and must start and end with an alphanumeric "
                   "character");
        DECODE_ERR("x.yaml", HDR "  containers:\n  - name: my.app\n    image: x:1\n", EINVAL,
                   "x.yaml:7: spec.containers[0].name: Invalid value: \"my.app\": a lowercase RFC 1123 label must "
                   "consist of lower case alphanumeric characters or '-', and must start and end with an "
                   "alphanumeric character");
}

/* metadata.name is a DNS-1123 subdomain: 253 characters, parts of any length
 * (the conformance suite's pods are named "termination-message-container"
 * and a UUID: 65 characters, accepted by the API server and by kubelet) */
static void test_long_subdomain_name(void **state) {
        const char *name = "termination-message-containerae6fa08c-1f6e-4d3c-9a3b-0123456789ab";
        char text[1024], big[300];
        Pod *pod;

        (void) state;
        assert_int_equal(strlen(name), 65); /* over a label's 63 */
        snprintf(text, sizeof text,
                 "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: a\n"
                 "    image: x:1\n",
                 name);
        pod = decode("x.yaml", text);
        assert_string_equal(pod->name, name);
        pod_free(pod);

        memset(big, 'a', 254);
        big[254] = '\0';
        snprintf(text, sizeof text, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec: {}\n", big);
        DECODE_ERR("x.yaml", text, EINVAL,
                   "x.yaml:4: metadata.name: Invalid value: \"" /* the name is quoted whole */
                   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                   "aaaaaaa"
                   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                   "aaaaaaa"
                   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": must be no more than 253 characters");
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a..b\nspec: {}\n", EINVAL,
                   "x.yaml:4: metadata.name: Invalid value: \"a..b\": a lowercase RFC 1123 subdomain must consist "
                   "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                   "character");
}

static void test_err_missing_image(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", HDR "  containers:\n  - name: a\n    command: [x]\n", EINVAL,
                   "x.yaml:7: spec.containers[0].image: Required value");
        DECODE_ERR("x.yaml", HDR "  containers:\n  - name: a\n    image: x:1\n  - name: b\n    image: \"\"\n", EINVAL,
                   "x.yaml:9: spec.containers[1].image: Required value");
        DECODE_ERR("x.json",
                   "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                   "\"spec\":{\"containers\":[{\"name\":\"a\"}]}}",
                   EINVAL, "x.json: spec.containers[0].image: Required value");
        DECODE_ERR("/etc/kubernetes/manifests/web.yaml",
                   HDR "  initContainers:\n  - name: i\n  containers:\n  - name: a\n    image: x:1\n", EINVAL,
                   "/etc/kubernetes/manifests/web.yaml:7: spec.initContainers[0].image: Required value");
}

static void test_err_containers_missing_or_empty(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", HDR "  restartPolicy: Always\n", EINVAL, "x.yaml:6: spec.containers: Required value");
        DECODE_ERR("x.yaml", HDR "  containers: []\n", EINVAL, "x.yaml:6: spec.containers: Required value");
        DECODE_ERR("x.yaml", HDR "  containers: {name: a}\n", EINVAL,
                   "x.yaml:6: spec.containers: Invalid type: expected array, got object");
        DECODE_ERR("x.yaml", HDR "  containers:\n  - nginx\n", EINVAL,
                   "x.yaml:7: spec.containers[0]: Invalid type: expected object, got string");
        DECODE_ERR("x.yaml", HDR "  containers:\n  - image: x:1\n", EINVAL,
                   "x.yaml:7: spec.containers[0].name: Required value");
}

static void test_err_enums(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", HDR "  restartPolicy: Sometimes\n" CTR, EINVAL,
                   "x.yaml:6: spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", "
                   "\"OnFailure\", \"Never\"");
        DECODE_ERR("x.yaml", HDR "  preemptionPolicy: Always\n" CTR, EINVAL,
                   "x.yaml:6: spec.preemptionPolicy: Unsupported value: \"Always\": supported values: "
                   "\"PreemptLowerPriority\", \"Never\"");
        DECODE_ERR("x.yaml", MIN "    imagePullPolicy: Sometimes\n", EINVAL,
                   "x.yaml:9: spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported "
                   "values: \"Always\", \"IfNotPresent\", \"Never\"");
        DECODE_ERR("x.yaml", MIN "    ports:\n    - containerPort: 80\n      protocol: HTTP\n", EINVAL,
                   "x.yaml:11: spec.containers[0].ports[0].protocol: Unsupported value: \"HTTP\": supported "
                   "values: \"TCP\", \"UDP\", \"SCTP\"");
}

static void test_err_grace_period(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", HDR "  terminationGracePeriodSeconds: -1\n  containers:\n  - name: a\n    image: x:1\n",
                   EINVAL,
                   "x.yaml:6: spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or "
                   "equal to 0");
        DECODE_ERR("x.yaml", HDR "  terminationGracePeriodSeconds: 30.5\n" CTR, EINVAL,
                   "x.yaml:6: spec.terminationGracePeriodSeconds: Invalid type: expected integer, got number");
        DECODE_ERR("x.yaml", HDR "  terminationGracePeriodSeconds: \"30\"\n" CTR, EINVAL,
                   "x.yaml:6: spec.terminationGracePeriodSeconds: Invalid type: expected integer, got string");
}

/* activeDeadlineSeconds: a positive int32 (the API's range); 0, negative and
 * too large are refused with it; null and absent are none */
static void test_active_deadline(void **state) {
        Pod *p = NULL;
        CubError e = {};
        const char *ok = HDR "  activeDeadlineSeconds: 5\n" CTR, *none = HDR "  activeDeadlineSeconds: null\n" CTR;

        (void) state;
        assert_int_equal(pod_decode(ok, strlen(ok), "x.yaml", POD_FORMAT_AUTO, &p, &e), 0);
        assert_int_equal(p->active_deadline_seconds, 5);
        pod_free(p);
        assert_int_equal(pod_decode(none, strlen(none), "x.yaml", POD_FORMAT_AUTO, &p, &e), 0);
        assert_int_equal(p->active_deadline_seconds, 0);
        pod_free(p);
        assert_int_equal(pod_decode(MIN, strlen(MIN), "x.yaml", POD_FORMAT_AUTO, &p, &e), 0);
        assert_int_equal(p->active_deadline_seconds, 0);
        pod_free(p);
        DECODE_ERR("x.yaml", HDR "  activeDeadlineSeconds: 0\n" CTR, EINVAL,
                   "x.yaml:6: spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
                   "inclusive");
        DECODE_ERR("x.yaml", HDR "  activeDeadlineSeconds: -3\n" CTR, EINVAL,
                   "x.yaml:6: spec.activeDeadlineSeconds: Invalid value: -3: must be between 1 and 2147483647, "
                   "inclusive");
        DECODE_ERR("x.yaml", HDR "  activeDeadlineSeconds: 2147483648\n" CTR, EINVAL,
                   "x.yaml:6: spec.activeDeadlineSeconds: Invalid value: 2147483648: must be between 1 and "
                   "2147483647, inclusive");
}

/* readinessGates: each conditionType a qualified name */
static void test_readiness_gates(void **state) {
        Pod *p = NULL;
        CubError e = {};
        const char *ok = HDR "  readinessGates: [{conditionType: example.com/feature-1}, {conditionType: x}]\n" CTR;

        (void) state;
        assert_int_equal(pod_decode(ok, strlen(ok), "x.yaml", POD_FORMAT_AUTO, &p, &e), 0);
        assert_int_equal(p->readiness_gates.n, 2);
        assert_string_equal(p->readiness_gates.items[0], "example.com/feature-1");
        assert_string_equal(p->readiness_gates.items[1], "x");
        pod_free(p);
        DECODE_ERR("x.yaml", HDR "  readinessGates: [{conditionType: -bad}]\n" CTR, EINVAL,
                   "x.yaml:6: spec.readinessGates[0].conditionType: Invalid value: \"-bad\": name part must consist "
                   "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                   "character");
        DECODE_ERR("x.yaml", HDR "  readinessGates: [{}]\n" CTR, EINVAL,
                   "x.yaml:6: spec.readinessGates[0].conditionType: Required value");
}

/* spec.ephemeralContainers: a pod of the API server's (kubectl debug), with
 * stdin, tty and a target; refused in a static pod as the API refuses them
 * on create */
static void test_ephemeral_containers(void **state) {
        const char *api = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},"
                          "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x:1\"}],"
                          "\"ephemeralContainers\":[{\"name\":\"debugger\",\"image\":\"busybox:1\","
                          "\"stdin\":true,\"stdinOnce\":true,\"tty\":true,\"targetContainerName\":\"a\"}]}}";
        const char *stat = HDR CTR "  ephemeralContainers: [{name: debugger, image: busybox:1}]\n";
        Pod *p = NULL;
        CubError e = {};

        (void) state;
        assert_int_equal(pod_decode_api(api, strlen(api), "api", &p, &e), 0);
        assert_int_equal(p->refused.n, 0);
        assert_int_equal(p->n_containers, 1);
        assert_int_equal(p->n_ephemeral_containers, 1);
        assert_string_equal(p->ephemeral_containers[0].name, "debugger");
        assert_true(p->ephemeral_containers[0].stdin_);
        assert_true(p->ephemeral_containers[0].stdin_once);
        assert_true(p->ephemeral_containers[0].tty);
        assert_string_equal(p->ephemeral_containers[0].target_container_name, "a");
        assert_string_equal(p->ephemeral_containers[0].image_pull_policy, "IfNotPresent");
        /* after the app containers in pod_container_at's order */
        assert_ptr_equal(pod_container_at(p, 1, NULL), &p->ephemeral_containers[0]);
        pod_free(p);
        p = NULL;
        assert_int_equal(pod_decode(stat, strlen(stat), "x.yaml", POD_FORMAT_AUTO, &p, &e), 0);
        assert_int_equal(p->refused.n, 1);
        assert_string_equal(p->refused.items[0].path, "spec.ephemeralContainers");
        assert_string_equal(p->refused.items[0].what, "Forbidden: cannot be set on create");
        pod_free(p);
}

static void test_err_priority_range(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", HDR "  priority: 3000000000\n" CTR, EINVAL,
                   "x.yaml:6: spec.priority: Invalid value: 3000000000: out of range for a 32-bit integer");
}

static void test_err_bool_type(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", HDR "  hostNetwork: \"true\"\n" CTR, EINVAL,
                   "x.yaml:6: spec.hostNetwork: Invalid type: expected boolean, got string");
}

static void test_err_quantities(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", MIN "    resources:\n      limits:\n        memory: 12XB\n", EINVAL,
                   "x.yaml:11: spec.containers[0].resources.limits[memory]: invalid quantity \"12XB\": unknown "
                   "suffix \"XB\"");
        DECODE_ERR("x.yaml", MIN "    resources:\n      requests:\n        cpu: -1\n", EINVAL,
                   "x.yaml:11: spec.containers[0].resources.requests[cpu]: invalid quantity \"-1\": must be "
                   "greater than or equal to 0");
        DECODE_ERR("x.yaml", MIN "    resources:\n      requests:\n        cpu: [1]\n", EINVAL,
                   "x.yaml:11: spec.containers[0].resources.requests[cpu]: Invalid type: expected quantity (string "
                   "or number), got array");
        DECODE_ERR("x.yaml", HDR "  overhead:\n    memory: 1.5.5\n" CTR, EINVAL,
                   "x.yaml:7: spec.overhead[memory]: invalid quantity \"1.5.5\": more than one '.'");
        DECODE_ERR("x.yaml", MIN "    resources:\n      limits: [cpu]\n", EINVAL,
                   "x.yaml:10: spec.containers[0].resources.limits: Invalid type: expected object of quantities, "
                   "got array");
}

static void test_err_request_above_limit(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", MIN "    resources:\n      requests:\n        cpu: \"2\"\n      limits:\n        cpu: 1\n",
                   EINVAL,
                   "x.yaml:11: spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than "
                   "or equal to cpu limit of 1");
        DECODE_ERR("x.yaml",
                   MIN "    resources:\n      requests:\n        memory: 1Gi\n      limits:\n"
                       "        memory: 512Mi\n",
                   EINVAL,
                   "x.yaml:11: spec.containers[0].resources.requests[memory]: Invalid value: \"1Gi\": must be less "
                   "than or equal to memory limit of 512Mi");
}

static void test_err_extended_resources(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", MIN "    resources:\n      requests:\n        example.com/foo: 1\n", EINVAL,
                   "x.yaml:11: spec.containers[0].resources.limits: Required value: Limit must be set for non "
                   "overcommitable resources");
        DECODE_ERR("x.yaml",
                   MIN "    resources:\n      requests:\n        example.com/foo: 1\n      limits:\n"
                       "        example.com/foo: 2\n",
                   EINVAL,
                   "x.yaml:11: spec.containers[0].resources.requests[example.com/foo]: Invalid value: \"1\": must "
                   "be equal to example.com/foo limit of 2");
        DECODE_ERR("x.yaml", MIN "    resources:\n      limits:\n        nvidia.com/gpu: 500m\n", EINVAL,
                   "x.yaml:11: spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: \"500m\": must "
                   "be an integer");
        DECODE_ERR("x.yaml",
                   MIN "    resources:\n      limits:\n        nvidia.com/gpu: 1\n      requests:\n"
                       "        nvidia.com/gpu: 0.5\n",
                   EINVAL,
                   "x.yaml:13: spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: \"500m\": must "
                   "be an integer");
        DECODE_ERR("x.yaml", MIN "    resources:\n      limits:\n        hugepages-2Mi: 1.5\n", EINVAL,
                   "x.yaml:11: spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: \"1500m\": must be "
                   "an integer");
}

static void test_err_resource_names(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", MIN "    resources:\n      limits:\n        cpu: 1\n        gpu: 1\n", EINVAL,
                   "x.yaml:12: spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": must be a standard "
                   "resource type or fully qualified");
}

static void test_err_resource_name_too_long(void **state) {
        char text[2048], name[401];

        (void) state;
        /* longer than any qualified name: refused naming the list, not a cut path */
        memset(name, 'g', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        assert_true((size_t) snprintf(text, sizeof(text),
                                      MIN "    resources:\n      limits:\n        example.com/%s: 1\n",
                                      name) < sizeof(text));
        DECODE_ERR("x.yaml", text, EINVAL,
                   "x.yaml:11: spec.containers[0].resources.limits: Invalid value: "
                   "\"example.com/gggggggggggggggggggggggggggggggggggggggggggggggggggg...\": a resource name of 412 "
                   "bytes");
}

static void test_err_container_only_resource_names(void **state) {
        (void) state;
        /* validateContainerResourceName: "pods" and "storage" are standard
         * resources, but not container resources */
        DECODE_ERR("x.yaml", MIN "    resources:\n      requests:\n        pods: 1\n", EINVAL,
                   "x.yaml:11: spec.containers[0].resources.requests[pods]: Invalid value: \"pods\": must be a "
                   "standard resource for containers");
        DECODE_ERR("x.yaml", MIN "    resources:\n      limits:\n        storage: 1Gi\n", EINVAL,
                   "x.yaml:11: spec.containers[0].resources.limits[storage]: Invalid value: \"storage\": must be "
                   "a standard resource for containers");
}

static void test_err_ports(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", MIN "    ports:\n    - name: http\n", EINVAL,
                   "x.yaml:10: spec.containers[0].ports[0].containerPort: Required value");
        DECODE_ERR("x.yaml", MIN "    ports:\n    - containerPort: 70000\n", EINVAL,
                   "x.yaml:10: spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and "
                   "65535, inclusive");
        DECODE_ERR("x.yaml", MIN "    ports:\n    - containerPort: 80\n    - containerPort: 81\n      hostPort: -1\n",
                   EINVAL,
                   "x.yaml:12: spec.containers[0].ports[1].hostPort: Invalid value: -1: must be between 1 and 65535, "
                   "inclusive");
        DECODE_ERR("x.yaml", MIN "    ports:\n    - containerPort: \"80\"\n", EINVAL,
                   "x.yaml:10: spec.containers[0].ports[0].containerPort: Invalid type: expected integer, got string");
}

static void test_err_host_network_port_mismatch(void **state) {
        (void) state;
        DECODE_ERR(
                "x.yaml",
                HDR "  hostNetwork: true\n  containers:\n  - name: a\n    image: x:1\n    ports:\n"
                    "    - containerPort: 8080\n      hostPort: 80\n",
                EINVAL,
                "x.yaml:12: spec.containers[0].ports[0].hostPort: Invalid value: 80: must match `containerPort` when "
                "`hostNetwork` is true");
}

static void test_err_duplicate_container_names(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", HDR "  containers:\n  - name: a\n    image: x:1\n  - name: a\n    image: y:1\n", EINVAL,
                   "x.yaml:9: spec.containers[1].name: Duplicate value: \"a\"");
        DECODE_ERR("x.yaml",
                   HDR "  initContainers:\n  - name: a\n    image: x:1\n  containers:\n  - name: a\n"
                       "    image: y:1\n",
                   EINVAL, "x.yaml:10: spec.containers[0].name: Duplicate value: \"a\"");
}

static void test_err_restart_policy_on_containers(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", MIN "    restartPolicy: Always\n", EINVAL,
                   "x.yaml:9: spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers");
        DECODE_ERR("x.yaml", HDR "  initContainers:\n  - name: i\n    image: x:1\n    restartPolicy: Never\n", EINVAL,
                   "x.yaml:9: spec.initContainers[0].restartPolicy: Unsupported value: \"Never\": supported values: "
                   "\"Always\"");
}

static void test_err_env(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", MIN "    env:\n    - value: x\n", EINVAL,
                   "x.yaml:10: spec.containers[0].env[0].name: Required value");
        DECODE_ERR("x.yaml", MIN "    env:\n    - name: \"\"\n", EINVAL,
                   "x.yaml:10: spec.containers[0].env[0].name: Required value");
        DECODE_ERR("x.yaml", MIN "    env:\n    - name: A\n      value: 1\n", EINVAL,
                   "x.yaml:11: spec.containers[0].env[0].value: Invalid type: expected string, got number");
}

static void test_err_string_lists_and_maps(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", MIN "    command: [sh, 1]\n", EINVAL,
                   "x.yaml:9: spec.containers[0].command[1]: Invalid type: expected string, got number");
        DECODE_ERR("x.yaml", MIN "    args: \"--x\"\n", EINVAL,
                   "x.yaml:9: spec.containers[0].args: Invalid type: expected array of strings, got string");
        DECODE_ERR("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    a: b\n    x: 1\n", EINVAL,
                   "x.yaml:7: metadata.labels[x]: Invalid type: expected string, got number");
        DECODE_ERR("x.yaml", HDR "  nodeSelector: [a]\n" CTR, EINVAL,
                   "x.yaml:6: spec.nodeSelector: Invalid type: expected object of strings, got array");
}

static void test_err_seccomp(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", HDR "  securityContext:\n    seccompProfile:\n      type: Localhost\n" CTR, EINVAL,
                   "x.yaml:8: spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when "
                   "seccomp type is Localhost");
        DECODE_ERR("x.yaml",
                   HDR "  securityContext:\n    seccompProfile:\n      type: Unconfined\n"
                       "      localhostProfile: a.json\n" CTR,
                   EINVAL,
                   "x.yaml:9: spec.securityContext.seccompProfile.localhostProfile: Invalid value: \"a.json\": can "
                   "only be set when seccomp type is Localhost");
        DECODE_ERR("x.yaml", MIN "    securityContext:\n      seccompProfile:\n        type: Strict\n", EINVAL,
                   "x.yaml:11: spec.containers[0].securityContext.seccompProfile.type: Unsupported value: \"Strict\": "
                   "supported values: \"RuntimeDefault\", \"Unconfined\", \"Localhost\"");
        DECODE_ERR("x.yaml", MIN "    securityContext:\n      seccompProfile: {}\n", EINVAL,
                   "x.yaml:10: spec.containers[0].securityContext.seccompProfile.type: Required value");
}

static void test_err_tolerations(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", HDR "  tolerations:\n  - operator: Exists\n    value: v\n" CTR, EINVAL,
                   "x.yaml:8: spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` "
                   "is 'Exists'");
        DECODE_ERR("x.yaml", HDR "  tolerations:\n  - effect: NoSchedule\n" CTR, EINVAL,
                   "x.yaml:7: spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when "
                   "`key` is empty, which means \"match all values and all keys\"");
        DECODE_ERR("x.yaml", HDR "  tolerations:\n  - key: k\n    effect: NoSchedule\n    tolerationSeconds: 5\n" CTR,
                   EINVAL,
                   "x.yaml:9: spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' "
                   "when `tolerationSeconds` is set");
        DECODE_ERR("x.yaml", HDR "  tolerations:\n  - key: k\n    effect: NoRun\n" CTR, EINVAL,
                   "x.yaml:8: spec.tolerations[0].effect: Unsupported value: \"NoRun\": supported values: "
                   "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"");
}

#define AFF                                                                                           \
        HDR "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n" \
            "        nodeSelectorTerms:\n        - matchExpressions:\n"
#define AFF_PATH "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"

static void test_err_affinity(void **state) {
        (void) state;
        DECODE_ERR("x.yaml", AFF "          - key: zone\n            operator: In\n" CTR, EINVAL,
                   "x.yaml:11: " AFF_PATH ".matchExpressions[0].values: Required value: must be specified when "
                   "`operator` is 'In' or 'NotIn'");
        DECODE_ERR("x.yaml", AFF "          - key: zone\n            operator: Exists\n            values: [a]\n" CTR,
                   EINVAL,
                   "x.yaml:13: " AFF_PATH ".matchExpressions[0].values: Forbidden: may not be specified when "
                   "`operator` is 'Exists' or 'DoesNotExist'");
        DECODE_ERR("x.yaml", AFF "          - key: cores\n            operator: Gt\n            values: [abc]\n" CTR,
                   EINVAL,
                   "x.yaml:13: " AFF_PATH ".matchExpressions[0].values[0]: Invalid value: \"abc\": must be an integer");
        DECODE_ERR("x.yaml",
                   AFF "          - key: cores\n            operator: Lt\n            values: [\"1\", \"2\"]\n" CTR,
                   EINVAL,
                   "x.yaml:13: " AFF_PATH ".matchExpressions[0].values: Required value: must be specified single value "
                   "when `operator` is 'Lt' or 'Gt'");
        DECODE_ERR("x.yaml", AFF "          - key: zone\n            operator: Near\n" CTR, EINVAL,
                   "x.yaml:12: " AFF_PATH
                   ".matchExpressions[0].operator: Unsupported value: \"Near\": supported values: "
                   "\"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\"");
        DECODE_ERR("x.yaml",
                   HDR "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution: {}\n" CTR,
                   EINVAL,
                   "x.yaml:8: "
                   "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
                   "Required value");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full_pod_yaml),
                cmocka_unit_test(test_full_pod_json),
                cmocka_unit_test(test_format_auto_and_forced),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_empty_namespace_and_zero_grace),
                cmocka_unit_test(test_image_pull_policy_defaults),
                cmocka_unit_test(test_image_pull_policy_latest_with_digest),
                cmocka_unit_test(test_image_pull_policy_explicit_kept),
                cmocka_unit_test(test_requests_default_from_limits),
                cmocka_unit_test(test_explicit_zero_request_not_defaulted),
                cmocka_unit_test(test_protocol_defaults_to_tcp),
                cmocka_unit_test(test_host_network_defaults_host_port),
                cmocka_unit_test(test_priority),
                cmocka_unit_test(test_unread_fields_noted),
                cmocka_unit_test(test_null_fields_are_absent),
                cmocka_unit_test(test_anchors_and_aliases),
                cmocka_unit_test(test_merge_key),
                cmocka_unit_test(test_quoted_and_plain_quantities),
                cmocka_unit_test(test_json_number_quantities),
                cmocka_unit_test(test_quoted_number_name_is_a_string),
                cmocka_unit_test(test_yaml11_booleans),
                cmocka_unit_test(test_trailing_empty_document),
                cmocka_unit_test(test_comments_and_flow_style),
                cmocka_unit_test(test_block_scalars),
                cmocka_unit_test(test_err_empty_manifest),
                cmocka_unit_test(test_err_not_an_object),
                cmocka_unit_test(test_err_second_document),
                cmocka_unit_test(test_err_yaml_syntax),
                cmocka_unit_test(test_err_yaml_duplicate_key),
                cmocka_unit_test(test_err_yaml_unknown_alias),
                cmocka_unit_test(test_err_json_syntax),
                cmocka_unit_test(test_err_json_paths_have_no_line),
                cmocka_unit_test(test_load_file),
                cmocka_unit_test(test_err_missing_api_version_and_kind),
                cmocka_unit_test(test_err_missing_metadata_and_spec),
                cmocka_unit_test(test_err_name_type),
                cmocka_unit_test(test_err_invalid_names),
                cmocka_unit_test(test_long_subdomain_name),
                cmocka_unit_test(test_err_missing_image),
                cmocka_unit_test(test_err_containers_missing_or_empty),
                cmocka_unit_test(test_err_enums),
                cmocka_unit_test(test_err_grace_period),
                cmocka_unit_test(test_active_deadline),
                cmocka_unit_test(test_readiness_gates),
                cmocka_unit_test(test_ephemeral_containers),
                cmocka_unit_test(test_err_priority_range),
                cmocka_unit_test(test_err_bool_type),
                cmocka_unit_test(test_err_quantities),
                cmocka_unit_test(test_err_request_above_limit),
                cmocka_unit_test(test_err_extended_resources),
                cmocka_unit_test(test_err_resource_names),
                cmocka_unit_test(test_err_resource_name_too_long),
                cmocka_unit_test(test_err_container_only_resource_names),
                cmocka_unit_test(test_err_ports),
                cmocka_unit_test(test_err_host_network_port_mismatch),
                cmocka_unit_test(test_err_duplicate_container_names),
                cmocka_unit_test(test_err_restart_policy_on_containers),
                cmocka_unit_test(test_err_env),
                cmocka_unit_test(test_err_string_lists_and_maps),
                cmocka_unit_test(test_err_seccomp),
                cmocka_unit_test(test_err_tolerations),
                cmocka_unit_test(test_err_affinity),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
