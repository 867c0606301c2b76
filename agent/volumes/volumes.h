/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/volumes: a pod's volumes as kubelet 1.28-1.31 sets them up
 * (pkg/volume/{hostpath,emptydir,downwardapi,projected}, AtomicWriter,
 * SetVolumeOwnership, kubelet_pods.go makeMounts). Every host path is under
 * a root the caller gives (VolRoots), so the tests run on a temporary tree.
 *
 *  - pure: downward API values and kubelet's formatting, the tmpfs size
 *    rule, $(VAR) expansion of subPathExpr, the volume directories;
 *  - on the host: hostPath type checks (creating for *OrCreate), emptyDir
 *    directories and Memory tmpfs mounts, downwardAPI files written as
 *    AtomicWriter does, fsGroup ownership, subPath resolution, usage, and
 *    the teardown of a pod's volumes.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../pod/pod.h"
#include "../util/err.h"

/* kubelet's plugin directory names under <pod dir>/volumes */
#define VOL_DIR_EMPTY_DIR "kubernetes.io~empty-dir"
#define VOL_DIR_DOWNWARD_API "kubernetes.io~downward-api"
#define VOL_DIR_PROJECTED "kubernetes.io~projected"
#define VOL_DIR_CONFIG_MAP "kubernetes.io~configmap"
#define VOL_DIR_SECRET "kubernetes.io~secret"

typedef struct VolRoots {
        const char *pods_dir; /* <state-dir>/pods: <pods_dir>/<uid>/volumes/<plugin>/<name> */
        bool mount_tmpfs;     /* false in tests without CAP_SYS_ADMIN: a Memory emptyDir is a plain dir */
} VolRoots;

/* What the downward API and the tmpfs size fall back to (node allocatable). */
/* One file whose content the API server provides (a projected
 * serviceAccountToken, a key of a ConfigMap or Secret); both malloc'd,
 * data NUL-terminated after its size bytes (a Secret's may hold NULs). */
typedef struct VolApiFile {
        char *path;
        char *data;
        size_t size;
} VolApiFile;
void vol_api_files_free(VolApiFile *f, size_t n);

typedef struct VolNode {
        int64_t cpu_milli;         /* allocatable cpu, millicores */
        int64_t memory;            /* allocatable memory, bytes */
        int64_t ephemeral_storage; /* allocatable ephemeral-storage, bytes */
        /* the files of a projected item of source serviceAccountToken or
         * configMap (none for a missing optional ConfigMap); NULL: no API
         * server, such an item fails */
        int (*api_files)(void *userdata, const Pod *pod, const PodDownwardFile *f, VolApiFile **ret, size_t *ret_n,
                         CubError *err);
        void *api_userdata;
} VolNode;

/* ---- pure --------------------------------------------------------------------- */

/* "<pods_dir>/<uid>/volumes/<plugin>/<name>" for emptyDir, downwardAPI and
 * projected volumes; the host path itself for hostPath. */
int vol_path(const VolRoots *roots, const char *uid, const PodVolume *v, char *buf, size_t size, CubError *err);
/* "<pods_dir>/<uid>/volumes" */
int vol_pod_dir(const VolRoots *roots, const char *uid, char *buf, size_t size, CubError *err);

/* kubelet's fieldpath.FormatMap: `key="value"` lines sorted by key, the
 * value quoted as Go's %q; no newline after the last. malloc'd. */
char *vol_format_map(const PodStringMap *m);

/* ExtractContainerResourceValue: ceil(value / divisor) (cpu in millis,
 * others in units), as text into buf. A limit the container does not set
 * is the node's allocatable; a request it does not set is its limit (API
 * defaulting), else 0. -EINVAL for an unknown resource. */
int vol_resource_value(const PodContainer *c, const char *resource, CubQuantity divisor, const VolNode *node, char *buf,
                       size_t size, CubError *err);

/* The content of one downwardAPI file (malloc'd in *ret); a resourceFieldRef
 * limit not set is the pod-level limit when the pod has one
 * (pod_downward_allocatable), else node's allocatable. */
int vol_downward_value(const Pod *pod, const PodDownwardFile *f, const VolNode *node, char **ret, CubError *err);

/* kubelet's calculateEmptyDirMemorySize: node allocatable memory, lowered
 * to the pod's memory limit (pod_memory_limit, 0 = none) and then to the
 * volume's sizeLimit when each is positive and not larger. */
int64_t vol_tmpfs_size(const PodVolume *v, int64_t pod_memory_limit, int64_t node_allocatable_memory);

/* kubelet's ExpandContainerVolumeMounts: $(VAR) from envs (flat key, value,
 * ..., NULL), $$ is a literal $; a variable without a non-empty value is
 * "missing value for A, B" (sorted). */
int vol_expand(const char *expr, char *const *envs, char **ret, CubError *err);

/* ---- on the host ------------------------------------------------------------------- */

/* hostPath's checkType: *OrCreate make the directory (MkdirAll 0755) or an
 * empty file (0644, the parent must exist); a mismatch is
 * "hostPath type check failed: <path> is not a directory" etc. */
int vol_host_path_check(const char *path, const char *type, CubError *err);

/* AtomicWriter: writes files (paths relative to dir, contents, modes) into
 * a new "..<timestamp>" directory, swaps the "..data" symlink to it, links
 * each top-level name to "..data/<name>" and removes the previous payload
 * and names no longer written. Skipped when the payload is unchanged. */
typedef struct VolFile {
        const char *path;
        const char *data;
        size_t size;
        int32_t mode;
} VolFile;
int vol_atomic_write(const char *dir, const VolFile *files, size_t n, CubError *err);

/* SetVolumeOwnership: group fsGroup and rw (or ro) group bits on every
 * file, setgid on directories; with on_root_mismatch nothing is done when
 * the root already has the group and the bits. */
int vol_set_ownership(const char *dir, int64_t fs_group, bool readonly, bool on_root_mismatch, CubError *err);

/* Sets up every volume of the pod (hostPath checks, emptyDir directories
 * and tmpfs, downwardAPI files, fsGroup); idempotent, so it also serves a
 * pod adopted after a restart (a tmpfs already mounted stays as it is).
 * A failure names the volume as kubelet's FailedMount event:
 * `MountVolume.SetUp failed for volume "data" : hostPath type check failed: ...`. */
int vol_pod_setup(const VolRoots *roots, const Pod *pod, int64_t pod_memory_limit, const VolNode *node, CubError *err);
/* Writes the files of downwardAPI or projected volume v at path. */
int vol_items_write(const char *path, const Pod *pod, const PodVolume *v, const VolNode *node, CubError *err);
/* Writes the pod's downwardAPI and projected volumes again (a token
 * refreshed, a ConfigMap changed, the pod's labels or annotations changed;
 * an unchanged payload is left as it is). */
int vol_pod_refresh_api(const VolRoots *roots, const Pod *pod, const VolNode *node, CubError *err);
/* Unmounts the pod's tmpfs volumes and removes <pods_dir>/<uid>/volumes
 * (and <pods_dir>/<uid> when it is then empty). */
int vol_pod_teardown(const VolRoots *roots, const char *uid, CubError *err);
/* The UIDs that have a volumes directory under pods_dir (malloc'd strv). */
int vol_list_pods(const VolRoots *roots, char ***ret, size_t *ret_n, CubError *err);

typedef enum VolPropagation {
        VOL_PROPAGATION_PRIVATE, /* CRI PROPAGATION_PRIVATE = 0 */
        VOL_PROPAGATION_HOST_TO_CONTAINER,
        VOL_PROPAGATION_BIDIRECTIONAL,
} VolPropagation;

typedef struct VolMount {
        char *container_path;
        char *host_path;
        bool readonly;
        VolPropagation propagation;
} VolMount;

/* kubelet's makeMounts for one container: each volumeMount's host path
 * (subPath / subPathExpr resolved inside the volume, created when missing
 * with the volume's mode), readOnly (always for downwardAPI and projected),
 * propagation. envs: the container's env as a flat list (subPathExpr). */
int vol_container_mounts(const VolRoots *roots, const Pod *pod, const PodContainer *c, char *const *envs,
                         VolMount **ret, size_t *ret_n, CubError *err);
void vol_mounts_free(VolMount *m, size_t n);

/* Resolves sub (relative, no "..") inside base: creates it when missing
 * (mode of base), and fails when a symlink leads out of base. */
int vol_subpath(const char *base, const char *sub, char **ret, CubError *err);

/* Bytes used under dir (du: blocks of every file, hard links once, not
 * crossing into other mounts). */
int vol_usage(const char *dir, uint64_t *ret, CubError *err);

/* ---- local storage limits (storage.c, pure) ------------------------------- */

/* kubelet's evictions{eviction_signal} labels */
#define VOL_SIGNAL_POD_LIMIT "ephemeralpodfs.limit"
#define VOL_SIGNAL_CONTAINER_LIMIT "ephemeralcontainerfs.limit"

typedef struct VolContainerUsage {
        const char *name;
        uint64_t rootfs; /* its writable layer (CRI ContainerStats) */
        uint64_t logs;   /* its directory under podLogsDir */
} VolContainerUsage;

typedef struct VolPodUsage {
        const VolContainerUsage *containers; /* one per container name */
        size_t n_containers;
        uint64_t volumes; /* the local ephemeral volumes: emptyDirs on disk */
} VolPodUsage;

typedef struct VolStorageVerdict {
        const char *signal; /* VOL_SIGNAL_* */
        char message[512];  /* kubelet's text, with its trailing space */
        uint64_t used;
} VolStorageVerdict;

/* Whether the pod has an ephemeral-storage limit at all (PodLimits: any
 * container, init or sidecar sets one), i.e. whether it needs measuring. */
bool vol_storage_limited(const Pod *pod);

/* kubelet's podEphemeralStorageLimitEviction then
 * containerEphemeralStorageLimitEviction on measured usages: the pod's
 * usage (containers' writable layers and logs + volumes) over PodLimits'
 * ephemeral-storage, or a container's (writable layer + logs) over its
 * own limit. Returns 1 with *ret filled when the pod is to be evicted, 0
 * when it is within its limits, a negative errno on error. */
int vol_storage_check(const Pod *pod, const VolPodUsage *u, VolStorageVerdict *ret, CubError *err);
