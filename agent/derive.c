/* SPDX-License-Identifier: Apache-2.0 */
#include "derive.h"

#include <errno.h>
#include <string.h>

_Static_assert((int) EVICT_QOS_GUARANTEED == (int) POD_QOS_GUARANTEED &&
                       (int) EVICT_QOS_BURSTABLE == (int) POD_QOS_BURSTABLE &&
                       (int) EVICT_QOS_BESTEFFORT == (int) POD_QOS_BESTEFFORT,
               "EvictQOS and PodQOSClass list the classes in the same order");
_Static_assert(EVICT_CRITICAL_PRIORITY == POD_PRIORITY_CRITICAL, "eviction/ and the pod model agree on critical");

static uint64_t request_of(const PodResourceList *l, const char *name) {
        PodQuantity q;

        if (!pod_resource_get(l, name, &q))
                return 0;
        return (uint64_t) pod_quantity_value(q);
}

int agent_cpumgr_new(const PodKubeletConfig *kc, const CpumgrTopology *topo, const char *source, CpumgrState **ret,
                     CubError *err) {
        CpumgrPolicy policy = CPUMGR_POLICY_NONE;
        CpumgrSet reserved = {};
        PodQuantity kcpu, scpu;
        int r;

        if (kc->cpu_manager_policy) {
                policy = cpumgr_policy_from_string(kc->cpu_manager_policy);
                if (policy < 0)
                        return cub_err_set(err, EINVAL, "%s: cpuManagerPolicy: Unsupported value: \"%s\"", source,
                                           kc->cpu_manager_policy);
        }
        if (policy == CPUMGR_POLICY_STATIC) {
                (void) pod_resource_get(&kc->kube_reserved, "cpu", &kcpu);
                (void) pod_resource_get(&kc->system_reserved, "cpu", &scpu);
                r = cpumgr_reserved(topo, kc->reserved_system_cpus, pod_quantity_milli(kcpu) + pod_quantity_milli(scpu),
                                    &reserved, err);
                if (r < 0)
                        return cub_err_wrap_errno(err, r, "%s", source);
        }
        r = cpumgr_new(policy, topo, &reserved, ret, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "%s", source);
        return 0;
}

int agent_evict_pod(const Pod *pod, const char *key, EvictContainer *containers, EvictPod *ret, CubError *err) {
        PodEffective eff;
        const char *prot = NULL;
        int r;

        r = pod_effective(pod, &eff, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < pod->annotations.n; i++)
                if (strcmp(pod->annotations.keys[i], EVICT_ANNOTATION_PROTECTED) == 0)
                        prot = pod->annotations.values[i];
        for (size_t i = 0; i < pod->n_containers; i++)
                containers[i] = (EvictContainer){
                        .name = pod->containers[i].name,
                        .memory_request = request_of(&pod->containers[i].requests, "memory"),
                        .ephemeral_request = request_of(&pod->containers[i].requests, "ephemeral-storage"),
                };
        *ret = (EvictPod){
                .key = key,
                .uid = pod->uid ? pod->uid : "",
                .qos = (EvictQOS) pod_qos_class(pod),
                .priority = pod->priority,
                .critical = pod->priority >= POD_PRIORITY_CRITICAL,
                .protected_ = prot && strcmp(prot, "true") == 0,
                .memory_request = request_of(&eff.requests, "memory"),
                .ephemeral_request = request_of(&eff.requests, "ephemeral-storage"),
                .termination_grace_period_seconds = pod->termination_grace_period_seconds,
                .containers = containers,
                .n_containers = pod->n_containers,
        };
        pod_effective_done(&eff);
        return 0;
}
