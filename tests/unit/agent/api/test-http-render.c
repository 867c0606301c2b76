/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP API's renderers: the exposition text of /metrics, the PodList of
 * /pods (its items decode as v1 Pods), /metrics/resource and /stats/summary
 * from a cgroup tree and a proc directory written by the test. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/api/metrics.h"
#include "agent/api/pods.h"
#include "agent/api/resource.h"
#include "agent/util/cleanup.h"
#include "agent/util/fileio.h"

#define NSEC 1000000000LL

static LcPod *make_pod(const char *yaml) {
        Pod *pod = NULL;
        WorkerSpec *spec = NULL;
        CgOptions cg;
        CubError err = {};
        LcPod *p = NULL;

        cg_options_init(&cg);
        if (pod_decode_static(yaml, strlen(yaml), "t.yaml", POD_FORMAT_AUTO, "node1", POD_SOURCE_FILE, "t.yaml", &pod,
                              &err) < 0)
                fail_msg("decode: %s", err.msg);
        if (worker_spec_new(pod, "t.yaml", &cg, "/tmp/http-test-logs", &spec, &err) < 0)
                fail_msg("spec: %s", err.msg);
        assert_int_equal(lc_pod_new(spec, &p), 0);
        worker_spec_unref(spec);
        return p;
}

static char *render(const ApiMetrics *m, const ApiGauges *g) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        assert_non_null(f);
        assert_int_equal(api_metrics_render(m, g, f), 0);
        fclose(f);
        return text;
}

static void test_metrics_text(void **state) {
        ApiMetrics m;
        ApiGauges g = { .running_pods = 3, .containers_running = 4, .containers_exited = 1, .version = "v1.\"x\"" };
        _cleanup_free_ char *text = NULL;

        (void) state;
        api_metrics_init(&m);
        assert_int_equal(api_counter_add(&m.evictions, "memory.available", 1), 0);
        assert_int_equal(api_counter_add(&m.evictions, "memory.available", 1), 0);
        assert_int_equal(api_counter_add(&m.admission_rejections, "OutOfcpu", 1), 0);
        assert_int_equal(api_counter_add(&m.http_source_fetches, "304", 5), 0);
        assert_int_equal(api_counter_get(&m.evictions, "memory.available"), 2);
        api_histogram_observe(&m.pod_start_duration, 0.4);
        api_histogram_observe(&m.pod_start_duration, 2.5);
        api_histogram_observe(&m.pod_start_duration, 5000);
        api_histogram_observe(&m.pod_worker_duration[API_WORKER_OP_SYNC], 0.02);
        m.cpu_pinning_requests = 7;
        text = render(&m, &g);
        assert_non_null(strstr(text, "# TYPE kubelet_running_pods gauge\nkubelet_running_pods 3\n"));
        assert_non_null(strstr(text, "kubelet_running_containers{container_state=\"running\"} 4\n"));
        assert_non_null(strstr(text, "kubelet_running_containers{container_state=\"exited\"} 1\n"));
        assert_non_null(strstr(text, "cubelet_build_info{version=\"v1.\\\"x\\\"\"} 1\n"));
        assert_non_null(strstr(text, "kubelet_evictions{eviction_signal=\"memory.available\"} 2\n"));
        assert_non_null(strstr(text, "kubelet_admission_rejections_total{reason=\"OutOfcpu\"} 1\n"));
        assert_non_null(strstr(text, "cubelet_http_source_fetches_total{result=\"304\"} 5\n"));
        assert_non_null(strstr(text, "kubelet_cpu_manager_pinning_requests_total 7\n"));
        /* cumulative buckets, kubelet's bounds */
        assert_non_null(strstr(text, "kubelet_pod_start_duration_seconds_bucket{le=\"0.5\"} 1\n"
                                     "kubelet_pod_start_duration_seconds_bucket{le=\"1\"} 1\n"
                                     "kubelet_pod_start_duration_seconds_bucket{le=\"2\"} 1\n"
                                     "kubelet_pod_start_duration_seconds_bucket{le=\"3\"} 2\n"));
        assert_non_null(strstr(text, "kubelet_pod_start_duration_seconds_bucket{le=\"3600\"} 2\n"
                                     "kubelet_pod_start_duration_seconds_bucket{le=\"+Inf\"} 3\n"
                                     "kubelet_pod_start_duration_seconds_sum 5002.9\n"
                                     "kubelet_pod_start_duration_seconds_count 3\n"));
        assert_non_null(
                strstr(text, "kubelet_pod_worker_duration_seconds_bucket{operation_type=\"sync\",le=\"0.025\"} 1\n"));
        assert_non_null(strstr(text, "kubelet_pod_worker_duration_seconds_count{operation_type=\"create\"} 0\n"));
        /* every sample line belongs to the family announced before it */
        {
                char fam[128] = "";
                for (char *l = text; *l; l = strchr(l, '\n') + 1) {
                        if (strncmp(l, "# TYPE ", 7) == 0)
                                (void) sscanf(l + 7, "%127s", fam);
                        else if (*l != '#')
                                assert_true(strncmp(l, fam, strlen(fam)) == 0);
                }
        }
        api_metrics_done(&m);
}

static void test_process_metrics(void **state) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        double rss = 0, start = 0, fds = 0;

        (void) state;
        assert_int_equal(api_metrics_render_process("/proc", f), 0);
        fclose(f);
        assert_int_equal(
                sscanf(strstr(text, "\nprocess_resident_memory_bytes ") + 1, "process_resident_memory_bytes %lf", &rss),
                1);
        assert_int_equal(
                sscanf(strstr(text, "\nprocess_start_time_seconds ") + 1, "process_start_time_seconds %lf", &start), 1);
        assert_int_equal(sscanf(strstr(text, "\nprocess_open_fds ") + 1, "process_open_fds %lf", &fds), 1);
        assert_true(rss > 1e6);
        assert_true(start > 1.6e9 && start <= (double) time(NULL) + 1);
        assert_true(fds >= 3);
        assert_non_null(strstr(text, "# TYPE process_cpu_seconds_total counter\n"));
}

static const char *const WEB = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {app: web}\n"
                               "spec:\n  initContainers:\n  - {name: init, image: busybox}\n"
                               "  containers:\n  - name: app\n    image: nginx:1\n    command: [nginx]\n"
                               "    ports: [{containerPort: 80}]\n"
                               "    resources: {limits: {cpu: 500m, memory: 128Mi}}\n";

/* probes and hooks: ready/started from the probes, the conditions' reasons
 * and messages, a waiting reason from the last sync's error */
static void test_probe_status(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: pr}\nspec:\n  containers:\n"
                            "  - name: a\n    image: x:1\n    readinessProbe: {exec: {command: [t]}}\n"
                            "    startupProbe: {exec: {command: [t]}}\n  - {name: b, image: 'y:1'}\n");
        LcPod *pods[1] = { p };
        ApiPodsInfo info = { .node_name = "node1", .runtime = "containerd" };
        _cleanup_free_ char *text = NULL;
        json_t *doc, *st, *c, *cond;
        json_error_t jerr;
        size_t i;

        (void) state;
        p->wanted = p->observed = true;
        p->phase = LC_PHASE_RUNNING;
        p->statuses[0] = (LcContainerStatus){ .id = "c1", .state = LC_CONTAINER_RUNNING };
        p->statuses[1] = (LcContainerStatus){ .state = LC_CONTAINER_WAITING };
        (void) cub_retry_failed(&p->sync_retry, &cub_retry_pod_sync, 0,
                                "container 'b': image 'y:1': ErrImageNeverPull: Container image \"y:1\" is not "
                                "present with pull policy of Never",
                                0);
        lc_pod_sync_result(p, -ENOENT, WORKER_FAIL_IMAGE_NEVER_PULL, 1, p->sync_retry.error, 0);
        assert_true(lc_pod_track_conditions(p, 1700000000));
        text = api_pod_list_json(pods, 1, &info);
        doc = json_loads(text, 0, &jerr);
        assert_non_null(doc);
        st = json_object_get(json_array_get(json_object_get(doc, "items"), 0), "status");
        c = json_array_get(json_object_get(st, "containerStatuses"), 0);
        assert_true(json_is_false(json_object_get(c, "ready")));
        assert_true(json_is_false(json_object_get(c, "started")));
        c = json_array_get(json_object_get(st, "containerStatuses"), 1);
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(json_object_get(c, "state"), "waiting"), "reason")),
                "ErrImageNeverPull");
        json_array_foreach(json_object_get(st, "conditions"), i, cond) {
                if (strcmp(json_string_value(json_object_get(cond, "type")), "Ready") != 0)
                        continue;
                assert_string_equal(json_string_value(json_object_get(cond, "status")), "False");
                assert_string_equal(json_string_value(json_object_get(cond, "reason")), "ContainersNotReady");
                assert_string_equal(json_string_value(json_object_get(cond, "message")),
                                    "containers with unready status: [a b]");
                assert_string_equal(json_string_value(json_object_get(cond, "lastTransitionTime")),
                                    "2023-11-14T22:13:20Z");
        }
        json_decref(doc);
        free(text);
        /* the probes said started and ready; b runs */
        p->statuses[0].probe_known = p->statuses[0].probe_started = p->statuses[0].probe_ready = true;
        p->statuses[1] = (LcContainerStatus){ .id = "c2", .state = LC_CONTAINER_RUNNING };
        (void) cub_retry_succeeded(&p->sync_retry);
        lc_pod_sync_result(p, 0, WORKER_FAIL_NONE, SIZE_MAX, "", 0);
        assert_true(lc_pod_track_conditions(p, 1700000100));
        text = api_pod_list_json(pods, 1, &info);
        doc = json_loads(text, 0, &jerr);
        st = json_object_get(json_array_get(json_object_get(doc, "items"), 0), "status");
        c = json_array_get(json_object_get(st, "containerStatuses"), 0);
        assert_true(json_is_true(json_object_get(c, "ready")) && json_is_true(json_object_get(c, "started")));
        json_array_foreach(json_object_get(st, "conditions"), i, cond) {
                if (strcmp(json_string_value(json_object_get(cond, "type")), "Ready") != 0)
                        continue;
                assert_string_equal(json_string_value(json_object_get(cond, "status")), "True");
                assert_null(json_object_get(cond, "reason"));
                assert_string_equal(json_string_value(json_object_get(cond, "lastTransitionTime")),
                                    "2023-11-14T22:15:00Z");
        }
        json_decref(doc);
        lc_pod_free(p);
}

static void test_pod_list(void **state) {
        LcPod *p = make_pod(WEB), *q = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: gone}\n"
                                                "spec: {containers: [{name: a, image: x}]}\n");
        LcPod *pods[2] = { p, q };
        ApiPodsInfo info = { .node_name = "node1", .host_ip = "10.0.0.5", .runtime = "containerd" };
        ApiGauges g = {};
        _cleanup_free_ char *text = NULL;
        json_t *doc, *item, *st, *cs;
        json_error_t jerr;

        (void) state;
        p->wanted = true;
        q->wanted = false; /* no source defines it any more: not listed */
        p->phase = LC_PHASE_RUNNING;
        p->observed = true;
        (void) snprintf(p->pod_ip, sizeof(p->pod_ip), "10.88.0.7"); /* network: its sandbox's IP */
        p->statuses[0] = (LcContainerStatus){ .id = "i1", .state = LC_CONTAINER_TERMINATED, .reason = "Completed" };
        p->statuses[1] = (LcContainerStatus){ .id = "c1",
                                              .state = LC_CONTAINER_RUNNING,
                                              .restarts = 2,
                                              .started_at = 1700000000LL * 1000000000LL,
                                              .terminated_before = true,
                                              .exit_code = 137,
                                              .reason = "OOMKilled" };
        text = api_pod_list_json(pods, 2, &info);
        assert_non_null(text);
        doc = json_loads(text, 0, &jerr);
        assert_non_null(doc);
        assert_string_equal(json_string_value(json_object_get(doc, "kind")), "PodList");
        assert_string_equal(json_string_value(json_object_get(doc, "apiVersion")), "v1");
        assert_int_equal(json_array_size(json_object_get(doc, "items")), 1);
        item = json_array_get(json_object_get(doc, "items"), 0);
        st = json_object_get(item, "status");
        assert_string_equal(json_string_value(json_object_get(st, "phase")), "Running");
        assert_string_equal(json_string_value(json_object_get(st, "qosClass")), "Burstable");
        assert_string_equal(json_string_value(json_object_get(st, "podIP")), "10.88.0.7");
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(st, "podIPs"), 0), "ip")),
                            "10.88.0.7");
        assert_string_equal(json_string_value(json_object_get(st, "hostIP")), "10.0.0.5");
        assert_string_equal(json_string_value(json_object_get(json_object_get(item, "metadata"), "name")), "web-node1");
        assert_string_equal(json_string_value(json_object_get(json_object_get(item, "spec"), "nodeName")), "node1");
        cs = json_array_get(json_object_get(st, "containerStatuses"), 0);
        assert_string_equal(json_string_value(json_object_get(cs, "containerID")), "containerd://c1");
        assert_int_equal(json_integer_value(json_object_get(cs, "restartCount")), 2);
        assert_true(json_is_true(json_object_get(cs, "ready")));
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(cs, "state"), "running"),
                                                              "startedAt")),
                            "2023-11-14T22:13:20Z");
        assert_string_equal(json_string_value(json_object_get(
                                    json_object_get(json_object_get(cs, "lastState"), "terminated"), "reason")),
                            "OOMKilled");
        {
                json_t *c;
                size_t i;
                const char *want[] = { "PodReadyToStartContainers", "True", "Initialized",  "True", "Ready", "True",
                                       "ContainersReady",           "True", "PodScheduled", "True" };

                json_array_foreach(json_object_get(st, "conditions"), i, c) {
                        assert_string_equal(json_string_value(json_object_get(c, "type")), want[2 * i]);
                        assert_string_equal(json_string_value(json_object_get(c, "status")), want[2 * i + 1]);
                }
                assert_int_equal(i, 5);
        }
        /* the item decodes as a v1 Pod, with the same spec */
        {
                _cleanup_free_ char *one = json_dumps(item, 0);
                Pod *back = NULL;
                CubError err = {};

                assert_int_equal(pod_decode(one, strlen(one), "item", POD_FORMAT_JSON, &back, &err), 0);
                assert_string_equal(back->name, "web-node1");
                assert_int_equal(back->n_init_containers, 1);
                assert_string_equal(back->containers[0].image, "nginx:1");
                assert_string_equal(back->containers[0].command.items[0], "nginx");
                assert_int_equal(back->containers[0].ports[0].container_port, 80);
                assert_int_equal(cub_quantity_milli(back->containers[0].limits.items[0].q), 500);
                pod_free(back);
        }
        json_decref(doc);
        /* the cache gives the same text, and follows a status change */
        {
                ApiPodCache cache = {};
                char *a = api_pod_list_json_cached(&cache, pods, 2, &info), *b;

                assert_string_equal(a, text);
                assert_int_equal(cache.n, 1);
                free(a);
                p->statuses[1].restarts = 3;
                a = api_pod_list_json_cached(&cache, pods, 2, &info);
                b = api_pod_list_json(pods, 2, &info);
                assert_string_equal(a, b);
                assert_non_null(strstr(a, "\"restartCount\":3"));
                free(a);
                free(b);
                p->wanted = false; /* gone: the cache lets go of it */
                a = api_pod_list_json_cached(&cache, pods, 2, &info);
                assert_string_equal(a, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[]}");
                assert_int_equal(cache.n, 0);
                free(a);
                p->wanted = true;
                api_pod_cache_done(&cache);
        }
        api_pods_gauges(pods, 2, &g);
        assert_int_equal(g.pods, 1);
        assert_int_equal(g.running_pods, 1);
        assert_int_equal(g.containers_running, 1);
        assert_int_equal(g.containers_exited, 1);
        lc_pod_free(p);
        lc_pod_free(q);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st;
        (void) type;
        (void) ftw;
        return remove(path) < 0 ? 0 : 0;
}

static void put(const char *dir, const char *name, const char *text) {
        char path[512];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void cgroup(const char *root, const char *rel, const char *usage, const char *current, const char *inactive) {
        char dir[512], buf[256];

        (void) snprintf(dir, sizeof(dir), "%s/%s", root, rel);
        assert_int_equal(cub_mkdir_p(dir, 0755), 0);
        (void) snprintf(buf, sizeof(buf), "usage_usec %s\nuser_usec 1\nsystem_usec 1\n", usage);
        put(dir, "cpu.stat", buf);
        put(dir, "memory.current", current);
        (void) snprintf(buf, sizeof(buf), "anon 4096\nfile 8192\nactive_file 1\ninactive_file %s\npgfault 9\n",
                        inactive);
        put(dir, "memory.stat", buf);
}

/* an evicted pod and a preemption victim: Failed, kubelet's reason and
 * message, and the DisruptionTarget condition (TerminationByKubelet) */
/* spec.resources (pod-level resources) is rendered as defaulted, and the
 * item decodes back to the same pod-level values and QoS class */
static void test_pod_level_resources(void **state) {
        LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: pl}\n"
                            "spec:\n  resources: {limits: {cpu: \"2\", memory: 1Gi}}\n"
                            "  containers: [{name: a, image: x, resources: {requests: {cpu: 500m}}}]\n");
        LcPod *e = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: e}\n"
                            "spec:\n  resources: {}\n  containers: [{name: a, image: x}]\n");
        ApiPodsInfo info = { .node_name = "node1", .host_ip = "10.0.0.5", .runtime = "containerd" };
        json_t *pj = api_pod_json(p, &info), *res = json_object_get(json_object_get(pj, "spec"), "resources");
        _cleanup_free_ char *one = json_dumps(pj, 0);
        Pod *back = NULL;
        CubError err = {};

        (void) state;
        assert_string_equal(json_string_value(json_object_get(json_object_get(res, "requests"), "cpu")), "500m");
        assert_string_equal(json_string_value(json_object_get(json_object_get(res, "requests"), "memory")), "1Gi");
        assert_string_equal(json_string_value(json_object_get(json_object_get(res, "limits"), "cpu")), "2");
        assert_int_equal(pod_decode(one, strlen(one), "item", POD_FORMAT_JSON, &back, &err), 0);
        assert_int_equal(pod_qos_class(back), POD_QOS_BURSTABLE);
        assert_int_equal(back->resources_requests.n, 2);
        pod_free(back);
        json_decref(pj);
        /* {} stays {}: the pod is BestEffort by it */
        pj = api_pod_json(e, &info);
        res = json_object_get(json_object_get(pj, "spec"), "resources");
        assert_true(json_is_object(res));
        assert_int_equal(json_object_size(res), 0);
        json_decref(pj);
        /* no spec.resources: none rendered */
        lc_pod_free(e);
        e = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: e}\nspec: {containers: [{name: a, image: x}]}\n");
        pj = api_pod_json(e, &info);
        assert_null(json_object_get(json_object_get(pj, "spec"), "resources"));
        json_decref(pj);
        lc_pod_free(e);
        lc_pod_free(p);
}

/* an API pod's ephemeral containers: ephemeralContainerStatuses (never
 * ready, no restarts), and their logs and exec in the snapshot */
static void test_ephemeral_status(void **state) {
        const char *json = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"t\",\"uid\":\"u9\"},"
                           "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"x:1\"}],"
                           "\"ephemeralContainers\":[{\"name\":\"debugger\",\"image\":\"bb:1\"},"
                           "{\"name\":\"later\",\"image\":\"bb:1\"}]}}";
        ApiPodsInfo info = { .node_name = "node1", .runtime = "containerd" };
        WorkerContainer cs[2] = {
                { .id = (char *) "c1", .name = (char *) "app", .state = CRI_CONTAINER_RUNNING, .started_at = NSEC },
                { .id = (char *) "e1",
                  .name = (char *) "debugger",
                  .state = CRI_CONTAINER_RUNNING,
                  .started_at = NSEC },
        };
        WorkerObserved o = {
                .uid = (char *) "u9", .config_hash = (char *) "h", .ready = true, .containers = cs, .n_containers = 2
        };
        Pod *pod = NULL;
        WorkerSpec *spec = NULL;
        CgOptions cg;
        CubError err = {};
        LcPod *p = NULL;
        json_t *pj, *ecs, *e;

        (void) state;
        cg_options_init(&cg);
        assert_int_equal(pod_decode_api(json, strlen(json), "api", &pod, &err), 0);
        pod->config_hash = strdup("h");
        assert_int_equal(worker_spec_new(pod, "api", &cg, "/tmp/http-test-logs", &spec, &err), 0);
        assert_int_equal(lc_pod_new(spec, &p), 0);
        worker_spec_unref(spec);
        (void) lc_pod_observe(p, &o, 1);
        pj = api_pod_json(p, &info);
        ecs = json_object_get(json_object_get(pj, "status"), "ephemeralContainerStatuses");
        assert_int_equal(json_array_size(ecs), 2);
        e = json_array_get(ecs, 0);
        assert_string_equal(json_string_value(json_object_get(e, "name")), "debugger");
        assert_string_equal(json_string_value(json_object_get(e, "containerID")), "containerd://e1");
        assert_non_null(json_object_get(json_object_get(e, "state"), "running"));
        assert_true(json_is_false(json_object_get(e, "ready")));
        assert_int_equal(json_integer_value(json_object_get(e, "restartCount")), 0);
        e = json_array_get(ecs, 1);
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(json_object_get(e, "state"), "waiting"), "reason")),
                "ContainerCreating");
        assert_null(json_object_get(e, "containerID"));
        assert_int_equal(json_array_size(json_object_get(json_object_get(pj, "status"), "containerStatuses")), 1);
        json_decref(pj);
        lc_pod_free(p);
}

static void test_disruption_target(void **state) {
        static const char *const msg = "The node was low on resource: memory. Threshold quantity: 100Mi.";
        ApiPodsInfo info = { .node_name = "node1", .runtime = "containerd" };

        (void) state;
        for (int i = 0; i < 3; i++) {
                LcPod *p = make_pod("apiVersion: v1\nkind: Pod\nmetadata: {name: v}\n"
                                    "spec: {containers: [{name: a, image: x}]}\n");
                json_t *pj, *c, *last = NULL;
                size_t k;

                p->wanted = true;
                if (i == 0) {
                        lc_pod_set_failed(p, "Evicted", msg, 0);
                        p->evicted = true;
                } else if (i == 1)
                        lc_pod_set_failed(p, "Preempted", "Preempted in order to admit critical pod", 0);
                else
                        lc_pod_set_failed(p, "OutOfcpu", "Pod was rejected: Node didn't have enough resource: cpu", 0);
                pj = api_pod_json(p, &info);
                json_array_foreach(json_object_get(json_object_get(pj, "status"), "conditions"), k, c) last = c;
                assert_string_equal(json_string_value(json_object_get(json_object_get(pj, "status"), "phase")),
                                    "Failed");
                if (i == 2) {
                        assert_string_equal(json_string_value(json_object_get(last, "type")), "PodScheduled");
                } else {
                        assert_string_equal(json_string_value(json_object_get(last, "type")), "DisruptionTarget");
                        assert_string_equal(json_string_value(json_object_get(last, "status")), "True");
                        assert_string_equal(json_string_value(json_object_get(last, "reason")), "TerminationByKubelet");
                        assert_string_equal(json_string_value(json_object_get(last, "message")),
                                            i == 0 ? msg
                                                   : "Pod was preempted by Kubelet to accommodate a critical pod.");
                }
                json_decref(pj);
                lc_pod_free(p);
        }
}

static void test_resource(void **state) {
        char root[] = "/tmp/http-render-XXXXXX", proc[600];
        ApiSnapshot *s = api_snapshot_new();
        ApiPodRef *p;
        _cleanup_free_ char *text = NULL, *summary = NULL;
        size_t len = 0;
        FILE *f;
        json_t *doc, *pj;

        (void) state;
        assert_non_null(mkdtemp(root));
        (void) snprintf(proc, sizeof(proc), "%s/proc", root);
        assert_int_equal(cub_mkdir_p(proc, 0755), 0);
        put(proc, "meminfo", "MemTotal: 1000 kB\nMemFree: 200 kB\nMemAvailable: 500 kB\nInactive(file): 100 kB\n");
        put(proc, "stat", "cpu 1 1 1 1 1 1 1 1\nbtime 1700000000\n");
        put(root, "cpu.stat", "usage_usec 5000000\n");
        cgroup(root, "kubepods/podu1", "2500000", "1000000\n", "400000");
        cgroup(root, "kubepods/podu1/c1", "1500000", "600000\n", "700000"); /* inactive > current: 0 */
        s->node_name = strdup("node1");
        p = api_snapshot_add_pod(s, "default", "web-node1", "u1", "kubepods/podu1", "", 1700000000);
        assert_non_null(p);
        assert_int_equal(api_pod_ref_add_container(p, "app", "c1", true, 1700000001LL * 1000000000LL), 0);
        assert_int_equal(api_pod_ref_add_container(p, "side", "", false, 0), 0);
        p = api_snapshot_add_pod(s, "default", "nocgroup-node1", "u2", "kubepods/podu2", "", 1700000000);
        assert_non_null(p);

        f = open_memstream(&text, &len);
        assert_int_equal(api_resource_metrics(s, root, proc, f), 0);
        fclose(f);
        assert_non_null(strstr(text, "\nnode_cpu_usage_seconds_total 5.000000 "));
        /* (1000 - 200 - 100) KiB */
        assert_non_null(strstr(text, "\nnode_memory_working_set_bytes 716800 "));
        assert_non_null(
                strstr(text, "\npod_cpu_usage_seconds_total{namespace=\"default\",pod=\"web-node1\"} 2.500000 "));
        assert_non_null(
                strstr(text, "\npod_memory_working_set_bytes{namespace=\"default\",pod=\"web-node1\"} 600000 "));
        assert_non_null(strstr(text, "\ncontainer_cpu_usage_seconds_total{container=\"app\",namespace=\"default\","
                                     "pod=\"web-node1\"} 1.500000 "));
        assert_non_null(strstr(text, "\ncontainer_memory_working_set_bytes{container=\"app\",namespace=\"default\","
                                     "pod=\"web-node1\"} 0 "));
        assert_non_null(strstr(text, "\ncontainer_start_time_seconds{container=\"app\",namespace=\"default\","
                                     "pod=\"web-node1\"} 1700000001.000000000 "));
        assert_null(strstr(text, "side"));
        assert_null(strstr(text, "nocgroup"));
        assert_non_null(strstr(text, "\nscrape_error 0\n"));

        summary = api_stats_summary(s, root, proc, root);
        doc = json_loads(summary, 0, NULL);
        assert_non_null(doc);
        assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "node"), "nodeName")), "node1");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(doc, "node"), "memory"),
                                                            "workingSetBytes")),
                         716800);
        assert_true(json_integer_value(
                            json_object_get(json_object_get(json_object_get(doc, "node"), "fs"), "capacityBytes")) > 0);
        pj = json_array_get(json_object_get(doc, "pods"), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(pj, "podRef"), "uid")), "u1");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(pj, "cpu"), "usageCoreNanoSeconds")),
                         2500000000LL);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(pj, "memory"), "workingSetBytes")), 600000);
        assert_string_equal(
                json_string_value(json_object_get(json_array_get(json_object_get(pj, "containers"), 0), "startTime")),
                "2023-11-14T22:13:21Z");
        json_decref(doc);

        /* no node stats: scrape_error 1 */
        free(text);
        text = NULL;
        f = open_memstream(&text, &len);
        assert_int_equal(api_resource_metrics(s, root, "/nonexistent", f), 0);
        fclose(f);
        assert_non_null(strstr(text, "\nscrape_error 1\n"));
        api_snapshot_unref(s);
        (void) nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_metrics_text),
                cmocka_unit_test(test_process_metrics),
                cmocka_unit_test(test_pod_list),
                cmocka_unit_test(test_probe_status),
                cmocka_unit_test(test_resource),
                cmocka_unit_test(test_disruption_target),
                cmocka_unit_test(test_pod_level_resources),
                cmocka_unit_test(test_ephemeral_status),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
