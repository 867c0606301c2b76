/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Kubernetes API server as the node sees it: requests over HTTPS with
 * the kubeconfig's credentials, through libcurl's multi interface on the
 * loop (agent/util/curl-event.c): no thread ever waits on the network.
 * Each answer comes back to the caller's function on the loop, with the
 * HTTP status, the decoded JSON body and, for anything but 2xx, an error
 * that names the request and carries the server's Status message.
 */

#include <jansson.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../util/err.h"
#include "kubeconfig.h"

/* an answer larger than this is refused, named (a hostile or broken peer) */
#define KUBE_BODY_MAX (8u << 20)
#define KUBE_TIMEOUT_USEC (10ULL * 1000000ULL)
/* a 429's or 503's Retry-After holds every request of the client, at most this long */
#define KUBE_RETRY_AFTER_MAX_S 60

#define KUBE_CT_JSON "application/json"
#define KUBE_CT_MERGE "application/merge-patch+json"
#define KUBE_CT_STRATEGIC "application/strategic-merge-patch+json"

typedef struct KubeClient KubeClient;

/* status: the HTTP status (0: no answer: connection, TLS, timeout); body:
 * the answer's JSON (NULL when none or not JSON; borrowed for the call);
 * error: "" for 2xx, else "METHOD PATH: ..." */
typedef void (*KubeAnswerFn)(void *userdata, long status, json_t *body, const char *error);

typedef struct KubeClientStats {
        uint64_t requests, failures; /* failures: no answer, or not 2xx */
        uint64_t bytes_in;
        uint64_t holds; /* Retry-After answers that held the requests */
} KubeClientStats;

int kube_client_new(sd_event *e, const KubeConfig *cfg, KubeClient **ret, CubError *err);
KubeClient *kube_client_free(KubeClient *c);
const char *kube_client_server(const KubeClient *c);
const KubeClientStats *kube_client_stats(const KubeClient *c);

/* Starts METHOD path (from the server's root: "/api/v1/nodes"); body NULL
 * or a JSON document of content_type. fn is called once, later, on the
 * loop; never when the request is cancelled or the client freed. Returns a
 * handle for kube_client_cancel(). */
int kube_client_request(KubeClient *c, const char *method, const char *path, const char *content_type,
                        const json_t *body, KubeAnswerFn fn, void *userdata, uint64_t *ret_id, CubError *err);
/* A watch: GET path (with watch=true) whose answer is a stream of JSON
 * lines; line_fn gets each complete line as it arrives (a line longer than
 * KUBE_BODY_MAX ends the stream), done_fn the end as for a request (the
 * body: an error's Status). timeout_usec: the whole stream's limit. */
typedef void (*KubeLineFn)(void *userdata, const char *line, size_t len);
int kube_client_watch(KubeClient *c, const char *path, KubeLineFn line_fn, KubeAnswerFn done_fn, void *userdata,
                      uint64_t timeout_usec, uint64_t *ret_id, CubError *err);
/* Drops the request id (fn is not called); unknown ids are ignored. */
void kube_client_cancel(KubeClient *c, uint64_t id);

/* The kubeconfig's TLS settings on a libcurl handle (a CURL *) (CA, client
 * certificate and key as blobs, insecure-skip-tls-verify); -EINVAL when
 * libcurl refuses one. */
int kube_curl_tls(void *curl, const KubeConfig *cfg);

/* A synchronous POST of body to path with cfg's credentials, for threads
 * that may wait (the kubelet server's reviews, review.c): the answer's
 * "status" object in *ret_status (a new reference). The error names the
 * request and the server's message. */
int kube_review_post(const KubeConfig *cfg, const char *path, json_t *body, json_t **ret_status, CubError *err);
