/* SPDX-License-Identifier: Apache-2.0 */
/* This machine's facts for the Node's status (info.h). */
#include "info.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/parse.h"

/* the first line of root/rel, trimmed; "" when unreadable */
static void read_line(const char *root, const char *rel, char *buf, size_t size) {
        _cleanup_free_ char *text = NULL;
        char path[4096];

        buf[0] = 0;
        (void) snprintf(path, sizeof(path), "%s/%s", strcmp(root, "/") == 0 ? "" : root, rel);
        if (cub_read_file(path, 65536, &text, NULL, NULL) < 0)
                return;
        text[strcspn(text, "\n")] = 0;
        (void) snprintf(buf, size, "%s", text);
}

/* os-release's PRETTY_NAME (quotes removed), "Linux" without one */
static void os_image(const char *root, char *buf, size_t size) {
        _cleanup_free_ char *text = NULL;
        char path[4096];
        char *p;

        (void) snprintf(buf, size, "Linux");
        (void) snprintf(path, sizeof(path), "%s/etc/os-release", strcmp(root, "/") == 0 ? "" : root);
        if (cub_read_file(path, 65536, &text, NULL, NULL) < 0)
                return;
        for (p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, "PRETTY_NAME=", strlen("PRETTY_NAME=")) == 0)
                        break;
        if (!p)
                return;
        p += strlen("PRETTY_NAME=");
        if (*p == '"' || *p == '\'')
                p++;
        p[strcspn(p, "\"'\n")] = 0;
        (void) snprintf(buf, size, "%s", p);
}

static int64_t hugepages(const char *root, const char *dir, int64_t page) {
        char rel[128], line[64];
        uint64_t n;

        (void) snprintf(rel, sizeof(rel), "sys/kernel/mm/hugepages/%s/nr_hugepages", dir);
        read_line(root, rel, line, sizeof(line));
        if (!*line || cub_safe_atou64(line, &n) < 0 || n > (uint64_t) (INT64_MAX / page))
                return -1;
        return (int64_t) n * page;
}

void agent_node_info_read(const char *root, AgentNodeInfo *ret) {
        struct utsname u;

        *ret = (AgentNodeInfo){};
        read_line(root, "etc/machine-id", ret->machine_id, sizeof(ret->machine_id));
        read_line(root, "sys/class/dmi/id/product_uuid", ret->system_uuid, sizeof(ret->system_uuid));
        read_line(root, "proc/sys/kernel/random/boot_id", ret->boot_id, sizeof(ret->boot_id));
        os_image(root, ret->os_image, sizeof(ret->os_image));
        if (uname(&u) == 0)
                (void) snprintf(ret->kernel, sizeof(ret->kernel), "%s", u.release);
        ret->hugepages_2mi = hugepages(root, "hugepages-2048kB", 2LL << 20);
        ret->hugepages_1gi = hugepages(root, "hugepages-1048576kB", 1LL << 30);
}
