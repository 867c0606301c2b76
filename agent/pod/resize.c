/* SPDX-License-Identifier: Apache-2.0 */
/* In-place resize, the manifest's part: the identity without resizable
 * resources, what a resize changes, and resizePolicy (validateResizePolicy). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"
#include "resize.h"

static const char *const resized[] = { "cpu", "memory" };

static bool json_sidecar(const json_t *c) {
        const char *rp = json_string_value(json_object_get(c, "restartPolicy"));

        return rp && strcmp(rp, "Always") == 0;
}

void pod_resize_mask_spec(json_t *spec) {
        static const char *const lists[] = { "containers", "initContainers" };
        const json_t *pl = json_object_get(spec, "resources");

        if (json_object_size(json_object_get(pl, "requests")) > 0 ||
            json_object_size(json_object_get(pl, "limits")) > 0)
                return;
        for (size_t l = 0; l < 2; l++) {
                json_t *cs = json_object_get(spec, lists[l]), *c;
                size_t i;

                json_array_foreach(cs, i, c) {
                        json_t *res = json_object_get(c, "resources");

                        if (l == 1 && !json_sidecar(c))
                                continue;
                        for (size_t k = 0; k < 2; k++) {
                                json_t *m = json_object_get(res, k ? "limits" : "requests");

                                (void) json_object_del(m, "cpu");
                                (void) json_object_del(m, "memory");
                                if (json_is_object(m) && json_object_size(m) == 0)
                                        (void) json_object_del(res, k ? "limits" : "requests");
                        }
                        if (json_is_object(res) && json_object_size(res) == 0)
                                (void) json_object_del(c, "resources");
                }
        }
}

char *pod_resize_spec_text(const json_t *spec) {
        json_t *c = json_deep_copy(spec);
        char *ret;

        if (!c)
                return NULL;
        pod_resize_mask_spec(c);
        (void) json_object_del(c, "activeDeadlineSeconds");
        (void) json_object_del(c, "ephemeralContainers"); /* added while the pod runs (kubectl debug) */
        ret = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(c);
        return ret;
}

char *pod_resize_identity(const json_t *root, const Pod *pod) {
        json_t *c = json_deep_copy(root);
        char *plain = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII), *masked = NULL, *ret;

        if (!c || !plain) {
                json_decref(c);
                free(plain);
                return NULL;
        }
        pod_resize_mask_spec(json_object_get(c, "spec"));
        masked = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
        json_decref(c);
        if (!masked || strcmp(masked, plain) == 0) {
                free(masked);
                return plain;
        }
        free(plain);
        if (asprintf(&ret, "%s\nqos=%s", masked, pod_qos_to_string(pod_qos_class(pod))) < 0)
                ret = NULL;
        free(masked);
        return ret;
}

static bool same(const PodResourceList *a, const PodResourceList *b, const char *name) {
        CubQuantity qa, qb;
        bool ha = pod_resource_get(a, name, &qa), hb = pod_resource_get(b, name, &qb);

        return ha == hb && (!ha || cub_quantity_cmp(qa, qb) == 0);
}

static bool same_others(const PodResourceList *a, const PodResourceList *b) {
        for (int pass = 0; pass < 2; pass++) {
                const PodResourceList *x = pass ? b : a, *y = pass ? a : b;

                for (size_t i = 0; i < x->n; i++)
                        if (strcmp(x->items[i].name, "cpu") != 0 && strcmp(x->items[i].name, "memory") != 0 &&
                            !same(x, y, x->items[i].name))
                                return false;
        }
        return true;
}

int pod_resize_compare(const Pod *cur, const Pod *want, PodResizeChange *ret, bool *ret_any, CubError *err) {
        size_t n = cur->n_init_containers + cur->n_containers;

        *ret_any = false;
        if (cur->n_init_containers != want->n_init_containers || cur->n_containers != want->n_containers)
                return cub_err_set(err, EINVAL, "the containers changed");
        if (pod_level_resources_set(cur) || pod_level_resources_set(want))
                return cub_err_set(err, EINVAL, "pods with pod-level resources cannot be resized");
        for (size_t k = 0; k < n; k++) {
                bool init;
                const PodContainer *a = pod_container_at(cur, k, &init), *b = pod_container_at(want, k, NULL);
                PodResizeChange *c = &ret[k];
                CubQuantity la, lb;
                bool ha, hb;

                *c = (PodResizeChange){};
                if (strcmp(a->name, b->name) != 0)
                        return cub_err_set(err, EINVAL, "container %zu is '%s', was '%s'", k, b->name, a->name);
                if (!same_others(&a->requests, &b->requests) || !same_others(&a->limits, &b->limits))
                        return cub_err_set(err, EINVAL, "container '%s': only cpu and memory resources are mutable",
                                           a->name);
                c->cpu = !same(&a->requests, &b->requests, "cpu") || !same(&a->limits, &b->limits, "cpu");
                c->memory = !same(&a->requests, &b->requests, "memory") || !same(&a->limits, &b->limits, "memory");
                if ((c->cpu || c->memory) && init && !pod_container_is_sidecar(a))
                        return cub_err_set(err, EINVAL, "init container '%s': resources are immutable", a->name);
                c->restart = (c->cpu && a->resize_restart_cpu) || (c->memory && a->resize_restart_memory);
                ha = pod_resource_get(&a->limits, "memory", &la);
                hb = pod_resource_get(&b->limits, "memory", &lb);
                c->memory_limit_down = hb && (!ha || cub_quantity_cmp(lb, la) < 0);
                *ret_any = *ret_any || c->cpu || c->memory;
        }
        return 0;
}

json_t *pod_resize_container_json(const PodContainer *c) {
        json_t *res = json_object(), *o = json_pack("{s:s,s:o}", "name", c->name, "resources", res);

        /* limits first, as kubelet's ResourceRequirements marshals */
        for (size_t k = 0; o && k < 2; k++) {
                const PodResourceList *l = k ? &c->requests : &c->limits;
                json_t *m = NULL;

                for (size_t i = 0; i < 2; i++) {
                        char buf[CUB_QUANTITY_STR_MAX];
                        CubQuantity q;

                        if (!pod_resource_get(l, resized[i], &q))
                                continue;
                        if (!m)
                                m = json_object();
                        json_object_set_new(m, resized[i], json_string(cub_quantity_format(q, i == 0, buf)));
                }
                if (m)
                        json_object_set_new(res, k ? "requests" : "limits", m);
        }
        return o;
}

static int set_resource(PodResourceList *l, const char *name, const char *value, CubError *err) {
        CubQuantity q;
        PodResource *items;
        size_t i;
        int r;

        for (i = 0; i < l->n && strcmp(l->items[i].name, name) != 0; i++)
                ;
        if (!value) {
                if (i < l->n) {
                        free(l->items[i].name);
                        memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof(PodResource));
                        l->n--;
                }
                return 0;
        }
        r = cub_quantity_parse(value, &q, err);
        if (r < 0)
                return r;
        if (i < l->n) {
                l->items[i].q = q;
                return 0;
        }
        items = realloc(l->items, (l->n + 1) * sizeof(PodResource));
        if (!items)
                return cub_err_set(err, ENOMEM, "out of memory");
        l->items = items;
        l->items[l->n] = (PodResource){ .name = strdup(name), .q = q };
        if (!l->items[l->n].name)
                return cub_err_set(err, ENOMEM, "out of memory");
        l->n++;
        return 0;
}

int pod_resize_apply(Pod *pod, const json_t *list, CubError *err) {
        const json_t *e;
        size_t i;

        json_array_foreach(list, i, e) {
                const char *name = json_string_value(json_object_get(e, "name"));
                const json_t *res = json_object_get(e, "resources");

                for (size_t k = 0; name && k < pod->n_init_containers + pod->n_containers; k++) {
                        PodContainer *c = k < pod->n_init_containers ? &pod->init_containers[k]
                                                                     : &pod->containers[k - pod->n_init_containers];

                        if (strcmp(c->name, name) != 0)
                                continue;
                        for (size_t j = 0; j < 2; j++)
                                for (size_t x = 0; x < 2; x++) {
                                        const json_t *m = json_object_get(res, x ? "limits" : "requests");
                                        int r = set_resource(x ? &c->limits : &c->requests, resized[j],
                                                             json_string_value(json_object_get(m, resized[j])), err);

                                        if (r < 0)
                                                return cub_err_wrap(err, "container '%s'", name);
                                }
                }
        }
        return 0;
}

/* ---- resizePolicy --------------------------------------------------------- */

static int policy_one(PodDec *d, json_t *e, PodContainer *c, bool never, bool seen[2]) {
        const char *rn = json_string_value(json_object_get(e, "resourceName"));
        const char *rp = json_string_value(json_object_get(e, "restartPolicy"));
        int line = pod_tree_line(d->tree, e), r = -1;

        if (!rn || !*rn)
                return pod_dec_fail(d, line, ".resourceName", "Required value");
        for (int i = 0; i < 2; i++)
                if (strcmp(rn, resized[i]) == 0)
                        r = i;
        if (r < 0)
                return pod_dec_fail(d, line, ".resourceName",
                                    "Unsupported value: \"%s\": supported values: \"cpu\", \"memory\"", rn);
        if (seen[r])
                return pod_dec_fail(d, line, "", "Duplicate value: \"%s\"", rn);
        seen[r] = true;
        if (!rp || !*rp)
                return pod_dec_fail(d, line, ".restartPolicy", "Required value");
        if (strcmp(rp, "NotRequired") != 0 && strcmp(rp, "RestartContainer") != 0)
                return pod_dec_fail(d, line, ".restartPolicy",
                                    "Unsupported value: \"%s\": supported values: \"NotRequired\", "
                                    "\"RestartContainer\"",
                                    rp);
        if (never && strcmp(rp, "NotRequired") != 0)
                return pod_dec_fail(d, line, ".restartPolicy",
                                    "Invalid value: \"%s\": must be 'NotRequired' when `restartPolicy` is 'Never'", rp);
        if (r == 0)
                c->resize_restart_cpu = strcmp(rp, "RestartContainer") == 0;
        else
                c->resize_restart_memory = strcmp(rp, "RestartContainer") == 0;
        return 0;
}

int pod_resize_policy_decode(const PodTree *t, json_t *root, const char *prefix, Pod *pod, CubError *err) {
        static const char *const lists[] = { "initContainers", "containers" };
        PodDec d = { .tree = t, .err = err };
        json_t *spec = json_object_get(root, "spec");
        bool never = pod->restart_policy && strcmp(pod->restart_policy, "Never") == 0;

        for (size_t l = 0; l < 2; l++) {
                json_t *cs = json_object_get(spec, lists[l]), *c;
                size_t i;

                json_array_foreach(cs, i, c) {
                        json_t *pl = json_object_get(c, "resizePolicy"), *e;
                        PodContainer *pc = l ? &pod->containers[i] : &pod->init_containers[i];
                        bool seen[2] = {};
                        size_t j;

                        if (!json_is_array(pl) || i >= (l ? pod->n_containers : pod->n_init_containers))
                                continue;
                        json_array_foreach(pl, j, e) {
                                int r;

                                d.path_len =
                                        (size_t) snprintf(d.path, sizeof(d.path), "%s%sspec.%s[%zu].resizePolicy[%zu]",
                                                          prefix ? prefix : "", prefix ? "." : "", lists[l], i, j);
                                r = policy_one(&d, e, pc, never, seen);
                                if (r < 0)
                                        return r;
                        }
                }
        }
        return 0;
}
