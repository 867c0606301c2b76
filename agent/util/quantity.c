/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resource.Quantity (k8s.io/apimachinery pkg/api/resource/quantity.go):
 *
 *   quantity  ::= sign? number suffix
 *   number    ::= digits | digits "." digits? | "." digits
 *   suffix    ::= "" | n u m k M G T P E | Ki Mi Gi Ti Pi Ei | (e|E) sign? digits
 *
 * Values are kept rounded up to milli precision, which is what the API
 * defaulting (RoundUp(-3)) leaves for every resource quantity.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "quantity.h"

typedef unsigned __int128 u128;

#define U128_LIMIT (((u128) 1) << 126)

static int parse_suffix(const char *s, int *ret_exp10, int *ret_exp2) {
        static const struct {
                const char *name;
                int exp10;
                int exp2;
        } table[] = {
                { "", 0, 0 },    { "n", -9, 0 },  { "u", -6, 0 },  { "m", -3, 0 },  { "k", 3, 0 },   { "M", 6, 0 },
                { "G", 9, 0 },   { "T", 12, 0 },  { "P", 15, 0 },  { "E", 18, 0 },  { "Ki", 0, 10 }, { "Mi", 0, 20 },
                { "Gi", 0, 30 }, { "Ti", 0, 40 }, { "Pi", 0, 50 }, { "Ei", 0, 60 },
        };
        bool neg = false;
        int v = 0;

        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
                if (strcmp(s, table[i].name) == 0) {
                        *ret_exp10 = table[i].exp10;
                        *ret_exp2 = table[i].exp2;
                        return 0;
                }
        if (s[0] != 'e' && s[0] != 'E')
                return -EINVAL;
        s++;
        if (*s == '+' || *s == '-')
                neg = *s++ == '-';
        if (!*s)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                if (v > 1000)
                        return -ERANGE;
                v = v * 10 + (*s - '0');
        }
        *ret_exp10 = neg ? -v : v;
        *ret_exp2 = 0;
        return 0;
}

int cub_quantity_parse(const char *s, CubQuantity *ret, CubError *err) {
        const char *p = s;
        bool negative = false, seen_dot = false;
        int ndigits = 0, sig = 0, frac = 0, exp10 = 0, exp2 = 0, k, r;
        u128 m = 0, t;

        if (!s || !*s)
                return cub_err_set(err, EINVAL, "invalid quantity \"\": empty string");
        if (*p == '+' || *p == '-')
                negative = *p++ == '-';
        for (; *p; p++) {
                if (*p == '.') {
                        if (seen_dot)
                                return cub_err_set(err, EINVAL, "invalid quantity \"%s\": more than one '.'", s);
                        seen_dot = true;
                        continue;
                }
                if (*p < '0' || *p > '9')
                        break;
                ndigits++;
                if (seen_dot)
                        frac++;
                if (m == 0 && *p == '0')
                        continue;
                if (++sig > 36)
                        return cub_err_set(err, ERANGE, "invalid quantity \"%s\": too many digits", s);
                m = m * 10 + (u128) (*p - '0');
        }
        if (ndigits == 0)
                return cub_err_set(err, EINVAL, "invalid quantity \"%s\": no number before the suffix", s);
        r = parse_suffix(p, &exp10, &exp2);
        if (r == -ERANGE)
                return cub_err_set(err, ERANGE, "invalid quantity \"%s\": exponent out of range", s);
        if (r < 0)
                return cub_err_set(err, EINVAL, "invalid quantity \"%s\": unknown suffix \"%s\"", s, p);

        /* total milli-units, rounded up: m * 2^exp2 * 10^(exp10 - frac + 3) */
        t = m;
        for (int i = 0; i < exp2 && t != 0; i++) {
                if (t >= U128_LIMIT)
                        goto too_large;
                t <<= 1;
        }
        k = exp10 - frac + 3;
        if (k >= 0) {
                for (int i = 0; i < k && t != 0; i++) {
                        if (t >= U128_LIMIT / 10)
                                goto too_large;
                        t *= 10;
                }
        } else if (t != 0) {
                u128 div = 1;
                bool tiny = false;

                for (int i = 0; i < -k; i++) {
                        if (div >= U128_LIMIT / 10) {
                                tiny = true;
                                break;
                        }
                        div *= 10;
                }
                if (tiny || div > t)
                        t = 1;
                else
                        t = t / div + (t % div != 0);
        }
        if (t / 1000 > (u128) INT64_MAX)
                goto too_large;
        if (negative && t != 0)
                return cub_err_set(err, ERANGE, "invalid quantity \"%s\": must be greater than or equal to 0", s);

        ret->units = (int64_t) (t / 1000);
        ret->milli = (uint16_t) (t % 1000);
        return 0;

too_large:
        return cub_err_set(err, ERANGE, "invalid quantity \"%s\": value is too large", s);
}

int64_t cub_quantity_milli(CubQuantity q) {
        if (q.units > (INT64_MAX - q.milli) / 1000)
                return INT64_MAX;
        return q.units * 1000 + q.milli;
}

int64_t cub_quantity_value(CubQuantity q) {
        if (q.milli > 0 && q.units == INT64_MAX)
                return INT64_MAX;
        return q.units + (q.milli > 0);
}

int cub_quantity_cmp(CubQuantity a, CubQuantity b) {
        if (a.units != b.units)
                return a.units < b.units ? -1 : 1;
        if (a.milli != b.milli)
                return a.milli < b.milli ? -1 : 1;
        return 0;
}

bool cub_quantity_is_zero(CubQuantity q) {
        return q.units == 0 && q.milli == 0;
}

int cub_quantity_add(CubQuantity a, CubQuantity b, CubQuantity *ret) {
        int64_t units;
        unsigned milli = (unsigned) a.milli + b.milli;

        if (__builtin_add_overflow(a.units, b.units, &units))
                return -ERANGE;
        if (milli >= 1000) {
                milli -= 1000;
                if (__builtin_add_overflow(units, 1, &units))
                        return -ERANGE;
        }
        ret->units = units;
        ret->milli = (uint16_t) milli;
        return 0;
}

const char *cub_quantity_format(CubQuantity q, bool is_cpu, char buf[static CUB_QUANTITY_STR_MAX]) {
        static const char *const bin[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
        static const char *const dec[] = { "", "k", "M", "G", "T", "P", "E" };
        int64_t v;

        if (is_cpu) {
                if (q.milli == 0)
                        (void) snprintf(buf, CUB_QUANTITY_STR_MAX, "%" PRId64, q.units);
                else if (q.units == 0)
                        (void) snprintf(buf, CUB_QUANTITY_STR_MAX, "%um", (unsigned) q.milli);
                else /* units and milli side by side: no overflow for huge values */
                        (void) snprintf(buf, CUB_QUANTITY_STR_MAX, "%" PRId64 "%03um", q.units, (unsigned) q.milli);
                return buf;
        }
        v = cub_quantity_value(q);
        {
                /* the shorter of the binary and the decimal spelling, binary on a tie: 64Mi, 1G, 1500 */
                char dbuf[CUB_QUANTITY_STR_MAX];
                int64_t b = v, d = v;
                int kb = 0, kd = 0;

                while (b != 0 && b % 1024 == 0 && kb < 6)
                        b /= 1024, kb++;
                while (d != 0 && d % 1000 == 0 && kd < 6)
                        d /= 1000, kd++;
                (void) snprintf(buf, CUB_QUANTITY_STR_MAX, "%" PRId64 "%s", b, bin[kb]);
                (void) snprintf(dbuf, sizeof(dbuf), "%" PRId64 "%s", d, dec[kd]);
                if (strlen(dbuf) < strlen(buf))
                        memcpy(buf, dbuf, strlen(dbuf) + 1);
        }
        return buf;
}
