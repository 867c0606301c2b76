/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest URL's poller: libcurl's multi interface driven by an
 * sd-event loop. curl tells which sockets it waits on (CURLMOPT_SOCKETFUNCTION:
 * an io source each) and when it wants to be called back
 * (CURLMOPT_TIMERFUNCTION: one time source); both call
 * curl_multi_socket_action(), and a finished transfer goes through
 * podsrc_http_finish() to the caller's function. The next GET is due
 * period_usec after the previous one ended. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/time.h"
#include "http-internal.h"

/* sd-event's default accuracy (0) is 250 ms: curl's timeouts want ms */
#define ACCURACY_USEC CUB_USEC_PER_MSEC

static void check_done(PodsrcHttp *h) {
        CURLMsg *m;
        int left;

        while ((m = curl_multi_info_read(h->multi, &left))) {
                CURL *easy = m->easy_handle;
                CURLcode code = m->data.result;
                PodsrcSet set = {};
                CubError err = {};
                int r;

                if (m->msg != CURLMSG_DONE)
                        continue;
                (void) curl_multi_remove_handle(h->multi, easy);
                r = podsrc_http_finish(h, easy, code, &set, &err);
                if (h->fn)
                        h->fn(h, r, r == 1 ? &set : NULL, &err, h->userdata);
                podsrc_set_done(&set);
                (void) sd_event_source_set_time_relative(h->period_timer, h->poll_again ? 0 : h->period_usec);
                (void) sd_event_source_set_enabled(h->period_timer, SD_EVENT_ONESHOT);
                h->poll_again = false;
        }
}

static int on_socket(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PodsrcHttp *h = userdata;
        int mask = 0, running = 0;

        (void) s;
        if (revents & EPOLLIN)
                mask |= CURL_CSELECT_IN;
        if (revents & EPOLLOUT)
                mask |= CURL_CSELECT_OUT;
        if (revents & (EPOLLERR | EPOLLHUP))
                mask |= CURL_CSELECT_ERR;
        (void) curl_multi_socket_action(h->multi, fd, mask, &running);
        check_done(h);
        return 0;
}

static int socket_fn(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
        PodsrcHttp *h = userp;
        sd_event_source *src = socketp;
        uint32_t events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);

        (void) easy;
        if (what == CURL_POLL_REMOVE) {
                (void) sd_event_source_disable_unref(src);
                (void) curl_multi_assign(h->multi, fd, NULL);
                return 0;
        }
        if (src)
                return sd_event_source_set_io_events(src, events) < 0 ? -1 : 0;
        if (sd_event_add_io(h->event, &src, fd, events, on_socket, h) < 0)
                return -1;
        (void) sd_event_source_set_description(src, "manifest-url-socket");
        if (curl_multi_assign(h->multi, fd, src) != CURLM_OK) {
                (void) sd_event_source_disable_unref(src);
                return -1;
        }
        return 0;
}

static int on_curl_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        PodsrcHttp *h = userdata;
        int running = 0;

        (void) s;
        (void) usec;
        (void) curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        check_done(h);
        return 0;
}

static int timer_fn(CURLM *multi, long timeout_ms, void *userp) {
        PodsrcHttp *h = userp;

        (void) multi;
        if (timeout_ms < 0)
                return sd_event_source_set_enabled(h->curl_timer, SD_EVENT_OFF) < 0 ? -1 : 0;
        if (sd_event_source_set_time_relative(h->curl_timer, (uint64_t) timeout_ms * CUB_USEC_PER_MSEC) < 0 ||
            sd_event_source_set_enabled(h->curl_timer, SD_EVENT_ONESHOT) < 0)
                return -1;
        return 0;
}

static void start(PodsrcHttp *h) {
        CubError err = {};
        CURL *easy;
        int r;

        r = podsrc_http_begin(h, &easy, &err);
        if (r >= 0 && curl_multi_add_handle(h->multi, easy) != CURLM_OK) {
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

        if (h->multi)
                return cub_err_set(err, EBUSY, "%s: already attached", h->url);
        h->multi = curl_multi_init();
        if (!h->multi)
                return cub_err_set(err, ENOMEM, "out of memory");
        h->event = sd_event_ref(e);
        h->period_usec = period_usec ? period_usec : 20 * CUB_USEC_PER_SEC;
        h->fn = fn;
        h->userdata = userdata;
        if (curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, socket_fn) != CURLM_OK ||
            curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h) != CURLM_OK ||
            curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_fn) != CURLM_OK ||
            curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h) != CURLM_OK) {
                podsrc_http_loop_done(h);
                return cub_err_set(err, EINVAL, "%s: libcurl refused a multi option", h->url);
        }
        r = sd_event_add_time_relative(e, &h->curl_timer, CLOCK_MONOTONIC, 0, ACCURACY_USEC, on_curl_timer, h);
        if (r >= 0)
                r = sd_event_add_time_relative(e, &h->period_timer, CLOCK_MONOTONIC, 0, ACCURACY_USEC, on_period, h);
        if (r < 0) {
                podsrc_http_loop_done(h);
                return cub_err_set(err, -r, "%s: sd-event: %s", h->url, strerror(-r));
        }
        (void) sd_event_source_set_description(h->curl_timer, "manifest-url-curl");
        (void) sd_event_source_set_description(h->period_timer, "manifest-url");
        (void) sd_event_source_set_enabled(h->curl_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(h->period_timer, SD_EVENT_ONESHOT);
        return 0;
}

void podsrc_http_loop_done(PodsrcHttp *h) {
        if (h->multi) {
                if (h->easy)
                        (void) curl_multi_remove_handle(h->multi, h->easy);
                (void) curl_multi_cleanup(h->multi);
                h->multi = NULL;
        }
        h->curl_timer = sd_event_source_disable_unref(h->curl_timer);
        h->period_timer = sd_event_source_disable_unref(h->period_timer);
        h->event = sd_event_unref(h->event);
        h->fn = NULL;
}
