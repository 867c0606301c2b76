/* SPDX-License-Identifier: Apache-2.0 */
/* Pod statuses to the API server, and mirror pods: the node's static pods
 * in the API server (kubelet's mirror client); both for cluster.c's status
 * tick. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../util/cleanup.h"
#include "cluster-internal.h"

static const char *uid_of_json(const json_t *o) {
        return json_string_value(json_object_get(json_object_get(o, "metadata"), "uid")) ?: "";
}

/* ---- a pod's status ------------------------------------------------------------- */

void agent_cluster_publish_status(Agent *a, const LcPod *p, const ApiPodsInfo *info, const char *uid) {
        size_t key_len = 0;
        _cleanup_free_ char *key = api_pod_status_key(p, info, &key_len);
        json_t *pj;

        if (key && kube_status_unchanged(a->cluster->status, uid, key, key_len))
                return;
        pj = api_pod_status_json(p, info);
        if (pj)
                kube_status_set(a->cluster->status, p->spec->pod->namespace_, p->spec->pod->name, uid, pj, key,
                                key_len);
        json_decref(pj);
}

/* ---- mirror pods ------------------------------------------------------------------ */

/* the mirror pod of static pod p in the API's set (NULL: none) */
static const json_t *mirror_of(const json_t *set, const LcPod *p) {
        const char *uid;
        json_t *o;

        json_object_foreach((json_t *) set, uid, o) {
                const json_t *meta = json_object_get(o, "metadata");
                const char *name = json_string_value(json_object_get(meta, "name"));
                const char *ns = json_string_value(json_object_get(meta, "namespace"));

                /* one being deleted is finished below, then made again */
                if (json_object_get(json_object_get(meta, "annotations"), "kubernetes.io/config.mirror") && name &&
                    ns && !json_object_get(meta, "deletionTimestamp") && strcmp(name, p->spec->pod->name) == 0 &&
                    strcmp(ns, p->spec->pod->namespace_) == 0)
                        return o;
        }
        return NULL;
}

/* kubelet's mirror client: a copy of the static pod (as /pods renders its
 * spec), annotated with its config hash, owned by the Node */
/* Go's time.RFC3339Nano in UTC: the fraction without its trailing zeros */
static const char *seen_text(int64_t ns, char *buf, size_t size) {
        time_t s = (time_t) (ns / 1000000000);
        long frac = (long) (ns % 1000000000);
        char date[24], digits[12];
        struct tm tm;
        int n = 9;

        (void) gmtime_r(&s, &tm);
        (void) strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
        (void) snprintf(digits, sizeof(digits), "%09ld", frac);
        while (n > 0 && digits[n - 1] == '0')
                digits[--n] = 0;
        (void) snprintf(buf, size, "%s%s%sZ", date, n ? "." : "", digits);
        return buf;
}

static json_t *mirror_json(Agent *a, const LcPod *p, const ApiPodsInfo *info) {
        json_t *pj = api_pod_json(p, info), *meta, *ann;
        char seen[64];

        if (!pj)
                return NULL;
        json_object_del(pj, "status");
        meta = json_object_get(pj, "metadata");
        json_object_del(meta, "uid");
        json_object_del(meta, "creationTimestamp");
        ann = json_object_get(meta, "annotations");
        if (!json_is_object(ann)) {
                ann = json_object();
                json_object_set_new(meta, "annotations", ann);
        }
        json_object_set_new(ann, "kubernetes.io/config.mirror", json_string(p->spec->pod->config_hash));
        json_object_set_new(ann, "kubernetes.io/config.seen", json_string(seen_text(p->seen_ns, seen, sizeof(seen))));
        json_object_set_new(meta, "ownerReferences",
                            json_pack("[{s:s,s:s,s:s,s:s,s:b}]", "apiVersion", "v1", "kind", "Node", "name",
                                      a->core.opt.node_name, "uid", kube_node_uid(a->cluster->node), "controller", 1));
        return pj;
}

/* Static pods get their mirror pod, with the static pod's status; a mirror
 * pod whose hash is not its static pod's (edited), or without one
 * (removed), is deleted with its UID as the precondition. */
void agent_cluster_mirror_pods(Agent *a, const json_t *set, const ApiPodsInfo *info) {
        const char *uid;
        json_t *o;

        if (!kube_node_registered(a->cluster->node))
                return;
        for (size_t i = 0; i < a->table.n_pods; i++) {
                const LcPod *p = a->table.pods[i];
                const json_t *m;
                json_t *pj;
                char key[600];

                if (agent_pod_from_api(p) || !p->wanted)
                        continue;
                m = mirror_of(set, p);
                if (!m) {
                        (void) snprintf(key, sizeof(key), "%s/%s", p->spec->pod->namespace_, p->spec->pod->name);
                        pj = mirror_json(a, p, info);
                        if (pj)
                                kube_status_create(a->cluster->status, key, p->spec->pod->namespace_, pj);
                        json_decref(pj);
                        continue;
                }
                if (strcmp(json_string_value(
                                   json_object_get(json_object_get(json_object_get(m, "metadata"), "annotations"),
                                                   "kubernetes.io/config.mirror"))
                                   ?: "",
                           p->spec->pod->config_hash) != 0)
                        continue; /* the old one goes below, the new one follows */
                agent_cluster_publish_status(a, p, info, uid_of_json(m));
        }
        json_object_foreach((json_t *) set, uid, o) {
                const json_t *meta = json_object_get(o, "metadata");
                const char *hash = json_string_value(
                        json_object_get(json_object_get(meta, "annotations"), "kubernetes.io/config.mirror"));
                bool keep = false;

                if (!hash)
                        continue;
                for (size_t i = 0; i < a->table.n_pods && !keep; i++) {
                        const LcPod *p = a->table.pods[i];

                        keep = !agent_pod_from_api(p) && p->wanted && mirror_of(set, p) == o &&
                               strcmp(p->spec->pod->config_hash, hash) == 0;
                }
                if (!keep)
                        kube_status_delete(a->cluster->status, json_string_value(json_object_get(meta, "namespace")),
                                           json_string_value(json_object_get(meta, "name")), uid);
        }
}
