/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster's Services (a reflector) and the environment variables a
 * pod's containers get from them, as kubelet makes them. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syslog.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "reflector.h"
#include "services.h"

#define SERVICES_FILE_MAX (16u << 20)

struct KubeServices {
        KubeReflector *reflector;
        KubeServicesFn fn;
        void *userdata;
        /* kube_services_set_cache: the file, what it holds (a dump), and the
         * set it had at the start (NULL: none) */
        char *cache_path, *cache_text;
        json_t *cached;
        char cache_error[CUB_ERR_MSG_MAX];
};

/* what the variables need of a Service, uid → {metadata, spec: {clusterIP, ports}} */
static json_t *slim(const json_t *set) {
        json_t *out = json_object(), *svc;
        const char *uid;

        json_object_foreach((json_t *) set, uid, svc) {
                const json_t *m = json_object_get(svc, "metadata"), *sp = json_object_get(svc, "spec");

                json_object_set_new(out, uid,
                                    json_pack("{s:{s:O*,s:O*,s:O*},s:{s:O*,s:O*}}", "metadata", "name",
                                              json_object_get(m, "name"), "namespace", json_object_get(m, "namespace"),
                                              "uid", json_object_get(m, "uid"), "spec", "clusterIP",
                                              json_object_get(sp, "clusterIP"), "ports", json_object_get(sp, "ports")));
        }
        return out;
}

/* the set in the file when it changed (a later start without the API
 * server makes its pods' env from it, as offlinePods: start runs them) */
static void keep(KubeServices *s, const json_t *set) {
        _cleanup_(json_decrefp) json_t *o = NULL;
        _cleanup_free_ char *text = NULL;
        CubError err = {};

        if (!s->cache_path || !(o = slim(set)) || !(text = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT)))
                return;
        if (s->cache_text && strcmp(text, s->cache_text) == 0)
                return;
        if (cub_write_file_atomic(s->cache_path, text, strlen(text), 0600, &err) < 0) {
                if (strcmp(s->cache_error, err.msg) != 0)
                        cub_log(LOG_WARNING, "API server: services file: %s; written again with the next change",
                                err.msg);
                (void) snprintf(s->cache_error, sizeof(s->cache_error), "%s", err.msg);
                return;
        }
        s->cache_error[0] = 0;
        free(s->cache_text);
        s->cache_text = TAKE_PTR(text);
}

static void changed(void *userdata, const json_t *set) {
        KubeServices *s = userdata;

        keep(s, set);
        if (s->fn)
                s->fn(s->userdata);
}

/* a list or watch failed: the pods that wait for the first list are told */
static void failed(void *userdata, bool synced) {
        KubeServices *s = userdata;

        if (!synced && s->fn)
                s->fn(s->userdata);
}

int kube_services_new(sd_event *e, KubeClient *c, KubeServicesFn fn, void *userdata, KubeServices **ret,
                      CubError *err) {
        KubeServices *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return cub_err_set(err, ENOMEM, "out of memory");
        s->fn = fn;
        s->userdata = userdata;
        /* kubelet's informer leaves headless Services out (issues.k8s.io/122394) */
        r = kube_reflector_new(e, c,
                               &(KubeReflectorSpec){ .what = "services",
                                                     .path = "/api/v1/services",
                                                     .field_selector = "spec.clusterIP!=None",
                                                     .fn = changed,
                                                     .failed_fn = failed,
                                                     .userdata = s },
                               &s->reflector, err);
        if (r < 0) {
                kube_services_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

KubeServices *kube_services_free(KubeServices *s) {
        if (!s)
                return NULL;
        s->reflector = kube_reflector_free(s->reflector);
        free(s->cache_path);
        free(s->cache_text);
        json_decref(s->cached);
        free(s);
        return NULL;
}

int kube_services_set_cache(KubeServices *s, const char *dir, CubError *err) {
        free(s->cache_path);
        if (asprintf(&s->cache_path, "%s/" KUBE_SERVICES_FILE, dir) < 0)
                return s->cache_path = NULL, cub_err_set(err, ENOMEM, "out of memory");
        return 0;
}

void kube_services_start(KubeServices *s) {
        _cleanup_free_ char *text = NULL;
        CubError err = {};
        json_error_t jerr;
        size_t len;

        if (s->cache_path && cub_read_file(s->cache_path, SERVICES_FILE_MAX, &text, &len, &err) >= 0) {
                s->cached = json_loadb(text, len, 0, &jerr);
                if (!json_is_object(s->cached)) {
                        cub_log(LOG_WARNING, "API server: services file '%s': %s: not used", s->cache_path,
                                s->cached ? "not an object" : jerr.text);
                        json_decref(s->cached);
                        s->cached = NULL;
                } else
                        s->cache_text = TAKE_PTR(text);
        }
        kube_reflector_start(s->reflector);
}

bool kube_services_cached(const KubeServices *s) {
        return s && s->cached;
}

bool kube_services_synced(const KubeServices *s) {
        return s && kube_reflector_synced(s->reflector);
}

bool kube_services_failing(const KubeServices *s) {
        return s && kube_reflector_failing(s->reflector);
}

const json_t *kube_services_set(const KubeServices *s) {
        return kube_reflector_synced(s->reflector) || !s->cached ? kube_reflector_set(s->reflector) : s->cached;
}

json_t *kube_services_status_json(const KubeServices *s) {
        json_t *o = kube_reflector_status_json(s->reflector, "services");

        if (o && s->cache_path)
                json_object_set_new(o, "file",
                                    json_pack("{s:s,s:I,s:s}", "path", s->cache_path, "servicesAtStart",
                                              (json_int_t) json_object_size(s->cached), "error", s->cache_error));
        return o;
}

/* ---- the variables (pure) ------------------------------------------------ */

static const char *str_at(const json_t *o, const char *a, const char *b) {
        return json_string_value(json_object_get(json_object_get(o, a), b));
}

/* IsServiceIPSet, and a port to name (validation requires one; a broken
 * answer without gets no variables rather than a crash) */
static bool usable(const json_t *svc) {
        const char *ip = str_at(svc, "spec", "clusterIP");
        const json_t *ports = json_object_get(json_object_get(svc, "spec"), "ports");

        return ip && *ip && strcmp(ip, "None") != 0 && json_array_size(ports) > 0 &&
               str_at(svc, "metadata", "name") && str_at(svc, "metadata", "namespace");
}

/* makeEnvVariableName: upper case, '-' as '_' */
static void env_name(char *s) {
        for (; *s; s++)
                *s = *s == '-' ? '_' : (char) toupper((unsigned char) *s);
}

static int put(json_t *vars, const char *value, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int put(json_t *vars, const char *value, const char *fmt, ...) {
        _cleanup_free_ char *name = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&name, fmt, ap);
        va_end(ap);
        if (r < 0) {
                name = NULL;
                return -ENOMEM;
        }
        return json_object_set_new(vars, name, json_string(value)) < 0 ? -ENOMEM : 0;
}

/* envvars.FromServices for one Service */
static int service_vars(const json_t *svc, json_t *vars) {
        const char *ip = str_at(svc, "spec", "clusterIP");
        const json_t *ports = json_object_get(json_object_get(svc, "spec"), "ports"), *p;
        _cleanup_free_ char *pre = strdup(str_at(svc, "metadata", "name"));
        char host[128];
        size_t i;
        int r = 0;

        if (!pre)
                return -ENOMEM;
        env_name(pre);
        (void) snprintf(host, sizeof(host), strchr(ip, ':') ? "[%s]" : "%s", ip);
        r = put(vars, ip, "%s_SERVICE_HOST", pre);
        json_array_foreach(ports, i, p) {
                long long port = json_integer_value(json_object_get(p, "port"));
                const char *pname = json_string_value(json_object_get(p, "name"));
                const char *proto = json_string_value(json_object_get(p, "protocol"));
                char num[24], lower[32], upper[32];
                _cleanup_free_ char *url = NULL;

                (void) snprintf(num, sizeof(num), "%lld", port);
                (void) snprintf(lower, sizeof(lower), "%s", proto && *proto ? proto : "TCP");
                (void) snprintf(upper, sizeof(upper), "%s", lower);
                for (char *c = lower; *c; c++)
                        *c = (char) tolower((unsigned char) *c);
                for (char *c = upper; *c; c++)
                        *c = (char) toupper((unsigned char) *c);
                if (asprintf(&url, "%s://%s:%s", lower, host, num) < 0) {
                        url = NULL;
                        return -ENOMEM;
                }
                if (i == 0 && r >= 0)
                        r = put(vars, num, "%s_SERVICE_PORT", pre);
                if (pname && *pname && r >= 0) {
                        _cleanup_free_ char *pn = strdup(pname);

                        if (!pn)
                                return -ENOMEM;
                        env_name(pn);
                        r = put(vars, num, "%s_SERVICE_PORT_%s", pre, pn);
                }
                if (i == 0 && r >= 0)
                        r = put(vars, url, "%s_PORT", pre);
                if (r >= 0)
                        r = put(vars, url, "%s_PORT_%s_%s", pre, num, upper);
                if (r >= 0)
                        r = put(vars, lower, "%s_PORT_%s_%s_PROTO", pre, num, upper);
                if (r >= 0)
                        r = put(vars, num, "%s_PORT_%s_%s_PORT", pre, num, upper);
                if (r >= 0)
                        r = put(vars, ip, "%s_PORT_%s_%s_ADDR", pre, num, upper);
                if (r < 0)
                        return r;
        }
        return r;
}

static int cmp_str(const void *x, const void *y) {
        return strcmp(*(const char *const *) x, *(const char *const *) y);
}

/* a json object's keys, sorted (borrowed; the array owned) */
static const char **sorted_keys(const json_t *o) {
        const char **keys = calloc(json_object_size(o) + 1, sizeof(char *)), *k;
        size_t n = 0;
        json_t *v;

        if (!keys)
                return NULL;
        json_object_foreach((json_t *) o, k, v) keys[n++] = k;
        qsort(keys, n, sizeof(char *), cmp_str);
        return keys;
}

int kube_service_env(const json_t *set, const char *ns, bool links, char ***ret, CubError *err) {
        _cleanup_(json_decrefp) json_t *chosen = json_object(), *vars = json_object();
        _cleanup_free_ const char **names = NULL, **keys = NULL;
        const char *uid;
        json_t *svc;
        char **out;
        size_t n = 0;
        int r = 0;

        *ret = NULL;
        if (!chosen || !vars)
                return cub_err_set(err, ENOMEM, "out of memory");
        /* the master services always; the namespace's own (which take a
         * master service's name from it) with links */
        json_object_foreach((json_t *) set, uid, svc) {
                const char *name = str_at(svc, "metadata", "name"), *sns = str_at(svc, "metadata", "namespace");

                if (!usable(svc))
                        continue;
                if (strcmp(sns, "default") == 0 && strcmp(name, "kubernetes") == 0) {
                        if (!json_object_get(chosen, name))
                                json_object_set(chosen, name, svc);
                } else if (links && strcmp(sns, ns) == 0)
                        json_object_set(chosen, name, svc);
        }
        if (!(names = sorted_keys(chosen)))
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; names[i] && r >= 0; i++)
                r = service_vars(json_object_get(chosen, names[i]), vars);
        if (r < 0 || !(keys = sorted_keys(vars)))
                return cub_err_set(err, ENOMEM, "out of memory");
        out = calloc(2 * json_object_size(vars) + 1, sizeof(char *));
        if (!out)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; keys[i]; i++) {
                out[n] = strdup(keys[i]);
                out[n + 1] = out[n] ? strdup(json_string_value(json_object_get(vars, keys[i]))) : NULL;
                if (!out[n] || !out[n + 1]) {
                        for (size_t k = 0; k <= n + 1; k++)
                                free(out[k]);
                        free(out);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
                n += 2;
        }
        *ret = out;
        return 0;
}
