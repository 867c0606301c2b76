/* SPDX-License-Identifier: Apache-2.0 */
/* The service account token volume as kubelet has it: the API server's
 * kube-api-access-* volume decoded for a pod of the API server (and still
 * refused in a static pod), the API server's checks of its sources, the
 * token manager's renewal time, and the volume's files written from the
 * API server's data (a fake of it: the function VolNode.api_files). */
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

#include "agent/cluster/projected.h"
#include "agent/pod/pod.h"
#include "agent/util/fileio.h"
#include "agent/volumes/volumes.h"

/* what the ServiceAccount admission plugin of 1.34 adds to a pod */
#define API_POD(sources)                                                                                      \
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns1\","           \
        "\"uid\":\"u-1\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"volumeMounts\":" \
        "[{\"name\":\"kube-api-access-x\",\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\","   \
        "\"readOnly\":true}]}],\"volumes\":[{\"name\":\"kube-api-access-x\",\"projected\":{\"defaultMode\":"  \
        "420,\"sources\":" sources "}}]}}"
#define KUBE_API_ACCESS                                                                                    \
        "[{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},"                         \
        "{\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}}," \
        "{\"downwardAPI\":{\"items\":[{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":"                     \
        "\"metadata.namespace\"},\"path\":\"namespace\"}]}}]"

static Pod *decode_api(const char *text, CubError *err) {
        Pod *pod = NULL;

        if (pod_decode_api(text, strlen(text), "pod ns1/p", &pod, err) < 0)
                return NULL;
        return pod;
}

static void test_decode_api(void **state) {
        static const char text[] = API_POD(KUBE_API_ACCESS);
        CubError err = {};
        Pod *pod = decode_api(text, &err);
        const PodVolume *v;

        (void) state;
        if (!pod)
                fail_msg("%s", err.msg);
        assert_int_equal(pod->refused.n, 0);
        assert_true(pod_has_api_projection(pod));
        v = &pod->volumes[0];
        assert_int_equal(v->kind, POD_VOLUME_PROJECTED);
        assert_int_equal(v->default_mode, 0644);
        assert_int_equal(v->n_items, 3);
        assert_int_equal(v->items[0].source, POD_PROJECTION_SERVICE_ACCOUNT);
        assert_string_equal(v->items[0].path, "token");
        assert_int_equal(v->items[0].expiration_seconds, 3607);
        assert_null(v->items[0].audience);
        assert_int_equal(v->items[1].source, POD_PROJECTION_CONFIG_MAP);
        assert_string_equal(v->items[1].ref_name, "kube-root-ca.crt");
        assert_string_equal(v->items[1].key, "ca.crt");
        assert_string_equal(v->items[1].path, "ca.crt");
        assert_false(v->items[1].optional);
        assert_int_equal(v->items[2].source, POD_PROJECTION_DOWNWARD_API);
        assert_string_equal(v->items[2].field_path, "metadata.namespace");
        pod_free(pod);

        /* the same manifest as a static pod: refused, with the field's path */
        assert_int_equal(pod_decode(text, strlen(text), "p.json", POD_FORMAT_JSON, &pod, &err), 0);
        assert_true(pod->refused.n >= 2);
        assert_string_equal(pod->refused.items[0].path, "spec.volumes[0].projected.sources[0].serviceAccountToken");
        assert_false(pod_has_api_projection(pod));
        pod_free(pod);
}

static void test_decode_api_checks(void **state) {
        static const struct {
                const char *sources, *error;
        } bad[] = {
                { "[{\"serviceAccountToken\":{\"expirationSeconds\":599,\"path\":\"token\"}}]",
                  "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 599: "
                  "may not specify a duration less than 10 minutes" },
                { "[{\"serviceAccountToken\":{\"expirationSeconds\":4294967297,\"path\":\"token\"}}]",
                  "may not specify a duration larger than 2^32 seconds" },
                { "[{\"serviceAccountToken\":{}}]",
                  "spec.volumes[0].projected.sources[0].serviceAccountToken.path: Required value" },
                { "[{\"serviceAccountToken\":{\"path\":\"../t\"}}]", "must not contain '..'" },
                { "[{\"configMap\":{\"items\":[]}}]", "spec.volumes[0].projected.sources[0].configMap.name: Required value" },
                { "[{\"configMap\":{\"name\":\"a\",\"items\":[{\"key\":\"k\",\"path\":\"p\",\"mode\":512}]}}]",
                  "configMap.items[0].mode: Invalid value: 512" },
                { "[{\"serviceAccountToken\":{\"path\":\"t\"}},{\"configMap\":{\"name\":\"a\",\"items\":"
                  "[{\"key\":\"k\",\"path\":\"t\"}]}}]",
                  "Invalid value: \"t\": conflicting duplicate paths" },
        };

        (void) state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                char text[2048];
                CubError err = {};
                Pod *pod;

                (void) snprintf(text, sizeof(text), API_POD("%s"), bad[i].sources);
                pod = decode_api(text, &err);
                if (pod)
                        fail_msg("%s: decoded", bad[i].sources);
                if (!strstr(err.msg, bad[i].error))
                        fail_msg("%s:\n got %s\n want %s", bad[i].sources, err.msg, bad[i].error);
        }
}

static void test_renew(void **state) {
        (void) state;
        /* 3607 s, issued now: renewed after 80 % of it (2886 s), less the jitter */
        assert_int_equal(kube_token_renew_in(1000 + 3607, 3607, 1000, 0), 3607 - 721);
        assert_int_equal(kube_token_renew_in(1000 + 3607, 3607, 1000, 7), 3607 - 721 - 7);
        /* a token the API server extended to a year: after 24 h */
        assert_int_equal(kube_token_renew_in(1000 + 31536000, 31536000, 1000, 0), 24 * 3600);
        /* past due: now */
        assert_int_equal(kube_token_renew_in(1000 + 3600, 3600, 1000 + 3000, 0), 0);
        assert_int_equal(kube_parse_time("2026-11-27T00:00:00Z"), 1795737600);
        assert_int_equal(kube_parse_time("2026-11-27T00:00:00.5Z"), 1795737600);
        assert_int_equal(kube_parse_time("yesterday"), -1);
        assert_int_equal(kube_parse_time(NULL), -1);
}

/* the API server's data, faked: a token, a ConfigMap with two keys */
static int fake_files(void *userdata, const Pod *pod, const PodDownwardFile *f, VolApiFile **ret, size_t *ret_n,
                      CubError *err) {
        const char *token = userdata;
        VolApiFile *files = calloc(2, sizeof(*files));

        (void) pod;
        (void) err;
        if (f->source == POD_PROJECTION_SERVICE_ACCOUNT) {
                files[0] = (VolApiFile){ strdup(f->path), strdup(token), strlen(token) };
                *ret_n = 1;
        } else if (!f->key) {
                files[0] = (VolApiFile){ strdup("a"), strdup("1"), 1 };
                files[1] = (VolApiFile){ strdup("b"), strdup("2"), 1 };
                *ret_n = 2;
        } else {
                files[0] = (VolApiFile){ strdup(f->path), strdup("CA"), 2 };
                *ret_n = 1;
        }
        *ret = files;
        return 0;
}

static char *read_text(const char *dir, const char *name) {
        char path[512];
        char *data = NULL;
        size_t len;
        CubError err = {};

        (void) snprintf(path, sizeof(path), "%s/%s", dir, name);
        if (cub_read_file(path, 4096, &data, &len, &err) < 0)
                return NULL;
        return data;
}

static void test_write(void **state) {
        static const char text[] =
                API_POD("[{\"serviceAccountToken\":{\"path\":\"token\"}},{\"configMap\":{\"name\":\"all\"}},"
                        "{\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":"
                        "\"ca.crt\",\"mode\":384}]}},{\"downwardAPI\":{\"items\":[{\"fieldRef\":{\"fieldPath\":"
                        "\"metadata.namespace\"},\"path\":\"namespace\"}]}}]");
        char dir[] = "/tmp/cubelet-projected-XXXXXX", path[600];
        VolRoots roots = { .pods_dir = dir };
        VolNode node = { .api_files = fake_files, .api_userdata = (void *) "T1" };
        CubError err = {};
        Pod *pod = decode_api(text, &err);
        struct stat st;
        char *s;

        (void) state;
        if (!pod)
                fail_msg("%s", err.msg);
        assert_non_null(mkdtemp(dir));
        if (vol_pod_setup(&roots, pod, 0, &node, &err) < 0)
                fail_msg("%s", err.msg);
        (void) snprintf(path, sizeof(path), "%s/u-1/volumes/kubernetes.io~projected/kube-api-access-x", dir);
        assert_string_equal((s = read_text(path, "token")), "T1"), free(s);
        assert_string_equal((s = read_text(path, "a")), "1"), free(s);
        assert_string_equal((s = read_text(path, "b")), "2"), free(s);
        assert_string_equal((s = read_text(path, "ca.crt")), "CA"), free(s);
        assert_string_equal((s = read_text(path, "namespace")), "ns1"), free(s);
        (void) snprintf(path + strlen(path), sizeof(path) - strlen(path), "/..data/ca.crt");
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        /* the token renewed: written again */
        node.api_userdata = (void *) "T2";
        if (vol_pod_refresh_api(&roots, pod, &node, &err) < 0)
                fail_msg("%s", err.msg);
        (void) snprintf(path, sizeof(path), "%s/u-1/volumes/kubernetes.io~projected/kube-api-access-x", dir);
        assert_string_equal((s = read_text(path, "token")), "T2"), free(s);
        /* no API server: the item fails, named */
        node.api_files = NULL;
        assert_int_equal(vol_pod_refresh_api(&roots, pod, &node, &err), -ENOTSUP);
        assert_string_equal(err.msg, "MountVolume.SetUp failed for volume \"kube-api-access-x\" : "
                                     "serviceAccountToken: no API server to provide it (--kubeconfig)");
        assert_int_equal(vol_pod_teardown(&roots, "u-1", &err), 0);
        (void) rmdir(dir);
        pod_free(pod);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode_api),
                cmocka_unit_test(test_decode_api_checks),
                cmocka_unit_test(test_renew),
                cmocka_unit_test(test_write),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
