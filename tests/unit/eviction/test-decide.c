/* SPDX-License-Identifier: Apache-2.0 */
/* eviction/decide.c: one pod per round, memory signals first, grace
 * periods for hard and soft thresholds, kubelet's exact message, and the
 * pressure admission rule (sections 6.3-6.7). */
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
#define SEC CUB_USEC_PER_SEC

static const EvictContainer hog_containers[] = {
        { .name = "app", .memory_usage = 2213804 * KI, .memory_request = 0, .ephemeral_usage = 3 * GI },
        { .name = "sidecar", .memory_usage = 10 * MI, .memory_request = 20 * MI },
        { .name = "cache",
          .memory_usage = 300 * MI,
          .memory_request = 256 * MI,
          .ephemeral_usage = GI,
          .ephemeral_request = 2 * GI },
};

static EvictPod pods[] = {
        { .key = "default/web",
          .qos = EVICT_QOS_GUARANTEED,
          .stats = true,
          .memory_request = GI,
          .memory_usage = 900 * MI,
          .termination_grace_period_seconds = 30,
          .processes = 300,
          .inodes_usage = 50000 },
        { .key = "default/hog",
          .qos = EVICT_QOS_BESTEFFORT,
          .stats = true,
          .memory_usage = 2600 * MI,
          .ephemeral_usage = 4 * GI,
          .termination_grace_period_seconds = 60,
          .containers = hog_containers,
          .n_containers = 3,
          .processes = 12,
          .inodes_usage = 100 },
        { .key = "kube-system/dns",
          .qos = EVICT_QOS_BESTEFFORT,
          .priority = 2000000000,
          .stats = true,
          .memory_usage = 8 * GI,
          .ephemeral_usage = 9 * GI,
          .processes = 5000,
          .inodes_usage = 900000 },
};
#define N_PODS (sizeof(pods) / sizeof(pods[0]))

static void setup_config(EvictConfig *c, const char *const *kv, bool soft, int64_t max_grace) {
        CubError err = {};

        evict_config_init(c);
        evict_config_set_hard_given(c);
        for (; *kv; kv += 2) {
                if (soft) {
                        assert_int_equal(evict_config_add_soft(c, kv[0], kv[1], &err), 0);
                        assert_int_equal(evict_config_set_soft_grace_period(c, kv[0], "30s", &err), 0);
                } else
                        assert_int_equal(evict_config_add_hard(c, kv[0], kv[1], &err), 0);
        }
        assert_int_equal(evict_config_set_max_pod_grace_period(c, max_grace, &err), 0);
        if (evict_config_finish(c, /* enforce_pods_allocatable= */ false, &err) < 0)
                fail_msg("%s", err.msg);
}

static void observe(EvictObservations *o, EvictSignal s, uint64_t available, uint64_t capacity) {
        o->signals[s] = (EvictSignalObservation){ .present = true, .available = available, .capacity = capacity };
}

static EvictDecision run(const EvictConfig *c, const EvictObservations *o, uint64_t now) {
        EvictState s;
        EvictDecision d;
        CubError err = {};

        evict_state_init(&s);
        evict_state_update(&s, c, o, 0);
        if (now > 0)
                evict_state_update(&s, c, o, now);
        memset(&d, 0x5a, sizeof(d));
        assert_int_equal(evict_decide(c, &s, o, pods, N_PODS, &d, &err), 0);
        return d;
}

static void test_nothing_met(void **state) {
        static const char *const hard[] = { "memory.available", "100Mi", NULL };
        EvictConfig c;
        EvictObservations o = {};
        EvictDecision d;

        (void) state;
        setup_config(&c, hard, false, 0);
        observe(&o, EVICT_SIGNAL_MEMORY_AVAILABLE, 100 * MI, 16 * GI); /* equal: not met */
        d = run(&c, &o, 0);
        assert_false(d.pressure);
        assert_false(d.evict);
        assert_string_equal(d.reason, "Evicted");
        assert_string_equal(d.message, "");
}

static void test_hard_memory(void **state) {
        static const char *const hard[] = { "memory.available", "100Mi", NULL };
        EvictConfig c;
        EvictObservations o = {};
        EvictDecision d;

        (void) state;
        setup_config(&c, hard, false, 30);
        observe(&o, EVICT_SIGNAL_MEMORY_AVAILABLE, 92124 * KI, 16 * GI);
        d = run(&c, &o, 0);
        assert_true(d.pressure);
        assert_true(d.evict);
        assert_int_equal(d.pod, 1);
        assert_int_equal(d.signal, EVICT_SIGNAL_MEMORY_AVAILABLE);
        assert_false(d.soft);
        assert_int_equal(d.threshold, 0);
        assert_int_equal(d.grace_period_seconds, 0);
        assert_string_equal(d.reason, "Evicted");
        assert_string_equal(d.message,
                            "The node was low on resource: memory. Threshold quantity: 100Mi, available: 92124Ki. "
                            "Container app was using 2213804Ki, request is 0, has larger consumption of memory. "
                            "Container cache was using 300Mi, request is 256Mi, has larger consumption of memory. ");
}

static void test_kubelet_policy_decision(void **state) {
        static const char *const hard[] = { "memory.available", "1Gi", NULL };
        EvictConfig c;
        EvictObservations o = {};
        EvictDecision d;
        CubError err = {};
        EvictPod two[] = {
                { .key = "ns/gu-over",
                  .qos = EVICT_QOS_GUARANTEED,
                  .stats = true,
                  .memory_request = GI,
                  .memory_usage = 3 * GI },
                { .key = "ns/be", .qos = EVICT_QOS_BESTEFFORT, .stats = true, .memory_usage = MI },
        };
        EvictState s;

        (void) state;
        setup_config(&c, hard, false, 0);
        observe(&o, EVICT_SIGNAL_MEMORY_AVAILABLE, 512 * MI, 16 * GI);
        evict_state_init(&s);
        evict_state_update(&s, &c, &o, 0);
        assert_int_equal(evict_decide(&c, &s, &o, two, 2, &d, &err), 0);
        assert_int_equal(d.pod, 1); /* cubelet: BestEffort first */
        assert_int_equal(evict_config_set_policy(&c, "kubelet", &err), 0);
        assert_int_equal(evict_decide(&c, &s, &o, two, 2, &d, &err), 0);
        assert_int_equal(d.pod, 0); /* kubelet: the larger usage over request */
        assert_string_equal(d.message,
                            "The node was low on resource: memory. Threshold quantity: 1Gi, available: 512Mi. ");
}

static void test_soft_grace(void **state) {
        static const char *const soft[] = { "memory.available", "1Gi", NULL };
        EvictConfig c;
        EvictObservations o = {};
        EvictDecision d;

        (void) state;
        setup_config(&c, soft, true, 30);
        observe(&o, EVICT_SIGNAL_MEMORY_AVAILABLE, 900 * MI, 16 * GI);
        /* within the 30s grace period: nothing */
        d = run(&c, &o, 29 * SEC);
        assert_false(d.pressure);
        assert_false(d.evict);
        /* after it: the pod gets min(60, evictionMaxPodGracePeriod 30) */
        d = run(&c, &o, 30 * SEC);
        assert_true(d.evict);
        assert_true(d.soft);
        assert_int_equal(d.pod, 1);
        assert_int_equal(d.grace_period_seconds, 30);

        /* a larger cap keeps the pod's own 60s */
        setup_config(&c, soft, true, 120);
        d = run(&c, &o, 30 * SEC);
        assert_int_equal(d.grace_period_seconds, 60);
        /* the default cap of 0 */
        setup_config(&c, soft, true, 0);
        d = run(&c, &o, 30 * SEC);
        assert_int_equal(d.grace_period_seconds, 0);
}

/* kubelet 1.34 evictionMessage: a pod with a pod-level memory request is
 * named with its usage and that request, over it or not, before its
 * containers; not for other resources, nor without stats */
static void test_pod_level_message(void **state) {
        static const char *const hard[] = { "memory.available", "100Mi", "nodefs.available", "10%", NULL };
        EvictPod saved = pods[1];
        EvictConfig c;
        EvictObservations o = {};
        EvictDecision d;

        (void) state;
        pods[1].name = "hog";
        pods[1].pod_memory_request_set = true;
        pods[1].pod_memory_request = 3 * GI;
        setup_config(&c, hard, false, 0);
        observe(&o, EVICT_SIGNAL_MEMORY_AVAILABLE, 92124 * KI, 16 * GI);
        d = run(&c, &o, 0);
        assert_int_equal(d.pod, 1);
        assert_string_equal(d.message,
                            "The node was low on resource: memory. Threshold quantity: 100Mi, available: 92124Ki. "
                            "Pod hog was using 2600Mi, request is 3Gi, has larger consumption of memory. "
                            "Container app was using 2213804Ki, request is 0, has larger consumption of memory. "
                            "Container cache was using 300Mi, request is 256Mi, has larger consumption of memory. ");
        observe(&o, EVICT_SIGNAL_MEMORY_AVAILABLE, 8 * GI, 16 * GI);
        observe(&o, EVICT_SIGNAL_NODEFS_AVAILABLE, 5 * GI, 100 * GI);
        d = run(&c, &o, 0);
        assert_int_equal(d.signal, EVICT_SIGNAL_NODEFS_AVAILABLE);
        assert_null(strstr(d.message, "Pod hog"));
        pods[1] = saved;
}

static void test_memory_first(void **state) {
        static const char *const hard[] = {
                "nodefs.available", "10%", "pid.available", "1000", "memory.available", "100Mi", NULL
        };
        EvictConfig c;
        EvictObservations o = {};
        EvictDecision d;

        (void) state;
        setup_config(&c, hard, false, 0);
        observe(&o, EVICT_SIGNAL_NODEFS_AVAILABLE, 5 * GI, 100 * GI);
        observe(&o, EVICT_SIGNAL_PID_AVAILABLE, 999, 32768);
        observe(&o, EVICT_SIGNAL_MEMORY_AVAILABLE, 50 * MI, 16 * GI);
        d = run(&c, &o, 0);
        assert_int_equal(d.signal, EVICT_SIGNAL_MEMORY_AVAILABLE);
        assert_int_equal(d.threshold, 2);
        /* without memory pressure: configuration order */
        observe(&o, EVICT_SIGNAL_MEMORY_AVAILABLE, 8 * GI, 16 * GI);
        d = run(&c, &o, 0);
        assert_int_equal(d.signal, EVICT_SIGNAL_NODEFS_AVAILABLE);
        assert_int_equal(d.pod, 1);
        assert_string_equal(d.message,
                            "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, "
                            "available: 5Gi. Container app was using 3Gi, request is 0, has larger consumption of "
                            "ephemeral-storage. ");
}

static void test_pid_and_inode_messages(void **state) {
        static const char *const pid[] = { "pid.available", "1000", NULL };
        static const char *const inodes[] = { "nodefs.inodesFree", "5%", NULL };
        EvictConfig c;
        EvictObservations o = {};
        EvictDecision d;

        (void) state;
        setup_config(&c, pid, false, 0);
        observe(&o, EVICT_SIGNAL_PID_AVAILABLE, 999, 32768);
        d = run(&c, &o, 0);
        assert_true(d.evict);
        assert_int_equal(d.pod, 1); /* cubelet: BestEffort before the Guaranteed pod with 300 processes */
        assert_string_equal(d.message, "The node was low on resource: pids. Threshold quantity: 1k, available: 999. ");

        setup_config(&c, inodes, false, 0);
        observe(&o, EVICT_SIGNAL_NODEFS_INODES_FREE, 40000, 1000000);
        assert_int_equal(evict_config_set_policy(&c, "kubelet", &(CubError){}), 0);
        d = run(&c, &o, 0);
        assert_int_equal(d.pod, 0); /* kubelet: same priority, more inodes */
        assert_string_equal(d.message,
                            "The node was low on resource: inodes. Threshold quantity: 50000, available: 40k. ");
}

static void test_only_exempt(void **state) {
        static const char *const hard[] = { "memory.available", "100Mi", NULL };
        EvictConfig c;
        EvictObservations o = {};
        EvictState s;
        EvictDecision d;
        CubError err = {};

        (void) state;
        setup_config(&c, hard, false, 0);
        observe(&o, EVICT_SIGNAL_MEMORY_AVAILABLE, 50 * MI, 16 * GI);
        evict_state_init(&s);
        evict_state_update(&s, &c, &o, 0);
        assert_int_equal(evict_decide(&c, &s, &o, &pods[2], 1, &d, &err), 0);
        assert_true(d.pressure);
        assert_false(d.evict);
        assert_int_equal(evict_decide(&c, &s, &o, NULL, 0, &d, &err), 0);
        assert_true(d.pressure);
        assert_false(d.evict);
        assert_int_equal(evict_decide(&c, &s, &o, NULL, 3, &d, &err), -EINVAL);
}

static void test_admit(void **state) {
        static const struct {
                bool mem, disk, pid;
                EvictQOS qos;
                bool critical, tolerates, admit;
                const char *msg;
        } vec[] = {
                { false, false, false, EVICT_QOS_BESTEFFORT, false, false, true, NULL },
                { true, false, false, EVICT_QOS_BURSTABLE, false, false, true, NULL },
                { true, false, false, EVICT_QOS_GUARANTEED, false, false, true, NULL },
                { true, false, false, EVICT_QOS_BESTEFFORT, false, false, false,
                  "The node had condition: [MemoryPressure]. " },
                { true, false, false, EVICT_QOS_BESTEFFORT, false, true, true, NULL },
                { true, false, false, EVICT_QOS_BESTEFFORT, true, false, true, NULL },
                { false, true, false, EVICT_QOS_GUARANTEED, false, false, false,
                  "The node had condition: [DiskPressure]. " },
                { false, true, false, EVICT_QOS_GUARANTEED, true, false, true, NULL },
                { false, false, true, EVICT_QOS_BURSTABLE, false, true, false,
                  "The node had condition: [PIDPressure]. " },
                { true, true, false, EVICT_QOS_GUARANTEED, false, true, false,
                  "The node had condition: [MemoryPressure DiskPressure]. " },
                { true, true, true, EVICT_QOS_BESTEFFORT, false, true, false,
                  "The node had condition: [MemoryPressure DiskPressure PIDPressure]. " },
        };
        (void) state;
        for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
                bool cond[_EVICT_CONDITION_MAX] = { vec[i].mem, vec[i].disk, vec[i].pid };
                char msg[EVICT_MESSAGE_MAX] = "untouched";
                bool ok = evict_admit(cond, vec[i].qos, vec[i].critical, vec[i].tolerates, msg);

                assert_int_equal(ok, vec[i].admit);
                assert_string_equal(msg, vec[i].msg ? vec[i].msg : "untouched");
        }
        assert_false(evict_admit((bool[_EVICT_CONDITION_MAX]){ false, true, false }, EVICT_QOS_GUARANTEED, false, false,
                                 NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_nothing_met),
                cmocka_unit_test(test_hard_memory),
                cmocka_unit_test(test_kubelet_policy_decision),
                cmocka_unit_test(test_soft_grace),
                cmocka_unit_test(test_pod_level_message),
                cmocka_unit_test(test_memory_first),
                cmocka_unit_test(test_pid_and_inode_messages),
                cmocka_unit_test(test_only_exempt),
                cmocka_unit_test(test_admit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
