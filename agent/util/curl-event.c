/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl's multi interface driven by an sd-event loop (curl-event.h),
 * shared by the manifest URL's poller (agent/config/http-loop.c), the API
 * server's client (agent/cluster/client.c) and the httpGet probes
 * (agent/probes). curl tells which sockets it waits on
 * (CURLMOPT_SOCKETFUNCTION: an io source each) and when it wants to be
 * called back (CURLMOPT_TIMERFUNCTION: one time source); both call
 * curl_multi_socket_action(), and each finished transfer goes to the
 * owner's function. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curl-event.h"
#include "time.h"

/* sd-event's default accuracy (0) is 250 ms: curl's timeouts want ms */
#define ACCURACY_USEC CUB_USEC_PER_MSEC

struct CubCurl {
        sd_event *event;
        CURLM *multi;
        sd_event_source *timer;
        char *name;
        CubCurlDoneFn fn;
        void *userdata;
};

static void check_done(CubCurl *c) {
        CURLMsg *m;
        int left;

        while ((m = curl_multi_info_read(c->multi, &left))) {
                CURL *easy = m->easy_handle;
                CURLcode code = m->data.result;

                if (m->msg != CURLMSG_DONE)
                        continue;
                (void) curl_multi_remove_handle(c->multi, easy);
                c->fn(easy, code, c->userdata);
        }
}

static int on_socket(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        CubCurl *c = userdata;
        int mask = 0, running = 0;

        (void) s;
        if (revents & EPOLLIN)
                mask |= CURL_CSELECT_IN;
        if (revents & EPOLLOUT)
                mask |= CURL_CSELECT_OUT;
        if (revents & (EPOLLERR | EPOLLHUP))
                mask |= CURL_CSELECT_ERR;
        (void) curl_multi_socket_action(c->multi, fd, mask, &running);
        check_done(c);
        return 0;
}

static int socket_fn(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
        CubCurl *c = userp;
        sd_event_source *src = socketp;
        uint32_t events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);

        (void) easy;
        if (what == CURL_POLL_REMOVE) {
                (void) sd_event_source_disable_unref(src);
                (void) curl_multi_assign(c->multi, fd, NULL);
                return 0;
        }
        if (src)
                return sd_event_source_set_io_events(src, events) < 0 ? -1 : 0;
        if (sd_event_add_io(c->event, &src, fd, events, on_socket, c) < 0)
                return -1;
        (void) sd_event_source_set_description(src, c->name);
        if (curl_multi_assign(c->multi, fd, src) != CURLM_OK) {
                (void) sd_event_source_disable_unref(src);
                return -1;
        }
        return 0;
}

static int on_curl_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        CubCurl *c = userdata;
        int running = 0;

        (void) s;
        (void) usec;
        (void) curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        check_done(c);
        return 0;
}

static int timer_fn(CURLM *multi, long timeout_ms, void *userp) {
        CubCurl *c = userp;

        (void) multi;
        if (timeout_ms < 0)
                return sd_event_source_set_enabled(c->timer, SD_EVENT_OFF) < 0 ? -1 : 0;
        if (sd_event_source_set_time_relative(c->timer, (uint64_t) timeout_ms * CUB_USEC_PER_MSEC) < 0 ||
            sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT) < 0)
                return -1;
        return 0;
}

int cub_curl_new(sd_event *e, const char *name, CubCurlDoneFn fn, void *userdata, CubCurl **ret, CubError *err) {
        CubCurl *c = calloc(1, sizeof(*c));
        int r;

        if (!c || !(c->name = strdup(name))) {
                free(c);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        c->fn = fn;
        c->userdata = userdata;
        c->multi = curl_multi_init();
        if (!c->multi) {
                cub_curl_free(c);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        c->event = sd_event_ref(e);
        if (curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_fn) != CURLM_OK ||
            curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c) != CURLM_OK ||
            curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_fn) != CURLM_OK ||
            curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c) != CURLM_OK) {
                cub_curl_free(c);
                return cub_err_set(err, EINVAL, "%s: libcurl refused a multi option", name);
        }
        r = sd_event_add_time_relative(e, &c->timer, CLOCK_MONOTONIC, 0, ACCURACY_USEC, on_curl_timer, c);
        if (r < 0) {
                cub_curl_free(c);
                return cub_err_set(err, -r, "%s: sd-event: %s", name, strerror(-r));
        }
        (void) sd_event_source_set_description(c->timer, name);
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
        *ret = c;
        return 0;
}

int cub_curl_add(CubCurl *c, CURL *easy) {
        return curl_multi_add_handle(c->multi, easy) == CURLM_OK ? 0 : -EIO;
}

void cub_curl_remove(CubCurl *c, CURL *easy) {
        if (c && easy)
                (void) curl_multi_remove_handle(c->multi, easy);
}

CubCurl *cub_curl_free(CubCurl *c) {
        if (!c)
                return NULL;
        if (c->multi)
                (void) curl_multi_cleanup(c->multi);
        c->timer = sd_event_source_disable_unref(c->timer);
        sd_event_unref(c->event);
        free(c->name);
        free(c);
        return NULL;
}
