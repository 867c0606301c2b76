/* SPDX-License-Identifier: Apache-2.0 */
/* QoS class (qos.go ComputePodQOS, 1.28-1.31 summing form) and effective
 * pod requests/limits (component-helpers PodRequests/PodLimits). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

bool pod_resource_get(const PodResourceList *l, const char *name, PodQuantity *ret) {
        for (size_t i = 0; l && i < l->n; i++)
                if (strcmp(l->items[i].name, name) == 0) {
                        if (ret)
                                *ret = l->items[i].q;
                        return true;
                }
        if (ret)
                *ret = (PodQuantity){};
        return false;
}

bool pod_container_is_sidecar(const PodContainer *c) {
        return c->restart_policy && strcmp(c->restart_policy, "Always") == 0;
}

const PodContainer *pod_container_at(const Pod *pod, size_t k, bool *ret_init) {
        bool init = k < pod->n_init_containers;

        if (ret_init)
                *ret_init = init;
        return init ? &pod->init_containers[k] : &pod->containers[k - pod->n_init_containers];
}

bool pod_is_static(const Pod *pod) {
        for (size_t i = 0; i < pod->annotations.n; i++)
                if (strcmp(pod->annotations.keys[i], "kubernetes.io/config.source") == 0)
                        return strcmp(pod->annotations.values[i], "api") != 0;
        return false;
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

PodQOSClass pod_qos_class(const Pod *pod) {
        static const char *const supported[] = { "cpu", "memory" };
        PodQuantity req_sum[2] = {}, lim_sum[2] = {};
        bool req_set[2] = {}, lim_set[2] = {};
        bool guaranteed = true;

        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++) {
                const PodContainer *c = pod_container_at(pod, i, NULL);
                bool found[2] = {};

                for (size_t k = 0; k < 2; k++) {
                        PodQuantity q;

                        if (pod_resource_get(&c->requests, supported[k], &q) && !pod_quantity_is_zero(q)) {
                                (void) pod_quantity_add(req_sum[k], q, &req_sum[k]);
                                req_set[k] = true;
                        }
                        if (pod_resource_get(&c->limits, supported[k], &q) && !pod_quantity_is_zero(q)) {
                                (void) pod_quantity_add(lim_sum[k], q, &lim_sum[k]);
                                lim_set[k] = true;
                                found[k] = true;
                        }
                }
                if (!found[0] || !found[1])
                        guaranteed = false;
        }
        if (!req_set[0] && !req_set[1] && !lim_set[0] && !lim_set[1])
                return POD_QOS_BESTEFFORT;
        if (guaranteed) {
                for (size_t k = 0; k < 2; k++) {
                        if (req_set[k] != lim_set[k])
                                guaranteed = false;
                        else if (req_set[k] && pod_quantity_cmp(req_sum[k], lim_sum[k]) != 0)
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
        n[l->n].q = (PodQuantity){};
        return &n[l->n++];
}

static int list_add(PodResourceList *dst, const PodResourceList *src) {
        for (size_t i = 0; i < src->n; i++) {
                PodResource *s = list_slot(dst, src->items[i].name);

                if (!s)
                        return -ENOMEM;
                if (pod_quantity_add(s->q, src->items[i].q, &s->q) < 0)
                        return -ERANGE;
        }
        return 0;
}

static int list_max(PodResourceList *dst, const PodResourceList *src) {
        for (size_t i = 0; i < src->n; i++) {
                PodResource *s = list_slot(dst, src->items[i].name);

                if (!s)
                        return -ENOMEM;
                if (pod_quantity_cmp(src->items[i].q, s->q) > 0)
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
        PodQuantity q;

        if (!pod_resource_get(l, "cpu", &q) || pod_quantity_is_zero(q))
                e->cpu_limits_declared = false;
        if (!pod_resource_get(l, "memory", &q) || pod_quantity_is_zero(q))
                e->memory_limits_declared = false;
}

/* One of PodRequests/PodLimits: sum of app containers and sidecars, max with
 * every init container's candidate (its own value plus the sidecars started
 * before it; a sidecar's candidate is the sidecar sum so far). */
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
        for (size_t i = 0; i < pod->overhead.n; i++) {
                const PodResource *o = &pod->overhead.items[i];
                PodResource *s;

                /* overhead goes onto every request, but only onto non-zero limits */
                if (limits) {
                        PodQuantity cur;
                        if (!pod_resource_get(&sum, o->name, &cur) || pod_quantity_is_zero(cur))
                                continue;
                }
                s = list_slot(&sum, o->name);
                if (!s) {
                        r = -ENOMEM;
                        goto out;
                }
                if (pod_quantity_add(s->q, o->q, &s->q) < 0) {
                        r = -ERANGE;
                        goto out;
                }
        }
        *ret = sum;
        sum = (PodResourceList){};
out:
        pod_resource_list_done(&sum);
        pod_resource_list_done(&init_max);
        pod_resource_list_done(&sidecars);
        pod_resource_list_done(&cand);
        return r;
}

int pod_effective(const Pod *pod, PodEffective *ret, CubError *err) {
        PodEffective e = { .cpu_limits_declared = true, .memory_limits_declared = true };
        int r;

        r = aggregate(pod, false, &e.requests, NULL);
        if (r >= 0)
                r = aggregate(pod, true, &e.limits, &e);
        if (r < 0) {
                pod_effective_done(&e);
                return cub_err_set(err, -r, "pod %s/%s: effective resources: %s", pod->namespace_, pod->name,
                                   r == -ERANGE ? "sum out of range" : "out of memory");
        }
        *ret = e;
        return 0;
}
