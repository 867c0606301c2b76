/* SPDX-License-Identifier: Apache-2.0 */
/* Go's time.ParseDuration (duration.h). */
#include "duration.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "time.h"

static const struct {
        const char *name;
        uint64_t ns;
} duration_units[] = {
        { "ns", 1 },
        { "us", CUB_NSEC_PER_USEC },
        { "\xc2\xb5s", CUB_NSEC_PER_USEC }, /* U+00B5 micro sign */
        { "\xce\xbcs", CUB_NSEC_PER_USEC }, /* U+03BC Greek mu */
        { "ms", CUB_NSEC_PER_MSEC },
        { "s", CUB_NSEC_PER_SEC },
        { "m", 60 * CUB_NSEC_PER_SEC },
        { "h", 3600 * CUB_NSEC_PER_SEC },
};

/* Go's time.ParseDuration: the magnitude in ns, and its sign */
static int parse_go(const char *s, uint64_t *ret_ns, bool *ret_negative, CubError *err) {
        const char *p = s;
        bool negative = false;
        uint64_t total = 0; /* ns; Go's limit is INT64_MAX ns */

        if (!s)
                return cub_err_set(err, EINVAL, "time: invalid duration \"\"");
        if (*p == '-' || *p == '+')
                negative = *p++ == '-';
        *ret_negative = negative;
        if (strcmp(p, "0") == 0) {
                *ret_ns = 0;
                return 0;
        }
        if (!*p)
                return cub_err_set(err, EINVAL, "time: invalid duration \"%s\"", s);
        while (*p) {
                uint64_t v = 0, frac = 0, scale = 1, unit = 0, add;
                bool digits = false, overflow = false;
                const char *u;
                size_t ulen;

                if (!(*p == '.' || (*p >= '0' && *p <= '9')))
                        return cub_err_set(err, EINVAL, "time: invalid duration \"%s\"", s);
                for (; *p >= '0' && *p <= '9'; p++) {
                        digits = true;
                        if (v > (UINT64_MAX - 9) / 10)
                                overflow = true;
                        else
                                v = v * 10 + (uint64_t) (*p - '0');
                }
                if (*p == '.') {
                        p++;
                        for (; *p >= '0' && *p <= '9'; p++) {
                                digits = true;
                                if (scale > UINT64_MAX / 100)
                                        continue; /* Go drops digits beyond precision */
                                frac = frac * 10 + (uint64_t) (*p - '0');
                                scale *= 10;
                        }
                }
                if (!digits)
                        return cub_err_set(err, EINVAL, "time: invalid duration \"%s\"", s);
                u = p;
                while (*p && *p != '.' && !(*p >= '0' && *p <= '9'))
                        p++;
                ulen = (size_t) (p - u);
                if (ulen == 0)
                        return cub_err_set(err, EINVAL, "time: missing unit in duration \"%s\"", s);
                for (size_t i = 0; i < ELEMENTSOF(duration_units); i++)
                        if (strlen(duration_units[i].name) == ulen && memcmp(duration_units[i].name, u, ulen) == 0)
                                unit = duration_units[i].ns;
                if (unit == 0)
                        return cub_err_set(err, EINVAL, "time: unknown unit \"%.*s\" in duration \"%s\"", (int) ulen, u,
                                           s);
                if (overflow || v > (uint64_t) INT64_MAX / unit)
                        return cub_err_set(err, ERANGE, "time: invalid duration \"%s\"", s);
                add = v * unit;
                if (frac > 0)
                        add += (uint64_t) ((double) frac * ((double) unit / (double) scale));
                if (add > (uint64_t) INT64_MAX - total)
                        return cub_err_set(err, ERANGE, "time: invalid duration \"%s\"", s);
                total += add;
        }
        *ret_ns = total;
        return 0;
}

int cub_duration_parse(const char *s, uint64_t *ret_usec, CubError *err) {
        uint64_t ns;
        bool negative;
        int r;

        r = parse_go(s, &ns, &negative, err);
        if (r < 0)
                return r;
        if (negative && ns > 0)
                return cub_err_set(err, ERANGE, "invalid duration \"%s\": must not be negative", s);
        *ret_usec = ns / CUB_NSEC_PER_USEC;
        return 0;
}

int cub_duration_parse_signed(const char *s, int64_t *ret_usec, CubError *err) {
        uint64_t ns;
        bool negative;
        int r;

        r = parse_go(s, &ns, &negative, err);
        if (r < 0)
                return r;
        *ret_usec = negative ? -(int64_t) (ns / CUB_NSEC_PER_USEC) : (int64_t) (ns / CUB_NSEC_PER_USEC);
        return 0;
}

/* ".5", ".25", "": the fraction f of one unit of den, trailing zeros cut */
static void fraction(uint64_t f, unsigned digits, char *buf, size_t size) {
        size_t n;

        *buf = '\0';
        if (f == 0)
                return;
        (void) snprintf(buf, size, ".%0*llu", (int) digits, (unsigned long long) f);
        for (n = strlen(buf); n > 1 && buf[n - 1] == '0'; n--)
                buf[n - 1] = '\0';
}

void cub_duration_format(int64_t usec, char *buf, size_t size) {
        uint64_t u = usec < 0 ? (uint64_t) 0 - (uint64_t) usec : (uint64_t) usec, s, h, m;
        const char *sign = usec < 0 ? "-" : "";
        char f[16];

        if (u == 0) {
                (void) snprintf(buf, size, "0s");
                return;
        }
        if (u < CUB_USEC_PER_MSEC) {
                (void) snprintf(buf, size, "%s%llu\xc2\xb5s", sign, (unsigned long long) u);
                return;
        }
        if (u < CUB_USEC_PER_SEC) {
                fraction(u % CUB_USEC_PER_MSEC, 3, f, sizeof(f));
                (void) snprintf(buf, size, "%s%llu%sms", sign, (unsigned long long) (u / CUB_USEC_PER_MSEC), f);
                return;
        }
        fraction(u % CUB_USEC_PER_SEC, 6, f, sizeof(f));
        s = u / CUB_USEC_PER_SEC;
        h = s / 3600;
        m = s / 60 % 60;
        s %= 60;
        if (h > 0)
                (void) snprintf(buf, size, "%s%lluh%llum%llu%ss", sign, (unsigned long long) h, (unsigned long long) m,
                                (unsigned long long) s, f);
        else if (m > 0)
                (void) snprintf(buf, size, "%s%llum%llu%ss", sign, (unsigned long long) m, (unsigned long long) s, f);
        else
                (void) snprintf(buf, size, "%s%llu%ss", sign, (unsigned long long) s, f);
}
