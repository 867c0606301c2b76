/* SPDX-License-Identifier: Apache-2.0 */
/* Go's time.ParseDuration (duration.h). */
#include "duration.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
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

int cub_duration_parse(const char *s, uint64_t *ret_usec, CubError *err) {
        const char *p = s;
        bool negative = false;
        uint64_t total = 0; /* ns; Go's limit is INT64_MAX ns */

        if (!s)
                return cub_err_set(err, EINVAL, "time: invalid duration \"\"");
        if (*p == '-' || *p == '+')
                negative = *p++ == '-';
        if (strcmp(p, "0") == 0) {
                *ret_usec = 0;
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
        if (negative && total > 0)
                return cub_err_set(err, ERANGE, "invalid duration \"%s\": must not be negative", s);
        *ret_usec = total / CUB_NSEC_PER_USEC;
        return 0;
}
