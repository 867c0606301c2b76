/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading a container's log as kubelet's ReadLogs does: the attempt's file
 * rendered (partial lines joined, optional timestamps) after tail, since,
 * stream and limit-bytes, and, following, the lines appended later through
 * rotation until the attempt ends. One reader per caller (no shared state):
 * the CLI and the kubelet server's connection threads each own theirs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/time.h"
#include "logs.h"

#define READ_CHUNK 65536
#define RENDER_BATCH 65536          /* rendered bytes buffered per step */
#define NEWER_CHECK_USEC 1000000ULL /* a newer attempt is looked for at most once a second */
#define TIMESTAMP_MAX 64

struct LogsReader {
        LogsReadOptions o;
        char *dir, *path;
        uint32_t attempt;
        int fd;   /* following: the file read */
        char *in; /* raw bytes, in[in_pos..n_in) not yet rendered */
        size_t n_in, in_pos, cap_in;
        char *out; /* rendered bytes, out[out_pos..n_out) not yet returned */
        size_t n_out, out_pos, cap_out;
        int64_t written;
        uint64_t last_check_usec;
        bool checked;   /* last_check_usec is set */
        bool ending;    /* a newer attempt: read to the end of the file once more, then finish */
        bool finishing; /* at the end: render the rest, a last partial line too */
        bool done;
};

/* The highest attempt below `below` (UINT32_MAX + 1: any) in dir: 0 and
 * *ret, -ENOENT when none (or no dir), another -errno when unreadable. */
static int find_attempt(const char *dir, int64_t below, uint32_t *ret) {
        DIR *d = opendir(dir);
        struct dirent *de;
        int64_t best = -1;

        if (!d)
                return errno == ENOTDIR ? -ENOENT : -errno;
        while ((de = readdir(d))) {
                char *end;
                unsigned long long a;

                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                errno = 0;
                a = strtoull(de->d_name, &end, 10);
                if (errno || strcmp(end, ".log") != 0 || a > UINT32_MAX)
                        continue;
                if ((int64_t) a < below && (int64_t) a > best)
                        best = (int64_t) a;
        }
        closedir(d);
        if (best < 0)
                return -ENOENT;
        *ret = (uint32_t) best;
        return 0;
}

static int read_to_end(int fd, char **buf, size_t *n, size_t *cap) {
        for (;;) {
                ssize_t k;

                if (*cap - *n < READ_CHUNK) {
                        size_t nc = *cap ? *cap * 2 : READ_CHUNK;
                        char *nb;

                        while (nc - *n < READ_CHUNK)
                                nc *= 2;
                        nb = realloc(*buf, nc);
                        if (!nb)
                                return -ENOMEM;
                        *buf = nb;
                        *cap = nc;
                }
                k = read(fd, *buf + *n, *cap - *n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return 0;
                *n += (size_t) k;
        }
}

int logs_parse_timestamp(const char *s, size_t n, int64_t *ret) {
        char t[TIMESTAMP_MAX];
        struct tm tm = {};
        const char *p;
        int64_t secs, frac = 0, ns;
        int digits = 0;

        if (n >= sizeof(t))
                return -EINVAL;
        memcpy(t, s, n);
        t[n] = '\0';
        p = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        if (*p == '.') {
                for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                        if (digits < 9)
                                frac = frac * 10 + (*p - '0');
                if (digits == 0)
                        return -EINVAL;
                for (; digits < 9; digits++)
                        frac *= 10;
        }
        secs = (int64_t) timegm(&tm);
        if (*p == 'Z')
                p++;
        else if ((*p == '+' || *p == '-') && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' && p[2] <= '9' && p[3] == ':' &&
                 p[4] >= '0' && p[4] <= '9' && p[5] >= '0' && p[5] <= '9') {
                int64_t off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 + ((p[4] - '0') * 10 + (p[5] - '0')) * 60;

                secs += *p == '+' ? -off : off;
                p += 6;
        } else
                return -EINVAL;
        if (*p != '\0')
                return -EINVAL;
        if (__builtin_mul_overflow(secs, (int64_t) 1000000000, &ns) || __builtin_add_overflow(ns, frac, &ns))
                return -ERANGE;
        *ret = ns;
        return 0;
}

static int out_append(LogsReader *r, const char *s, size_t n) {
        if (r->cap_out - r->n_out < n) {
                size_t nc = r->cap_out ? r->cap_out : 4096;
                char *nb;

                while (nc - r->n_out < n)
                        nc *= 2;
                nb = realloc(r->out, nc);
                if (!nb)
                        return -ENOMEM;
                r->out = nb;
                r->cap_out = nc;
        }
        memcpy(r->out + r->n_out, s, n);
        r->n_out += n;
        return 0;
}

/* Renders the input's complete lines (with final, a last partial one too)
 * into out, stopping once RENDER_BATCH bytes are there. */
static int render(LogsReader *r, bool final) {
        r->n_out = r->out_pos = 0;
        while (r->in_pos < r->n_in && r->n_out < RENDER_BATCH) {
                const char *line = r->in + r->in_pos, *nl;
                size_t left = r->n_in - r->in_pos, n;
                LogsLine l;
                int k = 0;

                nl = memchr(line, '\n', left);
                if (!nl && !final)
                        break;
                n = nl ? (size_t) (nl - line) : left;
                r->in_pos += n + (nl ? 1 : 0);
                if (logs_parse_line(line, n, &l) < 0)
                        continue;
                if (r->o.stream >= 0 && (int) l.stream != r->o.stream)
                        continue;
                if (r->o.since_unix_ns != 0) {
                        int64_t ts;

                        if (logs_parse_timestamp(l.timestamp, l.n_timestamp, &ts) < 0 || ts < r->o.since_unix_ns)
                                continue;
                }
                if (r->o.timestamps) {
                        k = out_append(r, l.timestamp, l.n_timestamp);
                        if (k >= 0)
                                k = out_append(r, " ", 1);
                }
                if (k >= 0)
                        k = out_append(r, l.text, l.n_text);
                if (k >= 0 && !l.partial)
                        k = out_append(r, "\n", 1);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* Following: appends what the file holds beyond what was read; the count. */
static ssize_t fill(LogsReader *r) {
        size_t before;
        int k;

        if (r->in_pos > 0) {
                memmove(r->in, r->in + r->in_pos, r->n_in - r->in_pos);
                r->n_in -= r->in_pos;
                r->in_pos = 0;
        }
        before = r->n_in;
        k = read_to_end(r->fd, &r->in, &r->n_in, &r->cap_in);
        if (k < 0)
                return k;
        return (ssize_t) (r->n_in - before);
}

/* The path names another file than the one read (rotated): reopened, true */
static bool reopen_rotated(LogsReader *r) {
        struct stat st_fd, st_path;
        int fd;

        if (fstat(r->fd, &st_fd) < 0 || stat(r->path, &st_path) < 0 ||
            (st_fd.st_ino == st_path.st_ino && st_fd.st_dev == st_path.st_dev))
                return false;
        fd = open(r->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        (void) close(r->fd);
        r->fd = fd;
        return true;
}

/* A newer attempt's file is there (looked for at most once a second) */
static bool newer_attempt(LogsReader *r) {
        uint64_t now = cub_now_usec(CLOCK_MONOTONIC);
        uint32_t a;

        if (r->checked && now - r->last_check_usec < NEWER_CHECK_USEC)
                return false;
        r->checked = true;
        r->last_check_usec = now;
        return find_attempt(r->dir, (int64_t) UINT32_MAX + 1, &a) == 0 && a > r->attempt;
}

int logs_reader_open(const char *container_dir, const char *pod_name, const LogsReadOptions *o, LogsReader **ret,
                     CubError *err) {
        static const LogsReadOptions defaults = { .tail_lines = -1, .stream = -1 };
        _cleanup_(logs_reader_freep) LogsReader *r = NULL;
        _cleanup_free_ char *name = NULL;
        _cleanup_close_ int fd = -EBADF;
        uint32_t current;
        size_t len;
        int k;

        if (!container_dir || !pod_name || !ret)
                return cub_err_set(err, EINVAL, "logs: no container directory or pod name");
        if (!o)
                o = &defaults;
        if (o->stream != -1 && o->stream != LOGS_STDOUT && o->stream != LOGS_STDERR)
                return cub_err_set(err, EINVAL, "logs: stream %d: expected stdout, stderr or both", o->stream);
        r = calloc(1, sizeof(*r));
        if (!r)
                return cub_err_set(err, ENOMEM, "out of memory");
        r->fd = -EBADF;
        r->o = *o;
        r->dir = strdup(container_dir);
        name = strdup(container_dir);
        if (!r->dir || !name)
                return cub_err_set(err, ENOMEM, "out of memory");
        /* the container's name: the last component */
        for (len = strlen(name); len > 1 && name[len - 1] == '/'; len--)
                name[len - 1] = '\0';
        {
                const char *slash = strrchr(name, '/');
                const char *c = slash && slash[1] ? slash + 1 : name;

                k = find_attempt(r->dir, (int64_t) UINT32_MAX + 1, &current);
                if (k >= 0 && o->previous)
                        k = find_attempt(r->dir, current, &r->attempt);
                else
                        r->attempt = current;
                if (k == -ENOENT && o->previous)
                        return cub_err_set(err, ENOENT, "previous terminated container \"%s\" in pod \"%s\" not found",
                                           c, pod_name);
                if (k == -ENOENT)
                        return cub_err_set(err, ENOENT, "container \"%s\" in pod \"%s\" has no log yet", c, pod_name);
                if (k < 0)
                        return cub_err_set(err, k, "'%s': %s", r->dir, strerror(-k));
        }
        if (asprintf(&r->path, "%s/%" PRIu32 ".log", r->dir, r->attempt) < 0) {
                r->path = NULL;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        fd = open(r->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return cub_err_set(err, errno, "'%s': %s", r->path, strerror(errno));
        k = read_to_end(fd, &r->in, &r->n_in, &r->cap_in);
        if (k < 0)
                return cub_err_set(err, k, "'%s': %s", r->path, strerror(-k));
        r->in_pos = logs_tail_offset(r->in, r->n_in, o->tail_lines);
        if (o->follow)
                r->fd = TAKE_FD(fd);
        *ret = TAKE_PTR(r);
        return 0;
}

uint32_t logs_reader_attempt(const LogsReader *r) {
        return r->attempt;
}

ssize_t logs_reader_read(LogsReader *r, char *buf, size_t size, bool ended) {
        if (!r || !buf || size == 0)
                return -EINVAL;
        for (;;) {
                bool final = !r->o.follow || r->finishing;
                ssize_t k;

                if (r->o.limit_bytes > 0 && r->written >= r->o.limit_bytes)
                        return 0;
                if (r->out_pos < r->n_out) {
                        size_t n = r->n_out - r->out_pos;

                        if (n > size)
                                n = size;
                        if (r->o.limit_bytes > 0 && (int64_t) n > r->o.limit_bytes - r->written)
                                n = (size_t) (r->o.limit_bytes - r->written);
                        memcpy(buf, r->out + r->out_pos, n);
                        r->out_pos += n;
                        r->written += (int64_t) n;
                        return (ssize_t) n;
                }
                if (r->done)
                        return 0;
                k = render(r, final);
                if (k < 0)
                        return k;
                if (r->out_pos < r->n_out)
                        continue;
                if (final) {
                        /* everything rendered */
                        r->done = true;
                        continue;
                }
                k = fill(r);
                if (k < 0)
                        return k;
                if (k > 0 || reopen_rotated(r))
                        continue;
                /* at the end of the file */
                if (ended || r->ending)
                        r->finishing = true;
                else if (newer_attempt(r))
                        r->ending = true; /* what was written before it came: once more to the end */
                else
                        return -EAGAIN;
        }
}

LogsReader *logs_reader_free(LogsReader *r) {
        if (!r)
                return NULL;
        if (r->fd >= 0)
                (void) close(r->fd);
        free(r->dir);
        free(r->path);
        free(r->in);
        free(r->out);
        free(r);
        return NULL;
}
