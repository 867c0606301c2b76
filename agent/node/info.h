/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The facts a Node's status reports about this machine that no manager
 * owns (nodeInfo's IDs, the OS image, the kernel, the hugepages the kernel
 * holds), read from files under a root ("/" on a node; a fixture tree in
 * tests), as kubelet's cAdvisor MachineInfo and nodestatus setters do. */

#include <stdint.h>

typedef struct AgentNodeInfo {
        char machine_id[64];  /* /etc/machine-id */
        char system_uuid[64]; /* /sys/class/dmi/id/product_uuid */
        char boot_id[64];     /* /proc/sys/kernel/random/boot_id */
        char os_image[256];   /* /etc/os-release's PRETTY_NAME, else "Linux" */
        char kernel[128];     /* uname's release */
        /* bytes the kernel holds of each size (nr_hugepages × size); -1:
         * the size's directory is not there (no such pages on this kernel) */
        int64_t hugepages_2mi, hugepages_1gi;
} AgentNodeInfo;

/* Reads them under root; a file that cannot be read leaves its field ""
 * (or -1): a node reports what it has. */
void agent_node_info_read(const char *root, AgentNodeInfo *ret);
