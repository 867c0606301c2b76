/* SPDX-License-Identifier: Apache-2.0 */
/* No CFS quota for exclusive CPUs (DisableCPUQuotaWithExclusiveCPUs, on by
 * default in kubelet 1.34): a quota on CPUs a container has to itself only
 * throttles it. The exclusive CPUs are the static policy's (policy.c). */
#include "cpumanager.h"

void cpumgr_unquota_pod(const Pod *pod, PodQOSClass qos, const CgOptions *o, CgGroupValues *g) {
        if (o->cpu_static && cpumgr_pod_exclusive_cpus(pod, qos) > 0)
                cg_pod_cpu_unlimited(g);
}

void cpumgr_unquota_container(PodQOSClass qos, const PodContainer *c, const CgOptions *o, CgContainerResources *res) {
        if (o->cpu_static && o->enforce_cpu_limits && cpumgr_guaranteed_cpus(qos, c) > 0)
                res->cpu_quota = -1;
}
