/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pause — the sandbox process of a cubelet pod, packaged as localhost/cubelet/pause:1.
 *
 * It holds the pod's namespaces open and does nothing else, like Kubernetes' pause:
 *   - blocks until SIGINT or SIGTERM, then exits 0;
 *   - reaps every child it inherits (it is PID 1 of the pod's PID namespace when the pod
 *     shares one), so no zombie outlives its parent;
 *   - `pause -v` prints its version and exits 0.
 *
 * Signals are taken synchronously with sigwaitinfo() on a blocked set (catatonit's pattern),
 * so no work runs in an async handler. This also works as PID 1 of a PID namespace: the kernel
 * drops SIG_DFL signals sent to a namespace init, but never a signal that is blocked (the
 * process may still decide to take it), so SIGTERM from the runtime is queued and read here.
 *
 * Built -static: the image holds this one file and nothing else.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* sigwaitinfo, strsignal: builds with plain -std=c17 too */
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PAUSE_VERSION
#define PAUSE_VERSION "1"
#endif

/* Reaps every exited child; SIGCHLD signals coalesce, so one may stand for many. */
static void reap_children(void) {
        for (;;) {
                pid_t pid = waitpid(-1, NULL, WNOHANG);
                if (pid > 0)
                        continue;
                if (pid < 0 && errno == EINTR)
                        continue;
                return; /* 0: children left but none exited; -1/ECHILD: none left */
        }
}

int main(int argc, char *argv[]) {
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--version") == 0) {
                        printf("pause (cubelet) %s\n", PAUSE_VERSION);
                        return EXIT_SUCCESS;
                }
                fprintf(stderr, "pause: unknown argument '%s', ignoring\n", argv[i]);
        }

        if (getpid() != 1)
                fprintf(stderr, "pause: warning: not PID 1, orphaned processes are not reaped here\n");

        sigset_t set;
        if (sigemptyset(&set) < 0 || sigaddset(&set, SIGINT) < 0 || sigaddset(&set, SIGTERM) < 0 ||
            sigaddset(&set, SIGCHLD) < 0) {
                perror("pause: sigset");
                return EXIT_FAILURE;
        }
        if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
                perror("pause: sigprocmask");
                return EXIT_FAILURE;
        }

        for (;;) {
                siginfo_t si;
                int sig = sigwaitinfo(&set, &si);
                if (sig < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("pause: sigwaitinfo");
                        return EXIT_FAILURE;
                }
                switch (sig) {
                case SIGCHLD:
                        reap_children();
                        break;
                case SIGINT:
                case SIGTERM:
                        fprintf(stderr, "pause: shutting down, got signal '%s'\n", strsignal(sig));
                        return EXIT_SUCCESS;
                default:
                        break;
                }
        }
}
