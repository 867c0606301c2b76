/* SPDX-License-Identifier: Apache-2.0 */
/* The v1 Pod field tables, the checks that run as each object is decoded,
 * and the destructors. Unknown fields are ignored, as the Kubernetes
 * decoder does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/fileio.h"
#include "pod-internal.h"

#define POD_MANIFEST_MAX (1024 * 1024)

/* ---- destructors -------------------------------------------------------- */

void pod_strv_done(PodStrv *v) {
        for (size_t i = 0; v->items && i < v->n; i++)
                free(v->items[i]);
        free(v->items);
        *v = (PodStrv){};
}

void pod_string_map_done(PodStringMap *m) {
        for (size_t i = 0; i < m->n; i++) {
                free(m->keys[i]);
                free(m->values[i]);
        }
        free(m->keys);
        free(m->values);
        *m = (PodStringMap){};
}

void pod_resource_list_done(PodResourceList *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i].name);
        free(l->items);
        *l = (PodResourceList){};
}

static void seccomp_done(PodSeccomp *s) {
        free(s->type);
        free(s->localhost_profile);
}

static void requirement_done(PodNodeSelectorRequirement *r) {
        free(r->key);
        free(r->op);
        pod_strv_done(&r->values);
}

void pod_container_done(PodContainer *c) {
        free(c->name);
        free(c->image);
        free(c->image_pull_policy);
        pod_strv_done(&c->command);
        pod_strv_done(&c->args);
        for (size_t i = 0; i < c->n_env; i++) {
                free(c->env[i].name);
                free(c->env[i].value);
        }
        free(c->env);
        free(c->working_dir);
        for (size_t i = 0; i < c->n_ports; i++) {
                free(c->ports[i].name);
                free(c->ports[i].host_ip);
                free(c->ports[i].protocol);
        }
        free(c->ports);
        pod_resource_list_done(&c->requests);
        pod_resource_list_done(&c->limits);
        free(c->restart_policy);
        seccomp_done(&c->seccomp);
}

Pod *pod_free(Pod *pod) {
        if (!pod)
                return NULL;
        free(pod->name);
        free(pod->namespace_);
        free(pod->uid);
        free(pod->config_hash);
        pod_string_map_done(&pod->labels);
        pod_string_map_done(&pod->annotations);
        for (size_t i = 0; i < pod->n_containers; i++)
                pod_container_done(&pod->containers[i]);
        free(pod->containers);
        for (size_t i = 0; i < pod->n_init_containers; i++)
                pod_container_done(&pod->init_containers[i]);
        free(pod->init_containers);
        free(pod->restart_policy);
        free(pod->priority_class_name);
        free(pod->preemption_policy);
        free(pod->node_name);
        pod_string_map_done(&pod->node_selector);
        for (size_t i = 0; i < pod->n_affinity_terms; i++) {
                PodNodeSelectorTerm *t = &pod->affinity_terms[i];
                for (size_t j = 0; j < t->n_match_expressions; j++)
                        requirement_done(&t->match_expressions[j]);
                free(t->match_expressions);
                for (size_t j = 0; j < t->n_match_fields; j++)
                        requirement_done(&t->match_fields[j]);
                free(t->match_fields);
        }
        free(pod->affinity_terms);
        for (size_t i = 0; i < pod->n_tolerations; i++) {
                free(pod->tolerations[i].key);
                free(pod->tolerations[i].op);
                free(pod->tolerations[i].value);
                free(pod->tolerations[i].effect);
        }
        free(pod->tolerations);
        pod_resource_list_done(&pod->overhead);
        seccomp_done(&pod->seccomp);
        free(pod);
        return NULL;
}

/* ---- tables ------------------------------------------------------------- */

static const char *const pull_policies[] = { "Always", "IfNotPresent", "Never", NULL };
static const char *const protocols[] = { "TCP", "UDP", "SCTP", NULL };
static const char *const restart_policies[] = { "Always", "OnFailure", "Never", NULL };
static const char *const sidecar_policies[] = { "Always", NULL };
static const char *const preemption_policies[] = { "PreemptLowerPriority", "Never", NULL };
static const char *const selector_ops[] = { "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", NULL };
static const char *const toleration_ops[] = { "Exists", "Equal", NULL };
static const char *const taint_effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute", NULL };
static const char *const seccomp_types[] = { "RuntimeDefault", "Unconfined", "Localhost", NULL };
static const char *const api_versions[] = { "v1", NULL };
static const char *const pod_kinds[] = { "Pod", NULL };

#define STR(n, T, m) \
        { .name = n, .decode = pod_dec_string, .offset = offsetof(T, m) }
#define STR_REQ(n, T, m) \
        { .name = n, .decode = pod_dec_string, .offset = offsetof(T, m), .flags = POD_FIELD_REQUIRED }
#define ENUM(n, T, m, a) \
        { .name = n, .decode = pod_dec_string, .offset = offsetof(T, m), .allowed = a }

static int seccomp_post(PodDec *d, json_t *obj, void *base);
static int env_post(PodDec *d, json_t *obj, void *base);
static int port_post(PodDec *d, json_t *obj, void *base);
static int container_post(PodDec *d, json_t *obj, void *base);
static int init_container_post(PodDec *d, json_t *obj, void *base);
static int requirement_post(PodDec *d, json_t *obj, void *base);
static int toleration_post(PodDec *d, json_t *obj, void *base);
static int metadata_post(PodDec *d, json_t *obj, void *base);

static const PodField seccomp_fields[] = {
        { .name = "type",
          .decode = pod_dec_string,
          .offset = offsetof(PodSeccomp, type),
          .allowed = seccomp_types,
          .flags = POD_FIELD_REQUIRED },
        STR("localhostProfile", PodSeccomp, localhost_profile),
        {},
};

static const PodField env_fields[] = {
        STR_REQ("name", PodEnvVar, name),
        STR("value", PodEnvVar, value),
        {},
};

static const PodField port_fields[] = {
        STR("name", PodPort, name),
        { .name = "containerPort",
          .decode = pod_dec_int32,
          .offset = offsetof(PodPort, container_port),
          .flags = POD_FIELD_REQUIRED },
        { .name = "hostPort", .decode = pod_dec_int32, .offset = offsetof(PodPort, host_port) },
        STR("hostIP", PodPort, host_ip),
        ENUM("protocol", PodPort, protocol, protocols),
        {},
};

static const PodField resources_fields[] = {
        { .name = "limits", .decode = pod_dec_resources, .offset = offsetof(PodContainer, limits) },
        { .name = "requests", .decode = pod_dec_resources, .offset = offsetof(PodContainer, requests) },
        {},
};

static const PodField container_security_fields[] = {
        { .name = "seccompProfile",
          .decode = pod_dec_object,
          .offset = offsetof(PodContainer, seccomp),
          .sub = seccomp_fields,
          .post = seccomp_post },
        {},
};

#define CONTAINER_FIELDS(restart_allowed)                                                                  \
        STR_REQ("name", PodContainer, name), STR("image", PodContainer, image),                            \
                ENUM("imagePullPolicy", PodContainer, image_pull_policy, pull_policies),                   \
                { .name = "command", .decode = pod_dec_strv, .offset = offsetof(PodContainer, command) },  \
                { .name = "args", .decode = pod_dec_strv, .offset = offsetof(PodContainer, args) },        \
                { .name = "env",                                                                           \
                  .decode = pod_dec_object_array,                                                          \
                  .offset = offsetof(PodContainer, env),                                                   \
                  .count_offset = offsetof(PodContainer, n_env),                                           \
                  .elem_size = sizeof(PodEnvVar),                                                          \
                  .sub = env_fields,                                                                       \
                  .post = env_post },                                                                      \
                STR("workingDir", PodContainer, working_dir),                                              \
                { .name = "ports",                                                                         \
                  .decode = pod_dec_object_array,                                                          \
                  .offset = offsetof(PodContainer, ports),                                                 \
                  .count_offset = offsetof(PodContainer, n_ports),                                         \
                  .elem_size = sizeof(PodPort),                                                            \
                  .sub = port_fields,                                                                      \
                  .post = port_post },                                                                     \
                { .name = "resources", .decode = pod_dec_inline, .sub = resources_fields },                \
                { .name = "securityContext", .decode = pod_dec_inline, .sub = container_security_fields }, \
                ENUM("restartPolicy", PodContainer, restart_policy, restart_allowed)

static const PodField container_fields[] = {
        CONTAINER_FIELDS(sidecar_policies),
        {},
};

static const PodField requirement_fields[] = {
        STR_REQ("key", PodNodeSelectorRequirement, key),
        { .name = "operator",
          .decode = pod_dec_string,
          .offset = offsetof(PodNodeSelectorRequirement, op),
          .allowed = selector_ops,
          .flags = POD_FIELD_REQUIRED },
        { .name = "values", .decode = pod_dec_strv, .offset = offsetof(PodNodeSelectorRequirement, values) },
        {},
};

static const PodField term_fields[] = {
        { .name = "matchExpressions",
          .decode = pod_dec_object_array,
          .offset = offsetof(PodNodeSelectorTerm, match_expressions),
          .count_offset = offsetof(PodNodeSelectorTerm, n_match_expressions),
          .elem_size = sizeof(PodNodeSelectorRequirement),
          .sub = requirement_fields,
          .post = requirement_post },
        { .name = "matchFields",
          .decode = pod_dec_object_array,
          .offset = offsetof(PodNodeSelectorTerm, match_fields),
          .count_offset = offsetof(PodNodeSelectorTerm, n_match_fields),
          .elem_size = sizeof(PodNodeSelectorRequirement),
          .sub = requirement_fields,
          .post = requirement_post },
        {},
};

static const PodField node_selector_fields[] = {
        { .name = "nodeSelectorTerms",
          .decode = pod_dec_object_array,
          .offset = offsetof(Pod, affinity_terms),
          .count_offset = offsetof(Pod, n_affinity_terms),
          .elem_size = sizeof(PodNodeSelectorTerm),
          .sub = term_fields,
          .flags = POD_FIELD_REQUIRED },
        {},
};

static const PodField node_affinity_fields[] = {
        { .name = "requiredDuringSchedulingIgnoredDuringExecution",
          .decode = pod_dec_inline,
          .sub = node_selector_fields,
          .set_offset = offsetof(Pod, affinity_required_set) },
        {},
};

static const PodField affinity_fields[] = {
        { .name = "nodeAffinity", .decode = pod_dec_inline, .sub = node_affinity_fields },
        {},
};

static const PodField toleration_fields[] = {
        STR("key", PodToleration, key),
        ENUM("operator", PodToleration, op, toleration_ops),
        STR("value", PodToleration, value),
        ENUM("effect", PodToleration, effect, taint_effects),
        { .name = "tolerationSeconds",
          .decode = pod_dec_int64,
          .offset = offsetof(PodToleration, toleration_seconds),
          .set_offset = offsetof(PodToleration, toleration_seconds_set) },
        {},
};

static const PodField pod_security_fields[] = {
        { .name = "seccompProfile",
          .decode = pod_dec_object,
          .offset = offsetof(Pod, seccomp),
          .sub = seccomp_fields,
          .post = seccomp_post },
        {},
};

static const PodField init_container_fields[] = {
        CONTAINER_FIELDS(sidecar_policies),
        {},
};

static const PodField spec_fields[] = {
        { .name = "initContainers",
          .decode = pod_dec_object_array,
          .offset = offsetof(Pod, init_containers),
          .count_offset = offsetof(Pod, n_init_containers),
          .elem_size = sizeof(PodContainer),
          .sub = init_container_fields,
          .post = init_container_post },
        { .name = "containers",
          .decode = pod_dec_object_array,
          .offset = offsetof(Pod, containers),
          .count_offset = offsetof(Pod, n_containers),
          .elem_size = sizeof(PodContainer),
          .sub = container_fields,
          .post = container_post,
          .flags = POD_FIELD_REQUIRED },
        ENUM("restartPolicy", Pod, restart_policy, restart_policies),
        { .name = "terminationGracePeriodSeconds",
          .decode = pod_dec_int64,
          .offset = offsetof(Pod, termination_grace_period_seconds),
          .set_offset = offsetof(Pod, termination_grace_period_seconds_set) },
        { .name = "priority",
          .decode = pod_dec_int32,
          .offset = offsetof(Pod, priority),
          .set_offset = offsetof(Pod, priority_set) },
        STR("priorityClassName", Pod, priority_class_name),
        ENUM("preemptionPolicy", Pod, preemption_policy, preemption_policies),
        STR("nodeName", Pod, node_name),
        { .name = "nodeSelector", .decode = pod_dec_string_map, .offset = offsetof(Pod, node_selector) },
        { .name = "affinity", .decode = pod_dec_inline, .sub = affinity_fields },
        { .name = "tolerations",
          .decode = pod_dec_object_array,
          .offset = offsetof(Pod, tolerations),
          .count_offset = offsetof(Pod, n_tolerations),
          .elem_size = sizeof(PodToleration),
          .sub = toleration_fields,
          .post = toleration_post },
        { .name = "hostNetwork", .decode = pod_dec_bool, .offset = offsetof(Pod, host_network) },
        { .name = "overhead", .decode = pod_dec_resources, .offset = offsetof(Pod, overhead) },
        { .name = "securityContext", .decode = pod_dec_inline, .sub = pod_security_fields },
        {},
};

static const PodField metadata_fields[] = {
        STR_REQ("name", Pod, name),
        STR("namespace", Pod, namespace_),
        STR("uid", Pod, uid),
        { .name = "labels", .decode = pod_dec_string_map, .offset = offsetof(Pod, labels) },
        { .name = "annotations", .decode = pod_dec_string_map, .offset = offsetof(Pod, annotations) },
        {},
};

static const PodField pod_fields[] = {
        { .name = "apiVersion",
          .decode = pod_dec_string,
          .allowed = api_versions,
          .flags = POD_FIELD_REQUIRED,
          .offset = offsetof(Pod, uid) /* checked only, overwritten by metadata */ },
        { .name = "kind",
          .decode = pod_dec_string,
          .allowed = pod_kinds,
          .flags = POD_FIELD_REQUIRED,
          .offset = offsetof(Pod, uid) },
        { .name = "metadata",
          .decode = pod_dec_inline,
          .sub = metadata_fields,
          .post = metadata_post,
          .flags = POD_FIELD_REQUIRED },
        { .name = "spec", .decode = pod_dec_inline, .sub = spec_fields, .flags = POD_FIELD_REQUIRED },
        {},
};

/* ---- checks run as objects are decoded ---------------------------------- */

static int field_line(PodDec *d, json_t *obj, const char *name) {
        json_t *v = obj ? json_object_get(obj, name) : NULL;
        int l = pod_tree_line(d->tree, v);
        return l > 0 ? l : d->line;
}

static int seccomp_post(PodDec *d, json_t *obj, void *base) {
        PodSeccomp *s = base;

        if (strcmp(s->type, "Localhost") == 0 && (!s->localhost_profile || !*s->localhost_profile))
                return pod_dec_fail(d, field_line(d, obj, "type"), ".localhostProfile",
                                    "Required value: must be set when seccomp type is Localhost");
        if (strcmp(s->type, "Localhost") != 0 && s->localhost_profile)
                return pod_dec_fail(d, field_line(d, obj, "localhostProfile"), ".localhostProfile",
                                    "Invalid value: \"%s\": can only be set when seccomp type is Localhost",
                                    s->localhost_profile);
        return 0;
}

static int env_post(PodDec *d, json_t *obj, void *base) {
        PodEnvVar *e = base;

        if (!*e->name)
                return pod_dec_fail(d, field_line(d, obj, "name"), ".name", "Required value");
        return 0;
}

static int port_post(PodDec *d, json_t *obj, void *base) {
        PodPort *p = base;

        if (p->container_port < 1 || p->container_port > 65535)
                return pod_dec_fail(d, field_line(d, obj, "containerPort"), ".containerPort",
                                    "Invalid value: %d: must be between 1 and 65535, inclusive", p->container_port);
        if (p->host_port < 0 || p->host_port > 65535)
                return pod_dec_fail(d, field_line(d, obj, "hostPort"), ".hostPort",
                                    "Invalid value: %d: must be between 1 and 65535, inclusive", p->host_port);
        if (!p->protocol) {
                p->protocol = strdup("TCP");
                if (!p->protocol)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
        }
        return 0;
}

static bool is_standard_resource(const char *name) {
        static const char *const std[] = { "cpu", "memory", "ephemeral-storage", "storage", "pods", NULL };

        for (const char *const *s = std; *s; s++)
                if (strcmp(*s, name) == 0)
                        return true;
        return strncmp(name, "hugepages-", 10) == 0;
}

/* Extended resources (vendor.example/thing) are integers and never
 * overcommitted: requests must equal limits. */
static bool is_extended_resource(const char *name) {
        return strchr(name, '/') && strncmp(name, "kubernetes.io/", 14) != 0 && strncmp(name, "requests.", 9) != 0;
}

/* A qualified resource name is at most 253 + 1 + 63 bytes: its path fits. */
#define RESOURCE_PATH_MAX 400

/* ".resources.<list>[<name>]" into buf; a name too long for it (and for a
 * qualified name) is refused naming the list, never cut. */
static int resource_path(PodDec *d, int line, const char *list, const char *name, char buf[static RESOURCE_PATH_MAX]) {
        int n = snprintf(buf, RESOURCE_PATH_MAX, ".resources.%s[%s]", list, name);

        if (n < 0 || n >= RESOURCE_PATH_MAX) {
                char where[64];

                (void) snprintf(where, sizeof(where), ".resources.%s", list);
                return pod_dec_fail(d, line, where, "Invalid value: \"%.64s...\": a resource name of %zu bytes", name,
                                    strlen(name));
        }
        return 0;
}

static int check_resource_name(PodDec *d, json_t *obj, const char *list, const char *name) {
        json_t *l = json_object_get(obj, "resources");
        json_t *m = l ? json_object_get(l, list) : NULL;
        int line = field_line(d, m, name);
        char suffix[RESOURCE_PATH_MAX];
        int r;

        r = resource_path(d, line, list, name, suffix);
        if (r < 0)
                return r;
        if (!is_standard_resource(name) && !strchr(name, '/'))
                return pod_dec_fail(d, line, suffix,
                                    "Invalid value: \"%s\": must be a standard resource type or fully qualified", name);
        if (strcmp(name, "pods") == 0 || strcmp(name, "storage") == 0)
                return pod_dec_fail(d, line, suffix,
                                    "Invalid value: \"%s\": must be a standard resource for containers", name);
        return 0;
}

/* requests default to limits (SetDefaults_Pod), then the checks of
 * ValidateResourceRequirements. */
static int container_resources(PodDec *d, json_t *obj, PodContainer *c) {
        int r;

        for (size_t i = 0; i < c->limits.n; i++) {
                r = check_resource_name(d, obj, "limits", c->limits.items[i].name);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < c->requests.n; i++) {
                r = check_resource_name(d, obj, "requests", c->requests.items[i].name);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < c->limits.n; i++) {
                const PodResource *lim = &c->limits.items[i];
                json_t *res = json_object_get(obj, "resources");
                char suffix[RESOURCE_PATH_MAX], lq[POD_QUANTITY_STR_MAX];

                if (lim->q.milli == 0 ||
                    !(is_extended_resource(lim->name) || strncmp(lim->name, "hugepages-", 10) == 0))
                        continue;
                r = resource_path(d, 0, "limits", lim->name, suffix);
                if (r < 0)
                        return r;
                return pod_dec_fail(d, field_line(d, res ? json_object_get(res, "limits") : NULL, lim->name), suffix,
                                    "Invalid value: \"%s\": must be an integer", pod_quantity_format(lim->q, true, lq));
        }
        for (size_t i = 0; i < c->limits.n; i++) {
                PodResource *lim = &c->limits.items[i];
                PodResource *n;

                if (pod_resource_get(&c->requests, lim->name, NULL))
                        continue;
                n = realloc(c->requests.items, (c->requests.n + 1) * sizeof(PodResource));
                if (!n)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
                c->requests.items = n;
                n[c->requests.n].name = strdup(lim->name);
                if (!n[c->requests.n].name)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
                n[c->requests.n].q = lim->q;
                c->requests.n++;
        }
        for (size_t i = 0; i < c->requests.n; i++) {
                const PodResource *req = &c->requests.items[i];
                json_t *res = json_object_get(obj, "resources");
                int line = field_line(d, res ? json_object_get(res, "requests") : NULL, req->name);
                char suffix[RESOURCE_PATH_MAX], rq[POD_QUANTITY_STR_MAX], lq[POD_QUANTITY_STR_MAX];
                bool is_cpu = strcmp(req->name, "cpu") == 0;
                PodQuantity lim;
                bool has_lim = pod_resource_get(&c->limits, req->name, &lim);

                r = resource_path(d, line, "requests", req->name, suffix);
                if (r < 0)
                        return r;
                if (is_extended_resource(req->name) || strncmp(req->name, "hugepages-", 10) == 0) {
                        if (req->q.milli != 0)
                                return pod_dec_fail(d, line, suffix, "Invalid value: \"%s\": must be an integer",
                                                    pod_quantity_format(req->q, true, rq));
                        if (is_extended_resource(req->name) && !has_lim)
                                return pod_dec_fail(d, line, ".resources.limits",
                                                    "Required value: Limit must be set for non overcommitable "
                                                    "resources");
                        if (has_lim && pod_quantity_cmp(req->q, lim) != 0 && is_extended_resource(req->name))
                                return pod_dec_fail(d, line, suffix,
                                                    "Invalid value: \"%s\": must be equal to %s limit of %s",
                                                    pod_quantity_format(req->q, false, rq), req->name,
                                                    pod_quantity_format(lim, false, lq));
                }
                if (has_lim && pod_quantity_cmp(req->q, lim) > 0)
                        return pod_dec_fail(d, line, suffix,
                                            "Invalid value: \"%s\": must be less than or equal to %s limit of %s",
                                            pod_quantity_format(req->q, is_cpu, rq), req->name,
                                            pod_quantity_format(lim, is_cpu, lq));
        }
        return 0;
}

static int container_common(PodDec *d, json_t *obj, PodContainer *c) {
        int r;

        if (!pod_dns1123_label(c->name))
                return pod_dec_fail(d, field_line(d, obj, "name"), ".name",
                                    "Invalid value: \"%s\": a lowercase RFC 1123 label must consist of lower case "
                                    "alphanumeric characters or '-', and must start and end with an alphanumeric "
                                    "character",
                                    c->name);
        if (!c->image || !*c->image)
                return pod_dec_fail(d, 0, ".image", "Required value");
        if (!c->image_pull_policy) {
                /* Always for :latest (digest or not) or an untagged, undigested image (ParseImageName) */
                const char *at = strchr(c->image, '@');
                size_t name_len = at ? (size_t) (at - c->image) : strlen(c->image);
                const char *slash = memrchr(c->image, '/', name_len);
                const char *from = slash ? slash : c->image;
                const char *tag = memchr(from, ':', name_len - (size_t) (from - c->image));
                bool latest = tag ? name_len - (size_t) (tag - c->image) == 7 && strncmp(tag, ":latest", 7) == 0 : !at;

                c->image_pull_policy = strdup(latest ? "Always" : "IfNotPresent");
                if (!c->image_pull_policy)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
        }
        r = container_resources(d, obj, c);
        if (r < 0)
                return r;
        return 0;
}

static int container_post(PodDec *d, json_t *obj, void *base) {
        PodContainer *c = base;

        if (c->restart_policy)
                return pod_dec_fail(d, field_line(d, obj, "restartPolicy"), ".restartPolicy",
                                    "Forbidden: may not be set for non-init containers");
        return container_common(d, obj, c);
}

static int init_container_post(PodDec *d, json_t *obj, void *base) {
        return container_common(d, obj, base);
}

static int requirement_post(PodDec *d, json_t *obj, void *base) {
        PodNodeSelectorRequirement *r = base;
        int line = field_line(d, obj, "values");

        if (strcmp(r->op, "In") == 0 || strcmp(r->op, "NotIn") == 0) {
                if (r->values.n == 0)
                        return pod_dec_fail(d, line, ".values",
                                            "Required value: must be specified when `operator` is 'In' or 'NotIn'");
        } else if (strcmp(r->op, "Exists") == 0 || strcmp(r->op, "DoesNotExist") == 0) {
                if (r->values.n != 0)
                        return pod_dec_fail(d, line, ".values",
                                            "Forbidden: may not be specified when `operator` is 'Exists' or "
                                            "'DoesNotExist'");
        } else {
                int64_t dummy;
                char *end;

                if (r->values.n != 1)
                        return pod_dec_fail(d, line, ".values",
                                            "Required value: must be specified single value when `operator` is 'Lt' "
                                            "or 'Gt'");
                errno = 0;
                dummy = strtoll(r->values.items[0], &end, 10);
                (void) dummy;
                if (errno != 0 || end == r->values.items[0] || *end)
                        return pod_dec_fail(d, line, ".values[0]", "Invalid value: \"%s\": must be an integer",
                                            r->values.items[0]);
        }
        return 0;
}

static int toleration_post(PodDec *d, json_t *obj, void *base) {
        PodToleration *t = base;

        if (!t->op) {
                t->op = strdup("Equal");
                if (!t->op)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
        }
        if (strcmp(t->op, "Exists") == 0 && t->value && *t->value)
                return pod_dec_fail(d, field_line(d, obj, "value"), ".operator",
                                    "Invalid value: \"%s\": value must be empty when `operator` is 'Exists'", t->value);
        if (strcmp(t->op, "Equal") == 0 && (!t->key || !*t->key))
                return pod_dec_fail(d, field_line(d, obj, "operator"), ".operator",
                                    "Invalid value: \"Equal\": operator must be Exists when `key` is empty, which "
                                    "means \"match all values and all keys\"");
        if (t->toleration_seconds_set && (!t->effect || strcmp(t->effect, "NoExecute") != 0))
                return pod_dec_fail(d, field_line(d, obj, "tolerationSeconds"), ".effect",
                                    "Invalid value: \"%s\": effect must be 'NoExecute' when `tolerationSeconds` is set",
                                    t->effect ? t->effect : "");
        return 0;
}

static int metadata_post(PodDec *d, json_t *obj, void *base) {
        Pod *pod = base;
        json_t *md = obj;

        if (!pod_dns1123_subdomain(pod->name))
                return pod_dec_fail(d, field_line(d, md, "name"), ".name",
                                    "Invalid value: \"%s\": a lowercase RFC 1123 subdomain must consist of lower case "
                                    "alphanumeric characters, '-' or '.', and must start and end with an "
                                    "alphanumeric character",
                                    pod->name);
        if (pod->namespace_ && *pod->namespace_ && !pod_dns1123_label(pod->namespace_))
                return pod_dec_fail(d, field_line(d, md, "namespace"), ".namespace",
                                    "Invalid value: \"%s\": a lowercase RFC 1123 label must consist of lower case "
                                    "alphanumeric characters or '-', and must start and end with an alphanumeric "
                                    "character",
                                    pod->namespace_);
        return 0;
}

/* ---- entry points ------------------------------------------------------- */

static int decode_tree(const PodTree *tree, Pod **ret, CubError *err) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        PodDec d = { .tree = tree, .err = err };
        int r;

        pod = calloc(1, sizeof(Pod));
        if (!pod)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = pod_dec_fields(&d, tree->root, pod, pod_fields, NULL);
        if (r < 0)
                return r;
        /* apiVersion/kind were decoded into uid for checking only */
        free(pod->uid);
        pod->uid = NULL;
        {
                json_t *md = json_object_get(tree->root, "metadata");
                json_t *u = md ? json_object_get(md, "uid") : NULL;

                if (json_is_string(u) && *json_string_value(u)) {
                        pod->uid = strdup(json_string_value(u));
                        if (!pod->uid)
                                return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        r = pod_default_and_validate(&d, tree->root, pod);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}

int pod_decode(const char *buf, size_t len, const char *source, PodFormat fmt, Pod **ret, CubError *err) {
        PodTree tree;
        int r;

        r = pod_tree_load(buf, len, source, fmt, &tree, err);
        if (r < 0)
                return r;
        r = decode_tree(&tree, ret, err);
        pod_tree_done(&tree);
        return r;
}

int pod_decode_static(const char *buf, size_t len, const char *source, PodFormat fmt, const char *node_name,
                      PodSourceKind kind, const char *uid_source, Pod **ret, CubError *err) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_free_ char *canonical = NULL;
        PodTree tree;
        int r;

        r = pod_tree_load(buf, len, source, fmt, &tree, err);
        if (r < 0)
                return r;
        r = decode_tree(&tree, &pod, err);
        if (r >= 0) {
                canonical = json_dumps(tree.root, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
                if (!canonical)
                        r = cub_err_set(err, ENOMEM, "%s: out of memory", source);
        }
        pod_tree_done(&tree);
        if (r < 0)
                return r;
        r = pod_apply_static(pod, canonical, node_name, kind, uid_source ? uid_source : source, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}

int pod_load_file(const char *path, Pod **ret, CubError *err) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = cub_read_file(path, POD_MANIFEST_MAX, &buf, &len, err);
        if (r < 0)
                return r;
        return pod_decode(buf, len, path, POD_FORMAT_AUTO, ret, err);
}
