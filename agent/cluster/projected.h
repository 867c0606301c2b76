/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the API server provides for the pods' volumes and env: service
 * account tokens (TokenRequest, bound to the pod, renewed as kubelet's token
 * manager does: at 80 % of their lifetime, or after 24 h), ConfigMaps
 * (kube-root-ca.crt for every pod; configMap volumes, projections and env)
 * and Secrets (secret volumes, projections and env), each watched by name as
 * kubelet's default change detection (Watch) does: a change, a creation or a
 * deletion is here as the API server sends it. The node's credentials can
 * read only the objects its pods name (the Node authorizer). One entry per
 * token (pod, audience, lifetime) and per ConfigMap or Secret (namespace,
 * name), asked for on the loop; a failure is tried again on the retry
 * policy (a watch's: the reflector's), logged once per distinct error.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../util/err.h"
#include "client.h"

/* kubelet's token manager (pkg/kubelet/token/token_manager.go) */
#define KUBE_TOKEN_MAX_TTL_S (24 * 3600)
#define KUBE_TOKEN_MAX_JITTER_S 10
typedef struct KubeProjected KubeProjected;

/* a value arrived or changed: pods waiting for it may go on, volumes are
 * written again (called from the loop, never from inside another call) */
typedef void (*KubeProjectedFn)(void *userdata);

typedef struct KubeTokenKey {
        const char *ns, *pod, *uid, *service_account;
        const char *audience; /* NULL: the API server's */
        int64_t expiration_seconds;
} KubeTokenKey;

int kube_projected_new(sd_event *event, KubeClient *c, KubeProjectedFn fn, void *userdata, KubeProjected **ret,
                       CubError *err);
KubeProjected *kube_projected_free(KubeProjected *p);

/* The token: 1 when here (*ret borrowed until the next call of the loop),
 * 0 while asked for, a negative errno when the last attempt failed (err
 * says why; asked again on the retry policy). Asks for it when new. */
int kube_projected_token(KubeProjected *p, const KubeTokenKey *k, const char **ret, CubError *err);
/* A ConfigMap's (data and binaryData) or a Secret's keys: *ret an object of
 * each key's bytes (json_string_length: a Secret's value may hold NULs), or
 * NULL when the API server has no such object; returns as
 * kube_projected_token(). */
int kube_projected_keys(KubeProjected *p, bool secret, const char *ns, const char *name, const json_t **ret,
                        CubError *err);

/* A pass over the pods: entries not asked for between mark and sweep go. */
void kube_projected_mark(KubeProjected *p);
void kube_projected_sweep(KubeProjected *p);
/* Asks again for what is due (a token to renew, a token's retry). */
void kube_projected_tick(KubeProjected *p);
/* Changes whenever a value changed. */
uint64_t kube_projected_generation(const KubeProjected *p);
json_t *kube_projected_status_json(const KubeProjected *p);

/* kubelet's requiresRefresh: the seconds from now_unix until a token that
 * expires at exp_unix, asked for expiration_seconds, is renewed (0: now):
 * 80 % of its lifetime, or 24 h after it was issued, less jitter_s. */
int64_t kube_token_renew_in(int64_t exp_unix, int64_t expiration_seconds, int64_t now_unix, int64_t jitter_s);
/* "2026-11-27T10:00:00Z" → seconds since the epoch; -1 when not that form. */
int64_t kube_parse_time(const char *s);
