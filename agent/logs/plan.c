/* SPDX-License-Identifier: Apache-2.0 */
/* Rotation decisions, kubelet's container log manager (rotateLog:
 * cleanupUnusedLogs, removeExcessLogs, compress the rest, rotate). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logs.h"

#define GZ ".gz"
#define TMP ".tmp"

static bool has_suffix(const char *s, const char *suffix) {
        size_t n = strlen(s), m = strlen(suffix);

        return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int push(char ***l, size_t *n, const char *dir, const char *name) {
        char **nl = realloc(*l, (*n + 2) * sizeof(char *));

        if (!nl)
                return -ENOMEM;
        *l = nl;
        if (asprintf(&nl[*n], "%s%s", dir, name) < 0) {
                nl[*n] = NULL;
                return -ENOMEM;
        }
        nl[++*n] = NULL;
        return 0;
}

static void strv_free(char **l) {
        for (size_t i = 0; l && l[i]; i++)
                free(l[i]);
        free(l);
}

void logs_rotate_plan_done(LogsRotatePlan *p) {
        strv_free(p->remove);
        strv_free(p->compress);
        *p = (LogsRotatePlan){};
}

int logs_rotate_plan(const char *log, int64_t size, int64_t max_size, int max_files, const char *const *rotated,
                     LogsRotatePlan *ret) {
        const char *slash = strrchr(log, '/');
        size_t dir_len = slash ? (size_t) (slash - log + 1) : 0;
        char dir[4096];
        const char *base = log + dir_len;
        size_t n = 0, n_keep = 0, n_rm = 0, n_gz = 0, max_rotated;
        char **keep = NULL;
        int r = 0;

        *ret = (LogsRotatePlan){};
        if (size < max_size)
                return 0;
        if (dir_len >= sizeof(dir))
                return -ENAMETOOLONG;
        memcpy(dir, log, dir_len);
        dir[dir_len] = '\0';
        ret->rotate = true;
        while (rotated && rotated[n])
                n++;
        keep = calloc(n + 1, sizeof(char *));
        if (!keep)
                return -ENOMEM;
        /* cleanupUnusedLogs: .tmp leftovers, and uncompressed ones with a .gz twin */
        for (size_t i = 0; i < n && r >= 0; i++) {
                const char *f = rotated[i];
                bool twin = false;

                if (strncmp(f, base, strlen(base)) != 0 || f[strlen(base)] != '.')
                        continue; /* not one of this log's */
                if (!has_suffix(f, GZ))
                        for (size_t k = 0; k < n; k++)
                                if (has_suffix(rotated[k], GZ) && strlen(rotated[k]) == strlen(f) + 3 &&
                                    strncmp(rotated[k], f, strlen(f)) == 0)
                                        twin = true;
                if (has_suffix(f, TMP) || twin)
                        r = push(&ret->remove, &n_rm, dir, f);
                else
                        keep[n_keep++] = (char *) f;
        }
        /* removeExcessLogs: oldest first, keep max_files - 2 */
        qsort(keep, n_keep, sizeof(char *), cmp_str);
        max_rotated = max_files > 2 ? (size_t) max_files - 2 : 0;
        for (size_t i = 0; i < n_keep && r >= 0; i++) {
                if (i + max_rotated < n_keep)
                        r = push(&ret->remove, &n_rm, dir, keep[i]);
                else if (!has_suffix(keep[i], GZ))
                        r = push(&ret->compress, &n_gz, dir, keep[i]);
        }
        free(keep);
        if (r < 0)
                logs_rotate_plan_done(ret);
        return r;
}
