/* SPDX-License-Identifier: Apache-2.0 */
/* agent/volumes: hostPath type checks on a fake tree, downward API values
 * and kubelet's formatting (divisor vectors), the tmpfs size rule, $(VAR)
 * expansion, subPath checks, emptyDir paths, AtomicWriter, fsGroup, the
 * pod's setup, mounts and teardown. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/volumes/volumes.h"

static char tmp[PATH_MAX];

static int setup(void **state) {
        (void) state;
        (void) snprintf(tmp, sizeof(tmp), "/tmp/cubelet-vol-XXXXXX");
        if (!mkdtemp(tmp))
                return -1;
        return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) ftw;
        if (flag == FTW_DP)
                (void) rmdir(path);
        else
                (void) unlink(path);
        return 0;
}

static int teardown(void **state) {
        (void) state;
        (void) nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

static void at(char *buf, size_t size, const char *rel) {
        (void) snprintf(buf, size, "%s/%s", tmp, rel);
}

static Pod *decode(const char *text) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(text, strlen(text), "v.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decoding failed: %s", err.msg);
        if (pod->refused.n > 0)
                fail_msg("refused: %s", pod->refused.items[0].path);
        return pod;
}

#define CHECK_ERR(path, type, want)                                        \
        do {                                                               \
                CubError e_ = {};                                          \
                assert_true(vol_host_path_check((path), (type), &e_) < 0); \
                assert_string_equal(e_.msg, (want));                       \
        } while (0)

#define CHECK_OK(path, type)                                           \
        do {                                                           \
                CubError e_ = {};                                      \
                if (vol_host_path_check((path), (type), &e_) < 0)      \
                        fail_msg("%s %s: %s", (path), (type), e_.msg); \
        } while (0)

static void test_host_path_types(void **state) {
        char dir[PATH_MAX], file[PATH_MAX], sock[100], want[PATH_MAX * 2], made[PATH_MAX];
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;
        mode_t old;
        int fd;

        (void) state;
        at(dir, sizeof(dir), "d");
        at(file, sizeof(file), "f");
        at(sock, sizeof(sock), "s");
        assert_int_equal(mkdir(dir, 0700), 0);
        fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        memcpy(sa.sun_path, sock, sizeof(sock));
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);

        /* "": no check at all, even for a path that does not exist */
        CHECK_OK("/nonexistent/x", "");
        CHECK_OK(dir, "Directory");
        CHECK_OK(dir, "DirectoryOrCreate");
        CHECK_OK(file, "File");
        CHECK_OK(file, "FileOrCreate");
        CHECK_OK(sock, "Socket");
        CHECK_OK("/dev/null", "CharDevice");

        (void) snprintf(want, sizeof(want), "hostPath type check failed: %s is not a directory", file);
        CHECK_ERR(file, "Directory", want);
        CHECK_ERR(file, "DirectoryOrCreate", want);
        (void) snprintf(want, sizeof(want), "hostPath type check failed: %s is not a file", dir);
        CHECK_ERR(dir, "File", want);
        CHECK_ERR(dir, "FileOrCreate", want);
        (void) snprintf(want, sizeof(want), "hostPath type check failed: %s is not a socket file", file);
        CHECK_ERR(file, "Socket", want);
        (void) snprintf(want, sizeof(want), "hostPath type check failed: %s is not a character device", file);
        CHECK_ERR(file, "CharDevice", want);
        CHECK_ERR("/dev/null", "BlockDevice", "hostPath type check failed: /dev/null is not a block device");
        CHECK_ERR("/nonexistent/x", "Directory", "hostPath type check failed: /nonexistent/x is not a directory");
        CHECK_ERR("/nonexistent/x", "File", "hostPath type check failed: /nonexistent/x is not a file");
        CHECK_ERR(dir, "Bogus", "Bogus is an invalid volume type");

        /* DirectoryOrCreate: MkdirAll 0755 (parents too) */
        old = umask(022);
        at(made, sizeof(made), "new/a/b");
        CHECK_OK(made, "DirectoryOrCreate");
        assert_int_equal(stat(made, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0755);
        /* FileOrCreate: an empty 0644 file; the parent must exist */
        at(made, sizeof(made), "new/file");
        CHECK_OK(made, "FileOrCreate");
        assert_int_equal(stat(made, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0644);
        assert_int_equal(st.st_size, 0);
        at(made, sizeof(made), "missing/file");
        {
                CubError e = {};

                assert_int_equal(vol_host_path_check(made, "FileOrCreate", &e), -ENOENT);
        }
        umask(old);
        close(fd);
}

static void test_format_map(void **state) {
        char k0[] = "tier", k1[] = "app", k2[] = "q", v0[] = "a\"b", v1[] = "web", v2[] = "l1\nl2\t\\";
        char *keys[] = { k0, k1, k2 };
        char *values[] = { v0, v1, v2 };
        PodStringMap m = { .keys = keys, .values = values, .n = 3 };
        PodStringMap empty = {};
        char *s;

        (void) state;
        s = vol_format_map(&m);
        assert_string_equal(s, "app=\"web\"\nq=\"l1\\nl2\\t\\\\\"\ntier=\"a\\\"b\"");
        free(s);
        s = vol_format_map(&empty);
        assert_string_equal(s, "");
        free(s);
}

#define POD_HDR "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns\n  uid: u-1\n"

/* kubelet's fieldpath / resource tests: ceil(value / divisor) */
static void test_resource_vectors(void **state) {
        static const struct {
                const char *resource, *divisor, *want;
        } v[] = {
                { "limits.cpu", NULL, "1" },   /* 250m / 1 → 1 */
                { "limits.cpu", "1m", "250" }, /* 250m / 1m */
                { "limits.cpu", "100m", "3" }, /* ceil(2.5) */
                { "limits.memory", NULL, "67108864" },
                { "limits.memory", "1Mi", "64" },
                { "limits.memory", "1k", "67109" }, /* ceil(67108.864) */
                { "limits.memory", "1Gi", "1" },
                { "requests.cpu", "1m", "100" },
                { "requests.memory", "1Mi", "64" }, /* no request: the limit (API defaulting) */
                { "limits.ephemeral-storage", "1Gi", "10" },
                { "requests.ephemeral-storage", NULL, "0" },
        };
        Pod *pod = decode(POD_HDR "spec:\n  containers:\n  - name: a\n    image: x\n    resources:\n"
                                  "      limits: {cpu: 250m, memory: 64Mi}\n      requests: {cpu: 100m}\n");
        VolNode node = { .cpu_milli = 2000, .memory = 1 << 30, .ephemeral_storage = 10LL << 30 };

        (void) state;
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
                CubQuantity d = {};
                CubError err = {};
                char buf[64];

                if (v[i].divisor)
                        assert_int_equal(cub_quantity_parse(v[i].divisor, &d, &err), 0);
                assert_int_equal(
                        vol_resource_value(&pod->containers[0], v[i].resource, d, &node, buf, sizeof(buf), &err), 0);
                if (strcmp(buf, v[i].want) != 0)
                        fail_msg("%s / %s: %s, want %s", v[i].resource, v[i].divisor ? v[i].divisor : "1", buf,
                                 v[i].want);
        }
        pod_free(pod);
        /* a container without limits: node allocatable */
        pod = decode(POD_HDR "spec:\n  containers:\n  - name: a\n    image: x\n");
        {
                CubError err = {};
                char buf[64];

                assert_int_equal(vol_resource_value(&pod->containers[0], "limits.cpu", (CubQuantity){}, &node, buf,
                                                    sizeof(buf), &err),
                                 0);
                assert_string_equal(buf, "2");
                assert_int_equal(vol_resource_value(&pod->containers[0], "limits.memory",
                                                    (CubQuantity){ .units = 1 << 20 }, &node, buf, sizeof(buf), &err),
                                 0);
                assert_string_equal(buf, "1024");
                assert_int_equal(vol_resource_value(&pod->containers[0], "limits.gpu", (CubQuantity){}, &node, buf,
                                                    sizeof(buf), &err),
                                 -EINVAL);
        }
        pod_free(pod);
}

static void test_downward_values(void **state) {
        Pod *pod = decode(POD_HDR "  labels: {app: web, tier: b}\n  annotations: {note: \"x y\"}\n"
                                  "spec:\n  containers:\n  - name: a\n    image: x\n"
                                  "    resources: {limits: {memory: 64Mi}}\n"
                                  "  volumes:\n  - name: info\n    downwardAPI:\n      items:\n"
                                  "      - {path: labels, fieldRef: {fieldPath: metadata.labels}}\n"
                                  "      - {path: ann, fieldRef: {fieldPath: metadata.annotations}}\n"
                                  "      - {path: app, fieldRef: {fieldPath: \"metadata.labels['app']\"}}\n"
                                  "      - {path: none, fieldRef: {fieldPath: \"metadata.labels['none']\"}}\n"
                                  "      - {path: name, fieldRef: {fieldPath: metadata.name}}\n"
                                  "      - {path: ns, fieldRef: {fieldPath: metadata.namespace}}\n"
                                  "      - {path: uid, fieldRef: {fieldPath: metadata.uid}}\n"
                                  "      - {path: mem, resourceFieldRef: {containerName: a, resource: limits.memory, "
                                  "divisor: 1Mi}}\n");
        static const char *const want[] = {
                "app=\"web\"\ntier=\"b\"", "note=\"x y\"", "web", "", "p", "ns", "u-1", "64"
        };
        VolNode node = { .cpu_milli = 1000, .memory = 1 << 30 };

        (void) state;
        assert_int_equal(pod->n_volumes, 1);
        assert_int_equal(pod->volumes[0].n_items, 8);
        assert_int_equal(pod->volumes[0].default_mode, 0644);
        for (size_t i = 0; i < 8; i++) {
                char *s = NULL;
                CubError err = {};

                assert_int_equal(vol_downward_value(pod, &pod->volumes[0].items[i], &node, &s, &err), 0);
                assert_string_equal(s, want[i]);
                free(s);
        }
        pod_free(pod);
}

/* kubelet_resources.go defaultPodLimitsForDownwardAPI (1.34): the pod-level
 * limit before node allocatable */
static void test_downward_pod_level_limits(void **state) {
        Pod *pod = decode(POD_HDR "spec:\n  resources: {limits: {memory: 256Mi}}\n"
                                  "  containers:\n  - name: a\n    image: x\n"
                                  "  volumes:\n  - name: info\n    downwardAPI:\n      items:\n"
                                  "      - {path: mem, resourceFieldRef: {containerName: a, resource: limits.memory, "
                                  "divisor: 1Mi}}\n"
                                  "      - {path: cpu, resourceFieldRef: {containerName: a, resource: limits.cpu, "
                                  "divisor: 1m}}\n");
        static const char *const want[] = { "256", "1000" };
        VolNode node = { .cpu_milli = 1000, .memory = 1 << 30 };

        (void) state;
        for (size_t i = 0; i < 2; i++) {
                char *s = NULL;
                CubError err = {};

                assert_int_equal(vol_downward_value(pod, &pod->volumes[0].items[i], &node, &s, &err), 0);
                assert_string_equal(s, want[i]);
                free(s);
        }
        assert_int_equal(node.memory, 1 << 30); /* the caller's node is left alone */
        pod_free(pod);
}

static void test_tmpfs_size(void **state) {
        PodVolume v = { .kind = POD_VOLUME_EMPTY_DIR };
        const int64_t mi = 1 << 20;

        (void) state;
        /* nothing: node allocatable */
        assert_int_equal(vol_tmpfs_size(&v, 0, 1024 * mi), 1024 * mi);
        /* the pod's memory limit when not larger */
        assert_int_equal(vol_tmpfs_size(&v, 64 * mi, 1024 * mi), 64 * mi);
        assert_int_equal(vol_tmpfs_size(&v, 2048 * mi, 1024 * mi), 1024 * mi);
        /* sizeLimit when not larger than what the pod could use */
        v.size_limit_set = true;
        v.size_limit = (CubQuantity){ .units = 16 * mi };
        assert_int_equal(vol_tmpfs_size(&v, 64 * mi, 1024 * mi), 16 * mi);
        assert_int_equal(vol_tmpfs_size(&v, 0, 1024 * mi), 16 * mi);
        v.size_limit = (CubQuantity){ .units = 128 * mi };
        assert_int_equal(vol_tmpfs_size(&v, 64 * mi, 1024 * mi), 64 * mi);
        v.size_limit = (CubQuantity){ .units = 0 };
        assert_int_equal(vol_tmpfs_size(&v, 64 * mi, 1024 * mi), 64 * mi);
}

static void test_expand(void **state) {
        char k0[] = "POD", v0[] = "web-1", k1[] = "EMPTY", v1[] = "", k2[] = "X", v2[] = "x";
        char *envs[] = { k0, v0, k1, v1, k2, v2, NULL };
        char *s = NULL;
        CubError err = {};

        (void) state;
        assert_int_equal(vol_expand("logs/$(POD)/$(X)", envs, &s, &err), 0);
        assert_string_equal(s, "logs/web-1/x");
        free(s);
        assert_int_equal(vol_expand("$$(POD)-$(POD)", envs, &s, &err), 0);
        assert_string_equal(s, "$(POD)-web-1");
        free(s);
        assert_int_equal(vol_expand("plain", envs, &s, &err), 0);
        assert_string_equal(s, "plain");
        free(s);
        assert_int_equal(vol_expand("$(B)/$(EMPTY)/$(A)/$(B)", envs, &s, &err), -EINVAL);
        assert_string_equal(err.msg, "missing value for A, B, EMPTY");
}

static void test_paths(void **state) {
        VolRoots roots = { .pods_dir = "/var/lib/cubelet/pods" };
        char n0[] = "cache", n1[] = "info", n2[] = "all", n3[] = "data", h3[] = "/srv/data";
        PodVolume ed = { .name = n0, .kind = POD_VOLUME_EMPTY_DIR };
        PodVolume dw = { .name = n1, .kind = POD_VOLUME_DOWNWARD_API };
        PodVolume pj = { .name = n2, .kind = POD_VOLUME_PROJECTED };
        PodVolume hp = { .name = n3, .kind = POD_VOLUME_HOST_PATH, .host_path = h3 };
        char buf[PATH_MAX];
        CubError err = {};

        (void) state;
        assert_int_equal(vol_path(&roots, "u1", &ed, buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "/var/lib/cubelet/pods/u1/volumes/kubernetes.io~empty-dir/cache");
        assert_int_equal(vol_path(&roots, "u1", &dw, buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "/var/lib/cubelet/pods/u1/volumes/kubernetes.io~downward-api/info");
        assert_int_equal(vol_path(&roots, "u1", &pj, buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "/var/lib/cubelet/pods/u1/volumes/kubernetes.io~projected/all");
        assert_int_equal(vol_path(&roots, "u1", &hp, buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "/srv/data");
        assert_int_equal(vol_pod_dir(&roots, "u1", buf, sizeof(buf), &err), 0);
        assert_string_equal(buf, "/var/lib/cubelet/pods/u1/volumes");
}

static void test_subpath(void **state) {
        char base[PATH_MAX / 2], out[PATH_MAX / 2], want[PATH_MAX * 2];
        char *ret = NULL;
        CubError err = {};
        struct stat st;

        (void) state;
        at(base, sizeof(base), "vol");
        at(out, sizeof(out), "outside");
        assert_int_equal(mkdir(base, 0750), 0);
        assert_int_equal(mkdir(out, 0755), 0);
        /* created when missing, with the volume's mode */
        assert_int_equal(vol_subpath(base, "a/b", &ret, &err), 0);
        (void) snprintf(want, sizeof(want), "%s/a/b", base);
        assert_string_equal(ret, want);
        free(ret);
        assert_int_equal(stat(want, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0750);
        /* a symlink that leads out of the volume */
        (void) snprintf(want, sizeof(want), "%s/escape", base);
        assert_int_equal(symlink(out, want), 0);
        assert_int_equal(vol_subpath(base, "escape", &ret, &err), -EPERM);
        (void) snprintf(want, sizeof(want), "subpath \"%s\" not within volume path \"%s\"", out, base);
        assert_string_equal(err.msg, want);
        /* a symlink inside is fine */
        (void) snprintf(want, sizeof(want), "%s/in", base);
        assert_int_equal(symlink("a", want), 0);
        assert_int_equal(vol_subpath(base, "in/b", &ret, &err), 0);
        (void) snprintf(want, sizeof(want), "%s/a/b", base);
        assert_string_equal(ret, want);
        free(ret);
}

static char *slurp(const char *path) {
        static char buf[4096];
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static void test_atomic_write(void **state) {
        char dir[PATH_MAX], p[PATH_MAX * 2], first[PATH_MAX], link[PATH_MAX];
        VolFile one[] = { { "labels", "a=\"b\"", 5, 0644 }, { "sub/name", "p", 1, 0600 } };
        VolFile two[] = { { "labels", "a=\"c\"", 5, 0644 } };
        CubError err = {};
        struct stat st;
        ssize_t n;

        (void) state;
        at(dir, sizeof(dir), "dw");
        assert_int_equal(vol_atomic_write(dir, one, 2, &err), 0);
        (void) snprintf(p, sizeof(p), "%s/..data", dir);
        n = readlink(p, first, sizeof(first) - 1);
        assert_true(n > 0);
        first[n] = '\0';
        assert_int_equal(strncmp(first, "..", 2), 0);
        (void) snprintf(p, sizeof(p), "%s/labels", dir);
        n = readlink(p, link, sizeof(link) - 1);
        assert_true(n > 0);
        link[n] = '\0';
        assert_string_equal(link, "..data/labels");
        assert_string_equal(slurp(p), "a=\"b\"");
        (void) snprintf(p, sizeof(p), "%s/sub/name", dir);
        assert_string_equal(slurp(p), "p");
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        /* unchanged: the same payload directory */
        assert_int_equal(vol_atomic_write(dir, one, 2, &err), 0);
        (void) snprintf(p, sizeof(p), "%s/..data", dir);
        n = readlink(p, link, sizeof(link) - 1);
        link[n > 0 ? n : 0] = '\0';
        assert_string_equal(link, first);
        /* changed: a new payload, the old one and the names it alone had removed */
        assert_int_equal(vol_atomic_write(dir, two, 1, &err), 0);
        n = readlink(p, link, sizeof(link) - 1);
        link[n > 0 ? n : 0] = '\0';
        assert_string_not_equal(link, first);
        (void) snprintf(p, sizeof(p), "%s/%s", dir, first);
        assert_int_equal(lstat(p, &st), -1);
        (void) snprintf(p, sizeof(p), "%s/sub", dir);
        assert_int_equal(lstat(p, &st), -1);
        (void) snprintf(p, sizeof(p), "%s/labels", dir);
        assert_string_equal(slurp(p), "a=\"c\"");
}

static void test_fs_group(void **state) {
        char dir[PATH_MAX], f[PATH_MAX * 2];
        CubError err = {};
        struct stat st;
        int fd;

        (void) state;
        if (geteuid() != 0) {
                skip();
                return;
        }
        at(dir, sizeof(dir), "own");
        assert_int_equal(mkdir(dir, 0700), 0);
        (void) snprintf(f, sizeof(f), "%s/file", dir);
        fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        close(fd);
        assert_int_equal(vol_set_ownership(dir, 4242, false, false, &err), 0);
        assert_int_equal(stat(dir, &st), 0);
        assert_int_equal(st.st_gid, 4242);
        assert_int_equal(st.st_mode & 07777, 02770);
        assert_int_equal(stat(f, &st), 0);
        assert_int_equal(st.st_gid, 4242);
        assert_int_equal(st.st_mode & 07777, 0660);
        /* OnRootMismatch: the root matches, nothing below is touched */
        assert_int_equal(chmod(f, 0600), 0);
        assert_int_equal(vol_set_ownership(dir, 4242, false, true, &err), 0);
        assert_int_equal(stat(f, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        /* read-only volumes (downwardAPI) get the read bits */
        assert_int_equal(vol_set_ownership(dir, 4343, true, true, &err), 0);
        assert_int_equal(stat(f, &st), 0);
        assert_int_equal(st.st_gid, 4343);
        assert_int_equal(st.st_mode & 07777, 0640);
}

static void test_pod_setup_mounts_teardown(void **state) {
        char pods[PATH_MAX], host[PATH_MAX], yaml[8192], p[PATH_MAX * 2], want[PATH_MAX * 2];
        VolRoots roots = { .pods_dir = pods, .mount_tmpfs = false };
        VolNode node = { .cpu_milli = 1000, .memory = 1 << 30 };
        VolMount *m = NULL;
        size_t n = 0;
        char **uids = NULL;
        CubError err = {};
        struct stat st;
        Pod *pod;
        char ek[] = "SUB", ev[] = "s1";
        char *envs[] = { ek, ev, NULL };
        uint64_t used = 0;
        int fd;

        (void) state;
        at(pods, sizeof(pods), "pods");
        at(host, sizeof(host), "host/data");
        (void) snprintf(yaml, sizeof(yaml),
                        POD_HDR "  labels: {app: web}\nspec:\n  containers:\n  - name: a\n    image: x\n"
                                "    env: [{name: SUB, value: s1}]\n"
                                "    volumeMounts:\n"
                                "    - {name: data, mountPath: /data, readOnly: true}\n"
                                "    - {name: cache, mountPath: /cache, subPathExpr: \"$(SUB)\"}\n"
                                "    - {name: info, mountPath: /info, mountPropagation: HostToContainer}\n"
                                "  volumes:\n  - name: data\n    hostPath: {path: %s, type: DirectoryOrCreate}\n"
                                "  - name: cache\n    emptyDir: {sizeLimit: 1Mi}\n"
                                "  - name: info\n    projected:\n      sources:\n      - downwardAPI:\n"
                                "          items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]\n",
                        host);
        pod = decode(yaml);
        assert_int_equal(vol_pod_setup(&roots, pod, 0, &node, &err), 0);
        assert_int_equal(stat(host, &st), 0);
        (void) snprintf(p, sizeof(p), "%s/u-1/volumes/kubernetes.io~empty-dir/cache", pods);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0777);
        (void) snprintf(p, sizeof(p), "%s/u-1/volumes/kubernetes.io~projected/info/labels", pods);
        assert_string_equal(slurp(p), "app=\"web\"");
        /* idempotent (a pod adopted after a restart) */
        assert_int_equal(vol_pod_setup(&roots, pod, 0, &node, &err), 0);

        assert_int_equal(vol_container_mounts(&roots, pod, &pod->containers[0], envs, &m, &n, &err), 0);
        assert_int_equal(n, 3);
        assert_string_equal(m[0].container_path, "/data");
        assert_string_equal(m[0].host_path, host);
        assert_true(m[0].readonly);
        assert_int_equal(m[0].propagation, VOL_PROPAGATION_PRIVATE);
        (void) snprintf(want, sizeof(want), "%s/u-1/volumes/kubernetes.io~empty-dir/cache/s1", pods);
        assert_string_equal(m[1].host_path, want);
        assert_false(m[1].readonly);
        assert_true(m[2].readonly); /* projected: always read-only */
        assert_int_equal(m[2].propagation, VOL_PROPAGATION_HOST_TO_CONTAINER);
        vol_mounts_free(m, n);

        /* usage of the emptyDir */
        (void) snprintf(p, sizeof(p), "%s/u-1/volumes/kubernetes.io~empty-dir/cache/s1/blob", pods);
        fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        {
                static char block[64 * 1024];

                memset(block, 'x', sizeof(block));
                for (int i = 0; i < 32; i++)
                        assert_int_equal(write(fd, block, sizeof(block)), (ssize_t) sizeof(block));
        }
        fsync(fd);
        close(fd);
        (void) snprintf(p, sizeof(p), "%s/u-1/volumes/kubernetes.io~empty-dir/cache", pods);
        assert_int_equal(vol_usage(p, &used, &err), 0);
        assert_true(used >= 2u << 20);

        assert_int_equal(vol_list_pods(&roots, &uids, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(uids[0], "u-1");
        free(uids[0]);
        free(uids);
        assert_int_equal(vol_pod_teardown(&roots, "u-1", &err), 0);
        (void) snprintf(p, sizeof(p), "%s/u-1", pods);
        assert_int_equal(stat(p, &st), -1);
        /* a hostPath is the host's: it stays */
        assert_int_equal(stat(host, &st), 0);
        pod_free(pod);
}

static void test_setup_failure_names_volume(void **state) {
        char pods[PATH_MAX], yaml[4096];
        VolRoots roots = { .pods_dir = pods };
        VolNode node = { .memory = 1 << 30 };
        CubError err = {};
        Pod *pod;

        (void) state;
        at(pods, sizeof(pods), "pods");
        (void) snprintf(yaml, sizeof(yaml),
                        POD_HDR "spec:\n  containers:\n  - name: a\n    image: x\n"
                                "  volumes:\n  - name: data\n    hostPath: {path: /dev/null, type: Directory}\n");
        pod = decode(yaml);
        assert_int_equal(vol_pod_setup(&roots, pod, 0, &node, &err), -ENOTDIR);
        assert_string_equal(err.msg, "MountVolume.SetUp failed for volume \"data\" : hostPath type check failed: "
                                     "/dev/null is not a directory");
        pod_free(pod);
}

#define DECODE_ERR(text, want)                                                                          \
        do {                                                                                            \
                Pod *p_ = NULL;                                                                         \
                CubError e_ = {};                                                                       \
                assert_true(pod_decode((text), strlen(text), "v.yaml", POD_FORMAT_YAML, &p_, &e_) < 0); \
                assert_string_equal(e_.msg, (want));                                                    \
        } while (0)

#define SPEC POD_HDR "spec:\n  containers:\n  - name: a\n    image: x\n"

static void test_validation(void **state) {
        (void) state;
        DECODE_ERR(SPEC "    volumeMounts: [{name: nope, mountPath: /x}]\n",
                   "v.yaml:11: spec.containers[0].volumeMounts[0].name: Not found: \"nope\"");
        DECODE_ERR(SPEC "  volumes:\n  - {name: a, emptyDir: {}}\n  - {name: a, emptyDir: {}}\n",
                   "v.yaml:13: spec.volumes[1].name: Duplicate value: \"a\"");
        DECODE_ERR(SPEC "    volumeMounts: [{name: v, mountPath: /x, subPath: ../etc}]\n"
                        "  volumes:\n  - {name: v, emptyDir: {}}\n",
                   "v.yaml:11: spec.containers[0].volumeMounts[0].subPath: Invalid value: \"../etc\": must not "
                   "contain '..'");
        DECODE_ERR(SPEC "    volumeMounts: [{name: v, mountPath: /x, subPath: /etc}]\n"
                        "  volumes:\n  - {name: v, emptyDir: {}}\n",
                   "v.yaml:11: spec.containers[0].volumeMounts[0].subPath: Invalid value: \"/etc\": must be a "
                   "relative path");
        DECODE_ERR(SPEC "    volumeMounts: [{name: v, mountPath: /x, subPath: a, subPathExpr: b}]\n"
                        "  volumes:\n  - {name: v, emptyDir: {}}\n",
                   "v.yaml:11: spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: \"b\": subPathExpr "
                   "and subPath are mutually exclusive");
        DECODE_ERR(SPEC "    volumeMounts: [{name: v, mountPath: /x}, {name: v, mountPath: /x}]\n"
                        "  volumes:\n  - {name: v, emptyDir: {}}\n",
                   "v.yaml:11: spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/x\": must be unique");
        DECODE_ERR(SPEC "    volumeMounts: [{name: v, mountPath: /x, mountPropagation: Bidirectional}]\n"
                        "  volumes:\n  - {name: v, emptyDir: {}}\n",
                   "v.yaml:11: spec.containers[0].volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount "
                   "propagation is available only to privileged containers");
        DECODE_ERR(SPEC "  volumes:\n  - {name: v, hostPath: {path: /a/../b}}\n",
                   "v.yaml:12: spec.volumes[0].hostPath.path: Invalid value: \"/a/../b\": must not contain '..'");
        DECODE_ERR(SPEC "  volumes:\n  - {name: v, hostPath: {path: /a, type: Dir}}\n",
                   "v.yaml:12: spec.volumes[0].hostPath.type: Unsupported value: \"Dir\": supported values: \"\", "
                   "\"DirectoryOrCreate\", \"Directory\", \"FileOrCreate\", \"File\", \"Socket\", \"CharDevice\", "
                   "\"BlockDevice\"");
        DECODE_ERR(SPEC "  volumes:\n  - {name: v, emptyDir: {}, hostPath: {path: /a}}\n",
                   "v.yaml:12: spec.volumes[0]: Forbidden: may not specify more than 1 volume type");
        DECODE_ERR(SPEC "  volumes:\n  - {name: V, emptyDir: {}}\n",
                   "v.yaml:12: spec.volumes[0].name: Invalid value: \"V\": a lowercase RFC 1123 label must consist "
                   "of lower case alphanumeric characters or '-', and must start and end with an alphanumeric "
                   "character");
        DECODE_ERR(SPEC "  volumes:\n  - name: d\n    downwardAPI:\n      items:\n"
                        "      - {path: x, fieldRef: {fieldPath: spec.nodeName}}\n",
                   "v.yaml:15: spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "
                   "\"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", "
                   "\"metadata.name\", \"metadata.namespace\", \"metadata.uid\"");
        DECODE_ERR(SPEC "  volumes:\n  - name: d\n    downwardAPI:\n      items:\n"
                        "      - {path: ../x, fieldRef: {fieldPath: metadata.name}}\n",
                   "v.yaml:15: spec.volumes[0].downwardAPI.items[0].path: Invalid value: \"../x\": must not contain "
                   "'..'");
        DECODE_ERR(SPEC "  securityContext: {fsGroup: 1, fsGroupChangePolicy: Sometimes}\n",
                   "v.yaml:11: spec.securityContext.fsGroupChangePolicy: Unsupported value: \"Sometimes\": supported "
                   "values: \"OnRootMismatch\", \"Always\"");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_host_path_types, setup, teardown),
                cmocka_unit_test(test_format_map),
                cmocka_unit_test(test_resource_vectors),
                cmocka_unit_test(test_downward_values),
                cmocka_unit_test(test_downward_pod_level_limits),
                cmocka_unit_test(test_tmpfs_size),
                cmocka_unit_test(test_expand),
                cmocka_unit_test(test_paths),
                cmocka_unit_test_setup_teardown(test_subpath, setup, teardown),
                cmocka_unit_test_setup_teardown(test_atomic_write, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fs_group, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pod_setup_mounts_teardown, setup, teardown),
                cmocka_unit_test_setup_teardown(test_setup_failure_names_volume, setup, teardown),
                cmocka_unit_test(test_validation),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
