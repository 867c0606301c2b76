/* SPDX-License-Identifier: Apache-2.0 */
/* The loop's immutable, refcounted snapshot the HTTP threads read (http.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

ApiSnapshot *api_snapshot_new(void) {
        ApiSnapshot *s = calloc(1, sizeof(*s));

        if (s)
                s->ref = 1;
        return s;
}

ApiSnapshot *api_snapshot_ref(ApiSnapshot *s) {
        if (s)
                __atomic_add_fetch(&s->ref, 1, __ATOMIC_RELAXED);
        return s;
}

ApiSnapshot *api_snapshot_unref(ApiSnapshot *s) {
        if (!s || __atomic_sub_fetch(&s->ref, 1, __ATOMIC_ACQ_REL) > 0)
                return NULL;
        for (size_t i = 0; i < s->n_pods; i++) {
                ApiPodRef *p = &s->pods[i];

                for (size_t k = 0; k < p->n_containers; k++) {
                        free(p->containers[k].name);
                        free(p->containers[k].id);
                }
                free(p->containers);
                free(p->namespace_);
                free(p->name);
                free(p->uid);
                free(p->cgroup);
                free(p->log_dir);
        }
        free(s->pods);
        free(s->node_name);
        free(s->pods_json);
        free(s->metrics);
        free(s);
        return NULL;
}

ApiPodRef *api_snapshot_add_pod(ApiSnapshot *s, const char *ns, const char *name, const char *uid, const char *cgroup,
                                const char *log_dir, int64_t start_time) {
        ApiPodRef *pods = realloc(s->pods, (s->n_pods + 1) * sizeof(*pods)), *p;

        if (!pods)
                return NULL;
        s->pods = pods;
        p = &pods[s->n_pods++];
        *p = (ApiPodRef){ .namespace_ = strdup(ns),
                          .name = strdup(name),
                          .uid = strdup(uid),
                          .cgroup = strdup(cgroup),
                          .log_dir = strdup(log_dir ? log_dir : ""),
                          .start_time = start_time };
        if (!p->namespace_ || !p->name || !p->uid || !p->cgroup || !p->log_dir)
                return NULL; /* freed with the snapshot */
        return p;
}

int api_pod_ref_add_container(ApiPodRef *p, const char *name, const char *id, bool running, int64_t started_at) {
        ApiContainerRef *cs = realloc(p->containers, (p->n_containers + 1) * sizeof(*cs));

        if (!cs)
                return -ENOMEM;
        p->containers = cs;
        cs[p->n_containers] = (ApiContainerRef){
                .name = strdup(name), .id = strdup(id), .running = running, .started_at = started_at
        };
        p->n_containers++;
        return cs[p->n_containers - 1].name && cs[p->n_containers - 1].id ? 0 : -ENOMEM;
}
