/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deviceplugin/gpu/devchar.c: the /dev/char/<major>:<minor> links of the
 * NVIDIA nodes, over a tmpdir --dev-root with real character device nodes
 * (mknod: the tests run as root).
 */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cmocka.h>

#include "../../../../deviceplugin/gpu/devchar.c"

static char tmpdir[] = "/tmp/gpu-devchar-test-XXXXXX";

static void node(const char *rel, unsigned maj, unsigned min) {
        _cleanup_free_ char *p = NULL;

        assert_true(asprintf(&p, "%s/dev/%s", tmpdir, rel) > 0);
        assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(maj, min)), 0);
}

static char *link_of(const char *rel) {
        static char buf[256];
        _cleanup_free_ char *p = NULL;
        ssize_t n;

        assert_true(asprintf(&p, "%s/dev/%s", tmpdir, rel) > 0);
        n = readlink(p, buf, sizeof(buf) - 1);
        if (n < 0)
                return NULL;
        buf[n] = '\0';
        return buf;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
        (void) sb;
        (void) flag;
        (void) ftw;
        return remove(path);
}

static int setup(void **state) {
        _cleanup_free_ char *dev = NULL, *caps = NULL, *other = NULL;

        (void) state;
        memcpy(tmpdir, "/tmp/gpu-devchar-test-XXXXXX", sizeof(tmpdir));
        assert_non_null(mkdtemp(tmpdir));
        assert_true(asprintf(&dev, "%s/dev", tmpdir) > 0);
        assert_true(asprintf(&caps, "%s/dev/nvidia-caps", tmpdir) > 0);
        assert_int_equal(mkdir(dev, 0755), 0);
        assert_int_equal(mkdir(caps, 0755), 0);
        node("nvidia0", 195, 0);
        node("nvidia1", 195, 1);
        node("nvidiactl", 195, 255);
        node("nvidia-uvm", 510, 0);
        node("nvidia-caps/nvidia-cap1", 237, 1);
        node("null-like", 1, 3); /* not NVIDIA's: no link */
        assert_true(asprintf(&other, "%s/dev/nvidia-readme", tmpdir) > 0);
        assert_int_equal(close(open(other, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0); /* not a node */
        return 0;
}

static int teardown(void **state) {
        (void) state;
        (void) nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

static void test_made_as_udev_makes_them(void **state) {
        CubError err = { 0 };
        unsigned made = 0;

        (void) state;
        assert_int_equal(gpu_devchar_links(tmpdir, &made, &err), 0);
        assert_int_equal(made, 5);
        assert_string_equal(link_of("char/195:0"), "../nvidia0");
        assert_string_equal(link_of("char/195:1"), "../nvidia1");
        assert_string_equal(link_of("char/195:255"), "../nvidiactl");
        assert_string_equal(link_of("char/510:0"), "../nvidia-uvm");
        assert_string_equal(link_of("char/237:1"), "../nvidia-caps/nvidia-cap1");
        assert_null(link_of("char/1:3"));
        /* checked again: nothing to do */
        assert_int_equal(gpu_devchar_links(tmpdir, &made, &err), 0);
        assert_int_equal(made, 0);
}

static void test_wrong_link_fixed(void **state) {
        _cleanup_free_ char *p = NULL, *q = NULL;
        CubError err = { 0 };
        unsigned made = 0;

        (void) state;
        assert_true(asprintf(&p, "%s/dev/char", tmpdir) > 0);
        assert_int_equal(mkdir(p, 0755), 0);
        assert_true(asprintf(&q, "%s/dev/char/195:0", tmpdir) > 0);
        assert_int_equal(symlink("../nvidia7", q), 0); /* a stale one */
        assert_int_equal(gpu_devchar_links(tmpdir, &made, &err), 0);
        assert_int_equal(made, 5);
        assert_string_equal(link_of("char/195:0"), "../nvidia0");
        assert_null(link_of("char/.195:0.tmp"));
}

static void test_not_a_link_left_alone(void **state) {
        _cleanup_free_ char *p = NULL, *q = NULL;
        CubError err = { 0 };
        unsigned made = 0;
        struct stat sb;

        (void) state;
        assert_true(asprintf(&p, "%s/dev/char", tmpdir) > 0);
        assert_int_equal(mkdir(p, 0755), 0);
        assert_true(asprintf(&q, "%s/dev/char/195:255", tmpdir) > 0);
        assert_int_equal(mknod(q, S_IFCHR | 0600, makedev(195, 255)), 0);
        assert_int_equal(gpu_devchar_links(tmpdir, &made, &err), -EEXIST);
        assert_string_equal(err.msg, "'/dev/char/195:255' exists and is not a link; '/dev/nvidiactl' has none");
        /* the others are still made */
        assert_int_equal(made, 4);
        assert_string_equal(link_of("char/195:0"), "../nvidia0");
        assert_int_equal(lstat(q, &sb), 0);
        assert_true(S_ISCHR(sb.st_mode));
}

static void test_no_dev(void **state) {
        _cleanup_free_ char *root = NULL, *want = NULL;
        CubError err = { 0 };

        (void) state;
        assert_true(asprintf(&root, "%s/nowhere/", tmpdir) > 0);
        assert_int_equal(gpu_devchar_links(root, NULL, &err), -ENOENT);
        assert_true(asprintf(&want, "cannot open '%s/nowhere/dev': No such file or directory", tmpdir) > 0);
        assert_string_equal(err.msg, want);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_made_as_udev_makes_them, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wrong_link_fixed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_not_a_link_left_alone, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_dev, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
