/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest URL: one conditional GET with libcurl and what its answer
 * means for the URL's set of pods. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/cleanup.h"
#include "../util/time.h"
#include "http-internal.h"

#define DEFAULT_TIMEOUT_USEC (10 * CUB_USEC_PER_SEC)

const char *podsrc_http_result_to_string(PodsrcHttpResult r) {
        static const char *const names[] = {
                [PODSRC_HTTP_NONE] = "none",
                [PODSRC_HTTP_OK] = "ok",
                [PODSRC_HTTP_NOT_MODIFIED] = "notModified",
                [PODSRC_HTTP_ERROR] = "error",
        };
        return (unsigned) r < _PODSRC_HTTP_RESULT_MAX ? names[r] : "none";
}

static char *dup_or_null(const char *s) {
        return s && *s ? strdup(s) : NULL;
}

int podsrc_http_new(const PodsrcHttpOptions *o, PodsrcHttp **ret, CubError *err) {
        PodsrcHttp *h;

        if (!o->url || (strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0))
                return cub_err_set(err, EINVAL, "staticPodURL '%s': expected an http:// or https:// URL",
                                   o->url ? o->url : "");
        if (!!o->client_cert != !!o->client_key)
                return cub_err_set(err, EINVAL,
                                   "staticPodURLClientCert and staticPodURLClientKey: set both or neither");
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return cub_err_set(err, EIO, "libcurl could not be initialised");
        h = calloc(1, sizeof(*h));
        if (!h) {
                curl_global_cleanup();
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        h->url = strdup(o->url);
        h->node_name = strdup(o->node_name ? o->node_name : "");
        h->ca_file = dup_or_null(o->ca_file);
        h->client_cert = dup_or_null(o->client_cert);
        h->client_key = dup_or_null(o->client_key);
        h->timeout_usec = o->timeout_usec ? o->timeout_usec : DEFAULT_TIMEOUT_USEC;
        h->cache_path = dup_or_null(o->cache_path);
        h->stats.url = h->url;
        h->stats.cache_path = h->cache_path;
        if (!h->url || !h->node_name || (o->ca_file && *o->ca_file && !h->ca_file) ||
            (o->cache_path && *o->cache_path && !h->cache_path) || (o->client_cert && !h->client_cert) ||
            (o->client_key && !h->client_key))
                goto oom;
        for (size_t i = 0; i < o->n_headers; i++) {
                struct curl_slist *l = curl_slist_append(h->headers, o->headers[i]);

                if (!l)
                        goto oom;
                h->headers = l;
        }
        *ret = h;
        return 0;
oom:
        podsrc_http_free(h);
        return cub_err_set(err, ENOMEM, "out of memory");
}

static void transfer_done(PodsrcHttp *h) {
        if (h->easy)
                curl_easy_cleanup(h->easy);
        h->easy = NULL;
        curl_slist_free_all(h->req_headers);
        h->req_headers = NULL;
        free(h->body);
        h->body = NULL;
        h->len = h->cap = 0;
        h->too_large = false;
        h->status_line[0] = h->errbuf[0] = '\0';
}

PodsrcHttp *podsrc_http_free(PodsrcHttp *h) {
        if (!h)
                return NULL;
        podsrc_http_loop_done(h);
        transfer_done(h);
        curl_slist_free_all(h->headers);
        free(h->url);
        free(h->node_name);
        free(h->ca_file);
        free(h->client_cert);
        free(h->client_key);
        free(h->cache_path);
        free(h->save_body);
        free(h->etag);
        free(h->last_modified);
        free(h);
        curl_global_cleanup();
        return NULL;
}

const PodsrcHttpStats *podsrc_http_stats(const PodsrcHttp *h) {
        return &h->stats;
}

/* The body, kept up to PODSRC_HTTP_BODY_MAX (MAXFILESIZE refuses a
 * Content-Length over it; this cap refuses a chunked body that grows past it). */
static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
        PodsrcHttp *h = userdata;
        size_t n = size * nmemb;

        if (n > PODSRC_HTTP_BODY_MAX - h->len) {
                h->too_large = true;
                return 0; /* CURLE_WRITE_ERROR */
        }
        if (h->len + n + 1 > h->cap) {
                size_t cap = h->cap ? h->cap : 16384;
                char *b;

                while (cap < h->len + n + 1)
                        cap *= 2;
                b = realloc(h->body, cap);
                if (!b)
                        return 0;
                h->body = b;
                h->cap = cap;
        }
        memcpy(h->body + h->len, data, n);
        h->len += n;
        h->body[h->len] = '\0';
        return n;
}

/* The status line of each response (the last one counts after redirects). */
static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata) {
        PodsrcHttp *h = userdata;
        size_t n = size * nmemb, k = n;

        if (n > 5 && strncmp(data, "HTTP/", 5) == 0) {
                while (k > 0 && (data[k - 1] == '\r' || data[k - 1] == '\n'))
                        k--;
                (void) snprintf(h->status_line, sizeof(h->status_line), "%.*s", (int) k, data);
        }
        return n;
}

static int add_header(struct curl_slist **l, const char *name, const char *value) {
        _cleanup_free_ char *line = NULL;
        struct curl_slist *n;

        if (asprintf(&line, "%s: %s", name, value) < 0)
                return -ENOMEM;
        n = curl_slist_append(*l, line);
        if (!n)
                return -ENOMEM;
        *l = n;
        return 0;
}

int podsrc_http_begin(PodsrcHttp *h, CURL **ret, CubError *err) {
        long ms = (long) (h->timeout_usec / CUB_USEC_PER_MSEC);
        CURL *c;
        int r = 0;

        if (h->easy)
                return cub_err_set(err, EBUSY, "%s: a fetch is already under way", h->url);
        c = curl_easy_init();
        if (!c)
                return cub_err_set(err, ENOMEM, "%s: out of memory", h->url);
        h->easy = c;
        for (struct curl_slist *l = h->headers; l && r >= 0; l = l->next) {
                struct curl_slist *n = curl_slist_append(h->req_headers, l->data);

                if (n)
                        h->req_headers = n;
                else
                        r = -ENOMEM;
        }
        if (r >= 0 && h->etag)
                r = add_header(&h->req_headers, "If-None-Match", h->etag);
        if (r >= 0 && h->last_modified)
                r = add_header(&h->req_headers, "If-Modified-Since", h->last_modified);
        if (r < 0) {
                transfer_done(h);
                return cub_err_set(err, ENOMEM, "%s: out of memory", h->url);
        }
        if (ms < 1)
                ms = 1;
        h->errbuf[0] = '\0';
        if (curl_easy_setopt(c, CURLOPT_URL, h->url) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_MAXREDIRS, (long) PODSRC_HTTP_MAX_REDIRS) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) PODSRC_HTTP_BODY_MAX) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_USERAGENT, "cubelet") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->req_headers) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_WRITEDATA, h) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_HEADERDATA, h) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_PRIVATE, h) != CURLE_OK ||
            (h->ca_file && curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file) != CURLE_OK) ||
            (h->client_cert && curl_easy_setopt(c, CURLOPT_SSLCERT, h->client_cert) != CURLE_OK) ||
            (h->client_key && curl_easy_setopt(c, CURLOPT_SSLKEY, h->client_key) != CURLE_OK)) {
                transfer_done(h);
                return cub_err_set(err, EINVAL, "%s: libcurl refused an option", h->url);
        }
        h->start_usec = cub_now_usec(CLOCK_MONOTONIC);
        *ret = c;
        return 0;
}

static bool streq_null(const char *a, const char *b) {
        return a && b ? strcmp(a, b) == 0 : a == b;
}

static char *header_value(CURL *c, const char *name) {
        struct curl_header *hdr = NULL;

        if (curl_easy_header(c, name, 0, CURLH_HEADER, -1, &hdr) != CURLHE_OK || !hdr->value || !*hdr->value)
                return NULL;
        return strdup(hdr->value);
}

/* JSON when the body starts with '{' (after blanks), else YAML: the URL's
 * name says nothing */
static PodFormat body_format(const char *buf, size_t len) {
        size_t i = 0;

        while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
                i++;
        return i < len && buf[i] == '{' ? POD_FORMAT_JSON : POD_FORMAT_YAML;
}

/* The pods of a body that decoded; a name defined twice keeps the first
 * (kubelet's filterInvalidPods), the later one is an error entry. */
static int make_set(PodsrcHttp *h, Pod **pods, size_t n, PodsrcSet *ret) {
        PodsrcSet set = { .items = calloc(n + 1, sizeof(PodsrcEntry)) };

        if (!set.items)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                PodsrcEntry *e = &set.items[set.n++];

                e->path = strdup(h->url);
                e->pod = TAKE_PTR(pods[i]);
                if (!e->path) {
                        podsrc_set_done(&set);
                        return -ENOMEM;
                }
                for (size_t j = 0; j + 1 < set.n; j++) {
                        const Pod *o = set.items[j].pod;

                        if (o && strcmp(o->name, e->pod->name) == 0 && strcmp(o->namespace_, e->pod->namespace_) == 0) {
                                if (asprintf(&e->error, "%s: items[%zu]: pod %s/%s is already defined by items[%zu]",
                                             h->url, i, o->namespace_, o->name, j) < 0)
                                        e->error = NULL;
                                e->pod = pod_free(e->pod);
                                if (!e->error) {
                                        podsrc_set_done(&set);
                                        return -ENOMEM;
                                }
                                break;
                        }
                }
        }
        *ret = set;
        return 0;
}

/* curl's "Failed to connect to X port N after 16 ms: ..." and "Operation
 * timed out after 1001 milliseconds with 0 bytes received": the same error
 * each time, told once */
static void strip_elapsed(char *msg) {
        char *a = strstr(msg, " after ");
        size_t n;

        if (!a)
                return;
        n = strspn(a + 7, "0123456789");
        if (n == 0)
                return;
        if (strncmp(a + 7 + n, " ms", 3) == 0)
                n += 3;
        else if (strncmp(a + 7 + n, " milliseconds", 13) == 0)
                n += 13;
        else
                return;
        memmove(a, a + 7 + n, strlen(a + 7 + n) + 1);
}

static int fail(PodsrcHttp *h, int code, CubError *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(PodsrcHttp *h, int code, CubError *err, const char *fmt, ...) {
        char what[CUB_ERR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        h->stats.last_result = PODSRC_HTTP_ERROR;
        h->stats.fetches[PODSRC_HTTP_ERROR]++;
        (void) snprintf(h->stats.last_error, sizeof(h->stats.last_error), "%s", what);
        transfer_done(h);
        return cub_err_set(err, code, "%s", what);
}

int podsrc_http_finish(PodsrcHttp *h, CURL *easy, CURLcode code, PodsrcSet *ret, CubError *err) {
        _cleanup_free_ char *etag = NULL, *last_modified = NULL;
        Pod **pods = NULL;
        unsigned char hash[32];
        long status = 0;
        size_t n = 0;
        CubError derr = {};
        int r;

        if (easy != h->easy)
                return cub_err_set(err, EINVAL, "%s: not this source's transfer", h->url);
        (void) curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        h->stats.last_status = status;
        h->stats.last_fetch_usec = cub_now_usec(CLOCK_REALTIME);
        h->stats.last_duration_usec = cub_now_usec(CLOCK_MONOTONIC) - h->start_usec;
        if (h->too_large || code == CURLE_FILESIZE_EXCEEDED)
                return fail(h, EFBIG, err, "%s: the body is larger than %d bytes (10 MiB), refused", h->url,
                            PODSRC_HTTP_BODY_MAX);
        if (code != CURLE_OK) {
                strip_elapsed(h->errbuf);
                return fail(h, code == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : EIO, err, "%s: %s", h->url,
                            h->errbuf[0] ? h->errbuf : curl_easy_strerror(code));
        }
        if (status == 304 && h->have_hash) {
                h->stats.last_result = PODSRC_HTTP_NOT_MODIFIED;
                h->stats.fetches[PODSRC_HTTP_NOT_MODIFIED]++;
                h->stats.last_ok_usec = h->stats.last_fetch_usec;
                h->stats.last_error[0] = '\0';
                transfer_done(h);
                return 0;
        }
        if (status != 200) {
                const char *reason = strchr(h->status_line, ' ');

                /* kubelet's "<url>: <status>", e.g. "404 Not Found" */
                return fail(h, EIO, err, "%s: %s", h->url, reason && status ? reason + 1 : "no HTTP status");
        }
        if (h->len == 0)
                return fail(h, ENODATA, err, "%s: zero-length body, keeping the last good set", h->url);
        if (podsrc_http_body_hash(h->body, h->len, hash) < 0)
                return fail(h, EIO, err, "%s: hashing the body failed", h->url);
        etag = header_value(easy, "ETag");
        last_modified = header_value(easy, "Last-Modified");
        if (h->have_hash && memcmp(hash, h->body_hash, sizeof(hash)) == 0)
                r = 0; /* the same bytes: nothing to decode (kubelet's check) */
        else {
                r = pod_decode_static_list(h->body, h->len, h->url, body_format(h->body, h->len), h->node_name,
                                           POD_SOURCE_HTTP, h->url, &pods, &n, &derr);
                if (r < 0)
                        return fail(h, -r, err, "%s", derr.msg);
                r = make_set(h, pods, n, ret);
                pod_list_free(pods, n);
                if (r < 0)
                        return fail(h, ENOMEM, err, "%s: out of memory", h->url);
                r = 1;
                memcpy(h->body_hash, hash, sizeof(hash));
                h->have_hash = true;
                h->stats.n_pods = 0;
                for (size_t i = 0; i < ret->n; i++)
                        h->stats.n_pods += ret->items[i].pod != NULL;
        }
        /* a new set, new validators or a write that failed before: to be
         * kept (podsrc_http_save_cache(), once the set is applied) */
        if (h->cache_path && (r == 1 || !streq_null(etag, h->etag) || !streq_null(last_modified, h->last_modified) ||
                              h->stats.cache_error[0])) {
                free(h->save_body);
                h->save_body = TAKE_PTR(h->body);
                h->save_len = h->len;
                h->len = h->cap = 0;
        }
        /* the validators of the set in force */
        free(h->etag);
        h->etag = TAKE_PTR(etag);
        free(h->last_modified);
        h->last_modified = TAKE_PTR(last_modified);
        h->stats.have_set = true;
        h->stats.from_cache = false;
        h->stats.last_result = PODSRC_HTTP_OK;
        h->stats.fetches[PODSRC_HTTP_OK]++;
        h->stats.last_ok_usec = h->stats.last_fetch_usec;
        h->stats.last_error[0] = '\0';
        transfer_done(h);
        return r;
}

int podsrc_http_load_cache(PodsrcHttp *h, PodsrcSet *ret, CubError *err) {
        _cleanup_(podsrc_http_cache_done) PodsrcHttpCache c = {};
        Pod **pods = NULL;
        size_t n = 0;
        CubError derr = {};
        int r;

        if (!h->cache_path)
                return 0;
        r = podsrc_http_cache_read(h->cache_path, h->url, &c, &derr);
        if (r == -ENOENT)
                return 0; /* nothing kept, not an error: err stays as it is */
        if (r < 0)
                return cub_err_set(err, -r, "%s", derr.msg);
        r = pod_decode_static_list(c.body, c.len, h->url, body_format(c.body, c.len), h->node_name, POD_SOURCE_HTTP,
                                   h->url, &pods, &n, &derr);
        if (r < 0)
                return cub_err_set(err, -r, "'%s': the kept answer: %s", h->cache_path, derr.msg);
        r = make_set(h, pods, n, ret);
        pod_list_free(pods, n);
        if (r < 0)
                return cub_err_set(err, ENOMEM, "'%s': out of memory", h->cache_path);
        free(h->etag);
        h->etag = TAKE_PTR(c.etag);
        free(h->last_modified);
        h->last_modified = TAKE_PTR(c.last_modified);
        memcpy(h->body_hash, c.hash, sizeof(h->body_hash));
        h->have_hash = true;
        h->stats.from_cache = true;
        h->stats.n_pods = 0;
        for (size_t i = 0; i < ret->n; i++)
                h->stats.n_pods += ret->items[i].pod != NULL;
        return 1;
}

int podsrc_http_save_cache(PodsrcHttp *h) {
        _cleanup_free_ char *body = TAKE_PTR(h->save_body);
        CubError err = {};
        int r;

        if (!body)
                return 0;
        /* the answer in force: its validators and hash are the source's now */
        r = podsrc_http_cache_write(h->cache_path, h->url, h->etag, h->last_modified, body, h->save_len, h->body_hash,
                                    &err);
        (void) snprintf(h->stats.cache_error, sizeof(h->stats.cache_error), "%s", r < 0 ? err.msg : "");
        return r;
}
