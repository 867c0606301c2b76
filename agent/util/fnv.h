/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* FNV-32a (Fowler–Noll–Vo), the hash of the hash map and of kubelet's and
 * cubelet's checkpoint checksums. Incremental: start from CUB_FNV32_OFFSET
 * and feed the pieces in order. */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CUB_FNV32_OFFSET UINT32_C(2166136261)
#define CUB_FNV32_PRIME UINT32_C(16777619)

static inline uint32_t cub_fnv32a(uint32_t h, const void *p, size_t n) {
        const unsigned char *b = p;

        for (size_t i = 0; i < n; i++) {
                h ^= b[i];
                h *= CUB_FNV32_PRIME;
        }
        return h;
}

static inline uint32_t cub_fnv32a_str(uint32_t h, const char *s) {
        return cub_fnv32a(h, s, strlen(s));
}
