/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP API with 110 pods (2 containers each), on this host: what one
 * snapshot costs the loop (PodList + metrics + cgroup list), then requests
 * per second on 127.0.0.1 for /metrics, /pods, /metrics/resource and
 * /stats/summary (one libcurl client, keep-alive, 2 s each; the resource
 * endpoints read a cgroup tree of 110 pods written under /tmp). Printed,
 * not asserted. */
#include <curl/curl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/api/http.h"
#include "agent/api/pods.h"
#include "agent/util/fileio.h"
#include "agent/util/time.h"

#define N_PODS 110

static LcPod *make_pod(int i) {
        char yaml[1024];
        Pod *pod = NULL;
        WorkerSpec *spec = NULL;
        CgOptions cg;
        CubError err = {};
        LcPod *p = NULL;

        (void) snprintf(
                yaml, sizeof(yaml),
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web%d, labels: {app: web, tier: front}}\n"
                "spec:\n  containers:\n  - name: app\n    image: nginx:1.25\n    command: [nginx, -g, daemon off;]\n"
                "    ports: [{containerPort: 80}]\n    env: [{name: A, value: b}]\n"
                "    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}\n"
                "  - name: sidecar\n    image: busybox:1\n    command: [sleep, inf]\n",
                i);
        cg_options_init(&cg);
        if (pod_decode_static(yaml, strlen(yaml), "b.yaml", POD_FORMAT_YAML, "node1", POD_SOURCE_FILE, "b.yaml", &pod,
                              &err) < 0 ||
            worker_spec_new(pod, "b.yaml", &cg, "/tmp", &spec, &err) < 0 || lc_pod_new(spec, &p) < 0) {
                fprintf(stderr, "pod %d: %s\n", i, err.msg);
                exit(1);
        }
        worker_spec_unref(spec);
        p->wanted = p->observed = p->admitted = true;
        p->phase = LC_PHASE_RUNNING;
        p->latency.event = 1;
        for (size_t k = 0; k < p->n; k++) {
                p->statuses[k].state = LC_CONTAINER_RUNNING;
                p->statuses[k].started_at = 1700000000LL * 1000000000LL;
                (void) snprintf(p->statuses[k].id, sizeof(p->statuses[k].id), "c%d-%zu", i, k);
        }
        return p;
}

static void put(const char *dir, const char *name, const char *text) {
        char path[1200];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "we");
        if (f) {
                fputs(text, f);
                fclose(f);
        }
}

static void fake_cgroup(const char *dir) {
        (void) cub_mkdir_p(dir, 0755);
        put(dir, "cpu.stat", "usage_usec 123456789\nuser_usec 1\nsystem_usec 1\nnr_periods 0\n");
        put(dir, "memory.current", "73400320\n");
        put(dir, "memory.stat",
            "anon 52428800\nfile 20971520\nkernel 1048576\nactive_anon 1\ninactive_anon 1\n"
            "active_file 1\ninactive_file 10485760\npgfault 1000\npgmajfault 3\n");
}

/* What the loop renders on a tick after a client asked. */
static ApiSnapshot *build(ApiPodCache *cache, LcPod **pods, const ApiPodsInfo *info) {
        ApiMetrics m;
        ApiGauges g = { .version = "bench" };
        ApiSnapshot *s = api_snapshot_new();
        size_t len = 0;
        FILE *f = open_memstream(&s->metrics, &len);

        api_metrics_init(&m);
        s->made_usec = cub_now_usec(CLOCK_MONOTONIC);
        s->node_name = strdup("node1");
        s->pods_json = api_pod_list_json_cached(cache, pods, N_PODS, info);
        api_pods_gauges(pods, N_PODS, &g);
        (void) api_metrics_render(&m, &g, f);
        fclose(f);
        (void) api_snapshot_add_pods(s, pods, N_PODS, info);
        api_metrics_done(&m);
        return s;
}

static size_t sink(char *p, size_t size, size_t n, void *userdata) {
        (void) p;
        *(size_t *) userdata += size * n;
        return size * n;
}

static double now_s(void) {
        return (double) cub_now_usec(CLOCK_MONOTONIC) / 1e6;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st;
        (void) type;
        (void) ftw;
        (void) remove(path);
        return 0;
}

int main(void) {
        LcPod *pods[N_PODS];
        ApiPodsInfo info = { .node_name = "node1", .host_ip = "10.0.0.5", .runtime = "containerd" };
        ApiHttpConfig c;
        ApiHttp *h = NULL;
        CubError err = {};
        char root[] = "/tmp/bench-http-XXXXXX", dir[1024], url[128];
        ApiSnapshot *s;
        CURL *cu;
        double t0, per, last = 0;
        ApiPodCache snap_cache = {};
        size_t bytes = 0;
        int rounds = 0;

        for (int i = 0; i < N_PODS; i++)
                pods[i] = make_pod(i);
        if (!mkdtemp(root))
                return 1;
        fake_cgroup(root);
        for (int i = 0; i < N_PODS; i++) {
                (void) snprintf(dir, sizeof(dir), "%s/%s", root, pods[i]->spec->cgroup.path);
                fake_cgroup(dir);
                for (size_t k = 0; k < pods[i]->n; k++) {
                        (void) snprintf(dir, sizeof(dir), "%s/%s/%s", root, pods[i]->spec->cgroup.path,
                                        pods[i]->statuses[k].id);
                        fake_cgroup(dir);
                }
        }

        /* the loop's cost of one snapshot */
        t0 = now_s();
        for (;;) {
                s = build(&snap_cache, pods, &info);
                if (++rounds >= 200 && now_s() - t0 >= 1)
                        break;
                api_snapshot_unref(s);
        }
        per = (now_s() - t0) / rounds;
        printf("snapshot of %d pods on the loop (no pod changed): %.0f us (%d rounds), PodList %zu bytes\n", N_PODS,
               per * 1e6, rounds, strlen(s->pods_json));
        t0 = now_s();
        for (int i = 0; i < 200; i++)
                free(api_pod_list_json(pods, N_PODS, &info));
        printf("the PodList rendered afresh (every pod changed): %.0f us\n", (now_s() - t0) / 200 * 1e6);
        {
                ApiPodCache cache = {};
                char *a = api_pod_list_json_cached(&cache, pods, N_PODS, &info),
                     *b = api_pod_list_json(pods, N_PODS, &info);

                printf("  the cached PodList is the same text: %s\n", strcmp(a, b) == 0 ? "yes" : "NO");
                free(a);
                free(b);
                t0 = now_s();
                for (int i = 0; i < 200; i++)
                        free(api_pod_list_json_cached(&cache, pods, N_PODS, &info));
                printf("  the PodList from the cache (no pod changed): %.0f us\n", (now_s() - t0) / 200 * 1e6);
                api_pod_cache_done(&cache);
        }

        api_http_config_init(&c);
        c.port = API_HTTP_PORT_ANY;
        c.cgroup_root = root;
        c.fs_path = "/tmp";
        if (api_http_new(&c, &h, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
        }
        api_http_heartbeat(h, cub_now_usec(CLOCK_MONOTONIC), 0, true);
        api_http_publish(h, s);
        curl_global_init(CURL_GLOBAL_DEFAULT);
        cu = curl_easy_init();
        curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(cu, CURLOPT_WRITEDATA, &bytes);
        for (const char *const *p =
                     (const char *const[]){ "/metrics", "/pods", "/metrics/resource", "/stats/summary", NULL };
             *p; p++) {
                int n = 0;
                long status = 0;

                (void) snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", api_http_port(h), *p);
                curl_easy_setopt(cu, CURLOPT_URL, url);
                bytes = 0;
                t0 = now_s();
                while (now_s() - t0 < 2) {
                        /* the snapshot stays fresh as the loop would keep it */
                        if (curl_easy_perform(cu) != CURLE_OK)
                                break;
                        curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &status);
                        if (status != 200)
                                break;
                        /* the loop's 1 s tick: heartbeat, and a snapshot when asked */
                        if (now_s() - last >= 1) {
                                last = now_s();
                                api_http_heartbeat(h, cub_now_usec(CLOCK_MONOTONIC), 0, true);
                                if (api_http_take_wanted(h))
                                        api_http_publish(h, build(&snap_cache, pods, &info));
                        }
                        n++;
                }
                printf("%-18s %6.0f requests/s, %7zu bytes each (status %ld, %d pods, keep-alive, one client)\n", *p,
                       n / (now_s() - t0), n ? bytes / (size_t) n : 0, status, N_PODS);
        }
        curl_easy_cleanup(cu);
        curl_global_cleanup();
        api_http_free(h);
        api_pod_cache_done(&snap_cache);
        for (int i = 0; i < N_PODS; i++)
                lc_pod_free(pods[i]);
        (void) nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}
