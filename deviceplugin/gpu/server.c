/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The v1beta1.DevicePlugin service over a GpuState that the health thread
 * and the loop change under its lock. Unary handlers run on grpcx's serving
 * thread, each ListAndWatch on a thread of its own: they read the state
 * under the lock, build the reply with the pure functions of alloc.c and
 * never hold the lock across a grpcx call. A change bumps the generation
 * and broadcasts the condition variable the ListAndWatch handlers wait on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/util/cleanup.h"
#include "deviceplugin/deviceplugin.h"
#include "deviceplugin/gpu/gpu-internal.h"
#include "proto/deviceplugin/api.pb-c.h"

/* how often a waiting ListAndWatch handler checks that its client is still there */
#define STREAM_POLL_NSEC (200 * 1000 * 1000L)

int gpu_state_init(GpuState *st, unsigned replicas, const char *dev_root) {
        pthread_condattr_t attr;
        int r;

        *st = (GpuState){ .replicas = replicas };
        st->dev_root = strdup(dev_root);
        if (!st->dev_root)
                return -ENOMEM;
        r = pthread_condattr_init(&attr);
        if (r == 0) {
                (void) pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
                r = pthread_cond_init(&st->changed, &attr);
                (void) pthread_condattr_destroy(&attr);
        }
        if (r == 0)
                r = pthread_mutex_init(&st->lock, NULL);
        if (r != 0) {
                free(st->dev_root);
                return -r;
        }
        return 0;
}

void gpu_state_done(GpuState *st) {
        (void) pthread_mutex_destroy(&st->lock);
        (void) pthread_cond_destroy(&st->changed);
        free(st->devs);
        free(st->dev_root);
        *st = (GpuState){ 0 };
}

int gpu_state_set_devices(GpuState *st, const GpuDevice *devs, size_t n) {
        GpuDevice *copy = calloc(n ? n : 1, sizeof(*copy));

        if (!copy)
                return -ENOMEM;
        if (n)
                memcpy(copy, devs, n * sizeof(*copy));
        (void) pthread_mutex_lock(&st->lock);
        free(st->devs);
        st->devs = copy;
        st->n_devs = n;
        st->generation++;
        (void) pthread_cond_broadcast(&st->changed);
        (void) pthread_mutex_unlock(&st->lock);
        return 0;
}

int gpu_state_set_health(GpuState *st, const char *uuid, bool healthy) {
        int changed = 0;

        (void) pthread_mutex_lock(&st->lock);
        for (size_t i = 0; i < st->n_devs; i++)
                if ((!uuid[0] || strcmp(st->devs[i].uuid, uuid) == 0) && st->devs[i].healthy != healthy) {
                        st->devs[i].healthy = healthy;
                        changed = 1;
                }
        if (changed) {
                st->generation++;
                (void) pthread_cond_broadcast(&st->changed);
        }
        (void) pthread_mutex_unlock(&st->lock);
        return changed;
}

void gpu_state_stop(GpuState *st, bool stopping) {
        (void) pthread_mutex_lock(&st->lock);
        st->stopping = stopping;
        (void) pthread_cond_broadcast(&st->changed);
        (void) pthread_mutex_unlock(&st->lock);
}

/* ---- replies: every piece malloc'ed, freed by protobuf_c_message_free_unpacked */

static void free_msg(void *userdata, ProtobufCMessage *m) {
        (void) userdata;
        if (m)
                protobuf_c_message_free_unpacked(m, NULL);
}

static void msg_freep(void *p) {
        free_msg(NULL, *(ProtobufCMessage **) p);
}

static int reply_error(char *details, size_t size, int code, const char *msg) {
        (void) snprintf(details, size, "%s", msg);
        return code;
}

/* the advertised list, under st->lock */
static int build_list(const GpuState *st, V1beta1__ListAndWatchResponse **ret) {
        _cleanup_(msg_freep) V1beta1__ListAndWatchResponse *m = NULL;
        unsigned per_gpu = st->replicas >= 2 ? st->replicas : 1;
        size_t n = st->n_devs * per_gpu;

        m = malloc(sizeof(*m));
        if (!m)
                return -ENOMEM;
        *m = (V1beta1__ListAndWatchResponse) V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
        m->devices = calloc(n ? n : 1, sizeof(*m->devices));
        if (!m->devices)
                return -ENOMEM;
        for (size_t i = 0; i < st->n_devs; i++)
                for (unsigned k = 0; k < per_gpu; k++) {
                        const GpuDevice *g = &st->devs[i];
                        V1beta1__Device *d = malloc(sizeof(*d));
                        char id[GPU_UUID_MAX + 16];

                        if (!d)
                                return -ENOMEM;
                        *d = (V1beta1__Device) V1BETA1__DEVICE__INIT;
                        m->devices[m->n_devices++] = d;
                        if (gpu_id_format(g->uuid, per_gpu > 1 ? (int) k : -1, id, sizeof(id)) < 0)
                                return -ENAMETOOLONG;
                        d->id = strdup(id);
                        d->health = strdup(g->healthy ? DP_HEALTHY : DP_UNHEALTHY);
                        if (!d->id || !d->health)
                                return -ENOMEM;
                        if (g->numa < 0)
                                continue;
                        d->topology = malloc(sizeof(*d->topology));
                        if (!d->topology)
                                return -ENOMEM;
                        *d->topology = (V1beta1__TopologyInfo) V1BETA1__TOPOLOGY_INFO__INIT;
                        d->topology->nodes = calloc(1, sizeof(*d->topology->nodes));
                        if (!d->topology->nodes)
                                return -ENOMEM;
                        d->topology->nodes[0] = malloc(sizeof(*d->topology->nodes[0]));
                        if (!d->topology->nodes[0])
                                return -ENOMEM;
                        *d->topology->nodes[0] = (V1beta1__NUMANode) V1BETA1__NUMANODE__INIT;
                        d->topology->nodes[0]->id = g->numa;
                        d->topology->n_nodes = 1;
                }
        *ret = TAKE_PTR(m);
        return 0;
}

static int on_list_and_watch(void *userdata, const ProtobufCMessage *req, GrpcxStream *s, char *details,
                             size_t details_size) {
        GpuState *st = userdata;
        uint64_t sent = 0;
        bool first = true;

        (void) req;
        for (;;) {
                _cleanup_(msg_freep) V1beta1__ListAndWatchResponse *m = NULL;
                CubError err = { 0 };
                uint64_t gen;
                int r;

                (void) pthread_mutex_lock(&st->lock);
                while (!st->stopping && !first && st->generation == sent) {
                        struct timespec deadline;

                        (void) clock_gettime(CLOCK_MONOTONIC, &deadline);
                        deadline.tv_nsec += STREAM_POLL_NSEC;
                        if (deadline.tv_nsec >= 1000000000L) {
                                deadline.tv_sec++;
                                deadline.tv_nsec -= 1000000000L;
                        }
                        if (pthread_cond_timedwait(&st->changed, &st->lock, &deadline) == ETIMEDOUT) {
                                (void) pthread_mutex_unlock(&st->lock);
                                if (grpcx_stream_cancelled(s))
                                        return reply_error(details, details_size, GRPCX_CANCELLED, "client went away");
                                (void) pthread_mutex_lock(&st->lock);
                        }
                }
                if (st->stopping) {
                        (void) pthread_mutex_unlock(&st->lock);
                        return reply_error(details, details_size, GRPCX_UNAVAILABLE, "the plugin is stopping");
                }
                gen = st->generation;
                r = build_list(st, &m);
                (void) pthread_mutex_unlock(&st->lock);
                if (r < 0)
                        return reply_error(details, details_size, GRPCX_INTERNAL, strerror(-r));
                if (grpcx_stream_send(s, &m->base, &err) < 0)
                        return reply_error(details, details_size, GRPCX_CANCELLED, err.msg);
                sent = gen;
                first = false;
        }
}

static int on_options(void *userdata, const ProtobufCMessage *req, ProtobufCMessage **ret_resp, char *details,
                      size_t details_size) {
        V1beta1__DevicePluginOptions *o = malloc(sizeof(*o));

        (void) userdata;
        (void) req;
        if (!o)
                return reply_error(details, details_size, GRPCX_INTERNAL, "out of memory");
        *o = (V1beta1__DevicePluginOptions) V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        o->get_preferred_allocation_available = true;
        o->pre_start_required = false;
        *ret_resp = &o->base;
        return GRPCX_OK;
}

static int on_pre_start(void *userdata, const ProtobufCMessage *req, ProtobufCMessage **ret_resp, char *details,
                        size_t details_size) {
        V1beta1__PreStartContainerResponse *o = malloc(sizeof(*o));

        (void) userdata;
        (void) req;
        if (!o)
                return reply_error(details, details_size, GRPCX_INTERNAL, "out of memory");
        *o = (V1beta1__PreStartContainerResponse) V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
        *ret_resp = &o->base;
        return GRPCX_OK;
}

/* one container's reply from a GpuAlloc */
static int container_response(GpuAlloc *a, V1beta1__ContainerAllocateResponse **ret) {
        _cleanup_(msg_freep) V1beta1__ContainerAllocateResponse *c = NULL;
        V1beta1__ContainerAllocateResponse__EnvsEntry *e;

        c = malloc(sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (V1beta1__ContainerAllocateResponse) V1BETA1__CONTAINER_ALLOCATE_RESPONSE__INIT;
        c->envs = calloc(1, sizeof(*c->envs));
        c->devices = calloc(a->n_paths ? a->n_paths : 1, sizeof(*c->devices));
        if (!c->envs || !c->devices)
                return -ENOMEM;
        e = malloc(sizeof(*e));
        if (!e)
                return -ENOMEM;
        *e = (V1beta1__ContainerAllocateResponse__EnvsEntry) V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ENVS_ENTRY__INIT;
        c->envs[c->n_envs++] = e;
        e->key = strdup("NVIDIA_VISIBLE_DEVICES");
        e->value = TAKE_PTR(a->visible);
        if (!e->key)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_paths; i++) {
                V1beta1__DeviceSpec *d = malloc(sizeof(*d));

                if (!d)
                        return -ENOMEM;
                *d = (V1beta1__DeviceSpec) V1BETA1__DEVICE_SPEC__INIT;
                c->devices[c->n_devices++] = d;
                d->container_path = strdup(a->paths[i]);
                d->host_path = strdup(a->paths[i]);
                d->permissions = strdup("rw");
                if (!d->container_path || !d->host_path || !d->permissions)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

static void control_nodes_present(const char *dev_root, bool ret[3]) {
        for (size_t i = 0; i < ELEMENTSOF(gpu_control_nodes); i++) {
                _cleanup_free_ char *p = NULL;
                struct stat sb;

                ret[i] = asprintf(&p, "%s%s", strcmp(dev_root, "/") == 0 ? "" : dev_root, gpu_control_nodes[i]) >= 0 &&
                         stat(p, &sb) == 0;
        }
}

static int on_allocate(void *userdata, const ProtobufCMessage *req_, ProtobufCMessage **ret_resp, char *details,
                       size_t details_size) {
        const V1beta1__AllocateRequest *req = (const V1beta1__AllocateRequest *) req_;
        _cleanup_(msg_freep) V1beta1__AllocateResponse *resp = NULL;
        GpuState *st = userdata;
        bool present[3];
        int r = 0;

        control_nodes_present(st->dev_root, present);
        resp = malloc(sizeof(*resp));
        if (!resp)
                return reply_error(details, details_size, GRPCX_INTERNAL, "out of memory");
        *resp = (V1beta1__AllocateResponse) V1BETA1__ALLOCATE_RESPONSE__INIT;
        resp->container_responses =
                calloc(req->n_container_requests ? req->n_container_requests : 1, sizeof(*resp->container_responses));
        if (!resp->container_responses)
                return reply_error(details, details_size, GRPCX_INTERNAL, "out of memory");
        for (size_t i = 0; i < req->n_container_requests; i++) {
                const V1beta1__ContainerAllocateRequest *c = req->container_requests[i];
                _cleanup_(gpu_alloc_done) GpuAlloc a = { 0 };
                CubError err = { 0 };

                (void) pthread_mutex_lock(&st->lock);
                r = gpu_alloc_container(st->devs, st->n_devs, st->replicas, (const char *const *) c->devices_ids,
                                        c->n_devices_ids, present, &a, &err);
                (void) pthread_mutex_unlock(&st->lock);
                if (r < 0)
                        return reply_error(details, details_size,
                                           r == -EINVAL ? GRPCX_INVALID_ARGUMENT : GRPCX_INTERNAL, err.msg);
                r = container_response(&a, &resp->container_responses[resp->n_container_responses]);
                if (r < 0)
                        return reply_error(details, details_size, GRPCX_INTERNAL, strerror(-r));
                resp->n_container_responses++;
        }
        *ret_resp = &TAKE_PTR(resp)->base;
        return GRPCX_OK;
}

static int on_preferred(void *userdata, const ProtobufCMessage *req_, ProtobufCMessage **ret_resp, char *details,
                        size_t details_size) {
        const V1beta1__PreferredAllocationRequest *req = (const V1beta1__PreferredAllocationRequest *) req_;
        _cleanup_(msg_freep) V1beta1__PreferredAllocationResponse *resp = NULL;
        GpuState *st = userdata;

        resp = malloc(sizeof(*resp));
        if (!resp)
                return reply_error(details, details_size, GRPCX_INTERNAL, "out of memory");
        *resp = (V1beta1__PreferredAllocationResponse) V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
        resp->container_responses =
                calloc(req->n_container_requests ? req->n_container_requests : 1, sizeof(*resp->container_responses));
        if (!resp->container_responses)
                return reply_error(details, details_size, GRPCX_INTERNAL, "out of memory");
        for (size_t i = 0; i < req->n_container_requests; i++) {
                const V1beta1__ContainerPreferredAllocationRequest *c = req->container_requests[i];
                V1beta1__ContainerPreferredAllocationResponse *out;
                _cleanup_free_ const char **ids = NULL;
                CubError err = { 0 };
                int r;

                (void) pthread_mutex_lock(&st->lock);
                r = gpu_preferred(st->devs, st->n_devs, st->replicas, (const char *const *) c->available_deviceids,
                                  c->n_available_deviceids, (const char *const *) c->must_include_deviceids,
                                  c->n_must_include_deviceids, c->allocation_size, &ids, &err);
                (void) pthread_mutex_unlock(&st->lock);
                if (r < 0)
                        return reply_error(details, details_size,
                                           r == -EINVAL ? GRPCX_INVALID_ARGUMENT : GRPCX_INTERNAL, err.msg);
                out = malloc(sizeof(*out));
                if (!out)
                        return reply_error(details, details_size, GRPCX_INTERNAL, "out of memory");
                *out = (V1beta1__ContainerPreferredAllocationResponse)
                        V1BETA1__CONTAINER_PREFERRED_ALLOCATION_RESPONSE__INIT;
                resp->container_responses[resp->n_container_responses++] = out;
                out->deviceids = calloc((size_t) c->allocation_size, sizeof(*out->deviceids));
                if (!out->deviceids)
                        return reply_error(details, details_size, GRPCX_INTERNAL, "out of memory");
                for (int k = 0; k < c->allocation_size; k++) {
                        out->deviceids[k] = strdup(ids[k]);
                        if (!out->deviceids[k])
                                return reply_error(details, details_size, GRPCX_INTERNAL, "out of memory");
                        out->n_deviceids++;
                }
        }
        *ret_resp = &TAKE_PTR(resp)->base;
        return GRPCX_OK;
}

static const GrpcxMethod methods[] = {
        {
                .path = "/v1beta1.DevicePlugin/GetDevicePluginOptions",
                .request = &v1beta1__empty__descriptor,
                .unary = on_options,
                .free_resp = free_msg,
        },
        {
                .path = "/v1beta1.DevicePlugin/ListAndWatch",
                .request = &v1beta1__empty__descriptor,
                .stream = on_list_and_watch,
        },
        {
                .path = "/v1beta1.DevicePlugin/GetPreferredAllocation",
                .request = &v1beta1__preferred_allocation_request__descriptor,
                .unary = on_preferred,
                .free_resp = free_msg,
        },
        {
                .path = "/v1beta1.DevicePlugin/Allocate",
                .request = &v1beta1__allocate_request__descriptor,
                .unary = on_allocate,
                .free_resp = free_msg,
        },
        {
                .path = "/v1beta1.DevicePlugin/PreStartContainer",
                .request = &v1beta1__pre_start_container_request__descriptor,
                .unary = on_pre_start,
                .free_resp = free_msg,
        },
};

const GrpcxMethod *gpu_server_methods(size_t *ret_n) {
        *ret_n = ELEMENTSOF(methods);
        return methods;
}
