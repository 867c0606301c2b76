/* SPDX-License-Identifier: Apache-2.0 */
/* cubelet-gpu-plugin: placeholder until the daemon lands. */
#include <stdio.h>

int main(void) {
        fputs("cubelet-gpu-plugin: not built yet\n", stderr);
        return 1;
}
