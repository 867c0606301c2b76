/* SPDX-License-Identifier: Apache-2.0 */
/* Lifecycle hooks (postStart, preStop) run on a pod worker's thread, where
 * blocking is fine: exec through ExecSync, httpGet with one blocking curl
 * easy transfer, sleep. As kubelet's handler runner, an httpGet hook fails
 * only when the request fails, whatever the status. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "probes.h"

static size_t discard(char *p, size_t size, size_t n, void *u) {
        (void) p;
        (void) u;
        return size * n;
}

static int hook_http(const ProbeTarget *t, CubError *err) {
        const char *host = t->host && *t->host ? t->host : "127.0.0.1";
        bool v6 = strchr(host, ':') != NULL;
        const char *path = t->path && *t->path ? t->path : "/";
        struct curl_slist *h = NULL;
        char url[1024];
        CURLcode code;
        CURL *e;

        (void) snprintf(url, sizeof(url), "%s://%s%s%s:%d%s%s",
                        t->scheme && strcmp(t->scheme, "HTTPS") == 0 ? "https" : "http", v6 ? "[" : "", host,
                        v6 ? "]" : "", t->port, path[0] == '/' ? "" : "/", path);
        for (size_t i = 0; i < t->n_headers; i++) {
                char line[1024];

                (void) snprintf(line, sizeof(line), "%s: %s", t->headers[i].name,
                                t->headers[i].value ? t->headers[i].value : "");
                h = curl_slist_append(h, line);
        }
        e = curl_easy_init();
        if (!e) {
                curl_slist_free_all(h);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        (void) curl_easy_setopt(e, CURLOPT_URL, url);
        (void) curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        (void) curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        (void) curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
        (void) curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        (void) curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        (void) curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
        if (t->timeout_s > 0)
                (void) curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long) t->timeout_s * 1000L);
        code = curl_easy_perform(e);
        curl_easy_cleanup(e);
        curl_slist_free_all(h);
        if (code != CURLE_OK)
                return cub_err_set(err, EIO, "Get \"%s\": %s", url, curl_easy_strerror(code));
        return 0;
}

int probe_run_hook(CriClient *cri, const ProbeTarget *t, CubError *err) {
        CriExecResult res = {};
        int r;

        switch (t->kind) {
        case POD_HANDLER_EXEC:
                r = cri_exec_sync(cri, t->container_id, t->command, t->timeout_s, &res, err);
                if (r < 0)
                        return r;
                if (res.exit_code != 0) {
                        /* kubelet's message carries the command's output, stdout then stderr */
                        r = cub_err_set(err, EIO, "command '%s' exited with %d: %.200s%.200s", t->command[0],
                                        res.exit_code, res.out, res.err_out);
                        cri_exec_result_done(&res);
                        return r;
                }
                cri_exec_result_done(&res);
                return 0;
        case POD_HANDLER_HTTP_GET:
                return hook_http(t, err);
        case POD_HANDLER_SLEEP: {
                struct timespec ts = { .tv_sec = t->sleep_s > 0 ? t->sleep_s : 0 };

                while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                        ;
                return 0;
        }
        default:
                return cub_err_set(err, EOPNOTSUPP, "hook handler not supported");
        }
}
