/* SPDX-License-Identifier: Apache-2.0 */
/* Requests to the API server on the loop: one easy handle per request, the
 * credentials as blobs (the kubeconfig read them at start), the answer
 * collected up to KUBE_BODY_MAX and decoded as JSON. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/curl-event.h"
#include "../util/cleanup.h"
#include "client.h"

typedef struct KubeRequest {
        KubeClient *client;
        uint64_t id;
        CURL *easy;
        struct curl_slist *headers;
        char *method, *path, *body_out;
        char *body;
        size_t len, cap;
        bool too_large;
        char errbuf[CURL_ERROR_SIZE];
        KubeAnswerFn fn;
        KubeLineFn line_fn; /* a watch: each line as it comes */
        void *userdata;
        bool held;      /* not handed to libcurl yet (the next loop turn, or a Retry-After's end) */
        bool unlimited; /* a watch, or the node's heartbeat (its Node, its Lease): never waits for a slot */
        bool cancelled; /* its answer is not wanted: freed on the next loop turn */
        struct KubeRequest *next;
} KubeRequest;

struct KubeClient {
        sd_event *event;
        /* hands held requests to libcurl and frees cancelled ones, on a loop
         * turn of its own: a request may be started or cancelled from inside
         * a libcurl callback (a watch line), where the multi handle refuses
         * to be changed (CURLM_RECURSIVE_API_CALL) */
        sd_event_source *hold_timer;
        uint64_t hold_until; /* a 429's or 503's Retry-After: no request starts before (monotonic) */
        CubCurl *curl;
        KubeConfig cfg;
        char *auth_header;
        KubeRequest *inflight;
        uint64_t next_id;
        KubeClientStats stats;
};

/* Requests (not watches) libcurl works on at once; the others wait here,
 * their timeout not started, oldest first. Without it a burst (the status
 * of 250 new pods, their tokens and ConfigMaps) waited in the API server's
 * queues past its 10 s timeout and was all sent again, every second: 500
 * API pods kept one node at 64 % of a CPU and 23 requests/s, idle
 * (docs/scale.md). kubelet's client-side limit is a rate (kubeAPIQPS 50,
 * burst 100). Watches and the node's heartbeat (its Node and its Lease,
 * kubelet's separate heartbeat client) never wait. */
#define KUBE_MAX_ACTIVE 32

static void request_free(KubeRequest *q) {
        if (!q)
                return;
        if (q->easy)
                curl_easy_cleanup(q->easy);
        curl_slist_free_all(q->headers);
        free(q->method);
        free(q->path);
        free(q->body_out);
        free(q->body);
        free(q);
}

static void unlink_request(KubeClient *c, KubeRequest *q) {
        for (KubeRequest **p = &c->inflight; *p; p = &(*p)->next)
                if (*p == q) {
                        *p = q->next;
                        return;
                }
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata) {
        KubeRequest *q = userdata;
        size_t n = size * nmemb;

        if (q->len + n > KUBE_BODY_MAX) {
                q->too_large = true;
                return 0; /* curl ends the transfer: CURLE_WRITE_ERROR */
        }
        if (q->len + n + 1 > q->cap) {
                size_t ncap = q->cap ? q->cap : 4096;
                char *nb;

                while (ncap < q->len + n + 1)
                        ncap *= 2;
                nb = realloc(q->body, ncap);
                if (!nb)
                        return 0;
                q->body = nb;
                q->cap = ncap;
        }
        memcpy(q->body + q->len, ptr, n);
        q->len += n;
        q->body[q->len] = 0;
        if (q->line_fn) {
                char *start = q->body, *nl;
                long status = 0;
                size_t used;

                /* a watch answers 200; anything else is one Status, read at the end */
                (void) curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &status);
                if (status != 200)
                        return n;
                while ((nl = memchr(start, '\n', q->len - (size_t) (start - q->body)))) {
                        *nl = 0;
                        if (nl > start)
                                q->line_fn(q->userdata, start, (size_t) (nl - start));
                        start = nl + 1;
                }
                used = (size_t) (start - q->body);
                q->len -= used;
                memmove(q->body, start, q->len + 1);
                q->client->stats.bytes_in += used;
        }
        return n;
}

/* the server's Status message (kind: Status), or the start of the body */
static void status_message(const KubeRequest *q, json_t *body, char *buf, size_t size) {
        const char *m = json_string_value(json_object_get(body, "message"));

        if (m)
                (void) snprintf(buf, size, "%s", m);
        else if (q->len)
                (void) snprintf(buf, size, "%.200s", q->body);
        else
                (void) snprintf(buf, size, "no body");
}

static bool tls_error(CURLcode code) {
        return code == CURLE_SSL_CONNECT_ERROR || code == CURLE_PEER_FAILED_VERIFICATION ||
               code == CURLE_SSL_CERTPROBLEM || code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_CIPHER;
}

/* a 429 or 503 with Retry-After: seconds (an HTTP date is taken as 1 s),
 * capped; 0: none */
static uint64_t retry_after_usec(CURL *easy, long status) {
        struct curl_header *h = NULL;
        char *end;
        unsigned long v;

        if ((status != 429 && status != 503) ||
            curl_easy_header(easy, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK || !h || !h->value)
                return 0;
        errno = 0;
        v = strtoul(h->value, &end, 10);
        if (end == h->value || errno)
                v = 1;
        if (v > KUBE_RETRY_AFTER_MAX_S)
                v = KUBE_RETRY_AFTER_MAX_S;
        return (uint64_t) (v ? v : 1) * 1000000ULL;
}

/* the next loop turn, or the end of a Retry-After for held requests */
static void kick(KubeClient *c) {
        uint64_t now = 0;

        (void) sd_event_now(c->event, CLOCK_MONOTONIC, &now);
        (void) sd_event_source_set_time(c->hold_timer, c->hold_until > now ? c->hold_until : now);
        (void) sd_event_source_set_enabled(c->hold_timer, SD_EVENT_ONESHOT);
}

static void hold(KubeClient *c, uint64_t usec) {
        uint64_t now = 0;

        (void) sd_event_now(c->event, CLOCK_MONOTONIC, &now);
        if (now + usec <= c->hold_until)
                return;
        c->hold_until = now + usec;
        c->stats.holds++;
        kick(c);
}

static void on_done(CURL *easy, CURLcode code, void *userdata) {
        KubeClient *c = userdata;
        KubeRequest *q = NULL;
        _cleanup_(json_decrefp) json_t *body = NULL;
        char error[CUB_ERR_MSG_MAX] = "", msg[768];
        long status = 0;

        (void) curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **) &q);
        if (!q)
                return;
        unlink_request(c, q);
        for (KubeRequest *h = c->inflight; h; h = h->next)
                if (h->held) { /* a slot is free: the next waiting request */
                        kick(c);
                        break;
                }
        if (q->cancelled) {
                request_free(q);
                return;
        }
        c->stats.bytes_in += q->len;
        (void) curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (q->len && q->line_fn && status == 200 && !q->too_large) {
                /* a watch whose stream stopped inside an object: the caller
                 * watches again from the last version it saw (nothing lost) */
                (void) snprintf(error, sizeof(error),
                                "%s %s: the stream ended inside an object (%zu bytes without their end of line)",
                                q->method, q->path, q->len);
                code = CURLE_OK;
                status = 0;
        } else if (code != CURLE_OK)
                status = 0;
        else if (q->len) {
                json_error_t jerr;

                body = json_loadb(q->body, q->len, 0, &jerr);
                if (!body && status >= 200 && status < 300) {
                        (void) snprintf(error, sizeof(error), "%s %s: %ld with a body that is not JSON: %s (offset %d)",
                                        q->method, q->path, status, jerr.text, jerr.position);
                        status = 0;
                }
        }
        if (*error) {
                /* the body's own error, set above */
        } else if (q->too_large)
                (void) snprintf(error, sizeof(error), "%s %s: the answer is larger than %u MiB; refused", q->method,
                                q->path, KUBE_BODY_MAX >> 20);
        else if (code != CURLE_OK)
                /* libcurl's text for the code (stable, so a repeated failure
                 * is logged once), its buffer for TLS (which certificate, why) */
                (void) snprintf(error, sizeof(error), "%s %s%s: %s", q->method, c->cfg.server, q->path,
                                *q->errbuf && tls_error(code) ? q->errbuf : curl_easy_strerror(code));
        else if (status < 200 || status >= 300) {
                uint64_t after = retry_after_usec(easy, status);

                status_message(q, body, msg, sizeof(msg));
                (void) snprintf(error, sizeof(error), "%s %s: %ld: %s", q->method, q->path, status, msg);
                if (after) {
                        /* client-go's: the server asked every client to wait */
                        size_t l = strlen(error);

                        (void) snprintf(error + l, sizeof(error) - l, " (Retry-After %" PRIu64 " s: no request before)",
                                        (uint64_t) (after / 1000000ULL));
                        hold(c, after);
                }
        }
        if (*error) {
                c->stats.failures++;
                if (q->too_large || (code != CURLE_OK))
                        status = 0;
        }
        q->fn(q->userdata, status, body, error);
        request_free(q);
}

/* cancelled requests freed; held ones handed to libcurl unless a
 * Retry-After still holds them */
static int on_hold_end(sd_event_source *s, uint64_t usec, void *userdata) {
        KubeClient *c = userdata;
        KubeRequest **p = &c->inflight;
        size_t active = 0;

        (void) s;
        while (*p) {
                KubeRequest *q = *p;

                if (!q->cancelled) {
                        p = &q->next;
                        continue;
                }
                *p = q->next;
                if (!q->held)
                        cub_curl_remove(c->curl, q->easy);
                request_free(q);
        }
        if (usec < c->hold_until) {
                kick(c);
                return 0;
        }
        for (KubeRequest *q = c->inflight; q; q = q->next)
                if (!q->held && !q->unlimited)
                        active++;
        for (p = &c->inflight; *p;) {
                KubeRequest *q = *p;
                char error[CUB_ERR_MSG_MAX];

                if (q->held && !q->unlimited && active >= KUBE_MAX_ACTIVE) {
                        p = &q->next; /* waits for a slot: on_done kicks */
                        continue;
                }
                if (!q->held || cub_curl_add(c->curl, q->easy) == 0) {
                        if (q->held && !q->unlimited)
                                active++;
                        q->held = false;
                        p = &q->next;
                        continue;
                }
                /* libcurl refused it: answered as a failure */
                *p = q->next;
                (void) snprintf(error, sizeof(error), "%s %s: libcurl refused the transfer", q->method, q->path);
                c->stats.failures++;
                q->fn(q->userdata, 0, NULL, error);
                request_free(q);
        }
        return 0;
}

int kube_client_new(sd_event *e, const KubeConfig *cfg, KubeClient **ret, CubError *err) {
        KubeClient *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return cub_err_set(err, ENOMEM, "out of memory");
        /* the client keeps its own copy of the credentials */
        c->cfg = (KubeConfig){ .insecure = cfg->insecure };
        if (!(c->cfg.server = strdup(cfg->server)) ||
            (cfg->token && asprintf(&c->auth_header, "Authorization: Bearer %s", cfg->token) < 0)) {
                c->auth_header = NULL;
                kube_client_free(c);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        for (int i = 0; i < 3; i++) {
                const KubeBlob *src = i == 0 ? &cfg->ca : i == 1 ? &cfg->cert : &cfg->key;
                KubeBlob *dst = i == 0 ? &c->cfg.ca : i == 1 ? &c->cfg.cert : &c->cfg.key;

                if (!src->data)
                        continue;
                dst->data = malloc(src->len + 1);
                if (!dst->data) {
                        kube_client_free(c);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
                memcpy(dst->data, src->data, src->len);
                dst->data[src->len] = 0;
                dst->len = src->len;
        }
        c->event = sd_event_ref(e);
        r = cub_curl_new(e, "kube-api", on_done, c, &c->curl, err);
        if (r >= 0 && (r = sd_event_add_time(e, &c->hold_timer, CLOCK_MONOTONIC, 0, 0, on_hold_end, c)) < 0)
                r = cub_err_set(err, -r, "sd-event: %s", strerror(-r));
        if (r < 0) {
                kube_client_free(c);
                return r;
        }
        (void) sd_event_source_set_enabled(c->hold_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(c->hold_timer, "kube-api-retry-after");
        *ret = c;
        return 0;
}

KubeClient *kube_client_free(KubeClient *c) {
        if (!c)
                return NULL;
        while (c->inflight) {
                KubeRequest *q = c->inflight;

                c->inflight = q->next;
                if (!q->held)
                        cub_curl_remove(c->curl, q->easy);
                request_free(q);
        }
        c->curl = cub_curl_free(c->curl);
        c->hold_timer = sd_event_source_disable_unref(c->hold_timer);
        c->event = sd_event_unref(c->event);
        if (c->auth_header) {
                explicit_bzero(c->auth_header, strlen(c->auth_header));
                free(c->auth_header);
        }
        kube_config_done(&c->cfg);
        free(c);
        return NULL;
}

const char *kube_client_server(const KubeClient *c) {
        return c->cfg.server;
}

const KubeClientStats *kube_client_stats(const KubeClient *c) {
        return &c->stats;
}

static int blob_opt(CURL *e, CURLoption opt, const KubeBlob *b) {
        struct curl_blob blob = { .data = b->data, .len = b->len, .flags = CURL_BLOB_COPY };

        return !b->data || curl_easy_setopt(e, opt, &blob) == CURLE_OK ? 0 : -1;
}

int kube_curl_tls(void *curl, const KubeConfig *cfg) {
        CURL *e = curl;

        return blob_opt(e, CURLOPT_CAINFO_BLOB, &cfg->ca) < 0 || blob_opt(e, CURLOPT_SSLCERT_BLOB, &cfg->cert) < 0 ||
                               blob_opt(e, CURLOPT_SSLKEY_BLOB, &cfg->key) < 0 ||
                               (cfg->insecure && (curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L) != CURLE_OK ||
                                                  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK))
                       ? -EINVAL
                       : 0;
}

static int start(KubeClient *c, const char *method, const char *path, const char *content_type, const json_t *body,
                 KubeAnswerFn fn, KubeLineFn line_fn, void *userdata, uint64_t timeout_usec, uint64_t *ret_id,
                 CubError *err) {
        KubeRequest *q = calloc(1, sizeof(*q));
        _cleanup_free_ char *url = NULL, *ct = NULL;
        CURL *e;

        if (!q || !(q->method = strdup(method)) || !(q->path = strdup(path)) ||
            asprintf(&url, "%s%s", c->cfg.server, path) < 0 ||
            (body && (!(q->body_out = json_dumps(body, JSON_COMPACT)) ||
                      asprintf(&ct, "Content-Type: %s", content_type ? content_type : KUBE_CT_JSON) < 0))) {
                request_free(q);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        q->client = c;
        q->fn = fn;
        q->line_fn = line_fn;
        q->unlimited = line_fn || strncmp(path, "/api/v1/nodes/", 14) == 0 ||
                       strncmp(path, "/apis/coordination.k8s.io/", 26) == 0;
        q->userdata = userdata;
        q->headers = curl_slist_append(NULL, "Accept: application/json");
        if (q->headers && ct)
                q->headers = curl_slist_append(q->headers, ct);
        if (q->headers && c->auth_header)
                q->headers = curl_slist_append(q->headers, c->auth_header);
        e = q->easy = curl_easy_init();
        if (!q->headers || !e) {
                request_free(q);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        if (curl_easy_setopt(e, CURLOPT_URL, url) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https") != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK ||
            (q->body_out && curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->body_out) != CURLE_OK) ||
            curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long) (timeout_usec / 1000)) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long) (KUBE_TIMEOUT_USEC / 1000)) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_USERAGENT, "cubelet/" CUBELET_VERSION) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_HTTPHEADER, q->headers) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_WRITEDATA, q) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_ERRORBUFFER, q->errbuf) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_PRIVATE, q) != CURLE_OK || kube_curl_tls(e, &c->cfg) < 0) {
                request_free(q);
                return cub_err_set(err, EINVAL, "%s %s: libcurl refused an option", method, path);
        }
        /* handed to libcurl on the next loop turn (or when a Retry-After is over) */
        q->held = true;
        kick(c);
        q->id = ++c->next_id;
        /* at the end: the waiting ones are handed to libcurl oldest first */
        {
                KubeRequest **t = &c->inflight;

                while (*t)
                        t = &(*t)->next;
                *t = q;
        }
        c->stats.requests++;
        if (ret_id)
                *ret_id = q->id;
        return 0;
}

int kube_client_request(KubeClient *c, const char *method, const char *path, const char *content_type,
                        const json_t *body, KubeAnswerFn fn, void *userdata, uint64_t *ret_id, CubError *err) {
        return start(c, method, path, content_type, body, fn, NULL, userdata, KUBE_TIMEOUT_USEC, ret_id, err);
}

int kube_client_watch(KubeClient *c, const char *path, KubeLineFn line_fn, KubeAnswerFn done_fn, void *userdata,
                      uint64_t timeout_usec, uint64_t *ret_id, CubError *err) {
        return start(c, "GET", path, NULL, NULL, done_fn, line_fn, userdata, timeout_usec, ret_id, err);
}

void kube_client_cancel(KubeClient *c, uint64_t id) {
        for (KubeRequest *q = c->inflight; q; q = q->next)
                if (q->id == id && !q->cancelled) {
                        /* freed on the next loop turn: this may be a libcurl callback */
                        q->cancelled = true;
                        kick(c);
                        return;
                }
}
