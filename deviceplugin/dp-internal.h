/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the deviceplugin sources and their unit tests only. */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../proto/grpcx.h"
#include "deviceplugin.h"

#define DP_RPC_TIMEOUT_USEC (10ULL * 1000000ULL)
#define DP_PRE_START_TIMEOUT_USEC (30ULL * 1000000ULL)
#define DP_CHECKPOINT_MAX (16 * 1024 * 1024)

#define DP_METHOD_REGISTER "/v1beta1.Registration/Register"
#define DP_METHOD_OPTIONS "/v1beta1.DevicePlugin/GetDevicePluginOptions"
#define DP_METHOD_LIST_AND_WATCH "/v1beta1.DevicePlugin/ListAndWatch"
#define DP_METHOD_PREFERRED "/v1beta1.DevicePlugin/GetPreferredAllocation"
#define DP_METHOD_ALLOCATE "/v1beta1.DevicePlugin/Allocate"
#define DP_METHOD_PRE_START "/v1beta1.DevicePlugin/PreStartContainer"

/* ---- strv helpers (strv.c) ------------------------------------------------ */

void dp_strv_free(char **v, size_t n);
/* A sorted (strcmp) copy of v. */
int dp_strv_copy_sorted(const char *const *v, size_t n, char ***ret);
bool dp_strv_contains(const char *const *v, size_t n, const char *s);
int dp_strv_cmp(const void *a, const void *b);

/* ---- the own choice (choose.c, pure) ---------------------------------------- */

/*
 * Picks want of the n candidates (n >= want): the devices on the NUMA nodes
 * of numa_mask first; the rest from the fewest NUMA nodes (nodes with the
 * most candidates first, then the lower node id; no topology counts as a
 * node of its own); within a node the lowest IDs (strcmp). ret_idx receives
 * want indices into cands, in ID order. 0, or -EINVAL when n < want.
 */
int dp_choose_devices(const DpDevice *cands, size_t n, size_t want, uint64_t numa_mask, size_t *ret_idx);
/* A plugin's preferred answer is usable: want distinct IDs, each in avail,
 * every ID of must among them. */
bool dp_preferred_valid(const char *const *ids, size_t n_ids, const char *const *avail, size_t n_avail,
                        const char *const *must, size_t n_must, size_t want);

/* ---- the plugin calls (registry.c: over gRPC; tests replace them) ---------- */

/* A cancellable slot for the call a thread is making (dp_cancel_fire()
 * ends it at once with -ECANCELED, and every later call of that thread). */
typedef struct DpCancel {
        pthread_mutex_t lock;
        bool cancelled;
        GrpcxClientStream *call;
} DpCancel;

void dp_cancel_init(DpCancel *c);
void dp_cancel_done(DpCancel *c);
void dp_cancel_fire(DpCancel *c);

/* One plugin call, complete in itself so that any thread can make it: the
 * plugin's socket (a channel of the call's own), its deadline. */
typedef struct DpCall {
        const char *resource;
        const char *target; /* "unix://<dir>/<endpoint>" */
        uint64_t timeout_usec;
        DpCancel *cancel; /* NULL: not cancellable */
} DpCall;

/* The plugin calls; called from the allocation threads and the pod
 * workers, never with the manager's state: implementations must be
 * thread-safe. */
typedef struct DpPluginOps {
        int (*preferred)(void *ud, const DpCall *c, const char *const *avail, size_t n_avail, const char *const *must,
                         size_t n_must, size_t size, char ***ret, size_t *ret_n, CubError *err);
        int (*allocate)(void *ud, const DpCall *c, const char *const *ids, size_t n, DpContainerResponse *ret,
                        CubError *err);
        int (*pre_start)(void *ud, const DpCall *c, const char *const *ids, size_t n, CubError *err);
} DpPluginOps;

extern const DpPluginOps dp_grpc_ops;

/* ---- plugin threads and their events (registry.c) ------------------------- */

typedef struct DpPlugin DpPlugin;

typedef enum DpEventKind {
        DP_EVENT_REGISTERED, /* a new plugin (thread started) replaces the resource's */
        DP_EVENT_OPTIONS,    /* GetDevicePluginOptions answered */
        DP_EVENT_SNAPSHOT,   /* a ListAndWatch snapshot */
        DP_EVENT_ENDED,      /* the stream (or the dial) ended; error says why */
        DP_EVENT_JOB,        /* an allocation thread finished its stage (job) */
} DpEventKind;

typedef struct DpJob DpJob;

typedef struct DpEvent {
        DpEventKind kind;
        uint64_t gen;
        DpPlugin *plugin; /* REGISTERED */
        DpJob *job;       /* JOB */
        char *resource;
        char *endpoint;
        bool pre_start_required, preferred_allocation_available;
        DpDevice *devices;
        size_t n_devices;
        uint64_t usec; /* CLOCK_MONOTONIC */
        char error[CUB_ERR_MSG_MAX];
        struct DpEvent *next;
} DpEvent;

void dp_event_free(DpEvent *e);
/* Queues e (taking it) and wakes the owner's fd; any thread. */
void dp_manager_post(DpManager *m, DpEvent *e);

int dp_registry_start(DpManager *m, CubError *err);
/* Cancels the plugin's calls, joins its thread, frees it. Owner's thread. */
void dp_plugin_stop(DpPlugin *p);
GrpcxChannel *dp_plugin_channel(DpPlugin *p);

/* ---- the manager's state --------------------------------------------------- */

typedef struct DpRes {
        DpResource pub;
        DpPlugin *plugin; /* NULL: none registered now */
        uint64_t gen;     /* the plugin's generation */
} DpRes;

typedef struct DpAlloc {
        DpAllocation pub; /* pub.pending: its allocation thread has not answered */
        int *numa;        /* per ID: its NUMA node at allocation time (-1 none) */
} DpAlloc;

struct DpManager {
        char *dir;
        char *checkpoint_path;
        char *kubelet_sock;
        uint64_t rpc_timeout_usec;
        DpChangeFn on_change;
        void *userdata;
        bool checkpoint_read_only;
        char note[CUB_ERR_MSG_MAX];

        GrpcxServer *server;
        int efd;
        pthread_mutex_t lock; /* events, plugins, next_gen */
        DpEvent *events, **events_tail;
        DpPlugin *plugins; /* every plugin with a thread not yet stopped */
        uint64_t next_gen;

        DpRes **res; /* sorted by name */
        size_t n_res;
        DpAlloc **allocs;
        size_t n_allocs;
        const DpAllocation **scratch;

        const DpPluginOps *ops;
        void *ops_ud;

        DpAllocatedFn on_allocated;
        DpJob *jobs; /* allocation passes in flight (owner's thread only) */
};

/* Finds or adds (with no devices) the resource. */
int dp_manager_resource_get(DpManager *m, const char *name, DpRes **ret);
DpRes *dp_manager_res(const DpManager *m, const char *name);
/* Replaces the resource's devices (a snapshot); tests use it too. */
int dp_manager_set_devices(DpManager *m, const char *resource, const DpDevice *devs, size_t n, bool connected);
void dp_manager_set_ops(DpManager *m, const DpPluginOps *ops, void *ud);
/* Whether some allocation holds (resource, id); skip_pod: ignore that pod's. */
bool dp_manager_id_held(const DpManager *m, const char *resource, const char *id, const char *skip_pod);
/* Drops the devices of plugins disconnected longer than the grace; how many. */
int dp_manager_expire(DpManager *m, uint64_t now);

/* allocate.c */
void dp_alloc_free(DpAlloc *a);
int dp_manager_add_alloc(DpManager *m, DpAlloc *a);
DpAlloc *dp_manager_find_alloc(const DpManager *m, const char *pod, const char *container, const char *resource);
void dp_manager_remove_alloc(DpManager *m, DpAlloc *a);
/* "unix://<dir>/<endpoint>" of the resource's plugin, NULL when it is not connected (err says why) */
char *dp_manager_target(const DpManager *m, const DpRes *res, CubError *err);

/* ---- allocation passes off the owner's thread (job.c) ------------------------ */

/* One new allocation of a pass, reserved (pending) on the owner's thread. */
typedef struct DpJobItem {
        char *container, *resource, *target;
        /* GetPreferredAllocation first: the free devices when it was reserved */
        bool preferred;
        char **avail;
        size_t n_avail;
        char **ids; /* the reserved IDs, sorted */
        size_t n_ids;
        /* the thread's results */
        int r;
        CubError err;
        char **pref;
        size_t n_pref;
        DpContainerResponse resp;
} DpJobItem;

/* Starts a pass's thread for pod_uid over items (taken); stage: preferred
 * answers first when an item wants one. 0 or -errno. */
int dp_job_start(DpManager *m, const char *pod_uid, DpJobItem *items, size_t n, uint64_t started_usec, CubError *err);
void dp_job_items_free(DpJobItem *items, size_t n);
/* The owner applies a finished stage (DP_EVENT_JOB). */
void dp_job_apply(DpManager *m, DpJob *j);
bool dp_job_pending(const DpManager *m, const char *pod_uid);
/* The job an event names, or NULL (cancelled since). */
DpJob *dp_job_find(const DpManager *m, uint64_t id);
/* Cancels and joins the pod's pass (NULL: every pass); its reservations stay for the caller to drop. */
void dp_job_cancel(DpManager *m, const char *pod_uid);
/* The grpc transport of a call (registry.c): a cancellable unary call over a channel of its own. */
int dp_call_unary(const DpCall *c, const char *method, const ProtobufCMessage *req,
                  const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret, CubError *err);

/* ---- the checkpoint (checkpoint.c) ---------------------------------------- */

typedef struct DpCheckpointEntry {
        char *pod_uid, *container, *resource;
        char **ids;
        int *numa;
        size_t n_ids;
        uint8_t *raw; /* NULL: none */
        size_t raw_len;
} DpCheckpointEntry;

typedef struct DpCheckpointRes {
        char *name;
        char **ids;
        size_t n_ids;
} DpCheckpointRes;

typedef struct DpCheckpoint {
        DpCheckpointEntry *entries;
        size_t n_entries;
        DpCheckpointRes *res;
        size_t n_res;
} DpCheckpoint;

void dp_checkpoint_done(DpCheckpoint *cp);
/* The JSON text (kubelet's v2 shape, or the pre-1.21 flat DeviceIDs) →
 * cp; -EBADMSG naming the field on anything malformed or a bad checksum. */
int dp_checkpoint_parse(const char *data, size_t len, DpCheckpoint *ret, CubError *err);
/* cp → the v2 JSON text with our checksum. */
int dp_checkpoint_format(const DpCheckpoint *cp, char **ret, CubError *err);
/* FNV-32a of the compact, key-sorted dump of Data. */
uint32_t dp_checkpoint_checksum(const char *data_dump);
/* Manager side: load at start (never fails for a bad file), save after changes. */
int dp_manager_load_checkpoint(DpManager *m, CubError *err);
int dp_manager_save_checkpoint(DpManager *m, CubError *err);

/* response.c */
int dp_container_response_from_pb(const void *pb_response, DpContainerResponse *ret, CubError *err);
