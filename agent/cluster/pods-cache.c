/* SPDX-License-Identifier: Apache-2.0 */
/* The pods file of pods.h (kube_pods_set_cache): one JSON document,
 * replaced whole (temporary file, fsync, rename):
 *
 *   {"version":1,"node":"<node name>","pods":{"<uid>":{"metadata":...,"spec":...}}}
 *
 * Mirror pods, pods being deleted and pods that have ended (status.phase
 * Succeeded or Failed: never run again) are left out, and so is each pod's
 * status: what a node needs to start them again, not what it reported. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "pods-cache.h"
#include "status.h"

#define PODS_CACHE_MAX (64U * 1024 * 1024)

static bool kept(const json_t *pod) {
        const json_t *meta = json_object_get(pod, "metadata");

        return json_is_object(json_object_get(pod, "spec")) && !json_object_get(meta, "deletionTimestamp") &&
               !json_object_get(json_object_get(meta, "annotations"), "kubernetes.io/config.mirror") &&
               !kube_status_terminal(json_object_get(pod, "status"));
}

static int cmp_str(const void *x, const void *y) {
        return strcmp(*(char *const *) x, *(char *const *) y);
}

char *kube_pods_cache_fingerprint(const json_t *pods) {
        size_t n = 0, len = 1;
        const char *uid;
        json_t *o;
        char **parts = calloc(json_object_size(pods) + 1, sizeof(char *)), *out = NULL;

        if (!parts)
                return NULL;
        json_object_foreach((json_t *) pods, uid, o) {
                if (!kept(o))
                        continue;
                if (asprintf(&parts[n], "%s/%lld", uid,
                             (long long) json_integer_value(
                                     json_object_get(json_object_get(o, "metadata"), "generation"))) < 0)
                        goto out;
                len += strlen(parts[n++]) + 1;
        }
        qsort(parts, n, sizeof(char *), cmp_str);
        out = calloc(1, len);
        for (size_t i = 0, at = 0; out && i < n; i++)
                at += (size_t) snprintf(out + at, len - at, "%s ", parts[i]);
out:
        for (size_t i = 0; i < n; i++)
                free(parts[i]);
        free(parts);
        return out;
}

int kube_pods_cache_write(const char *path, const char *node, const json_t *pods, size_t *ret_n, CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *text = NULL;
        json_t *set = json_object(), *o;
        const char *uid;
        int r;

        json_object_foreach((json_t *) pods, uid, o)
                if (set && kept(o))
                        (void) json_object_set_new(set, uid,
                                                   json_pack("{s:O,s:O}", "metadata", json_object_get(o, "metadata"),
                                                             "spec", json_object_get(o, "spec")));
        *ret_n = set ? json_object_size(set) : 0;
        root = json_pack("{s:i,s:s,s:o}", "version", 1, "node", node, "pods", set);
        text = root ? json_dumps(root, JSON_COMPACT) : NULL;
        if (!text)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = cub_write_file_atomic(path, text, strlen(text), 0600, err);
        return r < 0 ? cub_err_wrap_errno(err, r, "'%s'", path) : 0;
}

json_t *kube_pods_cache_read(const char *path, const char *node, CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *data = NULL;
        json_error_t jerr = {};
        json_t *pods = NULL;
        const char *owner = NULL;
        size_t len;
        int version = 0, r;

        r = cub_read_file(path, PODS_CACHE_MAX, &data, &len, err);
        if (r < 0) {
                (void) cub_err_wrap_errno(err, r, "'%s'", path);
                return NULL;
        }
        root = json_loadb(data, len, 0, &jerr);
        if (!root ||
            json_unpack_ex(root, &jerr, 0, "{s:i,s:s,s:o}", "version", &version, "node", &owner, "pods", &pods) < 0 ||
            !json_is_object(pods)) {
                (void) cub_err_set(err, EBADMSG, "'%s': not a pods file: %s", path,
                                   pods ? "pods is not an object" : jerr.text);
                return NULL;
        }
        if (version != 1) {
                (void) cub_err_set(err, EBADMSG, "'%s': version %d, expected 1", path, version);
                return NULL;
        }
        if (strcmp(owner, node) != 0) {
                (void) cub_err_set(err, EBADMSG, "'%s': the pods of node '%s', not of '%s'", path, owner, node);
                return NULL;
        }
        return json_incref(pods);
}
