/* SPDX-License-Identifier: Apache-2.0 */
/* agent/config: the manifest URL's last good answer on disk (url-cache.c),
 * against the real nginx of test-http.c: written after a 200, kept by a
 * 304, loaded at a start (its ETag making the first GET conditional), its
 * pods there while the URL is unreachable, and a bad file an error naming
 * it that costs nothing else. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/config/http-internal.h"
#include "agent/config/podsrc.h"

#include "http-fixture.h"

static const char one_yaml[] = "apiVersion: v1\nkind: PodList\nitems:\n"
                               "- metadata: {name: a}\n  spec: {containers: [{name: c, image: busybox:1}]}\n"
                               "- metadata: {name: b}\n  spec: {containers: [{name: c, image: busybox:1}]}\n";
static const char two_yaml[] = "apiVersion: v1\nkind: PodList\nitems:\n"
                               "- metadata: {name: b}\n  spec: {containers: [{name: c, image: busybox:1}]}\n"
                               "- metadata: {name: c}\n  spec: {containers: [{name: c, image: busybox:1}]}\n";

static char cache[300];

/* a source for path with the cache file; url (optional) overrides the URL */
static PodsrcHttp *make_cached(const char *path, const char *url) {
        PodsrcHttpOptions o = { .url = url, .cache_path = cache };

        return make(path, &o);
}

static json_t *cache_json(void) {
        json_error_t jerr;
        json_t *j = json_load_file(cache, 0, &jerr);

        if (!j)
                fail_msg("'%s': %s", cache, jerr.text);
        return j;
}

static void write_text(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

static void write_json(json_t *j) {
        assert_int_equal(json_dump_file(j, cache, JSON_COMPACT), 0);
}

static bool has_pod(const PodsrcSet *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (s->items[i].pod && strcmp(s->items[i].pod->name, name) == 0)
                        return true;
        return false;
}

static void fresh(void) {
        snprintf(cache, sizeof(cache), "%s/manifest_url_cache", dir);
        (void) unlink(cache);
        puts_("list.yaml", one_yaml);
}

/* a 200 is kept; a start loads it (the same pods, the same UIDs) and its
 * validators make the first GET a 304, which keeps the file as it is */
static void test_write_load_304(void **state) {
        PodsrcHttp *h;
        PodsrcSet set = {}, kept = {};
        CubError err = {};
        json_t *j;
        struct stat st1, st2;
        const PodsrcHttpStats *st;

        (void) state;
        fresh();
        h = make_cached("/list.yaml", NULL);
        assert_int_equal(podsrc_http_load_cache(h, &kept, &err), 0); /* nothing kept yet */
        {
                /* finish() takes the answer, save_cache() writes it: the set
                 * is applied before the disk is waited for */
                CURL *c = NULL;

                assert_int_equal(podsrc_http_begin(h, &c, &err), 0);
                assert_int_equal(podsrc_http_finish(h, c, curl_easy_perform(c), &set, &err), 1);
                assert_int_equal(access(cache, F_OK), -1);
                assert_int_equal(podsrc_http_save_cache(h), 0);
                assert_int_equal(access(cache, F_OK), 0);
                assert_int_equal(podsrc_http_save_cache(h), 0); /* nothing left to write */
        }
        assert_string_equal(podsrc_http_stats(h)->cache_error, "");
        j = cache_json();
        assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
        assert_string_equal(json_string_value(json_object_get(j, "url")), podsrc_http_stats(h)->url);
        assert_string_equal(json_string_value(json_object_get(j, "body")), one_yaml);
        assert_true(json_is_string(json_object_get(j, "etag")));
        assert_true(json_is_string(json_object_get(j, "lastModified")));
        assert_int_equal(strlen(json_string_value(json_object_get(j, "sha256"))), 64);
        json_decref(j);
        podsrc_http_free(h);

        /* the start after: the kept answer's pods, before any GET */
        h = make_cached("/list.yaml", NULL);
        assert_int_equal(podsrc_http_load_cache(h, &kept, &err), 1);
        st = podsrc_http_stats(h);
        assert_true(st->from_cache);
        assert_false(st->have_set);
        assert_int_equal(st->n_pods, 2);
        assert_int_equal(kept.n, 2);
        for (size_t i = 0; i < 2; i++) {
                assert_string_equal(kept.items[i].pod->name, set.items[i].pod->name);
                assert_string_equal(kept.items[i].pod->uid, set.items[i].pod->uid);
                assert_string_equal(kept.items[i].path, st->url);
        }
        podsrc_set_done(&set);
        podsrc_set_done(&kept);
        assert_int_equal(stat(cache, &st1), 0);
        assert_int_equal(fetch(h, &set, &err), 0);
        assert_int_equal(st->last_status, 304);
        assert_true(st->from_cache);
        assert_int_equal(stat(cache, &st2), 0);
        assert_true(st1.st_ino == st2.st_ino && st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec &&
                    st1.st_mtim.tv_sec == st2.st_mtim.tv_sec);
        podsrc_http_free(h);

        /* the ETag alone is sent from the cache (no Last-Modified kept) */
        j = cache_json();
        assert_int_equal(json_object_del(j, "lastModified"), 0);
        write_json(j);
        json_decref(j);
        h = make_cached("/list.yaml", NULL);
        assert_int_equal(podsrc_http_load_cache(h, &kept, &err), 1);
        podsrc_set_done(&kept);
        assert_int_equal(fetch(h, &set, &err), 0);
        assert_int_equal(podsrc_http_stats(h)->last_status, 304);
        podsrc_http_free(h);
}

/* the URL unreachable at the start: the kept pods are the set, each GET an
 * error that changes nothing; the server back with another list: a new set,
 * kept in its turn */
static void test_unreachable_then_changed(void **state) {
        char url[300], down[300];
        PodsrcHttp *h;
        PodsrcSet set = {};
        CubError err = {};
        json_t *j;
        int p = free_port();

        (void) state;
        fresh();
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/list.yaml", port);
        snprintf(down, sizeof(down), "http://127.0.0.1:%d/list.yaml", p);
        h = make_cached(NULL, url);
        assert_int_equal(fetch(h, &set, &err), 1);
        podsrc_set_done(&set);
        podsrc_http_free(h);
        /* the same answer, as the down URL's (a server that moved port) */
        j = cache_json();
        assert_int_equal(json_object_set_new(j, "url", json_string(down)), 0);
        write_json(j);
        json_decref(j);

        h = make_cached(NULL, down);
        assert_int_equal(podsrc_http_load_cache(h, &set, &err), 1);
        assert_true(has_pod(&set, "a-" NODE) && has_pod(&set, "b-" NODE));
        podsrc_set_done(&set);
        assert_true(fetch(h, &set, &err) < 0);
        assert_non_null(strstr(err.msg, down));
        assert_int_equal(set.n, 0);
        assert_true(podsrc_http_stats(h)->from_cache);
        assert_int_equal(podsrc_http_stats(h)->n_pods, 2);
        podsrc_http_free(h);

        /* back, with another list: the usual new set (a goes, c comes) */
        h = make_cached("/list.yaml", NULL);
        puts_("list.yaml", two_yaml);
        j = cache_json();
        assert_int_equal(json_object_set_new(j, "url", json_string(url)), 0);
        write_json(j);
        json_decref(j);
        assert_int_equal(podsrc_http_load_cache(h, &set, &err), 1);
        podsrc_set_done(&set);
        assert_int_equal(fetch(h, &set, &err), 1);
        assert_true(!has_pod(&set, "a-" NODE) && has_pod(&set, "b-" NODE) && has_pod(&set, "c-" NODE));
        assert_false(podsrc_http_stats(h)->from_cache);
        assert_true(podsrc_http_stats(h)->have_set);
        podsrc_set_done(&set);
        j = cache_json();
        assert_string_equal(json_string_value(json_object_get(j, "body")), two_yaml);
        json_decref(j);
        podsrc_http_free(h);
}

static void expect_bad(const char *what, int code) {
        PodsrcHttp *h = make_cached("/list.yaml", NULL);
        PodsrcSet set = {};
        CubError err = {};
        char want[400];

        assert_int_equal(podsrc_http_load_cache(h, &set, &err), code);
        snprintf(want, sizeof(want), "'%s': ", cache);
        if (strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, what))
                fail_msg("got '%s', want '%s...%s'", err.msg, want, what);
        assert_int_equal(set.n, 0);
        assert_false(podsrc_http_stats(h)->from_cache);
        /* nothing else changed: the GET is not conditional, and rewrites the file */
        assert_int_equal(fetch(h, &set, &err), 1);
        assert_int_equal(podsrc_http_stats(h)->last_status, 200);
        podsrc_set_done(&set);
        podsrc_http_free(h);
}

static void test_bad_files(void **state) {
        json_t *j, *good;
        char *text;

        (void) state;
        fresh();
        {
                /* no file: nothing kept, no error; the GET writes one */
                PodsrcHttp *h = make_cached("/list.yaml", NULL);
                PodsrcSet set = {};
                CubError err = {};

                assert_int_equal(podsrc_http_load_cache(h, &set, &err), 0);
                assert_string_equal(err.msg, "");
                assert_int_equal(fetch(h, &set, &err), 1);
                podsrc_set_done(&set);
                podsrc_http_free(h);
        }
        good = cache_json();

        write_text(cache, "{\"version\":1,\"url\":");
        expect_bad("line 1", -EBADMSG);
        write_text(cache, "");
        expect_bad("line 1", -EBADMSG);
        /* cut inside the body */
        text = json_dumps(good, JSON_COMPACT);
        assert_non_null(text);
        text[strlen(text) - 20] = '\0';
        write_text(cache, text);
        free(text);
        expect_bad("line 1", -EBADMSG);

        j = json_deep_copy(good);
        assert_int_equal(json_object_set_new(j, "version", json_integer(2)), 0);
        write_json(j);
        json_decref(j);
        expect_bad("version: expected 1", -EBADMSG);

        j = json_deep_copy(good);
        assert_int_equal(json_object_set_new(j, "body", json_string("apiVersion: v1\nkind: PodList\nitems: []\n")), 0);
        write_json(j);
        json_decref(j);
        expect_bad("sha256: the body does not match it", -EBADMSG);

        j = json_deep_copy(good);
        assert_int_equal(json_object_set_new(j, "url", json_string("http://elsewhere/x")), 0);
        write_json(j);
        json_decref(j);
        expect_bad("the answer of http://elsewhere/x, not of", -ESTALE);

        j = json_deep_copy(good);
        assert_int_equal(json_object_del(j, "sha256"), 0);
        write_json(j);
        json_decref(j);
        expect_bad("sha256: not a string", -EBADMSG);

        assert_int_equal(chmod(cache, 0), 0);
        if (geteuid() != 0)
                expect_bad("Permission denied", -EACCES);
        assert_int_equal(chmod(cache, 0600), 0);
        json_decref(good);
}

/* a body that decoded once but no longer does (a stricter build): an
 * error naming the file, and the GET goes on */
static void test_kept_body_no_longer_decodes(void **state) {
        PodsrcHttp *h;
        PodsrcSet set = {};
        CubError err = {};
        const char *body = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c}]}\n";
        unsigned char hash[32];
        char url[300];

        (void) state;
        fresh();
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/list.yaml", port);
        assert_int_equal(podsrc_http_body_hash(body, strlen(body), hash), 0);
        assert_int_equal(podsrc_http_cache_write(cache, url, "\"e\"", NULL, body, strlen(body), hash, &err), 0);
        h = make_cached("/list.yaml", NULL);
        assert_true(podsrc_http_load_cache(h, &set, &err) < 0);
        assert_non_null(strstr(err.msg, "the kept answer: "));
        assert_int_equal(strncmp(err.msg, "'", 1), 0);
        assert_int_equal(fetch(h, &set, &err), 1);
        podsrc_set_done(&set);
        podsrc_http_free(h);
}

/* a cache that cannot be written: the fetch is good, the stats say why */
static void test_write_fails(void **state) {
        PodsrcHttp *h;
        PodsrcSet set = {};
        CubError err = {};

        (void) state;
        fresh();
        snprintf(cache, sizeof(cache), "%s/no-such-dir/manifest_url_cache", dir);
        h = make_cached("/list.yaml", NULL);
        assert_int_equal(fetch(h, &set, &err), 1);
        podsrc_set_done(&set);
        assert_non_null(strstr(podsrc_http_stats(h)->cache_error, cache));
        /* a 304 cannot write it; the next 200 tries again */
        assert_int_equal(fetch(h, &set, &err), 0);
        assert_int_not_equal(podsrc_http_stats(h)->cache_error[0], '\0');
        podsrc_http_free(h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_write_load_304), cmocka_unit_test(test_unreachable_then_changed),
                cmocka_unit_test(test_bad_files),      cmocka_unit_test(test_kept_body_no_longer_decodes),
                cmocka_unit_test(test_write_fails),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
