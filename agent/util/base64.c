/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>

#include "base64.h"

int cub_base64_decode(const char *s, size_t n, uint8_t **ret, size_t *ret_len) {
        size_t pad = 0;
        uint8_t *out;
        int k;

        if (n % 4 != 0 || n > (size_t) INT32_MAX)
                return -EBADMSG;
        out = malloc(n / 4 * 3 + 1);
        if (!out)
                return -ENOMEM;
        k = n ? EVP_DecodeBlock(out, (const unsigned char *) s, (int) n) : 0;
        if (k < 0) {
                free(out);
                return -EBADMSG;
        }
        while (pad < 2 && n > pad && s[n - 1 - pad] == '=')
                pad++;
        *ret_len = (size_t) k - pad;
        out[*ret_len] = 0;
        *ret = out;
        return 0;
}
