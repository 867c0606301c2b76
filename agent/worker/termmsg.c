/* SPDX-License-Identifier: Apache-2.0 */
/* Termination messages, as kubelet's kuberuntime: each container created
 * with a terminationMessagePath gets a file of its own on the host,
 * <pods_dir>/<uid>/containers/<name>/<8 hex digits> (mode 0666, so that any
 * user in the container can write it), bind-mounted at that path; when the
 * container has ended, its last 4096 bytes are the message
 * (getTerminationMessage). With FallbackToLogsOnError, a failed container
 * whose file is empty gets the last 80 lines of its log instead, at most
 * 2048 bytes of them (readLastStringFromContainerLogs); not when it could
 * not even start (ContainerCannotRun). The runtime's own message comes
 * first, ": " between them. The files go with the pod. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../logs/logs.h"
#include "../util/cleanup.h"
#include "worker-internal.h"

#define TERM_MESSAGE_MAX 4096 /* kubelet's MaxContainerTerminationMessageLength */
#define TERM_LOG_LINES 80     /* MaxContainerTerminationMessageLogLines */
#define TERM_LOG_MAX 2048     /* MaxContainerTerminationMessageLogLength */
#define TERM_LOG_READ (256 * 1024)

static int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = '\0';
                        if (mkdir(p, mode) < 0 && errno != EEXIST)
                                return -errno;
                        *s = '/';
                }
        return mkdir(p, mode) < 0 && errno != EEXIST ? -errno : 0;
}

int worker_term_file(const char *pods_dir, const char *uid, const char *container, char **ret_path, CubError *err) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_free_ char *path = NULL;
        uint32_t id;
        int fd, r;

        *ret_path = NULL;
        if (asprintf(&dir, "%s/%s/containers/%s", pods_dir, uid, container) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = mkdir_p(dir, 0750);
        if (r < 0)
                return cub_err_set(err, -r, "termination message: mkdir '%s': %s", dir, strerror(-r));
        if (getrandom(&id, sizeof(id), 0) != (ssize_t) sizeof(id))
                id = (uint32_t) getpid() ^ (uint32_t) time(NULL);
        if (asprintf(&path, "%s/%08x", dir, id) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0)
                return cub_err_set(err, errno, "termination message: create '%s': %s", path, strerror(errno));
        /* the umask took its bits: any user of the container may write it */
        r = fchmod(fd, 0666) < 0 ? -errno : 0;
        (void) close(fd);
        if (r < 0)
                return cub_err_set(err, -r, "termination message: chmod '%s': %s", path, strerror(-r));
        *ret_path = TAKE_PTR(path);
        return 0;
}

/* The last size bytes of path (at most max); -errno when it cannot be read. */
static int read_last(const char *path, size_t max, char **ret, size_t *ret_n) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat s;
        char *buf;
        size_t want, got = 0;

        *ret = NULL;
        *ret_n = 0;
        if (fd < 0 || fstat(fd, &s) < 0)
                return -errno;
        if (!S_ISREG(s.st_mode))
                return -EINVAL;
        want = (size_t) s.st_size < max ? (size_t) s.st_size : max;
        buf = malloc(want + 1);
        if (!buf)
                return -ENOMEM;
        while (got < want) {
                ssize_t k = pread(fd, buf + got, want - got, s.st_size - (off_t) want + (off_t) got);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                got += (size_t) k;
        }
        buf[got] = '\0';
        *ret = buf;
        *ret_n = got;
        return 0;
}

/* kubelet's readLastStringFromContainerLogs: the text of the log's last 80
 * lines as kubectl logs prints it, its last 2048 bytes */
static char *log_tail(const char *log_path) {
        _cleanup_free_ char *raw = NULL;
        char *out = NULL;
        size_t n = 0, n_out = 0, start, used = 0, bad = 0;

        if (!log_path || !*log_path || read_last(log_path, TERM_LOG_READ, &raw, &n) < 0)
                return NULL;
        start = logs_tail_offset(raw, n, TERM_LOG_LINES);
        if (logs_render(raw + start, n - start, false, true, &out, &n_out, &used, &bad) < 0) {
                free(out);
                return NULL;
        }
        if (n_out > TERM_LOG_MAX) {
                memmove(out, out + n_out - TERM_LOG_MAX, TERM_LOG_MAX);
                n_out = TERM_LOG_MAX;
        }
        /* room for the terminator */
        {
                char *s = realloc(out, n_out + 1);

                if (!s) {
                        free(out);
                        return NULL;
                }
                s[n_out] = '\0';
                return s;
        }
}

/* The length of the valid UTF-8 sequence at s (0: not one), as Go decodes
 * it: no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *s) {
        unsigned c = s[0];
        size_t n;
        unsigned min, v;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                n = 2, min = 0x80, v = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
                n = 3, min = 0x800, v = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
                n = 4, min = 0x10000, v = c & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                v = v << 6 | (s[i] & 0x3f);
        }
        return v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) ? 0 : n;
}

/* s with each byte that does not start valid UTF-8 replaced by U+FFFD, as
 * Go's JSON encoder writes kubelet's message (a message's last bytes may
 * cut a character); s itself is freed */
static char *utf8_valid(char *s) {
        size_t n = s ? strlen(s) : 0, k = 0;
        char *out;

        if (!s)
                return NULL;
        out = malloc(3 * n + 1);
        if (!out) {
                free(s);
                return NULL;
        }
        for (size_t i = 0; i < n;) {
                size_t l = utf8_len((const unsigned char *) s + i);

                if (l == 0) {
                        memcpy(out + k, "\xef\xbf\xbd", 3);
                        k += 3;
                        i++;
                        continue;
                }
                memcpy(out + k, s + i, l);
                k += l;
                i += l;
        }
        out[k] = '\0';
        free(s);
        return out;
}

char *worker_term_message(const char *host_path, bool fallback, const char *log_path, const char *runtime_message) {
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        char *msg = NULL;
        bool check_logs = true;

        if (host_path && *host_path) {
                int r = read_last(host_path, TERM_MESSAGE_MAX, &text, &n);

                if (r < 0 && r != -ENOENT) {
                        if (asprintf(&text, "Error on reading termination log %s: %s", host_path, strerror(-r)) < 0)
                                text = NULL;
                        check_logs = false;
                } else if (n > 0)
                        check_logs = false;
        }
        if (check_logs && fallback) {
                free(text);
                text = log_tail(log_path);
        }
        if (text && !*text) {
                free(text);
                text = NULL;
        }
        if (runtime_message && *runtime_message && text) {
                if (asprintf(&msg, "%s: %s", runtime_message, text) < 0)
                        msg = NULL;
        } else if (runtime_message && *runtime_message)
                msg = strdup(runtime_message);
        else
                msg = TAKE_PTR(text);
        return utf8_valid(msg);
}

char *worker_term_message_of(const CriContainerStatus *st) {
        const char *policy = cri_kv_get(st->labels, WORKER_LABEL_TERM_POLICY);
        /* kubelet: a container that could not even start has no logs */
        bool fallback = policy && strcmp(policy, "FallbackToLogsOnError") == 0 && st->exit_code != 0 &&
                        !(st->reason && strcmp(st->reason, "ContainerCannotRun") == 0);

        return worker_term_message(cri_kv_get(st->labels, WORKER_LABEL_TERM_FILE), fallback, st->log_path, st->message);
}

static int remove_one(const char *path, const struct stat *s, int flag, struct FTW *f) {
        (void) s;
        (void) f;
        (void) (flag == FTW_DP ? rmdir(path) : unlink(path));
        return 0;
}

void worker_term_remove(const char *pods_dir, const char *uid) {
        _cleanup_free_ char *dir = NULL;

        if (!pods_dir || !uid || !*uid || asprintf(&dir, "%s/%s/containers", pods_dir, uid) < 0)
                return;
        (void) nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}
