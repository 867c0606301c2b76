/* SPDX-License-Identifier: Apache-2.0 */
#include "derive.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

_Static_assert((int) EVICT_QOS_GUARANTEED == (int) POD_QOS_GUARANTEED &&
                       (int) EVICT_QOS_BURSTABLE == (int) POD_QOS_BURSTABLE &&
                       (int) EVICT_QOS_BESTEFFORT == (int) POD_QOS_BESTEFFORT,
               "EvictQOS and PodQOSClass list the classes in the same order");
_Static_assert(EVICT_CRITICAL_PRIORITY == POD_PRIORITY_CRITICAL, "eviction/ and the pod model agree on critical");

static uint64_t request_of(const PodResourceList *l, const char *name) {
        CubQuantity q;

        if (!pod_resource_get(l, name, &q))
                return 0;
        return (uint64_t) cub_quantity_value(q);
}

/* cap - a - b, at least 0; negative a and b count as 0 */
static int64_t minus_reserved(int64_t cap, int64_t a, int64_t b) {
        if (cap <= 0)
                return 0;
        a = a > 0 ? a : 0;
        b = b > 0 ? b : 0;
        if (a >= cap)
                return 0;
        cap -= a;
        return b >= cap ? 0 : cap - b;
}

void agent_kubepods_capacity(const PodKubeletConfig *kc, int64_t cpu_capacity_milli, uint64_t memory_capacity,
                             int64_t *ret_cpu_milli, int64_t *ret_memory) {
        CubQuantity kcpu = {}, scpu = {}, kmem = {}, smem = {};
        int64_t mem = memory_capacity > (uint64_t) INT64_MAX ? INT64_MAX : (int64_t) memory_capacity;

        if (kc) {
                (void) pod_resource_get(&kc->kube_reserved, "cpu", &kcpu);
                (void) pod_resource_get(&kc->system_reserved, "cpu", &scpu);
                (void) pod_resource_get(&kc->kube_reserved, "memory", &kmem);
                (void) pod_resource_get(&kc->system_reserved, "memory", &smem);
        }
        *ret_cpu_milli = minus_reserved(cpu_capacity_milli, cub_quantity_milli(kcpu), cub_quantity_milli(scpu));
        *ret_memory = minus_reserved(mem, cub_quantity_value(kmem), cub_quantity_value(smem));
}

int64_t agent_kubepods_pids(const PodKubeletConfig *kc, int64_t max_pids) {
        CubQuantity k = {}, s = {};

        if (kc) {
                (void) pod_resource_get(&kc->kube_reserved, "pid", &k);
                (void) pod_resource_get(&kc->system_reserved, "pid", &s);
        }
        return minus_reserved(max_pids, cub_quantity_value(k), cub_quantity_value(s));
}

int agent_cpumgr_new(const PodKubeletConfig *kc, const CpumgrTopology *topo, const char *source, CpumgrState **ret,
                     CubError *err) {
        CpumgrPolicy policy =
                kc->cpu_manager_policy == POD_CPU_MANAGER_STATIC ? CPUMGR_POLICY_STATIC : CPUMGR_POLICY_NONE;
        CpumgrSet reserved = {};
        CubQuantity kcpu, scpu;
        int r;

        if (policy == CPUMGR_POLICY_STATIC) {
                (void) pod_resource_get(&kc->kube_reserved, "cpu", &kcpu);
                (void) pod_resource_get(&kc->system_reserved, "cpu", &scpu);
                r = cpumgr_reserved(topo, kc->reserved_system_cpus, cub_quantity_milli(kcpu) + cub_quantity_milli(scpu),
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
        const char *prot = NULL;
        CubQuantity pod_mem;
        bool pod_mem_set;

        (void) err;
        pod_mem_set = pod_level_resources_set(pod) && pod_resource_get(&pod->resources_requests, "memory", &pod_mem);
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
                /* what kubelet's rankings subtract: GetResourceRequestQuantity */
                .memory_request = (uint64_t) cub_quantity_value(pod_request_quantity(pod, "memory")),
                .ephemeral_request = (uint64_t) cub_quantity_value(pod_request_quantity(pod, "ephemeral-storage")),
                .termination_grace_period_seconds = pod->termination_grace_period_seconds,
                .containers = containers,
                .n_containers = pod->n_containers,
                .name = pod->name,
                .pod_memory_request_set = pod_mem_set,
                .pod_memory_request = pod_mem_set ? (uint64_t) cub_quantity_value(pod_mem) : 0,
        };
        return 0;
}

/* v (millicores for cpu) into l when l is given; negative: 0 */
static int add_resource(PodResourceList *l, const char *name, int64_t v, bool cpu) {
        return l ? pod_resource_list_set(l, name, cpu ? cub_quantity_from_milli(v) : cub_quantity_from_units(v)) : 0;
}

/* the hard threshold of signal, as a quantity of capacity (0: none) */
static int64_t hard_threshold(const EvictConfig *ec, EvictSignal signal, uint64_t capacity) {
        for (size_t i = 0; i < ec->n_thresholds; i++) {
                const EvictThreshold *t = &ec->thresholds[i];

                if (!t->soft && t->signal == signal)
                        return (int64_t) evict_value_quantity(&t->value, capacity);
        }
        return 0;
}

int agent_node_resources(const PodKubeletConfig *kc, const CgOptions *cg, const char *state_dir,
                         PodResourceList *ret_capacity, PodResourceList *ret_allocatable, CubError *err) {
        int64_t pods = kc->max_pods > 0 ? kc->max_pods : 110, disk = -1, eph = 0;
        struct statvfs sv;
        CubQuantity q;
        int r;

        if (state_dir && statvfs(state_dir, &sv) == 0) {
                disk = (int64_t) ((uint64_t) sv.f_blocks * sv.f_frsize);
                eph = disk - hard_threshold(&kc->eviction, EVICT_SIGNAL_NODEFS_AVAILABLE, (uint64_t) disk);
                (void) pod_resource_get(&kc->kube_reserved, "ephemeral-storage", &q);
                eph -= cub_quantity_value(q);
                (void) pod_resource_get(&kc->system_reserved, "ephemeral-storage", &q);
                eph -= cub_quantity_value(q);
        }
        r = add_resource(ret_capacity, "cpu", cg->cpu_capacity_milli, true);
        if (r >= 0)
                r = add_resource(ret_capacity, "memory", (int64_t) cg->memory_capacity, false);
        if (r >= 0)
                r = add_resource(ret_capacity, "pods", pods, false);
        if (r >= 0 && disk >= 0)
                r = add_resource(ret_capacity, "ephemeral-storage", disk, false);
        if (r >= 0)
                r = add_resource(ret_allocatable, "cpu", cg->kubepods_cpu_milli, true);
        if (r >= 0)
                r = add_resource(ret_allocatable, "memory",
                                 cg->kubepods_memory - hard_threshold(&kc->eviction, EVICT_SIGNAL_MEMORY_AVAILABLE,
                                                                      cg->memory_capacity),
                                 false);
        if (r >= 0)
                r = add_resource(ret_allocatable, "ephemeral-storage", eph, false);
        if (r >= 0)
                r = add_resource(ret_allocatable, "pods", pods, false);
        if (r < 0)
                return cub_err_set(err, -r, "node capacity and allocatable: %s", strerror(-r));
        return 0;
}
