/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the agent and its operator tools (`cubelet admit`, `cubelet rank`)
 * derive alike from the pod model and the KubeletConfiguration, so that
 * the tools show exactly what the agent does. */

#include "../../eviction/eviction.h"
#include "../cgroup/cgroup.h"
#include "../cpumanager/cpumanager.h"
#include "../pod/pod.h"
#include "../util/err.h"

/*
 * The CPU manager of a configuration (cpuManagerPolicy, reservedSystemCPUs,
 * kube/system reserved cpu) on a topology; policy none when the field is
 * absent. source names the configuration in messages.
 */
int agent_cpumgr_new(const PodKubeletConfig *kc, const CpumgrTopology *topo, const char *source, CpumgrState **ret,
                     CubError *err);

/*
 * What node allocatable leaves the kubepods cgroup: capacity minus
 * kubeReserved and systemReserved (cpu in millicores, memory in bytes),
 * each clamped at 0 (a reservation above capacity leaves nothing, never a
 * negative or wrapped value). Negative reservations count as 0; kc may be
 * NULL (nothing reserved). `cubelet plan` and the agent both size kubepods
 * with it.
 */
void agent_kubepods_capacity(const PodKubeletConfig *kc, int64_t cpu_capacity_milli, uint64_t memory_capacity,
                             int64_t *ret_cpu_milli, int64_t *ret_memory);
/*
 * The node's capacity and allocatable as kubelet has them, for the Node's
 * status, admission and env's resourceFieldRef: capacity cpu (millicores)
 * and memory (cg's cpu_capacity_milli, memory_capacity), pods (maxPods,
 * default 110) and ephemeral-storage (the filesystem of state_dir, when
 * statvfs answers); allocatable cpu and memory what kubepods gets (cg's
 * kubepods_cpu_milli, kubepods_memory) less the hard memory.available
 * threshold, ephemeral-storage its capacity less the hard
 * nodefs.available threshold and the reserved ephemeral-storage, the same
 * pods (GetNodeAllocatableReservation). Either list may be NULL; each is
 * appended to. -ENOMEM with err.
 */
int agent_node_resources(const PodKubeletConfig *kc, const CgOptions *cg, const char *state_dir,
                         PodResourceList *ret_capacity, PodResourceList *ret_allocatable, CubError *err);

/* kubepods' pids.max as kubelet writes it (createNodeAllocatableCgroups):
 * the node's tasks limit (min(pid_max, threads-max)) less kube/system
 * reserved "pid"; 0 = unknown (not written) */
int64_t agent_kubepods_pids(const PodKubeletConfig *kc, int64_t max_pids);

/*
 * The pod-given part of an eviction snapshot entry: key (caller's storage),
 * QoS, priority, criticality, the EVICT_ANNOTATION_PROTECTED opt-out,
 * memory and ephemeral-storage requests as kubelet's rankings take them
 * (GetResourceRequestQuantity: pod-level requests alone when the pod sets
 * pod-level resources; overhead only onto a non-zero request), grace
 * period, the pod-level memory request for the message (pod-level
 * resources with a memory request), and for each app container its name
 * and requests in containers[pod->n_containers]. Usage fields are left 0
 * for the caller to fill. Never fails now; err stays for the callers.
 */
int agent_evict_pod(const Pod *pod, const char *key, EvictContainer *containers, EvictPod *ret, CubError *err);
