/* SPDX-License-Identifier: Apache-2.0 */
/* The v1 Pod decoding tables, the checks that run as each object is
 * decoded, and the destructors. The decoder reads the fields cubelet uses;
 * fields.c then checks every field the manifest sets against the field
 * table (refused, warned, unknown). The Container tables and checks are in
 * decode-containers.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/fileio.h"
#include "pod-internal.h"

#define POD_MANIFEST_MAX (1024 * 1024)

/* ---- destructors -------------------------------------------------------- */

void pod_resource_list_done(PodResourceList *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i].name);
        free(l->items);
        *l = (PodResourceList){};
}

/* the containers' volume mounts: decoded beside the tables */
static void containers_volumes_done(PodContainer *c, size_t n) {
        for (size_t i = 0; c && i < n; i++)
                pod_container_volumes_done(&c[i]);
}

/* ---- tables ------------------------------------------------------------- */

static const char *const restart_policies[] = { "Always", "OnFailure", "Never", NULL };
static const char *const preemption_policies[] = { "PreemptLowerPriority", "Never", NULL };
static const char *const selector_ops[] = { "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", NULL };
static const char *const toleration_ops[] = { "Exists", "Equal", NULL };
static const char *const taint_effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute", NULL };
static const char *const api_versions[] = { "v1", NULL };
static const char *const pod_kinds[] = { "Pod", NULL };

static int requirement_post(PodDec *d, json_t *obj, void *base);
static int toleration_post(PodDec *d, json_t *obj, void *base);
static int metadata_post(PodDec *d, json_t *obj, void *base);

static const PodField requirement_fields[] = {
        POD_STR_REQ("key", PodNodeSelectorRequirement, key),
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
        POD_STR("key", PodToleration, key),
        POD_ENUM("operator", PodToleration, op, toleration_ops),
        POD_STR("value", PodToleration, value),
        POD_ENUM("effect", PodToleration, effect, taint_effects),
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
          .sub = pod_seccomp_fields,
          .post = pod_seccomp_post },
        {},
};

/* imagePullSecrets: [{name}], the names kept (kubelet skips an empty one) */
static int dec_pull_secrets(PodDec *d, json_t *v, void *dst, const PodField *f) {
        PodStrv *l = dst;
        json_t *e;
        size_t i;

        (void) f;
        if (!json_is_array(v))
                return json_is_null(v) ? 0
                                       : pod_dec_fail(d, 0, NULL, "Invalid type: expected array, got %s",
                                                      pod_json_type_name(v));
        json_array_foreach(v, i, e) {
                const char *name = json_string_value(json_object_get(e, "name"));
                char **more;

                if (!name || !*name)
                        continue;
                more = realloc(l->items, (l->n + 2) * sizeof(char *));
                if (!more)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
                l->items = more;
                if (!(more[l->n] = strdup(name)))
                        return cub_err_set(d->err, ENOMEM, "out of memory");
                more[++l->n] = NULL;
        }
        return 0;
}

static const PodField spec_fields[] = {
        { .name = "initContainers",
          .decode = pod_dec_object_array,
          .offset = offsetof(Pod, init_containers),
          .count_offset = offsetof(Pod, n_init_containers),
          .elem_size = sizeof(PodContainer),
          .sub = pod_init_container_fields,
          .post = pod_init_container_post },
        { .name = "containers",
          .decode = pod_dec_object_array,
          .offset = offsetof(Pod, containers),
          .count_offset = offsetof(Pod, n_containers),
          .elem_size = sizeof(PodContainer),
          .sub = pod_container_fields,
          .post = pod_container_post,
          .flags = POD_FIELD_REQUIRED },
        /* an API pod's (the field table refuses them in a static pod) */
        { .name = "ephemeralContainers",
          .decode = pod_dec_object_array,
          .offset = offsetof(Pod, ephemeral_containers),
          .count_offset = offsetof(Pod, n_ephemeral_containers),
          .elem_size = sizeof(PodContainer),
          .sub = pod_ephemeral_container_fields,
          .post = pod_ephemeral_container_post },
        POD_ENUM("restartPolicy", Pod, restart_policy, restart_policies),
        { .name = "terminationGracePeriodSeconds",
          .decode = pod_dec_int64,
          .offset = offsetof(Pod, termination_grace_period_seconds),
          .set_offset = offsetof(Pod, termination_grace_period_seconds_set) },
        { .name = "activeDeadlineSeconds", .decode = pod_dec_int64, .offset = offsetof(Pod, active_deadline_seconds) },
        POD_READINESS_GATES_FIELD,
        { .name = "priority",
          .decode = pod_dec_int32,
          .offset = offsetof(Pod, priority),
          .set_offset = offsetof(Pod, priority_set) },
        POD_STR("priorityClassName", Pod, priority_class_name),
        POD_ENUM("preemptionPolicy", Pod, preemption_policy, preemption_policies),
        POD_STR("nodeName", Pod, node_name),
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
        POD_BOOL_SET("enableServiceLinks", Pod, enable_service_links, enable_service_links_set),
        POD_STR("serviceAccountName", Pod, service_account_name),
        POD_STR("serviceAccount", Pod, service_account),
        /* pods of the API server; the field table refuses them in a static pod */
        { .name = "imagePullSecrets",
          .decode = dec_pull_secrets,
          .offset = offsetof(Pod, image_pull_secrets),
          .done = pod_field_strv_done },
        { .name = "overhead", .decode = pod_dec_resources, .offset = offsetof(Pod, overhead) },
        { .name = "resources",
          .decode = pod_dec_inline,
          .sub = pod_level_resources_fields,
          .set_offset = offsetof(Pod, resources_set) },
        { .name = "securityContext", .decode = pod_dec_inline, .sub = pod_security_fields },
        POD_SECURITY_POD_FIELD,
        POD_SECURITY_SPEC_FIELDS,
        POD_NETWORK_FIELDS, /* network */
        {},
};

static const PodField metadata_fields[] = {
        POD_STR_REQ("name", Pod, name),
        POD_STR("namespace", Pod, namespace_),
        POD_STR("uid", Pod, uid),
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

Pod *pod_free(Pod *pod) {
        if (!pod)
                return NULL;
        containers_volumes_done(pod->containers, pod->n_containers);
        containers_volumes_done(pod->init_containers, pod->n_init_containers);
        containers_volumes_done(pod->ephemeral_containers, pod->n_ephemeral_containers);
        pod_volumes_done(pod);
        /* everything the tables decode, their defaults included */
        pod_fields_done(pod_fields, pod);
        /* what no table decodes: the static pod's hash, the API source's
         * status and gates, the field walker's notes */
        free(pod->config_hash);
        pod_strv_done(&pod->gate_status);
        free(pod->api_phase), free(pod->api_reason), free(pod->api_message);
        pod_field_notes_done(&pod->refused);
        pod_field_notes_done(&pod->warnings);
        free(pod);
        return NULL;
}

/* ---- checks run as objects are decoded ---------------------------------- */

static int requirement_post(PodDec *d, json_t *obj, void *base) {
        PodNodeSelectorRequirement *r = base;
        int line = pod_dec_field_line(d, obj, "values");

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
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "value"), ".operator",
                                    "Invalid value: \"%s\": value must be empty when `operator` is 'Exists'", t->value);
        if (strcmp(t->op, "Equal") == 0 && (!t->key || !*t->key))
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "operator"), ".operator",
                                    "Invalid value: \"Equal\": operator must be Exists when `key` is empty, which "
                                    "means \"match all values and all keys\"");
        if (t->toleration_seconds_set && (!t->effect || strcmp(t->effect, "NoExecute") != 0))
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "tolerationSeconds"), ".effect",
                                    "Invalid value: \"%s\": effect must be 'NoExecute' when `tolerationSeconds` is set",
                                    t->effect ? t->effect : "");
        return 0;
}

static int metadata_post(PodDec *d, json_t *obj, void *base) {
        Pod *pod = base;

        if (!pod_dns1123_subdomain(pod->name))
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "name"), ".name", "Invalid value: \"%s\": %s",
                                    pod->name,
                                    pod->name && strlen(pod->name) > 253
                                            ? "must be no more than 253 characters"
                                            : "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                              "characters, '-' or '.', and must start and end with an alphanumeric "
                                              "character");
        if (pod->namespace_ && *pod->namespace_ && !pod_dns1123_label(pod->namespace_))
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "namespace"), ".namespace",
                                    "Invalid value: \"%s\": a lowercase RFC 1123 label must consist of lower case "
                                    "alphanumeric characters or '-', and must start and end with an alphanumeric "
                                    "character",
                                    pod->namespace_);
        return 0;
}

/* ---- entry points ------------------------------------------------------- */

/* Decodes the pod at root (the tree's root, or an item of a PodList whose
 * field paths start with prefix). */
static int decode_tree(const PodTree *tree, json_t *root, const char *prefix, bool api, Pod **ret, CubError *err) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        PodDec d = { .tree = tree, .err = err, .api = api };
        int r;

        if (prefix)
                d.path_len = (size_t) snprintf(d.path, sizeof(d.path), "%s", prefix);
        d.line = pod_tree_line(tree, root);
        pod = calloc(1, sizeof(Pod));
        if (!pod)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = pod_dec_fields(&d, root, pod, pod_fields, NULL);
        if (r < 0)
                return r;
        /* apiVersion/kind were decoded into uid for checking only */
        free(pod->uid);
        pod->uid = NULL;
        {
                json_t *md = json_object_get(root, "metadata");
                json_t *u = md ? json_object_get(md, "uid") : NULL;

                if (json_is_string(u) && *json_string_value(u)) {
                        pod->uid = strdup(json_string_value(u));
                        if (!pod->uid)
                                return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        r = pod_decode_volumes(&d, root, pod);
        if (r < 0)
                return r;
        r = pod_default_and_validate(&d, root, pod);
        if (r < 0)
                return r;
        /* a valid pod: now every field it sets must be one cubelet knows */
        r = pod_fields_check(tree, root, prefix, api, pod, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}

static int decode(const char *buf, size_t len, const char *source, PodFormat fmt, bool api, Pod **ret, CubError *err) {
        PodTree tree;
        int r;

        r = pod_tree_load(buf, len, source, fmt, &tree, err);
        if (r < 0)
                return r;
        r = decode_tree(&tree, tree.root, NULL, api, ret, err);
        pod_tree_done(&tree);
        return r;
}

int pod_decode(const char *buf, size_t len, const char *source, PodFormat fmt, Pod **ret, CubError *err) {
        return decode(buf, len, source, fmt, false, ret, err);
}

int pod_decode_api(const char *buf, size_t len, const char *source, Pod **ret, CubError *err) {
        return decode(buf, len, source, POD_FORMAT_JSON, true, ret, err);
}

static int decode_static_at(const PodTree *tree, json_t *root, const char *prefix, const char *source,
                            const char *node_name, PodSourceKind kind, const char *uid_source, Pod **ret,
                            CubError *err) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_free_ char *canonical = NULL;
        int r;

        r = decode_tree(tree, root, prefix, false, &pod, err);
        if (r < 0)
                return r;
        canonical = pod_resize_identity(root, pod);
        if (!canonical)
                return cub_err_set(err, ENOMEM, "%s: out of memory", source);
        r = pod_apply_static(pod, canonical, node_name, kind, uid_source ? uid_source : source, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}

int pod_decode_static(const char *buf, size_t len, const char *source, PodFormat fmt, const char *node_name,
                      PodSourceKind kind, const char *uid_source, Pod **ret, CubError *err) {
        PodTree tree;
        int r;

        r = pod_tree_load(buf, len, source, fmt, &tree, err);
        if (r < 0)
                return r;
        r = decode_static_at(&tree, tree.root, NULL, source, node_name, kind, uid_source, ret, err);
        pod_tree_done(&tree);
        return r;
}

void pod_list_free(Pod **pods, size_t n) {
        for (size_t i = 0; pods && i < n; i++)
                pod_free(pods[i]);
        free(pods);
}

/* The items of a v1 PodList: each is a v1 Pod (apiVersion and kind are the
 * list's when absent). */
static int decode_list(const PodTree *tree, const char *source, const char *node_name, PodSourceKind kind,
                       const char *uid_source, Pod ***ret, size_t *ret_n, CubError *err) {
        json_t *items = json_object_get(tree->root, "items"), *av = json_object_get(tree->root, "apiVersion"), *it;
        Pod **pods;
        size_t i, n = 0;
        int r = 0;

        if (!json_is_string(av) || strcmp(json_string_value(av), "v1") != 0)
                return cub_err_set(err, EINVAL, "%s: apiVersion: Unsupported value: a PodList must be \"v1\"", source);
        if (items && !json_is_null(items) && !json_is_array(items))
                return cub_err_set(err, EINVAL, "%s: items: Invalid type: expected array, got %s", source,
                                   pod_json_type_name(items));
        pods = calloc(json_array_size(items) + 1, sizeof(Pod *));
        if (!pods)
                return cub_err_set(err, ENOMEM, "out of memory");
        json_array_foreach(items, i, it) {
                char prefix[32];

                (void) snprintf(prefix, sizeof(prefix), "items[%zu]", i);
                if (json_is_object(it) &&
                    ((!json_object_get(it, "apiVersion") &&
                      json_object_set_new(it, "apiVersion", json_string("v1")) < 0) ||
                     (!json_object_get(it, "kind") && json_object_set_new(it, "kind", json_string("Pod")) < 0))) {
                        r = cub_err_set(err, ENOMEM, "out of memory");
                        break;
                }
                if (!json_is_object(it)) {
                        r = cub_err_set(err, EINVAL, "%s: %s: Invalid type: expected object, got %s", source, prefix,
                                        pod_json_type_name(it));
                        break;
                }
                r = decode_static_at(tree, it, prefix, source, node_name, kind, uid_source, &pods[n], err);
                if (r < 0)
                        break;
                n++;
        }
        if (r < 0) {
                pod_list_free(pods, n);
                return r;
        }
        *ret = pods;
        *ret_n = n;
        return 0;
}

int pod_decode_static_list(const char *buf, size_t len, const char *source, PodFormat fmt, const char *node_name,
                           PodSourceKind kind, const char *uid_source, Pod ***ret, size_t *ret_n, CubError *err) {
        json_t *k;
        PodTree tree;
        int r;

        r = pod_tree_load(buf, len, source, fmt, &tree, err);
        if (r < 0)
                return r;
        k = json_is_object(tree.root) ? json_object_get(tree.root, "kind") : NULL;
        if (json_is_string(k) && strcmp(json_string_value(k), "PodList") == 0)
                r = decode_list(&tree, source, node_name, kind, uid_source, ret, ret_n, err);
        else {
                Pod **one = calloc(2, sizeof(Pod *));

                r = one ? decode_static_at(&tree, tree.root, NULL, source, node_name, kind, uid_source, &one[0], err)
                        : cub_err_set(err, ENOMEM, "out of memory");
                if (r < 0)
                        free(one);
                else {
                        *ret = one;
                        *ret_n = 1;
                }
        }
        pod_tree_done(&tree);
        return r;
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
