/* SPDX-License-Identifier: Apache-2.0 */
/* Replays a fuzz corpus through a target without libFuzzer (systemd's
 * fuzz-main.c): `replay-<target> DIR|FILE...`, one TAP line per input. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/util/fileio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run_one(const char *path, unsigned *n) {
        char *buf = NULL;
        size_t size = 0;
        CubError err = {};

        if (cub_read_file(path, 16 * 1024 * 1024, &buf, &size, &err) < 0) {
                printf("not ok %u - %s: %s\n", ++*n, path, err.msg);
                return;
        }
        (void) LLVMFuzzerTestOneInput((const uint8_t *) buf, size);
        free(buf);
        printf("ok %u - %s\n", ++*n, path);
        fflush(stdout);
}

int main(int argc, char **argv) {
        unsigned n = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                struct dirent **names;
                int k;

                if (stat(argv[i], &st) < 0 || !S_ISDIR(st.st_mode)) {
                        run_one(argv[i], &n);
                        continue;
                }
                k = scandir(argv[i], &names, NULL, alphasort);
                if (k < 0) {
                        printf("not ok %u - %s: cannot list\n", ++n, argv[i]);
                        continue;
                }
                for (int j = 0; j < k; j++) {
                        char *p;

                        if (names[j]->d_name[0] != '.' && asprintf(&p, "%s/%s", argv[i], names[j]->d_name) >= 0) {
                                run_one(p, &n);
                                free(p);
                        }
                        free(names[j]);
                }
                free(names);
        }
        printf("1..%u\n", n);
        return 0;
}
