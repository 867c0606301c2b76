/* SPDX-License-Identifier: Apache-2.0 */
/* The cgroupfs driver: kubepods groups made and written directly on the
 * cgroup v2 tree below the writer's root, crun's way: each group opened
 * once with O_PATH|O_DIRECTORY relative to the root, each file opened
 * O_WRONLY relative to the group and never created. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/time.h"
#include "cgroup-internal.h"

#define CG_READ_MAX 4096
#define CG_CONTROLLER_MAX 32
#define CG_REMOVE_DEPTH_MAX 8

/* "kubepods/burstable" for "kubepods/burstable/podX"; the root itself
 * (as given) for a top-level group. */
static void parent_of(const CgWriter *w, const char *path, char *buf, size_t size) {
        const char *slash = strrchr(path, '/');

        if (slash)
                (void) snprintf(buf, size, "%.*s", (int) (slash - path), path);
        else
                (void) snprintf(buf, size, "%s", w->root);
}

/* "cpu" for "cpu.max"; false for core files ("cgroup.*") and odd names. */
static bool controller_of(const char *file, char buf[static CG_CONTROLLER_MAX]) {
        const char *dot = strchr(file, '.');
        size_t len = dot ? (size_t) (dot - file) : 0;

        if (len == 0 || len >= CG_CONTROLLER_MAX || (len == 6 && strncmp(file, "cgroup", 6) == 0))
                return false;
        memcpy(buf, file, len);
        buf[len] = '\0';
        return true;
}

static int open_group(const CgWriter *w, const char *path, CubError *err) {
        int fd = openat(w->root_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return cub_err_set(err, errno, "cgroup '%s': open: %s", path, strerror(errno));
        return fd;
}

/* Writes value to one file of the group open at dirfd: one open, one
 * write. ENOENT is returned bare for the caller to explain. */
static int write_at(int dirfd, const char *file, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        size_t len = strlen(value);
        ssize_t n;

        fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t) n == len ? 0 : -EIO;
}

/* The whole file (at most CG_READ_MAX bytes), trailing newlines stripped. */
static int read_at(int dirfd, const char *file, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        char data[CG_READ_MAX + 1];
        size_t len = 0;

        fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t n = read(fd, data + len, sizeof(data) - 1 - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len == sizeof(data) - 1)
                        return -EFBIG;
        }
        while (len > 0 && data[len - 1] == '\n')
                len--;
        if (len >= size)
                return -ERANGE;
        memcpy(buf, data, len);
        buf[len] = '\0';
        return 0;
}

static bool word_in(const char *list, const char *word) {
        size_t wl = strlen(word);

        for (const char *p = list; *p;) {
                size_t len = strcspn(p, " \n");

                if (len == wl && strncmp(p, word, wl) == 0)
                        return true;
                p += len;
                p += strspn(p, " \n");
        }
        return false;
}

static int cgroupfs_init(CgWriter *w, CubError *err) {
        (void) w;
        (void) err;
        return 0;
}

int cg_fs_exists(CgWriter *w, const char *path, CubError *err) {
        struct stat st;

        if (fstatat(w->root_fd, path, &st, 0) < 0) {
                if (errno == ENOENT)
                        return 0;
                return cub_err_set(err, errno, "cgroup '%s': %s", path, strerror(errno));
        }
        if (!S_ISDIR(st.st_mode))
                return cub_err_set(err, ENOTDIR, "cgroup '%s': not a directory", path);
        return 1;
}

/* Enables the n_want controllers of want in the subtree_control of the
 * group open at dirfd (called name in messages): the missing ones in one
 * write ("+cpu +memory"), and if the kernel refuses that, one at a time to
 * name the one it refuses (runc's fallback). */
static int enable_controllers(int dirfd, const char *name, char want[][CG_CONTROLLER_MAX], size_t n_want,
                              CubError *err) {
        char have[CG_READ_MAX], line[CG_READ_MAX] = "";
        size_t len = 0;
        int r;

        r = read_at(dirfd, "cgroup.subtree_control", have, sizeof(have));
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': read 'cgroup.subtree_control': %s", name, strerror(-r));
        for (size_t i = 0; i < n_want; i++) {
                int n;

                if (word_in(have, want[i]))
                        continue;
                n = snprintf(line + len, sizeof(line) - len, "%s+%s", len ? " " : "", want[i]);
                if (n < 0 || (size_t) n >= sizeof(line) - len)
                        return cub_err_set(err, E2BIG, "cgroup '%s': too many controllers", name);
                len += (size_t) n;
        }
        if (len == 0)
                return 0;
        r = write_at(dirfd, "cgroup.subtree_control", line);
        if (r >= 0)
                return 0;
        for (size_t i = 0; i < n_want; i++) {
                char one[CG_CONTROLLER_MAX + 1];
                int ri;

                if (word_in(have, want[i]))
                        continue;
                (void) snprintf(one, sizeof(one), "+%s", want[i]);
                ri = write_at(dirfd, "cgroup.subtree_control", one);
                if (ri == -ENOENT)
                        return cub_err_set(err, ENOENT,
                                           "cgroup '%s': write 'cgroup.subtree_control' = '%s': controller '%s' not "
                                           "available in '%s/cgroup.controllers'",
                                           name, one, want[i], name);
                if (ri < 0)
                        return cub_err_set(err, -ri, "cgroup '%s': write 'cgroup.subtree_control' = '%s': %s", name,
                                           one, strerror(-ri));
        }
        return cub_err_set(err, -r, "cgroup '%s': write 'cgroup.subtree_control' = '%s': %s", name, line, strerror(-r));
}

static int cgroupfs_create(CgWriter *w, const CgGroupValues *g, CubError *err) {
        char want[CG_FILES_MAX][CG_CONTROLLER_MAX], name[sizeof(g->path)];
        _cleanup_close_ int dirfd = -EBADF;
        size_t n_want = 0, len = 0;
        const char *p = g->path;
        int r;

        for (size_t i = 0; i < g->n_files && i < CG_FILES_MAX; i++) {
                char c[CG_CONTROLLER_MAX];
                bool seen = false;

                if (!controller_of(g->files[i].name, c))
                        continue;
                for (size_t k = 0; k < n_want; k++)
                        seen = seen || strcmp(want[k], c) == 0;
                if (!seen)
                        memcpy(want[n_want++], c, sizeof(c));
        }
        dirfd = openat(w->root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return cub_err_set(err, errno, "cgroup root '%s': %s", w->root, strerror(errno));
        (void) snprintf(name, sizeof(name), "%s", w->root);
        /* parent by parent: its subtree_control first, then the child */
        for (;;) {
                size_t clen = strcspn(p, "/");
                char comp[sizeof(g->path)];
                int fd;

                r = enable_controllers(dirfd, name, want, n_want, err);
                if (r < 0)
                        return r;
                memcpy(comp, p, clen);
                comp[clen] = '\0';
                if (mkdirat(dirfd, comp, 0755) < 0 && errno != EEXIST)
                        return cub_err_set(err, errno, "cgroup '%.*s': mkdir: %s", (int) (len + clen), g->path,
                                           strerror(errno));
                len += clen;
                (void) snprintf(name, sizeof(name), "%.*s", (int) len, g->path);
                fd = openat(dirfd, comp, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return cub_err_set(err, errno, "cgroup '%s': open: %s", name, strerror(errno));
                (void) close(dirfd);
                dirfd = fd;
                if (!p[clen])
                        return 0;
                p += clen + 1;
                len++;
        }
}

static int cgroupfs_update(CgWriter *w, const CgGroupValues *g, CubError *err) {
        _cleanup_close_ int dirfd = -EBADF;

        dirfd = open_group(w, g->path, err);
        if (dirfd < 0)
                return dirfd;
        for (size_t i = 0; i < g->n_files; i++) {
                const CgFile *f = &g->files[i];
                char c[CG_CONTROLLER_MAX], parent[sizeof(g->path)];
                int r = write_at(dirfd, f->name, f->value);

                if (r >= 0)
                        continue;
                if (r == -ENOENT && controller_of(f->name, c)) {
                        parent_of(w, g->path, parent, sizeof(parent));
                        return cub_err_set(err, ENOENT,
                                           "cgroup '%s': write '%s' = '%s': controller '%s' not enabled in "
                                           "'%s/cgroup.subtree_control'",
                                           g->path, f->name, f->value, c, parent);
                }
                return cub_err_set(err, -r, "cgroup '%s': write '%s' = '%s': %s", g->path, f->name, f->value,
                                   strerror(-r));
        }
        return 0;
}

int cg_fs_read(CgWriter *w, const char *path, const char *file, char *buf, size_t size, CubError *err) {
        _cleanup_close_ int dirfd = -EBADF;
        int r;

        dirfd = open_group(w, path, err);
        if (dirfd < 0)
                return dirfd;
        r = read_at(dirfd, file, buf, size);
        if (r == -ERANGE)
                return cub_err_set(err, ERANGE, "cgroup '%s': read '%s': longer than %zu bytes", path, file,
                                   size ? size - 1 : 0);
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': read '%s': %s", path, file, strerror(-r));
        return 0;
}

/* 1 populated, 0 not (or the group is gone), -errno. */
static int read_populated(int dirfd) {
        char buf[CG_READ_MAX];
        int r = read_at(dirfd, "cgroup.events", buf, sizeof(buf));

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        for (const char *l = buf; *l;) {
                size_t len = strcspn(l, "\n");

                if (strncmp(l, "populated ", 10) == 0)
                        return l[10] != '0';
                l += len;
                l += *l == '\n';
        }
        return -EBADMSG;
}

int cg_fs_wait_unpopulated(CgWriter *w, const char *path, uint64_t timeout_usec, CubError *err) {
        _cleanup_close_ int dirfd = -EBADF, ifd = -EBADF;
        _cleanup_free_ char *events = NULL;
        uint64_t start = cub_now_usec(CLOCK_MONOTONIC);
        uint64_t deadline = timeout_usec > UINT64_MAX - start ? UINT64_MAX : start + timeout_usec;
        int r;

        dirfd = openat(w->root_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                if (errno == ENOENT)
                        return 0;
                return cub_err_set(err, errno, "cgroup '%s': open: %s", path, strerror(errno));
        }
        ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (ifd < 0)
                return cub_err_set(err, errno, "cgroup '%s': inotify: %s", path, strerror(errno));
        if (asprintf(&events, "%s/%s/cgroup.events", w->root, path) < 0) {
                events = NULL;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        /* watch first, then read: a change between the two is not lost. The
         * kernel signals each cgroup.events change as IN_MODIFY. */
        if (inotify_add_watch(ifd, events, IN_MODIFY | IN_DELETE_SELF) < 0) {
                if (errno == ENOENT)
                        return 0; /* gone meanwhile, or no cgroup.events: rmdir will tell */
                return cub_err_set(err, errno, "cgroup '%s': watch 'cgroup.events': %s", path, strerror(errno));
        }
        for (;;) {
                struct pollfd pfd = { .fd = ifd, .events = POLLIN };
                uint64_t now, ms;
                char drain[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

                r = read_populated(dirfd);
                if (r == 0)
                        return 0;
                if (r < 0)
                        return cub_err_set(err, -r, "cgroup '%s': read 'cgroup.events': %s", path, strerror(-r));
                now = cub_now_usec(CLOCK_MONOTONIC);
                if (now >= deadline)
                        return cub_err_set(err, ETIMEDOUT, "cgroup '%s': still populated after %" PRIu64 " ms", path,
                                           timeout_usec / CUB_USEC_PER_MSEC);
                ms = (deadline - now + CUB_USEC_PER_MSEC - 1) / CUB_USEC_PER_MSEC;
                r = poll(&pfd, 1, ms > INT_MAX ? INT_MAX : (int) ms);
                if (r < 0 && errno != EINTR)
                        return cub_err_set(err, errno, "cgroup '%s': poll: %s", path, strerror(errno));
                while (read(ifd, drain, sizeof(drain)) > 0)
                        ;
        }
}

/* rmdir of every child group below dirfd, depth first; what cannot go stays
 * and the caller's rmdir says so. */
static void remove_children(int dirfd, unsigned depth) {
        DIR *d;
        struct dirent *de;
        int fd;

        if (depth >= CG_REMOVE_DEPTH_MAX)
                return;
        fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return;
        d = fdopendir(fd);
        if (!d) {
                (void) close(fd);
                return;
        }
        while ((de = readdir(d))) {
                int child;

                if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                child = openat(dirfd, de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (child < 0)
                        continue;
                remove_children(child, depth + 1);
                (void) close(child);
                (void) unlinkat(dirfd, de->d_name, AT_REMOVEDIR);
        }
        (void) closedir(d);
}

int cg_fs_populated(CgWriter *w, const char *path, CubError *err) {
        _cleanup_close_ int dirfd = -EBADF;
        int r;

        dirfd = openat(w->root_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                if (errno == ENOENT)
                        return 0;
                return cub_err_set(err, errno, "cgroup '%s': open: %s", path, strerror(errno));
        }
        r = read_populated(dirfd);
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': read 'cgroup.events': %s", path, strerror(-r));
        return r;
}

static void cgroupfs_done(CgWriter *w) {
        (void) w;
}

static int cgroupfs_destroy(CgWriter *w, const char *path, CubError *err) {
        _cleanup_close_ int dirfd = -EBADF;

        if (unlinkat(w->root_fd, path, AT_REMOVEDIR) >= 0 || errno == ENOENT)
                return 0;
        if (errno != EBUSY)
                return cub_err_set(err, errno, "cgroup '%s': rmdir: %s", path, strerror(errno));
        /* container groups the runtime left behind (empty once the pod's
         * group is unpopulated), as libcontainer's RemovePath does */
        dirfd = openat(w->root_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd >= 0)
                remove_children(dirfd, 0);
        if (unlinkat(w->root_fd, path, AT_REMOVEDIR) >= 0 || errno == ENOENT)
                return 0;
        return cub_err_set(err, errno, "cgroup '%s': rmdir: %s", path, strerror(errno));
}

const CgDriver cg_driver_cgroupfs = {
        .name = "cgroupfs",
        .kind = CG_DRIVER_CGROUPFS,
        .init = cgroupfs_init,
        .exists = cg_fs_exists,
        .create = cgroupfs_create,
        .update = cgroupfs_update,
        .read = cg_fs_read,
        .wait_unpopulated = cg_fs_wait_unpopulated,
        .destroy = cgroupfs_destroy,
        .done = cgroupfs_done,
};
