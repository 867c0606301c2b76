/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * cubelet-gpu-plugin internals, shared between the .c files of deviceplugin/gpu/ and
 * their unit tests only.
 *
 *   alloc.c   pure: replica IDs, NVIDIA_VISIBLE_DEVICES, Allocate's device
 *             nodes, GetPreferredAllocation's choice, the XID filter
 *   nvml.c    NVML through dlopen: discovery and the XID event loop
 *   server.c  the v1beta1.DevicePlugin handlers over a locked GpuState
 *   main.c    options, the sd-event loop, inotify, registration, signals
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/util/err.h"
#include "proto/grpcx.h"

#define GPU_RESOURCE_NAME "nvidia.com/gpu"
#define GPU_SOCKET_NAME "cubelet-gpu.sock"
#define GPU_UUID_MAX 96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define GPU_NAME_MAX 96
#define GPU_REPLICA_SEP "::"
#define GPU_REPLICAS_MAX 1024
#define GPU_NVML_DEFAULT "libnvidia-ml.so.1"

/* one physical GPU as NVML reports it */
typedef struct GpuDevice {
        char uuid[GPU_UUID_MAX];
        char name[GPU_NAME_MAX];
        char bus_id[32]; /* "0000:3b:00.0", or "" when unknown */
        unsigned minor;  /* /dev/nvidia<minor> */
        unsigned index;  /* NVML index */
        int numa;        /* NUMA node, -1 when unknown */
        bool healthy;
        void *handle; /* nvmlDevice_t */
} GpuDevice;

/* ---- alloc.c: pure ---------------------------------------------------------- */

/* "<uuid>::<k>" → uuid and k; a plain "<uuid>" gives *ret_replica = -1.
 * -EINVAL on an empty uuid, a bad k or a uuid longer than uuid_size - 1. */
int gpu_id_parse(const char *id, char *ret_uuid, size_t uuid_size, int *ret_replica);
/* replica < 0: the plain uuid. -ENAMETOOLONG when it does not fit. */
int gpu_id_format(const char *uuid, int replica, char *buf, size_t size);
/* The device an advertised ID names: with replicas >= 2 only "<uuid>::<k>"
 * with k < replicas, otherwise only the plain uuid. -ENOENT otherwise. */
int gpu_id_lookup(const GpuDevice *devs, size_t n_devs, unsigned replicas, const char *id, size_t *ret_index);

/* The UUIDs of devs[idx[i]], sorted, without duplicates, joined by ','. */
int gpu_visible_devices(const GpuDevice *devs, const size_t *idx, size_t n_idx, char **ret);

/* The control nodes Allocate adds when they exist under --dev-root. */
extern const char *const gpu_control_nodes[3];

/* What Allocate hands out for one container. */
typedef struct GpuAlloc {
        char *visible; /* NVIDIA_VISIBLE_DEVICES */
        char **paths;  /* /dev/nvidia<minor> by minor, then the present control nodes */
        size_t n_paths;
} GpuAlloc;
void gpu_alloc_done(GpuAlloc *a);

/* ids → GpuAlloc. control_present[i]: gpu_control_nodes[i] exists.
 * -EINVAL with "unknown device ID 'X'" / "device 'X' is unhealthy". */
int gpu_alloc_container(const GpuDevice *devs, size_t n_devs, unsigned replicas, const char *const *ids, size_t n_ids,
                        const bool control_present[3], GpuAlloc *ret, CubError *err);

/*
 * GetPreferredAllocation for one container: the must-include IDs first,
 * then devices all on one NUMA node if possible, then the fewest distinct
 * GPUs (replicas of GPUs already chosen first), then the lowest GPU index.
 * *ret is an array of `size` pointers into available/must (not copies).
 * -EINVAL when impossible or an ID is unknown.
 */
int gpu_preferred(const GpuDevice *devs, size_t n_devs, unsigned replicas, const char *const *available,
                  size_t n_available, const char *const *must, size_t n_must, int size, const char ***ret,
                  CubError *err);

#define GPU_EVENT_XID_CRITICAL 0x8ULL
#define GPU_XIDS_MAX 64
#define GPU_DEFAULT_IGNORED_XIDS 7

/* Which XIDs make a GPU unhealthy: every XidCriticalError but the ignored
 * ones; none when off. */
typedef struct GpuXidPolicy {
        bool off;
        size_t n_ignored;
        unsigned long long ignored[GPU_XIDS_MAX];
} GpuXidPolicy;
/* 13 31 43 45 68 94 109: caused by an application, the GPU stays usable */
extern const unsigned long long gpu_default_ignored_xids[GPU_DEFAULT_IGNORED_XIDS];
void gpu_xid_policy_default(GpuXidPolicy *p);
/* --health-ignore-xids: "13,31,..." replaces the ignored list, "none"
 * empties it. -EINVAL naming the item that is not an XID. */
int gpu_xid_policy_parse(GpuXidPolicy *p, const char *list, CubError *err);
/* NVIDIA's plugin's variables, as it reads them: DP_DISABLE_HEALTHCHECKS
 * "all" (or "xids") turns the checks off, a list adds ignored XIDs;
 * DP_ENABLE_HEALTHCHECKS "all" ignores none, a list makes those critical.
 * NULL or "" leaves p alone. */
int gpu_xid_policy_env(GpuXidPolicy *p, const char *disable, const char *enable, CubError *err);
/* An NVML event that makes its GPU unhealthy. */
bool gpu_xid_is_critical(const GpuXidPolicy *p, unsigned long long event_type, unsigned long long xid);

/* ---- devchar.c -------------------------------------------------------------- */

/* For every character device <dev_root>/dev/nvidia* and
 * <dev_root>/dev/nvidia-caps/nvidia-cap*: <dev_root>/dev/char/<major>:<minor>
 * is made (or fixed) a link to it, "../nvidia0" as udev makes them, so that
 * systemd resolves the DeviceAllow= paths runc gives it. *ret_made: links
 * made or fixed. Every node is tried; the first error is returned (the others
 * logged); a /dev/char entry that is not a link is left alone (-EEXIST). */
int gpu_devchar_links(const char *dev_root, unsigned *ret_made, CubError *err);

/* ---- nvml.c ----------------------------------------------------------------- */

typedef struct GpuNvml GpuNvml;

/* dlopen + nvmlInit_v2 + discovery. sys_root: for /bus/pci/devices/<id>/numa_node. */
int gpu_nvml_open(const char *library, const char *sys_root, GpuNvml **ret, CubError *err);
GpuNvml *gpu_nvml_close(GpuNvml *nv);
/* the GPUs found (owned by nv) */
const GpuDevice *gpu_nvml_devices(const GpuNvml *nv, size_t *ret_n);
const char *gpu_nvml_driver_version(const GpuNvml *nv);

/* Sets up the event set for every device; -EOPNOTSUPP (with a message) when
 * the event API is missing or refuses. */
int gpu_nvml_events_open(GpuNvml *nv, CubError *err);
/* One wait (timeout_ms). 1 with the uuid and the XID filled when an
 * XidCriticalError-type event came (ret_uuid "" when its device is
 * unknown), 0 on timeout or another event, -errno on failure. */
int gpu_nvml_events_wait(GpuNvml *nv, unsigned timeout_ms, char *ret_uuid, size_t uuid_size,
                         unsigned long long *ret_type, unsigned long long *ret_xid, CubError *err);

/* Does the GPU work: NVML answers for it (its UUID; its memory unless NOT_SUPPORTED)
 * and no page retirement or row remapping is pending or failed (where NVML
 * has those calls). 0, or -errno with what is wrong. */
int gpu_nvml_probe(GpuNvml *nv, const char *uuid, CubError *err);

/* ---- server.c --------------------------------------------------------------- */

/* The device state the handlers and the health thread share. */
typedef struct GpuState {
        pthread_mutex_t lock;
        pthread_cond_t changed;
        GpuDevice *devs; /* a copy, owned */
        size_t n_devs;
        unsigned replicas;
        uint64_t generation; /* bumped on every change */
        bool stopping;
        char *dev_root;
} GpuState;

int gpu_state_init(GpuState *st, unsigned replicas, const char *dev_root);
void gpu_state_done(GpuState *st);
/* replaces the device list (copied) */
int gpu_state_set_devices(GpuState *st, const GpuDevice *devs, size_t n);
/* sets the health of the GPU with this uuid ("" = all); 1 if something changed */
int gpu_state_set_health(GpuState *st, const char *uuid, bool healthy);
/* stopping: wakes every ListAndWatch handler so that it returns (before
 * grpcx_server_stop(), which joins them); false again once it returned */
void gpu_state_stop(GpuState *st, bool stopping);

/* the five v1beta1.DevicePlugin methods, userdata: GpuState */
const GrpcxMethod *gpu_server_methods(size_t *ret_n);

/* ---- nvml.c: the health thread ---------------------------------------------- */

typedef struct GpuHealth GpuHealth;
/* Waits for NVML events (5 s at a time, or recheck_usec when shorter) and
 * marks GPUs unhealthy on the XIDs pol calls critical (or all on a failing
 * wait). With recheck_usec > 0 such a GPU is probed (gpu_nvml_probe) once
 * that long has passed since its last critical XID, then every recheck_usec,
 * and is healthy again when the probe passes. nv's event set must be open;
 * nv and st outlive it. */
int gpu_health_start(GpuNvml *nv, GpuState *st, const GpuXidPolicy *pol, uint64_t recheck_usec, GpuHealth **ret,
                     CubError *err);
GpuHealth *gpu_health_stop(GpuHealth *h);
