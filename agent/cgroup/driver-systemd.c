/* SPDX-License-Identifier: Apache-2.0 */
/* The systemd driver's place in the table: kubepods.slice units through
 * sd-bus come with a later issue. Until then every operation fails with
 * -EOPNOTSUPP and says so, and the table keeps its shape (crun's stubs for
 * a driver built without systemd). */
#include <errno.h>

#include "cgroup-internal.h"

#define NOT_YET "cgroup driver 'systemd' is not implemented yet (use cgroupDriver: cgroupfs)"

static int systemd_init(CgWriter *w, CubError *err) {
        (void) w;
        return cub_err_set(err, EOPNOTSUPP, NOT_YET);
}

static int systemd_exists(CgWriter *w, const char *path, CubError *err) {
        (void) w;
        return cub_err_set(err, EOPNOTSUPP, "cgroup '%s': " NOT_YET, path);
}

static int systemd_create(CgWriter *w, const CgGroupValues *g, CubError *err) {
        (void) w;
        return cub_err_set(err, EOPNOTSUPP, "cgroup '%s': create: " NOT_YET, g->path);
}

static int systemd_update(CgWriter *w, const CgGroupValues *g, CubError *err) {
        (void) w;
        return cub_err_set(err, EOPNOTSUPP, "cgroup '%s': write: " NOT_YET, g->path);
}

static int systemd_read(CgWriter *w, const char *path, const char *file, char *buf, size_t size, CubError *err) {
        (void) w;
        (void) buf;
        (void) size;
        return cub_err_set(err, EOPNOTSUPP, "cgroup '%s': read '%s': " NOT_YET, path, file);
}

static int systemd_wait_unpopulated(CgWriter *w, const char *path, uint64_t timeout_usec, CubError *err) {
        (void) w;
        (void) timeout_usec;
        return cub_err_set(err, EOPNOTSUPP, "cgroup '%s': wait: " NOT_YET, path);
}

static int systemd_destroy(CgWriter *w, const char *path, CubError *err) {
        (void) w;
        return cub_err_set(err, EOPNOTSUPP, "cgroup '%s': remove: " NOT_YET, path);
}

const CgDriver cg_driver_systemd = {
        .name = "systemd",
        .kind = CG_DRIVER_SYSTEMD,
        .init = systemd_init,
        .exists = systemd_exists,
        .create = systemd_create,
        .update = systemd_update,
        .read = systemd_read,
        .wait_unpopulated = systemd_wait_unpopulated,
        .destroy = systemd_destroy,
};
