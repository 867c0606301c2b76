/* SPDX-License-Identifier: Apache-2.0 */
/* A synchronous POST to the API server for the kubelet server's threads:
 * TokenReview and SubjectAccessReview (client.h). The loop never calls it:
 * its requests go through the multi interface (client.c). */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "client.h"

#define REVIEW_MAX (1u << 20)

typedef struct Body {
        char *data;
        size_t len;
} Body;

static size_t on_data(char *p, size_t size, size_t n, void *userdata) {
        Body *b = userdata;
        char *nd;

        if (b->len + size * n > REVIEW_MAX)
                return 0;
        nd = realloc(b->data, b->len + size * n + 1);
        if (!nd)
                return 0;
        memcpy(nd + b->len, p, size * n);
        b->data = nd;
        b->len += size * n;
        b->data[b->len] = '\0';
        return size * n;
}

int kube_review_post(const KubeConfig *cfg, const char *path, json_t *body, json_t **ret_status, CubError *err) {
        _cleanup_free_ char *url = NULL, *text = json_dumps(body, JSON_COMPACT), *auth = NULL;
        char errbuf[CURL_ERROR_SIZE] = "";
        struct curl_slist *h = NULL;
        Body b = {};
        CURL *e = curl_easy_init();
        json_t *doc = NULL;
        long status = 0;
        CURLcode cr;
        int r = 0;

        *ret_status = NULL;
        if (!e || !text || asprintf(&url, "%s%s", cfg->server, path) < 0 ||
            (cfg->token && asprintf(&auth, "Authorization: Bearer %s", cfg->token) < 0)) {
                if (e)
                        curl_easy_cleanup(e);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        h = curl_slist_append(NULL, "Content-Type: application/json");
        h = h ? curl_slist_append(h, "Accept: application/json") : NULL;
        if (h && auth)
                h = curl_slist_append(h, auth);
        if (!h || curl_easy_setopt(e, CURLOPT_URL, url) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https") != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, text) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_HTTPHEADER, h) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long) (KUBE_TIMEOUT_USEC / 1000)) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_USERAGENT, "cubelet/" CUBELET_VERSION) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_WRITEDATA, &b) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK || kube_curl_tls(e, cfg) < 0) {
                r = cub_err_set(err, EINVAL, "POST %s: libcurl refused an option", path);
                goto done;
        }
        cr = curl_easy_perform(e);
        if (cr != CURLE_OK) {
                r = cub_err_set(err, EIO, "POST %s: %s", path, *errbuf ? errbuf : curl_easy_strerror(cr));
                goto done;
        }
        (void) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        doc = b.data ? json_loadb(b.data, b.len, 0, NULL) : NULL;
        if (status < 200 || status > 299) {
                r = cub_err_set(err, EIO, "POST %s: %ld %s", path, status,
                                json_string_value(json_object_get(doc, "message")) ?: "");
                goto done;
        }
        if (!json_is_object(json_object_get(doc, "status"))) {
                r = cub_err_set(err, EPROTO, "POST %s: the answer has no status", path);
                goto done;
        }
        *ret_status = json_incref(json_object_get(doc, "status"));
done:
        json_decref(doc);
        free(b.data);
        curl_slist_free_all(h);
        curl_easy_cleanup(e);
        return r;
}
