/* SPDX-License-Identifier: Apache-2.0 */
/* agent/node/machine.c: this host as a node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/node/machine.h"

static void test_go_arch(void **state) {
        (void) state;
#if defined(__x86_64__)
        assert_string_equal(agent_go_arch(), "amd64");
#elif defined(__aarch64__)
        assert_string_equal(agent_go_arch(), "arm64");
#else
        assert_non_null(agent_go_arch());
#endif
}

/* the host's own figures: MemTotal (agent/util/meminfo.c), the online CPUs */
static void test_host_node(void **state) {
        CubError err = {};
        AgentNode n = {};

        (void) state;
        assert_int_equal(agent_host_node(&n, &err), 0);
        assert_true(n.memory_capacity > 0 && n.memory_capacity % 1024 == 0);
        assert_int_equal(n.cpu_capacity_milli, sysconf(_SC_NPROCESSORS_ONLN) * 1000);
        assert_true(n.max_pids > 0);
        assert_true(strlen(n.name) > 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_go_arch),
                cmocka_unit_test(test_host_node),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
