/* SPDX-License-Identifier: Apache-2.0 */
/* The admission snapshot: the node, the admitted pods with their running
 * sums of requests and host ports, pressure conditions, host sockets, the
 * CPU manager state. Pure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "admit-internal.h"

int64_t admit_quantity_value(const char *resource, CubQuantity q) {
        return strcmp(resource, "cpu") == 0 ? cub_quantity_milli(q) : cub_quantity_value(q);
}

/* v1helper.IsExtendedResourceName: not native (a name without '/' or in the
 * kubernetes.io/ namespace) and not a quota "requests." name. */
bool admit_resource_is_extended(const char *name) {
        if (!strchr(name, '/') || strstr(name, "kubernetes.io/"))
                return false;
        return strncmp(name, "requests.", 9) != 0;
}

/* What Fits checks: cpu, memory, ephemeral-storage and the scalar resources
 * (extended, hugepages-*, prefixed native, attachable-volumes-*). */
bool admit_resource_is_checked(const char *name) {
        return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 || strcmp(name, "ephemeral-storage") == 0 ||
               strncmp(name, "hugepages-", 10) == 0 || strncmp(name, "attachable-volumes-", 19) == 0 ||
               strchr(name, '/');
}

ssize_t admit_snapshot_find_res(const AdmitSnapshot *s, const char *name) {
        for (size_t i = 0; i < s->n_res; i++)
                if (strcmp(s->res_names[i], name) == 0)
                        return (ssize_t) i;
        return -1;
}

ssize_t admit_snapshot_find_pod(const AdmitSnapshot *s, const char *uid) {
        for (size_t i = 0; i < s->n_pods; i++)
                if (strcmp(s->pods[i]->uid, uid) == 0)
                        return (ssize_t) i;
        return -1;
}

static int res_append(AdmitSnapshot *s, const char *name, int64_t alloc, bool advertised) {
        size_t n = s->n_res + 1;
        char **names = realloc(s->res_names, n * sizeof(char *));

        if (!names)
                return -ENOMEM;
        s->res_names = names;
        int64_t *a = realloc(s->alloc, n * sizeof(int64_t));
        if (!a)
                return -ENOMEM;
        s->alloc = a;
        int64_t *u = realloc(s->used, n * sizeof(int64_t));
        if (!u)
                return -ENOMEM;
        s->used = u;
        bool *adv = realloc(s->advertised, n * sizeof(bool));
        if (!adv)
                return -ENOMEM;
        s->advertised = adv;
        names[s->n_res] = strdup(name);
        if (!names[s->n_res])
                return -ENOMEM;
        a[s->n_res] = alloc;
        u[s->n_res] = 0;
        adv[s->n_res] = advertised;
        s->n_res = n;
        return 0;
}

static void entry_free(AdmitEntry *e) {
        if (!e)
                return;
        free(e->uid);
        free(e->key);
        free(e->reqs);
        free(e->ports);
        pod_resource_list_done(&e->requests);
        free(e);
}

AdmitSnapshot *admit_snapshot_free(AdmitSnapshot *s) {
        if (!s)
                return NULL;
        free(s->node_name);
        for (size_t i = 0; i < s->labels.n; i++) {
                free(s->labels.keys[i]);
                free(s->labels.values[i]);
        }
        free(s->labels.keys);
        free(s->labels.values);
        for (size_t i = 0; i < s->n_taints; i++) {
                free(s->taints[i].key);
                free(s->taints[i].value);
                free(s->taints[i].effect);
        }
        free(s->taints);
        for (size_t i = 0; i < s->n_res; i++)
                free(s->res_names[i]);
        free(s->res_names);
        free(s->alloc);
        free(s->used);
        free(s->advertised);
        for (size_t i = 0; i < s->n_pods; i++)
                entry_free(s->pods[i]);
        free(s->pods);
        free(s->host_ports);
        for (size_t i = 0; i < s->n_devices; i++) {
                free(s->devices[i].resource);
                for (size_t j = 0; j < s->devices[i].n; j++)
                        free(s->devices[i].ids[j]);
                free(s->devices[i].ids);
        }
        free(s->devices);
        free(s);
        return NULL;
}

static char *strdup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

int admit_snapshot_new(const AdmitNodeInfo *node, AdmitSnapshot **ret, CubError *err) {
        _cleanup_(admit_snapshot_freep) AdmitSnapshot *s = NULL;
        static const char *const fixed[_ADMIT_RES_FIXED] = { "cpu", "memory", "ephemeral-storage" };
        CubQuantity q;

        s = calloc(1, sizeof(*s));
        if (!s)
                return cub_err_set(err, ENOMEM, "out of memory");
        s->node_name = strdup(node->name ? node->name : "");
        if (!s->node_name)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (node->labels && node->labels->n > 0) {
                s->labels.keys = calloc(node->labels->n, sizeof(char *));
                s->labels.values = calloc(node->labels->n, sizeof(char *));
                if (!s->labels.keys || !s->labels.values)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (size_t i = 0; i < node->labels->n; i++) {
                        s->labels.keys[i] = strdup(node->labels->keys[i]);
                        s->labels.values[i] = strdup(node->labels->values[i] ? node->labels->values[i] : "");
                        s->labels.n++;
                        if (!s->labels.keys[i] || !s->labels.values[i])
                                return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        if (node->n_taints > 0) {
                s->taints = calloc(node->n_taints, sizeof(PodTaint));
                if (!s->taints)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (size_t i = 0; i < node->n_taints; i++) {
                        s->n_taints++;
                        s->taints[i].key = strdup_or_null(node->taints[i].key);
                        s->taints[i].value = strdup_or_null(node->taints[i].value);
                        s->taints[i].effect = strdup_or_null(node->taints[i].effect);
                        if ((node->taints[i].key && !s->taints[i].key) ||
                            (node->taints[i].value && !s->taints[i].value) ||
                            (node->taints[i].effect && !s->taints[i].effect))
                                return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        for (size_t i = 0; i < _ADMIT_RES_FIXED; i++) {
                bool have = pod_resource_get(node->allocatable, fixed[i], &q);

                if (res_append(s, fixed[i], have ? admit_quantity_value(fixed[i], q) : 0, have) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
        }
        for (size_t i = 0; node->allocatable && i < node->allocatable->n; i++) {
                const PodResource *r = &node->allocatable->items[i];

                if (strcmp(r->name, "pods") == 0 || admit_snapshot_find_res(s, r->name) >= 0)
                        continue;
                if (res_append(s, r->name, admit_quantity_value(r->name, r->q), true) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
        }
        s->max_pods = node->max_pods;
        if (s->max_pods <= 0)
                s->max_pods = pod_resource_get(node->allocatable, "pods", &q) ? cub_quantity_value(q)
                                                                              : ADMIT_DEFAULT_MAX_PODS;
        *ret = TAKE_PTR(s);
        return 0;
}

size_t admit_snapshot_n_pods(const AdmitSnapshot *s) {
        return s->n_pods;
}

int64_t admit_snapshot_used(const AdmitSnapshot *s, const char *resource) {
        ssize_t i = admit_snapshot_find_res(s, resource);

        return i < 0 ? 0 : s->used[i];
}

int admit_pod_ports(const Pod *pod, AdmitPort **ret, size_t *ret_n) {
        _cleanup_free_ AdmitPort *ports = NULL;
        size_t n = 0, cap = 0;

        for (size_t i = 0; i < pod->n_containers; i++)
                for (size_t j = 0; j < pod->containers[i].n_ports; j++) {
                        const PodPort *p = &pod->containers[i].ports[j];

                        if (p->host_port <= 0)
                                continue;
                        if (n == cap) {
                                AdmitPort *np;

                                cap = cap ? cap * 2 : 4;
                                np = realloc(ports, cap * sizeof(AdmitPort));
                                if (!np)
                                        return -ENOMEM;
                                ports = np;
                        }
                        ports[n] = (AdmitPort){ .port = (uint16_t) p->host_port };
                        (void) snprintf(ports[n].protocol, sizeof(ports[n].protocol), "%s",
                                        p->protocol ? p->protocol : "TCP");
                        (void) snprintf(ports[n].ip, sizeof(ports[n].ip), "%s", p->host_ip ? p->host_ip : "");
                        n++;
                }
        *ret = TAKE_PTR(ports);
        *ret_n = n;
        return 0;
}

static bool ip_is_any(const char *ip) {
        return !*ip || strcmp(ip, "0.0.0.0") == 0 || strcmp(ip, "::") == 0;
}

bool admit_ports_conflict(const AdmitPort *a, const AdmitPort *b) {
        if (a->port != b->port || strcasecmp(a->protocol, b->protocol) != 0)
                return false;
        return ip_is_any(a->ip) || ip_is_any(b->ip) || strcmp(a->ip, b->ip) == 0;
}

int admit_snapshot_insert(AdmitSnapshot *s, const Pod *pod, AdmitLedgerState state, CubError *err) {
        _cleanup_(pod_effective_done) PodEffective eff = {};
        AdmitEntry *e, **np;
        int r;

        if (!pod->uid)
                return cub_err_set(err, EINVAL, "pod %s/%s: metadata.uid: Required value", pod->namespace_, pod->name);
        if (admit_snapshot_find_pod(s, pod->uid) >= 0)
                return cub_err_set(err, EEXIST, "pod %s/%s: already admitted (uid \"%s\")", pod->namespace_, pod->name,
                                   pod->uid);
        r = pod_effective(pod, &eff, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "pod %s/%s", pod->namespace_, pod->name);
        e = calloc(1, sizeof(*e));
        if (!e)
                return cub_err_set(err, ENOMEM, "out of memory");
        e->pod = pod;
        e->qos = pod_qos_class(pod);
        e->priority = pod->priority;
        e->critical = pod->priority >= POD_PRIORITY_CRITICAL;
        e->state = state;
        e->uid = strdup(pod->uid);
        if (!e->uid || asprintf(&e->key, "%s/%s", pod->namespace_, pod->name) < 0) {
                e->key = NULL;
                entry_free(e);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        e->reqs = calloc(eff.requests.n ? eff.requests.n : 1, sizeof(AdmitReq));
        if (!e->reqs) {
                entry_free(e);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < eff.requests.n; i++) {
                const PodResource *pr = &eff.requests.items[i];
                ssize_t idx;

                if (!admit_resource_is_checked(pr->name))
                        continue;
                idx = admit_snapshot_find_res(s, pr->name);
                if (idx < 0) {
                        if (res_append(s, pr->name, 0, false) < 0) {
                                entry_free(e);
                                return cub_err_set(err, ENOMEM, "out of memory");
                        }
                        idx = (ssize_t) s->n_res - 1;
                }
                e->reqs[e->n_reqs++] =
                        (AdmitReq){ .res = (size_t) idx, .value = admit_quantity_value(pr->name, pr->q) };
        }
        if (admit_pod_ports(pod, &e->ports, &e->n_ports) < 0) {
                entry_free(e);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        np = realloc(s->pods, (s->n_pods + 1) * sizeof(AdmitEntry *));
        if (!np) {
                entry_free(e);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        s->pods = np;
        e->requests = eff.requests;
        eff.requests = (PodResourceList){};
        for (size_t i = 0; i < e->n_reqs; i++)
                s->used[e->reqs[i].res] += e->reqs[i].value;
        s->pods[s->n_pods++] = e;
        return 0;
}

int admit_snapshot_add(AdmitSnapshot *s, const Pod *pod, CubError *err) {
        return admit_snapshot_insert(s, pod, ADMIT_LEDGER_CONFIRMED, err);
}

int admit_snapshot_remove(AdmitSnapshot *s, const char *uid) {
        ssize_t i = admit_snapshot_find_pod(s, uid);
        AdmitEntry *e;

        if (i < 0)
                return -ENOENT;
        e = s->pods[i];
        for (size_t j = 0; j < e->n_reqs; j++)
                s->used[e->reqs[j].res] -= e->reqs[j].value;
        memmove(&s->pods[i], &s->pods[i + 1], (s->n_pods - (size_t) i - 1) * sizeof(AdmitEntry *));
        s->n_pods--;
        entry_free(e);
        return 0;
}

void admit_snapshot_set_conditions(AdmitSnapshot *s, const AdmitConditions *c) {
        s->cond = *c;
}

void admit_conditions_from_node(const PodNode *node, AdmitConditions *ret) {
        *ret = (AdmitConditions){};
        for (size_t i = 0; i < node->n_conditions; i++) {
                const PodNodeCondition *c = &node->conditions[i];

                if (!c->type || !c->status || strcmp(c->status, "True") != 0)
                        continue;
                if (strcmp(c->type, "MemoryPressure") == 0)
                        ret->memory_pressure = true;
                else if (strcmp(c->type, "DiskPressure") == 0)
                        ret->disk_pressure = true;
                else if (strcmp(c->type, "PIDPressure") == 0)
                        ret->pid_pressure = true;
        }
}

int admit_snapshot_set_host_ports(AdmitSnapshot *s, const AdmitHostPort *ports, size_t n, CubError *err) {
        AdmitPort *p = NULL;

        if (n > 0) {
                p = calloc(n, sizeof(AdmitPort));
                if (!p)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (size_t i = 0; i < n; i++) {
                        memcpy(p[i].protocol, ports[i].protocol, sizeof(p[i].protocol));
                        p[i].protocol[sizeof(p[i].protocol) - 1] = 0;
                        memcpy(p[i].ip, ports[i].ip, sizeof(p[i].ip));
                        p[i].ip[sizeof(p[i].ip) - 1] = 0;
                        p[i].port = ports[i].port;
                }
        }
        free(s->host_ports);
        s->host_ports = p;
        s->n_host_ports = n;
        return 0;
}

int admit_snapshot_set_allocatable(AdmitSnapshot *s, const char *resource, int64_t value, CubError *err) {
        ssize_t i = admit_snapshot_find_res(s, resource);

        if (value < 0)
                value = 0;
        if (i < 0)
                return res_append(s, resource, value, true) < 0 ? cub_err_set(err, ENOMEM, "out of memory") : 0;
        s->alloc[i] = value;
        s->advertised[i] = true;
        return 0;
}

void admit_snapshot_set_cpumgr(AdmitSnapshot *s, CpumgrState *cpumgr) {
        s->cpumgr = cpumgr;
}

int admit_snapshot_set_devices(AdmitSnapshot *s, const char *resource, const char *const *ids, size_t n,
                               CubError *err) {
        AdmitDevices *d = NULL;
        char **copy;

        for (size_t i = 0; i < s->n_devices; i++)
                if (strcmp(s->devices[i].resource, resource) == 0)
                        d = &s->devices[i];
        copy = calloc(n ? n : 1, sizeof(char *));
        if (!copy)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
                if (!(copy[i] = strdup(ids[i]))) {
                        for (size_t j = 0; j < i; j++)
                                free(copy[j]);
                        free(copy);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
        if (!d) {
                AdmitDevices *nd = realloc(s->devices, (s->n_devices + 1) * sizeof(AdmitDevices));
                char *name = strdup(resource);

                if (!nd || !name) {
                        if (nd)
                                s->devices = nd;
                        free(name);
                        for (size_t j = 0; j < n; j++)
                                free(copy[j]);
                        free(copy);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
                s->devices = nd;
                d = &s->devices[s->n_devices++];
                *d = (AdmitDevices){ .resource = name };
        }
        for (size_t j = 0; j < d->n; j++)
                free(d->ids[j]);
        free(d->ids);
        d->ids = copy;
        d->n = n;
        return 0;
}
