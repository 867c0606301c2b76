/* SPDX-License-Identifier: Apache-2.0 */
/* The node's pods from the API server: a reflector (reflector.c) with the
 * node's field selector, and the file of its last list (offlinePods). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/retry.h"
#include "../util/time.h"
#include "pods-cache.h"
#include "pods.h"
#include "reflector.h"

struct KubePods {
        KubeReflector *reflector;
        char *node;
        KubePodsFn fn;
        void *userdata;
        /* kube_pods_set_cache */
        char *cache_path, *cache_fp, cache_error[CUB_ERR_MSG_MAX];
        bool offline_start;
        json_t *offline; /* the file's pods until the first list, when offline_start */
        size_t offline_started;
        uint64_t cache_writes;
        bool logged; /* the first list's line */
};

/* the set to fn, and to the file when its pods changed */
static void deliver(void *userdata, const json_t *set) {
        KubePods *p = userdata;
        _cleanup_free_ char *fp = NULL;
        CubError err = {};
        size_t n;

        if (p->offline) { /* the first list: the file's pods are done with */
                json_decref(p->offline);
                p->offline = NULL;
        }
        if (!p->logged) {
                cub_log(LOG_INFO, "API server: %zu pods bound to node '%s'", json_object_size(set), p->node);
                p->logged = true;
        }
        fp = p->cache_path ? kube_pods_cache_fingerprint(set) : NULL;
        p->fn(p->userdata, set);
        if (!fp || (p->cache_fp && strcmp(fp, p->cache_fp) == 0))
                return;
        if (kube_pods_cache_write(p->cache_path, p->node, set, &n, &err) < 0) {
                if (strcmp(p->cache_error, err.msg) != 0)
                        cub_log(LOG_WARNING, "API server: pods file: %s; written again with the next change", err.msg);
                (void) snprintf(p->cache_error, sizeof(p->cache_error), "%s", err.msg);
                return;
        }
        p->cache_error[0] = 0;
        p->cache_writes++;
        free(p->cache_fp);
        p->cache_fp = TAKE_PTR(fp);
}

/* offlinePods: start: the first list failed, the node starts what it ran */
static void failed(void *userdata, bool synced) {
        KubePods *p = userdata;

        if (synced || !p->offline || p->offline_started)
                return;
        p->offline_started = json_object_size(p->offline);
        cub_log(LOG_WARNING,
                "API server: unreachable at the start: the %zu pods of its last list from '%s' "
                "(offlinePods: start) until a list answers",
                p->offline_started, p->cache_path);
        if (p->offline_started)
                p->fn(p->userdata, p->offline);
}

int kube_pods_new(sd_event *e, KubeClient *c, const char *node_name, KubePodsFn fn, void *userdata, KubePods **ret,
                  CubError *err) {
        KubePods *p = calloc(1, sizeof(*p));
        char sel[512];
        int r;

        if (!p || !(p->node = strdup(node_name))) {
                kube_pods_free(p);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        p->fn = fn;
        p->userdata = userdata;
        (void) snprintf(sel, sizeof(sel), "spec.nodeName=%s", node_name);
        r = kube_reflector_new(e, c,
                               &(KubeReflectorSpec){ .what = "pods",
                                                     .path = "/api/v1/pods",
                                                     .field_selector = sel,
                                                     .fn = deliver,
                                                     .failed_fn = failed,
                                                     .userdata = p },
                               &p->reflector, err);
        if (r < 0) {
                kube_pods_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

KubePods *kube_pods_free(KubePods *p) {
        if (!p)
                return NULL;
        p->reflector = kube_reflector_free(p->reflector);
        json_decref(p->offline);
        free(p->cache_path);
        free(p->cache_fp);
        free(p->node);
        free(p);
        return NULL;
}

int kube_pods_set_cache(KubePods *p, const char *dir, bool offline_start, CubError *err) {
        free(p->cache_path);
        if (asprintf(&p->cache_path, "%s/" KUBE_PODS_FILE, dir) < 0)
                return p->cache_path = NULL, cub_err_set(err, ENOMEM, "out of memory");
        p->offline_start = offline_start;
        return 0;
}

void kube_pods_start(KubePods *p) {
        CubError err = {};

        if (p->cache_path && p->offline_start) {
                p->offline = kube_pods_cache_read(p->cache_path, p->node, &err);
                if (p->offline)
                        p->cache_fp = kube_pods_cache_fingerprint(p->offline);
                else
                        cub_log(err.code == ENOENT ? LOG_INFO : LOG_WARNING,
                                "API server: pods file: %s: nothing starts before the first list", err.msg);
        }
        kube_reflector_start(p->reflector);
}

const json_t *kube_pods_set(const KubePods *p) {
        return kube_reflector_set(p->reflector);
}

bool kube_pods_synced(const KubePods *p) {
        return p && kube_reflector_synced(p->reflector);
}

json_t *kube_pods_status_json(const KubePods *p) {
        json_t *o = kube_reflector_status_json(p->reflector, "pods");

        if (o && p->cache_path)
                json_object_set_new(o, "file",
                                    json_pack("{s:s,s:s,s:I,s:I,s:s}", "path", p->cache_path, "offlinePods",
                                              p->offline_start ? "start" : "keep", "writes",
                                              (json_int_t) p->cache_writes, "startedOffline",
                                              (json_int_t) p->offline_started, "error", p->cache_error));
        return o;
}
