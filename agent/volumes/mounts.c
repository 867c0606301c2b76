/* SPDX-License-Identifier: Apache-2.0 */
/* A container's mounts of its pod's volumes: subPath resolved and checked
 * inside its volume (kubelet's checks), subPathExpr expanded, propagation. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "volumes.h"

/* ---- subPath and mounts --------------------------------------------------------------------- */

int vol_subpath(const char *base, const char *sub, char **ret, CubError *err) {
        _cleanup_free_ char *rbase = realpath(base, NULL), *joined = NULL, *real = NULL;
        struct stat st;
        size_t n;

        if (!rbase)
                return cub_err_set(err, errno, "%s: %s", base, strerror(errno));
        if (asprintf(&joined, "%s/%s", rbase, sub) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (lstat(joined, &st) < 0) {
                struct stat bs;
                int r;

                if (errno != ENOENT)
                        return cub_err_set(err, errno, "%s: %s", joined, strerror(errno));
                /* created with the mode of the volume, never through a
                 * symlink that leads out (checked below) */
                if (stat(rbase, &bs) < 0)
                        return cub_err_set(err, errno, "%s: %s", rbase, strerror(errno));
                r = cub_mkdir_p(joined, bs.st_mode & 07777);
                if (r < 0)
                        return cub_err_set(err, -r, "failed to create subPath directory %s: %s", sub, strerror(-r));
        }
        real = realpath(joined, NULL);
        if (!real)
                return cub_err_set(err, errno, "%s: %s", joined, strerror(errno));
        n = strlen(rbase);
        if (strncmp(real, rbase, n) != 0 || (real[n] != '/' && real[n] != '\0'))
                return cub_err_set(err, EPERM, "subpath \"%s\" not within volume path \"%s\"", real, rbase);
        *ret = TAKE_PTR(real);
        return 0;
}

void vol_mounts_free(VolMount *m, size_t n) {
        for (size_t i = 0; m && i < n; i++) {
                free(m[i].container_path);
                free(m[i].host_path);
        }
        free(m);
}

int vol_container_mounts(const VolRoots *roots, const Pod *pod, const PodContainer *c, char *const *envs,
                         VolMount **ret, size_t *ret_n, CubError *err) {
        VolMount *l = calloc(c->n_volume_mounts + 1, sizeof(VolMount));
        size_t n = 0;
        int r = 0;

        if (!l)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < c->n_volume_mounts && r == 0; i++) {
                const PodVolumeMount *m = &c->volume_mounts[i];
                const PodVolume *v = NULL;
                char path[PATH_MAX];
                _cleanup_free_ char *sub = NULL;

                for (size_t k = 0; k < pod->n_volumes; k++)
                        if (strcmp(pod->volumes[k].name, m->name) == 0)
                                v = &pod->volumes[k];
                if (!v) {
                        r = cub_err_set(err, ENOENT, "cannot find volume \"%s\" to mount into container \"%s\"",
                                        m->name, c->name);
                        break;
                }
                r = vol_path(roots, pod->uid, v, path, sizeof(path), err);
                if (r < 0)
                        break;
                if (m->sub_path_expr && *m->sub_path_expr) {
                        _cleanup_free_ char *expanded = NULL;

                        r = vol_expand(m->sub_path_expr, envs, &expanded, err);
                        if (r == 0 && (expanded[0] == '/' || strstr(expanded, "..")))
                                r = cub_err_set(err, EINVAL,
                                                "error SubPath `%s` must not be an absolute path or "
                                                "contain '..'",
                                                expanded);
                        if (r < 0) {
                                cub_err_wrap(err,
                                             "failed to prepare subPath for volumeMount \"%s\" of container "
                                             "\"%s\"",
                                             m->name, c->name);
                                break;
                        }
                        r = vol_subpath(path, expanded, &sub, err);
                } else if (m->sub_path && *m->sub_path)
                        r = vol_subpath(path, m->sub_path, &sub, err);
                if (r < 0) {
                        cub_err_wrap(err, "failed to prepare subPath for volumeMount \"%s\" of container \"%s\"",
                                     m->name, c->name);
                        break;
                }
                l[n].container_path = strdup(m->mount_path);
                l[n].host_path = strdup(sub ? sub : path);
                /* kubelet mounts the volumes of files it writes read-only */
                l[n].readonly = m->read_only || (v->kind != POD_VOLUME_HOST_PATH && v->kind != POD_VOLUME_EMPTY_DIR);
                l[n].propagation =
                        !m->mount_propagation || strcmp(m->mount_propagation, "None") == 0 ? VOL_PROPAGATION_PRIVATE
                        : strcmp(m->mount_propagation, "HostToContainer") == 0 ? VOL_PROPAGATION_HOST_TO_CONTAINER
                                                                               : VOL_PROPAGATION_BIDIRECTIONAL;
                n++;
                if (!l[n - 1].container_path || !l[n - 1].host_path)
                        r = cub_err_set(err, ENOMEM, "out of memory");
        }
        if (r < 0) {
                vol_mounts_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}
