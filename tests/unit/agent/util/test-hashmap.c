/* SPDX-License-Identifier: Apache-2.0 */
/* agent/util/hashmap.c */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/util/hashmap.h"

static void test_put_get_replace(void **state) {
        CubHashmap *m = NULL;
        int a = 1, b = 2;

        (void) state;
        assert_int_equal(cub_hashmap_new(&m), 0);
        assert_null(cub_hashmap_get(m, "x"));
        assert_int_equal(cub_hashmap_put(m, "x", &a), 0);
        assert_ptr_equal(cub_hashmap_get(m, "x"), &a);
        assert_int_equal(cub_hashmap_put(m, "x", &b), 0);
        assert_ptr_equal(cub_hashmap_get(m, "x"), &b);
        assert_int_equal(cub_hashmap_size(m), 1);
        /* remove only if it maps to that value */
        assert_null(cub_hashmap_remove(m, "x", &a));
        assert_ptr_equal(cub_hashmap_remove(m, "x", &b), &b);
        assert_null(cub_hashmap_get(m, "x"));
        assert_int_equal(cub_hashmap_size(m), 0);
        cub_hashmap_free(m);
}

/* Many keys, removed in a scattered order: every remaining key is still
 * found (backward-shift deletion keeps probe chains whole). */
static void test_many(void **state) {
        enum { N = 2000 };
        static char keys[N][32];
        static int values[N];
        CubHashmap *m = NULL;

        (void) state;
        assert_int_equal(cub_hashmap_new(&m), 0);
        for (int i = 0; i < N; i++) {
                (void) snprintf(keys[i], sizeof(keys[i]), "pod-%d", i);
                values[i] = i;
                assert_int_equal(cub_hashmap_put(m, keys[i], &values[i]), 0);
        }
        assert_int_equal(cub_hashmap_size(m), N);
        for (int i = 0; i < N; i += 3)
                assert_ptr_equal(cub_hashmap_remove(m, keys[i], NULL), &values[i]);
        for (int i = 0; i < N; i++) {
                int *v = cub_hashmap_get(m, keys[i]);

                if (i % 3 == 0)
                        assert_null(v);
                else {
                        assert_non_null(v);
                        assert_int_equal(*v, i);
                }
        }
        for (int i = 0; i < N; i++)
                (void) cub_hashmap_remove(m, keys[i], NULL);
        assert_int_equal(cub_hashmap_size(m), 0);
        for (int i = 0; i < N; i++)
                assert_null(cub_hashmap_get(m, keys[i]));
        cub_hashmap_free(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_put_get_replace),
                cmocka_unit_test(test_many),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
