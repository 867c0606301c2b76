/* SPDX-License-Identifier: Apache-2.0 */
/* Tokens, ConfigMaps and Secrets for the pods' volumes and env, on the loop. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/retry.h"
#include "../util/time.h"
#include "answers.h"
#include "projected.h"

static const CubRetryPolicy projected_retry = {
        .base_usec = 1 * CUB_USEC_PER_SEC,
        .max_usec = 30 * CUB_USEC_PER_SEC,
        .factor = 2,
        .jitter_pct = 20,
};

typedef struct Entry Entry;
struct Entry {
        Entry *next;
        KubeProjected *p;
        char *key;
        bool token, secret;
        /* token: ns, pod, uid, service account, audience; ConfigMap, Secret: ns, name */
        char *ns, *name, *uid, *sa, *audience;
        int64_t expiration;
        /* token: a string; ConfigMap, Secret: its keys' bytes (strings, which
         * may hold NULs), null when it does not exist */
        json_t *value;
        uint64_t renew_usec; /* ask again then (monotonic) */
        uint64_t id;         /* the request in flight, 0: none */
        CubRetry retry;
        bool used;
};

struct KubeProjected {
        KubeClient *client;
        KubeProjectedFn fn;
        void *userdata;
        Entry *entries;
        uint64_t generation, tokens, config_maps, secrets, failures;
};

static uint64_t now_mono(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

int64_t kube_parse_time(const char *s) {
        struct tm tm = {};
        const char *end;

        if (!s)
                return -1;
        end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!end || (*end != 'Z' && *end != '.'))
                return -1;
        return (int64_t) timegm(&tm);
}

int64_t kube_token_renew_in(int64_t exp_unix, int64_t expiration_seconds, int64_t now_unix, int64_t jitter_s) {
        int64_t iat = exp_unix - expiration_seconds;
        int64_t at = exp_unix - expiration_seconds * 20 / 100 - jitter_s;

        if (iat + KUBE_TOKEN_MAX_TTL_S - jitter_s < at)
                at = iat + KUBE_TOKEN_MAX_TTL_S - jitter_s;
        return at > now_unix ? at - now_unix : 0;
}

static void entry_free(Entry *e) {
        if (!e)
                return;
        if (e->id)
                kube_client_cancel(e->p->client, e->id);
        json_decref(e->value);
        free(e->key);
        free(e->ns);
        free(e->name);
        free(e->uid);
        free(e->sa);
        free(e->audience);
        free(e);
}

int kube_projected_new(KubeClient *c, KubeProjectedFn fn, void *userdata, KubeProjected **ret, CubError *err) {
        KubeProjected *p = calloc(1, sizeof(*p));

        if (!p)
                return cub_err_set(err, ENOMEM, "out of memory");
        p->client = c;
        p->fn = fn;
        p->userdata = userdata;
        *ret = p;
        return 0;
}

KubeProjected *kube_projected_free(KubeProjected *p) {
        if (!p)
                return NULL;
        while (p->entries) {
                Entry *e = p->entries;

                p->entries = e->next;
                entry_free(e);
        }
        free(p);
        return NULL;
}

static const char *what(const Entry *e, char *buf, size_t size) {
        if (e->token)
                (void) snprintf(buf, size, "pod %s/%s: service account token of \"%s\"", e->ns, e->name, e->sa);
        else
                (void) snprintf(buf, size, "%s %s/%s", e->secret ? "secret" : "configmap", e->ns, e->name);
        return buf;
}

static void ask(Entry *e);

static void on_answer(void *userdata, long status, json_t *body, const char *error) {
        Entry *e = userdata;
        KubeProjected *p = e->p;
        uint64_t now = now_mono();
        bool changed = false;
        json_t *v = NULL;
        char w[600];

        e->id = 0;
        if (e->token && !*error) {
                const char *tok;
                int64_t exp, es;

                if (kube_answer_token(body, &tok, &exp, &es) < 0)
                        error = "the TokenRequest's answer has no token, expirationTimestamp or expirationSeconds";
                else {
                        int64_t in = kube_token_renew_in(exp, es, (int64_t) (cub_now_usec(CLOCK_REALTIME) / 1000000),
                                                         (int64_t) (cub_retry_draw() % (KUBE_TOKEN_MAX_JITTER_S + 1)));

                        v = json_string(tok);
                        e->renew_usec = now + (uint64_t) in * CUB_USEC_PER_SEC;
                        p->tokens++;
                }
        } else if (!e->token && (!*error || status == 404)) {
                /* 404: it does not exist (an optional one is no file, no env) */
                v = status == 404 ? json_null() : kube_answer_keys(body, e->secret, &error);
                e->renew_usec = now + (status == 404 ? KUBE_CONFIG_MAP_MISSING_TTL_S : KUBE_CONFIG_MAP_TTL_S) *
                                              CUB_USEC_PER_SEC;
                if (v && e->secret)
                        p->secrets++;
                else if (v)
                        p->config_maps++;
        }
        if (!v) {
                p->failures++;
                if (cub_retry_failed(&e->retry, &projected_retry, now, *error ? error : "out of memory",
                                     cub_retry_draw()))
                        cub_log(LOG_WARNING, "API server: %s: %s; trying again in %" PRIu64 " s", what(e, w, sizeof(w)),
                                *error ? error : "out of memory",
                                (e->retry.next_usec - now + CUB_USEC_PER_SEC - 1) / CUB_USEC_PER_SEC);
                return;
        }
        if (cub_retry_succeeded(&e->retry))
                cub_log(LOG_INFO, "API server: %s: got it", what(e, w, sizeof(w)));
        changed = !e->value || !json_equal(e->value, v);
        json_decref(e->value);
        e->value = v;
        if (changed)
                p->generation++;
        if (changed && p->fn)
                p->fn(p->userdata);
}

static void ask(Entry *e) {
        KubeProjected *p = e->p;
        _cleanup_free_ char *ns = curl_easy_escape(NULL, e->ns, 0), *name = curl_easy_escape(NULL, e->name, 0);
        _cleanup_free_ char *sa = e->token ? curl_easy_escape(NULL, e->sa, 0) : NULL;
        char path[1024], w[600];
        json_t *body = NULL;
        CubError err = {};
        int r;

        if (!ns || !name || (e->token && !sa))
                return;
        if (e->token) {
                (void) snprintf(path, sizeof(path), "/api/v1/namespaces/%s/serviceaccounts/%s/token", ns, sa);
                body = json_pack("{s:s,s:s,s:{s:o,s:I,s:{s:s,s:s,s:s,s:s}}}", "apiVersion", "authentication.k8s.io/v1",
                                 "kind", "TokenRequest", "spec", "audiences",
                                 e->audience ? json_pack("[s]", e->audience) : json_array(), "expirationSeconds",
                                 (json_int_t) e->expiration, "boundObjectRef", "apiVersion", "v1", "kind", "Pod",
                                 "name", e->name, "uid", e->uid);
                r = body ? kube_client_request(p->client, "POST", path, KUBE_CT_JSON, body, on_answer, e, &e->id, &err)
                         : cub_err_set(&err, ENOMEM, "out of memory");
                json_decref(body);
        } else {
                (void) snprintf(path, sizeof(path), "/api/v1/namespaces/%s/%s/%s", ns,
                                e->secret ? "secrets" : "configmaps", name);
                r = kube_client_request(p->client, "GET", path, NULL, NULL, on_answer, e, &e->id, &err);
        }
        if (r < 0) {
                e->id = 0;
                if (cub_retry_failed(&e->retry, &projected_retry, now_mono(), err.msg, cub_retry_draw()))
                        cub_log(LOG_WARNING, "API server: %s: %s", what(e, w, sizeof(w)), err.msg);
        }
}

static int result(Entry *e, CubError *err) {
        e->used = true;
        if (e->value)
                return 1;
        if (e->retry.failures > 0)
                return cub_err_set(err, EIO, "%s", e->retry.error);
        return 0;
}

/* the entry of key (taken), made when new: *ret_new says so */
static Entry *get(KubeProjected *p, char *key, bool token, bool *ret_new) {
        Entry *e;

        *ret_new = false;
        if (!key)
                return NULL;
        for (e = p->entries; e; e = e->next)
                if (strcmp(e->key, key) == 0) {
                        free(key);
                        return e;
                }
        e = calloc(1, sizeof(*e));
        if (!e) {
                free(key);
                return NULL;
        }
        *e = (Entry){ .p = p, .key = key, .token = token, .next = p->entries };
        p->entries = e;
        *ret_new = true;
        return e;
}

static char *keyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *keyf(const char *fmt, ...) {
        char *s = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        return s;
}

int kube_projected_token(KubeProjected *p, const KubeTokenKey *k, const char **ret, CubError *err) {
        bool is_new;
        Entry *e = get(p, keyf("token\t%s\t%s\t%" PRId64, k->uid, k->audience ?: "", k->expiration_seconds), true,
                       &is_new);
        int r;

        if (!e)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (is_new) {
                e->ns = strdup(k->ns);
                e->name = strdup(k->pod);
                e->uid = strdup(k->uid);
                e->sa = strdup(k->service_account && *k->service_account ? k->service_account : "default");
                e->audience = k->audience ? strdup(k->audience) : NULL;
                e->expiration = k->expiration_seconds;
                if (!e->ns || !e->name || !e->uid || !e->sa || (k->audience && !e->audience))
                        return cub_err_set(err, ENOMEM, "out of memory");
                ask(e);
        }
        r = result(e, err);
        if (r > 0)
                *ret = json_string_value(e->value);
        return r;
}

int kube_projected_keys(KubeProjected *p, bool secret, const char *ns, const char *name, const json_t **ret,
                        CubError *err) {
        bool is_new;
        Entry *e = get(p, keyf("%s\t%s\t%s", secret ? "secret" : "configmap", ns, name), false, &is_new);
        int r;

        if (!e)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (is_new) {
                e->secret = secret;
                e->ns = strdup(ns);
                e->name = strdup(name);
                if (!e->ns || !e->name)
                        return cub_err_set(err, ENOMEM, "out of memory");
                ask(e);
        }
        r = result(e, err);
        if (r > 0)
                *ret = json_is_object(e->value) ? e->value : NULL;
        return r;
}

void kube_projected_mark(KubeProjected *p) {
        if (!p)
                return;
        for (Entry *e = p->entries; e; e = e->next)
                e->used = false;
}

void kube_projected_sweep(KubeProjected *p) {
        if (!p)
                return;
        for (Entry **q = &p->entries; *q;) {
                Entry *e = *q;

                if (e->used) {
                        q = &e->next;
                        continue;
                }
                *q = e->next;
                entry_free(e);
        }
}

void kube_projected_tick(KubeProjected *p) {
        if (!p)
                return;
        uint64_t now = now_mono();

        for (Entry *e = p->entries; e; e = e->next) {
                if (e->id || !cub_retry_due(&e->retry, now))
                        continue;
                if (!e->value || now >= e->renew_usec)
                        ask(e);
        }
}

uint64_t kube_projected_generation(const KubeProjected *p) {
        return p->generation;
}

json_t *kube_projected_status_json(const KubeProjected *p) {
        json_t *failing = json_array();
        size_t n = 0;
        char w[600];

        for (const Entry *e = p->entries; e; e = e->next) {
                n++;
                if (e->retry.failures > 0)
                        json_array_append_new(failing,
                                              json_pack("{s:s,s:s,s:i}", "what", what(e, w, sizeof(w)), "error",
                                                        e->retry.error, "failures", (int) e->retry.failures));
        }
        return json_pack("{s:I,s:I,s:I,s:I,s:I,s:o}", "entries", (json_int_t) n, "tokens", (json_int_t) p->tokens,
                         "configMaps", (json_int_t) p->config_maps, "secrets", (json_int_t) p->secrets, "failures",
                         (json_int_t) p->failures, "failing", failing ?: json_array());
}
