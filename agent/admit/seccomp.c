/* SPDX-License-Identifier: Apache-2.0 */
/* The Seccomp admission probe: a Localhost profile (OCI/docker JSON) must
 * exist and compile with libseccomp. Reads one file; loads nothing into the
 * kernel. */
#include <errno.h>
#include <jansson.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "admit-internal.h"

#define PROFILE_MAX (1024 * 1024)

DEFINE_TRIVIAL_CLEANUP_FUNC(scmp_filter_ctx, seccomp_release);

/* SCMP_ACT_* by name; false for an unknown name. */
static bool parse_action(const char *name, json_t *errno_ret, uint32_t *ret) {
        int e = json_is_integer(errno_ret) ? (int) json_integer_value(errno_ret) : EPERM;

        if (!name)
                return false;
        if (strcmp(name, "SCMP_ACT_ALLOW") == 0)
                *ret = SCMP_ACT_ALLOW;
        else if (strcmp(name, "SCMP_ACT_ERRNO") == 0)
                *ret = SCMP_ACT_ERRNO((uint32_t) e);
        else if (strcmp(name, "SCMP_ACT_KILL") == 0 || strcmp(name, "SCMP_ACT_KILL_THREAD") == 0)
                *ret = SCMP_ACT_KILL;
        else if (strcmp(name, "SCMP_ACT_KILL_PROCESS") == 0)
                *ret = SCMP_ACT_KILL_PROCESS;
        else if (strcmp(name, "SCMP_ACT_TRAP") == 0)
                *ret = SCMP_ACT_TRAP;
        else if (strcmp(name, "SCMP_ACT_LOG") == 0)
                *ret = SCMP_ACT_LOG;
        else if (strcmp(name, "SCMP_ACT_TRACE") == 0)
                *ret = SCMP_ACT_TRACE((uint32_t) e);
        else if (strcmp(name, "SCMP_ACT_NOTIFY") == 0)
                *ret = SCMP_ACT_NOTIFY;
        else
                return false;
        return true;
}

static int append(char *buf, size_t size, size_t *len, bool first, const char *s) {
        int n = snprintf(buf + *len, size - *len, "%s'%s'", first ? "" : ", ", s);

        if (n < 0 || (size_t) n >= size - *len)
                return -ENOBUFS;
        *len += (size_t) n;
        return 0;
}

int admit_seccomp_check(const char *path, const char *name, CubError *err) {
        _cleanup_free_ char *data = NULL;
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        char unknown[768];
        size_t size, ulen = 0, n_unknown = 0;
        json_error_t jerr;
        json_t *syscalls, *sc;
        uint32_t def;
        size_t i;
        int r;

        r = cub_read_file(path, PROFILE_MAX, &data, &size, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "profile '%s'", name);
        root = json_loadb(data, size, 0, &jerr);
        if (!root)
                return cub_err_set(err, EINVAL, "profile '%s': '%s': line %d: %s", name, path, jerr.line, jerr.text);
        if (!json_is_object(root))
                return cub_err_set(err, EINVAL, "profile '%s': '%s': not a JSON object", name, path);
        if (!parse_action(json_string_value(json_object_get(root, "defaultAction")),
                          json_object_get(root, "defaultErrnoRet"), &def))
                return cub_err_set(err, EINVAL, "profile '%s': '%s': defaultAction: unknown action '%s'", name, path,
                                   json_string_value(json_object_get(root, "defaultAction"))
                                           ? json_string_value(json_object_get(root, "defaultAction"))
                                           : "");
        ctx = seccomp_init(def);
        if (!ctx)
                return cub_err_set(err, EINVAL, "profile '%s': '%s': seccomp_init failed", name, path);
        syscalls = json_object_get(root, "syscalls");
        if (syscalls && !json_is_array(syscalls))
                return cub_err_set(err, EINVAL, "profile '%s': '%s': syscalls: not an array", name, path);
        json_array_foreach(syscalls, i, sc) {
                json_t *names = json_object_get(sc, "names"), *one = json_object_get(sc, "name"), *nm;
                const char *act_name = json_string_value(json_object_get(sc, "action"));
                uint32_t act;
                size_t j;

                if (!json_is_object(sc))
                        return cub_err_set(err, EINVAL, "profile '%s': '%s': syscalls[%zu]: not an object", name, path,
                                           i);
                if (!parse_action(act_name, json_object_get(sc, "errnoRet"), &act))
                        return cub_err_set(err, EINVAL, "profile '%s': '%s': syscalls[%zu].action: unknown action '%s'",
                                           name, path, i, act_name ? act_name : "");
                if (names && !json_is_array(names))
                        return cub_err_set(err, EINVAL, "profile '%s': '%s': syscalls[%zu].names: not an array", name,
                                           path, i);
                for (j = 0; j < json_array_size(names) + (one ? 1 : 0); j++) {
                        nm = j < json_array_size(names) ? json_array_get(names, j) : one;
                        const char *sname = json_string_value(nm);
                        int nr;

                        if (!sname)
                                return cub_err_set(err, EINVAL,
                                                   "profile '%s': '%s': syscalls[%zu]: a name is not a string", name,
                                                   path, i);
                        nr = seccomp_syscall_resolve_name(sname);
                        if (nr == __NR_SCMP_ERROR) {
                                if (append(unknown, sizeof(unknown), &ulen, n_unknown == 0, sname) >= 0)
                                        n_unknown++;
                                continue;
                        }
                        if (n_unknown > 0 || act == def)
                                continue;
                        r = seccomp_rule_add(ctx, act, nr, 0);
                        /* negative numbers are syscalls of other architectures: libseccomp skips them */
                        if (r < 0 && nr >= 0 && r != -EEXIST)
                                return cub_err_set(err, -r, "profile '%s': '%s': syscall '%s': adding the rule failed",
                                                   name, path, sname);
                }
        }
        if (n_unknown > 0)
                return cub_err_set(err, EINVAL, "profile '%s': unknown syscalls: %s", name, unknown);
        return 0;
}
