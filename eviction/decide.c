/* SPDX-License-Identifier: Apache-2.0 */
/* One eviction round (kubelet's synchronize after the threshold selection)
 * and the pressure admission rule. Pure and allocation-free: it runs under
 * memory pressure. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "eviction-internal.h"

/* Appends to a fixed buffer; silently stops at its end. */
static void append(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *fmt, ...) {
        size_t len = strnlen(buf, size);
        va_list ap;

        if (len + 1 >= size)
                return;
        va_start(ap, fmt);
        (void) vsnprintf(buf + len, size - len, fmt, ap);
        va_end(ap);
}

static bool is_memory_signal(EvictSignal s) {
        return evict_signal_resource(s) == EVICT_RESOURCE_MEMORY;
}

/* kubelet's byEvictionPriority: memory signals first; otherwise the
 * configuration order (which kubelet leaves to an unstable sort). */
static bool pick_threshold(const EvictConfig *c, const EvictState *s, size_t *ret) {
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < c->n_thresholds && i < EVICT_THRESHOLDS_MAX; i++)
                        if (s->active[i] && is_memory_signal(c->thresholds[i].signal) == (pass == 0)) {
                                *ret = i;
                                return true;
                        }
        return false;
}

/* kubelet's evictionMessage. */
static void message(const EvictThreshold *t, const EvictSignalObservation *o, const EvictPod *p, char *buf,
                    size_t size) {
        EvictResource r = evict_signal_resource(t->signal);
        const char *res = evict_resource_to_string(r);
        /* observed quantities: bytes are BinarySI, inodes and pids DecimalSI */
        bool bytes = r == EVICT_RESOURCE_MEMORY || r == EVICT_RESOURCE_EPHEMERAL_STORAGE;
        char q[EVICT_QUANTITY_STR_MAX], a[EVICT_QUANTITY_STR_MAX];

        buf[0] = '\0';
        append(buf, size, "The node was low on resource: %s. ", res);
        if (o->present) {
                /* a percentage resolves to a BinarySI quantity, a literal keeps its format */
                bool binary = t->value.percent || t->value.binary;

                append(buf, size, "Threshold quantity: %s, available: %s. ",
                       evict_quantity_format(evict_value_quantity(&t->value, o->capacity), binary, q),
                       evict_quantity_format(o->available, bytes, a));
        }
        if (r != EVICT_RESOURCE_MEMORY && r != EVICT_RESOURCE_EPHEMERAL_STORAGE)
                return;
        /* pod-level resources: the pod's own line, usage over request or not */
        if (r == EVICT_RESOURCE_MEMORY && p->pod_memory_request_set && p->stats)
                append(buf, size, "Pod %s was using %s, request is %s, has larger consumption of %s. ",
                       p->name ? p->name : "", evict_quantity_format(p->memory_usage, true, q),
                       evict_quantity_format(p->pod_memory_request, true, a), res);
        for (size_t i = 0; i < p->n_containers; i++) {
                const EvictContainer *ct = &p->containers[i];
                uint64_t usage = r == EVICT_RESOURCE_MEMORY ? ct->memory_usage : ct->ephemeral_usage;
                uint64_t request = r == EVICT_RESOURCE_MEMORY ? ct->memory_request : ct->ephemeral_request;

                if (usage <= request)
                        continue;
                append(buf, size, "Container %s was using %s, request is %s, has larger consumption of %s. ",
                       ct->name ? ct->name : "", evict_quantity_format(usage, true, q),
                       evict_quantity_format(request, true, a), res);
        }
}

int evict_decide(const EvictConfig *c, const EvictState *s, const EvictObservations *obs, const EvictPod *pods,
                 size_t n_pods, EvictDecision *ret, CubError *err) {
        EvictDecision d = { .reason = "Evicted" };
        const EvictThreshold *t;
        const EvictPod *best = NULL;
        size_t ti;

        if (n_pods > 0 && !pods)
                return cub_err_set(err, EINVAL, "decide: no pods given");
        if (!pick_threshold(c, s, &ti)) {
                *ret = d;
                return 0;
        }
        t = &c->thresholds[ti];
        d.pressure = true;
        d.signal = t->signal;
        d.soft = t->soft;
        d.threshold = ti;

        /* the first pod of the ranking that is not exempt: a linear scan
         * with the ranking's comparator, no allocation */
        for (size_t i = 0; i < n_pods; i++) {
                if (evict_pod_is_exempt(&pods[i]))
                        continue;
                if (!best || evict_pod_cmp(&pods[i], best, t->signal, c->policy) < 0) {
                        best = &pods[i];
                        d.pod = i;
                }
        }
        if (best) {
                d.evict = true;
                if (t->soft) {
                        int64_t g = best->termination_grace_period_seconds;

                        if (g < 0 || g > c->max_pod_grace_seconds)
                                g = c->max_pod_grace_seconds;
                        d.grace_period_seconds = g;
                }
                message(t, &obs->signals[t->signal], best, d.message, sizeof(d.message));
        }
        *ret = d;
        return 0;
}

bool evict_admit(const bool conditions[static _EVICT_CONDITION_MAX], EvictQOS qos, bool critical,
                 bool tolerates_memory_pressure, char *ret_message) {
        bool any = false, only_memory = true;

        for (int k = 0; k < _EVICT_CONDITION_MAX; k++)
                if (conditions[k]) {
                        any = true;
                        if (k != EVICT_CONDITION_MEMORY_PRESSURE)
                                only_memory = false;
                }
        if (!any || critical)
                return true;
        if (only_memory && (qos != EVICT_QOS_BESTEFFORT || tolerates_memory_pressure))
                return true;
        if (ret_message) {
                bool first = true;

                ret_message[0] = '\0';
                append(ret_message, EVICT_MESSAGE_MAX, "The node had condition: [");
                for (int k = 0; k < _EVICT_CONDITION_MAX; k++)
                        if (conditions[k]) {
                                append(ret_message, EVICT_MESSAGE_MAX, "%s%s", first ? "" : " ",
                                       evict_condition_to_string((EvictCondition) k));
                                first = false;
                        }
                append(ret_message, EVICT_MESSAGE_MAX, "]. ");
        }
        return false;
}
