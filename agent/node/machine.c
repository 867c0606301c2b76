/* SPDX-License-Identifier: Apache-2.0 */
#include "machine.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"

int agent_host_node(AgentNode *n, CubError *err) {
        _cleanup_free_ char *meminfo = NULL;
        unsigned long long kb;
        const char *p;
        long cpus;
        int r;

        if (gethostname(n->name, sizeof(n->name) - 1) < 0)
                return cub_err_set(err, errno, "gethostname: %s", strerror(errno));
        n->name[sizeof(n->name) - 1] = '\0';
        r = cub_read_file("/proc/meminfo", 1 << 20, &meminfo, NULL, err);
        if (r < 0)
                return r;
        p = strstr(meminfo, "MemTotal:");
        if (!p || sscanf(p, "MemTotal: %llu kB", &kb) != 1)
                return cub_err_set(err, EINVAL, "'/proc/meminfo': no MemTotal line");
        n->memory_capacity = (uint64_t) kb * 1024;
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
