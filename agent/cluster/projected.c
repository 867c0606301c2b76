/* SPDX-License-Identifier: Apache-2.0 */
/* Tokens, ConfigMaps and Secrets for the pods' volumes and env, on the loop:
 * a token asked for (and renewed) by TokenRequest, a ConfigMap or Secret
 * watched (a reflector of its own: list and watch by name). */
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
#include "reflector.h"

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
        uint64_t renew_usec;   /* token: ask again then (monotonic) */
        uint64_t id;           /* token: the request in flight, 0: none */
        KubeReflector *watch;  /* ConfigMap, Secret: its list and watch */
        CubRetry retry;        /* token: the requests' failures; ConfigMap, Secret: an object that is not one */
        bool used;
};

struct KubeProjected {
        sd_event *event;
        KubeClient *client;
        KubeProjectedFn fn;
        void *userdata;
        /* fn, called from the loop after a value changed: never from inside
         * an answer or a watch's callback, whose entry fn's pass may free */
        sd_event_source *notify;
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
        kube_reflector_free(e->watch);
        json_decref(e->value);
        free(e->key);
        free(e->ns);
        free(e->name);
        free(e->uid);
        free(e->sa);
        free(e->audience);
        free(e);
}

static int on_notify(sd_event_source *s, void *userdata) {
        KubeProjected *p = userdata;

        (void) s;
        if (p->fn)
                p->fn(p->userdata);
        return 0;
}

int kube_projected_new(sd_event *event, KubeClient *c, KubeProjectedFn fn, void *userdata, KubeProjected **ret,
                       CubError *err) {
        KubeProjected *p = calloc(1, sizeof(*p));
        int r;

        if (!p)
                return cub_err_set(err, ENOMEM, "out of memory");
        p->event = event;
        p->client = c;
        p->fn = fn;
        p->userdata = userdata;
        r = sd_event_add_defer(event, &p->notify, on_notify, p);
        if (r < 0) {
                free(p);
                return cub_err_set(err, -r, "API server: volumes: sd-event: %s", strerror(-r));
        }
        (void) sd_event_source_set_enabled(p->notify, SD_EVENT_OFF);
        (void) sd_event_source_set_description(p->notify, "kube-projected");
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
        p->notify = sd_event_source_disable_unref(p->notify);
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

/* a new value: pods waiting for it may go on, volumes are written again */
static void set_value(Entry *e, json_t *v) {
        KubeProjected *p = e->p;
        bool changed = !e->value || !json_equal(e->value, v);
        char w[600];

        if (cub_retry_succeeded(&e->retry))
                cub_log(LOG_INFO, "API server: %s: got it", what(e, w, sizeof(w)));
        json_decref(e->value);
        e->value = v;
        if (changed) {
                p->generation++;
                (void) sd_event_source_set_enabled(p->notify, SD_EVENT_ONESHOT);
        }
}

/* a failure: logged once per distinct error, the pods that wait for it say it */
static void set_failed(Entry *e, const char *error, bool again) {
        uint64_t now = now_mono();
        char w[600];

        e->p->failures++;
        if (!cub_retry_failed(&e->retry, &projected_retry, now, error, cub_retry_draw()))
                return;
        if (again)
                cub_log(LOG_WARNING, "API server: %s: %s; trying again in %" PRIu64 " s", what(e, w, sizeof(w)), error,
                        (e->retry.next_usec - now + CUB_USEC_PER_SEC - 1) / CUB_USEC_PER_SEC);
        else
                cub_log(LOG_WARNING, "API server: %s: %s; waiting for its next change", what(e, w, sizeof(w)), error);
}

/* a token's TokenRequest answered */
static void on_answer(void *userdata, long status, json_t *body, const char *error) {
        Entry *e = userdata;
        KubeProjected *p = e->p;
        const char *tok;
        int64_t exp, es;

        (void) status;
        e->id = 0;
        if (!*error && kube_answer_token(body, &tok, &exp, &es) < 0)
                error = "the TokenRequest's answer has no token, expirationTimestamp or expirationSeconds";
        if (*error) {
                set_failed(e, error, true);
                return;
        }
        int64_t in = kube_token_renew_in(exp, es, (int64_t) (cub_now_usec(CLOCK_REALTIME) / 1000000),
                                         (int64_t) (cub_retry_draw() % (KUBE_TOKEN_MAX_JITTER_S + 1)));
        json_t *v = json_string(tok);

        if (!v) {
                set_failed(e, "out of memory", true);
                return;
        }
        e->renew_usec = now_mono() + (uint64_t) in * CUB_USEC_PER_SEC;
        p->tokens++;
        set_value(e, v);
}

/* a ConfigMap's or Secret's list or watch event: the set of the objects of
 * its name (none or one) */
static void on_object(void *userdata, const json_t *set) {
        Entry *e = userdata;
        const char *uid, *error = "";
        json_t *o, *v = json_null();

        json_object_foreach((json_t *) set, uid, o) {
                json_decref(v);
                v = kube_answer_keys(o, e->secret, &error);
        }
        if (!v) {
                set_failed(e, *error ? error : "out of memory", false);
                return;
        }
        if (!json_is_null(v))
                e->secret ? e->p->secrets++ : e->p->config_maps++;
        set_value(e, v);
}

/* a token's TokenRequest */
static void ask(Entry *e) {
        KubeProjected *p = e->p;
        _cleanup_free_ char *ns = curl_easy_escape(NULL, e->ns, 0), *sa = curl_easy_escape(NULL, e->sa, 0);
        char path[1024], w[600];
        json_t *body = NULL;
        CubError err = {};
        int r;

        if (!ns || !sa)
                return;
        (void) snprintf(path, sizeof(path), "/api/v1/namespaces/%s/serviceaccounts/%s/token", ns, sa);
        body = json_pack("{s:s,s:s,s:{s:o,s:I,s:{s:s,s:s,s:s,s:s}}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                         "TokenRequest", "spec", "audiences", e->audience ? json_pack("[s]", e->audience) : json_array(),
                         "expirationSeconds", (json_int_t) e->expiration, "boundObjectRef", "apiVersion", "v1", "kind",
                         "Pod", "name", e->name, "uid", e->uid);
        r = body ? kube_client_request(p->client, "POST", path, KUBE_CT_JSON, body, on_answer, e, &e->id, &err)
                 : cub_err_set(&err, ENOMEM, "out of memory");
        json_decref(body);
        if (r < 0) {
                e->id = 0;
                if (cub_retry_failed(&e->retry, &projected_retry, now_mono(), err.msg, cub_retry_draw()))
                        cub_log(LOG_WARNING, "API server: %s: %s", what(e, w, sizeof(w)), err.msg);
        }
}

/* a ConfigMap's or Secret's list and watch, by name (kubelet's watch-based
 * manager: the Node authorizer lets a node list and watch one object its
 * pods name, with a metadata.name field selector) */
static int watch(Entry *e, CubError *err) {
        _cleanup_free_ char *ns = curl_easy_escape(NULL, e->ns, 0);
        _cleanup_free_ char *path = NULL, *sel = NULL;
        char w[600];
        KubeReflectorSpec spec = { .what = what(e, w, sizeof(w)), .fn = on_object, .userdata = e };
        int r;

        if (!ns || asprintf(&path, "/api/v1/namespaces/%s/%s", ns, e->secret ? "secrets" : "configmaps") < 0 ||
            asprintf(&sel, "metadata.name=%s", e->name) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        spec.path = path;
        spec.field_selector = sel;
        r = kube_reflector_new(e->p->event, e->p->client, &spec, &e->watch, err);
        if (r < 0)
                return r;
        kube_reflector_start(e->watch);
        return 0;
}

static int result(Entry *e, CubError *err) {
        e->used = true;
        if (e->value)
                return 1;
        if (e->retry.failures > 0)
                return cub_err_set(err, EIO, "%s", e->retry.error);
        if (e->watch && kube_reflector_failing(e->watch))
                return cub_err_set(err, EIO, "%s", kube_reflector_error(e->watch));
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
                if ((r = watch(e, err)) < 0)
                        return r;
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
                if (!e->token || e->id || !cub_retry_due(&e->retry, now))
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
                const char *error = e->retry.failures > 0 ? e->retry.error : kube_reflector_error(e->watch);

                n++;
                if (error)
                        json_array_append_new(failing, json_pack("{s:s,s:s,s:i}", "what", what(e, w, sizeof(w)),
                                                                 "error", error, "failures",
                                                                 (int) (e->retry.failures ?: 1)));
        }
        return json_pack("{s:I,s:I,s:I,s:I,s:I,s:o}", "entries", (json_int_t) n, "tokens", (json_int_t) p->tokens,
                         "configMaps", (json_int_t) p->config_maps, "secrets", (json_int_t) p->secrets, "failures",
                         (json_int_t) p->failures, "failing", failing ?: json_array());
}
