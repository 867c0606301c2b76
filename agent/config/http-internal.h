/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by http.c (one GET and its result) and http-loop.c (libcurl's
 * multi interface on sd-event), and their unit tests. */

#include "../util/curl-event.h"
#include "podsrc.h"

struct PodsrcHttp {
        char *url;
        char *node_name;
        struct curl_slist *headers; /* the configured ones */
        char *ca_file, *client_cert, *client_key;
        uint64_t timeout_usec;
        char *cache_path; /* the last good answer on disk (url-cache.c); NULL: none */
        char *save_body;  /* the last good answer's body, until podsrc_http_save_cache() */
        size_t save_len;
        /* the last good 200 */
        char *etag, *last_modified;
        unsigned char body_hash[32];
        bool have_hash;
        /* the transfer in flight */
        CURL *easy;
        struct curl_slist *req_headers;
        char *body;
        size_t len, cap;
        bool too_large;
        char status_line[256];
        char errbuf[CURL_ERROR_SIZE];
        uint64_t start_usec;
        PodsrcHttpStats stats;
        /* the poller (http-loop.c) */
        CubCurl *curl;
        sd_event_source *period_timer;
        uint64_t period_usec;
        PodsrcHttpFn fn;
        void *userdata;
        bool poll_again;
};

void podsrc_http_loop_done(PodsrcHttp *h);

/* url-cache.c: the last good answer on disk */
typedef struct PodsrcHttpCache {
        char *url, *etag, *last_modified; /* etag, last_modified may be NULL */
        char *body;                       /* NUL-terminated */
        size_t len;
        unsigned char hash[32];
} PodsrcHttpCache;

int podsrc_http_body_hash(const char *buf, size_t len, unsigned char out[static 32]);
/* Replaces path atomically; errors name path. */
int podsrc_http_cache_write(const char *path, const char *url, const char *etag, const char *last_modified,
                            const char *body, size_t len, const unsigned char hash[static 32], CubError *err);
/* The answer kept in path for url: -ENOENT when there is none, -EBADMSG
 * when the file is not one (bad JSON, a member missing, the body's hash
 * differs), -ESTALE when it is another URL's; errors name path. */
int podsrc_http_cache_read(const char *path, const char *url, PodsrcHttpCache *ret, CubError *err);
void podsrc_http_cache_done(PodsrcHttpCache *c);
