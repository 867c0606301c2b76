/* SPDX-License-Identifier: Apache-2.0 */
/* cgroupsPerQOS: false (kubelet's mode of that name): the configuration as
 * kubelet's validation.go checks it (its messages) with what cubelet
 * refuses beside it (settings that need its own pod cgroups), and the pod
 * values: no pod cgroup, no file, the runtime's group below cgroupRoot;
 * the container's CRI resources unchanged, and no unified map on a cgroup
 * v1 host. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cgroup/cgroup.h"
#include "agent/pod/pod.h"

static int decode(const char *yaml, PodKubeletConfig *c, CubError *err) {
        char text[1024];

        (void) snprintf(text, sizeof(text), "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n%s",
                        yaml);
        return pod_kubelet_config_decode(text, strlen(text), "k.yaml", c, err);
}

static void expect_ok(const char *yaml, bool per_qos, bool pods) {
        PodKubeletConfig c;
        CubError err = {};

        if (decode(yaml, &c, &err) < 0)
                fail_msg("%s: %s", yaml, err.msg);
        assert_int_equal(c.cgroups_per_qos, per_qos);
        assert_int_equal(c.enforce_pods, pods);
        pod_kubelet_config_done(&c);
}

static void expect_err(const char *yaml, int code, const char *msg) {
        PodKubeletConfig c;
        CubError err = {};

        assert_int_equal(decode(yaml, &c, &err), -code);
        assert_string_equal(err.msg, msg);
}

static void test_config(void **state) {
        (void) state;
        expect_ok("", true, true); /* kubelet's defaults: true, [pods] */
        expect_ok("enforceNodeAllocatable: [pods]\n", true, true);
        expect_ok("cgroupsPerQOS: false\nenforceNodeAllocatable: []\n", false, false);
        expect_ok("cgroupsPerQOS: false\nenforceNodeAllocatable: [none]\ncgroupRoot: /run-1\n", false, false);
        /* kubelet's validation.go, word for word */
        expect_err("cgroupsPerQOS: false\nenforceNodeAllocatable: [pods]\n", EINVAL,
                   "k.yaml: invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when \"pods\" "
                   "contained in enforceNodeAllocatable (--enforce-node-allocatable)");
        expect_err("cgroupsPerQOS: false\n", EINVAL,
                   "k.yaml: invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when \"pods\" "
                   "contained in enforceNodeAllocatable (--enforce-node-allocatable) (its default: set "
                   "enforceNodeAllocatable: [] with cgroupsPerQOS: false)");
        expect_err("enforceNodeAllocatable: [pods, pods]\n", EINVAL,
                   "k.yaml: invalid configuration: duplicated enforcements \"pods\" in enforceNodeAllocatable "
                   "(--enforce-node-allocatable)");
        expect_err("enforceNodeAllocatable: [pod]\n", EINVAL,
                   "k.yaml: invalid configuration: option \"pod\" specified for enforceNodeAllocatable "
                   "(--enforce-node-allocatable). Valid options are \"pods\", \"system-reserved\", "
                   "\"system-reserved-compressible\", \"kube-reserved\", \"kube-reserved-compressible\" or \"none\"");
        expect_err("cgroupsPerQOS: false\nenforceNodeAllocatable: [none, pods]\n", EINVAL,
                   "k.yaml: invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain "
                   "additional enforcements when \"none\" is specified");
        /* what cubelet does not do */
        expect_err("enforceNodeAllocatable: [pods, system-reserved]\n", ENOTSUP,
                   "k.yaml: enforceNodeAllocatable: \"system-reserved\" is not supported by cubelet (it enforces "
                   "\"pods\" on kubepods; systemReservedCgroup and kubeReservedCgroup are not read)");
        expect_err("enforceNodeAllocatable: []\n", ENOTSUP,
                   "k.yaml: enforceNodeAllocatable without \"pods\" and cgroupsPerQOS: true: not supported by cubelet "
                   "(kubepods is always limited to allocatable)");
        expect_err("cgroupRoot: /custom\n", ENOTSUP,
                   "k.yaml: cgroupRoot \"/custom\": with cgroupsPerQOS: true cubelet's kubepods is at the root of its "
                   "cgroup mount (cubelet.cgroupMount); cgroupRoot is the pods' parent with cgroupsPerQOS: false");
        /* settings that need cubelet's own pod cgroups */
        expect_err("cgroupsPerQOS: false\nenforceNodeAllocatable: []\nfeatureGates: {MemoryQoS: true}\n", EINVAL,
                   "k.yaml: featureGates.MemoryQoS needs cgroupsPerQOS: true (memory.min of the pod and QoS cgroups)");
        expect_err("cgroupsPerQOS: false\nenforceNodeAllocatable: []\npodPidsLimit: 100\n", EINVAL,
                   "k.yaml: podPidsLimit 100 needs cgroupsPerQOS: true (pids.max of the pod cgroup)");
}

static Pod *pod_of(const char *yaml) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(yaml, strlen(yaml), "p.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("%s", err.msg);
        return pod;
}

static void test_values(void **state) {
        Pod *pod = pod_of("apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u1}\nspec:\n  containers:\n"
                          "  - name: c\n    image: x:1\n    resources: {limits: {cpu: 500m, memory: 64Mi}}\n");
        PodEffective eff;
        CgOptions o;
        CgGroupValues g;
        CgContainerResources res;
        const char *kv[CG_UNIFIED_KV_MAX];
        CubError err = {};

        (void) state;
        assert_int_equal(pod_effective(pod, &eff, &err), 0);
        cg_options_init(&o);
        assert_true(o.per_qos);
        assert_int_equal(cg_pod_values(pod, &eff, POD_QOS_GUARANTEED, &o, &g, &err), 0);
        assert_string_equal(g.path, "kubepods/podu1");
        assert_true(g.n_files > 0);
        /* no pod cgroup: the group is cgroupRoot's, no file */
        o.per_qos = false;
        o.pods_parent = "/cubelet-native-1";
        assert_int_equal(cg_pod_values(pod, &eff, POD_QOS_GUARANTEED, &o, &g, &err), 0);
        assert_string_equal(g.path, "cubelet-native-1");
        assert_int_equal(g.n_files, 0);
        o.pods_parent = NULL;
        assert_int_equal(cg_pod_values(pod, &eff, POD_QOS_GUARANTEED, &o, &g, &err), 0);
        assert_string_equal(g.path, "");
        /* the container's limits still go to the runtime (CRI) */
        cg_container_resources(pod, POD_QOS_GUARANTEED, &pod->containers[0], &o, &res);
        assert_int_equal(res.memory_limit_in_bytes, 64 << 20);
        assert_int_equal(res.cpu_quota, 50000);
        assert_int_equal(cg_container_unified(&res, kv), 1); /* memory.oom.group, cgroup v2's */
        assert_string_equal(kv[0], "memory.oom.group");
        /* a cgroup v1 host: no unified key (runc refuses them there) */
        o.cgroup_v1 = true;
        cg_container_resources(pod, POD_QOS_GUARANTEED, &pod->containers[0], &o, &res);
        assert_int_equal(cg_container_unified(&res, kv), 0);
        assert_null(kv[0]);
        pod_effective_done(&eff);
        pod_free(pod);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config),
                cmocka_unit_test(test_values),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
