/* SPDX-License-Identifier: Apache-2.0 */
/* The KILL job and the teardown of a pod's sandboxes, which sync.c also
 * uses for the stale ones. */
#include <stdlib.h>
#include <string.h>

#include "../util/time.h"
#include "worker-internal.h"

/* the pod's group must be empty before its rmdir: at most this long */
#define WORKER_CGROUP_EMPTY_TIMEOUT_USEC (5 * CUB_USEC_PER_SEC)

/* Stops and removes every container of a sandbox (grace split over them,
 * at least 2 s each, as kubelet's minimum; grace 0 is SIGKILL at once),
 * then the sandbox. */
static int teardown_sandbox(WorkerPool *p, const char *sandbox_id, int64_t grace, CubError *err) {
        CriContainer *ct = NULL;
        size_t n = 0;
        uint64_t deadline = worker_now_usec() + (uint64_t) (grace > 0 ? grace : 0) * 1000000ULL;
        int r;

        r = cri_list_containers(p->cri, sandbox_id, NULL, &ct, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                int64_t left =
                        (int64_t) ((deadline > worker_now_usec() ? deadline - worker_now_usec() : 0) / 1000000ULL);

                if (ct[i].state == CRI_CONTAINER_RUNNING || ct[i].state == CRI_CONTAINER_CREATED) {
                        /* grace 0 (a hard eviction) kills at once: the memory is needed now;
                         * otherwise at least kubelet's 2 s */
                        r = cri_stop_container(p->cri, ct[i].id, grace <= 0 ? 0 : left < 2 ? 2 : left, err);
                        if (r < 0)
                                goto out;
                }
                r = cri_remove_container(p->cri, ct[i].id, err);
                if (r < 0)
                        goto out;
        }
        r = cri_stop_pod_sandbox(p->cri, sandbox_id, err);
        if (r >= 0)
                r = cri_remove_pod_sandbox(p->cri, sandbox_id, err);
out:
        cri_containers_free(ct, n);
        return r;
}

int worker_kill_uid(WorkerPool *p, const char *uid, const char *keep_hash, int64_t grace, uint32_t *ret_attempt,
                    bool *ret_have_ready, char **ret_ready_id, CubError *err) {
        const char *selector[] = { WORKER_LABEL_UID, uid, NULL };
        CriSandbox *sb = NULL;
        size_t n = 0;
        int r;

        r = cri_list_pod_sandboxes(p->cri, selector, &sb, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                const char *hash = cri_kv_get(sb[i].labels, WORKER_LABEL_HASH);

                if (ret_attempt && sb[i].attempt >= *ret_attempt)
                        *ret_attempt = sb[i].attempt + 1;
                if (keep_hash && sb[i].state == CRI_SANDBOX_READY && hash && strcmp(hash, keep_hash) == 0 &&
                    !*ret_have_ready) {
                        *ret_have_ready = true;
                        *ret_ready_id = strdup(sb[i].id);
                        continue;
                }
                r = teardown_sandbox(p, sb[i].id, grace, err);
                if (r < 0)
                        break;
        }
        cri_sandboxes_free(sb, n);
        return r;
}

int worker_job_kill(WorkerPool *p, WorkerJob *j, CubError *err) {
        int r;

        r = worker_kill_uid(p, j->uid, NULL, j->grace, NULL, NULL, NULL, err);
        if (r < 0)
                return r;
        worker_hosts_remove(p->pods_dir, j->uid); /* network */
        /* the last tasks may still be exiting: wait for the kernel's
         * 'populated 0' in cgroup.events, then rmdir */
        if (j->cgroup && *j->cgroup && p->cg)
                r = cg_writer_remove_wait(p->cg, j->cgroup, WORKER_CGROUP_EMPTY_TIMEOUT_USEC, err);
        return r;
}
