/* SPDX-License-Identifier: Apache-2.0 */
/* The filter plugins, in kubelet's order of admit handlers: the eviction
 * manager's (NodePressure), the resource-allocation handler's
 * (CPUManager), then the predicate handler's generalFilter in
 * AdmissionCheck's order (NodeResourcesFit, NodeAffinity, NodeName,
 * NodePorts, then TaintToleration for non-static pods), then Seccomp.
 * Pure, except that Seccomp reads Localhost profiles. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../eviction/eviction.h"
#include "../util/cleanup.h"
#include "admit-internal.h"

#define FAIL(r, rsn, ...)                                                         \
        do {                                                                      \
                (r)->ok = false;                                                  \
                (void) snprintf((r)->reason, sizeof((r)->reason), "%s", (rsn));   \
                (void) snprintf((r)->message, sizeof((r)->message), __VA_ARGS__); \
        } while (0)

#define PREDICATE(r, name, text) FAIL(r, name, "Predicate %s failed: %s", name, text)

/* ---- NodePressure (eviction manager's Admit, kubelet-semantics 6.7) ---------- */

static void filter_node_pressure(const AdmitCtx *c, AdmitFilterResult *r) {
        const AdmitConditions *cond = &c->s->cond;
        const bool conditions[_EVICT_CONDITION_MAX] = {
                [EVICT_CONDITION_MEMORY_PRESSURE] = cond->memory_pressure,
                [EVICT_CONDITION_DISK_PRESSURE] = cond->disk_pressure,
                [EVICT_CONDITION_PID_PRESSURE] = cond->pid_pressure,
        };
        char message[EVICT_MESSAGE_MAX];

        if (!cond->memory_pressure && !cond->disk_pressure && !cond->pid_pressure)
                return;
        /* Critical by priority only: unlike kubelet, which treats every static
         * pod as critical, cubelet's manifest pods are this node's workload
         * and face pressure admission like any other pod. EvictQOS lists the
         * classes in PodQOSClass's order (asserted in agent/derive.c). */
        if (evict_admit(conditions, (EvictQOS) c->qos, c->pod->priority >= POD_PRIORITY_CRITICAL,
                        admit_tolerates(c->pod->tolerations, c->pod->n_tolerations,
                                        "node.kubernetes.io/memory-pressure", "", "NoSchedule"),
                        message))
                return;
        FAIL(r, "Evicted", "%.960s", message);
}

/* ---- CPUManager (the static policy's Allocate at admission) ------------------ */

static void filter_cpu_manager(const AdmitCtx *c, AdmitFilterResult *r) {
        CubError e = {};

        if (!c->s->cpumgr || c->excl_cpus == 0)
                return;
        if (cpumgr_pod_fits(c->s->cpumgr, c->pod, c->qos, &e))
                return;
        FAIL(r, "UnexpectedAdmissionError", "Allocate failed due to %.960s, which is unexpected", e.msg);
}

/* ---- NodeResourcesFit (noderesources.Fits) ----------------------------------- */

static void insufficient(AdmitFilterResult *r, const char *name, int64_t req, int64_t used, int64_t cap) {
        char reason[ADMIT_REASON_MAX];

        (void) snprintf(reason, sizeof(reason), "OutOf%s", name);
        FAIL(r, reason,
             "Node didn't have enough resource: %s, requested: %" PRIi64 ", used: %" PRIi64 ", capacity: %" PRIi64,
             name, req, used, cap);
}

static bool req_fits(const AdmitSnapshot *s, const AdmitPodReq *q, int64_t *ret_used, int64_t *ret_alloc) {
        int64_t used = q->res == SIZE_MAX ? 0 : s->used[q->res];
        int64_t alloc = q->res == SIZE_MAX ? 0 : s->alloc[q->res];

        *ret_used = used;
        *ret_alloc = alloc;
        return q->value == 0 || q->value <= alloc - used;
}

static void filter_node_resources_fit(const AdmitCtx *c, AdmitFilterResult *r) {
        const AdmitSnapshot *s = c->s;
        int64_t used, alloc;

        if ((int64_t) s->n_pods + 1 > s->max_pods) {
                insufficient(r, "pods", 1, (int64_t) s->n_pods, s->max_pods);
                return;
        }
        /* cpu, memory, ephemeral-storage, then the scalar resources in the pod's order */
        for (size_t fixed = 0; fixed <= _ADMIT_RES_FIXED; fixed++)
                for (size_t i = 0; i < c->n_reqs; i++) {
                        const AdmitPodReq *q = &c->reqs[i];

                        if (fixed < _ADMIT_RES_FIXED ? q->res != fixed : q->res < _ADMIT_RES_FIXED)
                                continue;
                        if (!req_fits(s, q, &used, &alloc)) {
                                insufficient(r, q->name, q->value, used, alloc);
                                return;
                        }
                }
}

/* ---- NodeAffinity --------------------------------------------------------------- */

static const char *label_get(const PodStringMap *m, const char *key) {
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->keys[i], key) == 0)
                        return m->values[i] ? m->values[i] : "";
        return NULL;
}

static bool strv_has(const PodStrv *v, const char *s) {
        for (size_t i = 0; i < v->n; i++)
                if (strcmp(v->items[i], s) == 0)
                        return true;
        return false;
}

static bool parse_i64(const char *s, int64_t *ret) {
        char *end;
        long long v;

        if (!s || !*s)
                return false;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno != 0 || *end)
                return false;
        *ret = v;
        return true;
}

static bool requirement_matches(const PodNodeSelectorRequirement *q, const char *value) {
        int64_t a, b;

        if (!q->op)
                return false;
        if (strcmp(q->op, "In") == 0)
                return value && strv_has(&q->values, value);
        if (strcmp(q->op, "NotIn") == 0)
                return !value || !strv_has(&q->values, value);
        if (strcmp(q->op, "Exists") == 0)
                return value != NULL;
        if (strcmp(q->op, "DoesNotExist") == 0)
                return value == NULL;
        if (strcmp(q->op, "Gt") == 0 || strcmp(q->op, "Lt") == 0) {
                if (!value || q->values.n != 1 || !parse_i64(value, &a) || !parse_i64(q->values.items[0], &b))
                        return false;
                return q->op[0] == 'G' ? a > b : a < b;
        }
        return false;
}

static bool term_matches(const AdmitSnapshot *s, const PodNodeSelectorTerm *t) {
        if (t->n_match_expressions == 0 && t->n_match_fields == 0)
                return false; /* an empty term matches no objects */
        for (size_t i = 0; i < t->n_match_expressions; i++) {
                const PodNodeSelectorRequirement *q = &t->match_expressions[i];

                if (!requirement_matches(q, label_get(&s->labels, q->key)))
                        return false;
        }
        for (size_t i = 0; i < t->n_match_fields; i++) {
                const PodNodeSelectorRequirement *q = &t->match_fields[i];

                if (strcmp(q->key, "metadata.name") != 0 || !requirement_matches(q, s->node_name))
                        return false;
        }
        return true;
}

static bool node_affinity_matches(const AdmitSnapshot *s, const Pod *pod) {
        for (size_t i = 0; i < pod->node_selector.n; i++) {
                const char *v = label_get(&s->labels, pod->node_selector.keys[i]);

                if (!v || strcmp(v, pod->node_selector.values[i] ? pod->node_selector.values[i] : "") != 0)
                        return false;
        }
        if (!pod->affinity_required_set && pod->n_affinity_terms == 0)
                return true;
        for (size_t i = 0; i < pod->n_affinity_terms; i++)
                if (term_matches(s, &pod->affinity_terms[i]))
                        return true;
        return false;
}

static void filter_node_affinity(const AdmitCtx *c, AdmitFilterResult *r) {
        if (!node_affinity_matches(c->s, c->pod))
                PREDICATE(r, "NodeAffinity", "node(s) didn't match Pod's node affinity/selector");
}

/* ---- NodeName --------------------------------------------------------------------- */

static void filter_node_name(const AdmitCtx *c, AdmitFilterResult *r) {
        if (c->pod->node_name && *c->pod->node_name && strcmp(c->pod->node_name, c->s->node_name) != 0)
                PREDICATE(r, "NodeName", "node(s) didn't match the requested node name");
}

/* ---- NodePorts ------------------------------------------------------------------------ */

static void filter_node_ports(const AdmitCtx *c, AdmitFilterResult *r) {
        const AdmitSnapshot *s = c->s;

        for (size_t i = 0; i < c->n_ports; i++) {
                const AdmitPort *p = &c->ports[i];

                for (size_t j = 0; j < s->n_host_ports; j++)
                        if (admit_ports_conflict(p, &s->host_ports[j]))
                                goto conflict;
                for (size_t k = 0; k < s->n_pods; k++)
                        for (size_t j = 0; j < s->pods[k]->n_ports; j++)
                                if (admit_ports_conflict(p, &s->pods[k]->ports[j]))
                                        goto conflict;
        }
        return;
conflict:
        PREDICATE(r, "NodePorts", "node(s) didn't have free ports for the requested pod ports");
}

/* ---- TaintToleration (NoExecute only, not for static pods) ------------------------------ */

static bool nonempty(const char *s) {
        return s && *s;
}

bool admit_tolerates(const PodToleration *t, size_t n, const char *key, const char *value, const char *effect) {
        for (size_t i = 0; i < n; i++) {
                if (nonempty(t[i].effect) && strcmp(t[i].effect, effect ? effect : "") != 0)
                        continue;
                if (nonempty(t[i].key) && strcmp(t[i].key, key ? key : "") != 0)
                        continue;
                if (t[i].op && strcmp(t[i].op, "Exists") == 0)
                        return true;
                if (strcmp(t[i].value ? t[i].value : "", value ? value : "") == 0)
                        return true;
        }
        return false;
}

static void filter_taint_toleration(const AdmitCtx *c, AdmitFilterResult *r) {
        const AdmitSnapshot *s = c->s;

        if (pod_is_static(c->pod))
                return;
        for (size_t i = 0; i < s->n_taints; i++) {
                const PodTaint *t = &s->taints[i];

                if (!t->effect || strcmp(t->effect, "NoExecute") != 0)
                        continue;
                if (!admit_tolerates(c->pod->tolerations, c->pod->n_tolerations, t->key, t->value, t->effect)) {
                        PREDICATE(r, "TaintToleration", "node(s) had taints that the pod didn't tolerate");
                        return;
                }
        }
}

/* ---- Seccomp (Localhost profiles must exist and compile) ---------------------------------- */

static const PodSeccomp *effective_seccomp(const Pod *pod, const PodContainer *ct) {
        return ct->seccomp.type ? &ct->seccomp : &pod->seccomp;
}

static bool check_container(const AdmitCtx *c, const PodContainer *ct, AdmitFilterResult *r) {
        const PodSeccomp *sc = effective_seccomp(c->pod, ct);
        const char *root = c->o && c->o->seccomp_root ? c->o->seccomp_root : ADMIT_DEFAULT_SECCOMP_ROOT;
        _cleanup_free_ char *path = NULL;
        CubError e = {};

        if (!sc->type || strcmp(sc->type, "Localhost") != 0)
                return true;
        if (!nonempty(sc->localhost_profile)) {
                FAIL(r, "Seccomp", "Predicate Seccomp failed: container '%s': type Localhost without localhostProfile",
                     ct->name);
                return false;
        }
        if (asprintf(&path, "%s/%s", root, sc->localhost_profile) < 0) {
                path = NULL;
                PREDICATE(r, "Seccomp", "out of memory");
                return false;
        }
        if (admit_seccomp_check(path, sc->localhost_profile, &e) < 0) {
                FAIL(r, "Seccomp", "Predicate Seccomp failed: %.960s", e.msg);
                return false;
        }
        return true;
}

static void filter_seccomp(const AdmitCtx *c, AdmitFilterResult *r) {
        for (size_t i = 0; i < c->pod->n_init_containers; i++)
                if (!check_container(c, &c->pod->init_containers[i], r))
                        return;
        for (size_t i = 0; i < c->pod->n_containers; i++)
                if (!check_container(c, &c->pod->containers[i], r))
                        return;
}

/* ---- sysctls (security context: kubelet's sysctl admit handler) ------------------------------- */

static void filter_sysctl(const AdmitCtx *c, AdmitFilterResult *r) {
        char msg[sizeof(r->message)];

        if (pod_sysctl_admit(c->pod, c->o ? c->o->allowed_unsafe_sysctls : NULL, msg, sizeof(msg)) < 0)
                FAIL(r, POD_SYSCTL_FORBIDDEN_REASON, "%s", msg);
}

const AdmitFilterFn admit_filter_table[_ADMIT_FILTER_MAX] = {
        [ADMIT_FILTER_NODE_PRESSURE] = filter_node_pressure,
        [ADMIT_FILTER_CPU_MANAGER] = filter_cpu_manager,
        [ADMIT_FILTER_NODE_RESOURCES_FIT] = filter_node_resources_fit,
        [ADMIT_FILTER_NODE_AFFINITY] = filter_node_affinity,
        [ADMIT_FILTER_NODE_NAME] = filter_node_name,
        [ADMIT_FILTER_NODE_PORTS] = filter_node_ports,
        [ADMIT_FILTER_TAINT_TOLERATION] = filter_taint_toleration,
        [ADMIT_FILTER_SECCOMP] = filter_seccomp,
        [ADMIT_FILTER_SYSCTL] = filter_sysctl,
};

static const char *const filter_names[_ADMIT_FILTER_MAX] = {
        [ADMIT_FILTER_NODE_PRESSURE] = "NodePressure",
        [ADMIT_FILTER_CPU_MANAGER] = "CPUManager",
        [ADMIT_FILTER_NODE_RESOURCES_FIT] = "NodeResourcesFit",
        [ADMIT_FILTER_NODE_AFFINITY] = "NodeAffinity",
        [ADMIT_FILTER_NODE_NAME] = "NodeName",
        [ADMIT_FILTER_NODE_PORTS] = "NodePorts",
        [ADMIT_FILTER_TAINT_TOLERATION] = "TaintToleration",
        [ADMIT_FILTER_SECCOMP] = "Seccomp",
        [ADMIT_FILTER_SYSCTL] = "Sysctl",
};

const char *admit_filter_to_string(AdmitFilterId id) {
        if (id < 0 || id >= _ADMIT_FILTER_MAX)
                return NULL;
        return filter_names[id];
}
