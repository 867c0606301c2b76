/* SPDX-License-Identifier: Apache-2.0 */
/* ConfigMaps and Secrets in the pods of the API server: configMap and
 * secret volumes, projected secret sources, env from both (envFrom with a
 * prefix, configMapKeyRef, secretKeyRef, optional ones) and image pull
 * secrets decoded, each still refused in a static pod with its path; a
 * container's env as kubelet's
 * makeEnvironmentVariables builds it from what the loop resolved; the
 * volumes' files written (a Secret's bytes as they are, on tmpfs when the
 * test may mount), a key removed from a ConfigMap removed from the volume. */
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

#include "agent/pod/pod.h"
#include "agent/util/fileio.h"
#include "agent/volumes/volumes.h"

#define POD(containers, volumes)                                                                         \
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\"," \
        "\"uid\":\"u-2\"},\"spec\":{\"imagePullSecrets\":[{\"name\":\"regcred\"},{\"name\":\"\"}],"      \
        "\"containers\":[" containers "],\"volumes\":[" volumes "]}}"
#define APP                                                                                                   \
        "{\"name\":\"app\",\"image\":\"busybox\",\"envFrom\":[{\"prefix\":\"CFG_\",\"configMapRef\":"         \
        "{\"name\":\"web-config\"}},{\"secretRef\":{\"name\":\"extra\",\"optional\":true}}],\"env\":["        \
        "{\"name\":\"MODE\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"web-config\",\"key\":\"mode\"}}}," \
        "{\"name\":\"PASSWORD\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"creds\",\"key\":\"password\"}}}," \
        "{\"name\":\"MAYBE\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"creds\",\"key\":\"no\","             \
        "\"optional\":true}}},{\"name\":\"URL\",\"value\":\"http://$(CFG_host):$(MODE)\"}],"                  \
        "\"volumeMounts\":[{\"name\":\"config\",\"mountPath\":\"/etc/web\"},{\"name\":\"creds\","             \
        "\"mountPath\":\"/etc/creds\"}]}"
#define VOLUMES                                                                                                     \
        "{\"name\":\"config\",\"configMap\":{\"name\":\"web-config\"}},"                                            \
        "{\"name\":\"creds\",\"secret\":{\"secretName\":\"creds\",\"defaultMode\":256,\"items\":"                   \
        "[{\"key\":\"password\",\"path\":\"pw\"},{\"key\":\"blob\",\"path\":\"sub/blob\",\"mode\":292}]}},"         \
        "{\"name\":\"both\",\"projected\":{\"sources\":[{\"secret\":{\"name\":\"creds\",\"items\":"                 \
        "[{\"key\":\"password\",\"path\":\"p\"}]}},{\"configMap\":{\"name\":\"web-config\",\"optional\":true}}]}}," \
        "{\"name\":\"all\",\"secret\":{\"secretName\":\"creds\"}}"

static Pod *decode_api(const char *text, CubError *err) {
        Pod *pod = NULL;

        if (pod_decode_api(text, strlen(text), "pod shop/web", &pod, err) < 0)
                return NULL;
        return pod;
}

static void test_decode(void **state) {
        static const char text[] = POD(APP, VOLUMES);
        CubError err = {};
        Pod *pod = decode_api(text, &err);
        const PodContainer *c;
        const PodVolume *v;

        (void) state;
        if (!pod)
                fail_msg("%s", err.msg);
        assert_int_equal(pod->refused.n, 0);
        assert_true(pod_has_api_projection(pod));
        assert_true(pod_has_api_data(pod));
        assert_int_equal(pod->image_pull_secrets.n, 1); /* an empty name skipped, as kubelet */
        assert_string_equal(pod->image_pull_secrets.items[0], "regcred");
        c = &pod->containers[0];
        assert_true(pod_container_has_api_env(c));
        assert_int_equal(c->n_env_from, 2);
        assert_string_equal(c->env_from[0].prefix, "CFG_");
        assert_false(c->env_from[0].secret);
        assert_string_equal(c->env_from[0].name, "web-config");
        assert_false(c->env_from[0].optional);
        assert_string_equal(c->env_from[1].prefix, "");
        assert_true(c->env_from[1].secret);
        assert_true(c->env_from[1].optional);
        assert_int_equal(c->env[0].kind, POD_ENV_CONFIG_MAP_KEY);
        assert_string_equal(c->env[0].ref_name, "web-config");
        assert_string_equal(c->env[0].ref_key, "mode");
        assert_int_equal(c->env[1].kind, POD_ENV_SECRET_KEY);
        assert_false(c->env[1].ref_optional);
        assert_true(c->env[2].ref_optional);
        assert_int_equal(c->env[3].kind, POD_ENV_VALUE);
        v = &pod->volumes[0];
        assert_int_equal(v->kind, POD_VOLUME_CONFIG_MAP);
        assert_int_equal(v->n_items, 1);
        assert_int_equal(v->items[0].source, POD_PROJECTION_CONFIG_MAP);
        assert_null(v->items[0].key);
        assert_string_equal(v->items[0].path, "");
        v = &pod->volumes[1];
        assert_int_equal(v->kind, POD_VOLUME_SECRET);
        assert_int_equal(v->default_mode, 0400);
        assert_int_equal(v->n_items, 2);
        assert_int_equal(v->items[1].source, POD_PROJECTION_SECRET);
        assert_string_equal(v->items[1].ref_name, "creds");
        assert_string_equal(v->items[1].key, "blob");
        assert_string_equal(v->items[1].path, "sub/blob");
        assert_int_equal(v->items[1].mode, 0444);
        v = &pod->volumes[2];
        assert_int_equal(v->kind, POD_VOLUME_PROJECTED);
        assert_int_equal(v->items[0].source, POD_PROJECTION_SECRET);
        assert_int_equal(v->items[1].source, POD_PROJECTION_CONFIG_MAP);
        assert_true(v->items[1].optional);
        pod_free(pod);

        /* a static pod: each refused with its path (kubelet refuses them too) */
        assert_int_equal(pod_decode(text, strlen(text), "web.json", POD_FORMAT_JSON, &pod, &err), 0);
        {
                static const char *const paths[] = {
                        "spec.containers[0].env[0].valueFrom.configMapKeyRef",
                        "spec.containers[0].env[1].valueFrom.secretKeyRef",
                        "spec.containers[0].envFrom[0].configMapRef",
                        "spec.containers[0].envFrom[1].secretRef",
                        "spec.volumes[0].configMap",
                        "spec.volumes[1].secret",
                        "spec.volumes[2].projected.sources[0].secret",
                        "spec.imagePullSecrets",
                };

                for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
                        bool found = false;

                        for (size_t k = 0; k < pod->refused.n; k++)
                                found |= strcmp(pod->refused.items[k].path, paths[i]) == 0;
                        if (!found)
                                fail_msg("%s is not refused", paths[i]);
                }
        }
        pod_free(pod);
}

static void test_decode_checks(void **state) {
        static const struct {
                const char *container, *volumes, *error;
        } bad[] = {
                { "{\"name\":\"a\",\"image\":\"b\",\"env\":[{\"name\":\"X\",\"valueFrom\":{\"secretKeyRef\":"
                  "{\"key\":\"k\"}}}]}",
                  "", "spec.containers[0].env[0].valueFrom.secretKeyRef.name: Required value" },
                { "{\"name\":\"a\",\"image\":\"b\",\"env\":[{\"name\":\"X\",\"valueFrom\":{\"configMapKeyRef\":"
                  "{\"name\":\"n\",\"key\":\"a/b\"}}}]}",
                  "", "spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Invalid value: \"a/b\"" },
                { "{\"name\":\"a\",\"image\":\"b\",\"env\":[{\"name\":\"X\",\"valueFrom\":{\"configMapKeyRef\":"
                  "{\"name\":\"n\",\"key\":\"k\"},\"secretKeyRef\":{\"name\":\"n\",\"key\":\"k\"}}}]}",
                  "", "may not have more than one field specified at a time" },
                { "{\"name\":\"a\",\"image\":\"b\",\"envFrom\":[{\"prefix\":\"P\"}]}", "",
                  "must specify one of: `configMapRef` or `secretRef`" },
                { "{\"name\":\"a\",\"image\":\"b\",\"envFrom\":[{\"prefix\":\"P=\",\"configMapRef\":{\"name\":"
                  "\"n\"}}]}",
                  "", "spec.containers[0].envFrom[0].prefix: Invalid value: \"P=\"" },
                { "{\"name\":\"a\",\"image\":\"b\"}", "{\"name\":\"s\",\"secret\":{}}",
                  "spec.volumes[0].secret.secretName: Required value" },
                { "{\"name\":\"a\",\"image\":\"b\"}",
                  "{\"name\":\"s\",\"configMap\":{\"name\":\"c\",\"items\":[{\"key\":\"k\",\"path\":\"../x\"}]}}",
                  "spec.volumes[0].configMap.items[0].path" },
        };

        (void) state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                char text[4096];
                CubError err = {};
                Pod *pod;

                (void) snprintf(text, sizeof(text), POD("%s", "%s"), bad[i].container, bad[i].volumes);
                pod = decode_api(text, &err);
                if (pod)
                        fail_msg("%zu: decoded", i);
                if (!strstr(err.msg, bad[i].error))
                        fail_msg("%zu:\n got %s\n want %s", i, err.msg, bad[i].error);
        }
}

static const char *get(char **env, const char *k) {
        const char *v = NULL;

        for (size_t i = 0; env[i] && env[i + 1]; i += 2)
                if (strcmp(env[i], k) == 0)
                        v = env[i + 1]; /* the last pair wins, as in the runtime */
        return v;
}

static void test_env(void **state) {
        static const char text[] = POD(APP, VOLUMES);
        const char *from[] = { "CFG_host", "db", "CFG_mode", "fast", "MODE", "overridden", NULL };
        const char *refs[] = { "slow", "s3cr3t", NULL, NULL };
        PodEnvContext ctx = { .node_name = "n1", .env_from = from, .ref_values = refs, .n_ref_values = 4 };
        CubError err = {};
        Pod *pod = decode_api(text, &err);
        char **env = NULL;
        size_t n = 0;

        (void) state;
        if (!pod)
                fail_msg("%s", err.msg);
        if (pod_env_resolve(pod, &pod->containers[0], &ctx, &env, &err) < 0)
                fail_msg("%s", err.msg);
        while (env[n])
                n++;
        /* envFrom's three, then MODE, PASSWORD, URL; MAYBE (optional, missing) left out */
        assert_int_equal(n, 2 * 6);
        assert_string_equal(env[0], "CFG_host");
        assert_string_equal(get(env, "CFG_mode"), "fast");
        assert_string_equal(get(env, "MODE"), "slow"); /* env wins over envFrom */
        assert_string_equal(get(env, "PASSWORD"), "s3cr3t");
        assert_null(get(env, "MAYBE"));
        /* $(VAR) sees envFrom's keys and the earlier env */
        assert_string_equal(get(env, "URL"), "http://db:slow");
        pod_env_strv_free(env);
        env = NULL;

        /* a key the Secret does not have: kubelet's words, no variable's name */
        refs[1] = NULL;
        assert_int_equal(pod_env_resolve(pod, &pod->containers[0], &ctx, &env, &err), -ENOENT);
        assert_null(env);
        assert_string_equal(err.msg, "couldn't find key password in Secret shop/creds");
        pod_free(pod);
}

/* the API server's data, faked: web-config {host, mode}, creds {password, blob with a NUL} */
static int cm_host = 1;
static int fake_files(void *userdata, const Pod *pod, const PodDownwardFile *f, VolApiFile **ret, size_t *ret_n,
                      CubError *err) {
        VolApiFile *files = calloc(2, sizeof(*files));
        size_t n = 0;

        (void) userdata;
        (void) pod;
        (void) err;
        if (f->source == POD_PROJECTION_SECRET && !f->key) {
                files[n++] = (VolApiFile){ strdup("password"), strdup("s3cr3t"), 6 };
                files[n++] = (VolApiFile){ strdup("token"), strdup("t"), 1 };
        } else if (f->source == POD_PROJECTION_CONFIG_MAP) {
                if (cm_host)
                        files[n++] = (VolApiFile){ strdup("host"), strdup("db"), 2 };
                files[n++] = (VolApiFile){ strdup("mode"), strdup("fast"), 4 };
        } else if (strcmp(f->key, "password") == 0)
                files[n++] = (VolApiFile){ strdup(f->path), strdup("s3cr3t"), 6 };
        else {
                files[n] = (VolApiFile){ strdup(f->path), malloc(4), 3 };
                memcpy(files[n++].data, "a\0b", 4);
        }
        *ret = files;
        *ret_n = n;
        return 0;
}

static void test_write(void **state) {
        static const char text[] = POD(APP, VOLUMES);
        char dir[] = "/tmp/cubelet-config-data-XXXXXX", path[600];
        VolRoots roots = { .pods_dir = dir, .mount_tmpfs = getuid() == 0 };
        VolNode node = { .api_files = fake_files, .memory = 64 << 20 };
        CubError err = {};
        Pod *pod = decode_api(text, &err);
        struct stat st;
        char *data = NULL;
        size_t len;

        (void) state;
        if (!pod)
                fail_msg("%s", err.msg);
        assert_non_null(mkdtemp(dir));
        if (vol_pod_setup(&roots, pod, 0, &node, &err) < 0)
                fail_msg("%s", err.msg);
        (void) snprintf(path, sizeof(path), "%s/u-2/volumes/kubernetes.io~configmap/config/host", dir);
        assert_int_equal(cub_read_file(path, 64, &data, &len, &err), 0);
        assert_string_equal(data, "db"), free(data);
        (void) snprintf(path, sizeof(path), "%s/u-2/volumes/kubernetes.io~secret/creds/..data/pw", dir);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0400); /* defaultMode */
        (void) snprintf(path, sizeof(path), "%s/u-2/volumes/kubernetes.io~secret/creds/sub/blob", dir);
        assert_int_equal(cub_read_file(path, 64, &data, &len, &err), 0);
        assert_int_equal(len, 3);
        assert_memory_equal(data, "a\0b", 3);
        free(data);
        (void) snprintf(path, sizeof(path), "%s/u-2/volumes/kubernetes.io~projected/both/p", dir);
        assert_int_equal(cub_read_file(path, 64, &data, &len, &err), 0);
        assert_string_equal(data, "s3cr3t"), free(data);
        (void) snprintf(path, sizeof(path), "%s/u-2/volumes/kubernetes.io~secret/all/token", dir);
        assert_int_equal(cub_read_file(path, 64, &data, &len, &err), 0);
        assert_string_equal(data, "t"), free(data);
        (void) snprintf(path, sizeof(path), "%s/u-2/volumes/kubernetes.io~secret/all/..data/password", dir);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0644);
        /* the key "host" removed from the ConfigMap: its file goes */
        cm_host = 0;
        if (vol_pod_refresh_api(&roots, pod, &node, &err) < 0)
                fail_msg("%s", err.msg);
        (void) snprintf(path, sizeof(path), "%s/u-2/volumes/kubernetes.io~configmap/config/host", dir);
        assert_int_equal(lstat(path, &st), -1);
        (void) snprintf(path, sizeof(path), "%s/u-2/volumes/kubernetes.io~configmap/config/mode", dir);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(vol_pod_teardown(&roots, "u-2", &err), 0);
        (void) rmdir(dir);
        pod_free(pod);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode),
                cmocka_unit_test(test_decode_checks),
                cmocka_unit_test(test_env),
                cmocka_unit_test(test_write),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
