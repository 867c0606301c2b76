/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/api auth: who a request of the kubelet server (port 10250) comes
 * from, and whether the API server lets them do it, as kubelet's
 * authentication and authorization filters:
 *
 *  - a client certificate verified against authentication.x509.clientCAFile
 *    (the TLS layer verifies it; its subject's CN is the user, each O a
 *    group), else a bearer token reviewed by the API server (TokenReview,
 *    when authentication.webhook.enabled), else system:anonymous when
 *    authentication.anonymous.enabled; otherwise 401 "Unauthorized";
 *  - then a SubjectAccessReview (authorization.mode Webhook) of verb (the
 *    request's method as kubelet maps it) on nodes/<subresource> of this
 *    node, the subresource from the path as kubelet's auth.go maps it
 *    (with KubeletFineGrainedAuthz, on in 1.34: /pods and /healthz first
 *    ask for "pods"/"healthz", then for "proxy"); a denial is 403 with
 *    kubelet's "Forbidden (user=..., verb=..., resource=nodes,
 *    subresource(s)=[...])".
 *
 * The reviews are the API server's answers, cached as kubelet caches them
 * (tokens 2 min, allowed 5 min, denied 30 s). The review itself is a
 * function the agent gives (a synchronous POST with the node's
 * credentials), so this module knows no HTTP client; the HTTP server calls
 * these from its connection threads: everything here is thread-safe.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

#define API_AUTH_TOKEN_TTL_USEC (120ULL * 1000000ULL)
#define API_AUTH_ALLOWED_TTL_USEC (300ULL * 1000000ULL)
#define API_AUTH_DENIED_TTL_USEC (30ULL * 1000000ULL)

typedef struct ApiUser {
        char *name, *uid;
        char **groups; /* NULL-terminated */
} ApiUser;

void api_user_done(ApiUser *u);
int api_user_set(ApiUser *u, const char *name, const char *uid, const char *const *groups);

/* POST body to path of the API server (the TokenReview or
 * SubjectAccessReview) and hand back the answer's "status" object (a new
 * reference), or fail with err naming why. */
typedef int (*ApiReviewFn)(void *userdata, const char *path, json_t *body, json_t **ret_status, CubError *err);

typedef struct ApiAuthConfig {
        const char *node_name;
        bool anonymous;    /* authentication.anonymous.enabled (default false) */
        bool webhook;      /* authentication.webhook.enabled (default true) */
        bool always_allow; /* authorization.mode: AlwaysAllow (default Webhook) */
        ApiReviewFn review;
        void *userdata;
} ApiAuthConfig;

typedef struct ApiAuth ApiAuth;

int api_auth_new(const ApiAuthConfig *c, ApiAuth **ret, CubError *err);
ApiAuth *api_auth_free(ApiAuth *a);

/* cert_user: the verified client certificate's user, or NULL;
 * authorization: the request's Authorization header, or NULL. -EACCES:
 * not authenticated (401); *ret filled on 0. */
int api_auth_authenticate(ApiAuth *a, const ApiUser *cert_user, const char *authorization, ApiUser *ret, CubError *err);
/* 0: allowed; -EPERM: denied, err holding kubelet's 403 text; another
 * negative errno: the review failed (500, err names it). */
int api_auth_authorize(ApiAuth *a, const ApiUser *u, const char *method, const char *path, CubError *err);

/* kubelet's mapping: "get" for GET (HEAD: ""), "create" for POST, ... */
const char *api_auth_verb(const char *method);
/* the subresources asked, in order (1 or 2): ret[0..n) */
size_t api_auth_subresources(const char *path, const char *ret[2]);
