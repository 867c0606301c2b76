/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Standard base64 (RFC 4648, with padding) of n bytes of s into a heap
 * buffer, NUL-terminated for text. -EBADMSG when s is not base64, -ENOMEM. */
int cub_base64_decode(const char *s, size_t n, uint8_t **ret, size_t *ret_len);
