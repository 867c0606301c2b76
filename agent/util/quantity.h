/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* resource.Quantity: a Pod's resources, a KubeletConfiguration's reserved
 * amounts and eviction thresholds, a device plugin's and a ResourceList's
 * counts, one parser (quantity.c). */

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

/*
 * A non-negative resource quantity, rounded up to milli precision as the
 * API defaulting does (SetDefaults_ResourceList: RoundUp(-3)). The value is
 * units + milli/1000 with 0 <= milli < 1000.
 */
typedef struct CubQuantity {
        int64_t units;
        uint16_t milli;
} CubQuantity;

/* Parses the resource.Quantity grammar. -EINVAL on garbage, -ERANGE for a
 * negative or too large value; the message quotes the string. */
int cub_quantity_parse(const char *s, CubQuantity *ret, CubError *err);
/* Quantity.MilliValue() (saturating) and Value() (ceil, saturating). */
int64_t cub_quantity_milli(CubQuantity q);
int64_t cub_quantity_value(CubQuantity q);
int cub_quantity_cmp(CubQuantity a, CubQuantity b);
bool cub_quantity_is_zero(CubQuantity q);
/* A count of millis (cpu) or of units as a quantity; negative: zero. */
static inline CubQuantity cub_quantity_from_milli(int64_t milli) {
        return milli > 0 ? (CubQuantity){ .units = milli / 1000, .milli = (uint16_t) (milli % 1000) } : (CubQuantity){};
}
static inline CubQuantity cub_quantity_from_units(int64_t units) {
        return units > 0 ? (CubQuantity){ .units = units } : (CubQuantity){};
}
/* a + b; -ERANGE on overflow. */
int cub_quantity_add(CubQuantity a, CubQuantity b, CubQuantity *ret);
/* Canonical text: cpu as "250m"/"2"; bytes and counts as "64Mi", "1G" or a
 * plain integer of Value(). Returns buf. */
#define CUB_QUANTITY_STR_MAX 32
const char *cub_quantity_format(CubQuantity q, bool is_cpu, char buf[static CUB_QUANTITY_STR_MAX]);
