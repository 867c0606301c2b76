/* SPDX-License-Identifier: Apache-2.0 */
/* What may change in a running pod without changing its hash (so without
 * a restart), the loop's part: its labels and annotations (the downward
 * API's volumes show them, as kubelet rewrites them) and its ephemeral
 * containers (kubectl debug: the API server adds them through the pod's
 * ephemeralcontainers subresource). The merge hands the source's pod of the
 * same hash here; when it differs so, its spec replaces the pod's once no
 * job holds the old one and no resize waits (both keep the spec they were
 * made with). Then the relist finds the new ephemeral containers missing
 * and a sync starts them (agent/worker/sync.c), and the volume manager
 * writes the pod's downward API files again (the API generation moved). */
#include <stdbool.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/log.h"
#include "agent-internal.h"

static bool same_map(const PodStringMap *a, const PodStringMap *b) {
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++) {
                bool found = false;

                for (size_t k = 0; k < b->n && !found; k++)
                        found = strcmp(a->keys[i], b->keys[k]) == 0 && strcmp(a->values[i], b->values[k]) == 0;
                if (!found)
                        return false;
        }
        return true;
}

bool agent_pod_spec_want(Agent *a, LcPod *p, Pod **pod) {
        const Pod *have = (p->spec_want ? p->spec_want : p->spec)->pod;
        WorkerSpec *spec = NULL;
        CubError err = {};

        if (!*pod || ((*pod)->n_ephemeral_containers <= have->n_ephemeral_containers &&
                      same_map(&(*pod)->labels, &have->labels) && same_map(&(*pod)->annotations, &have->annotations)))
                return false;
        if (worker_spec_new(TAKE_PTR(*pod), p->spec->source, &a->core.cg, a->core.log_root, &spec, &err) < 0) {
                cub_log(LOG_ERR, "pod %s/%s: %s", p->spec->pod->namespace_, p->spec->pod->name, err.msg);
                return false;
        }
        lc_pod_set_spec_want(p, spec);
        return true;
}

bool agent_pod_spec_apply(Agent *a, LcPod *p) {
        size_t had;

        if (!p->spec_want || p->busy || p->resize.want || p->resize.actual || p->resize.in_progress)
                return false;
        had = p->spec->pod->n_ephemeral_containers;
        agent_pod_set_spec(a, p, p->spec_want);
        lc_pod_spec_applied(p);     /* a failed sync is tried again at once (kubelet's UpdatePod) */
        agent_pods_meta_changed(a); /* the downward API's files */
        if (p->spec->pod->n_ephemeral_containers > had)
                cub_log(LOG_INFO, "pod %s/%s: ephemeral container '%s' added", p->spec->pod->namespace_,
                        p->spec->pod->name,
                        p->spec->pod->ephemeral_containers[p->spec->pod->n_ephemeral_containers - 1].name);
        return true;
}
