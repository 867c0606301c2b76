/* SPDX-License-Identifier: Apache-2.0 */
/* The writer: one root, one driver of the table, the checks common to all
 * drivers (path shape, create-or-update, every write read back). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/parse.h"
#include "cgroup-internal.h"

static const CgDriver *const drivers[_CG_DRIVER_MAX] = {
        [CG_DRIVER_CGROUPFS] = &cg_driver_cgroupfs,
        [CG_DRIVER_SYSTEMD] = &cg_driver_systemd,
};

const CgDriver *cg_driver_get(CgDriverKind kind) {
        return kind >= 0 && kind < _CG_DRIVER_MAX ? drivers[kind] : NULL;
}

bool cg_path_is_valid(const char *path) {
        const char *p = path;

        if (!path || !*path || *path == '/')
                return false;
        for (;;) {
                size_t len = strcspn(p, "/");

                if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                if (!p[len])
                        return true;
                p += len + 1;
        }
}

static int check_path(const char *path, CubError *err) {
        if (!cg_path_is_valid(path))
                return cub_err_set(err, EINVAL, "cgroup '%s': not a path relative to the cgroup root",
                                   path ? path : "");
        return 0;
}

int cg_writer_new_full(const char *cgroup_root, CgDriverKind driver, CgWriterFlags flags, CgWriter **ret,
                       CubError *err) {
        _cleanup_(cg_writer_freep) CgWriter *w = NULL;
        const CgDriver *d = cg_driver_get(driver);
        struct statfs sfs;
        int r;

        if (!d)
                return cub_err_set(err, EINVAL, "cgroup driver %d: no such driver", (int) driver);
        if (!cgroup_root || !*cgroup_root)
                return cub_err_set(err, EINVAL, "cgroup root: empty path");
        w = calloc(1, sizeof(*w));
        if (!w)
                return cub_err_set(err, ENOMEM, "out of memory");
        w->root_fd = -EBADF;
        w->driver = d;
        w->root = strdup(cgroup_root);
        if (!w->root)
                return cub_err_set(err, ENOMEM, "out of memory");
        w->root_fd = open(cgroup_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (w->root_fd < 0)
                return cub_err_set(err, errno, "cgroup root '%s': %s", cgroup_root, strerror(errno));
        if (fstatfs(w->root_fd, &sfs) < 0)
                return cub_err_set(err, errno, "cgroup root '%s': statfs: %s", cgroup_root, strerror(errno));
        w->unified = sfs.f_type == CGROUP2_SUPER_MAGIC;
        if (!w->unified && !(flags & CG_WRITER_ANY_FS))
                return cub_err_set(err, ENOTSUP, "cgroup root '%s' is not a cgroup v2 mount", cgroup_root);
        r = d->init(w, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

CgDriverKind cg_driver_default(void) {
        return sd_booted() > 0 ? CG_DRIVER_SYSTEMD : CG_DRIVER_CGROUPFS;
}

int cg_writer_new_driver(const char *cgroup_root, CgDriverKind driver, CgWriter **ret, CubError *err) {
        return cg_writer_new_full(cgroup_root, driver, 0, ret, err);
}

int cg_writer_new(const char *cgroup_root, CgWriter **ret, CubError *err) {
        return cg_writer_new_full(cgroup_root, CG_DRIVER_CGROUPFS, 0, ret, err);
}

CgWriter *cg_writer_free(CgWriter *w) {
        if (!w)
                return NULL;
        if (w->driver && w->data)
                w->driver->done(w);
        if (w->root_fd >= 0)
                (void) close(w->root_fd);
        free(w->root);
        free(w);
        return NULL;
}

CgDriverKind cg_writer_driver(const CgWriter *w) {
        return w->driver->kind;
}

/* The kernel keeps memory limits in pages: 100M reads back as the page
 * below. Anything else must read back exactly. */
static bool reads_back_as(const char *file, const char *wrote, const char *got) {
        uint64_t w, g;
        long page;

        if (strcmp(wrote, got) == 0)
                return true;
        if (strncmp(file, "memory.", 7) != 0)
                return false;
        page = sysconf(_SC_PAGESIZE);
        if (page <= 0 || cub_safe_atou64(wrote, &w) < 0 || cub_safe_atou64(got, &g) < 0)
                return false;
        return g == w - w % (uint64_t) page;
}

int cg_writer_apply(CgWriter *w, const CgGroupValues *g, CubError *err) {
        char buf[CG_FILE_VALUE_MAX + 16];
        int r;

        r = check_path(g->path, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < g->n_files; i++)
                if (!g->files[i].name || !*g->files[i].name || strchr(g->files[i].name, '/'))
                        return cub_err_set(err, EINVAL, "cgroup '%s': bad file name '%s'", g->path,
                                           g->files[i].name ? g->files[i].name : "");
        r = w->driver->exists(w, g->path, err);
        if (r == 0)
                r = w->driver->create(w, g, err);
        if (r < 0)
                return r;
        r = w->driver->update(w, g, err);
        if (r < 0)
                return r;
        /* read every file back: a silently dropped write is an error */
        for (size_t i = 0; i < g->n_files; i++) {
                r = w->driver->read(w, g->path, g->files[i].name, buf, sizeof(buf), err);
                if (r < 0)
                        return r;
                if (!reads_back_as(g->files[i].name, g->files[i].value, buf))
                        return cub_err_set(err, EIO, "cgroup '%s': '%s' reads '%s' after writing '%s'", g->path,
                                           g->files[i].name, buf, g->files[i].value);
        }
        return 0;
}

int cg_writer_remove(CgWriter *w, const char *path, CubError *err) {
        int r = check_path(path, err);

        return r < 0 ? r : w->driver->destroy(w, path, err);
}

int cg_writer_wait_unpopulated(CgWriter *w, const char *path, uint64_t timeout_usec, CubError *err) {
        int r = check_path(path, err);

        return r < 0 ? r : w->driver->wait_unpopulated(w, path, timeout_usec, err);
}

int cg_writer_remove_wait(CgWriter *w, const char *path, uint64_t timeout_usec, CubError *err) {
        CubError werr = {};
        int r, rw;

        r = check_path(path, err);
        if (r < 0)
                return r;
        rw = w->driver->wait_unpopulated(w, path, timeout_usec, &werr);
        if (rw < 0 && rw != -ETIMEDOUT) {
                if (err)
                        *err = werr;
                return rw;
        }
        r = w->driver->destroy(w, path, err);
        if (r < 0 && rw == -ETIMEDOUT) {
                /* the timeout says more than the EBUSY it caused */
                if (err)
                        *err = werr;
                return rw;
        }
        return r;
}

int cg_writer_read(CgWriter *w, const char *path, const char *file, char *buf, size_t size, CubError *err) {
        int r = check_path(path, err);

        if (r < 0)
                return r;
        if (!file || !*file || strchr(file, '/'))
                return cub_err_set(err, EINVAL, "cgroup '%s': bad file name '%s'", path, file ? file : "");
        return w->driver->read(w, path, file, buf, size, err);
}
