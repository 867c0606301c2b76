/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/static.c (kubelet config/common.go applyDefaults) through
 * pod_decode_static() and pod_apply_static(), and agent/pod/node.c:
 * pod_node_decode() and pod_kubelet_config_decode(). */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"

#define SRC "/etc/kubernetes/manifests/etcd.yaml"

static const char etcd_yaml[] = "apiVersion: v1\n"
                                "kind: Pod\n"
                                "metadata:\n"
                                "  name: etcd\n"
                                "spec:\n"
                                "  containers:\n"
                                "  - name: etcd\n"
                                "    image: registry.k8s.io/etcd:3.5.9-0\n";

/* The same manifest as JSON, keys in another order. */
static const char etcd_json[] = "{\"kind\": \"Pod\", \"spec\": {\"containers\": [{\"image\": "
                                "\"registry.k8s.io/etcd:3.5.9-0\", \"name\": \"etcd\"}]},\n"
                                " \"metadata\": {\"name\": \"etcd\"}, \"apiVersion\": \"v1\"}\n";

static Pod *load_static(const char *text, const char *node, PodSourceKind kind, const char *uid_source) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode_static(text, strlen(text), "etcd.yaml", POD_FORMAT_AUTO, node, kind, uid_source, &pod, &err) < 0)
                fail_msg("pod_decode_static failed: %s", err.msg);
        assert_non_null(pod);
        return pod;
}

static const char *map_get(const PodStringMap *m, const char *k) {
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->keys[i], k) == 0)
                        return m->values[i];
        return NULL;
}

static void assert_uid_shape(const char *uid) {
        assert_non_null(uid);
        assert_int_equal(strlen(uid), 32);
        for (const char *p = uid; *p; p++)
                if (!isdigit((unsigned char) *p) && !(*p >= 'a' && *p <= 'f'))
                        fail_msg("UID '%s' is not lowercase hex", uid);
}

/* UID of the etcd manifest under the given inputs; out gets a copy. */
static const char *uid_of(const char *text, const char *node, PodSourceKind kind, const char *src, char out[33]) {
        Pod *pod = load_static(text, node, kind, src);

        assert_uid_shape(pod->uid);
        (void) snprintf(out, 33, "%s", pod->uid);
        pod_free(pod);
        return out;
}

/* ---- naming and annotations --------------------------------------------- */

static void test_t55_file_pod(void **state) {
        Pod *pod;

        (void) state;
        pod = load_static(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC);
        assert_string_equal(pod->name, "etcd-node-1");
        assert_string_equal(pod->namespace_, "default");
        assert_string_equal(pod->node_name, "Node-1");
        assert_string_equal(pod->restart_policy, "Always");
        assert_true(pod->termination_grace_period_seconds == 30);
        assert_string_equal(map_get(&pod->annotations, "kubernetes.io/config.source"), "file");
        assert_string_equal(map_get(&pod->annotations, "kubernetes.io/config.hash"), pod->uid);
        assert_int_equal(pod->annotations.n, 2);
        assert_int_equal(pod->n_tolerations, 1);
        assert_null(pod->tolerations[0].key);
        assert_string_equal(pod->tolerations[0].op, "Exists");
        assert_null(pod->tolerations[0].value);
        assert_string_equal(pod->tolerations[0].effect, "NoExecute");
        assert_false(pod->tolerations[0].toleration_seconds_set);
        pod_free(pod);
}

static void test_uid_is_md5_of_content_host_and_file(void **state) {
        Pod *pod;

        (void) state;
        /* md5('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"etcd"},"spec":{"containers":[{"image":
         * "registry.k8s.io/etcd:3.5.9-0","name":"etcd"}]}}' "host:Node-1" "file:" SRC) */
        pod = load_static(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC);
        assert_string_equal(pod->uid, "2a1043a17ec6456fa8a9317b4defd699");
        pod_free(pod);
}

static void test_uid_http_is_md5_of_content_and_url(void **state) {
        Pod *pod;

        (void) state;
        pod = load_static(etcd_yaml, "Node-1", POD_SOURCE_HTTP, "http://cfg.example/etcd.yaml");
        assert_string_equal(pod->uid, "072e7dffc4b46f9fd8d8ffb3e4a9e93a");
        pod_free(pod);
}

static void test_http_pod(void **state) {
        Pod *pod;

        (void) state;
        pod = load_static(etcd_yaml, "worker-7", POD_SOURCE_HTTP, "http://cfg.example/etcd.yaml");
        assert_string_equal(pod->name, "etcd-worker-7");
        assert_string_equal(pod->node_name, "worker-7");
        assert_string_equal(map_get(&pod->annotations, "kubernetes.io/config.source"), "http");
        assert_string_equal(map_get(&pod->annotations, "kubernetes.io/config.hash"), pod->uid);
        assert_int_equal(pod->n_tolerations, 0); /* only file pods get the NoExecute toleration */
        pod_free(pod);
}

static void test_existing_tolerations_and_annotations_kept(void **state) {
        Pod *pod;

        (void) state;
        pod = load_static("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: kube-system\n"
                          "  annotations:\n    team: infra\n    kubernetes.io/config.source: api\n"
                          "spec:\n  tolerations:\n  - key: dedicated\n    operator: Equal\n    value: infra\n"
                          "    effect: NoSchedule\n  containers:\n  - name: a\n    image: x:1\n",
                          "n1", POD_SOURCE_FILE, "/m/web.yaml");
        assert_string_equal(pod->name, "web-n1");
        assert_string_equal(pod->namespace_, "kube-system");
        assert_int_equal(pod->annotations.n, 3);
        assert_string_equal(map_get(&pod->annotations, "team"), "infra");
        assert_string_equal(map_get(&pod->annotations, "kubernetes.io/config.source"), "file");
        assert_int_equal(pod->n_tolerations, 2);
        assert_string_equal(pod->tolerations[0].key, "dedicated");
        assert_string_equal(pod->tolerations[1].op, "Exists");
        assert_string_equal(pod->tolerations[1].effect, "NoExecute");
        pod_free(pod);
}

static void test_noexecute_toleration_not_duplicated(void **state) {
        Pod *pod;
        size_t n;

        (void) state;
        /* AddOrUpdateTolerationInPod: an identical toleration is left alone */
        pod = load_static("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  tolerations:\n"
                          "  - operator: Exists\n    effect: NoExecute\n  containers:\n  - name: a\n    image: x:1\n",
                          "n1", POD_SOURCE_FILE, "/m/web.yaml");
        n = pod->n_tolerations;
        pod_free(pod); /* before asserting: no leak when it fails */
        assert_int_equal(n, 1);
}

static void test_noexecute_toleration_with_seconds_replaced(void **state) {
        Pod *pod;
        bool seconds;
        size_t n;

        (void) state;
        /* a matching toleration (same key/operator/value/effect) is updated in place */
        pod = load_static("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  tolerations:\n"
                          "  - operator: Exists\n    effect: NoExecute\n    tolerationSeconds: 60\n"
                          "  containers:\n  - name: a\n    image: x:1\n",
                          "n1", POD_SOURCE_FILE, "/m/web.yaml");
        n = pod->n_tolerations;
        seconds = pod->tolerations[0].toleration_seconds_set;
        pod_free(pod);
        assert_int_equal(n, 1);
        assert_false(seconds);
}

/* ---- UID --------------------------------------------------------------- */

static void test_uid_deterministic(void **state) {
        char a[33], b[33];

        (void) state;
        assert_string_equal(uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC, a),
                            uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC, b));
}

static void test_uid_depends_on_node(void **state) {
        char a[33], b[33];

        (void) state;
        assert_string_not_equal(uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC, a),
                                uid_of(etcd_yaml, "Node-2", POD_SOURCE_FILE, SRC, b));
        /* the node name enters the hash as given, not lowercased */
        assert_string_not_equal(uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC, a),
                                uid_of(etcd_yaml, "node-1", POD_SOURCE_FILE, SRC, b));
}

static void test_uid_depends_on_source(void **state) {
        char a[33], b[33];

        (void) state;
        assert_string_not_equal(uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC, a),
                                uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, "/srv/manifests/etcd.yaml", b));
        assert_string_not_equal(uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC, a),
                                uid_of(etcd_yaml, "Node-1", POD_SOURCE_HTTP, SRC, b));
}

static void test_uid_depends_on_content(void **state) {
        char a[33], b[33];

        (void) state;
        assert_string_not_equal(uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC, a),
                                uid_of("apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\nspec:\n  containers:\n"
                                       "  - name: etcd\n    image: registry.k8s.io/etcd:3.5.10-0\n",
                                       "Node-1", POD_SOURCE_FILE, SRC, b));
        /* any field, even one cubelet ignores, is content */
        assert_string_not_equal(uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC, a),
                                uid_of("apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\nspec:\n"
                                       "  dnsPolicy: Default\n  containers:\n"
                                       "  - name: etcd\n    image: registry.k8s.io/etcd:3.5.9-0\n",
                                       "Node-1", POD_SOURCE_FILE, SRC, b));
}

static void test_uid_http_ignores_node(void **state) {
        char a[33], b[33];

        (void) state;
        assert_string_equal(uid_of(etcd_yaml, "node-a", POD_SOURCE_HTTP, "http://x/p", a),
                            uid_of(etcd_yaml, "node-b", POD_SOURCE_HTTP, "http://x/p", b));
}

static void test_uid_same_for_yaml_and_json(void **state) {
        char a[33], b[33];

        (void) state;
        assert_string_equal(uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC, a),
                            uid_of(etcd_json, "Node-1", POD_SOURCE_FILE, SRC, b));
        assert_string_equal(a, "2a1043a17ec6456fa8a9317b4defd699");
        /* comments, flow style and quoting do not change the content */
        assert_string_equal(uid_of("# etcd\n{kind: Pod, apiVersion: \"v1\", metadata: {name: 'etcd'},\n"
                                   " spec: {containers: [{name: etcd, image: registry.k8s.io/etcd:3.5.9-0}]}}\n",
                                   "Node-1", POD_SOURCE_FILE, SRC, b),
                            a);
}

static void test_uid_source_defaults_to_source(void **state) {
        Pod *pod = NULL;
        CubError err = {};
        char a[33];

        (void) state;
        assert_int_equal(pod_decode_static(etcd_yaml, strlen(etcd_yaml), SRC, POD_FORMAT_YAML, "Node-1",
                                           POD_SOURCE_FILE, NULL, &pod, &err),
                         0);
        assert_string_equal(pod->uid, uid_of(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC, a));
        pod_free(pod);
}

static void test_metadata_uid_kept(void **state) {
        Pod *pod;

        (void) state;
        pod = load_static("apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n"
                          "  uid: 7e3c5c2e-1b6f-4b7a-9a34-2f2d3b7a8c10\n"
                          "spec:\n  containers:\n  - name: etcd\n    image: x:1\n",
                          "Node-1", POD_SOURCE_FILE, SRC);
        assert_string_equal(pod->uid, "7e3c5c2e-1b6f-4b7a-9a34-2f2d3b7a8c10");
        assert_string_equal(map_get(&pod->annotations, "kubernetes.io/config.hash"),
                            "7e3c5c2e-1b6f-4b7a-9a34-2f2d3b7a8c10");
        assert_string_equal(pod->name, "etcd-node-1");
        pod_free(pod);
}

static void test_config_hash_follows_content(void **state) {
        static const char v1[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  uid: fixed-uid\n"
                                 "spec:\n  containers:\n  - name: etcd\n    image: x:1\n";
        static const char v2[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  uid: fixed-uid\n"
                                 "spec:\n  containers:\n  - name: etcd\n    image: x:2\n";
        char h1[33];
        Pod *pod;

        (void) state;
        /* without metadata.uid the hash is the UID */
        pod = load_static(etcd_yaml, "Node-1", POD_SOURCE_FILE, SRC);
        assert_string_equal(pod->config_hash, "2a1043a17ec6456fa8a9317b4defd699");
        assert_string_equal(pod->config_hash, pod->uid);
        pod_free(pod);
        /* with one, the UID stays while the content hash follows edits */
        pod = load_static(v1, "Node-1", POD_SOURCE_FILE, SRC);
        assert_string_equal(pod->uid, "fixed-uid");
        assert_uid_shape(pod->config_hash);
        (void) snprintf(h1, sizeof(h1), "%s", pod->config_hash);
        pod_free(pod);
        pod = load_static(v2, "Node-1", POD_SOURCE_FILE, SRC);
        assert_string_equal(pod->uid, "fixed-uid");
        assert_uid_shape(pod->config_hash);
        assert_string_not_equal(pod->config_hash, h1);
        pod_free(pod);
}

static void test_static_pods_are_critical(void **state) {
        Pod *pod = NULL;
        CubError err = {};
        static const char api[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n"
                                  "    kubernetes.io/config.source: api\nspec:\n  containers:\n  - name: a\n"
                                  "    image: x:1\n";

        (void) state;
        /* kubelet IsCriticalPod: every static (file or http) pod */
        pod = load_static(etcd_yaml, "n1", POD_SOURCE_FILE, SRC);
        assert_true(pod_is_static(pod));
        assert_true(pod_is_critical(pod));
        assert_false(pod_is_node_critical(pod));
        pod_free(pod);
        pod = load_static(etcd_yaml, "n1", POD_SOURCE_HTTP, "http://x/etcd");
        assert_true(pod_is_static(pod));
        assert_true(pod_is_critical(pod));
        pod_free(pod);
        pod = load_static("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n"
                          "  priorityClassName: system-node-critical\n  priority: 0\n"
                          "  containers:\n  - name: a\n    image: x:1\n",
                          "n1", POD_SOURCE_FILE, SRC);
        assert_true(pod_is_node_critical(pod));
        pod_free(pod);
        pod = NULL;
        /* a pod from the API server is not static */
        assert_int_equal(pod_decode(api, strlen(api), "api.yaml", POD_FORMAT_YAML, &pod, &err), 0);
        assert_false(pod_is_static(pod));
        assert_false(pod_is_critical(pod));
        pod_free(pod);
        pod = NULL;
        assert_int_equal(pod_decode(etcd_yaml, strlen(etcd_yaml), "e.yaml", POD_FORMAT_YAML, &pod, &err), 0);
        assert_false(pod_is_static(pod));
        pod_free(pod);
}

static void test_apply_static_direct(void **state) {
        Pod *pod = NULL;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_decode(etcd_yaml, strlen(etcd_yaml), "e.yaml", POD_FORMAT_YAML, &pod, &err), 0);
        assert_int_equal(pod_apply_static(pod, "X", "n1", POD_SOURCE_FILE, "/p", &err), 0);
        assert_string_equal(pod->uid, "b7d62a17f6b97a9939223bd8077a04a1"); /* md5("Xhost:n1file:/p") */
        assert_string_equal(pod->name, "etcd-n1");
        pod_free(pod);
        pod = NULL;
        assert_int_equal(pod_decode(etcd_yaml, strlen(etcd_yaml), "e.yaml", POD_FORMAT_YAML, &pod, &err), 0);
        assert_int_equal(pod_apply_static(pod, "X", "n1", POD_SOURCE_HTTP, "/p", &err), 0);
        assert_string_equal(pod->uid, "31287560dcee6eb319c4d1f7a0bdc556"); /* md5("Xurl:/p") */
        pod_free(pod);
}

static void test_static_name_must_be_valid(void **state) {
        Pod *pod = NULL;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_decode_static(etcd_yaml, strlen(etcd_yaml), "etcd.yaml", POD_FORMAT_YAML, "node_1",
                                           POD_SOURCE_FILE, SRC, &pod, &err),
                         -EINVAL);
        assert_null(pod);
        assert_string_equal(err.msg, SRC ": metadata.name: Invalid value: \"etcd-node_1\": the static pod name "
                                         "(name-node) is not a lowercase RFC 1123 subdomain of at most 253 "
                                         "characters");
}

static void test_static_decode_errors_pass_through(void **state) {
        Pod *pod = NULL;
        CubError err = {};
        static const char bad[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\nspec:\n  containers:\n"
                                  "  - name: etcd\n";

        (void) state;
        assert_int_equal(
                pod_decode_static(bad, strlen(bad), SRC, POD_FORMAT_AUTO, "n1", POD_SOURCE_FILE, NULL, &pod, &err),
                -EINVAL);
        assert_null(pod);
        assert_string_equal(err.msg, SRC ":7: spec.containers[0].image: Required value");
}

/* ---- v1 Node ------------------------------------------------------------ */

static const char node_yaml[] = "apiVersion: v1\n"
                                "kind: Node\n"
                                "metadata:\n"
                                "  name: Node-1\n"
                                "  labels:\n"
                                "    kubernetes.io/hostname: node-1\n"
                                "    disk: ssd\n"
                                "spec:\n"
                                "  podCIDR: 10.0.0.0/24\n"
                                "  taints:\n"
                                "  - key: dedicated\n"
                                "    value: gpu\n"
                                "    effect: NoSchedule\n"
                                "  - key: node.kubernetes.io/unreachable\n"
                                "    effect: NoExecute\n"
                                "status:\n"
                                "  capacity:\n"
                                "    cpu: \"4\"\n"
                                "    memory: 16Gi\n"
                                "    pods: \"110\"\n"
                                "  allocatable:\n"
                                "    cpu: 3800m\n"
                                "    memory: 15464398848\n"
                                "    pods: 110\n";

static void test_node_decode_yaml(void **state) {
        PodNode *n = NULL;
        CubError err = {};
        CubQuantity q;

        (void) state;
        assert_int_equal(pod_node_decode(node_yaml, strlen(node_yaml), "node.yaml", &n, &err), 0);
        assert_string_equal(n->name, "Node-1");
        assert_int_equal(n->labels.n, 2);
        assert_string_equal(map_get(&n->labels, "kubernetes.io/hostname"), "node-1");
        assert_int_equal(n->n_taints, 2);
        assert_string_equal(n->taints[0].key, "dedicated");
        assert_string_equal(n->taints[0].value, "gpu");
        assert_string_equal(n->taints[0].effect, "NoSchedule");
        assert_string_equal(n->taints[1].key, "node.kubernetes.io/unreachable");
        assert_null(n->taints[1].value);
        assert_string_equal(n->taints[1].effect, "NoExecute");
        assert_true(pod_resource_get(&n->capacity, "memory", &q));
        assert_true(cub_quantity_value(q) == 17179869184LL);
        assert_true(pod_resource_get(&n->capacity, "cpu", &q));
        assert_int_equal(cub_quantity_milli(q), 4000);
        assert_true(pod_resource_get(&n->allocatable, "cpu", &q));
        assert_int_equal(cub_quantity_milli(q), 3800);
        assert_true(pod_resource_get(&n->allocatable, "memory", &q));
        assert_true(cub_quantity_value(q) == 15464398848LL);
        assert_true(pod_resource_get(&n->allocatable, "pods", &q));
        assert_int_equal(cub_quantity_value(q), 110);
        pod_node_free(n);
}

static void test_node_decode_json_minimal(void **state) {
        PodNode *n = NULL;
        CubError err = {};
        static const char json[] =
                "{\"metadata\": {\"name\": \"n2\"}, \"status\": {\"capacity\": {\"memory\": 8589934592}}}";

        (void) state;
        assert_int_equal(pod_node_decode(json, strlen(json), "node.json", &n, &err), 0);
        assert_string_equal(n->name, "n2");
        assert_int_equal(n->labels.n, 0);
        assert_int_equal(n->n_taints, 0);
        assert_int_equal(n->allocatable.n, 0);
        assert_int_equal(n->capacity.n, 1);
        assert_true(cub_quantity_value(n->capacity.items[0].q) == 8589934592LL);
        pod_node_free(n);
        assert_null(pod_node_free(NULL));
}

#define NODE_ERR(text, want)                                                                             \
        do {                                                                                             \
                PodNode *n_ = NULL;                                                                      \
                CubError e_ = {};                                                                        \
                assert_int_equal(pod_node_decode((text), strlen(text), "node.yaml", &n_, &e_), -EINVAL); \
                assert_null(n_);                                                                         \
                assert_string_equal(e_.msg, (want));                                                     \
        } while (0)

static void test_node_decode_errors(void **state) {
        (void) state;
        NODE_ERR("kind: Node\nstatus: {}\n", "node.yaml:1: metadata: Required value");
        NODE_ERR("metadata: {labels: {}}\n", "node.yaml:1: metadata.name: Required value");
        NODE_ERR("kind: Pod\nmetadata: {name: nd}\n",
                 "node.yaml:1: kind: Unsupported value: \"Pod\": supported values: \"Node\"");
        NODE_ERR("metadata: {name: nd}\nspec:\n  taints:\n  - key: k\n",
                 "node.yaml:4: spec.taints[0].effect: Required value");
        NODE_ERR("metadata: {name: nd}\nspec:\n  taints:\n  - key: k\n    effect: Evict\n",
                 "node.yaml:5: spec.taints[0].effect: Unsupported value: \"Evict\": supported values: \"NoSchedule\", "
                 "\"PreferNoSchedule\", \"NoExecute\"");
        NODE_ERR("metadata: {name: nd}\nstatus:\n  allocatable:\n    memory: 16GB\n",
                 "node.yaml:4: status.allocatable[memory]: invalid quantity \"16GB\": unknown suffix \"GB\"");
        NODE_ERR("- a\n", "node.yaml: the manifest must be an object (a v1 Pod), got array");
}

/* ---- KubeletConfiguration ------------------------------------------------ */

static void test_kubelet_config_defaults(void **state) {
        PodKubeletConfig c;
        CubError err = {};

        (void) state;
        pod_kubelet_config_init(&c);
        assert_true(c.pod_pids_limit == -1);
        assert_true(c.cpu_cfs_quota);
        assert_int_equal(c.cgroup_driver, POD_CGROUP_DRIVER_UNSET);
        pod_kubelet_config_done(&c);

        assert_int_equal(pod_kubelet_config_decode("{}", 2, "c.json", &c, &err), 0);
        assert_true(c.pod_pids_limit == -1);
        assert_true(c.cpu_cfs_quota);
        assert_int_equal(c.cgroup_driver, POD_CGROUP_DRIVER_UNSET); /* not set: the host decides */
        assert_int_equal(c.kube_reserved.n, 0);
        assert_int_equal(c.system_reserved.n, 0);
        assert_int_equal(c.ignored.n, 0);
        /* the durations' defaults, not set by the file */
        assert_true(c.http_check_frequency.usec == 20000000 && !c.http_check_frequency.set);
        assert_true(c.file_check_frequency.usec == 20000000);
        assert_true(c.static_pod_url_timeout.usec == 10000000);
        assert_true(c.cpu_manager_reconcile_period.usec == 10000000);
        assert_true(c.eviction_pressure_transition_period.usec == 300000000);
        assert_true(c.eviction_sample_period.usec == 1000000);
        assert_true(c.node_status_update_frequency.usec == 10000000);
        assert_true(c.node_status_report_frequency.usec == 300000000);
        assert_true(c.shutdown_grace_period.usec == 0 && c.shutdown_grace_period_critical_pods.usec == 0);
        assert_true(cub_quantity_value(c.container_log_max_size) == 10 * 1024 * 1024);
        pod_kubelet_config_done(&c);
        assert_int_equal(c.cgroup_driver, POD_CGROUP_DRIVER_UNSET);
}

static void test_kubelet_config_full(void **state) {
        static const char yaml[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                   "kind: KubeletConfiguration\n"
                                   "evictionHard:\n"
                                   "  memory.available: 100Mi\n"
                                   "cgroupDriver: systemd\n"
                                   "podPidsLimit: 4096\n"
                                   "cpuCFSQuota: false\n"
                                   "maxPods: 110\n"
                                   "kubeReserved:\n"
                                   "  cpu: 100m\n"
                                   "  memory: 1Gi\n"
                                   "systemReserved:\n"
                                   "  cpu: 100m\n"
                                   "  memory: 512Mi\n"
                                   "cpuManagerPolicy: static\n"
                                   "cpuManagerReconcilePeriod: 5s\n"
                                   "reservedSystemCPUs: \"0,4\"\n"
                                   "evictionSoft: {memory.available: 300Mi}\n"
                                   "evictionSoftGracePeriod: {memory.available: 1m30s}\n"
                                   "evictionMaxPodGracePeriod: 20\n"
                                   "evictionPressureTransitionPeriod: 30s\n"
                                   "imageGCHighThresholdPercent: 85\n"
                                   "cubelet: {evictionPolicy: kubelet, evictionSamplePeriod: 500ms,\n"
                                   "          psiMemoryTrigger: some 100000 1000000}\n"
                                   "serializeImagePulls: false\n";
        PodKubeletConfig c;
        CubError err = {};
        CubQuantity q;

        (void) state;
        assert_int_equal(pod_kubelet_config_decode(yaml, strlen(yaml), "kubelet.yaml", &c, &err), 0);
        assert_int_equal(c.cgroup_driver, POD_CGROUP_DRIVER_SYSTEMD);
        assert_true(c.pod_pids_limit == 4096);
        assert_false(c.cpu_cfs_quota);
        assert_true(pod_resource_get(&c.kube_reserved, "cpu", &q));
        assert_int_equal(cub_quantity_milli(q), 100);
        assert_true(pod_resource_get(&c.kube_reserved, "memory", &q));
        assert_int_equal(cub_quantity_value(q), 1073741824);
        assert_true(pod_resource_get(&c.system_reserved, "memory", &q));
        assert_int_equal(cub_quantity_value(q), 536870912);
        /* admission, CPU manager and eviction fields */
        assert_true(c.max_pods == 110);
        assert_int_equal(c.cpu_manager_policy, POD_CPU_MANAGER_STATIC);
        assert_true(c.cpu_manager_reconcile_period.set && c.cpu_manager_reconcile_period.usec == 5000000);
        assert_string_equal(c.reserved_system_cpus, "0,4");
        /* the eviction maps decoded and finished: the hard threshold given
         * (no defaults), its allocatable copy, the soft one with its grace */
        assert_true(c.eviction.finished);
        assert_int_equal(c.eviction.n_thresholds, 3);
        assert_int_equal(c.eviction.thresholds[0].signal, EVICT_SIGNAL_MEMORY_AVAILABLE);
        assert_false(c.eviction.thresholds[0].soft);
        assert_true(c.eviction.thresholds[0].value.quantity == 100 * 1024 * 1024);
        assert_int_equal(c.eviction.thresholds[1].signal, EVICT_SIGNAL_MEMORY_AVAILABLE);
        assert_true(c.eviction.thresholds[1].soft);
        assert_true(c.eviction.thresholds[1].value.quantity == 300 * 1024 * 1024);
        assert_true(c.eviction.thresholds[1].grace_usec == 90000000);
        assert_int_equal(c.eviction.thresholds[2].signal, EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE);
        assert_true(c.eviction.max_pod_grace_seconds == 20);
        assert_true(c.eviction.transition_usec == 30000000);
        assert_int_equal(c.eviction.policy, EVICT_POLICY_KUBELET);
        assert_true(c.eviction_max_pod_grace_period == 20);
        assert_true(c.eviction_pressure_transition_period.usec == 30000000);
        assert_int_equal(c.eviction_policy, POD_EVICTION_KUBELET);
        assert_true(c.eviction_sample_period.set && c.eviction_sample_period.usec == 500000);
        assert_string_equal(c.psi_memory_trigger, "some 100000 1000000");
        /* fields present but not supported, in manifest order */
        assert_int_equal(c.ignored.n, 2);
        assert_string_equal(c.ignored.items[0], "imageGCHighThresholdPercent");
        assert_string_equal(c.ignored.items[1], "serializeImagePulls");
        pod_kubelet_config_done(&c);
}

#define CFG_ERR(text, want)                                                                                           \
        do {                                                                                                          \
                PodKubeletConfig c_;                                                                                  \
                CubError e_ = {};                                                                                     \
                pod_kubelet_config_init(&c_);                                                                         \
                assert_int_equal(pod_kubelet_config_decode((text), strlen(text), "kubelet.yaml", &c_, &e_), -EINVAL); \
                assert_string_equal(e_.msg, (want));                                                                  \
                pod_kubelet_config_done(&c_);                                                                         \
        } while (0)

static void test_kubelet_config_paths_and_cubelet_section(void **state) {
        static const char yaml[] = "kind: KubeletConfiguration\n"
                                   "staticPodPath: /etc/kubernetes/manifests\n"
                                   "containerRuntimeEndpoint: unix:///run/containerd/containerd.sock\n"
                                   "cubelet:\n"
                                   "  stateDir: /var/lib/cubelet\n"
                                   "  socket: /run/cubelet/status.sock\n"
                                   "  nodeName: Node-1\n"
                                   "  cgroupMount: /sys/fs/cgroup\n"
                                   "  futureKnob: 1\n";
        PodKubeletConfig c;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_kubelet_config_decode(yaml, strlen(yaml), "kubelet.yaml", &c, &err), 0);
        assert_string_equal(c.static_pod_path, "/etc/kubernetes/manifests");
        assert_string_equal(c.runtime_endpoint, "unix:///run/containerd/containerd.sock");
        assert_string_equal(c.state_dir, "/var/lib/cubelet");
        assert_string_equal(c.socket_path, "/run/cubelet/status.sock");
        assert_string_equal(c.node_name, "Node-1");
        assert_string_equal(c.cgroup_mount, "/sys/fs/cgroup");
        assert_int_equal(c.ignored.n, 0);
        pod_kubelet_config_done(&c);
        assert_null(c.static_pod_path);
        assert_null(c.state_dir);
}

static void test_kubelet_config_errors(void **state) {
        (void) state;
        CFG_ERR("kind: KubeletConfiguration\ncgroupDriver: cgroupfs2\n",
                "kubelet.yaml:2: cgroupDriver: Unsupported value: \"cgroupfs2\": supported values: \"cgroupfs\", "
                "\"systemd\"");
        CFG_ERR("kind: Pod\n",
                "kubelet.yaml:1: kind: Unsupported value: \"Pod\": supported values: \"KubeletConfiguration\"");
        CFG_ERR("podPidsLimit: \"1024\"\n", "kubelet.yaml:1: podPidsLimit: Invalid type: expected integer, got string");
        CFG_ERR("cpuCFSQuota: \"false\"\n", "kubelet.yaml:1: cpuCFSQuota: Invalid type: expected boolean, got string");
        CFG_ERR("kubeReserved:\n  cpu: 1.5.5\n",
                "kubelet.yaml:2: kubeReserved[cpu]: invalid quantity \"1.5.5\": more than one '.'");
        /* the eviction maps: decoded with the file, eviction/'s message with the line */
        CFG_ERR("evictionHard:\n  memory.available: 12XB\n",
                "kubelet.yaml:2: evictionHard[memory.available]: invalid quantity \"12XB\": unknown suffix \"XB\"");
        CFG_ERR("evictionSoft: {memory.free: 1Gi}\n", "kubelet.yaml:1: evictionSoft: unsupported eviction signal \"memory.free\"");
        CFG_ERR("evictionHard: {memory.available: [1]}\n",
                "kubelet.yaml:1: evictionHard[memory.available]: Invalid type: expected string, got array");
        CFG_ERR("evictionSoft: {nodefs.available: 10%}\n",
                "kubelet.yaml: evictionSoft[nodefs.available]: a grace period must be given in "
                "evictionSoftGracePeriod[nodefs.available]");
        CFG_ERR("evictionMaxPodGracePeriod: -1\n", "kubelet.yaml: evictionMaxPodGracePeriod: must not be negative: -1");
        CFG_ERR("cubelet:\n  psiMemoryTrigger: some 100 100000\n",
                "kubelet.yaml:2: cubelet.psiMemoryTrigger: Invalid value: PSI trigger \"some 100 100000\": window "
                "100000us not in 500000..10000000");
        CFG_ERR("cubelet:\n  stateDir: 5\n",
                "kubelet.yaml:2: cubelet.stateDir: Invalid type: expected string, got number");
        CFG_ERR("cubelet: [a]\n", "kubelet.yaml:1: cubelet: Invalid type: expected object, got array");
        CFG_ERR("{\"systemReserved\": {\"memory\": \"-1Gi\"}}",
                "kubelet.yaml: systemReserved[memory]: invalid quantity \"-1Gi\": must be greater than or equal to 0");
        /* durations: parsed once, named, and within their bounds */
        CFG_ERR("kind: KubeletConfiguration\nfileCheckFrequency: \"20\"\n",
                "kubelet.yaml:2: fileCheckFrequency: Invalid value: time: missing unit in duration \"20\"");
        CFG_ERR("httpCheckFrequency: 5\n",
                "kubelet.yaml:1: httpCheckFrequency: Invalid type: expected a duration string (\"20s\"), got number");
        CFG_ERR("cubelet: {staticPodURLTimeout: 1h1x}\n",
                "kubelet.yaml:1: cubelet.staticPodURLTimeout: Invalid value: time: unknown unit \"x\" in duration "
                "\"1h1x\"");
        CFG_ERR("fileCheckFrequency: 500ms\n",
                "kubelet.yaml: fileCheckFrequency: Invalid value: \"500ms\": must be at least 1s");
        CFG_ERR("nodeStatusUpdateFrequency: 50ms\n",
                "kubelet.yaml: nodeStatusUpdateFrequency: Invalid value: \"50ms\": must be at least 100ms");
        CFG_ERR("cpuManagerReconcilePeriod: 0s\n",
                "kubelet.yaml: cpuManagerReconcilePeriod: Invalid value: \"0s\": must be at least 100ms");
        CFG_ERR("cubelet: {evictionSamplePeriod: 5ms}\n",
                "kubelet.yaml: cubelet.evictionSamplePeriod: Invalid value: \"5ms\": must be at least 10ms");
        CFG_ERR("evictionPressureTransitionPeriod: -5m\n",
                "kubelet.yaml: evictionPressureTransitionPeriod: Invalid value: \"-5m0s\": must be at least 0s");
        /* logs: a positive quantity, at least two files */
        CFG_ERR("containerLogMaxSize: \"0\"\n",
                "kubelet.yaml:1: containerLogMaxSize: Invalid value: \"0\": must be positive");
        CFG_ERR("containerLogMaxSize: 10Mx\n", "kubelet.yaml:1: containerLogMaxSize: Invalid value: invalid quantity "
                                               "\"10Mx\": unknown suffix \"Mx\"");
        CFG_ERR("containerLogMaxFiles: 1\n", "kubelet.yaml: invalid configuration: containerLogMaxFiles "
                                             "(--container-log-max-files) 1 must be greater than 1");
}

static void test_static_uid(void **state) {
        char uid[POD_UID_DERIVED_MAX];
        CubError err = {};

        (void) state;
        /* md5('{"a":1}' "host:node-1" "file:/etc/pods/a.yaml"), and for http no host part */
        assert_int_equal(pod_static_uid("{\"a\":1}", "node-1", POD_SOURCE_FILE, "/etc/pods/a.yaml", uid, &err), 0);
        assert_string_equal(uid, "6f122647177848f754b399ed6c88b494");
        assert_int_equal(pod_static_uid("{\"a\":1}", "node-1", POD_SOURCE_HTTP, "http://x/p", uid, &err), 0);
        assert_string_equal(uid, "4c532801fd24ffca2aa8735a8ff66472");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_t55_file_pod),
                cmocka_unit_test(test_static_uid),
                cmocka_unit_test(test_uid_is_md5_of_content_host_and_file),
                cmocka_unit_test(test_uid_http_is_md5_of_content_and_url),
                cmocka_unit_test(test_http_pod),
                cmocka_unit_test(test_existing_tolerations_and_annotations_kept),
                cmocka_unit_test(test_noexecute_toleration_not_duplicated),
                cmocka_unit_test(test_noexecute_toleration_with_seconds_replaced),
                cmocka_unit_test(test_uid_deterministic),
                cmocka_unit_test(test_uid_depends_on_node),
                cmocka_unit_test(test_uid_depends_on_source),
                cmocka_unit_test(test_uid_depends_on_content),
                cmocka_unit_test(test_uid_http_ignores_node),
                cmocka_unit_test(test_uid_same_for_yaml_and_json),
                cmocka_unit_test(test_uid_source_defaults_to_source),
                cmocka_unit_test(test_metadata_uid_kept),
                cmocka_unit_test(test_config_hash_follows_content),
                cmocka_unit_test(test_static_pods_are_critical),
                cmocka_unit_test(test_apply_static_direct),
                cmocka_unit_test(test_static_name_must_be_valid),
                cmocka_unit_test(test_static_decode_errors_pass_through),
                cmocka_unit_test(test_node_decode_yaml),
                cmocka_unit_test(test_node_decode_json_minimal),
                cmocka_unit_test(test_node_decode_errors),
                cmocka_unit_test(test_kubelet_config_defaults),
                cmocka_unit_test(test_kubelet_config_full),
                cmocka_unit_test(test_kubelet_config_paths_and_cubelet_section),
                cmocka_unit_test(test_kubelet_config_errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
