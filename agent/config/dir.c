/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "podsrc.h"

#define MANIFEST_MAX (1024 * 1024)

static bool has_suffix(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcmp(s + a - b, suffix) == 0;
}

bool podsrc_ignored_name(const char *name) {
        size_t n = strlen(name);

        return n == 0 || name[0] == '.' || has_suffix(name, "~") || has_suffix(name, ".swp") ||
               has_suffix(name, ".swx") || has_suffix(name, ".tmp") || (name[0] == '#' && name[n - 1] == '#') ||
               strcmp(name, "4913") == 0;
}

void podsrc_set_done(PodsrcSet *s) {
        for (size_t i = 0; i < s->n; i++)
                podsrc_entry_done(&s->items[i]);
        free(s->items);
        *s = (PodsrcSet){};
}

/* Reads one manifest; -ENOENT (nothing to read) for an ignored name, a
 * file that is gone, not a regular file, or empty (still being written). */
static int read_entry(const char *dir, const char *name, const char *node_name, PodsrcCachedFn cached, void *userdata,
                      PodsrcEntry *e) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        CubError perr = {};
        struct stat st;
        size_t len;
        int r;

        if (podsrc_ignored_name(name))
                return -ENOENT;
        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        /* an empty file is one being written (the rescan of another event can race with the
         * writer): it is read once its close or rename arrives */
        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
                return -ENOENT;
        *e = (PodsrcEntry){ .path = TAKE_PTR(path),
                            .id = { .dev = (uint64_t) st.st_dev,
                                    .ino = (uint64_t) st.st_ino,
                                    .size = (int64_t) st.st_size,
                                    .mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                                    .ctime_ns = (int64_t) st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec } };
        if (cached && (e->cached = cached(e->path, &e->id, userdata)))
                return 0;
        r = cub_read_file(e->path, MANIFEST_MAX, &buf, &len, &perr);
        if (r >= 0)
                r = pod_decode_static(buf, len, e->path, POD_FORMAT_AUTO, node_name, POD_SOURCE_FILE, e->path, &e->pod,
                                      &perr);
        if (r < 0) {
                e->error = strdup(perr.msg);
                if (!e->error) {
                        free(e->path);
                        *e = (PodsrcEntry){};
                        return -ENOMEM;
                }
        }
        return 0;
}

int podsrc_file_read(const char *dir, const char *name, const char *node_name, PodsrcEntry *ret) {
        return read_entry(dir, name, node_name, NULL, NULL, ret);
}

void podsrc_entry_done(PodsrcEntry *e) {
        free(e->path);
        pod_free(e->pod);
        free(e->error);
        *e = (PodsrcEntry){};
}

/* the pod an entry defines, decoded or cached */
static const Pod *entry_pod(const PodsrcEntry *e) {
        return e->pod ? e->pod : e->cached;
}

int podsrc_dir_scan(const char *dir, const char *node_name, PodsrcCachedFn cached, void *userdata, PodsrcSet *ret,
                    CubError *err) {
        PodsrcSet set = {};
        struct dirent **names = NULL;
        int n;

        n = scandir(dir, &names, NULL, alphasort);
        if (n < 0)
                return cub_err_set(err, errno, "manifest directory '%s': %s", dir, strerror(errno));
        set.items = calloc((size_t) n + 1, sizeof(PodsrcEntry));
        for (int i = 0; i < n; i++) {
                PodsrcEntry *e;

                const Pod *ep;

                if (!set.items || read_entry(dir, names[i]->d_name, node_name, cached, userdata, &set.items[set.n]) < 0)
                        continue;
                e = &set.items[set.n++];
                ep = entry_pod(e);
                if (ep)
                        for (size_t j = 0; j + 1 < set.n; j++) {
                                const Pod *o = entry_pod(&set.items[j]);
                                CubError perr = {};

                                if (o && strcmp(o->name, ep->name) == 0 && strcmp(o->namespace_, ep->namespace_) == 0) {
                                        (void) cub_err_set(&perr, EEXIST, "%s: pod %s/%s is already defined by '%s'",
                                                           e->path, o->namespace_, o->name, set.items[j].path);
                                        e->pod = pod_free(e->pod);
                                        e->cached = NULL;
                                        e->error = strdup(perr.msg);
                                        break;
                                }
                        }
        }
        for (int i = 0; i < n; i++)
                free(names[i]);
        free(names);
        if (!set.items)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret = set;
        return 0;
}
