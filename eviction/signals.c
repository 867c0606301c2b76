/* SPDX-License-Identifier: Apache-2.0 */
/* Signal readers: /proc and cgroup v2 files, statvfs, PSI files and PSI
 * triggers. The only impure file of eviction/; every root is a parameter
 * so tests read fixture trees. Errors name the file. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../agent/util/cleanup.h"
#include "../agent/util/fileio.h"
#include "../agent/util/meminfo.h"
#include "../agent/util/parse.h"
#include "eviction-internal.h"

#define SIGNAL_FILE_MAX (256 * 1024)

static int read_text(const char *path, char **ret, CubError *err) {
        size_t len;

        return cub_read_file(path, SIGNAL_FILE_MAX, ret, &len, err);
}

static int path_join(char **ret, CubError *err, const char *a, const char *b, const char *c) {
        if (asprintf(ret, "%s%s%s%s%s", a, b && *b ? "/" : "", b ? b : "", c && *c ? "/" : "", c ? c : "") < 0) {
                *ret = NULL;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        return 0;
}

/* The first token of text, without its trailing newline, as an integer. */
static int parse_u64_token(const char *text, size_t len, uint64_t *ret) {
        char buf[DECIMAL_STR_MAX(uint64_t)];

        if (len == 0 || len >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, text, len);
        buf[len] = '\0';
        return cub_safe_atou64(buf, ret);
}

/* Reads a file holding one integer (or "max" when is_max is not NULL). */
static int read_u64_file(const char *path, uint64_t *ret, bool *ret_is_max, CubError *err) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_text(path, &text, err);
        if (r < 0)
                return r;
        len = strcspn(text, "\n");
        if (ret_is_max) {
                *ret_is_max = len == 3 && memcmp(text, "max", 3) == 0;
                if (*ret_is_max) {
                        *ret = 0;
                        return 0;
                }
        }
        if (parse_u64_token(text, len, ret) < 0)
                return cub_err_set(err, EINVAL, "'%s': not a number: \"%.*s\"", path, (int) (len > 40 ? 40 : len),
                                   text);
        return 0;
}

/*
 * Finds "key<sep>value" at the start of a line of text and parses the
 * integer value (blanks skipped; a " kB" suffix multiplies by 1024 when
 * kb). -ENOENT when absent.
 */
static int find_key(const char *text, const char *key, bool kb, uint64_t *ret) {
        size_t klen = strlen(key);

        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                const char *v;
                size_t n;
                uint64_t x;

                if (strncmp(line, key, klen) != 0 || !strchr(": \t", line[klen]))
                        continue;
                v = line + klen;
                if (*v == ':')
                        v++;
                v += strspn(v, " \t");
                n = strspn(v, "0123456789");
                if (parse_u64_token(v, n, &x) < 0)
                        return -EINVAL;
                if (kb && strncmp(v + n, " kB", 3) == 0) {
                        if (x > UINT64_MAX / 1024)
                                return -ERANGE;
                        x *= 1024;
                }
                *ret = x;
                return 0;
        }
        return -ENOENT;
}

static int read_key(const char *path, const char *text, const char *key, bool kb, uint64_t *ret, CubError *err) {
        int r = find_key(text, key, kb, ret);

        if (r == -ENOENT)
                return cub_err_set(err, ENOENT, "'%s': no '%s' line", path, key);
        if (r < 0)
                return cub_err_set(err, -r, "'%s': bad value of '%s'", path, key);
        return 0;
}

/* usage - inactive_file of <dir>/memory.stat, floored at 0. */
static int working_set(const char *dir, uint64_t usage, uint64_t *ret, CubError *err) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        uint64_t inactive = 0;
        int r;

        r = path_join(&path, err, dir, "memory.stat", NULL);
        if (r < 0)
                return r;
        r = read_text(path, &text, err);
        if (r < 0)
                return r;
        r = read_key(path, text, "inactive_file", /* kb= */ false, &inactive, err);
        if (r < 0)
                return r;
        *ret = inactive > usage ? 0 : usage - inactive;
        return 0;
}

int evict_read_node_memory(const char *proc_root, const char *cgroup_root, EvictSignalObservation *ret, CubError *err) {
        CubMeminfo mi;
        uint64_t total, free_, ws;
        int r;

        r = cub_meminfo_read(proc_root, &mi, err);
        if (r < 0)
                return r;
        total = mi.mem_total;
        free_ = mi.mem_free;
        r = working_set(cgroup_root, free_ > total ? 0 : total - free_, &ws, err);
        if (r < 0)
                return r;
        *ret = (EvictSignalObservation){
                .present = true,
                .capacity = total,
                .available = ws > total ? 0 : total - ws,
        };
        return 0;
}

int evict_read_group_memory(const char *cgroup_root, const char *group, uint64_t allocatable,
                            EvictSignalObservation *ret, CubError *err) {
        _cleanup_free_ char *dir = NULL, *path = NULL;
        uint64_t max, current, ws;
        bool is_max;
        int r;

        r = path_join(&dir, err, cgroup_root, group, NULL);
        if (r < 0)
                return r;
        r = path_join(&path, err, dir, "memory.max", NULL);
        if (r < 0)
                return r;
        r = read_u64_file(path, &max, &is_max, err);
        if (r < 0)
                return r;
        if (is_max)
                max = allocatable;
        free(path);
        r = path_join(&path, err, dir, "memory.current", NULL);
        if (r < 0)
                return r;
        r = read_u64_file(path, &current, NULL, err);
        if (r < 0)
                return r;
        r = working_set(dir, current, &ws, err);
        if (r < 0)
                return r;
        *ret = (EvictSignalObservation){
                .present = true,
                .capacity = max,
                .available = ws > max ? 0 : max - ws,
        };
        return 0;
}

int evict_read_cgroup_working_set(const char *cgroup_root, const char *group, uint64_t *ret, CubError *err) {
        _cleanup_free_ char *dir = NULL, *path = NULL;
        uint64_t current;
        int r;

        r = path_join(&dir, err, cgroup_root, group, NULL);
        if (r < 0)
                return r;
        r = path_join(&path, err, dir, "memory.current", NULL);
        if (r < 0)
                return r;
        r = read_u64_file(path, &current, NULL, err);
        if (r < 0)
                return r;
        return working_set(dir, current, ret, err);
}

int evict_read_cgroup_pids(const char *cgroup_root, const char *group, uint64_t *ret, CubError *err) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = path_join(&path, err, cgroup_root, group, "pids.current");
        if (r < 0)
                return r;
        return read_u64_file(path, ret, NULL, err);
}

int evict_read_fs(const char *path, EvictFsStats *ret, CubError *err) {
        struct statvfs st;

        if (statvfs(path, &st) < 0)
                return cub_err_set(err, errno, "statvfs '%s': %s", path, strerror(errno));
        *ret = (EvictFsStats){
                .available = (uint64_t) st.f_bavail * (uint64_t) st.f_frsize,
                .capacity = (uint64_t) st.f_blocks * (uint64_t) st.f_frsize,
                .inodes_free = (uint64_t) st.f_ffree,
                .inodes = (uint64_t) st.f_files,
        };
        return 0;
}

void evict_fs_observe(const EvictFsStats *fs, EvictSignalObservation *ret_bytes, EvictSignalObservation *ret_inodes) {
        if (ret_bytes)
                *ret_bytes = (EvictSignalObservation){ .present = true,
                                                       .available = fs->available,
                                                       .capacity = fs->capacity };
        if (ret_inodes)
                *ret_inodes = (EvictSignalObservation){ .present = fs->inodes > 0,
                                                        .available = fs->inodes_free,
                                                        .capacity = fs->inodes };
}

int evict_read_pids(const char *proc_root, EvictSignalObservation *ret, CubError *err) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        uint64_t pid_max, procs;
        const char *p;
        size_t n;
        int r;

        r = path_join(&path, err, proc_root, "sys/kernel/pid_max", NULL);
        if (r < 0)
                return r;
        r = read_u64_file(path, &pid_max, NULL, err);
        if (r < 0)
                return r;
        free(path);
        r = path_join(&path, err, proc_root, "loadavg", NULL);
        if (r < 0)
                return r;
        r = read_text(path, &text, err);
        if (r < 0)
                return r;
        /* "0.00 0.01 0.05 1/123 4567": the total after the '/' of field 4 */
        p = text;
        for (int field = 0; field < 3; field++) {
                p += strspn(p, " ");
                p += strcspn(p, " \n");
        }
        p += strspn(p, " ");
        p += strspn(p, "0123456789");
        if (*p != '/')
                return cub_err_set(err, EINVAL, "'%s': no \"running/total\" field", path);
        p++;
        n = strspn(p, "0123456789");
        if (parse_u64_token(p, n, &procs) < 0)
                return cub_err_set(err, EINVAL, "'%s': bad process count", path);
        *ret = (EvictSignalObservation){
                .present = true,
                .capacity = pid_max,
                .available = procs > pid_max ? 0 : pid_max - procs,
        };
        return 0;
}

/* ---- PSI ---------------------------------------------------------------------- */

static int psi_line(const char *line, EvictPsiLine *ret) {
        EvictPsiLine l;
        int n = -1;

        if (sscanf(line, " avg10=%lf avg60=%lf avg300=%lf total=%" SCNu64 "%n", &l.avg10, &l.avg60, &l.avg300,
                   &l.total_usec, &n) != 4 ||
            n < 0)
                return -EINVAL;
        line += n;
        if (*line && *line != '\n')
                return -EINVAL;
        *ret = l;
        return 0;
}

int evict_psi_parse(const char *text, EvictPsi *ret, CubError *err) {
        EvictPsi psi = { .present = true };
        bool some = false;

        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                EvictPsiLine *dst;

                if (*line == '\n')
                        continue;
                if (strncmp(line, "some ", 5) == 0) {
                        dst = &psi.some;
                        some = true;
                } else if (strncmp(line, "full ", 5) == 0) {
                        dst = &psi.full;
                        psi.has_full = true;
                } else
                        return cub_err_set(err, EINVAL, "expected a \"some\" or \"full\" line, got \"%.*s\"",
                                           (int) strcspn(line, "\n"), line);
                if (psi_line(line + 4, dst) < 0)
                        return cub_err_set(err, EINVAL, "malformed line \"%.*s\"", (int) strcspn(line, "\n"), line);
        }
        if (!some)
                return cub_err_set(err, EINVAL, "no \"some\" line");
        *ret = psi;
        return 0;
}

int evict_read_psi(const char *path, EvictPsi *ret, CubError *err) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_text(path, &text, err);
        if (r < 0)
                return r;
        r = evict_psi_parse(text, ret, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "'%s'", path);
        return 0;
}

#define PSI_WINDOW_MIN_USEC UINT64_C(500000)
#define PSI_WINDOW_MAX_USEC UINT64_C(10000000)

int evict_psi_trigger_validate(const char *trigger, CubError *err) {
        const char *p;
        uint64_t stall, window;
        size_t n;

        if (!trigger)
                return cub_err_set(err, EINVAL, "PSI trigger: empty");
        if (strncmp(trigger, "some ", 5) != 0 && strncmp(trigger, "full ", 5) != 0)
                return cub_err_set(err, EINVAL, "PSI trigger \"%s\": expected \"some|full <stall usec> <window usec>\"",
                                   trigger);
        p = trigger + 5;
        n = strspn(p, "0123456789");
        if (p[n] != ' ' || parse_u64_token(p, n, &stall) < 0)
                return cub_err_set(err, EINVAL, "PSI trigger \"%s\": expected \"some|full <stall usec> <window usec>\"",
                                   trigger);
        p += n + 1;
        n = strspn(p, "0123456789");
        if (p[n] != '\0' || parse_u64_token(p, n, &window) < 0)
                return cub_err_set(err, EINVAL, "PSI trigger \"%s\": expected \"some|full <stall usec> <window usec>\"",
                                   trigger);
        if (window < PSI_WINDOW_MIN_USEC || window > PSI_WINDOW_MAX_USEC)
                return cub_err_set(err, EINVAL, "PSI trigger \"%s\": window %" PRIu64 "us not in 500000..10000000",
                                   trigger, window);
        if (stall == 0 || stall > window)
                return cub_err_set(err, EINVAL,
                                   "PSI trigger \"%s\": stall %" PRIu64 "us must be in 1..window (%" PRIu64 "us)",
                                   trigger, stall, window);
        return 0;
}

int evict_psi_trigger_open(const char *path, const char *trigger, CubError *err) {
        _cleanup_close_ int fd = -EBADF;
        size_t len;
        ssize_t w;
        int r;

        r = evict_psi_trigger_validate(trigger, err);
        if (r < 0)
                return r;
        fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return cub_err_set(err, errno, "open '%s': %s", path, strerror(errno));
        len = strlen(trigger) + 1; /* with the NUL, as Documentation/accounting/psi.rst does */
        w = write(fd, trigger, len);
        if (w < 0)
                return cub_err_set(err, errno, "write trigger \"%s\" to '%s': %s", trigger, path, strerror(errno));
        if ((size_t) w != len)
                return cub_err_set(err, EIO, "write trigger \"%s\" to '%s': short write", trigger, path);
        return TAKE_FD(fd);
}
