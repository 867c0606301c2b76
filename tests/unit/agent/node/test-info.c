/* SPDX-License-Identifier: Apache-2.0 */
/* agent/node/info.c: the Node's facts read under a root (a fixture tree). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmocka.h>
#include <ftw.h>

#include "agent/node/info.h"
#include "agent/util/fileio.h"

static char root[] = "/tmp/cubelet-nodeinfo-XXXXXX";

static void put(const char *rel, const char *text) {
        char path[512], dir[512];

        (void) snprintf(path, sizeof(path), "%s/%s", root, rel);
        (void) snprintf(dir, sizeof(dir), "%s", path);
        *strrchr(dir, '/') = 0;
        assert_int_equal(cub_mkdir_p(dir, 0755), 0);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static int setup(void **state) {
        (void) state;
        return mkdtemp(root) ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

static int teardown(void **state) {
        (void) state;
        return nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_fixture(void **state) {
        AgentNodeInfo ni;
        struct utsname u;

        (void) state;
        put("etc/machine-id", "0123456789abcdef0123456789abcdef\n");
        put("sys/class/dmi/id/product_uuid", "4c4c4544-0000-1000-8000-000000000000\n");
        put("proc/sys/kernel/random/boot_id", "b0b0b0b0-1111-2222-3333-444444444444\n");
        put("etc/os-release", "NAME=\"Debian GNU/Linux\"\nID=debian\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n");
        put("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "3\n");
        put("sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "0\n");
        agent_node_info_read(root, &ni);
        assert_string_equal(ni.machine_id, "0123456789abcdef0123456789abcdef");
        assert_string_equal(ni.system_uuid, "4c4c4544-0000-1000-8000-000000000000");
        assert_string_equal(ni.boot_id, "b0b0b0b0-1111-2222-3333-444444444444");
        assert_string_equal(ni.os_image, "Debian GNU/Linux 12 (bookworm)");
        assert_int_equal(uname(&u), 0);
        assert_string_equal(ni.kernel, u.release);
        assert_true(ni.hugepages_2mi == 3 * (2LL << 20));
        assert_true(ni.hugepages_1gi == 0);
}

/* what a machine lacks: "" and -1, and "Linux" without PRETTY_NAME; a
 * PRETTY_NAME= only at the start of a line (not VERSION's PRETTY_NAME_X) */
static void test_missing(void **state) {
        AgentNodeInfo ni;

        (void) state;
        assert_int_equal(teardown(state), 0);
        memcpy(root + strlen(root) - 6, "XXXXXX", 6);
        assert_int_equal(setup(state), 0);
        put("etc/os-release", "NAME=x\nNOT_PRETTY_NAME=\"no\"\n");
        put("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "lots\n");
        agent_node_info_read(root, &ni);
        assert_string_equal(ni.machine_id, "");
        assert_string_equal(ni.system_uuid, "");
        assert_string_equal(ni.boot_id, "");
        assert_string_equal(ni.os_image, "Linux");
        assert_true(ni.hugepages_2mi == -1);
        assert_true(ni.hugepages_1gi == -1);
        put("etc/os-release", "PRETTY_NAME='Single Quoted 1'\n");
        agent_node_info_read(root, &ni);
        assert_string_equal(ni.os_image, "Single Quoted 1");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fixture),
                cmocka_unit_test(test_missing),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
