/* SPDX-License-Identifier: Apache-2.0 */
/* eviction/thresholds.c: signals, quantity formatting, Go durations and the
 * threshold configuration (kubelet's ParseThresholdConfig, section 6.2). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "eviction/eviction.h"

#define KI UINT64_C(1024)
#define MI (1024 * KI)
#define GI (1024 * MI)

static void test_signal_strings(void **state) {
        (void) state;
        for (int i = 0; i < _EVICT_SIGNAL_MAX; i++)
                assert_int_equal(evict_signal_from_string(evict_signal_to_string((EvictSignal) i)), i);
        assert_string_equal(evict_signal_to_string(EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE),
                            "allocatableMemory.available");
        assert_string_equal(evict_signal_to_string(EVICT_SIGNAL_IMAGEFS_INODES_FREE), "imagefs.inodesFree");
        assert_int_equal(evict_signal_from_string("memory.availabl"), _EVICT_SIGNAL_INVALID);
        assert_int_equal(evict_signal_from_string(NULL), _EVICT_SIGNAL_INVALID);
        assert_null(evict_signal_to_string(_EVICT_SIGNAL_MAX));
        assert_string_equal(evict_resource_to_string(evict_signal_resource(EVICT_SIGNAL_NODEFS_AVAILABLE)),
                            "ephemeral-storage");
        assert_string_equal(evict_resource_to_string(evict_signal_resource(EVICT_SIGNAL_IMAGEFS_INODES_FREE)),
                            "inodes");
        assert_string_equal(evict_resource_to_string(evict_signal_resource(EVICT_SIGNAL_PID_AVAILABLE)), "pids");
        assert_int_equal(evict_signal_condition(EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE),
                         EVICT_CONDITION_MEMORY_PRESSURE);
        assert_int_equal(evict_signal_condition(EVICT_SIGNAL_IMAGEFS_AVAILABLE), EVICT_CONDITION_DISK_PRESSURE);
        assert_int_equal(evict_signal_condition(EVICT_SIGNAL_NODEFS_INODES_FREE), EVICT_CONDITION_DISK_PRESSURE);
        assert_int_equal(evict_signal_condition(EVICT_SIGNAL_PID_AVAILABLE), EVICT_CONDITION_PID_PRESSURE);
        assert_int_equal(evict_policy_from_string("kubelet"), EVICT_POLICY_KUBELET);
        assert_int_equal(evict_policy_from_string("cubelet"), EVICT_POLICY_CUBELET);
        assert_int_equal(evict_policy_from_string("oomd"), _EVICT_POLICY_INVALID);
}

static void test_condition_texts(void **state) {
        (void) state;
        assert_string_equal(evict_condition_to_string(EVICT_CONDITION_MEMORY_PRESSURE), "MemoryPressure");
        assert_string_equal(evict_condition_reason(EVICT_CONDITION_MEMORY_PRESSURE, true),
                            "KubeletHasInsufficientMemory");
        assert_string_equal(evict_condition_message(EVICT_CONDITION_MEMORY_PRESSURE, true),
                            "kubelet has insufficient memory available");
        assert_string_equal(evict_condition_reason(EVICT_CONDITION_MEMORY_PRESSURE, false),
                            "KubeletHasSufficientMemory");
        assert_string_equal(evict_condition_message(EVICT_CONDITION_MEMORY_PRESSURE, false),
                            "kubelet has sufficient memory available");
        assert_string_equal(evict_condition_to_string(EVICT_CONDITION_DISK_PRESSURE), "DiskPressure");
        assert_string_equal(evict_condition_reason(EVICT_CONDITION_DISK_PRESSURE, true), "KubeletHasDiskPressure");
        assert_string_equal(evict_condition_message(EVICT_CONDITION_DISK_PRESSURE, true), "kubelet has disk pressure");
        assert_string_equal(evict_condition_reason(EVICT_CONDITION_DISK_PRESSURE, false), "KubeletHasNoDiskPressure");
        assert_string_equal(evict_condition_message(EVICT_CONDITION_DISK_PRESSURE, false),
                            "kubelet has no disk pressure");
        assert_string_equal(evict_condition_to_string(EVICT_CONDITION_PID_PRESSURE), "PIDPressure");
        assert_string_equal(evict_condition_reason(EVICT_CONDITION_PID_PRESSURE, true), "KubeletHasInsufficientPID");
        assert_string_equal(evict_condition_message(EVICT_CONDITION_PID_PRESSURE, true),
                            "kubelet has insufficient PID available");
        assert_string_equal(evict_condition_reason(EVICT_CONDITION_PID_PRESSURE, false), "KubeletHasSufficientPID");
        assert_string_equal(evict_condition_message(EVICT_CONDITION_PID_PRESSURE, false),
                            "kubelet has sufficient PID available");
}

static void test_quantity_format(void **state) {
        static const struct {
                uint64_t v;
                bool binary;
                const char *want;
        } vec[] = {
                { 0, true, "0" },
                { 92124 * KI, true, "92124Ki" },
                { 2213804 * KI, true, "2213804Ki" },
                { 100 * MI, true, "100Mi" },
                { 1536 * MI, true, "1536Mi" },
                { 10737418400, true, "10737418400" },
                { 10 * GI, true, "10Gi" },
                { 1000, true, "1k" }, /* BinarySI below 1024 prints as DecimalSI */
                { 1023, true, "1023" },
                { 1500, true, "1500" },
                { 1024, true, "1Ki" },
                { 1000, false, "1k" },
                { 1500000, false, "1500k" },
                { 1000000000, false, "1G" },
                { 4096, false, "4096" },
                { 12, false, "12" },
        };
        char buf[EVICT_QUANTITY_STR_MAX];

        (void) state;
        for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++)
                assert_string_equal(evict_quantity_format(vec[i].v, vec[i].binary, buf), vec[i].want);
}

/* 10% of 100Gi is 10737418400 with float32 (kubelet), not 10737418240. */
static void test_percent_float32(void **state) {
        EvictConfig c;
        CubError err = {};

        (void) state;
        evict_config_init(&c);
        assert_int_equal(evict_config_add_hard(&c, "nodefs.available", "10%", &err), 0);
        assert_int_equal(evict_config_add_hard(&c, "memory.available", "5.5%", &err), 0);
        assert_true(c.thresholds[0].value.percent);
        assert_int_equal(evict_value_quantity(&c.thresholds[0].value, 100 * GI), UINT64_C(10737418400));
        assert_int_equal(evict_value_quantity(&c.thresholds[0].value, 1000), 100);
        /* float32(5.5)/100 = 0.055 as float32 = 0.0549999997..., of 16Gi */
        assert_int_equal(evict_value_quantity(&c.thresholds[1].value, 16 * GI), UINT64_C(944892800));
        evict_config_done(&c);
}

static void test_parse_map_entries(void **state) {
        EvictConfig c;
        CubError err = {};
        char buf[EVICT_THRESHOLD_STR_MAX];

        (void) state;
        evict_config_init(&c);
        assert_int_equal(evict_config_add_hard(&c, "memory.available", "100Mi", &err), 0);
        assert_int_equal(evict_config_add_hard(&c, "nodefs.inodesFree", "5%", &err), 0);
        assert_int_equal(evict_config_add_hard(&c, "pid.available", "1000", &err), 0);
        assert_int_equal(evict_config_add_hard(&c, "imagefs.available", "0%", &err), 0);  /* dropped */
        assert_int_equal(evict_config_add_hard(&c, "nodefs.available", "100%", &err), 0); /* dropped */
        assert_int_equal(evict_config_add_soft(&c, "memory.available", "1.5Gi", &err), 0);
        assert_int_equal(evict_config_set_soft_grace_period(&c, "memory.available", "1m30s", &err), 0);
        assert_int_equal(evict_config_finish(&c, /* enforce_pods_allocatable= */ false, &err), 0);
        assert_int_equal(c.n_thresholds, 4);
        assert_int_equal(c.thresholds[0].signal, EVICT_SIGNAL_MEMORY_AVAILABLE);
        assert_int_equal(c.thresholds[0].value.quantity, 100 * MI);
        assert_false(c.thresholds[0].soft);
        assert_int_equal(c.thresholds[0].grace_usec, 0);
        assert_string_equal(evict_threshold_format(&c.thresholds[0], buf), "memory.available<100Mi");
        assert_string_equal(evict_threshold_format(&c.thresholds[1], buf), "nodefs.inodesFree<5%");
        assert_string_equal(evict_threshold_format(&c.thresholds[2], buf), "pid.available<1k");
        assert_true(c.thresholds[3].soft);
        assert_int_equal(c.thresholds[3].value.quantity, 1536 * MI);
        assert_int_equal(c.thresholds[3].grace_usec, 90000000);
        assert_string_equal(evict_threshold_format(&c.thresholds[3], buf), "memory.available<1536Mi");
        evict_config_done(&c);
}

static void test_parse_statements(void **state) {
        EvictConfig c;
        CubError err = {};

        (void) state;
        evict_config_init(&c);
        assert_int_equal(evict_config_add_statement(&c, "memory.available<200Mi", false, &err), 0);
        assert_int_equal(evict_config_add_statement(&c, "nodefs.available<12.5%", false, &err), 0);
        assert_int_equal(c.n_thresholds, 2);
        assert_int_equal(c.thresholds[0].value.quantity, 200 * MI);
        assert_true(c.thresholds[1].value.percent);
        assert_true(c.thresholds[1].value.percentage == 12.5f / 100.0f);

        assert_int_equal(evict_config_add_statement(&c, "memory.available>200Mi", false, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "evictionHard: \"memory.available>200Mi\": unsupported operator, only '<' is allowed");
        assert_int_equal(evict_config_add_statement(&c, "memory.available<=200Mi", true, &err), -EINVAL);
        assert_string_equal(err.msg,
                            "evictionSoft: \"memory.available<=200Mi\": unsupported operator, only '<' is allowed");
        assert_int_equal(evict_config_add_statement(&c, "memory.available", false, &err), -EINVAL);
        assert_string_equal(err.msg, "evictionHard: \"memory.available\": expected <signal><<quantity>");
        assert_int_equal(evict_config_add_statement(&c, "cpu.available<1", false, &err), -EINVAL);
        assert_string_equal(err.msg, "evictionHard: unsupported eviction signal \"cpu.available\"");
        evict_config_done(&c);
}

static void test_parse_errors(void **state) {
        static const struct {
                bool soft;
                const char *signal, *value, *msg;
        } vec[] = {
                { false, "memory.available", "12XB",
                  "evictionHard[memory.available]: invalid quantity \"12XB\": unknown suffix \"XB\"" },
                { false, "memory.available", "0", "evictionHard[memory.available]: threshold must be positive: \"0\"" },
                { false, "memory.available", "-1Mi",
                  "evictionHard[memory.available]: invalid quantity \"-1Mi\": must be greater than or equal to 0" },
                { false, "nodefs.available", "-5%",
                  "evictionHard[nodefs.available]: percentage must be >= 0%: \"-5%\"" },
                { false, "nodefs.available", "101%",
                  "evictionHard[nodefs.available]: percentage must be <= 100%: \"101%\"" },
                { false, "nodefs.available", "ten%", "evictionHard[nodefs.available]: invalid percentage \"ten%\"" },
                { false, "nodefs.available", "%", "evictionHard[nodefs.available]: invalid percentage \"%\"" },
                { false, "nodefs.available", " 5%", "evictionHard[nodefs.available]: invalid percentage \" 5%\"" },
                { false, "nodefs.available", "", "evictionHard[nodefs.available]: empty value" },
                { true, "pid.available", "nan%", "evictionSoft[pid.available]: invalid percentage \"nan%\"" },
                { true, "memory.free", "1Gi", "evictionSoft: unsupported eviction signal \"memory.free\"" },
        };
        (void) state;
        for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
                EvictConfig c;
                CubError err = {};
                int r;

                evict_config_init(&c);
                r = vec[i].soft ? evict_config_add_soft(&c, vec[i].signal, vec[i].value, &err)
                                : evict_config_add_hard(&c, vec[i].signal, vec[i].value, &err);
                assert_true(r < 0);
                assert_string_equal(err.msg, vec[i].msg);
                assert_int_equal(c.n_thresholds, 0);
                evict_config_done(&c);
        }
}

static void test_duplicate(void **state) {
        EvictConfig c;
        CubError err = {};

        (void) state;
        evict_config_init(&c);
        assert_int_equal(evict_config_add_hard(&c, "memory.available", "100Mi", &err), 0);
        assert_int_equal(evict_config_add_soft(&c, "memory.available", "200Mi", &err), 0);
        assert_int_equal(evict_config_add_statement(&c, "memory.available<1Gi", false, &err), -EEXIST);
        assert_string_equal(err.msg, "evictionHard[memory.available]: given more than once");
        evict_config_done(&c);
}

static void test_defaults(void **state) {
        EvictConfig c;
        CubError err = {};
        char buf[EVICT_THRESHOLD_STR_MAX];

        (void) state;
        evict_config_init(&c);
        assert_int_equal(c.transition_usec, 300000000);
        assert_int_equal(c.max_pod_grace_seconds, 0);
        assert_int_equal(c.policy, EVICT_POLICY_CUBELET);
        assert_int_equal(evict_config_finish(&c, /* enforce_pods_allocatable= */ false, &err), 0);
        assert_int_equal(c.n_thresholds, 4);
        assert_string_equal(evict_threshold_format(&c.thresholds[0], buf), "memory.available<100Mi");
        assert_string_equal(evict_threshold_format(&c.thresholds[1], buf), "nodefs.available<10%");
        assert_string_equal(evict_threshold_format(&c.thresholds[2], buf), "nodefs.inodesFree<5%");
        assert_string_equal(evict_threshold_format(&c.thresholds[3], buf), "imagefs.available<15%");
        evict_config_done(&c);

        /* with allocatable enforcement the memory threshold is copied */
        evict_config_init(&c);
        assert_int_equal(evict_config_finish(&c, /* enforce_pods_allocatable= */ true, &err), 0);
        assert_int_equal(c.n_thresholds, 5);
        assert_string_equal(evict_threshold_format(&c.thresholds[4], buf), "allocatableMemory.available<100Mi");
        evict_config_done(&c);

        /* any hard entry drops the other defaults */
        evict_config_init(&c);
        assert_int_equal(evict_config_add_hard(&c, "nodefs.available", "20%", &err), 0);
        assert_int_equal(evict_config_finish(&c, /* enforce_pods_allocatable= */ true, &err), 0);
        assert_int_equal(c.n_thresholds, 1);
        evict_config_done(&c);

        /* an explicitly empty evictionHard: no hard thresholds at all */
        evict_config_init(&c);
        evict_config_set_hard_given(&c);
        assert_int_equal(evict_config_finish(&c, /* enforce_pods_allocatable= */ true, &err), 0);
        assert_int_equal(c.n_thresholds, 0);
        evict_config_done(&c);

        /* only 0%: given, so no defaults either */
        evict_config_init(&c);
        assert_int_equal(evict_config_add_hard(&c, "nodefs.available", "0%", &err), 0);
        assert_int_equal(evict_config_finish(&c, /* enforce_pods_allocatable= */ false, &err), 0);
        assert_int_equal(c.n_thresholds, 0);
        evict_config_done(&c);
}

static void test_soft_requires_grace(void **state) {
        EvictConfig c;
        CubError err = {};

        (void) state;
        evict_config_init(&c);
        assert_int_equal(evict_config_add_soft(&c, "nodefs.available", "15%", &err), 0);
        assert_int_equal(evict_config_finish(&c, false, &err), -EINVAL);
        assert_string_equal(err.msg, "evictionSoft[nodefs.available]: a grace period must be given in "
                                     "evictionSoftGracePeriod[nodefs.available]");
        /* a grace period for another signal does not count */
        assert_int_equal(evict_config_set_soft_grace_period(&c, "memory.available", "1m", &err), 0);
        assert_int_equal(evict_config_finish(&c, false, &err), -EINVAL);
        assert_int_equal(evict_config_set_soft_grace_period(&c, "nodefs.available", "2m", &err), 0);
        assert_int_equal(evict_config_finish(&c, false, &err), 0);
        assert_int_equal(c.thresholds[0].grace_usec, 120000000);
        /* defaults were added (no hard threshold given) */
        assert_int_equal(c.n_thresholds, 5);
        evict_config_done(&c);

        evict_config_init(&c);
        assert_int_equal(evict_config_set_soft_grace_period(&c, "memory.available", "1x", &err), -EINVAL);
        assert_string_equal(err.msg,
                            "evictionSoftGracePeriod[memory.available]: time: unknown unit \"x\" in duration \"1x\"");
        assert_int_equal(evict_config_set_soft_grace_period(&c, "memory.available", "-1s", &err), -ERANGE);
        assert_string_equal(
                err.msg, "evictionSoftGracePeriod[memory.available]: invalid duration \"-1s\": must not be negative");
        assert_int_equal(evict_config_set_soft_grace_period(&c, "mem", "1s", &err), -EINVAL);
        assert_string_equal(err.msg, "evictionSoftGracePeriod: unsupported eviction signal \"mem\"");
        evict_config_done(&c);
}

static void test_min_reclaim_and_scalars(void **state) {
        EvictConfig c;
        CubError err = {};

        (void) state;
        evict_config_init(&c);
        assert_int_equal(evict_config_add_hard(&c, "memory.available", "500Mi", &err), 0);
        assert_int_equal(evict_config_add_hard(&c, "nodefs.available", "1Gi", &err), 0);
        assert_int_equal(evict_config_set_min_reclaim(&c, "memory.available", "0.5Gi", &err), 0);
        assert_int_equal(evict_config_set_min_reclaim(&c, "nodefs.available", "5%", &err), 0);
        assert_int_equal(evict_config_set_min_reclaim(&c, "pid.available", "0", &err), 0);
        assert_int_equal(evict_config_set_min_reclaim(&c, "nodefs.inodesFree", "0%", &err), -EINVAL);
        assert_string_equal(err.msg, "evictionMinimumReclaim[nodefs.inodesFree]: percentage must be positive: \"0%\"");
        assert_int_equal(evict_config_set_min_reclaim(&c, "nodefs.inodesFree", "1ZZ", &err), -EINVAL);
        assert_string_equal(
                err.msg, "evictionMinimumReclaim[nodefs.inodesFree]: invalid quantity \"1ZZ\": unknown suffix \"ZZ\"");
        assert_int_equal(evict_config_set_max_pod_grace_period(&c, 30, &err), 0);
        assert_int_equal(evict_config_set_max_pod_grace_period(&c, -1, &err), -EINVAL);
        assert_string_equal(err.msg, "evictionMaxPodGracePeriod: must not be negative: -1");
        assert_int_equal(evict_config_set_transition_period(&c, "30s", &err), 0);
        assert_int_equal(evict_config_set_transition_period(&c, "30", &err), -EINVAL);
        assert_string_equal(err.msg, "evictionPressureTransitionPeriod: time: missing unit in duration \"30\"");
        assert_int_equal(evict_config_set_policy(&c, "kubelet", &err), 0);
        assert_int_equal(evict_config_set_policy(&c, "random", &err), -EINVAL);
        assert_string_equal(err.msg, "evictionPolicy: unknown policy \"random\" (cubelet or kubelet)");
        assert_int_equal(evict_config_finish(&c, /* enforce_pods_allocatable= */ true, &err), 0);
        assert_int_equal(c.n_thresholds, 3);
        assert_int_equal(c.transition_usec, 30000000);
        assert_int_equal(c.max_pod_grace_seconds, 30);
        assert_int_equal(c.policy, EVICT_POLICY_KUBELET);
        assert_true(c.thresholds[0].min_reclaim_set);
        assert_int_equal(c.thresholds[0].min_reclaim.quantity, 512 * MI);
        assert_true(c.thresholds[1].min_reclaim.percent);
        assert_int_equal(evict_value_quantity(&c.thresholds[1].min_reclaim, 100 * GI),
                         UINT64_C(5368709200)); /* float32 5% */
        /* the allocatable copy carries memory.available's minimum reclaim */
        assert_int_equal(c.thresholds[2].signal, EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE);
        assert_true(c.thresholds[2].min_reclaim_set);
        assert_int_equal(c.thresholds[2].min_reclaim.quantity, 512 * MI);
        evict_config_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_signal_strings),      cmocka_unit_test(test_condition_texts),
                cmocka_unit_test(test_quantity_format),
                cmocka_unit_test(test_percent_float32),     cmocka_unit_test(test_parse_map_entries),
                cmocka_unit_test(test_parse_statements),    cmocka_unit_test(test_parse_errors),
                cmocka_unit_test(test_duplicate),           cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_soft_requires_grace), cmocka_unit_test(test_min_reclaim_and_scalars),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
