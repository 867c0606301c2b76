/* SPDX-License-Identifier: Apache-2.0 */
/* agent/config: the manifest directory source over a real directory. */
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

#include "agent/config/podsrc.h"

static const char good[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n"
                           "  - name: app\n    image: busybox:1\n";
static const char dup_manifest[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\"},"
                                   "\"spec\":{\"containers\":[{\"name\":\"x\",\"image\":\"y\"}]}}";
static const char bad[] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n"
                          "  - name: app\n";

static void put(const char *dir, const char *name, const char *text) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void test_ignored_names(void **state) {
        (void) state;
        assert_true(podsrc_ignored_name(".web.yaml"));
        assert_true(podsrc_ignored_name("web.yaml~"));
        assert_true(podsrc_ignored_name("web.yaml.swp"));
        assert_true(podsrc_ignored_name(".web.yaml.swx"));
        assert_true(podsrc_ignored_name("web.tmp"));
        assert_true(podsrc_ignored_name("#web.yaml#"));
        assert_true(podsrc_ignored_name("4913"));
        assert_true(podsrc_ignored_name(""));
        assert_false(podsrc_ignored_name("web.yaml"));
        assert_false(podsrc_ignored_name("etcd.json"));
        assert_false(podsrc_ignored_name("manifest"));
}

typedef struct Cache {
        const char *path;
        PodsrcFileId id;
        const Pod *pod;
        int asked;
} Cache;

static const Pod *cached(const char *path, const PodsrcFileId *id, void *userdata) {
        Cache *c = userdata;

        c->asked++;
        return strcmp(path, c->path) == 0 && memcmp(id, &c->id, sizeof(*id)) == 0 ? c->pod : NULL;
}

static void test_scan(void **state) {
        char dir[] = "/tmp/cubelet-podsrc-XXXXXX", sub[600], expect[1200];
        PodsrcSet set = {};
        CubError err = {};

        (void) state;
        assert_non_null(mkdtemp(dir));
        put(dir, "a-web.yaml", good);
        put(dir, ".hidden.yaml", good);
        put(dir, "a-web.yaml~", good);
        put(dir, "b-bad.yaml", bad);
        put(dir, "c-dup.json", dup_manifest);
        snprintf(sub, sizeof(sub), "%s/sub", dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        put(sub, "inner.yaml", good);

        assert_int_equal(podsrc_dir_scan(dir, "Node-1", NULL, NULL, &set, &err), 0);
        assert_int_equal(set.n, 3);

        assert_non_null(set.items[0].pod);
        assert_null(set.items[0].error);
        assert_string_equal(set.items[0].pod->name, "web-node-1");
        assert_int_equal(strlen(set.items[0].pod->uid), 32);

        assert_null(set.items[1].pod);
        snprintf(expect, sizeof(expect), "%s/b-bad.yaml:7: spec.containers[0].image: Required value", dir);
        assert_string_equal(set.items[1].error, expect);

        assert_null(set.items[2].pod);
        snprintf(expect, sizeof(expect), "%s/c-dup.json: pod default/web-node-1 is already defined by '%s/a-web.yaml'",
                 dir, dir);
        assert_string_equal(set.items[2].error, expect);
        podsrc_set_done(&set);

        /* the rescan's cache: a file whose identity the caller knows is not
         * read again and yields the caller's pod (also for the duplicate
         * check); a file rewritten since is decoded again */
        {
                PodsrcSet first = {};
                Cache c = {};

                assert_int_equal(podsrc_dir_scan(dir, "Node-1", NULL, NULL, &first, &err), 0);
                c.path = first.items[0].path;
                c.id = first.items[0].id;
                c.pod = first.items[0].pod;
                assert_int_equal(podsrc_dir_scan(dir, "Node-1", cached, &c, &set, &err), 0);
                assert_int_equal(c.asked, 3);
                assert_null(set.items[0].pod);
                assert_ptr_equal(set.items[0].cached, c.pod);
                assert_null(set.items[0].error);
                assert_null(set.items[2].pod);
                snprintf(expect, sizeof(expect),
                         "%s/c-dup.json: pod default/web-node-1 is already defined by '%s/a-web.yaml'", dir, dir);
                assert_string_equal(set.items[2].error, expect);
                podsrc_set_done(&set);
                /* rewritten: a new identity (ctime), decoded again */
                usleep(20000);
                put(dir, "a-web.yaml", good);
                assert_int_equal(podsrc_dir_scan(dir, "Node-1", cached, &c, &set, &err), 0);
                assert_non_null(set.items[0].pod);
                assert_null(set.items[0].cached);
                assert_string_equal(set.items[0].pod->uid, c.pod->uid);
                podsrc_set_done(&set);
                podsrc_set_done(&first);
        }

        {
                static const char *const names[] = { "a-web.yaml", ".hidden.yaml", "a-web.yaml~",
                                                     "b-bad.yaml", "c-dup.json",   "sub/inner.yaml" };
                for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                        snprintf(expect, sizeof(expect), "%s/%s", dir, names[i]);
                        assert_int_equal(unlink(expect), 0);
                }
                assert_int_equal(rmdir(sub), 0);
                assert_int_equal(rmdir(dir), 0);
        }
}

static void test_missing_dir(void **state) {
        PodsrcSet set = {};
        CubError err = {};

        (void) state;
        assert_int_equal(podsrc_dir_scan("/nonexistent/cubelet-manifests", "n", NULL, NULL, &set, &err), -ENOENT);
        assert_string_equal(err.msg, "manifest directory '/nonexistent/cubelet-manifests': No such file or directory");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ignored_names),
                cmocka_unit_test(test_scan),
                cmocka_unit_test(test_missing_dir),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
