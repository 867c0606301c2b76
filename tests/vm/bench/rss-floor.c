/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RSS floor of `make bench` (issue #9): a program linked as cubelet is
 * (the same Debian libraries through pkg-config, so the same ~100 shared
 * objects mapped, relocated and constructed), which starts gRPC core
 * (grpc_init: its threads) and libcurl (curl_global_init: gnutls), turns
 * transparent huge pages off as cubelet does, and does nothing else. What
 * cubelet's RSS is above this figure is cubelet's own.
 *
 *   rss-floor        prints "VmRSS N kB (RssAnon N kB, RssFile N kB), threads N"
 */
#include <curl/curl.h>
#include <grpc/grpc.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static long field(const char *name) {
        char line[256];
        long v = -1;
        FILE *f = fopen("/proc/self/status", "re");

        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, name, strlen(name)) == 0 && line[strlen(name)] == ':')
                        (void) sscanf(line + strlen(name) + 1, "%ld", &v);
        fclose(f);
        return v;
}

int main(void) {
        (void) prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
        grpc_init();
        (void) curl_global_init(CURL_GLOBAL_DEFAULT);
        sleep(3); /* gRPC's threads settle */
        printf("VmRSS %ld kB (RssAnon %ld kB, RssFile %ld kB), threads %ld\n", field("VmRSS"), field("RssAnon"),
               field("RssFile"), field("Threads"));
        curl_global_cleanup();
        grpc_shutdown();
        return 0;
}
