/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A growable NUL-terminated string. An allocation failure is sticky: later
 * appends do nothing and oom stays set, so a builder checks once at the end.
 * Zero-initialised it is empty with s NULL; free(s) when done. */
typedef struct CubStrBuf {
        char *s;
        size_t n, cap;
        bool oom;
} CubStrBuf;

void cub_strbuf_add(CubStrBuf *b, const char *s, size_t n);
void cub_strbuf_str(CubStrBuf *b, const char *s);
