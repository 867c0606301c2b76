/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest URL's poller: one GET at a time through the shared libcurl
 * multi glue on sd-event (agent/util/curl-event.c); a finished transfer goes through
 * podsrc_http_finish() to the caller's function. The next GET is due
 * period_usec after the previous one ended. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/time.h"
#include "http-internal.h"

#define ACCURACY_USEC CUB_USEC_PER_MSEC

static void on_done(CURL *easy, CURLcode code, void *userdata) {
        PodsrcHttp *h = userdata;
        PodsrcSet set = {};
        CubError err = {};
        int r;

        r = podsrc_http_finish(h, easy, code, &set, &err);
        if (h->fn)
                h->fn(h, r, r == 1 ? &set : NULL, &err, h->userdata);
        podsrc_set_done(&set);
        (void) podsrc_http_save_cache(h); /* fn may have done it */
        (void) sd_event_source_set_time_relative(h->period_timer, h->poll_again ? 0 : h->period_usec);
        (void) sd_event_source_set_enabled(h->period_timer, SD_EVENT_ONESHOT);
        h->poll_again = false;
}

static void start(PodsrcHttp *h) {
        CubError err = {};
        CURL *easy;
        int r;

        r = podsrc_http_begin(h, &easy, &err);
        if (r >= 0 && cub_curl_add(h->curl, easy) < 0) {
                (void) podsrc_http_finish(h, easy, CURLE_FAILED_INIT, NULL, NULL);
                r = cub_err_set(&err, EIO, "%s: libcurl could not start the transfer", h->url);
        }
        if (r >= 0)
                return;
        if (h->fn)
                h->fn(h, r, NULL, &err, h->userdata);
        (void) sd_event_source_set_time_relative(h->period_timer, h->period_usec);
        (void) sd_event_source_set_enabled(h->period_timer, SD_EVENT_ONESHOT);
}

static int on_period(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        start(userdata);
        return 0;
}

void podsrc_http_poll_now(PodsrcHttp *h) {
        if (!h->period_timer)
                return;
        if (h->easy) {
                h->poll_again = true;
                return;
        }
        (void) sd_event_source_set_time_relative(h->period_timer, 0);
        (void) sd_event_source_set_enabled(h->period_timer, SD_EVENT_ONESHOT);
}

int podsrc_http_attach(PodsrcHttp *h, sd_event *e, uint64_t period_usec, PodsrcHttpFn fn, void *userdata,
                       CubError *err) {
        int r;

        if (h->curl)
                return cub_err_set(err, EBUSY, "%s: already attached", h->url);
        r = cub_curl_new(e, "manifest-url-curl", on_done, h, &h->curl, err);
        if (r < 0)
                return cub_err_wrap(err, "%s", h->url);
        h->period_usec = period_usec ? period_usec : 20 * CUB_USEC_PER_SEC;
        h->fn = fn;
        h->userdata = userdata;
        r = sd_event_add_time_relative(e, &h->period_timer, CLOCK_MONOTONIC, 0, ACCURACY_USEC, on_period, h);
        if (r < 0) {
                podsrc_http_loop_done(h);
                return cub_err_set(err, -r, "%s: sd-event: %s", h->url, strerror(-r));
        }
        (void) sd_event_source_set_description(h->period_timer, "manifest-url");
        (void) sd_event_source_set_enabled(h->period_timer, SD_EVENT_ONESHOT);
        return 0;
}

void podsrc_http_loop_done(PodsrcHttp *h) {
        if (h->curl && h->easy)
                cub_curl_remove(h->curl, h->easy);
        h->curl = cub_curl_free(h->curl);
        h->period_timer = sd_event_source_disable_unref(h->period_timer);
        h->fn = NULL;
}
