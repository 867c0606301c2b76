/* SPDX-License-Identifier: Apache-2.0 */
/* The CRI log format (kubelet's parseCRILog), tails, and the layout names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logs.h"

/* a RFC 3339 timestamp, loosely: digits, '-', ':', 'T', '.', 'Z', '+' */
static bool timestamp_ok(const char *s, size_t n) {
        if (n < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("0123456789-:T.Z+", s[i]))
                        return false;
        return true;
}

int logs_parse_line(const char *line, size_t n, LogsLine *ret) {
        const char *p = line, *end = line + n, *sp;

        sp = memchr(p, ' ', (size_t) (end - p));
        if (!sp || !timestamp_ok(p, (size_t) (sp - p)))
                return -EINVAL;
        ret->timestamp = p;
        ret->n_timestamp = (size_t) (sp - p);
        p = sp + 1;
        sp = memchr(p, ' ', (size_t) (end - p));
        if (!sp)
                return -EINVAL;
        if ((size_t) (sp - p) == 6 && memcmp(p, "stdout", 6) == 0)
                ret->stream = LOGS_STDOUT;
        else if ((size_t) (sp - p) == 6 && memcmp(p, "stderr", 6) == 0)
                ret->stream = LOGS_STDERR;
        else
                return -EINVAL;
        p = sp + 1;
        sp = memchr(p, ' ', (size_t) (end - p));
        if (!sp || sp == p)
                return -EINVAL;
        /* tags are ':'-separated, forward compatible: the first says P or F */
        ret->partial = p[0] == 'P' && (p + 1 == sp || p[1] == ':');
        ret->text = sp + 1;
        ret->n_text = (size_t) (end - ret->text);
        return 0;
}

size_t logs_tail_offset(const char *buf, size_t len, int64_t n) {
        size_t i = len;

        if (n < 0)
                return 0;
        if (n == 0)
                return len;
        /* a last line without its newline counts as a line */
        if (i > 0 && buf[i - 1] == '\n')
                i--;
        while (i > 0) {
                if (buf[i - 1] == '\n' && --n == 0)
                        return i;
                i--;
        }
        return 0;
}

char *logs_pod_dir(const char *root, const char *namespace_, const char *name, const char *uid) {
        char *s;

        return asprintf(&s, "%s/%s_%s_%s", root, namespace_, name, uid) < 0 ? NULL : s;
}

char *logs_container_path(const char *container, uint32_t attempt) {
        char *s;

        return asprintf(&s, "%s/%u.log", container, attempt) < 0 ? NULL : s;
}

int logs_rotated_name(const char *log, time_t now, char *buf, size_t size) {
        struct tm tm;
        char ts[32];
        int n;

        if (!localtime_r(&now, &tm) || strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", &tm) == 0)
                return -EINVAL;
        n = snprintf(buf, size, "%s.%s", log, ts);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

static int append(char **out, size_t *n_out, const char *s, size_t n) {
        char *p = realloc(*out, *n_out + n + 1);

        if (!p)
                return -ENOMEM;
        memcpy(p + *n_out, s, n);
        *n_out += n;
        p[*n_out] = '\0';
        *out = p;
        return 0;
}

int logs_render(const char *buf, size_t len, bool timestamps, bool final, char **out, size_t *n_out, size_t *ret_used,
                size_t *ret_bad) {
        size_t pos = 0;
        int r = 0;

        while (pos < len && r >= 0) {
                const char *nl = memchr(buf + pos, '\n', len - pos);
                size_t n = nl ? (size_t) (nl - (buf + pos)) : len - pos;
                LogsLine l;

                if (!nl && !final)
                        break;
                if (logs_parse_line(buf + pos, n, &l) < 0) {
                        if (ret_bad)
                                (*ret_bad)++;
                } else {
                        if (timestamps) {
                                r = append(out, n_out, l.timestamp, l.n_timestamp);
                                if (r >= 0)
                                        r = append(out, n_out, " ", 1);
                        }
                        if (r >= 0)
                                r = append(out, n_out, l.text, l.n_text);
                        if (r >= 0 && !l.partial)
                                r = append(out, n_out, "\n", 1);
                }
                pos += n + (nl ? 1 : 0);
        }
        if (ret_used)
                *ret_used = pos;
        return r;
}
