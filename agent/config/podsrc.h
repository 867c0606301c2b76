/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/config: pod sources. The manifest directory (kubelet's
 * staticPodPath): one pod per file, JSON or YAML; dotfiles and editor
 * temporary files are ignored, subdirectories are not entered, and an empty
 * file counts as one still being written. A file that
 * does not decode is reported with its error and never costs the others.
 */

#include <stdbool.h>
#include <stddef.h>

#include "../pod/pod.h"
#include "../util/err.h"

typedef struct PodsrcEntry {
        char *path;  /* absolute path of the manifest */
        Pod *pod;    /* NULL when the file is bad */
        char *error; /* the one-line message when pod is NULL */
} PodsrcEntry;

typedef struct PodsrcSet {
        PodsrcEntry *items;
        size_t n;
} PodsrcSet;

/* true for names the directory source skips: ".x", "x~", "x.swp", "x.swx",
 * "x.tmp", "#x#", "4913" (vim's probe file) */
bool podsrc_ignored_name(const char *name);

/* Reads every manifest in dir, sorted by name. Fails only when dir itself
 * cannot be read. Two files defining the same pod: the later one is an
 * error naming the earlier. */
int podsrc_dir_scan(const char *dir, const char *node_name, PodsrcSet *ret, CubError *err);
void podsrc_set_done(PodsrcSet *s);

/* Reads one manifest of dir (the inotify fast path): 0 with ret's pod or
 * error filled; -ENOENT when there is nothing to read (an ignored name, a
 * file that is gone, not a regular file or still empty); -ENOMEM. */
int podsrc_file_read(const char *dir, const char *name, const char *node_name, PodsrcEntry *ret);
void podsrc_entry_done(PodsrcEntry *e);
