/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet server's authentication and authorization (auth.h). */
#include "auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/cleanup.h"
#include "../util/time.h"

#define CACHE_MAX 512

typedef struct CacheEntry {
        char *key;
        uint64_t expires_usec;
        bool allowed; /* authorization */
        ApiUser user; /* authentication: name NULL = the token was refused */
} CacheEntry;

typedef struct Cache {
        CacheEntry *e;
        size_t n;
} Cache;

struct ApiAuth {
        char *node_name;
        bool anonymous, webhook, always_allow;
        ApiReviewFn review;
        void *userdata;
        pthread_mutex_t lock;
        Cache tokens, decisions; /* under lock */
};

/* ---- users ------------------------------------------------------------------ */

void api_user_done(ApiUser *u) {
        free(u->name);
        free(u->uid);
        for (size_t i = 0; u->groups && u->groups[i]; i++)
                free(u->groups[i]);
        free(u->groups);
        *u = (ApiUser){};
}

int api_user_set(ApiUser *u, const char *name, const char *uid, const char *const *groups) {
        size_t n = 0;

        *u = (ApiUser){};
        while (groups && groups[n])
                n++;
        u->name = strdup(name ? name : "");
        u->uid = strdup(uid ? uid : "");
        u->groups = calloc(n + 1, sizeof(char *));
        if (!u->name || !u->uid || !u->groups) {
                api_user_done(u);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (!(u->groups[i] = strdup(groups[i]))) {
                        api_user_done(u);
                        return -ENOMEM;
                }
        return 0;
}

static int user_copy(ApiUser *dst, const ApiUser *src) {
        return api_user_set(dst, src->name, src->uid, (const char *const *) src->groups);
}

/* ---- the caches ---------------------------------------------------------------- */

static uint64_t now_usec(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

static void entry_done(CacheEntry *e) {
        free(e->key);
        api_user_done(&e->user);
}

static CacheEntry *cache_find(Cache *c, const char *key, uint64_t now) {
        for (size_t i = 0; i < c->n; i++)
                if (strcmp(c->e[i].key, key) == 0)
                        return c->e[i].expires_usec > now ? &c->e[i] : NULL;
        return NULL;
}

/* a new entry for key (an old one of the key, the expired ones and, when
 * full, the oldest go); NULL when out of memory */
static CacheEntry *cache_put(Cache *c, const char *key, uint64_t expires, uint64_t now) {
        size_t k = 0;
        CacheEntry *e;

        for (size_t i = 0; i < c->n; i++) {
                if (c->e[i].expires_usec <= now || strcmp(c->e[i].key, key) == 0 || (c->n >= CACHE_MAX && i == 0)) {
                        entry_done(&c->e[i]);
                        continue;
                }
                c->e[k++] = c->e[i];
        }
        c->n = k;
        if (!c->e && !(c->e = calloc(CACHE_MAX, sizeof(*c->e))))
                return NULL;
        e = &c->e[c->n];
        *e = (CacheEntry){ .key = strdup(key), .expires_usec = expires };
        if (!e->key)
                return NULL;
        c->n++;
        return e;
}

static void cache_done(Cache *c) {
        for (size_t i = 0; i < c->n; i++)
                entry_done(&c->e[i]);
        free(c->e);
        *c = (Cache){};
}

/* ---- setup --------------------------------------------------------------------- */

int api_auth_new(const ApiAuthConfig *c, ApiAuth **ret, CubError *err) {
        ApiAuth *a = calloc(1, sizeof(*a));

        if (!a || !(a->node_name = strdup(c->node_name ? c->node_name : ""))) {
                free(a);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        a->anonymous = c->anonymous;
        a->webhook = c->webhook;
        a->always_allow = c->always_allow;
        a->review = c->review;
        a->userdata = c->userdata;
        pthread_mutex_init(&a->lock, NULL);
        *ret = a;
        return 0;
}

ApiAuth *api_auth_free(ApiAuth *a) {
        if (!a)
                return NULL;
        cache_done(&a->tokens);
        cache_done(&a->decisions);
        pthread_mutex_destroy(&a->lock);
        free(a->node_name);
        free(a);
        return NULL;
}

/* ---- authentication -------------------------------------------------------------- */

static const char *bearer(const char *authorization) {
        if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
                return NULL;
        authorization += 7;
        while (*authorization == ' ')
                authorization++;
        return *authorization ? authorization : NULL;
}

/* the API server's answer for a token: 0 and *ret, or -EACCES (refused) */
static int token_review(ApiAuth *a, const char *token, ApiUser *ret, CubError *err) {
        json_t *body = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "authentication.k8s.io/v1", "kind", "TokenReview",
                                 "spec", "token", token);
        json_t *st = NULL, *g;
        const char **groups = NULL;
        size_t i, n;
        int r;

        if (!body)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = a->review(a->userdata, "/apis/authentication.k8s.io/v1/tokenreviews", body, &st, err);
        json_decref(body);
        if (r < 0)
                return r;
        if (!json_is_true(json_object_get(st, "authenticated"))) {
                json_decref(st);
                return -EACCES;
        }
        g = json_object_get(json_object_get(st, "user"), "groups");
        n = json_array_size(g);
        groups = calloc(n + 1, sizeof(char *));
        for (i = 0; groups && i < n; i++)
                groups[i] = json_string_value(json_array_get(g, i)) ?: "";
        r = groups ? api_user_set(ret, json_string_value(json_object_get(json_object_get(st, "user"), "username")),
                                  json_string_value(json_object_get(json_object_get(st, "user"), "uid")), groups)
                   : -ENOMEM;
        free(groups);
        json_decref(st);
        return r < 0 ? cub_err_set(err, -r, "out of memory") : 0;
}

int api_auth_authenticate(ApiAuth *a, const ApiUser *cert_user, const char *authorization, ApiUser *ret,
                          CubError *err) {
        const char *token = bearer(authorization);
        uint64_t now = now_usec();
        CacheEntry *e;
        int r;

        *ret = (ApiUser){};
        if (cert_user && cert_user->name && *cert_user->name)
                return user_copy(ret, cert_user) < 0 ? cub_err_set(err, ENOMEM, "out of memory") : 0;
        if (token && a->webhook && a->review) {
                pthread_mutex_lock(&a->lock);
                e = cache_find(&a->tokens, token, now);
                r = !e ? 1 : e->user.name ? user_copy(ret, &e->user) : -EACCES;
                pthread_mutex_unlock(&a->lock);
                if (r <= 0)
                        return r == -EACCES ? cub_err_set(err, EACCES, "the bearer token was refused (cached)")
                               : r < 0      ? cub_err_set(err, -r, "out of memory")
                                            : 0;
                r = token_review(a, token, ret, err);
                if (r < 0 && r != -EACCES)
                        return r; /* the API server did not answer: not cached */
                pthread_mutex_lock(&a->lock);
                e = cache_put(&a->tokens, token, now + API_AUTH_TOKEN_TTL_USEC, now);
                if (e && r == 0)
                        (void) user_copy(&e->user, ret);
                pthread_mutex_unlock(&a->lock);
                return r == -EACCES ? cub_err_set(err, EACCES, "the API server refused the bearer token") : 0;
        }
        if (a->anonymous)
                return api_user_set(ret, "system:anonymous", "",
                                    (const char *const[]){ "system:unauthenticated", NULL }) < 0
                               ? cub_err_set(err, ENOMEM, "out of memory")
                               : 0;
        return cub_err_set(err, EACCES,
                           token ? "bearer tokens are not accepted (authentication.webhook.enabled: false)"
                                 : "no client certificate and no bearer token");
}

/* ---- authorization ----------------------------------------------------------------- */

const char *api_auth_verb(const char *method) {
        static const char *const map[][2] = { { "POST", "create" },
                                              { "GET", "get" },
                                              { "PUT", "update" },
                                              { "PATCH", "patch" },
                                              { "DELETE", "delete" } };

        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (strcmp(method, map[i][0]) == 0)
                        return map[i][1];
        return "";
}

/* kubelet's isSubpath: path is prefix, or prefix followed by '/' */
static bool subpath(const char *path, const char *prefix) {
        size_t n = strlen(prefix);

        return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

size_t api_auth_subresources(const char *path, const char *ret[2]) {
        size_t n = 0;

        if (subpath(path, "/pods") || subpath(path, "/runningpods"))
                ret[n++] = "pods";
        else if (subpath(path, "/healthz"))
                ret[n++] = "healthz";
        else if (subpath(path, "/configz"))
                ret[n++] = "configz";
        ret[n++] = subpath(path, "/stats")        ? "stats"
                   : subpath(path, "/metrics")    ? "metrics"
                   : subpath(path, "/logs")       ? "log"
                   : subpath(path, "/checkpoint") ? "checkpoint"
                   : subpath(path, "/statusz")    ? "statusz"
                   : subpath(path, "/flagz")      ? "configz"
                                                  : "proxy";
        return n;
}

static int access_review(ApiAuth *a, const ApiUser *u, const char *verb, const char *sub, bool *ret, CubError *err) {
        json_t *groups = json_array(), *st = NULL, *body;
        int r;

        for (size_t i = 0; groups && u->groups && u->groups[i]; i++)
                json_array_append_new(groups, json_string(u->groups[i]));
        body = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:{s:s,s:s,s:s,s:s,s:s}}}", "apiVersion", "authorization.k8s.io/v1",
                         "kind", "SubjectAccessReview", "spec", "user", u->name, "uid", u->uid ? u->uid : "", "groups",
                         groups ? groups : json_array(), "resourceAttributes", "verb", verb, "version", "v1",
                         "resource", "nodes", "subresource", sub, "name", a->node_name);
        if (!body)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = a->review(a->userdata, "/apis/authorization.k8s.io/v1/subjectaccessreviews", body, &st, err);
        json_decref(body);
        if (r < 0)
                return r;
        *ret = json_is_true(json_object_get(st, "allowed"));
        json_decref(st);
        return 0;
}

static int decide(ApiAuth *a, const ApiUser *u, const char *verb, const char *sub, bool *ret, CubError *err) {
        _cleanup_free_ char *key = NULL;
        uint64_t now = now_usec();
        CacheEntry *e;
        FILE *f;
        size_t len = 0;
        int r;

        f = open_memstream(&key, &len);
        if (!f)
                return cub_err_set(err, ENOMEM, "out of memory");
        /* the fields apart by a control character no name holds */
        fprintf(f, "%s\x1f%s\x1f%s\x1f%s", u->name, u->uid ? u->uid : "", verb, sub);
        for (size_t i = 0; u->groups && u->groups[i]; i++)
                fprintf(f, "\x1f%s", u->groups[i]);
        if (fclose(f) != 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        pthread_mutex_lock(&a->lock);
        e = cache_find(&a->decisions, key, now);
        if (e)
                *ret = e->allowed;
        pthread_mutex_unlock(&a->lock);
        if (e)
                return 0;
        r = access_review(a, u, verb, sub, ret, err);
        if (r < 0)
                return r;
        pthread_mutex_lock(&a->lock);
        e = cache_put(&a->decisions, key, now + (*ret ? API_AUTH_ALLOWED_TTL_USEC : API_AUTH_DENIED_TTL_USEC), now);
        if (e)
                e->allowed = *ret;
        pthread_mutex_unlock(&a->lock);
        return 0;
}

int api_auth_authorize(ApiAuth *a, const ApiUser *u, const char *method, const char *path, CubError *err) {
        const char *subs[2], *verb = api_auth_verb(method);
        size_t n = api_auth_subresources(path, subs);
        bool allowed = false;
        int r;

        if (a->always_allow)
                return 0;
        if (!a->review)
                return cub_err_set(err, EPERM,
                                   "Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=[%s%s%s])\n", u->name,
                                   verb, subs[0], n > 1 ? " " : "", n > 1 ? subs[1] : "");
        for (size_t i = 0; i < n && !allowed; i++) {
                r = decide(a, u, verb, subs[i], &allowed, err);
                if (r < 0)
                        return cub_err_wrap(err,
                                            "Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)",
                                            u->name, verb, subs[i]);
        }
        if (allowed)
                return 0;
        return cub_err_set(err, EPERM, "Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=[%s%s%s])\n",
                           u->name, verb, subs[0], n > 1 ? " " : "", n > 1 ? subs[1] : "");
}
