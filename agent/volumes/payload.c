/* SPDX-License-Identifier: Apache-2.0 */
/* The files of downwardAPI and projected volumes: each item's content (the
 * downward API's value, or what the API server provides: a service account
 * token, a ConfigMap's keys), written with the AtomicWriter. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "volumes.h"

void vol_api_files_free(VolApiFile *f, size_t n) {
        for (size_t i = 0; f && i < n; i++) {
                free(f[i].path);
                free(f[i].data);
        }
        free(f);
}

/* the files of a downwardAPI or projected volume (files[] own their path
 * and data), a configMap item without a key giving one file per key */
typedef struct Payload {
        VolFile *files;
        size_t n, cap;
} Payload;

static void payload_done(Payload *p) {
        for (size_t i = 0; i < p->n; i++) {
                free((char *) p->files[i].path);
                free((char *) p->files[i].data);
        }
        free(p->files);
}

/* takes path and data (NULL: out of memory, the other freed) */
static int payload_add(Payload *p, char *path, char *data, size_t size, int32_t mode, CubError *err) {
        if (path && data && p->n == p->cap) {
                size_t cap = p->cap ? p->cap * 2 : 8;
                VolFile *f = realloc(p->files, cap * sizeof(*f));

                if (f) {
                        p->files = f;
                        p->cap = cap;
                }
        }
        if (!path || !data || p->n == p->cap) {
                free(path);
                free(data);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        p->files[p->n++] = (VolFile){ .path = path, .data = data, .size = size, .mode = mode };
        return 0;
}

int vol_items_write(const char *path, const Pod *pod, const PodVolume *v, const VolNode *node, CubError *err) {
        Payload p = {};
        int r = 0;

        for (size_t i = 0; i < v->n_items && r == 0; i++) {
                const PodDownwardFile *f = &v->items[i];
                int32_t mode = f->mode_set ? f->mode : v->default_mode;
                VolApiFile *af = NULL;
                size_t n = 0;
                char *value = NULL;

                if (f->source == POD_PROJECTION_DOWNWARD_API) {
                        r = vol_downward_value(pod, f, node, &value, err);
                        if (r == 0)
                                r = payload_add(&p, strdup(f->path), value, value ? strlen(value) : 0, mode, err);
                        continue;
                }
                if (!node->api_files) {
                        r = cub_err_set(err, ENOTSUP, "%s: no API server to provide it (--kubeconfig)",
                                        f->source == POD_PROJECTION_SERVICE_ACCOUNT ? "serviceAccountToken"
                                        : f->source == POD_PROJECTION_SECRET        ? "secret"
                                                                                    : "configMap");
                        break;
                }
                r = node->api_files(node->api_userdata, pod, f, &af, &n, err);
                for (size_t k = 0; r == 0 && k < n; k++) {
                        r = payload_add(&p, af[k].path, af[k].data, af[k].size, mode, err);
                        af[k].path = af[k].data = NULL;
                }
                vol_api_files_free(af, n);
        }
        if (r == 0)
                r = vol_atomic_write(path, p.files, p.n, err);
        payload_done(&p);
        return r;
}

int vol_pod_refresh_api(const VolRoots *roots, const Pod *pod, const VolNode *node, CubError *err) {
        for (size_t i = 0; i < pod->n_volumes; i++) {
                const PodVolume *v = &pod->volumes[i];
                char path[PATH_MAX];
                int r;

                if (v->n_items == 0)
                        continue;
                r = vol_path(roots, pod->uid, v, path, sizeof(path), err);
                if (r == 0)
                        r = vol_items_write(path, pod, v, node, err);
                if (r < 0)
                        return cub_err_wrap(err, "MountVolume.SetUp failed for volume \"%s\" ", v->name);
        }
        return 0;
}
