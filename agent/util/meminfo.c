/* SPDX-License-Identifier: Apache-2.0 */
#include "meminfo.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "fileio.h"
#include "parse.h"

#define MEMINFO_MAX (1 << 20)

/* "Key:   123 kB" at the start of a line: the value in bytes. -ENOENT when
 * there is no such line, -EINVAL or -ERANGE for a bad value. */
static int find_kb(const char *text, const char *key, uint64_t *ret) {
        size_t klen = strlen(key);

        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                char buf[32];
                const char *v;
                size_t n;
                uint64_t x;

                if (strncmp(line, key, klen) != 0 || line[klen] != ':')
                        continue;
                v = line + klen + 1;
                v += strspn(v, " \t");
                n = strspn(v, "0123456789");
                if (n == 0 || n >= sizeof(buf))
                        return -EINVAL;
                memcpy(buf, v, n);
                buf[n] = '\0';
                if (cub_safe_atou64(buf, &x) < 0)
                        return -EINVAL;
                if (strncmp(v + n, " kB", 3) == 0) {
                        if (x > UINT64_MAX / 1024)
                                return -ERANGE;
                        x *= 1024;
                }
                *ret = x;
                return 0;
        }
        return -ENOENT;
}

int cub_meminfo_parse(const char *path, const char *text, CubMeminfo *ret, CubError *err) {
        static const struct {
                const char *key;
                size_t off;
                bool required;
        } keys[] = {
                { "MemTotal", offsetof(CubMeminfo, mem_total), true },
                { "MemFree", offsetof(CubMeminfo, mem_free), true },
                { "MemAvailable", offsetof(CubMeminfo, mem_available), false },
                { "Inactive(file)", offsetof(CubMeminfo, inactive_file), false },
                { "AnonPages", offsetof(CubMeminfo, anon_pages), false },
                { "SwapTotal", offsetof(CubMeminfo, swap_total), false },
        };
        CubMeminfo m = {};

        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                uint64_t *v = (uint64_t *) ((char *) &m + keys[i].off);
                int r = find_kb(text, keys[i].key, v);

                if (r == -ENOENT && !keys[i].required)
                        continue;
                if (r == -ENOENT)
                        return cub_err_set(err, ENOENT, "'%s': no '%s' line", path, keys[i].key);
                if (r < 0)
                        return cub_err_set(err, -r, "'%s': bad value of '%s'", path, keys[i].key);
        }
        *ret = m;
        return 0;
}

int cub_meminfo_read(const char *proc_root, CubMeminfo *ret, CubError *err) {
        _cleanup_free_ char *text = NULL;
        char path[4096];
        int r;

        if (snprintf(path, sizeof(path), "%s/meminfo", proc_root) >= (int) sizeof(path))
                return cub_err_set(err, ENAMETOOLONG, "'%s/meminfo': path too long", proc_root);
        r = cub_read_file(path, MEMINFO_MAX, &text, NULL, err);
        if (r < 0)
                return r;
        return cub_meminfo_parse(path, text, ret, err);
}
