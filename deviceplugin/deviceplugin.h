/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * deviceplugin: kubelet's device manager as a library (prefix dp_), used by
 * the agent (agent/managers/devices.c) and by `cubelet devices`.
 *
 *  - A Registration server on <dir>/kubelet.sock (v1beta1.Registration/
 *    Register). Each registered plugin gets a thread of its own that dials
 *    <dir>/<endpoint>, calls GetDevicePluginOptions and keeps a ListAndWatch
 *    stream; what the threads learn reaches the owner's loop through
 *    dp_manager_fd()/dp_manager_dispatch() (no state is shared with them).
 *  - The resource table (capacity = every device of the last snapshot,
 *    allocatable = the healthy ones while the plugin's stream is open) and
 *    kubelet's podDevices: which pod/container holds which device IDs and the
 *    plugin's ContainerAllocateResponse for it.
 *  - The checkpoint <dir>/kubelet_internal_checkpoint in kubelet's format
 *    (PodDeviceEntries, RegisteredDevices, Checksum), written atomically
 *    after every change of the allocations.
 *
 * Everything but the plugin threads runs on the owner's thread (the agent's
 * event loop): the dp_manager_*() calls are not thread-safe and are called
 * from one thread only, and none of them waits for a plugin: an allocation
 * pass reserves its devices on the owner's thread and makes its plugin calls
 * (GetPreferredAllocation, Allocate) on a thread of its own, whose answer
 * comes back through dp_manager_dispatch() (DpManagerOptions.on_allocated);
 * PreStartContainer runs where the caller runs dp_pre_start_run() (the
 * agent's pod worker, right before CreateContainer).
 *
 * Protobuf types never leave this module: a plugin's answers are plain C.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../agent/util/err.h"

#define DP_API_VERSION "v1beta1"
#define DP_DEFAULT_DIR "/var/lib/kubelet/device-plugins"
#define DP_KUBELET_SOCKET "kubelet.sock"
#define DP_CHECKPOINT_FILE "kubelet_internal_checkpoint"
#define DP_HEALTHY "Healthy"
#define DP_UNHEALTHY "Unhealthy"
/* a device ID is at most 63 characters (kubelet's limit) */
#define DP_ID_MAX 64
/* kubelet's endpoint stop grace: a plugin whose stream ended keeps its
 * devices as capacity for this long */
#define DP_ENDPOINT_GRACE_USEC (5ULL * 60ULL * 1000000ULL)

/* Extended-resource name rules for a device plugin's resource: a domain
 * prefix ("vendor.com/x"), not in kubernetes.io/, not "requests.", a
 * qualified name. 0 or -EINVAL with kubelet's message. */
int dp_validate_resource_name(const char *name, CubError *err);

/* ---- a plugin's answer for one container, in plain C ----------------------- */

typedef struct DpKeyValue {
        char *key;
        char *value;
} DpKeyValue;

typedef struct DpMount {
        char *container_path;
        char *host_path;
        bool read_only;
} DpMount;

typedef struct DpDeviceSpec {
        char *container_path;
        char *host_path;
        char *permissions; /* "rw", "rwm", ... */
} DpDeviceSpec;

typedef struct DpContainerResponse {
        DpKeyValue *envs; /* sorted by key */
        size_t n_envs;
        DpMount *mounts;
        size_t n_mounts;
        DpDeviceSpec *devices;
        size_t n_devices;
        DpKeyValue *annotations; /* sorted by key */
        size_t n_annotations;
        /* the protobuf-encoded ContainerAllocateResponse (the checkpoint's
         * AllocResp); NULL when not known (an allocation adopted from the
         * runtime after a corrupt checkpoint, before Allocate ran again) */
        uint8_t *raw;
        size_t raw_len;
} DpContainerResponse;

void dp_container_response_done(DpContainerResponse *r);
/* Decodes a ContainerAllocateResponse (keeps a copy of raw). */
int dp_container_response_from_raw(const uint8_t *raw, size_t len, DpContainerResponse *ret, CubError *err);

/* ---- resources ------------------------------------------------------------- */

typedef struct DpDevice {
        char id[DP_ID_MAX];
        bool healthy;
        int numa; /* -1: no topology */
} DpDevice;

typedef struct DpResource {
        char *name;     /* "nvidia.com/gpu" */
        char *endpoint; /* socket file name in the directory, "" when only known from the checkpoint */
        bool connected; /* its ListAndWatch stream is open */
        bool pre_start_required;
        bool preferred_allocation_available;
        DpDevice *devices; /* the last ListAndWatch snapshot, in the plugin's order */
        size_t n_devices;
        uint64_t registered_usec;         /* CLOCK_MONOTONIC µs of the last Register, 0 never */
        uint64_t disconnected_usec;       /* when its stream ended, 0 while connected */
        char last_error[CUB_ERR_MSG_MAX]; /* the plugin's last failure ("" none) */
} DpResource;

/* capacity: every device; allocatable: the healthy ones while connected */
size_t dp_resource_capacity(const DpResource *r);
size_t dp_resource_allocatable(const DpResource *r);

/* ---- allocations ------------------------------------------------------------ */

typedef struct DpAllocation {
        char *pod_uid;
        char *container;
        char *resource;
        char **ids; /* sorted */
        size_t n_ids;
        DpContainerResponse resp;
        /* reserved by a pass whose plugin calls have not answered yet: its
         * devices are held, it has no response and is not in the checkpoint */
        bool pending;
} DpAllocation;

/* One container of a pod, for dp_manager_allocate_pod(). */
typedef struct DpContainerRequest {
        const char *name;
        bool init;        /* an init container (its devices are reused by the later containers) */
        bool restartable; /* an init container with restartPolicy Always (a sidecar: keeps its devices) */
        /* the device-plugin resources it asks for (limits), and how many of each */
        const char *const *resources;
        const int64_t *counts;
        size_t n_resources;
        /* NUMA nodes preferred for its devices (bit n = node n; 0 = none),
         * e.g. those of its exclusive CPUs */
        uint64_t numa_mask;
} DpContainerRequest;

/* ---- the manager -------------------------------------------------------------- */

typedef struct DpManager DpManager;

/* Called from dp_manager_dispatch() on the owner's thread when a resource's
 * devices, health or connection changed. */
typedef void (*DpChangeFn)(void *userdata, const char *resource);
/* Called from dp_manager_dispatch() on the owner's thread when the plugin
 * calls of a pass that dp_manager_allocate_pod() left pending have ended:
 * r = 0 (the allocations hold the plugins' answers and are in the
 * checkpoint) or -errno with kubelet's message (nothing of the pass stays
 * allocated). took_usec: from the pass's start. */
typedef void (*DpAllocatedFn)(void *userdata, const char *pod_uid, int r, const char *message, uint64_t took_usec);

typedef struct DpManagerOptions {
        const char *dir;            /* NULL: DP_DEFAULT_DIR */
        uint64_t rpc_timeout_usec;  /* 0: 10 s; each Allocate/GetPreferredAllocation/PreStartContainer */
        DpChangeFn on_change;       /* may be NULL */
        DpAllocatedFn on_allocated; /* may be NULL */
        void *userdata;
        /* load the checkpoint but never write it nor move a corrupt one
         * aside: for `cubelet devices`, which must leave the agent's file as
         * it is (its allocations live in memory only) */
        bool checkpoint_read_only;
} DpManagerOptions;

/*
 * mkdir -p dir, removes the socket files in it (stale plugin sockets and
 * kubelet.sock; the checkpoint and other files stay), loads the checkpoint
 * (a missing one is an empty start; a corrupt or unreadable one is kept aside
 * as <file>.corrupt, noted in dp_manager_checkpoint_note() and the start is
 * empty: never an error), and serves Registration on dir/kubelet.sock.
 * The resources named in the checkpoint's RegisteredDevices exist with no
 * devices until their plugin registers again.
 */
int dp_manager_new(const DpManagerOptions *o, DpManager **ret, CubError *err);
DpManager *dp_manager_free(DpManager *m);
static inline void dp_manager_freep(DpManager **m) {
        if (*m)
                dp_manager_free(*m);
}
const char *dp_manager_dir(const DpManager *m);
/* "" when the checkpoint was read fine or was absent; else why it was not used */
const char *dp_manager_checkpoint_note(const DpManager *m);

/* A descriptor that becomes readable when dp_manager_dispatch() has work. */
int dp_manager_fd(DpManager *m);
/* Applies what the plugin threads queued; calls on_change. Returns the
 * number of changes applied (>= 0). */
int dp_manager_dispatch(DpManager *m);

size_t dp_manager_n_resources(const DpManager *m);
const DpResource *dp_manager_resource(const DpManager *m, size_t i);
const DpResource *dp_manager_find(const DpManager *m, const char *name);

/* Healthy devices of resource held by no allocation (sorted IDs, strv). */
int dp_manager_free_devices(const DpManager *m, const char *resource, char ***ret, size_t *ret_n, CubError *err);

/*
 * kubelet's allocation pass for one pod, all or nothing: for each container
 * in order (init containers first), for each resource: the devices it holds
 * already (restart) or devices freed by the pod's earlier non-restartable init
 * containers, then free healthy devices of the own choice (on the
 * containers' NUMA nodes first, then the fewest NUMA nodes, then the lowest
 * ID). The choice is made and reserved here, on the owner's thread; the
 * plugin calls run on the pass's thread: GetPreferredAllocation where the
 * plugin offers it (its answer replaces the reservation when its devices are
 * still free), then Allocate (one call per container and resource).
 * Returns 0 when nothing needed a plugin call (the devices are held
 * already), 1 when the pass is pending (on_allocated tells the end; the
 * checkpoint is written then, with the answers), or -errno when the choice
 * failed (nothing stays allocated for the pod). err holds kubelet's message
 * (the caller rejects with reason UnexpectedAdmissionError):
 *   "Requested number of devices unavailable for nvidia.com/gpu. Requested: 2, Available: 1"
 *   "Allocate failed due to <the plugin's error>, which is unexpected" (on_allocated)
 *   "Resource nvidia.com/gpu has no registered device plugin" (never registered)
 */
int dp_manager_allocate_pod(DpManager *m, const char *pod_uid, const DpContainerRequest *containers, size_t n,
                            CubError *err);
/* Whether the pod has a pass in flight. */
bool dp_manager_pod_pending(const DpManager *m, const char *pod_uid);

/* PreStartContainer of one container, for the resources whose plugin asks
 * for it: captured on the owner's thread (*ret NULL when there is none),
 * run on any thread (kubelet's 30 s deadline per call, a channel of its
 * own); the error names the resource and the plugin's socket. */
typedef struct DpPreStart DpPreStart;
int dp_manager_pre_start_prepare(DpManager *m, const char *pod_uid, const char *container, DpPreStart **ret,
                                 CubError *err);
int dp_pre_start_run(DpPreStart *ps, CubError *err);
DpPreStart *dp_pre_start_free(DpPreStart *ps);

/* The container's allocations (one per resource), NULL/0 when none.
 * -EINPROGRESS while the pod's pass is pending. When an allocation has no
 * response (adopted), Allocate is called again first (blocking: the only
 * plugin call on the owner's thread, after a corrupt checkpoint). */
int dp_manager_container_allocations(DpManager *m, const char *pod_uid, const char *container,
                                     const DpAllocation *const **ret, size_t *ret_n, CubError *err);
/* Every allocation, for status. */
size_t dp_manager_n_allocations(const DpManager *m);
const DpAllocation *dp_manager_allocation(const DpManager *m, size_t i);
/* Frees the pod's devices (a pending pass is cancelled) and writes the
 * checkpoint; 0 also when it held none. */
int dp_manager_release_pod(DpManager *m, const char *pod_uid, CubError *err);
/* Releases the allocations of every pod not in uids (after a restart). */
int dp_manager_retain_pods(DpManager *m, const char *const *uids, size_t n, CubError *err);
/*
 * Records an allocation the runtime shows (a running container's device IDs,
 * from its labels) when the checkpoint did not have it; no plugin call.
 * -EBUSY when an ID is held by another pod.
 */
int dp_manager_adopt(DpManager *m, const char *pod_uid, const char *container, const char *resource,
                     const char *const *ids, size_t n, CubError *err);
