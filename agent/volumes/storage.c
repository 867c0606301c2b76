/* SPDX-License-Identifier: Apache-2.0 */
/* Local ephemeral storage limits, kubelet's eviction manager
 * (pkg/kubelet/eviction/eviction_manager.go, 1.28-1.31):
 * podEphemeralStorageLimitEviction and containerEphemeralStorageLimitEviction
 * on usages measured elsewhere. Pure. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "volumes.h"

#define EPHEMERAL "ephemeral-storage"

static CubQuantity bytes(uint64_t v) {
        return (CubQuantity){ .units = v > INT64_MAX ? INT64_MAX : (int64_t) v };
}

static uint64_t add_sat(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* PodLimits(pod)[ephemeral-storage], when present */
static int pod_limit(const Pod *pod, bool *ret_found, CubQuantity *ret, CubError *err) {
        PodEffective e = {};
        int r = pod_effective(pod, &e, err);

        if (r < 0)
                return r;
        *ret_found = pod_resource_get(&e.limits, EPHEMERAL, ret);
        pod_effective_done(&e);
        return 0;
}

bool vol_storage_limited(const Pod *pod) {
        CubQuantity q;

        for (size_t k = 0; k < pod->n_init_containers + pod->n_containers; k++)
                if (pod_resource_get(&pod_container_at(pod, k, NULL)->limits, EPHEMERAL, &q))
                        return true;
        return false;
}

int vol_storage_check(const Pod *pod, const VolPodUsage *u, VolStorageVerdict *ret, CubError *err) {
        char q[CUB_QUANTITY_STR_MAX];
        CubQuantity limit;
        uint64_t total = u->volumes;
        bool found = false;
        int r;

        *ret = (VolStorageVerdict){};
        /* the pod: every container's writable layer and logs and the local
         * ephemeral volumes, against the sum of the containers' limits */
        r = pod_limit(pod, &found, &limit, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < u->n_containers; i++)
                total = add_sat(total, add_sat(u->containers[i].rootfs, u->containers[i].logs));
        if (found && cub_quantity_cmp(bytes(total), limit) > 0) {
                ret->signal = VOL_SIGNAL_POD_LIMIT;
                ret->used = total;
                (void) snprintf(ret->message, sizeof(ret->message),
                                "Pod ephemeral local storage usage exceeds the total limit of containers %s. ",
                                cub_quantity_format(limit, false, q));
                return 1;
        }
        /* each container (spec.containers only) with a non-zero limit */
        for (size_t i = 0; i < u->n_containers; i++) {
                const VolContainerUsage *c = &u->containers[i];
                uint64_t used = add_sat(c->rootfs, c->logs);

                for (size_t k = 0; k < pod->n_containers; k++) {
                        const PodContainer *pc = &pod->containers[k];

                        if (strcmp(pc->name, c->name) != 0 || !pod_resource_get(&pc->limits, EPHEMERAL, &limit) ||
                            cub_quantity_value(limit) == 0)
                                continue;
                        if (cub_quantity_cmp(limit, bytes(used)) < 0) {
                                ret->signal = VOL_SIGNAL_CONTAINER_LIMIT;
                                ret->used = used;
                                (void) snprintf(ret->message, sizeof(ret->message),
                                                "Container %s exceeded its local ephemeral storage limit \"%s\". ",
                                                c->name, cub_quantity_format(limit, false, q));
                                return 1;
                        }
                }
        }
        return 0;
}
