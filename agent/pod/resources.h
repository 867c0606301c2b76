/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* agent/pod: the pod's resources as kubelet counts them: QoS class,
 * effective requests and limits (resources.c) and pod-level resources,
 * spec.resources of KEP-2837, beta and on by default in kubelet 1.34
 * (pod-resources.c: decoding, defaulting and validation). The formulas and
 * their sources: docs/pod-level-resources.md. Included by pod.h; includes pod-model.h alone. */

#include "pod-model.h"

/* ---- QoS class (pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS) -------- */

typedef enum PodQOSClass {
        POD_QOS_GUARANTEED,
        POD_QOS_BURSTABLE,
        POD_QOS_BESTEFFORT,
        _POD_QOS_MAX,
        _POD_QOS_INVALID = -22,
} PodQOSClass;

const char *pod_qos_to_string(PodQOSClass q);
/* From spec.resources when the pod has it (even {}), else from the
 * containers, init containers included. */
PodQOSClass pod_qos_class(const Pod *pod);

/* ---- Effective requests and limits ---------------------------------------- */

/* Looks a resource up; returns false (and a zero quantity) when absent. */
bool pod_resource_get(const PodResourceList *l, const char *name, CubQuantity *ret);
/* Sets a resource (added, or its value replaced); -ENOMEM. */
int pod_resource_list_set(PodResourceList *l, const char *name, CubQuantity q);

/*
 * Effective pod requests and limits (component-helpers PodRequests/PodLimits
 * with sidecars, pod-level resources and overhead), and whether the pod's
 * cpu / memory limits are declared (ResourceConfigForPod's
 * cpuLimitsDeclared/memoryLimitsDeclared: every container, init containers
 * included, declares one, or the pod-level limit is set and not zero).
 */
typedef struct PodEffective {
        PodResourceList requests;
        PodResourceList limits;
        bool cpu_limits_declared;
        bool memory_limits_declared;
} PodEffective;

int pod_effective(const Pod *pod, PodEffective *ret, CubError *err);
void pod_effective_done(PodEffective *e);
void pod_resource_list_done(PodResourceList *l);

/*
 * pkg/api/v1/resource GetResourceRequestQuantity, what eviction ranks and
 * preemption weighs: with pod-level resources set, the pod-level request of
 * name only (0 for a resource pod-level resources do not cover); else the
 * containers' aggregate (sidecars and init containers as PodRequests).
 * The overhead is added when the result is not zero. Sums saturate.
 */
CubQuantity pod_request_quantity(const Pod *pod, const char *name);

/* ---- Pod-level resources (component-helpers resource/helpers.go) ---------- */

/* IsSupportedPodLevelResource: cpu, memory and hugepages-<size>. */
bool pod_level_resource_supported(const char *name);
/* IsPodLevelResourcesSet: spec.resources requests or limits name a
 * supported resource. IsPodLevelRequestsSet, IsPodLevelLimitsSet: the
 * same of one list. */
bool pod_level_resources_set(const Pod *pod);
bool pod_level_requests_set(const Pod *pod);
bool pod_level_limits_set(const Pod *pod);

/*
 * The limit of name ("cpu", "memory") the container's cgroup gets
 * (kuberuntime_container_linux.go getCPULimit/getMemoryLimit): its own
 * when not zero, else, when the pod sets pod-level resources, the pod-level
 * limit (zero when there is none).
 */
CubQuantity pod_container_limit(const Pod *pod, const PodContainer *c, const char *name);

/*
 * pkg/kubelet/qos/helpers.go remainingPodMemReqPerContainer: with a
 * pod-level memory request, (that request - the containers' aggregate
 * memory request) / (containers + init containers), in bytes; else 0.
 */
int64_t pod_remaining_memory_request_per_container(const Pod *pod);

/*
 * pkg/kubelet/kubelet_resources.go defaultPodLimitsForDownwardAPI (1.34):
 * the limits a container without its own shows in env and downwardAPI
 * files are node allocatable, except that a non-zero pod-level cpu or
 * memory limit replaces it when the pod sets pod-level limits. Updates
 * *cpu_milli and *memory (node allocatable on entry) in place.
 */
void pod_downward_allocatable(const Pod *pod, int64_t *cpu_milli, int64_t *memory);
