/* SPDX-License-Identifier: Apache-2.0 */
/* A decoded KubeletConfiguration's checks, done once at its decode: kubelet's
 * (pkg/kubelet/apis/config/validation, its messages) and cubelet's own
 * (what it does not support, the floors that keep its timers from
 * spinning). Each error names the source and the field. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "../util/duration.h"
#include "../util/time.h"
#include "pod-internal.h"

/* cgroupsPerQOS and enforceNodeAllocatable as kubelet's validation.go
 * checks them (its messages), and what cubelet needs of them: "pods" or
 * "none" (the system- and kube-reserved cgroups are not cubelet's), and no
 * setting that needs cubelet's own pod cgroups without them */
static int check_cgroups(PodKubeletConfig *c, const char *source, CubError *err) {
        static const char *const keys[] = { "pods",
                                            "system-reserved",
                                            "system-reserved-compressible",
                                            "kube-reserved",
                                            "kube-reserved-compressible",
                                            "none" };
        const PodStrv *e = &c->enforce_node_allocatable;

        c->enforce_pods = !c->enforce_node_allocatable_set;
        for (size_t i = 0; i < e->n; i++) {
                const char *v = e->items[i];
                bool known = false;

                for (size_t k = 0; k < i; k++)
                        if (strcmp(e->items[k], v) == 0)
                                return cub_err_set(err, EINVAL,
                                                   "%s: invalid configuration: duplicated enforcements \"%s\" in "
                                                   "enforceNodeAllocatable (--enforce-node-allocatable)",
                                                   source, v);
                for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++)
                        known = known || strcmp(keys[k], v) == 0;
                if (!known)
                        return cub_err_set(
                                err, EINVAL,
                                "%s: invalid configuration: option \"%s\" specified for enforceNodeAllocatable "
                                "(--enforce-node-allocatable). Valid options are \"pods\", "
                                "\"system-reserved\", \"system-reserved-compressible\", \"kube-reserved\", "
                                "\"kube-reserved-compressible\" or \"none\"",
                                source, v);
                if (strcmp(v, "none") == 0) {
                        if (e->n > 1)
                                return cub_err_set(err, EINVAL,
                                                   "%s: invalid configuration: enforceNodeAllocatable "
                                                   "(--enforce-node-allocatable) may not contain additional "
                                                   "enforcements when \"none\" is specified",
                                                   source);
                        continue;
                }
                if (strcmp(v, "pods") != 0)
                        return cub_err_set(err, ENOTSUP,
                                           "%s: enforceNodeAllocatable: \"%s\" is not supported by cubelet (it "
                                           "enforces \"pods\" on kubepods; systemReservedCgroup and "
                                           "kubeReservedCgroup are not read)",
                                           source, v);
                if (!c->cgroups_per_qos)
                        return cub_err_set(err, EINVAL,
                                           "%s: invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set "
                                           "to true when \"pods\" contained in enforceNodeAllocatable "
                                           "(--enforce-node-allocatable)",
                                           source);
                c->enforce_pods = true;
        }
        if (c->cgroups_per_qos) {
                if (!c->enforce_pods)
                        return cub_err_set(err, ENOTSUP,
                                           "%s: enforceNodeAllocatable without \"pods\" and cgroupsPerQOS: true: not "
                                           "supported by cubelet (kubepods is always limited to allocatable)",
                                           source);
                if (c->cgroup_root && *c->cgroup_root && strcmp(c->cgroup_root, "/") != 0)
                        return cub_err_set(err, ENOTSUP,
                                           "%s: cgroupRoot \"%s\": with cgroupsPerQOS: true cubelet's kubepods is "
                                           "at the root of its cgroup mount (cubelet.cgroupMount); cgroupRoot is the "
                                           "pods' parent with cgroupsPerQOS: false",
                                           source, c->cgroup_root);
                return 0;
        }
        if (!c->enforce_node_allocatable_set)
                return cub_err_set(err, EINVAL,
                                   "%s: invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true "
                                   "when \"pods\" contained in enforceNodeAllocatable (--enforce-node-allocatable) "
                                   "(its default: set enforceNodeAllocatable: [] with cgroupsPerQOS: false)",
                                   source);
        /* what needs cubelet's own pod cgroups */
        if (c->memory_qos)
                return cub_err_set(
                        err, EINVAL,
                        "%s: featureGates.MemoryQoS needs cgroupsPerQOS: true (memory.min of the pod and QoS "
                        "cgroups)",
                        source);
        if (c->pod_pids_limit > 0)
                return cub_err_set(err, EINVAL,
                                   "%s: podPidsLimit %lld needs cgroupsPerQOS: true (pids.max of the pod cgroup)",
                                   source, (long long) c->pod_pids_limit);
        return 0;
}

/* The durations' bounds: cubelet's floors, so that no timer spins (kubelet
 * only asks most of them to be positive), and kubelet's own checks of the
 * shutdown periods (validation.go, its messages). */
static const struct {
        const char *name;
        size_t offset;
        int64_t min_usec;
} duration_floors[] = {
        { "httpCheckFrequency", offsetof(PodKubeletConfig, http_check_frequency), 100 * (int64_t) CUB_USEC_PER_MSEC },
        { "cubelet.staticPodURLTimeout", offsetof(PodKubeletConfig, static_pod_url_timeout),
          (int64_t) CUB_USEC_PER_MSEC },
        { "fileCheckFrequency", offsetof(PodKubeletConfig, file_check_frequency), (int64_t) CUB_USEC_PER_SEC },
        { "cpuManagerReconcilePeriod", offsetof(PodKubeletConfig, cpu_manager_reconcile_period),
          100 * (int64_t) CUB_USEC_PER_MSEC },
        { "nodeStatusUpdateFrequency", offsetof(PodKubeletConfig, node_status_update_frequency),
          100 * (int64_t) CUB_USEC_PER_MSEC },
        { "nodeStatusReportFrequency", offsetof(PodKubeletConfig, node_status_report_frequency),
          (int64_t) CUB_USEC_PER_SEC },
        { "cubelet.evictionSamplePeriod", offsetof(PodKubeletConfig, eviction_sample_period),
          10 * (int64_t) CUB_USEC_PER_MSEC },
        { "evictionPressureTransitionPeriod", offsetof(PodKubeletConfig, eviction_pressure_transition_period), 0 },
};

static int check_durations(const PodKubeletConfig *c, const char *source, CubError *err) {
        char v[CUB_DURATION_MAX], w[CUB_DURATION_MAX];
        int64_t grace = c->shutdown_grace_period.usec, critical = c->shutdown_grace_period_critical_pods.usec;

        for (size_t i = 0; i < sizeof(duration_floors) / sizeof(*duration_floors); i++) {
                const PodDuration *t = (const PodDuration *) ((const char *) c + duration_floors[i].offset);

                if (t->usec >= duration_floors[i].min_usec)
                        continue;
                cub_duration_format(t->usec, v, sizeof(v));
                cub_duration_format(duration_floors[i].min_usec, w, sizeof(w));
                return cub_err_set(err, EINVAL, "%s: %s: Invalid value: \"%s\": must be at least %s", source,
                                   duration_floors[i].name, v, w);
        }
        cub_duration_format(grace, v, sizeof(v));
        if (grace < 0 || (grace > 0 && grace < (int64_t) CUB_USEC_PER_SEC))
                return cub_err_set(err, EINVAL,
                                   "%s: invalid configuration: shutdownGracePeriod %s must be either zero or otherwise "
                                   ">= 1 sec",
                                   source, v);
        cub_duration_format(critical, w, sizeof(w));
        if (critical < 0 || (critical > 0 && critical < (int64_t) CUB_USEC_PER_SEC))
                return cub_err_set(err, EINVAL,
                                   "%s: invalid configuration: shutdownGracePeriodCriticalPods %s must be either zero "
                                   "or otherwise >= 1 sec",
                                   source, w);
        if (critical > grace)
                return cub_err_set(err, EINVAL,
                                   "%s: invalid configuration: shutdownGracePeriodCriticalPods %s must be <= "
                                   "shutdownGracePeriod %s",
                                   source, w, v);
        return 0;
}

/* graceful node shutdown: the rest of kubelet's checks of its fields */
static int check_shutdown(const PodKubeletConfig *c, const char *source, CubError *err) {
        for (size_t i = 0; i < c->n_shutdown_by_priority; i++)
                if (c->shutdown_by_priority[i].grace_s < 0)
                        return cub_err_set(err, EINVAL,
                                           "%s: invalid configuration: shutdownGracePeriodByPodPriority[%zu]."
                                           "shutdownGracePeriodSeconds %lld must not be negative",
                                           source, i, (long long) c->shutdown_by_priority[i].grace_s);
        if (c->n_shutdown_by_priority > 0 &&
            (c->shutdown_grace_period.usec > 0 || c->shutdown_grace_period_critical_pods.usec > 0))
                return cub_err_set(err, EINVAL,
                                   "%s: invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority "
                                   "and shutdownGracePeriod at the same time",
                                   source);
        return 0;
}

/* the eviction configuration finished: the grace period and transition
 * period decoded beside it, the policy, kubelet's defaults, the soft
 * thresholds' grace periods (eviction/'s messages name the field) */
static int check_eviction(PodKubeletConfig *c, const char *source, CubError *err) {
        CubError eerr = {};
        int r;

        r = evict_config_set_max_pod_grace_period(&c->eviction, c->eviction_max_pod_grace_period, &eerr);
        if (r >= 0) {
                evict_config_set_transition_usec(&c->eviction, (uint64_t) c->eviction_pressure_transition_period.usec);
                evict_config_set_policy_kind(&c->eviction, c->eviction_policy == POD_EVICTION_KUBELET
                                                                   ? EVICT_POLICY_KUBELET
                                                                   : EVICT_POLICY_CUBELET);
                r = evict_config_finish(&c->eviction, /* enforce_pods_allocatable= */ true, &eerr);
        }
        return r < 0 ? cub_err_set(err, -r, "%s: %s", source, eerr.msg) : 0;
}

int pod_kubelet_config_check(PodKubeletConfig *c, const char *source, CubError *err) {
        int r;

        if (c->container_log_max_files < 2)
                return cub_err_set(err, EINVAL,
                                   "%s: invalid configuration: containerLogMaxFiles (--container-log-max-files) %lld "
                                   "must be greater than 1",
                                   source, (long long) c->container_log_max_files);
        r = check_cgroups(c, source, err);
        if (r >= 0)
                r = check_durations(c, source, err);
        if (r >= 0)
                r = check_shutdown(c, source, err);
        if (r >= 0)
                r = check_eviction(c, source, err);
        return r;
}
