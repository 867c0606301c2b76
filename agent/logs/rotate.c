/* SPDX-License-Identifier: Apache-2.0 */
/* The rotation pass: kubelet's containerLogManager.rotateLogs on the
 * running containers cubelet manages. Blocking (file work and CRI calls):
 * runs on a thread of its own, never on the loop. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../util/cleanup.h"
#include "logs.h"

int logs_compress(const char *src, const char *dst, CubError *err) {
        _cleanup_free_ char *tmp = NULL;
        char buf[65536];
        gzFile gz;
        ssize_t n;
        int fd, r = 0;

        if (asprintf(&tmp, "%s.tmp", src) < 0) /* kubelet's: <log>.tmp, then <log>.gz */
                return cub_err_set(err, ENOMEM, "out of memory");
        fd = open(src, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return cub_err_set(err, errno, "'%s': %s", src, strerror(errno));
        gz = gzopen(tmp, "wbe");
        if (!gz) {
                r = cub_err_set(err, errno ? errno : ENOMEM, "'%s': %s", tmp, strerror(errno ? errno : ENOMEM));
                close(fd);
                return r;
        }
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                if (gzwrite(gz, buf, (unsigned) n) != (int) n) {
                        r = cub_err_set(err, EIO, "'%s': gzip write failed", tmp);
                        break;
                }
        if (n < 0 && r == 0)
                r = cub_err_set(err, errno, "'%s': %s", src, strerror(errno));
        close(fd);
        if (gzclose(gz) != Z_OK && r == 0)
                r = cub_err_set(err, EIO, "'%s': gzip close failed", tmp);
        if (r == 0 && rename(tmp, dst) < 0)
                r = cub_err_set(err, errno, "'%s': %s", dst, strerror(errno));
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        if (unlink(src) < 0)
                return cub_err_set(err, errno, "'%s': %s", src, strerror(errno));
        return 0;
}

/* the names in log's directory that start with "<basename>." */
static char **rotated_names(const char *log) {
        const char *slash = strrchr(log, '/');
        _cleanup_free_ char *dir = slash ? strndup(log, (size_t) (slash - log)) : strdup(".");
        const char *base = slash ? slash + 1 : log;
        size_t n = 0, blen = strlen(base);
        char **l = calloc(1, sizeof(char *));
        struct dirent *de;
        DIR *d;

        if (!dir || !l || !(d = opendir(dir)))
                return l;
        while ((de = readdir(d))) {
                char **nl;

                if (strncmp(de->d_name, base, blen) != 0 || de->d_name[blen] != '.')
                        continue;
                nl = realloc(l, (n + 2) * sizeof(char *));
                if (!nl)
                        break;
                l = nl;
                l[n] = strdup(de->d_name);
                if (!l[n])
                        break;
                l[++n] = NULL;
        }
        closedir(d);
        return l;
}

static int rotate_one(CriClient *cri, const LogsPolicy *p, const char *id, const char *log, bool *ret_rotated,
                      CubError *err) {
        LogsRotatePlan plan = {};
        struct stat st;
        char **names, rotated[4096];
        int r;

        *ret_rotated = false;
        if (stat(log, &st) < 0) {
                /* the runtime lost it (removed by hand): have it reopened, as kubelet does */
                if (errno == ENOENT)
                        return cri_reopen_container_log(cri, id, err);
                return cub_err_set(err, errno, "'%s': %s", log, strerror(errno));
        }
        if (st.st_size < p->max_size)
                return 0;
        names = rotated_names(log);
        r = logs_rotate_plan(log, st.st_size, p->max_size, p->max_files, (const char *const *) names, &plan);
        for (size_t i = 0; names && names[i]; i++)
                free(names[i]);
        free(names);
        if (r < 0)
                return cub_err_set(err, -r, "'%s': rotation plan: %s", log, strerror(-r));
        for (size_t i = 0; plan.remove && plan.remove[i]; i++)
                if (unlink(plan.remove[i]) < 0 && errno != ENOENT) {
                        r = cub_err_set(err, errno, "failed to remove old log '%s': %s", plan.remove[i],
                                        strerror(errno));
                        goto out;
                }
        for (size_t i = 0; plan.compress && plan.compress[i]; i++) {
                _cleanup_free_ char *gz = NULL;

                if (asprintf(&gz, "%s.gz", plan.compress[i]) < 0) {
                        r = cub_err_set(err, ENOMEM, "out of memory");
                        goto out;
                }
                r = logs_compress(plan.compress[i], gz, err);
                if (r < 0)
                        goto out;
        }
        r = logs_rotated_name(log, time(NULL), rotated, sizeof(rotated));
        if (r < 0) {
                r = cub_err_set(err, -r, "'%s': %s", log, strerror(-r));
                goto out;
        }
        if (rename(log, rotated) < 0) {
                r = cub_err_set(err, errno, "failed to rotate log '%s' to '%s': %s", log, rotated, strerror(errno));
                goto out;
        }
        r = cri_reopen_container_log(cri, id, err);
        if (r < 0) {
                /* put it back so the next round can try again (kubelet's) */
                (void) rename(rotated, log);
                (void) cub_err_wrap(err, "failed to reopen container log '%s'", id);
                goto out;
        }
        *ret_rotated = true;
out:
        logs_rotate_plan_done(&plan);
        return r;
}

/* Whether the container's log, where kubelet's layout puts it (cubelet
 * created it there: the pod labels, the container's name and attempt),
 * is under the limit. Only a log at the limit, or one that is not there,
 * costs a ContainerStatus call for its real path: asking it of every
 * running container every 10 s was most of an idle node's CPU (110 pods,
 * measured in the bench). */
static bool log_below_limit(const LogsPolicy *p, const CriContainer *c) {
        const char *uid = cri_kv_get(c->labels, "cubelet.io/pod-uid"),
                   *name = cri_kv_get(c->labels, "cubelet.io/pod-name"),
                   *ns = cri_kv_get(c->labels, "cubelet.io/pod-namespace");
        _cleanup_free_ char *dir = NULL, *rel = NULL, *path = NULL;
        struct stat st;

        if (!uid || !name || !ns || !c->name)
                return false;
        dir = logs_pod_dir(p->root, ns, name, uid);
        rel = logs_container_path(c->name, c->attempt);
        if (!dir || !rel || asprintf(&path, "%s/%s", dir, rel) < 0)
                return false;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < p->max_size;
}

int logs_rotate_pass(CriClient *cri, const LogsPolicy *p, size_t *ret_rotated, CubError *err) {
        static const char *const selector[] = { "cubelet.io/managed", "true", NULL };
        CriContainer *ct = NULL;
        size_t n = 0;
        int r, first = 0;

        *ret_rotated = 0;
        r = cri_list_containers(cri, NULL, selector, &ct, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                CriContainerStatus st = {};
                CubError e = {};
                bool rotated = false;

                if (ct[i].state != CRI_CONTAINER_RUNNING || log_below_limit(p, &ct[i]))
                        continue;
                r = cri_container_status(cri, ct[i].id, &st, &e);
                /* a log path outside the root is not ours to rotate */
                if (r >= 0 && st.log_path && strncmp(st.log_path, p->root, strlen(p->root)) == 0)
                        r = rotate_one(cri, p, ct[i].id, st.log_path, &rotated, &e);
                cri_container_status_done(&st);
                if (rotated)
                        (*ret_rotated)++;
                if (r < 0 && first == 0) {
                        first = r;
                        *err = e;
                }
        }
        cri_containers_free(ct, n);
        return first;
}

/* ---- pod log directories of pods that are gone ----------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* the UID part of "<ns>_<name>_<uid>" */
static const char *dir_uid(const char *name) {
        const char *u = strrchr(name, '_');

        return u && u != name && strchr(name, '_') != u ? u + 1 : NULL;
}

int logs_gc_pass(CriClient *cri, const char *root, int64_t min_age_s, size_t *ret_removed, CubError *err) {
        static const char *const selector[] = { "cubelet.io/managed", "true", NULL };
        CriSandbox *sb = NULL;
        size_t n = 0;
        struct dirent *de;
        time_t now = time(NULL);
        DIR *d;
        int r;

        *ret_removed = 0;
        /* without the runtime's answer nothing is removed */
        r = cri_list_pod_sandboxes(cri, selector, &sb, &n, err);
        if (r < 0)
                return r;
        d = opendir(root);
        if (!d) {
                r = errno == ENOENT ? 0 : cub_err_set(err, errno, "'%s': %s", root, strerror(errno));
                cri_sandboxes_free(sb, n);
                return r;
        }
        while ((de = readdir(d))) {
                const char *uid = dir_uid(de->d_name);
                _cleanup_free_ char *path = NULL;
                bool live = false;
                struct stat st;

                if (de->d_name[0] == '.' || !uid || !*uid)
                        continue;
                for (size_t i = 0; i < n && !live; i++)
                        live = sb[i].uid && strcmp(sb[i].uid, uid) == 0;
                if (live || asprintf(&path, "%s/%s", root, de->d_name) < 0)
                        continue;
                if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || now - st.st_mtime < min_age_s)
                        continue;
                if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0)
                        (*ret_removed)++;
        }
        closedir(d);
        cri_sandboxes_free(sb, n);
        return 0;
}
