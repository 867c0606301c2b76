/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Registration server on <dir>/kubelet.sock and a thread per registered
 * plugin: dial, GetDevicePluginOptions, ListAndWatch until the stream ends.
 * The threads own nothing of the manager's state: each result is a DpEvent
 * queued to the owner (dp_manager_post). Every call a thread makes is a
 * cancellable client stream, so that dp_plugin_stop() never waits for a
 * deadline. The allocation calls (GetPreferredAllocation, Allocate,
 * PreStartContainer: dp_grpc_ops) are made by the allocation threads and
 * the pod workers, each a cancellable client stream over a channel of its
 * own (dp_call_unary), so they share nothing with the owner's state.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../agent/util/cleanup.h"
#include "../agent/util/time.h"
#include "dp-internal.h"
#include "proto/deviceplugin/api.pb-c.h"

struct DpPlugin {
        DpManager *m;
        uint64_t gen;
        char *resource, *endpoint;
        GrpcxChannel *channel;
        pthread_mutex_t lock; /* cancelled, call, thread_started */
        bool cancelled, thread_started;
        GrpcxClientStream *call;
        pthread_t thread;
        DpPlugin *next; /* on m->plugins, under m->lock */
};

GrpcxChannel *dp_plugin_channel(DpPlugin *p) {
        return p->channel;
}

static DpEvent *event_new(DpPlugin *p, DpEventKind kind) {
        DpEvent *e = calloc(1, sizeof(*e));

        if (!e)
                return NULL;
        e->kind = kind;
        e->gen = p->gen;
        e->usec = cub_now_usec(CLOCK_MONOTONIC);
        e->resource = strdup(p->resource);
        e->endpoint = strdup(p->endpoint);
        if (!e->resource || !e->endpoint) {
                dp_event_free(e);
                return NULL;
        }
        return e;
}

static void post_ended(DpPlugin *p, const char *why) {
        DpEvent *e = event_new(p, DP_EVENT_ENDED);

        if (!e)
                return;
        (void) snprintf(e->error, sizeof(e->error), "%s", why);
        dp_manager_post(p->m, e);
}

/* Starts a call unless the plugin is being stopped; the stop cancels it. */
static int plugin_call_start(DpPlugin *p, const char *method, const ProtobufCMessage *req, uint64_t timeout_usec,
                             bool wait_for_ready, CubError *err) {
        int r;

        pthread_mutex_lock(&p->lock);
        if (p->cancelled)
                r = cub_err_set(err, ECANCELED, "plugin '%s' is being replaced or stopped", p->endpoint);
        else
                r = grpcx_stream_call_start(p->channel, method, req, timeout_usec, wait_for_ready, &p->call, err);
        pthread_mutex_unlock(&p->lock);
        return r;
}

static void plugin_call_end(DpPlugin *p) {
        GrpcxClientStream *s;

        pthread_mutex_lock(&p->lock);
        s = TAKE_PTR(p->call);
        pthread_mutex_unlock(&p->lock);
        (void) grpcx_stream_call_free(s);
}

/* A ListAndWatch snapshot → an event (IDs of 64 characters or more and repeated IDs are dropped). */
static DpEvent *snapshot_event(DpPlugin *p, const V1beta1__ListAndWatchResponse *lw) {
        DpEvent *e = event_new(p, DP_EVENT_SNAPSHOT);

        if (!e)
                return NULL;
        e->devices = calloc(lw->n_devices + 1, sizeof(DpDevice));
        if (!e->devices) {
                dp_event_free(e);
                return NULL;
        }
        for (size_t i = 0; i < lw->n_devices; i++) {
                const V1beta1__Device *d = lw->devices[i];
                DpDevice *o = &e->devices[e->n_devices];
                bool dup = false;

                if (!d->id || !*d->id || strlen(d->id) >= DP_ID_MAX)
                        continue;
                for (size_t j = 0; j < e->n_devices && !dup; j++)
                        dup = strcmp(e->devices[j].id, d->id) == 0;
                if (dup)
                        continue;
                memcpy(o->id, d->id, strlen(d->id) + 1);
                o->healthy = d->health && strcmp(d->health, DP_HEALTHY) == 0;
                o->numa = -1;
                if (d->topology)
                        for (size_t j = 0; j < d->topology->n_nodes; j++) {
                                int64_t id = d->topology->nodes[j]->id;

                                if (id >= 0 && id <= 1023 && (o->numa < 0 || id < o->numa))
                                        o->numa = (int) id;
                        }
                e->n_devices++;
        }
        return e;
}

static void *plugin_main(void *arg) {
        DpPlugin *p = arg;
        V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
        ProtobufCMessage *msg = NULL;
        CubError err = {};
        DpEvent *e;
        int r;

        /* GetDevicePluginOptions: the plugin serves before it registers, but allow a slow start */
        r = plugin_call_start(p, DP_METHOD_OPTIONS, &empty.base, p->m->rpc_timeout_usec, /* wait_for_ready= */ true,
                              &err);
        if (r >= 0) {
                r = grpcx_stream_call_read(p->call, &v1beta1__device_plugin_options__descriptor, &msg, &err);
                if (r == 0)
                        r = cub_err_set(&err, EBADMSG, "'%s': %s: no reply", grpcx_channel_target(p->channel),
                                        DP_METHOD_OPTIONS);
                plugin_call_end(p);
        }
        if (r < 0) {
                post_ended(p, err.msg);
                return NULL;
        }
        e = event_new(p, DP_EVENT_OPTIONS);
        if (e) {
                const V1beta1__DevicePluginOptions *o = (const V1beta1__DevicePluginOptions *) msg;

                e->pre_start_required = o->pre_start_required;
                e->preferred_allocation_available = o->get_preferred_allocation_available;
                dp_manager_post(p->m, e);
        }
        protobuf_c_message_free_unpacked(msg, NULL);

        r = plugin_call_start(p, DP_METHOD_LIST_AND_WATCH, &empty.base, UINT64_MAX, /* wait_for_ready= */ false, &err);
        if (r < 0) {
                post_ended(p, err.msg);
                return NULL;
        }
        for (;;) {
                msg = NULL;
                r = grpcx_stream_call_read(p->call, &v1beta1__list_and_watch_response__descriptor, &msg, &err);
                if (r <= 0)
                        break;
                e = snapshot_event(p, (const V1beta1__ListAndWatchResponse *) msg);
                protobuf_c_message_free_unpacked(msg, NULL);
                if (e)
                        dp_manager_post(p->m, e);
        }
        plugin_call_end(p);
        if (r == 0)
                (void) cub_err_set(&err, EPIPE, "'%s': %s: the plugin ended the stream",
                                   grpcx_channel_target(p->channel), DP_METHOD_LIST_AND_WATCH);
        post_ended(p, err.msg);
        return NULL;
}

static void plugin_free(DpPlugin *p) {
        if (!p)
                return;
        (void) grpcx_channel_free(p->channel);
        pthread_mutex_destroy(&p->lock);
        free(p->resource);
        free(p->endpoint);
        free(p);
}

void dp_plugin_stop(DpPlugin *p) {
        DpManager *m = p->m;
        bool started;

        pthread_mutex_lock(&p->lock);
        p->cancelled = true;
        grpcx_stream_call_cancel(p->call);
        started = p->thread_started;
        pthread_mutex_unlock(&p->lock);
        if (started)
                (void) pthread_join(p->thread, NULL);

        pthread_mutex_lock(&m->lock);
        for (DpPlugin **pp = &m->plugins; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        break;
                }
        pthread_mutex_unlock(&m->lock);
        plugin_free(p);
}

/* ---- Register ------------------------------------------------------------------ */

__attribute__((format(printf, 3, 4))) static int register_fail(char *details, size_t size, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(details, size, fmt, ap);
        va_end(ap);
        return GRPCX_INVALID_ARGUMENT;
}

static int on_register(void *userdata, const ProtobufCMessage *req, ProtobufCMessage **ret_resp, char *details,
                       size_t details_size) {
        static V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
        const V1beta1__RegisterRequest *rq = (const V1beta1__RegisterRequest *) req;
        DpManager *m = userdata;
        _cleanup_free_ char *path = NULL, *target = NULL;
        CubError err = {};
        DpPlugin *p;
        DpEvent *e;
        struct stat st;
        int r;

        if (strcmp(rq->version, DP_API_VERSION) != 0)
                return register_fail(details, details_size, "version '%s' is not supported (%s)", rq->version,
                                     DP_API_VERSION);
        if (dp_validate_resource_name(rq->resource_name, &err) < 0)
                return register_fail(details, details_size, "%s", err.msg);
        if (asprintf(&path, "%s/%s", m->dir, rq->endpoint) < 0) {
                path = NULL;
                return GRPCX_RESOURCE_EXHAUSTED;
        }
        if (!*rq->endpoint || strchr(rq->endpoint, '/') || strcmp(rq->endpoint, ".") == 0 ||
            strcmp(rq->endpoint, "..") == 0)
                return register_fail(details, details_size, "endpoint '%s' must be a socket file name in '%s'",
                                     rq->endpoint, m->dir);
        if (stat(path, &st) < 0)
                return register_fail(details, details_size, "endpoint '%s': %s", path, strerror(errno));
        if (!S_ISSOCK(st.st_mode))
                return register_fail(details, details_size, "endpoint '%s': %s", path, "not a socket");

        if (asprintf(&target, "unix://%s", path) < 0) {
                target = NULL;
                return GRPCX_RESOURCE_EXHAUSTED;
        }
        p = calloc(1, sizeof(*p));
        if (!p)
                return GRPCX_RESOURCE_EXHAUSTED;
        pthread_mutex_init(&p->lock, NULL);
        p->m = m;
        p->resource = strdup(rq->resource_name);
        p->endpoint = strdup(rq->endpoint);
        r = p->resource && p->endpoint ? grpcx_channel_new(target, &p->channel, &err) : -ENOMEM;
        e = r >= 0 ? calloc(1, sizeof(*e)) : NULL;
        if (!e) {
                (void) snprintf(details, details_size, "'%s': %s", path, r < 0 ? err.msg : "out of memory");
                plugin_free(p);
                return GRPCX_INTERNAL;
        }

        pthread_mutex_lock(&m->lock);
        p->gen = ++m->next_gen;
        p->next = m->plugins;
        m->plugins = p;
        pthread_mutex_unlock(&m->lock);

        /* REGISTERED goes first: the thread's events follow it in the queue */
        e->kind = DP_EVENT_REGISTERED;
        e->gen = p->gen;
        e->plugin = p;
        e->usec = cub_now_usec(CLOCK_MONOTONIC);
        e->resource = strdup(p->resource);
        e->endpoint = strdup(p->endpoint);
        if (!e->resource || !e->endpoint) {
                dp_event_free(e);
                dp_plugin_stop(p);
                return GRPCX_RESOURCE_EXHAUSTED;
        }
        pthread_mutex_lock(&p->lock);
        dp_manager_post(m, e);
        r = pthread_create(&p->thread, NULL, plugin_main, p);
        p->thread_started = r == 0;
        if (p->thread_started)
                (void) pthread_setname_np(p->thread, "dp-plugin");
        pthread_mutex_unlock(&p->lock);
        if (r != 0)
                post_ended(p, "cannot start the plugin's thread");
        *ret_resp = &empty.base;
        return GRPCX_OK;
}

int dp_registry_start(DpManager *m, CubError *err) {
        static const GrpcxMethod methods[] = {
                { .path = DP_METHOD_REGISTER, .request = &v1beta1__register_request__descriptor, .unary = on_register },
        };
        _cleanup_free_ char *addr = NULL;
        int r;

        if (asprintf(&addr, "unix:%s", m->kubelet_sock) < 0) {
                addr = NULL;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        r = grpcx_server_start(addr, methods, ELEMENTSOF(methods), m, &m->server, err);
        if (r < 0)
                return r;
        /* root (or the owner) only: registering hands a plugin the node's devices */
        (void) chmod(m->kubelet_sock, 0600);
        return 0;
}

/* ---- the allocation calls, any thread --------------------------------------------- */

void dp_cancel_init(DpCancel *c) {
        *c = (DpCancel){};
        pthread_mutex_init(&c->lock, NULL);
}

void dp_cancel_done(DpCancel *c) {
        pthread_mutex_destroy(&c->lock);
}

void dp_cancel_fire(DpCancel *c) {
        pthread_mutex_lock(&c->lock);
        c->cancelled = true;
        if (c->call)
                grpcx_stream_call_cancel(c->call);
        pthread_mutex_unlock(&c->lock);
}

int dp_call_unary(const DpCall *c, const char *method, const ProtobufCMessage *req,
                  const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret, CubError *err) {
        _cleanup_(grpcx_channel_freep) GrpcxChannel *ch = NULL;
        GrpcxClientStream *s = NULL;
        int r;

        r = grpcx_channel_new(c->target, &ch, err);
        if (r < 0)
                return r;
        if (c->cancel) {
                pthread_mutex_lock(&c->cancel->lock);
                r = c->cancel->cancelled ? cub_err_set(err, ECANCELED, "'%s': %s: cancelled", c->target, method)
                                         : grpcx_stream_call_start(ch, method, req, c->timeout_usec, false, &s, err);
                c->cancel->call = s;
                pthread_mutex_unlock(&c->cancel->lock);
        } else
                r = grpcx_stream_call_start(ch, method, req, c->timeout_usec, false, &s, err);
        if (r < 0)
                return r;
        /* blocks (no CPU) until the answer, the deadline or a cancel */
        r = grpcx_stream_call_read(s, desc, ret, err);
        if (r == 0)
                r = cub_err_set(err, EBADMSG, "'%s': %s: no reply", c->target, method);
        if (c->cancel) {
                pthread_mutex_lock(&c->cancel->lock);
                c->cancel->call = NULL;
                pthread_mutex_unlock(&c->cancel->lock);
        }
        (void) grpcx_stream_call_free(s);
        return r < 0 ? r : 0;
}

static int grpc_preferred(void *ud, const DpCall *c, const char *const *avail, size_t n_avail, const char *const *must,
                          size_t n_must, size_t size, char ***ret, size_t *ret_n, CubError *err) {
        V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__ContainerPreferredAllocationRequest creq = V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__ContainerPreferredAllocationRequest *creqs[1] = { &creq };
        V1beta1__PreferredAllocationResponse *resp = NULL;
        int rr;

        (void) ud;
        creq.n_available_deviceids = n_avail;
        creq.available_deviceids = (char **) avail;
        creq.n_must_include_deviceids = n_must;
        creq.must_include_deviceids = (char **) must;
        creq.allocation_size = (int32_t) size;
        req.n_container_requests = 1;
        req.container_requests = creqs;
        rr = dp_call_unary(c, DP_METHOD_PREFERRED, &req.base, &v1beta1__preferred_allocation_response__descriptor,
                           (ProtobufCMessage **) &resp, err);
        if (rr < 0)
                return rr;
        if (resp->n_container_responses < 1) {
                protobuf_c_message_free_unpacked(&resp->base, NULL);
                return cub_err_set(err, EBADMSG, "%s: %s: no container response", c->target, DP_METHOD_PREFERRED);
        }
        rr = dp_strv_copy_sorted((const char *const *) resp->container_responses[0]->deviceids,
                                 resp->container_responses[0]->n_deviceids, ret);
        if (rr >= 0)
                *ret_n = resp->container_responses[0]->n_deviceids;
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        return rr < 0 ? cub_err_set(err, ENOMEM, "out of memory") : 0;
}

static int grpc_allocate(void *ud, const DpCall *c, const char *const *ids, size_t n, DpContainerResponse *ret,
                         CubError *err) {
        V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
        V1beta1__ContainerAllocateRequest creq = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
        V1beta1__ContainerAllocateRequest *creqs[1] = { &creq };
        V1beta1__AllocateResponse *resp = NULL;
        int rr;

        (void) ud;
        creq.n_devices_ids = n;
        creq.devices_ids = (char **) ids;
        req.n_container_requests = 1;
        req.container_requests = creqs;
        rr = dp_call_unary(c, DP_METHOD_ALLOCATE, &req.base, &v1beta1__allocate_response__descriptor,
                           (ProtobufCMessage **) &resp, err);
        if (rr < 0)
                return rr;
        if (resp->n_container_responses != 1)
                rr = cub_err_set(err, EBADMSG, "%s: %s: %zu container responses for one request", c->target,
                                 DP_METHOD_ALLOCATE, resp->n_container_responses);
        else
                rr = dp_container_response_from_pb(resp->container_responses[0], ret, err);
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        return rr;
}

static int grpc_pre_start(void *ud, const DpCall *c, const char *const *ids, size_t n, CubError *err) {
        V1beta1__PreStartContainerRequest req = V1BETA1__PRE_START_CONTAINER_REQUEST__INIT;
        ProtobufCMessage *resp = NULL;
        int rr;

        (void) ud;
        req.n_devices_ids = n;
        req.devices_ids = (char **) ids;
        rr = dp_call_unary(c, DP_METHOD_PRE_START, &req.base, &v1beta1__pre_start_container_response__descriptor, &resp,
                           err);
        if (rr >= 0)
                protobuf_c_message_free_unpacked(resp, NULL);
        return rr;
}

const DpPluginOps dp_grpc_ops = {
        .preferred = grpc_preferred,
        .allocate = grpc_allocate,
        .pre_start = grpc_pre_start,
};
