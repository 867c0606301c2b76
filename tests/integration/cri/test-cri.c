/* SPDX-License-Identifier: Apache-2.0 */
/* cri/ against a real containerd (started by tests/integration/run.sh with
 * the local pause and busybox images imported). CUBELET_TEST_CRI names its
 * socket; without it the suite is skipped. */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cri/cri.h"

#define BUSYBOX "localhost/cubelet/busybox:1"
#define PAUSE "localhost/cubelet/pause:1"

static const char *endpoint;
static char logdir[] = "/tmp/cubelet-cri-logs-XXXXXX";

static int setup(void **state) {
        CriClient *c = NULL;
        CubError err = {};

        if (cri_client_new(endpoint, 60ULL * 1000000ULL, &c, &err) < 0) {
                fprintf(stderr, "%s\n", err.msg);
                return -1;
        }
        *state = c;
        return 0;
}

static int teardown(void **state) {
        cri_client_free(*state);
        return 0;
}

static void wait_state(CriClient *c, const char *id, CriContainerState want, CriContainerStatus *ret) {
        CubError err = {};

        for (int i = 0; i < 200; i++) {
                assert_int_equal(cri_container_status(c, id, ret, &err), 0);
                if (ret->state == want)
                        return;
                cri_container_status_done(ret);
                usleep(50 * 1000);
        }
        fail_msg("container %s never reached state %s", id, cri_container_state_to_string(want));
}

static void test_version(void **state) {
        CriVersion v;
        CubError err = {};

        assert_int_equal(cri_version(*state, &v, &err), 0);
        assert_string_equal(v.runtime_name, "containerd");
        assert_string_equal(v.runtime_api_version, "v1");
}

static void test_image_status(void **state) {
        bool present = false;
        char *id = NULL;
        CubError err = {};

        assert_int_equal(cri_image_status(*state, BUSYBOX, &present, &id, NULL, &err), 0);
        assert_true(present);
        assert_non_null(id);
        assert_int_equal(strncmp(id, "sha256:", 7), 0);
        free(id);
        assert_int_equal(cri_image_status(*state, "localhost/cubelet/absent:1", &present, NULL, NULL, &err), 0);
        assert_false(present);
}

static const char *const sandbox_labels[] = { "cubelet.io/managed", "true", "cubelet.io/pod-uid", "uid-test-1", NULL };

static CriSandboxConfig sandbox_cfg(void) {
        return (CriSandboxConfig){
                .name = "it-pod",
                .uid = "uid-test-1",
                .namespace_ = "default",
                .attempt = 0,
                .hostname = "it-pod",
                .log_directory = logdir,
                .labels = sandbox_labels,
                .cgroup_parent = "/cubelet-it/poduid-test-1",
                .host_network = true,
        };
}

static void test_pod_lifecycle(void **state) {
        CriClient *c = *state;
        CriSandboxConfig sbc = sandbox_cfg();
        static const char *const sel[] = { "cubelet.io/pod-uid", "uid-test-1", NULL };
        static const char *const sh_sleep[] = { "sh", "-c", "echo hello; exec sleep 3600", NULL };
        static const char *const sh_exit3[] = { "sh", "-c", "exit 3", NULL };
        static const char *const clabels[] = { "cubelet.io/managed", "true", "cubelet.io/container-name", "app", NULL };
        static const char *const envs[] = { "GREETING", "hello", NULL };
        char *sid = NULL, *cid = NULL, *cid2 = NULL;
        CriSandbox *sb = NULL, st = {};
        CriContainer *ct = NULL;
        CriContainerStatus cs = {};
        size_t n = 0;
        CubError err = {};
        CriContainerConfig cfg = {
                .name = "app",
                .image = BUSYBOX,
                .command = sh_sleep,
                .envs = envs,
                .labels = clabels,
                .log_path = "app/0.log",
                .resources = { .cpu_shares = 512,
                               .cpu_quota = 50000,
                               .cpu_period = 100000,
                               .memory_limit_in_bytes = 64 << 20,
                               .oom_score_adj = 500 },
        };

        assert_int_equal(cri_run_pod_sandbox(c, &sbc, &sid, &err), 0);
        assert_int_equal(cri_pod_sandbox_status(c, sid, &st, &err), 0);
        assert_int_equal(st.state, CRI_SANDBOX_READY);
        assert_string_equal(st.name, "it-pod");
        assert_string_equal(st.namespace_, "default");
        assert_string_equal(cri_kv_get(st.labels, "cubelet.io/pod-uid"), "uid-test-1");
        cri_sandbox_done(&st);

        assert_int_equal(cri_list_pod_sandboxes(c, sel, &sb, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(sb[0].id, sid);
        assert_string_equal(cri_kv_get(sb[0].labels, "cubelet.io/pod-uid"), "uid-test-1");
        assert_string_equal(cri_kv_get(sb[0].labels, "cubelet.io/managed"), "true");
        cri_sandboxes_free(sb, n);

        assert_int_equal(cri_create_container(c, sid, &cfg, &sbc, &cid, &err), 0);
        assert_int_equal(cri_start_container(c, cid, &err), 0);
        wait_state(c, cid, CRI_CONTAINER_RUNNING, &cs);
        assert_string_equal(cs.name, "app");
        assert_string_equal(cri_kv_get(cs.labels, "cubelet.io/container-name"), "app");
        assert_true(cs.has_resources);
        assert_int_equal(cs.memory_limit_in_bytes, 64 << 20);
        assert_int_equal(cs.cpu_quota, 50000);
        assert_int_equal(cs.cpu_shares, 512);
        cri_container_status_done(&cs);

        {
                CriResources upd = { .memory_limit_in_bytes = 96 << 20, .cpu_quota = 20000, .cpu_period = 100000 };
                assert_int_equal(cri_update_container_resources(c, cid, &upd, &err), 0);
                assert_int_equal(cri_container_status(c, cid, &cs, &err), 0);
                assert_int_equal(cs.memory_limit_in_bytes, 96 << 20);
                assert_int_equal(cs.cpu_quota, 20000);
                cri_container_status_done(&cs);
        }

        assert_int_equal(cri_list_containers(c, sid, NULL, &ct, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(ct[0].name, "app");
        assert_int_equal(ct[0].state, CRI_CONTAINER_RUNNING);
        assert_string_equal(cri_kv_get(ct[0].labels, "cubelet.io/container-name"), "app");
        cri_containers_free(ct, n);

        {
                /* probes and hooks: ExecSync's exit code and output, and its timeout */
                static const char *const echo[] = { "sh", "-c", "echo out; echo err >&2; exit 4", NULL };
                static const char *const slow[] = { "sleep", "10", NULL };
                CriExecResult res = {};

                assert_int_equal(cri_exec_sync(c, cid, echo, 5, &res, &err), 0);
                assert_int_equal(res.exit_code, 4);
                assert_string_equal(res.out, "out\n");
                assert_string_equal(res.err_out, "err\n");
                assert_int_equal(res.n_out, 4);
                cri_exec_result_done(&res);
                assert_int_equal(cri_exec_sync(c, cid, slow, 1, &res, &err), -ETIMEDOUT);
                assert_int_equal(cri_exec_sync(c, "no-such-container", echo, 1, &res, &err), -ENOENT);
        }

        /* sh as PID 1 ignores SIGTERM: SIGKILL after the timeout, exit 137 */
        assert_int_equal(cri_stop_container(c, cid, 1, &err), 0);
        wait_state(c, cid, CRI_CONTAINER_EXITED, &cs);
        assert_int_equal(cs.exit_code, 137);
        assert_string_equal(cs.reason, "Error");
        cri_container_status_done(&cs);

        cfg.name = "exits";
        cfg.command = sh_exit3;
        cfg.attempt = 2;
        assert_int_equal(cri_create_container(c, sid, &cfg, &sbc, &cid2, &err), 0);
        assert_int_equal(cri_start_container(c, cid2, &err), 0);
        wait_state(c, cid2, CRI_CONTAINER_EXITED, &cs);
        assert_int_equal(cs.exit_code, 3);
        assert_int_equal(cs.attempt, 2);
        assert_string_equal(cs.reason, "Error");
        cri_container_status_done(&cs);

        assert_int_equal(cri_remove_container(c, cid, &err), 0);
        assert_int_equal(cri_remove_container(c, cid2, &err), 0);
        assert_int_equal(cri_remove_container(c, cid, &err), 0); /* idempotent */
        assert_int_equal(cri_stop_pod_sandbox(c, sid, &err), 0);
        assert_int_equal(cri_remove_pod_sandbox(c, sid, &err), 0);
        assert_int_equal(cri_remove_pod_sandbox(c, sid, &err), 0);
        {
                /* NOT_FOUND is success for stop and remove, and leaves err alone; not for start */
                CubError untouched = {};

                assert_int_equal(cri_stop_pod_sandbox(c, sid, &untouched), 0);
                assert_int_equal(cri_remove_container(c, cid2, &untouched), 0);
                assert_int_equal(untouched.code, 0);
                assert_string_equal(untouched.msg, "");
                assert_int_equal(cri_start_container(c, cid2, &err), -ENOENT);
                assert_non_null(strstr(err.msg, "/runtime.v1.RuntimeService/StartContainer: NOT_FOUND (5)"));
        }
        assert_int_equal(cri_list_pod_sandboxes(c, sel, &sb, &n, &err), 0);
        assert_int_equal(n, 0);
        cri_sandboxes_free(sb, n);
        free(sid);
        free(cid);
        free(cid2);
}

static void test_errors_name_the_peer(void **state) {
        CubError err = {};
        char expect[512];
        CriClient *dead = NULL;
        CriVersion v;

        assert_int_equal(cri_start_container(*state, "no-such-container", &err), -ENOENT);
        snprintf(expect, sizeof(expect),
                 "'%s': /runtime.v1.RuntimeService/StartContainer: NOT_FOUND (5): ", cri_client_endpoint(*state));
        assert_int_equal(strncmp(err.msg, expect, strlen(expect)), 0);
        assert_non_null(strstr(err.msg, "no-such-container"));

        assert_int_equal(cri_client_new("unix:///tmp/cubelet-no-such-runtime.sock", 2000000, &dead, &err), 0);
        assert_int_equal(cri_version(dead, &v, &err), -ECONNREFUSED);
        assert_non_null(strstr(err.msg, "'unix:///tmp/cubelet-no-such-runtime.sock': "
                                        "/runtime.v1.RuntimeService/Version: UNAVAILABLE (14): "));
        cri_client_free(dead);

        assert_int_equal(cri_client_new("tcp://127.0.0.1:1", 0, &dead, &err), -EINVAL);
        assert_string_equal(err.msg, "gRPC target 'tcp://127.0.0.1:1': only unix sockets are supported");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        (void) remove(path);
        return 0;
}

int main(void) {
        int r;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_version),
                cmocka_unit_test(test_image_status),
                cmocka_unit_test(test_pod_lifecycle),
                cmocka_unit_test(test_errors_name_the_peer),
        };

        endpoint = getenv("CUBELET_TEST_CRI");
        if (!endpoint) {
                printf("1..0 # SKIP CUBELET_TEST_CRI is not set (tests/integration/run.sh starts containerd)\n");
                return 77;
        }
        if (!mkdtemp(logdir))
                return 1;
        r = cmocka_run_group_tests(tests, setup, teardown);
        /* the containers' logs go with the run */
        (void) nftw(logdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return r;
}
