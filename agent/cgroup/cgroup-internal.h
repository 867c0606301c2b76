/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared between the files of agent/cgroup and their unit tests only: the driver
 * table (crun's cgroup managers) and the writer object it works on.
 *
 * CgWriter (writer.c) is the front: it validates the group path, picks
 * create or update, and reads every written file back. A CgDriver does the
 * kernel work. Every operation follows the error contract of util/err.h;
 * a driver that cannot do something returns -EOPNOTSUPP with a message, it
 * never leaves a slot NULL, so the table's shape never changes.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"

typedef struct CgDriver CgDriver;

struct CgWriter {
        const CgDriver *driver;
        char *root;   /* as given: for messages and inotify watches */
        int root_fd;  /* O_PATH|O_DIRECTORY on root; every operation is relative to it */
        bool unified; /* statfs() said CGROUP2_SUPER_MAGIC, detected once in cg_writer_new_full() */
        void *data;   /* the driver's own (systemd: the bus connection) */
};

struct CgDriver {
        const char *name;
        CgDriverKind kind;
        /* Checks that the driver can work on w (root already open). */
        int (*init)(CgWriter *w, CubError *err);
        /* 1 if the group exists, 0 if not. */
        int (*exists)(CgWriter *w, const char *path, CubError *err);
        /* Creates the group and its missing parents, enabling the controllers
         * of g's files in every parent's cgroup.subtree_control. Writes nothing
         * else. An existing group is fine. */
        int (*create)(CgWriter *w, const CgGroupValues *g, CubError *err);
        /* Writes g's files in their order, stopping at the first failure. */
        int (*update)(CgWriter *w, const CgGroupValues *g, CubError *err);
        /* One file, trailing newlines stripped; -ERANGE when buf is too small. */
        int (*read)(CgWriter *w, const char *path, const char *file, char *buf, size_t size, CubError *err);
        /* Returns once no process is left in the group's subtree ('populated 0'
         * in cgroup.events), or -ETIMEDOUT after timeout_usec. A missing group
         * is empty. */
        int (*wait_unpopulated)(CgWriter *w, const char *path, uint64_t timeout_usec, CubError *err);
        /* Removes the (empty) group, and empty child groups left in it; a
         * missing group is fine. */
        int (*destroy)(CgWriter *w, const char *path, CubError *err);
        /* Frees what init left in w->data. */
        void (*done)(CgWriter *w);
};

extern const CgDriver cg_driver_cgroupfs;
extern const CgDriver cg_driver_systemd;

/* NULL for a kind outside the table. */
const CgDriver *cg_driver_get(CgDriverKind kind);

typedef enum CgWriterFlags {
        /* Accept a root that is not a cgroup v2 mount (unit tests' tmpdir trees). */
        CG_WRITER_ANY_FS = 1 << 0,
} CgWriterFlags;

int cg_writer_new_full(const char *cgroup_root, CgDriverKind driver, CgWriterFlags flags, CgWriter **ret,
                       CubError *err);

/* The cgroupfs driver's file work, shared with the systemd driver (which
 * reads the files of its slices the same way). */
int cg_fs_exists(CgWriter *w, const char *path, CubError *err);
int cg_fs_read(CgWriter *w, const char *path, const char *file, char *buf, size_t size, CubError *err);
int cg_fs_wait_unpopulated(CgWriter *w, const char *path, uint64_t timeout_usec, CubError *err);
/* 1 when the group's cgroup.events says 'populated 1', 0 when not or when
 * the group is missing. */
int cg_fs_populated(CgWriter *w, const char *path, CubError *err);

/* A group path the writer accepts: relative, not empty, no '.', '..' or
 * empty components. */
bool cg_path_is_valid(const char *path);
