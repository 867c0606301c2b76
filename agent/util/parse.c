/* SPDX-License-Identifier: Apache-2.0 */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

int cub_safe_atoi64(const char *s, int64_t *ret) {
        char *end = NULL;
        long long v;

        if (!s || !*s || isspace((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || !end || *end != '\0')
                return -EINVAL;
        *ret = (int64_t) v;
        return 0;
}

int cub_safe_atou64(const char *s, uint64_t *ret) {
        char *end = NULL;
        unsigned long long v;

        if (!s || !*s || isspace((unsigned char) *s) || *s == '-' || *s == '+')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || !end || *end != '\0')
                return -EINVAL;
        *ret = (uint64_t) v;
        return 0;
}

int cub_safe_atoi32(const char *s, int32_t *ret) {
        int64_t v;
        int r;

        r = cub_safe_atoi64(s, &v);
        if (r < 0)
                return r;
        if (v < INT32_MIN || v > INT32_MAX)
                return -ERANGE;
        *ret = (int32_t) v;
        return 0;
}
