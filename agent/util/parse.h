/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Checked number parsing: the whole string must be a number in range; no
 * leading blanks, no trailing garbage, no silent wrap. Return 0 or -EINVAL
 * (not a number) / -ERANGE (out of range); *ret is untouched on failure.
 */

#include <stdint.h>

int cub_safe_atoi64(const char *s, int64_t *ret);
int cub_safe_atou64(const char *s, uint64_t *ret);
int cub_safe_atoi32(const char *s, int32_t *ret);
