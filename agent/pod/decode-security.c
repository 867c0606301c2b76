/* SPDX-License-Identifier: Apache-2.0 */
/* The securityContext tables of the Pod and the Container (seccomp is
 * decoded by decode.c / decode-containers.c) and their API validation:
 * user and group IDs, capabilities, procMount, sysctl names, and the
 * allowPrivilegeEscalation and shareProcessNamespace rules. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

static const char *const proc_mount_types[] = { "Default", "Unmasked", NULL };

/* supplementalGroups: a list of integers */
static int dec_int64_list(PodDec *d, json_t *v, void *dst, const PodField *f) {
        PodSecurity *s = (PodSecurity *) ((char *) dst - f->offset);
        size_t i;
        json_t *e;

        if (json_is_null(v))
                return 0;
        if (!json_is_array(v))
                return pod_dec_fail(d, 0, NULL, "Invalid type: expected array, got %s", pod_json_type_name(v));
        s->supplemental_groups = calloc(json_array_size(v) + 1, sizeof(int64_t));
        if (!s->supplemental_groups)
                return cub_err_set(d->err, ENOMEM, "out of memory");
        json_array_foreach(v, i, e) {
                if (!json_is_integer(e)) {
                        char suffix[32];

                        (void) snprintf(suffix, sizeof(suffix), "[%zu]", i);
                        return pod_dec_fail(d, pod_tree_line(d->tree, e), suffix,
                                            "Invalid type: expected integer, got %s", pod_json_type_name(e));
                }
                s->supplemental_groups[i] = json_integer_value(e);
                s->n_supplemental_groups = i + 1;
        }
        return 0;
}

static void int64_list_done(void *dst) {
        PodSecurity *s = (PodSecurity *) ((char *) dst - offsetof(PodSecurity, supplemental_groups));

        free(s->supplemental_groups);
        s->supplemental_groups = NULL;
        s->n_supplemental_groups = 0;
}

static const PodField capability_fields[] = {
        { .name = "add", .decode = pod_dec_strv, .offset = offsetof(PodSecurity, cap_add) },
        { .name = "drop", .decode = pod_dec_strv, .offset = offsetof(PodSecurity, cap_drop) },
        {},
};

static const PodField sysctl_fields[] = {
        POD_STR_REQ("name", PodSysctl, name),
        POD_STR("value", PodSysctl, value),
        {},
};

static const PodField selinux_fields[] = {
        POD_STR("user", PodSELinux, user),
        POD_STR("role", PodSELinux, role),
        POD_STR("type", PodSELinux, type),
        POD_STR("level", PodSELinux, level),
        {},
};

static int selinux_post(PodDec *d, json_t *obj, void *base) {
        (void) d, (void) obj;
        ((PodSELinux *) base)->set = true;
        return 0;
}

#define RUN_AS_FIELDS                                                                                             \
        { .name = "runAsUser",                                                                                    \
          .decode = pod_dec_int64,                                                                                \
          .offset = offsetof(PodSecurity, run_as_user),                                                           \
          .set_offset = offsetof(PodSecurity, run_as_user_set) },                                                 \
                { .name = "runAsGroup",                                                                           \
                  .decode = pod_dec_int64,                                                                        \
                  .offset = offsetof(PodSecurity, run_as_group),                                                  \
                  .set_offset = offsetof(PodSecurity, run_as_group_set) },                                        \
        {                                                                                                         \
                .name = "runAsNonRoot", .decode = pod_dec_bool, .offset = offsetof(PodSecurity, run_as_non_root), \
                .set_offset = offsetof(PodSecurity, run_as_non_root_set)                                          \
        }

/* seLinuxOptions, at both levels (the container's replaces the pod's whole) */
#define SELINUX_FIELD                                                                                         \
        {                                                                                                     \
                .name = "seLinuxOptions", .decode = pod_dec_object, .offset = offsetof(PodSecurity, selinux), \
                .sub = selinux_fields, .post = selinux_post                                                   \
        }

const PodField pod_security_pod_fields[] = {
        RUN_AS_FIELDS,
        SELINUX_FIELD,
        { .name = "supplementalGroups",
          .decode = dec_int64_list,
          .offset = offsetof(PodSecurity, supplemental_groups),
          .done = int64_list_done },
        { .name = "sysctls",
          .decode = pod_dec_object_array,
          .offset = offsetof(PodSecurity, sysctls),
          .count_offset = offsetof(PodSecurity, n_sysctls),
          .elem_size = sizeof(PodSysctl),
          .sub = sysctl_fields },
        {},
};

const PodField pod_security_container_fields[] = {
        RUN_AS_FIELDS,
        SELINUX_FIELD,
        { .name = "privileged",
          .decode = pod_dec_bool,
          .offset = offsetof(PodSecurity, privileged),
          .set_offset = offsetof(PodSecurity, privileged_set) },
        { .name = "capabilities", .decode = pod_dec_inline, .sub = capability_fields },
        { .name = "readOnlyRootFilesystem",
          .decode = pod_dec_bool,
          .offset = offsetof(PodSecurity, read_only_root_fs),
          .set_offset = offsetof(PodSecurity, read_only_root_fs_set) },
        { .name = "allowPrivilegeEscalation",
          .decode = pod_dec_bool,
          .offset = offsetof(PodSecurity, allow_privilege_escalation),
          .set_offset = offsetof(PodSecurity, allow_privilege_escalation_set) },
        POD_ENUM("procMount", PodSecurity, proc_mount, proc_mount_types),
        {},
};

/* IsValidUserID / IsValidGroupID */
static int check_id(PodDec *d, json_t *obj, const char *name, bool set, int64_t v) {
        if (!set || (v >= 0 && v <= INT32_MAX))
                return 0;
        char suffix[64];

        (void) snprintf(suffix, sizeof(suffix), ".%s", name);
        return pod_dec_fail(d, pod_dec_field_line(d, obj, name), suffix,
                            "Invalid value: %lld: must be between 0 and 2147483647, inclusive", (long long) v);
}

static int check_run_as(PodDec *d, json_t *obj, const PodSecurity *s) {
        int r = check_id(d, obj, "runAsUser", s->run_as_user_set, s->run_as_user);

        if (r >= 0)
                r = check_id(d, obj, "runAsGroup", s->run_as_group_set, s->run_as_group);
        return r;
}

int pod_security_pod_post(PodDec *d, json_t *obj, void *base) {
        PodSecurity *s = base;
        json_t *list = json_object_get(obj, "sysctls");
        int r = check_run_as(d, obj, s);

        if (r < 0)
                return r;
        for (size_t i = 0; i < s->n_supplemental_groups; i++)
                if (s->supplemental_groups[i] < 0 || s->supplemental_groups[i] > INT32_MAX) {
                        char suffix[64];

                        (void) snprintf(suffix, sizeof(suffix), ".supplementalGroups[%zu]", i);
                        return pod_dec_fail(d, pod_dec_field_line(d, obj, "supplementalGroups"), suffix,
                                            "Invalid value: %lld: must be between 0 and 2147483647, inclusive",
                                            (long long) s->supplemental_groups[i]);
                }
        for (size_t i = 0; i < s->n_sysctls; i++) {
                const char *n = s->sysctls[i].name;
                int line = pod_tree_line(d->tree, json_array_get(list, i));
                char suffix[64];

                (void) snprintf(suffix, sizeof(suffix), ".sysctls[%zu].name", i);
                if (!pod_sysctl_name_valid(n))
                        return pod_dec_fail(d, line, suffix,
                                            "Invalid value: \"%s\": must have at most 253 characters and match regex "
                                            "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$",
                                            n);
                for (size_t k = 0; k < i; k++) {
                        char a[256], b[256];

                        pod_sysctl_normalize(n, a, sizeof(a));
                        pod_sysctl_normalize(s->sysctls[k].name, b, sizeof(b));
                        if (strcmp(a, b) == 0)
                                return pod_dec_fail(d, line, suffix, "Duplicate value: \"%s\"", n);
                }
                if (!s->sysctls[i].value) {
                        s->sysctls[i].value = strdup("");
                        if (!s->sysctls[i].value)
                                return cub_err_set(d->err, ENOMEM, "out of memory");
                }
        }
        return 0;
}

int pod_security_container_post(PodDec *d, json_t *obj, void *base) {
        PodSecurity *s = base;
        int r = check_run_as(d, obj, s);

        if (r < 0)
                return r;
        /* ValidateSecurityContext: no_new_privs would defeat both */
        if (s->allow_privilege_escalation_set && !s->allow_privilege_escalation) {
                int line = pod_dec_field_line(d, obj, "allowPrivilegeEscalation");

                if (s->privileged_set && s->privileged)
                        return pod_dec_fail(d, line, "",
                                            "Invalid value: cannot set `allowPrivilegeEscalation` to false and "
                                            "`privileged` to true");
                for (size_t i = 0; i < s->cap_add.n; i++)
                        if (strcmp(s->cap_add.items[i], "CAP_SYS_ADMIN") == 0)
                                return pod_dec_fail(d, line, "",
                                                    "Invalid value: cannot set `allowPrivilegeEscalation` to false "
                                                    "and `capabilities.Add` CAP_SYS_ADMIN");
        }
        return 0;
}

int pod_security_validate(PodDec *d, json_t *root, Pod *pod) {
        json_t *spec = json_object_get(root, "spec");

        if (pod->host_pid && pod->share_process_namespace)
                return pod_dec_fail(d, pod_tree_key_line(d->tree, spec, "shareProcessNamespace"),
                                    "spec.shareProcessNamespace",
                                    "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled");
        return 0;
}
