/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/api resource: kubelet's resource metrics (/metrics/resource, what
 * metrics-server scrapes) and the Summary API (/stats/summary), read from
 * the cgroup v2 files of the snapshot's pods at request time (the HTTP
 * thread, never the loop): cpu.stat usage_usec, memory.current minus
 * memory.stat inactive_file (the working set); the node's from the root
 * cgroup's cpu.stat and /proc/meminfo. A container's cgroup is
 * <pod cgroup>/<container id> (containerd's cgroupfs layout).
 */

#include <stdint.h>
#include <stdio.h>

#include "http.h"

typedef struct ApiCgroupStats {
        uint64_t cpu_usage_usec;
        uint64_t memory_usage; /* memory.current */
        uint64_t working_set;  /* memory.current - inactive_file, at least 0 */
        uint64_t rss;          /* memory.stat anon */
        uint64_t pgfault, pgmajfault;
} ApiCgroupStats;

/* Reads the stats of <cgroup_root>/<rel>; a negative errno when a file is missing. */
int api_cgroup_stats(const char *cgroup_root, const char *rel, ApiCgroupStats *ret);
/* The node's: root cpu.stat (else /proc/stat) and /proc/meminfo. */
int api_node_stats(const char *cgroup_root, const char *proc, ApiCgroupStats *ret, uint64_t *ret_mem_total,
                   uint64_t *ret_mem_available);

int api_resource_metrics(const ApiSnapshot *s, const char *cgroup_root, const char *proc, FILE *f);
/* The Summary API document (malloc'd JSON), NULL on ENOMEM. */
char *api_stats_summary(const ApiSnapshot *s, const char *cgroup_root, const char *proc, const char *fs_path);
