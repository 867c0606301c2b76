/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/config: pod sources. The manifest directory (kubelet's
 * staticPodPath): one pod per file, JSON or YAML; dotfiles and editor
 * temporary files are ignored, subdirectories are not entered, and an empty
 * file counts as one still being written. A file that
 * does not decode is reported with its error and never costs the others.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../pod/pod.h"
#include "../util/err.h"

/* A manifest file's version as stat(2) gives it: a file whose identity is
 * unchanged has the same bytes (any write changes ctime). */
typedef struct PodsrcFileId {
        uint64_t dev, ino;
        int64_t size, mtime_ns, ctime_ns;
} PodsrcFileId;

typedef struct PodsrcEntry {
        char *path;  /* absolute path of the manifest */
        Pod *pod;    /* NULL when the file is bad (or cached) */
        char *error; /* the one-line message when pod and cached are NULL */
        PodsrcFileId id;
        /* the caller's pod for this file when the scan's cache function said
         * the file is unchanged (borrowed, not decoded again) */
        const Pod *cached;
} PodsrcEntry;

typedef struct PodsrcSet {
        PodsrcEntry *items;
        size_t n;
} PodsrcSet;

/* true for names the directory source skips: ".x", "x~", "x.swp", "x.swx",
 * "x.tmp", "#x#", "4913" (vim's probe file) */
bool podsrc_ignored_name(const char *name);

/* Reads every manifest in dir, sorted by name. Fails only when dir itself
 * cannot be read. Two files defining the same pod: the later one is an
 * error naming the earlier. cached (optional) is asked first for each file:
 * the pod the caller already holds for that path and identity, or NULL;
 * such a file is not read or decoded again (the periodic rescan of an
 * unchanged directory decodes nothing). */
typedef const Pod *(*PodsrcCachedFn)(const char *path, const PodsrcFileId *id, void *userdata);
int podsrc_dir_scan(const char *dir, const char *node_name, PodsrcCachedFn cached, void *userdata, PodsrcSet *ret,
                    CubError *err);
void podsrc_set_done(PodsrcSet *s);

/* Reads one manifest of dir (the inotify fast path): 0 with ret's pod or
 * error filled; -ENOENT when there is nothing to read (an ignored name, a
 * file that is gone, not a regular file or still empty); -ENOMEM. */
int podsrc_file_read(const char *dir, const char *name, const char *node_name, PodsrcEntry *ret);
void podsrc_entry_done(PodsrcEntry *e);

/* ---- the manifest URL (http.c, http-loop.c) -----------------------------
 *
 * kubelet's staticPodURL: GET every period, the body a v1 Pod or PodList
 * (JSON or YAML), pods of source "http", static names, UIDs hashed with
 * "url:<url>". Beyond kubelet: conditional GET (If-None-Match with the last
 * good ETag, If-Modified-Since with its Last-Modified; a 304 is not decoded);
 * the set changes only on a 200 that decodes, so errors (connection,
 * timeout, 4xx/5xx, a body that does not decode, an empty body) keep the
 * last good set; at most 5 redirects; a body over 10 MiB is refused.
 * Beyond kubelet too: with a cache path, each good answer (its body, ETag
 * and Last-Modified) is kept on disk (url-cache.c), and a node that starts
 * with the URL unreachable runs the pods of that answer
 * (podsrc_http_load_cache()), its ETag making the first GET conditional.
 * libcurl's multi interface runs on the caller's sd-event loop: no thread
 * blocks on HTTP. */

#include <curl/curl.h>
#include <systemd/sd-event.h>

#define PODSRC_HTTP_BODY_MAX (10 * 1024 * 1024)
#define PODSRC_HTTP_MAX_REDIRS 5

typedef struct PodsrcHttpOptions {
        const char *url;
        const char *node_name;
        const char *const *headers; /* "Name: value" lines; may be NULL */
        size_t n_headers;
        const char *ca_file; /* each may be NULL */
        const char *client_cert;
        const char *client_key;
        uint64_t timeout_usec;  /* whole transfer; 0 = 10 s */
        const char *cache_path; /* the last good answer on disk; NULL: none kept */
} PodsrcHttpOptions;

typedef enum PodsrcHttpResult {
        PODSRC_HTTP_NONE, /* not fetched yet */
        PODSRC_HTTP_OK,   /* a 200 that decoded (or the same bytes as the last good one) */
        PODSRC_HTTP_NOT_MODIFIED,
        PODSRC_HTTP_ERROR,
        _PODSRC_HTTP_RESULT_MAX,
} PodsrcHttpResult;

/* The source's state, for `cubelet status` and /metrics. Times are
 * CLOCK_REALTIME microseconds (0 = never). podsrc_http_stats() points into
 * the live source: read it on the loop's thread (copy the struct for a
 * snapshot another thread reads). */
typedef struct PodsrcHttpStats {
        const char *url;
        PodsrcHttpResult last_result;
        long last_status;                          /* HTTP status of the last fetch; 0 = none */
        char last_error[CUB_ERR_MSG_MAX];          /* the last fetch's error, "" after a good one */
        uint64_t last_fetch_usec;                  /* when the last fetch ended */
        uint64_t last_ok_usec;                     /* when the last 200 or 304 ended */
        uint64_t last_duration_usec;               /* the last transfer, request to body */
        uint64_t fetches[_PODSRC_HTTP_RESULT_MAX]; /* by result: OK (200), NOT_MODIFIED (304), ERROR */
        size_t n_pods;                             /* pods of the last good set */
        bool have_set;                             /* a 200 has decoded since the start */
        bool from_cache;                           /* the set in force is the kept answer (no 200 since) */
        const char *cache_path;                    /* NULL: none kept */
        char cache_error[CUB_ERR_MSG_MAX];         /* the last write of the cache failed: why; "" else */
} PodsrcHttpStats;

const char *podsrc_http_result_to_string(PodsrcHttpResult r); /* "ok", "notModified", "error", "none" */

typedef struct PodsrcHttp PodsrcHttp;

int podsrc_http_new(const PodsrcHttpOptions *o, PodsrcHttp **ret, CubError *err);
PodsrcHttp *podsrc_http_free(PodsrcHttp *h);
const PodsrcHttpStats *podsrc_http_stats(const PodsrcHttp *h);

/* One GET, for any driver (curl_easy_perform in tests, the multi loop in
 * the agent): an easy handle with the options, the conditional headers and
 * the body cap. At most one at a time. */
int podsrc_http_begin(PodsrcHttp *h, CURL **ret, CubError *err);
/* The transfer of begin's handle ended with code: cleans the handle up and
 * updates the stats. 1: a new set (a 200 whose body decoded and differs from
 * the last good one), in *ret (entries: path = the URL, pod or error for a
 * name the body defines twice); 0: unchanged (304, the same bytes); a
 * negative errno: an error, err says "<url>: <what>". */
int podsrc_http_finish(PodsrcHttp *h, CURL *easy, CURLcode code, PodsrcSet *ret, CubError *err);

/* The answer kept in the cache path, before the first GET: 1 with its set
 * in *ret (decoded as a fetched body is) and its ETag, Last-Modified and
 * body hash taken as the last good answer's, so that the first GET is
 * conditional and an unchanged URL answers 304; 0 when nothing is kept (no
 * cache path, no file); a negative errno with err naming the file when it
 * cannot be used (unreadable, not a cache file, another URL's answer, a
 * body that no longer decodes): nothing changes then. */
int podsrc_http_load_cache(PodsrcHttp *h, PodsrcSet *ret, CubError *err);
/* Writes the answer finish() took, when it was a 200 that is a new set or
 * brings new validators (or the last write failed), to the cache path;
 * nothing to do otherwise (0). Apart from finish() so that the set is
 * applied before the disk is waited for (the poller calls it after fn).
 * A failed write is kept in the stats' cache_error ("" after a good one)
 * and returned; it never changes the set. */
int podsrc_http_save_cache(PodsrcHttp *h);

/* The poller on an sd-event loop: a GET at once, then every period_usec
 * after the previous one ended. fn gets finish()'s result (set is NULL unless
 * r == 1; fn may steal its pods, and the set is freed after fn returns). */
typedef void (*PodsrcHttpFn)(PodsrcHttp *h, int r, PodsrcSet *set, const CubError *err, void *userdata);
int podsrc_http_attach(PodsrcHttp *h, sd_event *e, uint64_t period_usec, PodsrcHttpFn fn, void *userdata,
                       CubError *err);
/* Fetches now (after the transfer in flight, if any). */
void podsrc_http_poll_now(PodsrcHttp *h);
