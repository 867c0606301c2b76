/* SPDX-License-Identifier: Apache-2.0 */
/* agent/loop as a whole (libloop.a with the real managers) on a fake worker
 * pool: the linker sends the loop's worker_pool_* calls here (-Wl,--wrap,
 * see the Makefile), jobs wait in a list and the test answers them as the
 * runtime would; the cgroup writer is a fake that records the groups
 * written (and how many sync jobs were submitted by then). One decision
 * end to end: a manifest in the directory is admitted, gets its pod cgroup
 * (the cgroups manager) before its sync, observed running; its file goes, the pod leaves the
 * table, the next relist finds it still running and stops it (with its
 * spec, for the preStop hooks); the stop ends and the kill table is empty. */
#include "loop-fixture.h"

static void test_manifest_to_stop(void **state) {
        Fixture *f = *state;
        Agent *a = NULL;
        CubError err = {};
        WorkerJob *j;
        LcPod *p;
        char uid[128], hash[128];

        write_manifest(f, "web.yaml", WEB);
        if (agent_new(&f->o, &a, &err) < 0)
                fail_msg("agent_new: %s", err.msg);

        /* the first scan: web is in the table, wanted and admitted, its sync
         * and the first relist are submitted */
        assert_int_equal(a->table.n_pods, 1);
        p = a->table.pods[0];
        assert_true(p->wanted && p->admitted && p->busy);
        (void) snprintf(uid, sizeof(uid), "%s", p->spec->pod->uid);
        (void) snprintf(hash, sizeof(hash), "%s", p->spec->pod->config_hash);
        assert_ptr_equal(agent_find_pod(a, uid), p);
        assert_int_equal(count_submitted(a->core.pool, WORKER_SYNC), 1);
        assert_int_equal(count_submitted(a->core.pool, WORKER_RELIST), 1);
        assert_true(status_has(a, "\"name\": \"web-node1\""));

        /* the cgroups manager: the QoS groups before the first scan, then
         * the pod cgroup once admitted, before its sync job was submitted,
         * and its latency taken then; nothing else */
        assert_int_equal(n_cg_writes, 4);
        assert_int_equal(cg_written("kubepods"), 0);
        assert_int_equal(cg_written("kubepods/burstable"), 1);
        assert_int_equal(cg_written("kubepods/besteffort"), 2);
        assert_int_equal(cg_written(p->spec->cgroup.path), 3);
        assert_non_null(strstr(p->spec->cgroup.path, "kubepods/besteffort/pod"));
        assert_int_equal(cg_writes[3].syncs, 0);
        assert_true(p->latency.cgroup > 0);

        /* the sync succeeds: pod_started; the relist finds it running */
        j = take_submitted(a->core.pool, WORKER_SYNC);
        assert_ptr_equal(j->spec, p->spec);
        assert_non_null(j->configs);
        assert_string_equal(j->configs[0].cpuset, "");
        j->r = 0;
        answer(a, j);
        assert_false(p->busy);
        assert_true(p->started);
        answer_relist(a, uid, hash); /* the relist the sync's end asked for waits behind this one */
        assert_true(p->observed);
        assert_int_equal(p->phase, LC_PHASE_RUNNING);
        assert_int_equal(a->rt->n_running, 1);
        assert_true(a->rt->state == AGENT_RUNTIME_READY && a->rt->notified_ready);

        /* the file goes (inotify): the pod leaves the table at once (no job
         * of it in flight), its spec is kept for the stop's preStop hooks */
        remove_manifest(f, "web.yaml");
        for (int i = 0; i < 16 && a->table.n_pods > 0; i++)
                assert_true(sd_event_run(a->core.event, 100000) >= 0);
        assert_int_equal(a->table.n_pods, 0);
        assert_null(agent_find_pod(a, uid));
        assert_int_equal(agent_stops_gone_specs(a), 1);
        assert_int_equal(n_cg_writes, 4); /* a besteffort pod left: the QoS values stay */
        assert_false(status_has(a, "\"name\": \"web-node1\""));

        /* the next relist still finds it: stopped, with its spec */
        while (count_submitted(a->core.pool, WORKER_RELIST) > 1)
                answer_relist(a, uid, hash);
        answer_relist(a, uid, hash);
        assert_true(agent_is_killing(a, uid));
        assert_true(status_has(a, "\"stopping\": [\n    {"));
        j = take_submitted(a->core.pool, WORKER_KILL);
        assert_non_null(j);
        assert_string_equal(j->uid, uid);
        assert_int_equal(j->grace, 30);
        assert_non_null(j->spec);
        assert_int_equal(agent_stops_gone_specs(a), 0);
        assert_null(take_submitted(a->core.pool, WORKER_KILL));

        /* the stop ends: out of the kill table, and a relist asked for */
        j->r = 0;
        answer(a, j);
        assert_false(agent_is_killing(a, uid));
        assert_int_equal(agent_kills(a)->n, 0);
        while (count_submitted(a->core.pool, WORKER_RELIST) > 0)
                answer_relist(a, NULL, NULL);
        assert_null(take_submitted(a->core.pool, WORKER_KILL));

        agent_free(a);
}

static bool metrics_have(Agent *a, const char *line) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        ApiGauges g = { .node_name = "node1" };

        assert_non_null(m);
        assert_non_null(agent_metrics(a));
        assert_int_equal(api_metrics_render(agent_metrics(a), &g, m), 0);
        assert_int_equal(fclose(m), 0);
        return strstr(text, line) != NULL;
}

/* The decisions that stop at the pod table: a pod no manager admits is
 * terminal and never synced (kubelet's rejectPod, its counter), a manifest
 * that does not decode is an error in cubelet status until it goes. */
static void test_rejected_and_broken(void **state) {
        Fixture *f = *state;
        Agent *a = NULL;
        CubError err = {};
        LcPod *p;

        write_manifest(f, "big.yaml",
                       "apiVersion: v1\nkind: Pod\nmetadata: {name: big}\nspec:\n  containers:\n"
                       "  - name: app\n    image: busybox\n    resources: {requests: {cpu: \"100000\"}}\n");
        write_manifest(f, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: [\n");
        if (agent_new(&f->o, &a, &err) < 0)
                fail_msg("agent_new: %s", err.msg);
        assert_int_equal(a->table.n_pods, 1);
        p = a->table.pods[0];
        assert_true(p->wanted && p->terminal);
        assert_false(p->admitted || p->busy);
        assert_int_equal(p->phase, LC_PHASE_FAILED);
        assert_string_equal(p->reason, "OutOfcpu");
        assert_int_equal(count_submitted(a->core.pool, WORKER_SYNC), 0);
        /* refused by admission, before the cgroups manager: no pod cgroup,
         * and its cpu request is not in the burstable group (kubelet's
         * GetActivePods: the QoS groups are written once, with nothing) */
        assert_int_equal(n_cg_writes, 3);
        assert_int_equal(cg_written(p->spec->cgroup.path), -1);
        assert_int_equal(p->latency.cgroup, 0);
        assert_true(metrics_have(a, "kubelet_admission_rejections_total{reason=\"OutOfcpu\"} 1"));
        assert_int_equal(a->errs->n_dir, 1);
        size_t n_dir;
        assert_non_null(strstr(agent_source_dir_errors(a, &n_dir)[0].source, "bad.yaml"));
        assert_true(metrics_have(a, "cubelet_manifest_errors_total 1"));
        assert_true(status_has(a, "bad.yaml"));

        /* the relist finds nothing: nothing to stop, the rejected pod stays */
        answer_relist(a, NULL, NULL);
        assert_null(take_submitted(a->core.pool, WORKER_KILL));
        assert_int_equal(a->table.n_pods, 1);

        /* the broken file goes: its error too (the rescan) */
        remove_manifest(f, "bad.yaml");
        agent_rescan(a);
        assert_int_equal(a->errs->n_dir, 0);
        assert_false(status_has(a, "bad.yaml"));
        agent_free(a);
}

/* featureGates.MemoryQoS: each pod cgroup gets its memory request as
 * memory.min, the QoS groups the sums of the active pods' (setMemoryQoS):
 * kubepods the Guaranteed and Burstable pods', the burstable group the
 * Burstable pods'; a sum that falls to 0 is not written (kubelet leaves
 * the file as it was). */
static void test_memory_qos(void **state) {
        Fixture *f = *state;
        Agent *a = NULL;
        CubError err = {};
        WorkerJob *j;

        f->o.kc.memory_qos = true;
        write_manifest(f, "b.yaml",
                       "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers:\n  - name: app\n"
                       "    image: busybox\n    resources: {requests: {memory: 64Mi}, limits: {memory: 128Mi}}\n");
        write_manifest(f, "g.yaml",
                       "apiVersion: v1\nkind: Pod\nmetadata: {name: g}\nspec:\n  containers:\n  - name: app\n"
                       "    image: busybox\n    resources: {limits: {cpu: 100m, memory: 32Mi}}\n");
        if (agent_new(&f->o, &a, &err) < 0)
                fail_msg("agent_new: %s", err.msg);
        assert_int_equal(a->table.n_pods, 2);
        for (size_t i = 0; i < a->table.n_pods; i++) {
                const CgGroupValues *g = &a->table.pods[i]->spec->cgroup;

                assert_int_not_equal(cg_written(g->path), -1);
                assert_string_equal(cg_last_min(g->path),
                                    a->table.pods[i]->spec->qos == POD_QOS_BURSTABLE ? "67108864" : "33554432");
        }
        assert_string_equal(cg_last_min("kubepods"), "100663296");
        assert_string_equal(cg_last_min("kubepods/burstable"), "67108864");
        assert_string_equal(cg_last_min("kubepods/besteffort"), "");

        /* the syncs end; the Burstable pod's file goes: out of the sums */
        while ((j = take_submitted(a->core.pool, WORKER_SYNC))) {
                j->r = 0;
                answer(a, j);
        }
        remove_manifest(f, "b.yaml");
        for (int i = 0; i < 16 && a->table.n_pods > 1; i++)
                assert_true(sd_event_run(a->core.event, 100000) >= 0);
        assert_int_equal(a->table.n_pods, 1);
        assert_string_equal(cg_last_min("kubepods"), "33554432");
        assert_string_equal(cg_last_min("kubepods/burstable"), "");
        agent_free(a);
}

/* The runtime away: a failed relist sets the next one on the retry policy
 * (1 s, 2 s, 4 s, then every 5 s), not the relist period, with one journal
 * line for the whole outage; the first relist that answers ends the run. */
static void test_runtime_away(void **state) {
        Fixture *f = *state;
        Agent *a = NULL;
        CubError err = {};
        static const uint64_t want_s[] = { 1, 2, 4, 5, 5, 5 };

        if (agent_new(&f->o, &a, &err) < 0)
                fail_msg("agent_new: %s", err.msg);
        for (size_t i = 0; i < sizeof(want_s) / sizeof(*want_s); i++) {
                WorkerJob *j;
                uint64_t now, at;

                if (i > 0)
                        agent_request_relist(a);
                j = take_submitted(a->core.pool, WORKER_RELIST);
                assert_non_null(j);
                j->r = -ECONNREFUSED;
                (void) snprintf(j->error, sizeof(j->error), "ListPodSandbox: UNAVAILABLE (14): no runtime");
                now = agent_now_usec();
                answer(a, j);
                assert_int_equal(a->rt->state, AGENT_RUNTIME_DOWN);
                assert_int_equal(agent_runtime_retry(a)->failures, i + 1);
                at = agent_relist_due(a);
                assert_true(at >= now + want_s[i] * CUB_USEC_PER_SEC);
                assert_true(at <= agent_now_usec() + want_s[i] * CUB_USEC_PER_SEC);
        }
        /* back: the run ends, the relist period again */
        agent_request_relist(a);
        answer_relist(a, NULL, NULL);
        assert_int_equal(a->rt->state, AGENT_RUNTIME_READY);
        assert_int_equal(agent_runtime_retry(a)->failures, 0);
        assert_int_equal(agent_relist_period(a, agent_now_usec()), f->o.relist_usec);
        agent_free(a);
}

/* A node that starts with its manifest URL unreachable: the answer kept in
 * the state directory is the URL's set at once (admitted and synced like a
 * manifest's pod, the sources ready), and a failed GET keeps it. */
static void test_url_offline(void **state) {
        Fixture *f = *state;
        Agent *a = NULL;
        CubError err = {};
        unsigned char md[32];
        unsigned int n = 0;
        char hex[65];
        _cleanup_free_ char *cache = NULL;
        json_t *j;

        assert_true(asprintf(&f->o.manifest_url, "http://127.0.0.1:1/pods.yaml") > 0);
        assert_true(asprintf(&cache, "%s/manifest_url_cache", f->o.state_dir) > 0);
        assert_int_equal(EVP_Digest(WEB, strlen(WEB), md, &n, EVP_sha256(), NULL), 1);
        for (size_t i = 0; i < 32; i++)
                (void) snprintf(hex + 2 * i, 3, "%02x", md[i]);
        j = json_pack("{s:i,s:s,s:s,s:s,s:s}", "version", 1, "url", f->o.manifest_url, "etag", "\"1\"", "sha256", hex,
                      "body", WEB);
        assert_int_equal(json_dump_file(j, cache, 0), 0);
        json_decref(j);
        if (agent_new(&f->o, &a, &err) < 0)
                fail_msg("agent_new: %s", err.msg);
        assert_int_equal(a->table.n_pods, 1);
        assert_true(a->table.pods[0]->wanted && a->table.pods[0]->admitted);
        assert_true(agent_pod_from_url(a, a->table.pods[0]));
        assert_int_equal(count_submitted(a->core.pool, WORKER_SYNC), 1);
        assert_true(agent_sources_ready(a));
        assert_true(status_has(a, "\"inUse\": true"));
        /* the GET fails (nothing on port 1): the pod stays */
        for (int i = 0; i < 50 && podsrc_http_stats(a->url->source)->fetches[PODSRC_HTTP_ERROR] == 0; i++)
                assert_true(sd_event_run(a->core.event, 100000) >= 0);
        assert_int_equal(podsrc_http_stats(a->url->source)->fetches[PODSRC_HTTP_ERROR], 1);
        assert_int_equal(a->table.n_pods, 1);
        assert_true(a->table.pods[0]->wanted);
        assert_true(status_has(a, "127.0.0.1:1"));
        agent_free(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_manifest_to_stop, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rejected_and_broken, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_away, setup, teardown),
                cmocka_unit_test_setup_teardown(test_memory_qos, setup, teardown),
                cmocka_unit_test_setup_teardown(test_url_offline, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
