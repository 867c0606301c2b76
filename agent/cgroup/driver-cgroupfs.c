/* SPDX-License-Identifier: Apache-2.0 */
/* The cgroupfs driver: kubepods groups created and written through
 * libcgroup on a cgroup v2 mount. libcgroup's ECG* codes are turned into
 * -errno here and nowhere else. */
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "cgroup.h"

struct CgWriter {
        char *root;
        pthread_mutex_t lock; /* libcgroup keeps global state: one caller at a time */
};

static int cg_errno(int ecg) {
        if (ecg == 0)
                return 0;
        if (ecg == ECGOTHER) {
                int e = cgroup_get_last_errno();
                return e > 0 ? -e : -EIO;
        }
        switch (ecg) {
        case ECGROUPNOTEXIST:
                return -ENOENT;
        case ECGROUPNOTALLOWED:
        case ECGROUPNOTOWNER:
                return -EPERM;
        case ECGROUPNOTMOUNTED:
        case ECGROUPSUBSYSNOTMOUNTED:
                return -ENODEV;
        default:
                return -EIO;
        }
}

int cg_writer_new(const char *cgroup_root, CgWriter **ret, CubError *err) {
        struct statfs sfs;
        CgWriter *w;
        int r;

        if (statfs(cgroup_root, &sfs) < 0)
                return cub_err_set(err, errno, "cgroup root '%s': %s", cgroup_root, strerror(errno));
        if (sfs.f_type != CGROUP2_SUPER_MAGIC)
                return cub_err_set(err, ENOTSUP, "cgroup root '%s' is not a cgroup v2 mount", cgroup_root);
        r = cgroup_init();
        if (r != 0)
                return cub_err_set(err, -cg_errno(r), "cgroup root '%s': libcgroup: %s", cgroup_root,
                                   cgroup_strerror(r));
        w = calloc(1, sizeof(*w));
        if (!w || !(w->root = strdup(cgroup_root))) {
                free(w);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        pthread_mutex_init(&w->lock, NULL);
        *ret = w;
        return 0;
}

CgWriter *cg_writer_free(CgWriter *w) {
        if (!w)
                return NULL;
        pthread_mutex_destroy(&w->lock);
        free(w->root);
        free(w);
        return NULL;
}

static void cgroup_free_one(struct cgroup *cg) {
        cgroup_free(&cg);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct cgroup *, cgroup_free_one);

static bool group_exists(const CgWriter *w, const char *path) {
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "%s/%s", w->root, path) < 0)
                return false;
        return access(p, F_OK) == 0;
}

static int apply_locked(CgWriter *w, const CgGroupValues *g, CubError *err) {
        _cleanup_(cgroup_free_onep) struct cgroup *cg = NULL;
        bool exists = group_exists(w, g->path);
        int r;

        cg = cgroup_new_cgroup(g->path);
        if (!cg)
                return cub_err_set(err, ENOMEM, "cgroup '%s': out of memory", g->path);
        for (size_t i = 0; i < g->n_files; i++) {
                char controller[32];
                const char *dot = strchr(g->files[i].name, '.');
                struct cgroup_controller *ctrl;
                size_t len = dot ? (size_t) (dot - g->files[i].name) : 0;

                if (len == 0 || len >= sizeof(controller))
                        return cub_err_set(err, EINVAL, "cgroup '%s': bad file name '%s'", g->path, g->files[i].name);
                memcpy(controller, g->files[i].name, len);
                controller[len] = '\0';
                ctrl = cgroup_get_controller(cg, controller);
                if (!ctrl)
                        ctrl = cgroup_add_controller(cg, controller);
                if (!ctrl)
                        return cub_err_set(err, ENOMEM, "cgroup '%s': controller '%s'", g->path, controller);
                r = cgroup_set_value_string(ctrl, g->files[i].name, g->files[i].value);
                if (r != 0)
                        return cub_err_set(err, -cg_errno(r), "cgroup '%s': set '%s': %s", g->path, g->files[i].name,
                                           cgroup_strerror(r));
        }
        r = exists ? cgroup_modify_cgroup(cg) : cgroup_create_cgroup(cg, /* ignore_ownership= */ 0);
        if (r != 0) {
                r = cg_errno(r);
                return cub_err_set(err, -r, "cgroup '%s': %s: %s", g->path, exists ? "write" : "create", strerror(-r));
        }
        return 0;
}

int cg_writer_apply(CgWriter *w, const CgGroupValues *g, CubError *err) {
        char buf[CG_FILE_VALUE_MAX + 16];
        int r;

        pthread_mutex_lock(&w->lock);
        r = apply_locked(w, g, err);
        pthread_mutex_unlock(&w->lock);
        if (r < 0)
                return r;
        /* read every file back: a silently dropped write is an error */
        for (size_t i = 0; i < g->n_files; i++) {
                r = cg_writer_read(w, g->path, g->files[i].name, buf, sizeof(buf), err);
                if (r < 0)
                        return r;
                if (strcmp(buf, g->files[i].value) != 0)
                        return cub_err_set(err, EIO, "cgroup '%s': '%s' reads '%s' after writing '%s'", g->path,
                                           g->files[i].name, buf, g->files[i].value);
        }
        return 0;
}

int cg_writer_remove(CgWriter *w, const char *path, CubError *err) {
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "%s/%s", w->root, path) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (rmdir(p) < 0 && errno != ENOENT)
                return cub_err_set(err, errno, "cgroup '%s': remove: %s", path, strerror(errno));
        return 0;
}

int cg_writer_read(CgWriter *w, const char *path, const char *file, char *buf, size_t size, CubError *err) {
        _cleanup_free_ char *p = NULL, *data = NULL;
        size_t len;
        int r;

        if (asprintf(&p, "%s/%s/%s", w->root, path, file) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = cub_read_file(p, 4096, &data, &len, err);
        if (r < 0)
                return r;
        while (len > 0 && data[len - 1] == '\n')
                data[--len] = '\0';
        (void) snprintf(buf, size, "%s", data);
        return 0;
}
