/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent/cpumanager/checkpoint.c: kubelet's cpu_manager_state text and the
 * reconciliation on restore (shared/kubelet-semantics.md 5.11). Topology:
 * 1 socket × 4 cores × 2 threads, siblings (0,4),(1,5),(2,6),(3,7), cpu 0
 * reserved.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/cpumanager/cpumanager.h"
#include "agent/pod/pod.h"

#define HDR(uid) "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  uid: " uid "\nspec:\n"
#define C(name, extra) "  - name: '" name "'\n    image: x:1\n" extra /* quoted: y is YAML 1.1's true */
#define GUAR(cpu)                                                                 \
        "    resources:\n      requests: {cpu: \"" cpu "\", memory: 1Gi}\n      " \
        "limits: {cpu: \"" cpu "\", memory: 1Gi}\n"

#define NOTE_MAX 2048

static const CpumgrCpu cpus_a[] = { { 0, 0, 0, 0 }, { 1, 1, 0, 0 }, { 2, 2, 0, 0 }, { 3, 3, 0, 0 },
                                    { 4, 0, 0, 0 }, { 5, 1, 0, 0 }, { 6, 2, 0, 0 }, { 7, 3, 0, 0 } };

static CpumgrState *state_new(CpumgrPolicy policy) {
        CpumgrTopology t;
        CpumgrSet r = {};
        CpumgrState *s = NULL;
        CubError err = {};

        assert_int_equal(cpumgr_topology_from_cpus(cpus_a, 8, &t, &err), 0);
        cpumgr_set_add(&r, 0);
        if (cpumgr_new(policy, &t, &r, &s, &err) < 0)
                fail_msg("cpumgr_new: %s", err.msg);
        cpumgr_topology_done(&t);
        return s;
}

static void allocate(CpumgrState *s, const char *text) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(text, strlen(text), "p.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode failed: %s", err.msg);
        if (cpumgr_allocate_pod(s, pod, pod_qos_class(pod), &err) < 0)
                fail_msg("allocate: %s", err.msg);
        pod_free(pod);
}

/* pod-z app 2 → 1,5; then pod-b y 2 → 2,6 and x 1 → 4 (manifest order y, x) */
static CpumgrState *state_two_pods(void) {
        CpumgrState *s = state_new(CPUMGR_POLICY_STATIC);

        allocate(s, HDR("pod-z") "  containers:\n" C("app", GUAR("2")));
        allocate(s, HDR("pod-b") "  containers:\n" C("y", GUAR("2")) C("x", GUAR("1")));
        return s;
}

#define TWO_PODS                                                                         \
        "{\"policyName\":\"static\",\"defaultCpuSet\":\"0,3,7\",\"entries\":{\"pod-b\":" \
        "{\"x\":\"4\",\"y\":\"2,6\"},\"pod-z\":{\"app\":\"1,5\"}},\"checksum\":748151424}"

static void assert_format(const CpumgrState *s, const char *want) {
        char *text = NULL;
        CubError err = {};

        assert_int_equal(cpumgr_checkpoint_format(s, &text, &err), 0);
        assert_string_equal(text, want);
        free(text);
}

/* Restores text into a fresh static state; returns the state, fills note. */
static CpumgrState *restore(const char *text, int want_r, char *note) {
        CpumgrState *s = state_new(CPUMGR_POLICY_STATIC);
        CubError err = {};

        assert_int_equal(cpumgr_checkpoint_restore(s, text, strlen(text), note, NOTE_MAX, &err), want_r);
        return s;
}

static const char *cpus_of(const CpumgrState *s, const char *uid, const char *name) {
        static char buf[CPUMGR_SET_STR_MAX]; /* test-only scratch */
        const CpumgrSet *set = cpumgr_container_cpus(s, uid, name);

        return set ? cpumgr_set_format(set, buf, sizeof(buf)) : "(none)";
}

static const char *pool_of(const CpumgrState *s) {
        static char buf[CPUMGR_SET_STR_MAX]; /* test-only scratch */

        return cpumgr_set_format(cpumgr_shared_pool(s), buf, sizeof(buf));
}

/* ---- format -------------------------------------------------------------- */

static void test_format_fresh(void **state) {
        CpumgrState *s = state_new(CPUMGR_POLICY_STATIC), *n = state_new(CPUMGR_POLICY_NONE);

        (void) state;
        /* entries omitted when empty */
        assert_format(s, "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\",\"checksum\":14413152}");
        assert_format(n, "{\"policyName\":\"none\",\"defaultCpuSet\":\"\",\"checksum\":1353318690}");
        cpumgr_free(s);
        cpumgr_free(n);
}

static void test_format_sorted_entries(void **state) {
        CpumgrState *s = state_two_pods();

        (void) state;
        /* pods by UID, containers by name, as Go's encoding/json writes maps */
        assert_format(s, TWO_PODS);
        cpumgr_release_pod(s, "pod-b");
        assert_format(s, "{\"policyName\":\"static\",\"defaultCpuSet\":\"0,2-4,6-7\",\"entries\":{\"pod-z\":"
                         "{\"app\":\"1,5\"}},\"checksum\":4185238414}");
        cpumgr_free(s);
}

/* ---- restore ------------------------------------------------------------- */

static void test_restore_round_trip(void **state) {
        char note[NOTE_MAX] = "x";
        CpumgrState *s = restore(TWO_PODS, 0, note);

        (void) state;
        assert_string_equal(note, "");
        assert_string_equal(cpus_of(s, "pod-z", "app"), "1,5");
        assert_string_equal(cpus_of(s, "pod-b", "x"), "4");
        assert_string_equal(cpus_of(s, "pod-b", "y"), "2,6");
        assert_string_equal(pool_of(s), "0,3,7");
        assert_format(s, TWO_PODS);
        cpumgr_free(s);
}

static void test_restore_fresh_kubelet_file(void **state) {
        char note[NOTE_MAX];
        /* kubelet's first checkpoint: empty default set, no entries, a real checksum */
        CpumgrState *s = restore("{\"policyName\":\"static\",\"defaultCpuSet\":\"\",\"checksum\":3083571066}", 0, note);

        (void) state;
        assert_string_equal(note, "");
        assert_string_equal(pool_of(s), "0-7");
        cpumgr_free(s);
}

/* ---- checksum ------------------------------------------------------------ */

static int restore_into(CpumgrPolicy policy, const char *text, char *note) {
        CpumgrState *s = state_new(policy);
        CubError err = {};
        int r = cpumgr_checkpoint_restore(s, text, strlen(text), note, NOTE_MAX, &err);

        cpumgr_free(s);
        return r;
}

static void test_checksum_kubelet_vectors(void **state) {
        char note[NOTE_MAX];

        (void) state;
        /* pkg/kubelet/cm/cpumanager/state/state_checkpoint_test.go, v2 (keys as spelled there) */
        assert_int_equal(restore_into(CPUMGR_POLICY_NONE,
                                      "{\"policyName\": \"none\", \"defaultCPUSet\": \"4-6\", \"entries\": {}, "
                                      "\"checksum\": 354655845}",
                                      note),
                         0);
        assert_string_equal(note, "");
        assert_int_equal(restore_into(CPUMGR_POLICY_NONE,
                                      "{\"policyName\": \"none\", \"defaultCPUSet\": \"1-3\", \"entries\": {\"pod\": "
                                      "{\"container1\": \"4-6\", \"container2\": \"1-3\"}}, \"checksum\": 3610638499}",
                                      note),
                         1);
        assert_string_equal(note, "policy \"none\" holds no assignments: dropped 2");
        /* v1 files: the same test file's v1 checksums */
        assert_int_equal(
                restore_into(CPUMGR_POLICY_NONE,
                             "{\"policyName\": \"none\", \"defaultCPUSet\": \"1-3\", \"checksum\": 1694838852}", note),
                0);
        assert_string_equal(note, "");
        assert_int_equal(
                restore_into(CPUMGR_POLICY_STATIC,
                             "{\"policyName\": \"static\", \"defaultCPUSet\": \"7-9\", \"entries\": "
                             "{\"containerID1\": \"4-6\", \"containerID2\": \"1-3\"}, \"checksum\": 2026311253}",
                             note),
                1);
        assert_null(strstr(note, "checksum"));
        assert_non_null(strstr(note, "a v1 entry keyed by container ID, dropped"));
        /* a real node's file (24 cpus: its assignment is not on this node, but the checksum holds) */
        assert_int_equal(restore_into(CPUMGR_POLICY_STATIC,
                                      "{\"policyName\":\"static\",\"defaultCpuSet\":\"0,2-12,14-23\",\"entries\":"
                                      "{\"235148fe-393f-47a8-a17d-bd55bc1a836b\":{\"cgroup1-0\":\"1,13\"}},"
                                      "\"checksum\":1552716370}",
                                      note),
                         1);
        assert_null(strstr(note, "checksum"));
}

static void test_checksum_written_is_verified(void **state) {
        CpumgrState *s = state_two_pods(), *t = state_new(CPUMGR_POLICY_STATIC);
        char *text = NULL, note[NOTE_MAX];
        CubError err = {};

        (void) state;
        assert_int_equal(cpumgr_checkpoint_format(s, &text, &err), 0);
        assert_int_equal(cpumgr_checkpoint_restore(t, text, strlen(text), note, NOTE_MAX, &err), 0);
        assert_string_equal(note, "");
        assert_string_equal(cpus_of(t, "pod-b", "y"), "2,6");
        free(text);
        cpumgr_free(s);
        cpumgr_free(t);
}

static void test_checksum_mismatch_is_corrupt(void **state) {
        char note[NOTE_MAX];
        CpumgrState *s = restore("{\"policyName\":\"static\",\"defaultCpuSet\":\"0,3,7\",\"entries\":{\"pod-b\":"
                                 "{\"x\":\"4\",\"y\":\"2,6\"},\"pod-z\":{\"app\":\"1,5\"}},\"checksum\":748151425}",
                                 1, note);

        (void) state;
        assert_string_equal(note, "corrupt checkpoint (checksum 748151425 in the file, 748151424 computed), starting "
                                  "with an empty state");
        assert_string_equal(pool_of(s), "0-7");
        assert_null(cpumgr_container_cpus(s, "pod-z", "app"));
        cpumgr_free(s);

        /* an edited cpuset breaks the checksum too */
        assert_int_equal(restore_into(CPUMGR_POLICY_STATIC,
                                      "{\"policyName\":\"static\",\"defaultCpuSet\":\"0,3,7\",\"entries\":{\"pod-b\":"
                                      "{\"x\":\"4\",\"y\":\"2,6\"},\"pod-z\":{\"app\":\"1\"}},\"checksum\":748151424}",
                                      note),
                         1);
        assert_non_null(strstr(note, "corrupt checkpoint (checksum 748151424 in the file, "));
        /* not a number */
        assert_int_equal(restore_into(CPUMGR_POLICY_NONE,
                                      "{\"policyName\":\"none\",\"defaultCpuSet\":\"\",\"checksum\":\"1353318690\"}",
                                      note),
                         1);
        assert_string_equal(note,
                            "corrupt checkpoint ('checksum' is not an unsigned integer), starting with an empty state");
        /* 0 and absent are accepted (kubelet: compatibility with the old file backend) */
        assert_int_equal(restore_into(CPUMGR_POLICY_NONE, "{\"policyName\":\"none\",\"defaultCpuSet\":\"\"}", note), 0);
        assert_string_equal(note, "");
}

static void test_restore_init_reuse_overlap_allowed(void **state) {
        char note[NOTE_MAX];
        CpumgrState *s = restore("{\"policyName\":\"static\",\"defaultCpuSet\":\"0,2-4,6-7\",\"entries\":{\"p\":"
                                 "{\"app\":\"1,5\",\"init\":\"1,5\"}},\"checksum\":0}",
                                 0, note);

        (void) state;
        assert_string_equal(note, "");
        assert_string_equal(cpus_of(s, "p", "init"), "1,5");
        assert_string_equal(cpus_of(s, "p", "app"), "1,5");
        cpumgr_release_pod(s, "p");
        assert_string_equal(pool_of(s), "0-7");
        cpumgr_free(s);
}

static void test_restore_policy_change(void **state) {
        char note[NOTE_MAX];
        CpumgrState *s = restore("{\"policyName\":\"none\",\"defaultCpuSet\":\"\",\"checksum\":0}", 1, note);
        CpumgrState *n = state_new(CPUMGR_POLICY_NONE);
        CubError err = {};
        const char *none = "{\"policyName\":\"none\",\"defaultCpuSet\":\"\",\"checksum\":0}";

        (void) state;
        assert_string_equal(note, "configured policy \"static\" differs from checkpoint policy \"none\": dropped 0 "
                                  "assignments, starting with an empty state");
        assert_string_equal(pool_of(s), "0-7");
        cpumgr_free(s);

        assert_int_equal(cpumgr_checkpoint_restore(n, TWO_PODS, strlen(TWO_PODS), note, NOTE_MAX, &err), 1);
        assert_string_equal(note, "configured policy \"none\" differs from checkpoint policy \"static\": dropped 3 "
                                  "assignments, starting with an empty state");
        assert_null(cpumgr_container_cpus(n, "pod-z", "app"));
        /* and none → none is clean */
        assert_int_equal(cpumgr_checkpoint_restore(n, none, strlen(none), note, NOTE_MAX, &err), 0);
        assert_string_equal(note, "");
        cpumgr_free(n);
}

static void test_restore_unknown_cpu(void **state) {
        char note[NOTE_MAX];
        CpumgrState *s = restore("{\"policyName\":\"static\",\"defaultCpuSet\":\"0,3,7\",\"entries\":{\"pod-b\":"
                                 "{\"x\":\"4\",\"y\":\"2,6\"},\"pod-z\":{\"app\":\"1,5,9-10\"}},\"checksum\":0}",
                                 1, note);

        (void) state;
        assert_string_equal(note, "pod 'pod-z' container 'app': cpus '9-10' not on this node, dropped; "
                                  "defaultCpuSet '0,3,7' rebuilt as '0-1,3,5,7'");
        assert_string_equal(cpus_of(s, "pod-z", "app"), "(none)");
        assert_string_equal(cpus_of(s, "pod-b", "y"), "2,6");
        assert_string_equal(pool_of(s), "0-1,3,5,7");
        cpumgr_free(s);
}

static void test_restore_overlap_between_pods(void **state) {
        char note[NOTE_MAX];
        CpumgrState *s = restore("{\"policyName\":\"static\",\"defaultCpuSet\":\"0-1,3,5,7\",\"entries\":{\"pod-b\":"
                                 "{\"x\":\"4\",\"y\":\"2,6\"},\"pod-z\":{\"app\":\"1,6\"}},\"checksum\":0}",
                                 1, note);

        (void) state;
        assert_string_equal(note, "pod 'pod-z' container 'app': cpus '6' overlap pod 'pod-b' container 'y', dropped");
        assert_string_equal(cpus_of(s, "pod-z", "app"), "(none)");
        assert_string_equal(pool_of(s), "0-1,3,5,7");
        cpumgr_free(s);
}

static void test_restore_reserved_and_bad_entries(void **state) {
        char note[NOTE_MAX];
        CpumgrState *s = restore("{\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\",\"entries\":{"
                                 "\"p1\":{\"a\":\"0,4\",\"b\":\"x-y\",\"c\":\"\",\"d\":5},"
                                 "\"p2\":[],\"abc123\":\"1-2\"},\"checksum\":0}",
                                 1, note);

        (void) state;
        assert_string_equal(note, "pod 'p1' container 'a': cpus '0' are reserved, dropped; "
                                  "pod 'p1' container 'b': invalid cpu list 'x-y', dropped; "
                                  "pod 'p1' container 'c': empty cpu list, dropped; "
                                  "pod 'p1' container 'd': cpuset is not a string, dropped; "
                                  "pod 'p2': entry is not an object, dropped; "
                                  "entry 'abc123': a v1 entry keyed by container ID, dropped");
        assert_string_equal(pool_of(s), "0-7");
        assert_format(s, "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\",\"checksum\":14413152}");
        cpumgr_free(s);
}

static void test_restore_default_set_mismatch(void **state) {
        char note[NOTE_MAX];
        CpumgrState *s = restore("{\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\",\"entries\":{\"p\":"
                                 "{\"app\":\"1,5\"}},\"checksum\":0}",
                                 1, note);

        (void) state;
        assert_string_equal(note, "defaultCpuSet '0-7' rebuilt as '0,2-4,6-7'");
        assert_string_equal(cpus_of(s, "p", "app"), "1,5");
        cpumgr_free(s);
        s = restore("{\"policyName\":\"static\",\"defaultCpuSet\":\"zz\",\"checksum\":0}", 1, note);
        assert_string_equal(note, "invalid defaultCpuSet 'zz', rebuilt as '0-7'");
        cpumgr_free(s);
}

static void test_restore_corrupt(void **state) {
        static const char *const texts[] = { "{\"policyName\":", "", "\x01\xff garbage", "{} trailing" };
        char note[NOTE_MAX];
        const char *prefix = "corrupt checkpoint (line ", *suffix = "), starting with an empty state";

        (void) state;
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
                CpumgrState *s = restore(texts[i], 1, note);

                assert_int_equal(strncmp(note, prefix, strlen(prefix)), 0);
                assert_string_equal(note + strlen(note) - strlen(suffix), suffix);
                assert_string_equal(pool_of(s), "0-7");
                cpumgr_free(s);
        }
}

static void test_restore_wrong_shapes(void **state) {
        char note[NOTE_MAX];
        CpumgrState *s;

        (void) state;
        s = restore("[1,2]", 1, note);
        assert_string_equal(note, "corrupt checkpoint (not a JSON object), starting with an empty state");
        cpumgr_free(s);
        s = restore("{\"policyName\":1}", 1, note);
        assert_string_equal(note, "corrupt checkpoint ('policyName' has the wrong type), starting with an empty state");
        cpumgr_free(s);
        s = restore("{\"policyName\":\"static\",\"entries\":7}", 1, note);
        assert_string_equal(note, "corrupt checkpoint ('entries' has the wrong type), starting with an empty state");
        cpumgr_free(s);
        /* a missing policyName is the empty policy */
        s = restore("{}", 1, note);
        assert_string_equal(note, "configured policy \"static\" differs from checkpoint policy \"\": dropped 0 "
                                  "assignments, starting with an empty state");
        cpumgr_free(s);
        /* null entries as Go's decoder reads them: none */
        s = restore("{\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\",\"entries\":null}", 0, note);
        assert_string_equal(note, "");
        cpumgr_free(s);
}

static void test_restore_duplicate_keys(void **state) {
        char note[NOTE_MAX];
        CpumgrState *s = restore("{\"policyName\":\"static\",\"defaultCpuSet\":\"0,2-4,6-7\",\"entries\":{\"p\":"
                                 "{\"app\":\"2,6\",\"app\":\"1,5\"}},\"checksum\":0}",
                                 1, note);

        (void) state;
        assert_string_equal(note, "duplicate keys in checkpoint, the last value of each kept");
        assert_string_equal(cpus_of(s, "p", "app"), "1,5");
        assert_string_equal(pool_of(s), "0,2-4,6-7");
        cpumgr_free(s);
}

static void test_restore_replaces_state_and_small_note(void **state) {
        CpumgrState *s = state_two_pods();
        char note[8];
        CubError err = {};
        const char *text = "{\"policyName\":\"none\"}";

        (void) state;
        /* whatever was there goes; a short note buffer truncates */
        assert_int_equal(cpumgr_checkpoint_restore(s, text, strlen(text), note, sizeof(note), &err), 1);
        assert_string_equal(note, "configu");
        assert_null(cpumgr_container_cpus(s, "pod-z", "app"));
        assert_string_equal(pool_of(s), "0-7");
        assert_int_equal(cpumgr_checkpoint_restore(s, text, strlen(text), NULL, 0, &err), 1);
        cpumgr_free(s);
}

/* ---- files --------------------------------------------------------------- */

static void test_save_load(void **state) {
        char dir[] = "/tmp/cpumgr-ckpt-XXXXXX", path[256], note[NOTE_MAX] = "x";
        CpumgrState *s = state_two_pods(), *back = state_new(CPUMGR_POLICY_STATIC);
        CubError err = {};
        char buf[4096] = {};
        FILE *f;

        (void) state;
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/cpu_manager_state", dir);
        /* missing file: a fresh start */
        assert_int_equal(cpumgr_checkpoint_load(back, path, note, sizeof(note), &err), 0);
        assert_string_equal(note, "");
        assert_int_equal(cpumgr_checkpoint_save(s, path, &err), 0);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
        fclose(f);
        assert_string_equal(buf, TWO_PODS);
        assert_int_equal(cpumgr_checkpoint_load(back, path, note, sizeof(note), &err), 0);
        assert_string_equal(note, "");
        assert_string_equal(cpus_of(back, "pod-b", "y"), "2,6");
        assert_string_equal(pool_of(back), "0,3,7");

        /* garbage on disk is reconciled, not fatal */
        f = fopen(path, "we");
        assert_non_null(f);
        fputs("{\"policyName\":\"static\",", f);
        fclose(f);
        assert_int_equal(cpumgr_checkpoint_load(back, path, note, sizeof(note), &err), 1);
        assert_int_equal(strncmp(note, "corrupt checkpoint (line 1 column ", 34), 0);
        assert_string_equal(pool_of(back), "0-7");

        /* I/O errors other than ENOENT are errors */
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_true(cpumgr_checkpoint_load(back, path, note, sizeof(note), &err) < 0);
        assert_int_equal(rmdir(path), 0);
        assert_true(cpumgr_checkpoint_save(s, "/nonexistent-dir/cpu_manager_state", &err) < 0);
        assert_non_null(strstr(err.msg, "cpu manager checkpoint '/nonexistent-dir/cpu_manager_state'"));
        assert_int_equal(rmdir(dir), 0);
        cpumgr_free(s);
        cpumgr_free(back);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_fresh),
                cmocka_unit_test(test_format_sorted_entries),
                cmocka_unit_test(test_restore_round_trip),
                cmocka_unit_test(test_restore_fresh_kubelet_file),
                cmocka_unit_test(test_checksum_kubelet_vectors),
                cmocka_unit_test(test_checksum_written_is_verified),
                cmocka_unit_test(test_checksum_mismatch_is_corrupt),
                cmocka_unit_test(test_restore_init_reuse_overlap_allowed),
                cmocka_unit_test(test_restore_policy_change),
                cmocka_unit_test(test_restore_unknown_cpu),
                cmocka_unit_test(test_restore_overlap_between_pods),
                cmocka_unit_test(test_restore_reserved_and_bad_entries),
                cmocka_unit_test(test_restore_default_set_mismatch),
                cmocka_unit_test(test_restore_corrupt),
                cmocka_unit_test(test_restore_wrong_shapes),
                cmocka_unit_test(test_restore_duplicate_keys),
                cmocka_unit_test(test_restore_replaces_state_and_small_note),
                cmocka_unit_test(test_save_load),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
