/* SPDX-License-Identifier: Apache-2.0 */
/* Pod-level resources (spec.resources, KEP-2837, beta and on by default in
 * 1.34): the decoding table, the API server's defaulting
 * (pkg/apis/core/v1/defaults.go SetDefaults_Pod: defaultHugePagePodLimits,
 * then defaultPodRequests, after the containers' requests are defaulted)
 * and validation (pkg/apis/core/validation/validation.go
 * validatePodResources: validatePodResourceRequirements, then
 * validatePodResourceConsistency), with the API server's paths and words.
 * spec.resources.claims is refused by the field table. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pod-internal.h"

const PodField pod_level_resources_fields[] = {
        { .name = "limits", .decode = pod_dec_resources, .offset = offsetof(Pod, resources_limits) },
        { .name = "requests", .decode = pod_dec_resources, .offset = offsetof(Pod, resources_requests) },
        {},
};

/* ---- names ------------------------------------------------------------------ */

static bool is_hugepages(const char *name) {
        return strncmp(name, "hugepages-", 10) == 0;
}

/* helper.IsOvercommitAllowed: a native resource (no domain, or one of
 * kubernetes.io) that is not hugepages */
static bool overcommit_allowed(const char *name) {
        return (!strchr(name, '/') || strstr(name, "kubernetes.io/")) && !is_hugepages(name);
}

/* helper.IsStandardResourceName (names without a '/') */
static bool standard_resource_name(const char *name) {
        static const char *const std[] = {
                "cpu",
                "memory",
                "ephemeral-storage",
                "requests.cpu",
                "requests.memory",
                "requests.ephemeral-storage",
                "limits.cpu",
                "limits.memory",
                "limits.ephemeral-storage",
                "pods",
                "resourcequotas",
                "services",
                "replicationcontrollers",
                "secrets",
                "configmaps",
                "persistentvolumeclaims",
                "storage",
                "requests.storage",
                "services.nodeports",
                "services.loadbalancers",
                NULL,
        };

        for (const char *const *s = std; *s; s++)
                if (strcmp(*s, name) == 0)
                        return true;
        return is_hugepages(name) || strncmp(name, "requests.hugepages-", 19) == 0;
}

/* helper.IsHugePageResourceValueDivisible: the page size of the name is a
 * positive whole number of bytes and divides the value */
static bool hugepages_divisible(const char *name, CubQuantity q) {
        CubQuantity size;
        CubError ignored = {};

        if (cub_quantity_parse(name + 10, &size, &ignored) < 0 || size.milli != 0 || size.units <= 0)
                return false;
        return cub_quantity_value(q) % size.units == 0;
}

/* ---- paths and lines ---------------------------------------------------------- */

#define PATH_MAX_LEN 512

/* ".spec.resources.<list>[<name>]", or ".spec.resources.<list>" for a name
 * too long to quote in a path */
static const char *key_path(char buf[static PATH_MAX_LEN], const char *list, const char *name) {
        int n = snprintf(buf, PATH_MAX_LEN, ".spec.resources.%s[%s]", list, name);

        if (n < 0 || n >= PATH_MAX_LEN)
                (void) snprintf(buf, PATH_MAX_LEN, ".spec.resources.%s", list);
        return buf;
}

/* the line of spec.resources.<list>[name] (YAML): its value's, else the
 * list's key or spec.resources' key (a defaulted value has none of its own) */
static int line_at(PodDec *d, json_t *root, const char *list, const char *name) {
        json_t *spec = json_object_get(root, "spec"), *res = json_object_get(spec, "resources");
        json_t *l = list ? json_object_get(res, list) : NULL;
        int line = 0;

        if (l && name)
                line = pod_tree_line(d->tree, json_object_get(l, name));
        if (line <= 0 && l)
                line = pod_tree_key_line(d->tree, res, list);
        if (line <= 0)
                line = pod_tree_key_line(d->tree, spec, "resources");
        return line;
}

static const char *fmt_q(const char *name, CubQuantity q, char buf[static CUB_QUANTITY_STR_MAX]) {
        return cub_quantity_format(q, strcmp(name, "cpu") == 0, buf);
}

/* ---- defaulting (SetDefaults_Pod, PodLevelResources on) ------------------------- */

/* defaultHugePagePodLimits: with spec.resources requests or limits set, a
 * hugepages limit of the containers' aggregate the pod-level lists do not
 * name becomes the pod-level limit (never when a pod-level request names
 * it). */
static int default_hugepage_limits(Pod *pod) {
        _cleanup_(pod_resource_list_done) PodResourceList aggr = {};
        int r;

        if (!pod->resources_set || (pod->resources_limits.n == 0 && pod->resources_requests.n == 0))
                return 0;
        r = pod_aggregate_containers(pod, /* limits= */ true, &aggr);
        for (size_t i = 0; r >= 0 && i < aggr.n; i++) {
                const char *name = aggr.items[i].name;

                if (!is_hugepages(name) || pod_resource_get(&pod->resources_requests, name, NULL) ||
                    pod_resource_get(&pod->resources_limits, name, NULL))
                        continue;
                r = pod_resource_list_set(&pod->resources_limits, name, aggr.items[i].q);
        }
        return r;
}

/* defaultPodRequests: with pod-level limits, an unset pod-level request of
 * cpu or memory is the containers' aggregate request when a container
 * requests it, and any other unset one (of a supported resource) is the
 * pod-level limit. */
static int default_requests(Pod *pod) {
        _cleanup_(pod_resource_list_done) PodResourceList aggr = {};
        int r;

        if (!pod->resources_set || pod->resources_limits.n == 0)
                return 0;
        r = pod_aggregate_containers(pod, /* limits= */ false, &aggr);
        for (size_t i = 0; r >= 0 && i < aggr.n; i++) {
                const char *name = aggr.items[i].name;

                if (pod_resource_get(&pod->resources_requests, name, NULL) || !pod_level_resource_supported(name) ||
                    !overcommit_allowed(name))
                        continue;
                r = pod_resource_list_set(&pod->resources_requests, name, aggr.items[i].q);
        }
        for (size_t i = 0; r >= 0 && i < pod->resources_limits.n; i++) {
                const PodResource *lim = &pod->resources_limits.items[i];

                if (pod_resource_get(&pod->resources_requests, lim->name, NULL) ||
                    !pod_level_resource_supported(lim->name))
                        continue;
                r = pod_resource_list_set(&pod->resources_requests, lim->name, lim->q);
        }
        return r;
}

/* ---- validatePodResourceRequirements ---------------------------------------------- */

/* validatePodResourceName */
static int check_name(PodDec *d, json_t *root, const char *list, const char *name) {
        char path[PATH_MAX_LEN];

        if (!strchr(name, '/') && !standard_resource_name(name))
                return pod_dec_fail(d, line_at(d, root, list, name), key_path(path, list, name),
                                    "Invalid value: \"%s\": must be a standard resource type or fully qualified", name);
        if (!pod_level_resource_supported(name))
                return pod_dec_fail(d, line_at(d, root, list, name), key_path(path, list, name),
                                    "Unsupported value: \"%s\": supported values: \"cpu\", \"hugepages-\", \"memory\"",
                                    name);
        return 0;
}

/* validateResourceQuantityHugePageValue (AllowIndivisibleHugePagesValues is
 * false for a new pod) */
static int check_hugepages(PodDec *d, json_t *root, const char *list, const PodResource *e) {
        char path[PATH_MAX_LEN], q[CUB_QUANTITY_STR_MAX];

        if (!is_hugepages(e->name) || hugepages_divisible(e->name, e->q))
                return 0;
        return pod_dec_fail(d, line_at(d, root, list, e->name), key_path(path, list, e->name),
                            "Invalid value: \"%s\": %s is not positive integer multiple of %s", fmt_q(e->name, e->q, q),
                            q, e->name);
}

static int validate_requirements(PodDec *d, json_t *root, const Pod *pod) {
        bool cpu_or_memory = false, hugepages = false;
        int r;

        for (size_t i = 0; i < pod->resources_limits.n; i++) {
                const PodResource *lim = &pod->resources_limits.items[i];

                r = check_name(d, root, "limits", lim->name);
                if (r >= 0)
                        r = check_hugepages(d, root, "limits", lim);
                if (r < 0)
                        return r;
                hugepages = hugepages || is_hugepages(lim->name);
                cpu_or_memory = cpu_or_memory || strcmp(lim->name, "cpu") == 0 || strcmp(lim->name, "memory") == 0;
        }
        for (size_t i = 0; i < pod->resources_requests.n; i++) {
                const PodResource *req = &pod->resources_requests.items[i];
                int line = line_at(d, root, "requests", req->name);
                char rq[CUB_QUANTITY_STR_MAX], lq[CUB_QUANTITY_STR_MAX];
                CubQuantity lim;

                r = check_name(d, root, "requests", req->name);
                if (r < 0)
                        return r;
                if (pod_resource_get(&pod->resources_limits, req->name, &lim)) {
                        /* not overcommitted: the request equals the limit */
                        if (!overcommit_allowed(req->name) && cub_quantity_cmp(req->q, lim) != 0)
                                return pod_dec_fail(d, line, ".spec.resources.requests",
                                                    "Invalid value: \"%s\": must be equal to %s limit of %s",
                                                    fmt_q(req->name, req->q, rq), req->name, fmt_q(req->name, lim, lq));
                        if (cub_quantity_cmp(req->q, lim) > 0)
                                return pod_dec_fail(
                                        d, line, ".spec.resources.requests",
                                        "Invalid value: \"%s\": must be less than or equal to %s limit of %s",
                                        fmt_q(req->name, req->q, rq), req->name, fmt_q(req->name, lim, lq));
                } else if (!overcommit_allowed(req->name))
                        return pod_dec_fail(d, line, ".spec.resources.limits",
                                            "Required value: Limit must be set for non overcommitable resources");
                r = check_hugepages(d, root, "requests", req);
                if (r < 0)
                        return r;
                hugepages = hugepages || is_hugepages(req->name);
                cpu_or_memory = cpu_or_memory || strcmp(req->name, "cpu") == 0 || strcmp(req->name, "memory") == 0;
        }
        if (hugepages && !cpu_or_memory)
                return pod_dec_fail(d, line_at(d, root, NULL, NULL), ".spec.resources",
                                    "Forbidden: HugePages require cpu or memory");
        return 0;
}

/* ---- validatePodResourceConsistency ---------------------------------------------- */

static int validate_consistency(PodDec *d, json_t *root, const Pod *pod) {
        _cleanup_(pod_resource_list_done) PodResourceList reqs = {}, lims = {};
        char path[PATH_MAX_LEN], a[CUB_QUANTITY_STR_MAX], b[CUB_QUANTITY_STR_MAX];
        CubQuantity p;
        int r;

        r = pod_aggregate_containers(pod, /* limits= */ false, &reqs);
        if (r >= 0)
                r = pod_aggregate_containers(pod, /* limits= */ true, &lims);
        if (r < 0)
                return cub_err_set(d->err, -r, "%s: spec.resources: %s", d->tree->source,
                                   r == -ERANGE ? "the containers' sum is out of range" : "out of memory");

        /* a pod-level request is at least the containers' aggregate request */
        for (size_t i = 0; i < reqs.n; i++) {
                const PodResource *c = &reqs.items[i];

                if (!pod_resource_get(&pod->resources_requests, c->name, &p) || cub_quantity_cmp(c->q, p) <= 0)
                        continue;
                return pod_dec_fail(d, line_at(d, root, "requests", c->name), key_path(path, "requests", c->name),
                                    "Invalid value: \"%s\": must be greater than or equal to aggregate container "
                                    "requests of %s",
                                    fmt_q(c->name, p, a), fmt_q(c->name, c->q, b));
        }
        /* hugepages are not overcommitted: a pod-level limit is at least the
         * containers' aggregate limit */
        for (size_t i = 0; i < lims.n; i++) {
                const PodResource *c = &lims.items[i];

                if (!is_hugepages(c->name) || !pod_resource_get(&pod->resources_limits, c->name, &p) ||
                    cub_quantity_cmp(c->q, p) <= 0)
                        continue;
                return pod_dec_fail(d, line_at(d, root, "limits", c->name), key_path(path, "limits", c->name),
                                    "Invalid value: \"%s\": must be greater than or equal to aggregate container "
                                    "limits of %s",
                                    fmt_q(c->name, p, a), fmt_q(c->name, c->q, b));
        }
        /* each app container's limit is at most the pod-level limit (the API
         * checks spec.containers only, under this odd path) */
        for (size_t i = 0; i < pod->n_containers; i++) {
                const PodContainer *c = &pod->containers[i];

                for (size_t k = 0; k < c->limits.n; k++) {
                        const PodResource *lim = &c->limits.items[k];
                        json_t *cj = json_array_get(json_object_get(json_object_get(root, "spec"), "containers"), i);
                        json_t *lj = json_object_get(json_object_get(cj, "resources"), "limits");
                        int n, line = pod_tree_line(d->tree, json_object_get(lj, lim->name));

                        if (!pod_resource_get(&pod->resources_limits, lim->name, &p) ||
                            cub_quantity_cmp(lim->q, p) <= 0)
                                continue;
                        n = snprintf(path, sizeof(path), ".spec.resources.containers[%zu][%s].limits", i, lim->name);
                        if (n < 0 || (size_t) n >= sizeof(path))
                                (void) snprintf(path, sizeof(path), ".spec.resources.containers[%zu]", i);
                        return pod_dec_fail(d, line > 0 ? line : line_at(d, root, "limits", lim->name), path,
                                            "Invalid value: \"%s\": must be less than or equal to pod limits of %s",
                                            fmt_q(lim->name, lim->q, a), fmt_q(lim->name, p, b));
                }
        }
        return 0;
}

int pod_level_resources_default_and_validate(PodDec *d, json_t *root, Pod *pod) {
        int r;

        if (!pod->resources_set)
                return 0;
        r = default_hugepage_limits(pod);
        if (r >= 0)
                r = default_requests(pod);
        if (r < 0)
                return cub_err_set(d->err, -r, "%s: spec.resources: %s", d->tree->source,
                                   r == -ERANGE ? "the containers' sum is out of range" : "out of memory");
        r = validate_requirements(d, root, pod);
        if (r < 0)
                return r;
        return validate_consistency(d, root, pod);
}
