/* SPDX-License-Identifier: Apache-2.0 */
/* Image pull secrets: kubelet's keyring (pullcreds.h). */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/base64.h"
#include "../util/cleanup.h"
#include "pullcreds.h"

#define DEFAULT_REGISTRY "index.docker.io"

void kube_pull_creds_free(KubePullCred *c, size_t n) {
        for (size_t i = 0; c && i < n; i++) {
                free(c[i].username);
                free(c[i].password);
                free(c[i].server);
        }
        free(c);
}

/* a schemeless URL: host[:port] and path ("" when none) */
typedef struct Url {
        char host[256];
        char port[16];
        const char *path;
} Url;

static bool url_parse(const char *s, Url *u) {
        const char *slash = strchr(s, '/'), *colon;
        size_t hl = slash ? (size_t) (slash - s) : strlen(s);

        if (hl == 0 || hl >= sizeof(u->host))
                return false;
        memcpy(u->host, s, hl);
        u->host[hl] = '\0';
        u->port[0] = '\0';
        u->path = slash ? slash : "";
        /* net.SplitHostPort: the last ':' (no IPv6 literals here) */
        colon = strrchr(u->host, ':');
        if (colon) {
                if (strlen(colon + 1) >= sizeof(u->port))
                        return false;
                (void) snprintf(u->port, sizeof(u->port), "%s", colon + 1);
                u->host[colon - u->host] = '\0';
        }
        return true;
}

static size_t labels(const char *h) {
        size_t n = 1;

        for (; *h; h++)
                n += *h == '.';
        return n;
}

bool kube_urls_match(const char *glob, const char *target) {
        Url g, t;
        char gh[256], th[256], *gs, *ts, *gp, *tp;

        if (!url_parse(glob, &g) || !url_parse(target, &t))
                return false;
        if (strcmp(g.port, t.port) != 0 || labels(g.host) != labels(t.host))
                return false;
        if (strncmp(t.path, g.path, strlen(g.path)) != 0)
                return false;
        (void) snprintf(gh, sizeof(gh), "%s", g.host);
        (void) snprintf(th, sizeof(th), "%s", t.host);
        for (gp = strtok_r(gh, ".", &gs), tp = strtok_r(th, ".", &ts); gp && tp;
             gp = strtok_r(NULL, ".", &gs), tp = strtok_r(NULL, ".", &ts))
                if (fnmatch(gp, tp, 0) != 0)
                        return false;
        return !gp && !tp;
}

/* isDefaultRegistryMatch */
static bool default_registry(const char *image) {
        const char *slash = strchr(image, '/');

        if (!*image || image[0] == '/')
                return false;
        if (!slash)
                return true;
        if ((size_t) (slash - image) == 9 && strncmp(image, "docker.io", 9) == 0)
                return true;
        return !memchr(image, '.', (size_t) (slash - image)) && !memchr(image, ':', (size_t) (slash - image));
}

typedef struct Entry {
        char *key; /* host[:port][/path] */
        KubePullCred cred;
        size_t order; /* as added */
} Entry;

/* the keyring's key of a location: scheme dropped, a trailing /v1/ or /v2/ dropped */
static char *location_key(const char *loc) {
        const char *s = loc;
        char *k, *slash;
        size_t n;

        if (strncmp(s, "https://", 8) == 0)
                s += 8;
        else if (strncmp(s, "http://", 7) == 0)
                s += 7;
        k = strdup(s);
        if (!k)
                return NULL;
        n = strlen(k);
        if (n >= 4 && (strcmp(k + n - 4, "/v2/") == 0 || strcmp(k + n - 4, "/v1/") == 0))
                k[n - 3] = '\0'; /* effectivePath[:len-3]: the '/' before stays */
        slash = strchr(k, '/');
        if (slash && strcmp(slash, "/") == 0)
                *slash = '\0'; /* a path of "/" is none */
        return k;
}

static int entry_add(Entry **l, size_t *n, const char *loc, const json_t *e) {
        const char *user = json_string_value(json_object_get(e, "username"));
        const char *pass = json_string_value(json_object_get(e, "password"));
        const char *auth = json_string_value(json_object_get(e, "auth"));
        _cleanup_free_ uint8_t *dec = NULL;
        size_t dn = 0;
        char *colon = NULL;
        Entry *more, *x;
        Url u;

        /* DockerConfigEntry.UnmarshalJSON: auth, when set, is user:password */
        if (auth && *auth && cub_base64_decode(auth, strlen(auth), &dec, &dn) == 0 && (colon = memchr(dec, ':', dn))) {
                *colon = '\0';
                user = (const char *) dec;
                pass = colon + 1;
        }
        more = realloc(*l, (*n + 1) * sizeof(*more));
        if (!more)
                return -ENOMEM;
        *l = more;
        x = &more[*n];
        *x = (Entry){ .key = location_key(loc), .order = *n };
        if (!x->key)
                return -ENOMEM;
        if (!url_parse(x->key, &u)) {
                free(x->key);
                return 0; /* url.Parse failed: skipped */
        }
        x->cred.username = strdup(user ? user : "");
        x->cred.password = strdup(pass ? pass : "");
        if (asprintf(&x->cred.server, "%s%s%s", u.host, *u.port ? ":" : "", u.port) < 0)
                x->cred.server = NULL;
        (*n)++;
        if (!x->cred.username || !x->cred.password || !x->cred.server)
                return -ENOMEM;
        return 0;
}

/* the keyring's index order: keys in reverse lexical order, then as added */
static int cmp_entry(const void *a, const void *b) {
        const Entry *x = a, *y = b;
        int c = strcmp(y->key, x->key);

        return c ? c : (x->order > y->order) - (x->order < y->order);
}

static int take(const Entry *e, KubePullCred **ret, size_t *ret_n) {
        KubePullCred *more = realloc(*ret, (*ret_n + 1) * sizeof(*more));

        if (!more)
                return -ENOMEM;
        *ret = more;
        more[*ret_n] = (KubePullCred){ .username = strdup(e->cred.username),
                                       .password = strdup(e->cred.password),
                                       .server = strdup(e->cred.server) };
        (*ret_n)++;
        if (!more[*ret_n - 1].username || !more[*ret_n - 1].password || !more[*ret_n - 1].server)
                return -ENOMEM;
        return 0;
}

int kube_pull_creds(const json_t *const *secrets, const char *const *names, size_t n, const char *image,
                    KubePullCred **ret, size_t *ret_n, char **ret_skipped) {
        Entry *l = NULL;
        size_t m = 0;
        int r = 0;

        *ret = NULL;
        *ret_n = 0;
        if (ret_skipped)
                *ret_skipped = NULL;
        for (size_t i = 0; i < n && r == 0; i++) {
                const json_t *cfgjson = json_object_get(secrets[i], ".dockerconfigjson");
                const json_t *cfg = cfgjson ? NULL : json_object_get(secrets[i], ".dockercfg");
                const json_t *src = cfgjson ? cfgjson : cfg, *auths, *e;
                json_t *doc;
                json_error_t je;
                const char *loc;

                if (!secrets[i] || !src)
                        continue;
                doc = json_loadb(json_string_value(src), json_string_length(src), 0, &je);
                auths = cfgjson ? json_object_get(doc, "auths") : doc;
                if (!json_is_object(auths)) {
                        if (ret_skipped && !*ret_skipped &&
                            asprintf(ret_skipped, "%s: %s: %s", names ? names[i] : "-",
                                     cfgjson ? ".dockerconfigjson" : ".dockercfg",
                                     doc ? "no \"auths\" object" : je.text) < 0)
                                *ret_skipped = NULL;
                        json_decref(doc);
                        continue;
                }
                json_object_foreach((json_t *) auths, loc, e) {
                        if (r == 0 && json_is_object(e))
                                r = entry_add(&l, &m, loc, e);
                }
                json_decref(doc);
        }
        if (r == 0 && m > 0) {
                qsort(l, m, sizeof(*l), cmp_entry);
                for (size_t i = 0; i < m && r == 0; i++)
                        if (kube_urls_match(l[i].key, image))
                                r = take(&l[i], ret, ret_n);
                for (size_t i = 0; i < m && r == 0 && *ret_n == 0 && default_registry(image); i++)
                        if (strcmp(l[i].key, DEFAULT_REGISTRY) == 0)
                                r = take(&l[i], ret, ret_n);
        }
        for (size_t i = 0; i < m; i++) {
                free(l[i].key);
                free(l[i].cred.username);
                free(l[i].cred.password);
                free(l[i].cred.server);
        }
        free(l);
        if (r < 0) {
                kube_pull_creds_free(*ret, *ret_n);
                *ret = NULL;
                *ret_n = 0;
        }
        return r;
}
