/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by http.c (one GET and its result) and http-loop.c (libcurl's
 * multi interface on sd-event), and their unit tests. */

#include "podsrc.h"

struct PodsrcHttp {
        char *url;
        char *node_name;
        struct curl_slist *headers; /* the configured ones */
        char *ca_file, *client_cert, *client_key;
        uint64_t timeout_usec;
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
        PodsrcCurl *curl;
        sd_event_source *period_timer;
        uint64_t period_usec;
        PodsrcHttpFn fn;
        void *userdata;
        bool poll_again;
};

void podsrc_http_loop_done(PodsrcHttp *h);
