/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the resource.Quantity parser and its formatter. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pod/pod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char buf[CUB_QUANTITY_STR_MAX], *s;
        CubQuantity q, back;
        CubError err = {};

        if (size > 256)
                return 0;
        s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        if (cub_quantity_parse(s, &q, &err) >= 0) {
                /* the canonical text of a quantity parses back to the same value */
                if (cub_quantity_parse(cub_quantity_format(q, true, buf), &back, NULL) < 0 ||
                    cub_quantity_cmp(q, back) != 0)
                        abort();
                (void) cub_quantity_format(q, false, buf);
                (void) cub_quantity_milli(q);
                (void) cub_quantity_value(q);
        }
        free(s);
        return 0;
}
