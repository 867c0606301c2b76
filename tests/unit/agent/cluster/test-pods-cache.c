/* SPDX-License-Identifier: Apache-2.0 */
/* The file of the node's last API pods (cubelet.offlinePods): what it keeps
 * (metadata and spec; no mirror pod, no pod being deleted or ended, no status), the
 * fingerprint that a status change leaves alone, and a file that is not
 * this node's, another version's or not JSON refused and named. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/cluster/pods-cache.h"

static json_t *pods(const char *phase, int generation) {
        return json_pack(
                "{s:{s:{s:s,s:I},s:{s:s},s:{s:s}},s:{s:{s:s,s:{s:s}},s:{}},s:{s:{s:s,s:s},s:{}}}", "u1", "metadata",
                "uid", "u1", "generation", (json_int_t) generation, "spec", "nodeName", "n1", "status", "phase", phase,
                "u2", "metadata", "uid", "u2", "annotations", "kubernetes.io/config.mirror", "x", "spec", "u3",
                "metadata", "uid", "u3", "deletionTimestamp", "2026-11-28T00:00:00Z", "spec");
}

static void test_fingerprint(void **state) {
        json_t *a = pods("Pending", 1), *b = pods("Running", 1), *c = pods("Running", 2);
        char *fa = kube_pods_cache_fingerprint(a), *fb = kube_pods_cache_fingerprint(b),
             *fc = kube_pods_cache_fingerprint(c);

        (void) state;
        assert_string_equal(fa, "u1/1 ");   /* the mirror and the deleted pod left out */
        assert_string_equal(fa, fb);        /* a status change: the same */
        assert_string_not_equal(fa, fc);    /* a new generation: written again */
        free(fa), free(fb), free(fc);
        json_decref(a), json_decref(b), json_decref(c);
}

/* a pod that has ended (Succeeded, Failed) is never run again: left out,
 * and the file is written again when a pod ends */
static void test_ended(void **state) {
        json_t *f = pods("Failed", 1), *s = pods("Succeeded", 1);
        char *ff = kube_pods_cache_fingerprint(f), *fs = kube_pods_cache_fingerprint(s);

        (void) state;
        assert_string_equal(ff, "");
        assert_string_equal(fs, "");
        free(ff), free(fs);
        json_decref(f), json_decref(s);
}

static void test_round_trip(void **state) {
        char dir[] = "/tmp/cubelet-pods-cache-XXXXXX", path[128];
        json_t *in = pods("Running", 3), *out;
        CubError err = {};
        size_t n = 0;

        (void) state;
        assert_non_null(mkdtemp(dir));
        (void) snprintf(path, sizeof(path), "%s/api_pods", dir);
        assert_int_equal(kube_pods_cache_write(path, "n1", in, &n, &err), 0);
        assert_int_equal(n, 1);
        out = kube_pods_cache_read(path, "n1", &err);
        assert_non_null(out);
        assert_int_equal(json_object_size(out), 1);
        assert_string_equal(json_string_value(json_object_get(
                                    json_object_get(json_object_get(out, "u1"), "spec"), "nodeName")),
                            "n1");
        assert_null(json_object_get(json_object_get(out, "u1"), "status"));
        json_decref(out);

        /* another node's file */
        assert_null(kube_pods_cache_read(path, "n2", &err));
        assert_int_equal(err.code, EBADMSG);
        assert_non_null(strstr(err.msg, "the pods of node 'n1', not of 'n2'"));
        unlink(path);

        /* none yet */
        assert_null(kube_pods_cache_read(path, "n1", &err));
        assert_int_equal(err.code, ENOENT);

        /* another version, and not JSON */
        for (size_t i = 0; i < 2; i++) {
                FILE *f = fopen(path, "w");

                assert_non_null(f);
                fputs(i ? "{\"version\":2,\"node\":\"n1\",\"pods\":{}}" : "{\"version\":1,", f);
                fclose(f);
                assert_null(kube_pods_cache_read(path, "n1", &err));
                assert_int_equal(err.code, EBADMSG);
                assert_non_null(strstr(err.msg, i ? "version 2, expected 1" : "not a pods file"));
        }
        unlink(path);
        rmdir(dir);
        json_decref(in);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fingerprint),
                cmocka_unit_test(test_ended),
                cmocka_unit_test(test_round_trip),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
