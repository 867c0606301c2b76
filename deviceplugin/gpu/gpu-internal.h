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
/* An NVML event that makes its GPU unhealthy: an XidCriticalError whose
 * XID is not one of the application-caused ones (13 31 43 45 68 109). */
bool gpu_xid_is_critical(unsigned long long event_type, unsigned long long xid);

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
/* marks the GPU with this uuid ("" = all) unhealthy; 1 if something changed */
int gpu_state_mark_unhealthy(GpuState *st, const char *uuid);
/* stopping: wakes every ListAndWatch handler so that it returns (before
 * grpcx_server_stop(), which joins them); false again once it returned */
void gpu_state_stop(GpuState *st, bool stopping);

/* the five v1beta1.DevicePlugin methods, userdata: GpuState */
const GrpcxMethod *gpu_server_methods(size_t *ret_n);

/* ---- nvml.c: the health thread ---------------------------------------------- */

typedef struct GpuHealth GpuHealth;
/* Waits for NVML events (5 s at a time) and marks GPUs unhealthy on
 * critical XIDs. nv's event set must be open; nv and st outlive it. */
int gpu_health_start(GpuNvml *nv, GpuState *st, GpuHealth **ret, CubError *err);
GpuHealth *gpu_health_stop(GpuHealth *h);
