/* SPDX-License-Identifier: Apache-2.0 */
/* Pod-level defaulting (SetDefaults_Pod/PodSpec) and the cross-field
 * checks of ValidatePodCreate that need the whole pod. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

bool pod_dns1123_label(const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > 63)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

                if (!alnum && !(c == '-' && i > 0 && i < n - 1))
                        return false;
        }
        return true;
}

/* IsDNS1123Subdomain: at most 253 characters, dot-separated labels of
 * [a-z0-9]([-a-z0-9]*[a-z0-9])?; unlike a DNS-1123 label, a subdomain's
 * parts have no length of their own (a 66-character pod name is valid) */
bool pod_dns1123_subdomain(const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > 253)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                bool starts = i == 0 || s[i - 1] == '.', ends = i == n - 1 || s[i + 1] == '.';

                if (alnum)
                        continue;
                if ((c != '-' && c != '.') || starts || ends)
                        return false;
        }
        return true;
}

bool pod_builtin_priority(const char *class_name, int32_t *ret) {
        if (!class_name)
                return false;
        if (strcmp(class_name, "system-node-critical") == 0) {
                *ret = POD_PRIORITY_CRITICAL + 1000;
                return true;
        }
        if (strcmp(class_name, "system-cluster-critical") == 0) {
                *ret = POD_PRIORITY_CRITICAL;
                return true;
        }
        return false;
}

static int set_default(PodDec *d, char **field, const char *value) {
        if (*field)
                return 0;
        *field = strdup(value);
        if (!*field)
                return cub_err_set(d->err, ENOMEM, "out of memory");
        return 0;
}

static int line_of(PodDec *d, json_t *root, const char *const *path, size_t n, size_t idx, bool use_idx) {
        json_t *v = root;
        int line = 0;

        for (size_t i = 0; i < n && v; i++) {
                v = json_object_get(v, path[i]);
                if (i == 1 && use_idx && json_is_array(v))
                        v = json_array_get(v, idx);
                if (pod_tree_line(d->tree, v) > 0)
                        line = pod_tree_line(d->tree, v);
        }
        return line;
}

int pod_default_and_validate(PodDec *d, json_t *root, Pod *pod) {
        int r;

        r = set_default(d, &pod->namespace_, "default");
        if (r < 0)
                return r;
        if (!*pod->namespace_) {
                free(pod->namespace_);
                pod->namespace_ = NULL;
                r = set_default(d, &pod->namespace_, "default");
                if (r < 0)
                        return r;
        }
        r = set_default(d, &pod->restart_policy, "Always");
        if (r < 0)
                return r;
        r = set_default(d, &pod->preemption_policy, "PreemptLowerPriority");
        if (r < 0)
                return r;
        r = pod_network_validate(d, root, pod);
        if (r < 0)
                return r;
        if (!pod->termination_grace_period_seconds_set)
                pod->termination_grace_period_seconds = 30;
        else if (pod->termination_grace_period_seconds < 0) {
                static const char *const p[] = { "spec", "terminationGracePeriodSeconds" };
                return pod_dec_fail(d, line_of(d, root, p, 2, 0, false), "spec.terminationGracePeriodSeconds",
                                    "Invalid value: %lld: must be greater than or equal to 0",
                                    (long long) pod->termination_grace_period_seconds);
        }
        if (!json_is_null(json_object_get(json_object_get(root, "spec"), "activeDeadlineSeconds")) &&
            json_object_get(json_object_get(root, "spec"), "activeDeadlineSeconds") &&
            (pod->active_deadline_seconds < 1 || pod->active_deadline_seconds > INT32_MAX)) {
                static const char *const p[] = { "spec", "activeDeadlineSeconds" };
                return pod_dec_fail(d, line_of(d, root, p, 2, 0, false), "spec.activeDeadlineSeconds",
                                    "Invalid value: %lld: must be between 1 and 2147483647, inclusive",
                                    (long long) pod->active_deadline_seconds);
        }
        if (!pod->priority_set) {
                int32_t prio;

                if (pod_builtin_priority(pod->priority_class_name, &prio)) {
                        pod->priority = prio;
                        pod->priority_set = true;
                }
        }
        if (pod->n_containers == 0) {
                static const char *const p[] = { "spec", "containers" };
                return pod_dec_fail(d, line_of(d, root, p, 2, 0, false), "spec.containers", "Required value");
        }

        /* container names are unique across init and app containers */
        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++) {
                bool init_i;
                const PodContainer *ci = pod_container_at(pod, i, &init_i);

                for (size_t j = 0; j < i; j++) {
                        const PodContainer *cj = pod_container_at(pod, j, NULL);
                        const char *list = init_i ? "initContainers" : "containers";
                        size_t idx = init_i ? i : i - pod->n_init_containers;
                        const char *p[] = { "spec", list, "name" };
                        char where[128];

                        if (strcmp(ci->name, cj->name) != 0)
                                continue;
                        (void) snprintf(where, sizeof(where), "spec.%s[%zu].name", list, idx);
                        return pod_dec_fail(d, line_of(d, root, p, 3, idx, true), where, "Duplicate value: \"%s\"",
                                            ci->name);
                }
        }

        /* spec.resources: defaulted from the containers, then checked against them */
        r = pod_level_resources_default_and_validate(d, root, pod);
        if (r < 0)
                return r;

        /* hostNetwork: hostPort defaults to containerPort and must match it */
        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++) {
                bool init;
                /* the pod is ours to change here */
                PodContainer *c = (PodContainer *) pod_container_at(pod, i, &init);

                for (size_t k = 0; pod->host_network && k < c->n_ports; k++) {
                        PodPort *port = &c->ports[k];
                        char where[128];
                        const char *p[] = { "spec", init ? "initContainers" : "containers" };

                        if (port->host_port == 0)
                                port->host_port = port->container_port;
                        if (port->host_port == port->container_port)
                                continue;
                        size_t idx = init ? i : i - pod->n_init_containers;
                        json_t *cj = json_array_get(json_object_get(json_object_get(root, "spec"), p[1]), idx);
                        json_t *pj = json_array_get(json_object_get(cj, "ports"), k);
                        int line = pod_tree_line(d->tree, json_object_get(pj, "hostPort"));

                        (void) snprintf(where, sizeof(where), "spec.%s[%zu].ports[%zu].hostPort", p[1], idx, k);
                        return pod_dec_fail(d, line > 0 ? line : line_of(d, root, p, 2, idx, true), where,
                                            "Invalid value: %d: must match `containerPort` when `hostNetwork` is true",
                                            port->host_port);
                }
        }
        return pod_security_validate(d, root, pod);
}
