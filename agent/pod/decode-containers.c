/* SPDX-License-Identifier: Apache-2.0 */
/* The v1 Container field tables (env, ports, resources, seccomp) and the
 * checks that run as each container is decoded: names, image pull policy
 * and the resource rules of ValidateResourceRequirements. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

/* ---- tables ------------------------------------------------------------- */

static const char *const pull_policies[] = { "Always", "IfNotPresent", "Never", NULL };
static const char *const message_policies[] = { "File", "FallbackToLogsOnError", NULL };
static const char *const protocols[] = { "TCP", "UDP", "SCTP", NULL };
static const char *const sidecar_policies[] = { "Always", NULL };
static const char *const seccomp_types[] = { "RuntimeDefault", "Unconfined", "Localhost", NULL };

static int env_post(PodDec *d, json_t *obj, void *base);
static int port_post(PodDec *d, json_t *obj, void *base);

const PodField pod_seccomp_fields[] = {
        { .name = "type",
          .decode = pod_dec_string,
          .offset = offsetof(PodSeccomp, type),
          .allowed = seccomp_types,
          .flags = POD_FIELD_REQUIRED },
        POD_STR("localhostProfile", PodSeccomp, localhost_profile),
        {},
};

static const PodField env_fields[] = {
        POD_STR_REQ("name", PodEnvVar, name),
        POD_STR("value", PodEnvVar, value),
        { .name = "valueFrom",
          .decode = pod_env_dec_value_from,
          .sub = pod_env_source_fields,
          .done = pod_env_value_from_done,
          .set_offset = offsetof(PodEnvVar, value_from_set) },
        {},
};

static const PodField port_fields[] = {
        POD_STR("name", PodPort, name),
        { .name = "containerPort",
          .decode = pod_dec_int32,
          .offset = offsetof(PodPort, container_port),
          .flags = POD_FIELD_REQUIRED },
        { .name = "hostPort", .decode = pod_dec_int32, .offset = offsetof(PodPort, host_port) },
        POD_STR("hostIP", PodPort, host_ip),
        POD_ENUM("protocol", PodPort, protocol, protocols),
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
          .sub = pod_seccomp_fields,
          .post = pod_seccomp_post },
        {},
};

#define CONTAINER_FIELDS(restart_allowed)                                                                         \
        POD_STR_REQ("name", PodContainer, name), POD_STR("image", PodContainer, image),                           \
                POD_ENUM("imagePullPolicy", PodContainer, image_pull_policy, pull_policies),                      \
                { .name = "command", .decode = pod_dec_strv, .offset = offsetof(PodContainer, command) },         \
                { .name = "args", .decode = pod_dec_strv, .offset = offsetof(PodContainer, args) },               \
                { .name = "env",                                                                                  \
                  .decode = pod_dec_object_array,                                                                 \
                  .offset = offsetof(PodContainer, env),                                                          \
                  .count_offset = offsetof(PodContainer, n_env),                                                  \
                  .elem_size = sizeof(PodEnvVar),                                                                 \
                  .sub = env_fields,                                                                              \
                  .post = env_post },                                                                             \
                { .name = "envFrom",                                                                              \
                  .decode = pod_dec_object_array,                                                                 \
                  .offset = offsetof(PodContainer, env_from),                                                     \
                  .count_offset = offsetof(PodContainer, n_env_from),                                             \
                  .elem_size = sizeof(PodEnvFrom),                                                                \
                  .sub = pod_env_from_fields,                                                                     \
                  .post = pod_env_from_post },                                                                    \
                POD_STR("workingDir", PodContainer, working_dir),                                                 \
                POD_STR("terminationMessagePath", PodContainer, termination_message_path),                        \
                POD_ENUM("terminationMessagePolicy", PodContainer, termination_message_policy, message_policies), \
                { .name = "ports",                                                                                \
                  .decode = pod_dec_object_array,                                                                 \
                  .offset = offsetof(PodContainer, ports),                                                        \
                  .count_offset = offsetof(PodContainer, n_ports),                                                \
                  .elem_size = sizeof(PodPort),                                                                   \
                  .sub = port_fields,                                                                             \
                  .post = port_post },                                                                            \
                { .name = "resources", .decode = pod_dec_inline, .sub = resources_fields },                       \
                { .name = "securityContext", .decode = pod_dec_inline, .sub = container_security_fields },        \
                POD_SECURITY_CONTAINER_FIELD,                                                                     \
                POD_ENUM("restartPolicy", PodContainer, restart_policy, restart_allowed),                         \
                { .name = "stdin", .decode = pod_dec_bool, .offset = offsetof(PodContainer, stdin_) },            \
                { .name = "stdinOnce", .decode = pod_dec_bool, .offset = offsetof(PodContainer, stdin_once) },    \
                { .name = "tty", .decode = pod_dec_bool, .offset = offsetof(PodContainer, tty) }, POD_PROBE_FIELDS

const PodField pod_container_fields[] = {
        CONTAINER_FIELDS(sidecar_policies),
        {},
};

const PodField pod_init_container_fields[] = {
        CONTAINER_FIELDS(sidecar_policies),
        {},
};

/* the API server's validation leaves an ephemeral container no ports,
 * resources, probes, lifecycle or restartPolicy */
const PodField pod_ephemeral_container_fields[] = {
        CONTAINER_FIELDS(sidecar_policies),
        POD_STR("targetContainerName", PodContainer, target_container_name),
        {},
};

/* ---- checks run as containers are decoded ------------------------------- */

int pod_seccomp_post(PodDec *d, json_t *obj, void *base) {
        PodSeccomp *s = base;

        if (strcmp(s->type, "Localhost") == 0 && (!s->localhost_profile || !*s->localhost_profile))
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "type"), ".localhostProfile",
                                    "Required value: must be set when seccomp type is Localhost");
        if (strcmp(s->type, "Localhost") != 0 && s->localhost_profile)
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "localhostProfile"), ".localhostProfile",
                                    "Invalid value: \"%s\": can only be set when seccomp type is Localhost",
                                    s->localhost_profile);
        return 0;
}

static int env_post(PodDec *d, json_t *obj, void *base) {
        PodEnvVar *e = base;

        if (!*e->name)
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "name"), ".name", "Required value");
        return pod_env_var_post(d, obj, e);
}

static int port_post(PodDec *d, json_t *obj, void *base) {
        PodPort *p = base;

        if (p->container_port < 1 || p->container_port > 65535)
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "containerPort"), ".containerPort",
                                    "Invalid value: %d: must be between 1 and 65535, inclusive", p->container_port);
        if (p->host_port < 0 || p->host_port > 65535)
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "hostPort"), ".hostPort",
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
        int line = pod_dec_field_line(d, m, name);
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
                char suffix[RESOURCE_PATH_MAX], lq[CUB_QUANTITY_STR_MAX];

                if (lim->q.milli == 0 ||
                    !(is_extended_resource(lim->name) || strncmp(lim->name, "hugepages-", 10) == 0))
                        continue;
                r = resource_path(d, 0, "limits", lim->name, suffix);
                if (r < 0)
                        return r;
                return pod_dec_fail(d, pod_dec_field_line(d, res ? json_object_get(res, "limits") : NULL, lim->name),
                                    suffix, "Invalid value: \"%s\": must be an integer",
                                    cub_quantity_format(lim->q, true, lq));
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
                int line = pod_dec_field_line(d, res ? json_object_get(res, "requests") : NULL, req->name);
                char suffix[RESOURCE_PATH_MAX], rq[CUB_QUANTITY_STR_MAX], lq[CUB_QUANTITY_STR_MAX];
                bool is_cpu = strcmp(req->name, "cpu") == 0;
                CubQuantity lim;
                bool has_lim = pod_resource_get(&c->limits, req->name, &lim);

                r = resource_path(d, line, "requests", req->name, suffix);
                if (r < 0)
                        return r;
                if (is_extended_resource(req->name) || strncmp(req->name, "hugepages-", 10) == 0) {
                        if (req->q.milli != 0)
                                return pod_dec_fail(d, line, suffix, "Invalid value: \"%s\": must be an integer",
                                                    cub_quantity_format(req->q, true, rq));
                        if (is_extended_resource(req->name) && !has_lim)
                                return pod_dec_fail(d, line, ".resources.limits",
                                                    "Required value: Limit must be set for non overcommitable "
                                                    "resources");
                        if (has_lim && cub_quantity_cmp(req->q, lim) != 0 && is_extended_resource(req->name))
                                return pod_dec_fail(d, line, suffix,
                                                    "Invalid value: \"%s\": must be equal to %s limit of %s",
                                                    cub_quantity_format(req->q, false, rq), req->name,
                                                    cub_quantity_format(lim, false, lq));
                }
                if (has_lim && cub_quantity_cmp(req->q, lim) > 0)
                        return pod_dec_fail(d, line, suffix,
                                            "Invalid value: \"%s\": must be less than or equal to %s limit of %s",
                                            cub_quantity_format(req->q, is_cpu, rq), req->name,
                                            cub_quantity_format(lim, is_cpu, lq));
        }
        return 0;
}

static int container_common(PodDec *d, json_t *obj, PodContainer *c) {
        int r;

        if (!pod_dns1123_label(c->name))
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "name"), ".name",
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
        if ((!c->termination_message_path && !(c->termination_message_path = strdup("/dev/termination-log"))) ||
            (!c->termination_message_policy && !(c->termination_message_policy = strdup("File"))))
                return cub_err_set(d->err, ENOMEM, "out of memory");
        r = container_resources(d, obj, c);
        if (r < 0)
                return r;
        return 0;
}

/* an app or ephemeral container: no restartPolicy (kind names it in the error) */
static int no_restart_policy_post(PodDec *d, json_t *obj, PodContainer *c, const char *kind) {
        if (c->restart_policy)
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "restartPolicy"), ".restartPolicy",
                                    "Forbidden: may not be set for %s containers", kind);
        return container_common(d, obj, c);
}

int pod_container_post(PodDec *d, json_t *obj, void *base) {
        return no_restart_policy_post(d, obj, base, "non-init");
}

int pod_ephemeral_container_post(PodDec *d, json_t *obj, void *base) {
        return no_restart_policy_post(d, obj, base, "ephemeral");
}

int pod_init_container_post(PodDec *d, json_t *obj, void *base) {
        int r = pod_probes_check(d, obj, base, true);

        return r < 0 ? r : container_common(d, obj, base);
}
