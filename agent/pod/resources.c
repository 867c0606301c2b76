/* SPDX-License-Identifier: Apache-2.0 */
/* QoS class (pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS, 1.34: from
 * pod-level resources when the pod has them) and effective pod
 * requests/limits (component-helpers resource/helpers.go PodRequests /
 * PodLimits, 1.34: pod-level values replace the containers' aggregate). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

bool pod_resource_get(const PodResourceList *l, const char *name, CubQuantity *ret) {
        for (size_t i = 0; l && i < l->n; i++)
                if (strcmp(l->items[i].name, name) == 0) {
                        if (ret)
                                *ret = l->items[i].q;
                        return true;
                }
        if (ret)
                *ret = (CubQuantity){};
        return false;
}

bool pod_container_is_sidecar(const PodContainer *c) {
        return c->restart_policy && strcmp(c->restart_policy, "Always") == 0;
}

const PodContainer *pod_container_at(const Pod *pod, size_t k, bool *ret_init) {
        bool init = k < pod->n_init_containers;
        size_t n = pod->n_init_containers + pod->n_containers;

        if (ret_init)
                *ret_init = init;
        if (k >= n)
                return &pod->ephemeral_containers[k - n];
        return init ? &pod->init_containers[k] : &pod->containers[k - pod->n_init_containers];
}

bool pod_is_static(const Pod *pod) {
        for (size_t i = 0; i < pod->annotations.n; i++)
                if (strcmp(pod->annotations.keys[i], "kubernetes.io/config.source") == 0)
                        return strcmp(pod->annotations.values[i], "api") != 0;
        return false;
}

bool pod_service_links(const Pod *pod) {
        return !pod->enable_service_links_set || pod->enable_service_links;
}

bool pod_is_critical(const Pod *pod) {
        return pod_is_static(pod) || (pod->priority_set && pod->priority >= POD_PRIORITY_CRITICAL);
}

bool pod_is_node_critical(const Pod *pod) {
        return pod_is_critical(pod) && pod->priority_class_name &&
               strcmp(pod->priority_class_name, "system-node-critical") == 0;
}

const char *pod_qos_to_string(PodQOSClass q) {
        switch (q) {
        case POD_QOS_GUARANTEED:
                return "Guaranteed";
        case POD_QOS_BURSTABLE:
                return "Burstable";
        case POD_QOS_BESTEFFORT:
                return "BestEffort";
        default:
                return NULL;
        }
}

/* qos.go processResourceList: the non-zero cpu and memory of l added to
 * sum; *found (may be NULL) gets which of them l has. */
static void qos_add(const PodResourceList *l, CubQuantity sum[2], bool set[2], bool found[2]) {
        static const char *const supported[] = { "cpu", "memory" };

        for (size_t k = 0; k < 2; k++) {
                CubQuantity q;

                if (!pod_resource_get(l, supported[k], &q) || cub_quantity_is_zero(q))
                        continue;
                (void) cub_quantity_add(sum[k], q, &sum[k]);
                set[k] = true;
                if (found)
                        found[k] = true;
        }
}

PodQOSClass pod_qos_class(const Pod *pod) {
        CubQuantity req_sum[2] = {}, lim_sum[2] = {};
        bool req_set[2] = {}, lim_set[2] = {};
        bool guaranteed = true;

        if (pod->resources_set) {
                /* spec.resources (even {}) decides alone; its limits make a
                 * Guaranteed pod only when they hold both cpu and memory */
                bool found[2] = {};

                qos_add(&pod->resources_requests, req_sum, req_set, NULL);
                qos_add(&pod->resources_limits, lim_sum, lim_set, found);
                if (pod->resources_limits.n > 0 && (!found[0] || !found[1]))
                        guaranteed = false;
        } else
                for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++) {
                        const PodContainer *c = pod_container_at(pod, i, NULL);
                        bool found[2] = {};

                        qos_add(&c->requests, req_sum, req_set, NULL);
                        qos_add(&c->limits, lim_sum, lim_set, found);
                        if (!found[0] || !found[1])
                                guaranteed = false;
                }
        if (!req_set[0] && !req_set[1] && !lim_set[0] && !lim_set[1])
                return POD_QOS_BESTEFFORT;
        if (guaranteed) {
                for (size_t k = 0; k < 2; k++) {
                        if (req_set[k] != lim_set[k])
                                guaranteed = false;
                        else if (req_set[k] && cub_quantity_cmp(req_sum[k], lim_sum[k]) != 0)
                                guaranteed = false;
                }
        }
        return guaranteed ? POD_QOS_GUARANTEED : POD_QOS_BURSTABLE;
}

/* ---- resource list arithmetic ------------------------------------------- */

static PodResource *list_slot(PodResourceList *l, const char *name) {
        PodResource *n;

        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->items[i].name, name) == 0)
                        return &l->items[i];
        n = realloc(l->items, (l->n + 1) * sizeof(PodResource));
        if (!n)
                return NULL;
        l->items = n;
        n[l->n].name = strdup(name);
        if (!n[l->n].name)
                return NULL;
        n[l->n].q = (CubQuantity){};
        return &n[l->n++];
}

int pod_resource_list_set(PodResourceList *l, const char *name, CubQuantity q) {
        PodResource *s = list_slot(l, name);

        if (!s)
                return -ENOMEM;
        s->q = q;
        return 0;
}

static int list_add(PodResourceList *dst, const PodResourceList *src) {
        for (size_t i = 0; i < src->n; i++) {
                PodResource *s = list_slot(dst, src->items[i].name);

                if (!s)
                        return -ENOMEM;
                if (cub_quantity_add(s->q, src->items[i].q, &s->q) < 0)
                        return -ERANGE;
        }
        return 0;
}

static int list_max(PodResourceList *dst, const PodResourceList *src) {
        for (size_t i = 0; i < src->n; i++) {
                PodResource *s = list_slot(dst, src->items[i].name);

                if (!s)
                        return -ENOMEM;
                if (cub_quantity_cmp(src->items[i].q, s->q) > 0)
                        s->q = src->items[i].q;
        }
        return 0;
}

static int list_copy(PodResourceList *dst, const PodResourceList *src) {
        pod_resource_list_done(dst);
        return list_add(dst, src);
}

void pod_effective_done(PodEffective *e) {
        pod_resource_list_done(&e->requests);
        pod_resource_list_done(&e->limits);
}

static void note_declared(PodEffective *e, const PodResourceList *l) {
        CubQuantity q;

        if (!pod_resource_get(l, "cpu", &q) || cub_quantity_is_zero(q))
                e->cpu_limits_declared = false;
        if (!pod_resource_get(l, "memory", &q) || cub_quantity_is_zero(q))
                e->memory_limits_declared = false;
}

/* AggregateContainerRequests/Limits: sum of app containers and sidecars,
 * max with every init container's candidate (its own value plus the
 * sidecars started before it; a sidecar's candidate is the sidecar sum so
 * far). declared (may be NULL) sees each candidate as ResourceConfigForPod's
 * ContainerFn does. */
static int aggregate(const Pod *pod, bool limits, PodResourceList *ret, PodEffective *declared) {
        PodResourceList sum = {}, init_max = {}, sidecars = {}, cand = {};
        int r = 0;

        for (size_t i = 0; i < pod->n_containers; i++) {
                const PodResourceList *l = limits ? &pod->containers[i].limits : &pod->containers[i].requests;

                r = list_add(&sum, l);
                if (r < 0)
                        goto out;
                if (declared)
                        note_declared(declared, l);
        }
        for (size_t i = 0; i < pod->n_init_containers; i++) {
                const PodContainer *c = &pod->init_containers[i];
                const PodResourceList *l = limits ? &c->limits : &c->requests;

                if (pod_container_is_sidecar(c)) {
                        r = list_add(&sum, l);
                        if (r >= 0)
                                r = list_add(&sidecars, l);
                        if (r >= 0)
                                r = list_copy(&cand, &sidecars);
                } else {
                        r = list_copy(&cand, l);
                        if (r >= 0)
                                r = list_add(&cand, &sidecars);
                }
                if (r >= 0)
                        r = list_max(&init_max, &cand);
                if (r < 0)
                        goto out;
                if (declared)
                        note_declared(declared, &cand);
        }
        r = list_max(&sum, &init_max);
        if (r < 0)
                goto out;
        *ret = sum;
        sum = (PodResourceList){};
out:
        pod_resource_list_done(&sum);
        pod_resource_list_done(&init_max);
        pod_resource_list_done(&sidecars);
        pod_resource_list_done(&cand);
        return r;
}

int pod_aggregate_containers(const Pod *pod, bool limits, PodResourceList *ret) {
        return aggregate(pod, limits, ret, NULL);
}

/* PodRequests/PodLimits past the containers' aggregate: the supported
 * pod-level values replace it (requests: when IsPodLevelRequestsSet, limits:
 * when IsPodLevelResourcesSet), then the overhead goes onto every request
 * but only onto non-zero limits. */
static int finish(const Pod *pod, bool limits, PodResourceList *l) {
        const PodResourceList *pl = limits ? &pod->resources_limits : &pod->resources_requests;
        int r;

        if (limits ? pod_level_resources_set(pod) : pod_level_requests_set(pod))
                for (size_t i = 0; i < pl->n; i++) {
                        if (!pod_level_resource_supported(pl->items[i].name))
                                continue;
                        r = pod_resource_list_set(l, pl->items[i].name, pl->items[i].q);
                        if (r < 0)
                                return r;
                }
        for (size_t i = 0; i < pod->overhead.n; i++) {
                const PodResource *o = &pod->overhead.items[i];
                PodResource *s;

                if (limits) {
                        CubQuantity cur;

                        if (!pod_resource_get(l, o->name, &cur) || cub_quantity_is_zero(cur))
                                continue;
                }
                s = list_slot(l, o->name);
                if (!s)
                        return -ENOMEM;
                if (cub_quantity_add(s->q, o->q, &s->q) < 0)
                        return -ERANGE;
        }
        return 0;
}

int pod_effective(const Pod *pod, PodEffective *ret, CubError *err) {
        PodEffective e = { .cpu_limits_declared = true, .memory_limits_declared = true };
        int r;

        r = aggregate(pod, false, &e.requests, NULL);
        if (r >= 0)
                r = finish(pod, false, &e.requests);
        if (r >= 0)
                r = aggregate(pod, true, &e.limits, &e);
        if (r >= 0)
                r = finish(pod, true, &e.limits);
        if (r < 0) {
                pod_effective_done(&e);
                return cub_err_set(err, -r, "pod %s/%s: effective resources: %s", pod->namespace_, pod->name,
                                   r == -ERANGE ? "sum out of range" : "out of memory");
        }
        if (pod_level_resources_set(pod)) {
                /* a non-zero pod-level limit declares the resource */
                CubQuantity q;

                if (pod_resource_get(&pod->resources_limits, "cpu", &q) && !cub_quantity_is_zero(q))
                        e.cpu_limits_declared = true;
                if (pod_resource_get(&pod->resources_limits, "memory", &q) && !cub_quantity_is_zero(q))
                        e.memory_limits_declared = true;
        }
        *ret = e;
        return 0;
}

/* ---- pod-level resources ------------------------------------------------- */

bool pod_level_resource_supported(const char *name) {
        return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 || strncmp(name, "hugepages-", 10) == 0;
}

static bool names_supported(const PodResourceList *l) {
        for (size_t i = 0; i < l->n; i++)
                if (pod_level_resource_supported(l->items[i].name))
                        return true;
        return false;
}

bool pod_level_requests_set(const Pod *pod) {
        return pod->resources_set && names_supported(&pod->resources_requests);
}

bool pod_level_limits_set(const Pod *pod) {
        return pod->resources_set && names_supported(&pod->resources_limits);
}

bool pod_level_resources_set(const Pod *pod) {
        return pod_level_requests_set(pod) || pod_level_limits_set(pod);
}

static CubQuantity add_sat(CubQuantity a, CubQuantity b) {
        CubQuantity r;

        return cub_quantity_add(a, b, &r) < 0 ? (CubQuantity){ .units = INT64_MAX, .milli = 999 } : r;
}

static CubQuantity max_q(CubQuantity a, CubQuantity b) {
        return cub_quantity_cmp(a, b) >= 0 ? a : b;
}

/* aggregate() of one request, without allocating (sums saturate) */
static CubQuantity aggregate_request(const Pod *pod, const char *name) {
        CubQuantity sum = {}, init_max = {}, sidecars = {}, q;

        for (size_t i = 0; i < pod->n_containers; i++) {
                (void) pod_resource_get(&pod->containers[i].requests, name, &q);
                sum = add_sat(sum, q);
        }
        for (size_t i = 0; i < pod->n_init_containers; i++) {
                const PodContainer *c = &pod->init_containers[i];

                (void) pod_resource_get(&c->requests, name, &q);
                if (pod_container_is_sidecar(c)) {
                        sum = add_sat(sum, q);
                        sidecars = add_sat(sidecars, q);
                        init_max = max_q(init_max, sidecars);
                } else
                        init_max = max_q(init_max, add_sat(q, sidecars));
        }
        return max_q(sum, init_max);
}

CubQuantity pod_request_quantity(const Pod *pod, const char *name) {
        CubQuantity q = {}, o;

        if (!pod_level_resources_set(pod))
                q = aggregate_request(pod, name);
        else if (pod_level_resource_supported(name))
                /* SkipContainerLevelResources: the pod-level request alone */
                (void) pod_resource_get(&pod->resources_requests, name, &q);
        if (!cub_quantity_is_zero(q) && pod_resource_get(&pod->overhead, name, &o))
                q = add_sat(q, o);
        return q;
}

CubQuantity pod_container_limit(const Pod *pod, const PodContainer *c, const char *name) {
        CubQuantity q;

        if (pod_resource_get(&c->limits, name, &q) && !cub_quantity_is_zero(q))
                return q;
        if (pod_level_resources_set(pod))
                (void) pod_resource_get(&pod->resources_limits, name, &q);
        return q;
}

int64_t pod_remaining_memory_request_per_container(const Pod *pod) {
        CubQuantity q;
        size_t n = pod->n_containers + pod->n_init_containers;

        if (!pod_level_requests_set(pod) || !pod_resource_get(&pod->resources_requests, "memory", &q) ||
            cub_quantity_is_zero(q) || n == 0)
                return 0;
        /* Go's int64 division truncates toward zero, as C's does */
        return (cub_quantity_value(q) - cub_quantity_value(aggregate_request(pod, "memory"))) / (int64_t) n;
}

void pod_downward_allocatable(const Pod *pod, int64_t *cpu_milli, int64_t *memory) {
        CubQuantity q;

        if (!pod_level_limits_set(pod))
                return;
        if (pod_resource_get(&pod->resources_limits, "cpu", &q) && !cub_quantity_is_zero(q))
                *cpu_milli = cub_quantity_milli(q);
        if (pod_resource_get(&pod->resources_limits, "memory", &q) && !cub_quantity_is_zero(q))
                *memory = cub_quantity_value(q);
}
