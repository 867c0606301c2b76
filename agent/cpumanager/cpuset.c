/* SPDX-License-Identifier: Apache-2.0 */
/* CPU sets as fixed bitsets, and the Linux list format ("0-2,5,7-8"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cpumanager.h"

#define WORDS (CPUMGR_MAX_CPUS / 64)

void cpumgr_set_add(CpumgrSet *s, unsigned cpu) {
        if (cpu < CPUMGR_MAX_CPUS)
                s->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

void cpumgr_set_del(CpumgrSet *s, unsigned cpu) {
        if (cpu < CPUMGR_MAX_CPUS)
                s->bits[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}

bool cpumgr_set_has(const CpumgrSet *s, unsigned cpu) {
        return cpu < CPUMGR_MAX_CPUS && (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

unsigned cpumgr_set_count(const CpumgrSet *s) {
        unsigned n = 0;

        for (size_t i = 0; i < WORDS; i++)
                n += (unsigned) __builtin_popcountll(s->bits[i]);
        return n;
}

bool cpumgr_set_is_empty(const CpumgrSet *s) {
        for (size_t i = 0; i < WORDS; i++)
                if (s->bits[i])
                        return false;
        return true;
}

bool cpumgr_set_equal(const CpumgrSet *a, const CpumgrSet *b) {
        return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

void cpumgr_set_union(CpumgrSet *dst, const CpumgrSet *src) {
        for (size_t i = 0; i < WORDS; i++)
                dst->bits[i] |= src->bits[i];
}

void cpumgr_set_subtract(CpumgrSet *dst, const CpumgrSet *src) {
        for (size_t i = 0; i < WORDS; i++)
                dst->bits[i] &= ~src->bits[i];
}

void cpumgr_set_intersect(CpumgrSet *dst, const CpumgrSet *src) {
        for (size_t i = 0; i < WORDS; i++)
                dst->bits[i] &= src->bits[i];
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Parses a decimal CPU number at *p, advancing it; 0, -EINVAL or -ERANGE. */
static int parse_cpu(const char **p, unsigned *ret) {
        const char *q = *p;
        unsigned v = 0;

        if (*q < '0' || *q > '9')
                return -EINVAL;
        for (; *q >= '0' && *q <= '9'; q++) {
                v = v * 10 + (unsigned) (*q - '0');
                if (v >= CPUMGR_MAX_CPUS) {
                        while (*q >= '0' && *q <= '9')
                                q++;
                        *p = q;
                        return -ERANGE;
                }
        }
        *p = q;
        *ret = v;
        return 0;
}

int cpumgr_set_parse(const char *s, CpumgrSet *ret, CubError *err) {
        CpumgrSet set = {};
        const char *p = s;

        if (!s)
                return cub_err_set(err, EINVAL, "missing cpu list");
        while (is_blank(*p))
                p++;
        if (*p == '\0') {
                *ret = set;
                return 0;
        }
        for (;;) {
                unsigned lo, hi;
                int r;

                while (is_blank(*p))
                        p++;
                r = parse_cpu(&p, &lo);
                if (r == -ERANGE)
                        return cub_err_set(err, ERANGE, "cpu list '%.64s': cpu number above %d", s,
                                           CPUMGR_MAX_CPUS - 1);
                if (r < 0)
                        return cub_err_set(err, EINVAL, "invalid cpu list '%.64s'", s);
                hi = lo;
                while (is_blank(*p))
                        p++;
                if (*p == '-') {
                        p++;
                        while (is_blank(*p))
                                p++;
                        r = parse_cpu(&p, &hi);
                        if (r == -ERANGE)
                                return cub_err_set(err, ERANGE, "cpu list '%.64s': cpu number above %d", s,
                                                   CPUMGR_MAX_CPUS - 1);
                        if (r < 0 || hi < lo)
                                return cub_err_set(err, EINVAL, "invalid cpu list '%.64s'", s);
                        while (is_blank(*p))
                                p++;
                }
                for (unsigned c = lo; c <= hi; c++)
                        cpumgr_set_add(&set, c);
                if (*p == '\0')
                        break;
                if (*p != ',')
                        return cub_err_set(err, EINVAL, "invalid cpu list '%.64s'", s);
                p++;
        }
        *ret = set;
        return 0;
}

const char *cpumgr_set_format(const CpumgrSet *s, char *buf, size_t size) {
        size_t len = 0;
        unsigned c = 0;

        if (size == 0)
                return buf;
        buf[0] = '\0';
        while (c < CPUMGR_MAX_CPUS) {
                unsigned lo, hi;
                int n;

                if (!s->bits[c / 64]) {
                        c = (c / 64 + 1) * 64;
                        continue;
                }
                if (!cpumgr_set_has(s, c)) {
                        c++;
                        continue;
                }
                lo = hi = c;
                while (hi + 1 < CPUMGR_MAX_CPUS && cpumgr_set_has(s, hi + 1))
                        hi++;
                if (hi == lo)
                        n = snprintf(buf + len, size - len, "%s%u", len ? "," : "", lo);
                else
                        n = snprintf(buf + len, size - len, "%s%u-%u", len ? "," : "", lo, hi);
                if (n < 0 || (size_t) n >= size - len)
                        return buf; /* truncated: snprintf left it NUL-terminated */
                len += (size_t) n;
                c = hi + 1;
        }
        return buf;
}
