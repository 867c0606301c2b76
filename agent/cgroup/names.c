/* SPDX-License-Identifier: Apache-2.0 */
/* The pure parts that differ between drivers: names (kubelet's slice
 * hierarchy, containerd's scopes, the CRI's cgroup_parent), the unit
 * properties that carry a group's file values, and what containerd's
 * config says about the driver it uses. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/parse.h"
#include "cgroup.h"

#define USEC_PER_SEC UINT64_C(1000000)

const char *cg_kubepods_path(CgDriverKind driver) {
        return driver == CG_DRIVER_SYSTEMD ? "kubepods.slice" : "kubepods";
}

int cg_container_path(CgDriverKind driver, const char *pod_path, const char *container_id, char *buf, size_t size,
                      CubError *err) {
        int n;

        if (!container_id || !*container_id || strchr(container_id, '/'))
                return cub_err_set(err, EINVAL, "container ID '%s' cannot name a cgroup",
                                   container_id ? container_id : "");
        if (driver == CG_DRIVER_SYSTEMD)
                n = snprintf(buf, size, "%s/cri-containerd-%s.scope", pod_path, container_id);
        else
                n = snprintf(buf, size, "%s/%s", pod_path, container_id);
        if (n < 0 || (size_t) n >= size)
                return cub_err_set(err, ENAMETOOLONG, "cgroup path of container '%s' is too long", container_id);
        return 0;
}

int cg_cgroup_parent(CgDriverKind driver, const char *pod_path, char *buf, size_t size, CubError *err) {
        int n;

        if (driver == CG_DRIVER_SYSTEMD)
                return cg_systemd_unit_of(pod_path, buf, size, err);
        n = snprintf(buf, size, "/%s", pod_path);
        if (n < 0 || (size_t) n >= size)
                return cub_err_set(err, ENAMETOOLONG, "cgroup '%s': path too long", pod_path);
        return 0;
}

/* systemd's slice_name_is_valid(): unit name characters, ".slice", and
 * the prefix's dashes separating non-empty parts. */
static bool slice_name_is_valid(const char *unit) {
        size_t len = strlen(unit);
        const char *end;

        if (len <= 6 || len >= 256 || strcmp(unit + len - 6, ".slice") != 0)
                return false;
        end = unit + len - 6;
        if (strcmp(unit, "-.slice") == 0)
                return true;
        if (unit[0] == '-' || end[-1] == '-')
                return false;
        for (const char *p = unit; p < end; p++) {
                if (!(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.\\-", *p) && *p))
                        return false;
                if (*p == '-' && p[1] == '-')
                        return false;
        }
        return true;
}

int cg_systemd_unit_of(const char *path, char *buf, size_t size, CubError *err) {
        const char *slash = path ? strrchr(path, '/') : NULL;
        const char *unit = slash ? slash + 1 : path;

        if (!unit || !slice_name_is_valid(unit))
                return cub_err_set(err, EINVAL, "cgroup '%s': '%s' is not a systemd slice name", path ? path : "",
                                   unit ? unit : "");
        if ((size_t) snprintf(buf, size, "%s", unit) >= size)
                return cub_err_set(err, ENAMETOOLONG, "cgroup '%s': unit name too long", path);
        return 0;
}

int cg_systemd_parent_slice(const char *unit, char *buf, size_t size, CubError *err) {
        const char *dash;
        int n;

        if (!unit || !slice_name_is_valid(unit) || strcmp(unit, "-.slice") == 0)
                return cub_err_set(err, EINVAL, "'%s' is not a systemd slice with a parent", unit ? unit : "");
        dash = strrchr(unit, '-');
        if (!dash)
                n = snprintf(buf, size, "-.slice");
        else
                n = snprintf(buf, size, "%.*s.slice", (int) (dash - unit), unit);
        if (n < 0 || (size_t) n >= size)
                return cub_err_set(err, ENAMETOOLONG, "parent slice of '%s': name too long", unit);
        return 0;
}

/* "max" -> UINT64_MAX, else a decimal */
static int limit_of(const char *v, uint64_t *ret) {
        if (strcmp(v, "max") == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        return cub_safe_atou64(v, ret);
}

/* "0-3,8" into systemd's CPU bitmask (bit n of byte n/8 is CPU n). */
static int cpus_to_mask(const char *v, uint8_t *mask, size_t max, size_t *ret_n) {
        size_t n = 0;
        const char *p = v;

        memset(mask, 0, max);
        if (!*p) {
                *ret_n = 0;
                return 0;
        }
        for (;;) {
                uint64_t a, b;
                char *end;

                if (*p < '0' || *p > '9')
                        return -EINVAL;
                a = strtoull(p, &end, 10);
                b = a;
                if (*end == '-') {
                        p = end + 1;
                        if (*p < '0' || *p > '9')
                                return -EINVAL;
                        b = strtoull(p, &end, 10);
                }
                if (b < a || b >= max * 8)
                        return -ERANGE;
                for (uint64_t c = a; c <= b; c++)
                        mask[c / 8] |= (uint8_t) (1u << (c % 8));
                if (b / 8 + 1 > n)
                        n = b / 8 + 1;
                if (!*end)
                        break;
                if (*end != ',')
                        return -EINVAL;
                p = end + 1;
        }
        *ret_n = n;
        return 0;
}

static int cpu_max_of(const char *v, CgUnitProps *p) {
        char quota[CG_FILE_VALUE_MAX];
        uint64_t q, period;
        const char *sp = strchr(v, ' ');

        if (!sp || (size_t) (sp - v) >= sizeof(quota) || cub_safe_atou64(sp + 1, &period) < 0 || period == 0)
                return -EINVAL;
        memcpy(quota, v, (size_t) (sp - v));
        quota[sp - v] = '\0';
        if (strcmp(quota, "max") == 0)
                p->cpu_quota_per_sec_usec = CG_USEC_INFINITY;
        else {
                if (cub_safe_atou64(quota, &q) < 0 || q > UINT64_MAX / USEC_PER_SEC)
                        return -EINVAL;
                /* systemd writes quota_per_sec * period / 1e6: exact when
                 * the division is, which kubelet's 100 ms period keeps */
                if (q * USEC_PER_SEC % period != 0)
                        return -ERANGE;
                p->cpu_quota_per_sec_usec = q * USEC_PER_SEC / period;
        }
        p->cpu_quota_period_usec = period;
        p->has_cpu_quota = true;
        return 0;
}

int cg_unit_props(const CgGroupValues *g, CgUnitProps *ret, CubError *err) {
        CgUnitProps p = {};

        for (size_t i = 0; i < g->n_files; i++) {
                const char *f = g->files[i].name, *v = g->files[i].value;
                int r;

                if (strcmp(f, "cpu.weight") == 0) {
                        r = cub_safe_atou64(v, &p.cpu_weight);
                        if (r >= 0 && (p.cpu_weight < 1 || p.cpu_weight > 10000))
                                r = -ERANGE;
                        p.has_cpu_weight = true;
                } else if (strcmp(f, "cpu.max") == 0)
                        r = cpu_max_of(v, &p);
                else if (strcmp(f, "memory.max") == 0) {
                        r = limit_of(v, &p.memory_max);
                        p.has_memory_max = true;
                } else if (strcmp(f, "memory.min") == 0) {
                        /* libcontainer's systemd driver: unified memory.min as MemoryMin */
                        r = limit_of(v, &p.memory_min);
                        p.has_memory_min = true;
                } else if (strcmp(f, "pids.max") == 0) {
                        r = limit_of(v, &p.tasks_max);
                        p.has_tasks_max = true;
                } else if (strcmp(f, "cpuset.cpus") == 0) {
                        r = cpus_to_mask(v, p.allowed_cpus, sizeof(p.allowed_cpus), &p.n_allowed_cpus);
                        p.has_allowed_cpus = true;
                } else
                        return cub_err_set(err, EOPNOTSUPP, "cgroup '%s': '%s': no systemd unit property carries it",
                                           g->path, f);
                if (r < 0)
                        return cub_err_set(err, EINVAL, "cgroup '%s': '%s' = '%s': not a value systemd can set",
                                           g->path, f, v);
        }
        *ret = p;
        return 0;
}

int cg_runtime_systemd_cgroup(const char *config_json, bool *ret_systemd, char *ret_runtime, size_t size,
                              CubError *err) {
        json_t *root, *ctd, *name, *rt, *opts, *sc;
        json_error_t jerr;
        const char *n = "runc";
        int r = 0;

        root = json_loads(config_json ? config_json : "", 0, &jerr);
        if (!root)
                return cub_err_set(err, EBADMSG, "runtime config: not JSON: %s", jerr.text);
        ctd = json_object_get(root, "containerd");
        name = json_object_get(ctd, "defaultRuntimeName");
        if (json_is_string(name) && *json_string_value(name))
                n = json_string_value(name);
        rt = json_object_get(json_object_get(ctd, "runtimes"), n);
        if (!json_is_object(rt))
                r = cub_err_set(err, ENOENT, "runtime config: no containerd.runtimes.%s", n);
        else {
                opts = json_object_get(rt, "options");
                sc = json_object_get(opts, "SystemdCgroup");
                *ret_systemd = json_is_true(sc);
                (void) snprintf(ret_runtime, size, "%s", n);
        }
        json_decref(root);
        return r;
}

int cg_check_runtime(CgDriverKind driver, const char *config_json, CubError *err) {
        char runtime[64];
        bool systemd = false;
        int r;

        r = cg_runtime_systemd_cgroup(config_json, &systemd, runtime, sizeof(runtime), err);
        if (r < 0)
                return r;
        if (systemd == (driver == CG_DRIVER_SYSTEMD))
                return 0;
        return cub_err_set(
                err, EINVAL,
                "cgroup driver mismatch: cubelet cgroupDriver=%s, containerd %s SystemdCgroup=%s "
                "(/etc/containerd/config.toml: [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.%s."
                "options] SystemdCgroup = %s, or cgroupDriver: %s)",
                cg_driver_to_string(driver), runtime, systemd ? "true" : "false", runtime,
                driver == CG_DRIVER_SYSTEMD ? "true" : "false", systemd ? "systemd" : "cgroupfs");
}
