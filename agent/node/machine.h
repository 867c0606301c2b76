/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* This host as a node: its name, memory and CPU capacity. */

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "../util/err.h"

/* A node name is a DNS subdomain: at most 253 bytes (a hostname fits). */
#define AGENT_NODE_NAME_MAX 253
_Static_assert(AGENT_NODE_NAME_MAX >= HOST_NAME_MAX, "a hostname fits a node name");

typedef struct AgentNode {
        char name[AGENT_NODE_NAME_MAX + 1];
        uint64_t memory_capacity;   /* MemTotal, bytes */
        int64_t cpu_capacity_milli; /* online CPUs × 1000 */
        int64_t max_pids;           /* min(kernel.pid_max, kernel.threads-max); 0 = unknown */
        uint64_t swap_capacity;     /* SwapTotal, bytes */
        bool swap_controller;       /* cgroup v2: memory.swap.max in this process's group; v1: memory.memsw.* */
        char ip[64];                /* its InternalIP: --node-ip, or the address toward the pod network ("": none) */
} AgentNode;

int agent_host_node(AgentNode *ret, CubError *err);
/* This machine's architecture as Go names it (GOARCH: amd64, arm64, ...),
 * for the Node's nodeInfo.architecture and the kubernetes.io/arch label
 * that nodeSelector and node affinity match; "unknown" for another. */
const char *agent_go_arch(void);
/* kuberuntime_container_linux.go swapControllerAvailable (1.34): on cgroup v2,
 * <cgroup_mount>/<the group of proc_self_cgroup's "0::" line>/memory.swap.max exists; on
 * cgroup v1 (cgroup_v1: the mount is not cgroup2), <cgroup_mount>/memory/memory.memsw.limit_in_bytes
 * exists. False when either file cannot be read. */
bool agent_swap_controller(const char *proc_self_cgroup, const char *cgroup_mount, bool cgroup_v1);
