/* SPDX-License-Identifier: Apache-2.0 */
/* --node-labels as kubelet checks them (agent/cluster/labels.c): the
 * labels NodeRestriction would refuse stop the start with kubelet's
 * message (options.go ValidateKubeletFlags); kubelet's allowed set and
 * prefixes, and other namespaces, pass. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/cluster/node.h"

static void test_forbidden(void **state) {
        static const char *const ok[] = {
                "kubernetes.io/hostname", "topology.kubernetes.io/zone", "node.kubernetes.io/pool",
                "x.node.kubernetes.io/a", "kubelet.kubernetes.io/b",     "example.com/gpu",
                "plain",                  "beta.kubernetes.io/instance-type",
        };
        static const char *const bad[] = {
                "node-role.kubernetes.io/worker", "kubernetes.io/role", "k8s.io/x", "a.k8s.io/y",
                "node-restriction.kubernetes.io/z" /* NodeRestriction's own: a kubelet may not set it */,
        };

        (void) state;
        for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++)
                if (kube_node_label_forbidden(ok[i]))
                        fail_msg("%s refused", ok[i]);
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
                if (!kube_node_label_forbidden(bad[i]))
                        fail_msg("%s allowed", bad[i]);
}

static void test_message(void **state) {
        CubError err = {};

        (void) state;
        assert_int_equal(kube_node_labels_check(NULL, &err), 0);
        assert_int_equal(kube_node_labels_check("node.kubernetes.io/pool=edge,topology.kubernetes.io/zone=z1", &err),
                         0);
        assert_int_equal(kube_node_labels_check("node-role.kubernetes.io/worker=,a=b,k8s.io/x=1", &err), -EINVAL);
        assert_string_equal(
                err.msg,
                "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: "
                "[k8s.io/x node-role.kubernetes.io/worker]\n"
                "--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix "
                "(kubelet.kubernetes.io, node.kubernetes.io) or be in the specifically allowed set "
                "(beta.kubernetes.io/arch, beta.kubernetes.io/instance-type, beta.kubernetes.io/os, "
                "failure-domain.beta.kubernetes.io/region, failure-domain.beta.kubernetes.io/zone, kubernetes.io/arch, "
                "kubernetes.io/hostname, kubernetes.io/os, node.kubernetes.io/instance-type, "
                "topology.kubernetes.io/region, topology.kubernetes.io/zone)");
        assert_int_equal(kube_node_labels_check("a=b,broken", &err), -EINVAL);
        assert_string_equal(err.msg, "--node-labels: 'broken': malformed pair, expect string=string");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_forbidden),
                cmocka_unit_test(test_message),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
