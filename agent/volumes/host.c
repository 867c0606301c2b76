/* SPDX-License-Identifier: Apache-2.0 */
/* The host side: hostPath checks, emptyDir directories and tmpfs mounts,
 * downwardAPI payloads (AtomicWriter), fsGroup ownership, subPath, usage
 * and teardown. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "volumes.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

/* buf = a/b; false when it does not fit */
static bool join(char *buf, size_t size, const char *a, const char *b) {
        int n = snprintf(buf, size, "%s/%s", a, b);

        return n >= 0 && (size_t) n < size;
}

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

/* ---- hostPath -------------------------------------------------------------------------- */

int vol_host_path_check(const char *path, const char *type, CubError *err) {
        struct stat st;
        bool exists = stat(path, &st) == 0;

        if (!type || !*type)
                return 0;
        if (strcmp(type, "DirectoryOrCreate") == 0 || strcmp(type, "Directory") == 0) {
                if (!exists && strcmp(type, "DirectoryOrCreate") == 0) {
                        int r = cub_mkdir_p(path, 0755);

                        if (r < 0)
                                return cub_err_set(err, -r, "mkdir %s: %s", path, strerror(-r));
                        return 0;
                }
                if (!exists || !S_ISDIR(st.st_mode))
                        return cub_err_set(err, ENOTDIR, "hostPath type check failed: %s is not a directory", path);
                return 0;
        }
        if (strcmp(type, "FileOrCreate") == 0 || strcmp(type, "File") == 0) {
                if (!exists && strcmp(type, "FileOrCreate") == 0) {
                        int fd = open(path, O_CREAT | O_RDONLY | O_CLOEXEC, 0644);

                        if (fd < 0 && errno != EEXIST)
                                return cub_err_set(err, errno, "open %s: %s", path, strerror(errno));
                        if (fd >= 0)
                                close(fd);
                        return 0;
                }
                if (!exists || !S_ISREG(st.st_mode))
                        return cub_err_set(err, EINVAL, "hostPath type check failed: %s is not a file", path);
                return 0;
        }
        if (strcmp(type, "Socket") == 0) {
                if (!exists || !S_ISSOCK(st.st_mode))
                        return cub_err_set(err, EINVAL, "hostPath type check failed: %s is not a socket file", path);
                return 0;
        }
        if (strcmp(type, "CharDevice") == 0) {
                if (!exists || !S_ISCHR(st.st_mode))
                        return cub_err_set(err, EINVAL, "hostPath type check failed: %s is not a character device",
                                           path);
                return 0;
        }
        if (strcmp(type, "BlockDevice") == 0) {
                if (!exists || !S_ISBLK(st.st_mode))
                        return cub_err_set(err, EINVAL, "hostPath type check failed: %s is not a block device", path);
                return 0;
        }
        return cub_err_set(err, EINVAL, "%s is an invalid volume type", type);
}

/* ---- AtomicWriter ------------------------------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) ftw;
        if (flag == FTW_DP || flag == FTW_D)
                (void) rmdir(path);
        else
                (void) unlink(path);
        return 0;
}

static int rm_rf(const char *path) {
        struct stat st;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlink(path) < 0 ? -errno : 0;
        if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0)
                return -errno;
        return 0;
}

/* the regular files below dir, -1 when it cannot be read */
static ssize_t count_files(const char *dir) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        struct dirent *de;
        ssize_t n = 0;

        if (!d)
                return -1;
        while ((de = readdir(d))) {
                char p[PATH_MAX];
                struct stat st;
                ssize_t sub;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    !join(p, sizeof(p), dir, de->d_name) || lstat(p, &st) < 0)
                        continue;
                if (S_ISREG(st.st_mode))
                        n++;
                else if (S_ISDIR(st.st_mode)) {
                        if ((sub = count_files(p)) < 0)
                                return -1;
                        n += sub;
                }
        }
        return n;
}

/* whether dir/..data holds exactly these files with these contents and
 * modes, and no other (a key removed from a ConfigMap) */
static bool payload_same(const char *dir, const VolFile *files, size_t n) {
        char path[PATH_MAX];

        (void) snprintf(path, sizeof(path), "%s/..data", dir);
        if (count_files(path) != (ssize_t) n)
                return false;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *data = NULL;
                size_t len;
                struct stat st;
                CubError e = {};

                (void) snprintf(path, sizeof(path), "%s/..data/%s", dir, files[i].path);
                if (stat(path, &st) < 0 || (st.st_mode & 07777) != (mode_t) files[i].mode)
                        return false;
                if (cub_read_file(path, 16 * 1024 * 1024, &data, &len, &e) < 0)
                        return false;
                if (len != files[i].size || memcmp(data, files[i].data, len) != 0)
                        return false;
        }
        return n > 0;
}

static int write_one(const char *ts, const VolFile *f, CubError *err) {
        char path[PATH_MAX];
        int fd;
        size_t len = f->size;

        if (!join(path, sizeof(path), ts, f->path))
                return cub_err_set(err, ENAMETOOLONG, "%s: name too long", f->path);
        {
                /* nested paths: the directories below the payload */
                char *slash = strrchr(path, '/');

                if (slash && slash > path + strlen(ts)) {
                        int r;

                        *slash = '\0';
                        r = cub_mkdir_p(path, 0755);
                        *slash = '/';
                        if (r < 0)
                                return cub_err_set(err, -r, "mkdir for %s: %s", path, strerror(-r));
                }
        }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return cub_err_set(err, errno, "%s: %s", path, strerror(errno));
        if ((len > 0 && write(fd, f->data, len) != (ssize_t) len) || fchmod(fd, (mode_t) f->mode) < 0) {
                int e = errno;

                close(fd);
                return cub_err_set(err, e, "%s: %s", path, strerror(e));
        }
        close(fd);
        return 0;
}

int vol_atomic_write(const char *dir, const VolFile *files, size_t n, CubError *err) {
        char ts[PATH_MAX], link[PATH_MAX], tmp[PATH_MAX], old[PATH_MAX] = "";
        struct timespec now;
        struct tm tm;
        ssize_t l;
        int r;

        r = cub_mkdir_p(dir, 0755);
        if (r < 0)
                return cub_err_set(err, -r, "mkdir %s: %s", dir, strerror(-r));
        if (payload_same(dir, files, n))
                return 0;
        (void) clock_gettime(CLOCK_REALTIME, &now);
        (void) gmtime_r(&now.tv_sec, &tm);
        /* os.MkdirTemp(dir, "..2006_01_02_15_04_05.") */
        (void) snprintf(ts, sizeof(ts), "%s/..%04d_%02d_%02d_%02d_%02d_%02d.%09ld", dir, tm.tm_year + 1900,
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, now.tv_nsec);
        if (mkdir(ts, 0755) < 0 || chmod(ts, 0755) < 0)
                return cub_err_set(err, errno, "mkdir %s: %s", ts, strerror(errno));
        for (size_t i = 0; i < n; i++) {
                r = write_one(ts, &files[i], err);
                if (r < 0) {
                        (void) rm_rf(ts);
                        return r;
                }
        }
        (void) snprintf(link, sizeof(link), "%s/..data", dir);
        l = readlink(link, old, sizeof(old) - 1);
        old[l > 0 ? l : 0] = '\0';
        (void) snprintf(tmp, sizeof(tmp), "%s/..data_tmp", dir);
        (void) unlink(tmp);
        if (symlink(strrchr(ts, '/') + 1, tmp) < 0 || rename(tmp, link) < 0) {
                r = cub_err_set(err, errno, "%s: %s", link, strerror(errno));
                (void) rm_rf(ts);
                return r;
        }
        /* the user-visible names: <top-level name> -> ..data/<top-level name> */
        for (size_t i = 0; i < n; i++) {
                char name[PATH_MAX], target[PATH_MAX + 8], at[PATH_MAX], cur[PATH_MAX];
                const char *slash = strchr(files[i].path, '/');
                size_t len = slash ? (size_t) (slash - files[i].path) : strlen(files[i].path);

                (void) snprintf(name, sizeof(name), "%.*s", (int) len, files[i].path);
                (void) snprintf(target, sizeof(target), "..data/%s", name);
                if (!join(at, sizeof(at), dir, name))
                        return cub_err_set(err, ENAMETOOLONG, "%s: name too long", name);
                l = readlink(at, cur, sizeof(cur) - 1);
                if (l > 0 && (size_t) l == strlen(target) && memcmp(cur, target, (size_t) l) == 0)
                        continue;
                (void) unlink(at);
                if (symlink(target, at) < 0)
                        return cub_err_set(err, errno, "%s: %s", at, strerror(errno));
        }
        /* names of the previous payload no longer written */
        if (*old && strcmp(old, strrchr(ts, '/') + 1) != 0) {
                _cleanup_(closedirp) DIR *d = opendir(dir);
                struct dirent *de;

                while (d && (de = readdir(d))) {
                        char at[PATH_MAX], cur[PATH_MAX];
                        bool keep = false;

                        if (de->d_name[0] == '.')
                                continue;
                        for (size_t i = 0; i < n && !keep; i++) {
                                size_t len = strcspn(files[i].path, "/");

                                keep = strlen(de->d_name) == len && strncmp(de->d_name, files[i].path, len) == 0;
                        }
                        (void) join(at, sizeof(at), dir, de->d_name);
                        l = readlink(at, cur, sizeof(cur) - 1);
                        if (!keep && l > 0)
                                (void) unlink(at);
                }
                (void) join(tmp, sizeof(tmp), dir, old);
                (void) rm_rf(tmp);
        }
        return 0;
}

/* ---- fsGroup ------------------------------------------------------------------------------ */

/* changeFilePermission on path and, for a directory on the same device, below it */
static int own_walk(const char *path, dev_t dev, int64_t gid, bool readonly, unsigned depth) {
        mode_t mask = readonly ? 0440 : 0660;
        struct stat st;

        if (lstat(path, &st) < 0)
                return -errno;
        if (lchown(path, (uid_t) -1, (gid_t) gid) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode))
                return 0;
        if (S_ISDIR(st.st_mode))
                mask |= S_ISGID | 0110;
        if (chmod(path, (st.st_mode & 07777) | mask) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode) && st.st_dev == dev && depth < 64) {
                _cleanup_(closedirp) DIR *d = opendir(path);
                struct dirent *de;

                while (d && (de = readdir(d))) {
                        char p[PATH_MAX];
                        int r;

                        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                                continue;
                        (void) join(p, sizeof(p), path, de->d_name);
                        r = own_walk(p, dev, gid, readonly, depth + 1);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int vol_set_ownership(const char *dir, int64_t fs_group, bool readonly, bool on_root_mismatch, CubError *err) {
        struct stat st;
        mode_t mask = readonly ? 0440 : 0660;
        int r;

        if (stat(dir, &st) < 0)
                return cub_err_set(err, errno, "%s: %s", dir, strerror(errno));
        /* skipPermissionChange: the root has the group and the bits already */
        if (on_root_mismatch && st.st_gid == (gid_t) fs_group && (st.st_mode & mask) == mask &&
            (!S_ISDIR(st.st_mode) || (st.st_mode & S_ISGID)))
                return 0;
        r = own_walk(dir, st.st_dev, fs_group, readonly, 0);
        if (r < 0)
                return cub_err_set(err, -r, "fsGroup %" PRId64 " on %s: %s", fs_group, dir, strerror(-r));
        return 0;
}

/* ---- emptyDir ------------------------------------------------------------------------------- */

/* a tmpfs is mounted at dir already (not the parent's filesystem) */
static bool is_tmpfs_mount(const char *dir) {
        char parent[PATH_MAX];
        struct statfs sf;
        struct stat a, b;
        char *slash;

        if (statfs(dir, &sf) < 0 || (unsigned long) sf.f_type != (unsigned long) TMPFS_MAGIC)
                return false;
        (void) snprintf(parent, sizeof(parent), "%s", dir);
        slash = strrchr(parent, '/');
        if (!slash || slash == parent)
                return false;
        *slash = '\0';
        if (stat(dir, &a) < 0 || stat(parent, &b) < 0)
                return false;
        return a.st_dev != b.st_dev;
}

static int setup_empty_dir(const VolRoots *roots, const char *path, const PodVolume *v, int64_t pod_memory_limit,
                           const VolNode *node, CubError *err) {
        int r = cub_mkdir_p(path, 0750);

        if (r < 0)
                return cub_err_set(err, -r, "mkdir %s: %s", path, strerror(-r));
        if (strcmp(v->medium, "Memory") == 0 && roots->mount_tmpfs && !is_tmpfs_mount(path)) {
                char opts[64];
                int64_t size = vol_tmpfs_size(v, pod_memory_limit, node->memory);

                opts[0] = '\0';
                if (size > 0)
                        (void) snprintf(opts, sizeof(opts), "size=%" PRId64, size);
                if (mount("tmpfs", path, "tmpfs", 0, *opts ? opts : NULL) < 0)
                        return cub_err_set(err, errno, "mount tmpfs on %s: %s", path, strerror(errno));
        }
        /* kubelet's emptyDir is 0777 (setupDir: perm 0777 whatever the umask) */
        if (chmod(path, 0777) < 0)
                return cub_err_set(err, errno, "chmod %s: %s", path, strerror(errno));
        return 0;
}

/* ---- the pod ---------------------------------------------------------------------------------- */

int vol_pod_setup(const VolRoots *roots, const Pod *pod, int64_t pod_memory_limit, const VolNode *node, CubError *err) {
        bool on_root_mismatch =
                pod->fs_group_change_policy && strcmp(pod->fs_group_change_policy, "OnRootMismatch") == 0;

        for (size_t i = 0; i < pod->n_volumes; i++) {
                const PodVolume *v = &pod->volumes[i];
                char path[PATH_MAX];
                int r;

                r = vol_path(roots, pod->uid, v, path, sizeof(path), err);
                if (r == 0)
                        switch (v->kind) {
                        case POD_VOLUME_HOST_PATH:
                                r = vol_host_path_check(path, v->host_path_type, err);
                                break;
                        case POD_VOLUME_EMPTY_DIR:
                                r = setup_empty_dir(roots, path, v, pod_memory_limit, node, err);
                                if (r == 0 && pod->fs_group_set)
                                        r = vol_set_ownership(path, pod->fs_group, false, on_root_mismatch, err);
                                break;
                        case POD_VOLUME_SECRET: {
                                /* kubelet's secret volume: an emptyDir of medium Memory, never on disk */
                                PodVolume mem = *v;

                                mem.medium = (char *) "Memory";
                                mem.size_limit_set = false;
                                r = setup_empty_dir(roots, path, &mem, pod_memory_limit, node, err);
                        }
                                __attribute__((fallthrough));
                        case POD_VOLUME_CONFIG_MAP:
                        case POD_VOLUME_DOWNWARD_API:
                        case POD_VOLUME_PROJECTED:
                                if (r == 0)
                                        r = vol_items_write(path, pod, v, node, err);
                                if (r == 0 && pod->fs_group_set)
                                        r = vol_set_ownership(path, pod->fs_group, true, on_root_mismatch, err);
                                break;
                        default:
                                break;
                        }
                if (r < 0)
                        return cub_err_wrap(err, "MountVolume.SetUp failed for volume \"%s\" ", v->name);
        }
        return 0;
}

int vol_pod_teardown(const VolRoots *roots, const char *uid, CubError *err) {
        char dir[PATH_MAX], plugin[PATH_MAX + 64];
        int r;

        r = vol_pod_dir(roots, uid, dir, sizeof(dir), err);
        if (r < 0)
                return r;
        /* tmpfs mounts first (Memory emptyDirs, secrets): the removal does not cross mounts */
        for (size_t k = 0; k < 2; k++) {
                (void) join(plugin, sizeof(plugin), dir, k == 0 ? VOL_DIR_EMPTY_DIR : VOL_DIR_SECRET);
                _cleanup_(closedirp) DIR *d = opendir(plugin);
                struct dirent *de;

                while (d && (de = readdir(d))) {
                        char p[PATH_MAX * 2];

                        if (de->d_name[0] == '.')
                                continue;
                        (void) join(p, sizeof(p), plugin, de->d_name);
                        while (is_tmpfs_mount(p))
                                if (umount2(p, MNT_DETACH) < 0)
                                        return cub_err_set(err, errno, "umount %s: %s", p, strerror(errno));
                }
        }
        r = rm_rf(dir);
        if (r < 0)
                return cub_err_set(err, -r, "rm -r %s: %s", dir, strerror(-r));
        (void) join(plugin, sizeof(plugin), roots->pods_dir, uid);
        (void) rmdir(plugin);
        return 0;
}

int vol_list_pods(const VolRoots *roots, char ***ret, size_t *ret_n, CubError *err) {
        _cleanup_(closedirp) DIR *d = opendir(roots->pods_dir);
        struct dirent *de;
        char **l = NULL;
        size_t n = 0;

        if (!d) {
                *ret = NULL;
                *ret_n = 0;
                return errno == ENOENT ? 0 : cub_err_set(err, errno, "%s: %s", roots->pods_dir, strerror(errno));
        }
        while ((de = readdir(d))) {
                char p[PATH_MAX];
                struct stat st;
                char **nl;

                /* a pod's log directory is <ns>_<name>_<uid>: only bare UIDs */
                if (de->d_name[0] == '.' || strchr(de->d_name, '_'))
                        continue;
                (void) snprintf(p, sizeof(p), "%s/%s/volumes", roots->pods_dir, de->d_name);
                if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                nl = realloc(l, (n + 2) * sizeof(*nl));
                if (!nl)
                        break;
                l = nl;
                l[n] = strdup(de->d_name);
                if (l[n])
                        n++;
                l[n] = NULL;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

/* ---- usage ------------------------------------------------------------------------------------ */

typedef struct Seen {
        dev_t dev;
        ino_t ino;
} Seen;

int vol_usage(const char *dir, uint64_t *ret, CubError *err) {
        /* an explicit stack: no static state for the walk */
        char **stack = NULL;
        size_t n_stack = 0;
        Seen *seen = NULL;
        size_t n_seen = 0;
        uint64_t total = 0;
        struct stat root;
        int r = 0;

        if (lstat(dir, &root) < 0)
                return cub_err_set(err, errno, "%s: %s", dir, strerror(errno));
        stack = malloc(sizeof(char *));
        if (!stack || !(stack[0] = strdup(dir))) {
                free(stack);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        n_stack = 1;
        total += (uint64_t) root.st_blocks * 512;
        while (n_stack > 0) {
                char *cur = stack[--n_stack];
                DIR *d = opendir(cur);
                struct dirent *de;

                while (d && (de = readdir(d))) {
                        char p[PATH_MAX];
                        struct stat st;

                        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                                continue;
                        (void) join(p, sizeof(p), cur, de->d_name);
                        if (lstat(p, &st) < 0 || st.st_dev != root.st_dev)
                                continue;
                        if (st.st_nlink > 1 && !S_ISDIR(st.st_mode)) {
                                bool dup = false;
                                Seen *ns;

                                for (size_t i = 0; i < n_seen && !dup; i++)
                                        dup = seen[i].dev == st.st_dev && seen[i].ino == st.st_ino;
                                if (dup)
                                        continue;
                                ns = realloc(seen, (n_seen + 1) * sizeof(*ns));
                                if (ns) {
                                        seen = ns;
                                        seen[n_seen++] = (Seen){ st.st_dev, st.st_ino };
                                }
                        }
                        total += (uint64_t) st.st_blocks * 512;
                        if (S_ISDIR(st.st_mode)) {
                                char **ns = realloc(stack, (n_stack + 1) * sizeof(*ns));

                                if (!ns || !(ns[n_stack] = strdup(p))) {
                                        if (ns)
                                                stack = ns;
                                        r = -ENOMEM;
                                        break;
                                }
                                stack = ns;
                                n_stack++;
                        }
                }
                if (d)
                        closedir(d);
                free(cur);
                if (r < 0)
                        break;
        }
        while (n_stack > 0)
                free(stack[--n_stack]);
        free(stack);
        free(seen);
        if (r < 0)
                return cub_err_set(err, -r, "out of memory");
        *ret = total;
        return 0;
}
