/* SPDX-License-Identifier: Apache-2.0 */
/* status-fetch [SOCKET]: the document of cubelet's status socket (default
 * /run/cubelet/cubelet.sock) on stdout, with a newline: exactly what
 * `cubelet status -o json` prints (agent/status.c writes the socket's reply
 * as it is). Linked statically, so that the VM scenarios' polls (every
 * 0.2-0.5 s) cost one exec and no dynamic linking: under qemu's software
 * emulation `cubelet status` spends ~0.4 s resolving its ~90 libraries. The
 * scenarios still run `cubelet status` itself for what they check of the CLI. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
        const char *path = argc > 1 ? argv[1] : "/run/cubelet/cubelet.sock";
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        char buf[65536];
        size_t total = 0;
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "status-fetch: socket path too long: %s\n", path);
                return 2;
        }
        memcpy(sa.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                fprintf(stderr, "status-fetch: %s: %s\n", path, strerror(errno));
                return 1;
        }
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        fprintf(stderr, "status-fetch: %s: read: %s\n", path, strerror(errno));
                        return 1;
                }
                if (n == 0)
                        break;
                if (fwrite(buf, 1, (size_t) n, stdout) != (size_t) n)
                        return 1;
                total += (size_t) n;
        }
        if (total == 0) {
                fprintf(stderr, "status-fetch: %s: empty reply\n", path);
                return 1;
        }
        putchar('\n');
        return fflush(stdout) == 0 ? 0 : 1;
}
