/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdint.h>

#include "err.h"

/*
 * /proc/meminfo, read in one place for the node's capacity (agent/node),
 * the eviction manager's memory.available (eviction/signals.c) and the
 * node's stats (agent/api/resource.c). Values in bytes. MemTotal and MemFree
 * must be there; a line the kernel does not have (MemAvailable before 3.14,
 * SwapTotal without swap support) reads 0.
 */
typedef struct CubMeminfo {
        uint64_t mem_total;
        uint64_t mem_free;
        uint64_t mem_available;
        uint64_t inactive_file; /* "Inactive(file)" */
        uint64_t anon_pages;    /* "AnonPages" */
        uint64_t swap_total;
} CubMeminfo;

/* Parses the text of a meminfo file; errors name path and the line. */
int cub_meminfo_parse(const char *path, const char *text, CubMeminfo *ret, CubError *err);

/* Reads <proc_root>/meminfo ("/proc" on a node; a fixture tree in tests). */
int cub_meminfo_read(const char *proc_root, CubMeminfo *ret, CubError *err);
