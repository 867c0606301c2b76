/* SPDX-License-Identifier: Apache-2.0 */
#include "machine.h"

#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/meminfo.h"

int agent_host_node(AgentNode *n, CubError *err) {
        CubMeminfo mi;
        long cpus;
        int r;

        if (gethostname(n->name, sizeof(n->name) - 1) < 0)
                return cub_err_set(err, errno, "gethostname: %s", strerror(errno));
        n->name[sizeof(n->name) - 1] = '\0';
        r = cub_meminfo_read("/proc", &mi, err);
        if (r < 0)
                return r;
        n->memory_capacity = mi.mem_total;
        /* cadvisor's MachineInfo.SwapCapacity: SwapTotal */
        n->swap_capacity = mi.swap_total;
        {
                struct statfs fs;

                /* kubelet's IsCgroup2UnifiedMode */
                n->swap_controller =
                        agent_swap_controller("/proc/self/cgroup", "/sys/fs/cgroup",
                                              statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type != CGROUP2_SUPER_MAGIC);
        }
        cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n->cpu_capacity_milli = cpus > 0 ? cpus * 1000 : 0;
        /* kubelet's pidlimit.Stats(): both limit the number of tasks */
        n->max_pids = 0;
        for (size_t i = 0; i < 2; i++) {
                static const char *const files[] = { "/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max" };
                _cleanup_free_ char *s = NULL;
                long long v;

                if (cub_read_file(files[i], 64, &s, NULL, NULL) < 0 || sscanf(s, "%lld", &v) != 1 || v < 0)
                        continue;
                if (n->max_pids == 0 || v < n->max_pids)
                        n->max_pids = v;
        }
        return 0;
}

bool agent_swap_controller(const char *proc_self_cgroup, const char *cgroup_mount, bool cgroup_v1) {
        _cleanup_free_ char *s = NULL, *path = NULL;
        const char *line;
        size_t len;

        if (cgroup_v1) {
                if (asprintf(&path, "%s/memory/memory.memsw.limit_in_bytes", cgroup_mount) < 0)
                        return false;
                return access(path, F_OK) == 0;
        }
        if (cub_read_file(proc_self_cgroup, 1 << 16, &s, NULL, NULL) < 0)
                return false;
        /* cgroup v2: one line "0::/path" (the unified hierarchy's key "") */
        for (line = s; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (strncmp(line, "0::", 3) == 0)
                        break;
        if (!line || !*line)
                return false;
        line += 3;
        len = strcspn(line, "\n");
        if (asprintf(&path, "%s/%.*s/memory.swap.max", cgroup_mount, (int) len, line) < 0)
                return false;
        return access(path, F_OK) == 0;
}

const char *agent_go_arch(void) {
        static const struct {
                const char *machine, *arch;
        } map[] = {
                { "x86_64", "amd64" },    { "aarch64", "arm64" }, { "armv7l", "arm" },
                { "ppc64le", "ppc64le" }, { "s390x", "s390x" },   { "riscv64", "riscv64" },
        };
        struct utsname u;

        if (uname(&u) < 0)
                return "unknown";
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (strcmp(u.machine, map[i].machine) == 0)
                        return map[i].arch;
        return "unknown";
}
