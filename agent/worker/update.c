/* SPDX-License-Identifier: Apache-2.0 */
/* The UPDATE job: UpdateContainerResources on a pod's running containers,
 * for the CPU manager's reconcile and for an in-place resize. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker-internal.h"

/* A resize never sets a memory limit below what the group uses
 * (kuberuntime_manager.go validateMemoryResizeLimits' words): -EAGAIN. */
static int memory_fits(WorkerPool *p, const char *path, int64_t limit, const char *what, CubError *err) {
        char buf[32];
        CubError e = {};
        long long usage;

        if (limit <= 0 || !p->cg || cg_writer_read(p->cg, path, "memory.current", buf, sizeof(buf), &e) < 0)
                return 0;
        usage = strtoll(buf, NULL, 10);
        if (usage > limit)
                return cub_err_set(err, EAGAIN,
                                   "cannot decrease memory limits: attempting to set %s memory limit (%" PRId64
                                   ") below current usage (%lld)",
                                   what, limit, usage);
        return 0;
}

static int resize_check(WorkerPool *p, const WorkerSpec *s, const CriContainer *ct, size_t n, CubError *err) {
        const char *pm = cg_group_get(&s->cgroup, "memory.max");
        char path[600], what[300];
        int r = 0;

        if (pm && strcmp(pm, "max") != 0)
                r = memory_fits(p, s->cgroup.path, strtoll(pm, NULL, 10), "pod", err);
        for (size_t i = 0; r >= 0 && i < n; i++)
                for (size_t k = 0; k < s->pod->n_init_containers + s->pod->n_containers; k++) {
                        const CgContainerResources *res = worker_resources_at(s, k);
                        CubError e = {};

                        if (ct[i].state != CRI_CONTAINER_RUNNING ||
                            strcmp(pod_container_at(s->pod, k, NULL)->name, ct[i].name) != 0 ||
                            cg_container_path(cg_writer_driver(p->cg), s->cgroup.path, ct[i].id, path, sizeof(path),
                                              &e) < 0)
                                continue;
                        (void) snprintf(what, sizeof(what), "container \"%s\"", ct[i].name);
                        r = memory_fits(p, path, res->memory_limit_in_bytes, what, err);
                }
        return r;
}

/* The CPU manager's reconcile: running containers of the pod get their
 * current cpuset (the shared pool changes as exclusive pods come and go).
 * An in-place resize (j->resize): the pod cgroup's values too, every
 * running container's resources, none below its memory usage. */
int worker_job_update(WorkerPool *p, WorkerJob *j, CubError *err) {
        const WorkerSpec *s = j->spec;
        const Pod *pod = s->pod;
        const char *selector[] = { WORKER_LABEL_UID, pod->uid, NULL };
        CriContainer *ct = NULL;
        size_t n = 0;
        int r;

        if (!j->configs)
                return 0;
        r = cri_list_containers(p->cri, NULL, selector, &ct, &n, err);
        if (r < 0)
                return r;
        if (j->resize && p->cg) {
                r = resize_check(p, s, ct, n, err);
                if (r >= 0)
                        r = cg_writer_apply(p->cg, &s->cgroup, err);
        }
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const CgContainerResources *res = NULL;
                const char *cpuset = NULL;
                CriResources cr;
                const char *unified[CG_UNIFIED_KV_MAX];

                if (ct[i].state != CRI_CONTAINER_RUNNING && ct[i].state != CRI_CONTAINER_CREATED)
                        continue;
                for (size_t k = 0; k < worker_spec_containers(s); k++)
                        if (strcmp(pod_container_at(pod, k, NULL)->name, ct[i].name) == 0 &&
                            !(j->skip && k < pod->n_init_containers + pod->n_containers && j->skip[k])) {
                                res = worker_resources_at(s, k);
                                cpuset = j->configs[k].cpuset;
                        }
                if (!res || (!j->resize && (!cpuset || !*cpuset)))
                        continue;
                /* containerd keeps the fields left at 0; send them all again anyway */
                cr = worker_cri_resources(res, cpuset && *cpuset ? cpuset : NULL, unified);
                r = cri_update_container_resources(p->cri, ct[i].id, &cr, err);
                if (r < 0) {
                        (void) cub_err_wrap(err, "container '%s': update %s", ct[i].name,
                                            j->resize ? "resources" : "cpuset");
                        break;
                }
        }
        cri_containers_free(ct, n);
        return r;
}
