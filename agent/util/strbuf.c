/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

void cub_strbuf_add(CubStrBuf *b, const char *s, size_t n) {
        if (b->oom)
                return;
        if (b->n + n + 1 > b->cap) {
                size_t cap = (b->n + n + 1) * 2;
                char *p = realloc(b->s, cap);

                if (!p) {
                        b->oom = true;
                        return;
                }
                b->s = p;
                b->cap = cap;
        }
        memcpy(b->s + b->n, s, n);
        b->n += n;
        b->s[b->n] = '\0';
}

void cub_strbuf_str(CubStrBuf *b, const char *s) {
        cub_strbuf_add(b, s, strlen(s));
}
