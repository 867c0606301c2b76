/* SPDX-License-Identifier: Apache-2.0 */
/* A container's image before CreateContainer (kubelet's EnsureImageExists,
 * images/image_manager.go), each pull or image found present noted on the
 * job for the loop's Pulling/Pulled events. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "worker-internal.h"

/* A pull, or an image found present, noted on the job for the loop's
 * Pulling/Pulled events. */
static void note_pull(WorkerJob *j, size_t container, bool pulled, bool ok, uint64_t started, uint64_t size) {
        WorkerPull *l;

        if (!j)
                return;
        l = realloc(j->pulls, (j->n_pulls + 1) * sizeof(*l));
        if (!l)
                return;
        j->pulls = l;
        l[j->n_pulls++] = (WorkerPull){ .container = container,
                                        .pulled = pulled,
                                        .ok = ok,
                                        .started_usec = started,
                                        .finished_usec = cub_now_usec(CLOCK_MONOTONIC),
                                        .size = size };
}

/* kubelet's puller: without credentials when none match, else each in
 * turn until one pulls (the last one's error) */
static int pull(WorkerPool *p, WorkerJob *j, size_t container, const char *image, const WorkerPullAuth *auths,
                size_t n_auths, char **ret_ref, CubError *err) {
        uint64_t t0 = cub_now_usec(CLOCK_MONOTONIC), size = 0;
        bool present = false;
        int r = 0;

        if (n_auths == 0)
                r = cri_pull_image(p->cri, image, NULL, ret_ref, err);
        for (size_t i = 0; i < n_auths; i++) {
                /* no server address, as kubelet's: containerd would drop
                 * credentials whose address it does not parse as the host */
                CriAuth a = { .username = auths[i].username, .password = auths[i].password };

                cub_err_clear(err);
                r = cri_pull_image(p->cri, image, &a, ret_ref, err);
                if (r >= 0)
                        break;
        }
        if (r >= 0) {
                CubError e = {};

                /* the size of kubelet's "Pulled" event; the pull stands without it */
                (void) cri_image_status(p->cri, image, &present, NULL, &size, &e);
        }
        note_pull(j, container, true, r >= 0, t0, size);
        return r;
}

int worker_ensure_image(WorkerPool *p, WorkerJob *j, size_t container, const char *image, const char *policy,
                        const WorkerPullAuth *auths, size_t n_auths, WorkerFailKind *ret_kind, char **ret_ref,
                        CubError *err) {
        uint64_t t0 = cub_now_usec(CLOCK_MONOTONIC);
        bool present = false;
        int r;

        *ret_kind = WORKER_FAIL_IMAGE_PULL;
        if (policy && strcmp(policy, "Always") == 0)
                return pull(p, j, container, image, auths, n_auths, ret_ref, err);
        r = cri_image_status(p->cri, image, &present, ret_ref, NULL, err);
        if (r < 0)
                return r;
        if (present) {
                note_pull(j, container, false, true, t0, 0);
                return 0;
        }
        *ret_kind = WORKER_FAIL_IMAGE_NEVER_PULL;
        if (policy && strcmp(policy, "Never") == 0)
                return cub_err_set(err, ENOENT,
                                   "ErrImageNeverPull: Container image \"%s\" is not present with pull "
                                   "policy of Never",
                                   image);
        *ret_kind = WORKER_FAIL_IMAGE_PULL;
        return pull(p, j, container, image, auths, n_auths, ret_ref, err);
}
