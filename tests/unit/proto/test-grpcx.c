/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/grpcx: the server half against the grpcx client and against raw gRPC
 * core clients (garbage payloads, server streams), over real unix sockets in
 * a mkdtemp directory. CRI messages are the payloads.
 *
 * Every test arms alarm(): a hang kills the binary (no handler installed)
 * instead of blocking the suite; no test asserts on elapsed time. Where a
 * test waits for the server to catch up (a thread reaped, a method armed
 * again), it polls with no time limit of its own.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <systemd/sd-event.h>

#include "agent/util/cleanup.h"
#include "proto/cri/api.pb-c.h"
#include "proto/grpcx-internal.h"
#include "proto/grpcx.h"

#define HANG_GUARD_SEC 60
#define M_VERSION "/runtime.v1.RuntimeService/Version"
#define M_STATUS "/runtime.v1.RuntimeService/PodSandboxStatus"
#define M_REMOVE "/runtime.v1.RuntimeService/RemovePodSandbox"
#define M_STOP "/runtime.v1.RuntimeService/StopPodSandbox"
#define M_EVENTS "/runtime.v1.RuntimeService/GetContainerEvents"
#define M_FLOOD "/test.Stream/Flood"
#define M_HOLD "/test.Stream/Hold"
#define M_FAIL "/test.Stream/Fail"
#define M_POST "/test.Loop/Post"
#define M_POST_STREAM "/test.Loop/PostStream"

static char tmpdir[] = "/tmp/grpcx-test-XXXXXX";

DEFINE_TRIVIAL_CLEANUP_FUNC(GrpcxServer *, grpcx_server_stop);

/* ---- handlers -------------------------------------------------------------- */

typedef struct TestState {
        atomic_int freed; /* free_resp calls */
        atomic_int stream_errors;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool handler_done;
        int sent;
        int send_r;
        int wait_r;
        bool cancelled_seen;
        /* grpcx_server_post() tests */
        GrpcxServer *server;
        pthread_t loop;      /* the thread expected to run the posts */
        atomic_int posts;    /* posts run */
        atomic_int off_loop; /* posts run on another thread */
        int nested_r;        /* a post from inside a post */
        int post_r;          /* the last post's result, seen by the handler */
        GrpcxStream *stream; /* the hold handler's stream */
} TestState;

static void state_init(TestState *t) {
        memset(t, 0, sizeof(*t));
        atomic_init(&t->freed, 0);
        atomic_init(&t->stream_errors, 0);
        pthread_mutex_init(&t->lock, NULL);
        pthread_cond_init(&t->cond, NULL);
}

static void state_done(TestState *t) {
        pthread_mutex_destroy(&t->lock);
        pthread_cond_destroy(&t->cond);
}

static void state_signal(TestState *t) {
        pthread_mutex_lock(&t->lock);
        t->handler_done = true;
        pthread_cond_broadcast(&t->cond);
        pthread_mutex_unlock(&t->lock);
}

static void state_wait(TestState *t) {
        pthread_mutex_lock(&t->lock);
        while (!t->handler_done)
                pthread_cond_wait(&t->cond, &t->lock);
        pthread_mutex_unlock(&t->lock);
}

static char *xstrdup(const char *s) {
        char *d = strdup(s);

        assert_non_null(d);
        return d;
}

static int version_unary(void *userdata, const ProtobufCMessage *req, ProtobufCMessage **ret_resp, char *details,
                         size_t details_size) {
        const Runtime__V1__VersionRequest *r = (const Runtime__V1__VersionRequest *) req;
        Runtime__V1__VersionResponse *resp;

        (void) userdata;
        (void) details;
        (void) details_size;
        resp = malloc(sizeof(*resp));
        if (!resp)
                return GRPCX_INTERNAL;
        runtime__v1__version_response__init(resp);
        resp->version = xstrdup(r->version);
        resp->runtime_name = xstrdup("cubelet-test");
        resp->runtime_version = xstrdup("0.0.1");
        resp->runtime_api_version = xstrdup("v1");
        *ret_resp = &resp->base;
        return GRPCX_OK;
}

static void version_free(void *userdata, ProtobufCMessage *m) {
        Runtime__V1__VersionResponse *resp = (Runtime__V1__VersionResponse *) m;
        TestState *t = userdata;

        free(resp->version);
        free(resp->runtime_name);
        free(resp->runtime_version);
        free(resp->runtime_api_version);
        free(resp);
        atomic_fetch_add(&t->freed, 1);
}

static int status_unary(void *userdata, const ProtobufCMessage *req, ProtobufCMessage **ret_resp, char *details,
                        size_t details_size) {
        const Runtime__V1__PodSandboxStatusRequest *r = (const Runtime__V1__PodSandboxStatusRequest *) req;

        (void) userdata;
        (void) ret_resp;
        (void) snprintf(details, details_size, "pod sandbox '%s' not found", r->pod_sandbox_id);
        return GRPCX_NOT_FOUND;
}

static int remove_unary(void *userdata, const ProtobufCMessage *req, ProtobufCMessage **ret_resp, char *details,
                        size_t details_size) {
        static Runtime__V1__RemovePodSandboxResponse reply = RUNTIME__V1__REMOVE_POD_SANDBOX_RESPONSE__INIT;

        (void) userdata;
        (void) req;
        (void) details;
        (void) details_size;
        *ret_resp = &reply.base;
        return GRPCX_OK;
}

static int noreply_unary(void *userdata, const ProtobufCMessage *req, ProtobufCMessage **ret_resp, char *details,
                         size_t details_size) {
        (void) userdata;
        (void) req;
        (void) ret_resp;
        (void) details;
        (void) details_size;
        return GRPCX_OK;
}

static int send_version(GrpcxStream *s, const char *version, const char *name) {
        Runtime__V1__VersionResponse m = RUNTIME__V1__VERSION_RESPONSE__INIT;

        m.version = (char *) version;
        m.runtime_name = (char *) name;
        return grpcx_stream_send(s, &m.base, NULL);
}

/* Three events, then OK. */
static int events_stream(void *userdata, const ProtobufCMessage *req, GrpcxStream *s, char *details,
                         size_t details_size) {
        const Runtime__V1__VersionRequest *r = (const Runtime__V1__VersionRequest *) req;
        TestState *t = userdata;
        char name[16];

        (void) details;
        (void) details_size;
        /* the stream's thread names itself before its handler runs */
        if (pthread_getname_np(pthread_self(), name, sizeof(name)) != 0 || strcmp(name, "grpcx-stream") != 0)
                atomic_fetch_add(&t->stream_errors, 1);
        for (int i = 0; i < 3; i++) {
                char v[DECIMAL_STR_MAX(int) + 8];

                (void) snprintf(v, sizeof(v), "event-%d", i);
                if (send_version(s, v, r->version) < 0 || grpcx_stream_cancelled(s))
                        atomic_fetch_add(&t->stream_errors, 1);
        }
        /* the client waits for the status: a short wait times out */
        if (grpcx_stream_wait(s, 1000) != 0 || grpcx_stream_cancelled(s))
                atomic_fetch_add(&t->stream_errors, 1);
        return GRPCX_OK;
}

/* Sends until the call is over. */
static int flood_stream(void *userdata, const ProtobufCMessage *req, GrpcxStream *s, char *details,
                        size_t details_size) {
        Runtime__V1__VersionResponse m = RUNTIME__V1__VERSION_RESPONSE__INIT;
        TestState *t = userdata;
        CubError err = { 0 };
        int r, n = 0;

        (void) req;
        (void) details;
        (void) details_size;
        m.version = (char *) "flood";
        while ((r = grpcx_stream_send(s, &m.base, &err)) == 0)
                n++;
        pthread_mutex_lock(&t->lock);
        t->sent = n;
        t->send_r = r;
        t->cancelled_seen = grpcx_stream_cancelled(s) && strstr(err.msg, M_FLOOD) != NULL;
        pthread_mutex_unlock(&t->lock);
        state_signal(t);
        return GRPCX_OK;
}

/* One message, then idle until the call is over. */
static int hold_stream(void *userdata, const ProtobufCMessage *req, GrpcxStream *s, char *details,
                       size_t details_size) {
        TestState *t = userdata;
        int sent, wait_r, send_r;

        (void) req;
        (void) details;
        (void) details_size;
        pthread_mutex_lock(&t->lock);
        t->stream = s;
        pthread_mutex_unlock(&t->lock);
        sent = send_version(s, "held", "hold") == 0;
        wait_r = grpcx_stream_wait(s, UINT64_MAX);
        send_r = send_version(s, "late", "hold");
        pthread_mutex_lock(&t->lock);
        t->sent = sent;
        t->wait_r = wait_r;
        t->send_r = send_r;
        t->cancelled_seen = grpcx_stream_cancelled(s);
        pthread_mutex_unlock(&t->lock);
        state_signal(t);
        return GRPCX_OK;
}

static int fail_stream(void *userdata, const ProtobufCMessage *req, GrpcxStream *s, char *details,
                       size_t details_size) {
        (void) userdata;
        (void) req;
        (void) s;
        (void) snprintf(details, details_size, "no devices");
        return GRPCX_FAILED_PRECONDITION;
}

/* ---- posts to the loop ---- */

typedef struct PostArg {
        const char *version;
        char answer[64];
} PostArg;

/* Runs on the loop: numbers the posts, answers "loop:<version>#<n>". */
static int loop_answer(void *userdata, void *arg) {
        TestState *t = userdata;
        PostArg *a = arg;
        int n = atomic_fetch_add(&t->posts, 1) + 1;

        if (!pthread_equal(pthread_self(), t->loop))
                atomic_fetch_add(&t->off_loop, 1);
        if (n == 1)
                t->nested_r = grpcx_server_post(t->server, loop_answer, arg);
        (void) snprintf(a->answer, sizeof(a->answer), "loop:%s#%d", a->version, n);
        return n;
}

static int post_for(TestState *t, const ProtobufCMessage *req, PostArg *a) {
        int r;

        a->version = ((const Runtime__V1__VersionRequest *) req)->version;
        r = grpcx_server_post(t->server, loop_answer, a);
        pthread_mutex_lock(&t->lock);
        t->post_r = r;
        pthread_mutex_unlock(&t->lock);
        return r;
}

static int post_unary(void *userdata, const ProtobufCMessage *req, ProtobufCMessage **ret_resp, char *details,
                      size_t details_size) {
        Runtime__V1__VersionResponse *resp;
        PostArg a = {};
        int r;

        r = post_for(userdata, req, &a);
        if (r < 0) {
                (void) snprintf(details, details_size, "post: %s", strerror(-r));
                return GRPCX_UNAVAILABLE;
        }
        resp = malloc(sizeof(*resp));
        if (!resp)
                return GRPCX_INTERNAL;
        runtime__v1__version_response__init(resp);
        resp->version = xstrdup(a.version);
        resp->runtime_name = xstrdup(a.answer);
        resp->runtime_version = xstrdup("");
        resp->runtime_api_version = xstrdup("");
        *ret_resp = &resp->base;
        return GRPCX_OK;
}

static int post_stream(void *userdata, const ProtobufCMessage *req, GrpcxStream *s, char *details,
                       size_t details_size) {
        PostArg a = {};
        int r;

        r = post_for(userdata, req, &a);
        if (r < 0) {
                (void) snprintf(details, details_size, "post: %s", strerror(-r));
                return GRPCX_UNAVAILABLE;
        }
        (void) send_version(s, "posted", a.answer);
        return GRPCX_OK;
}

static const GrpcxMethod methods[] = {
        { .path = M_VERSION,
          .request = &runtime__v1__version_request__descriptor,
          .unary = version_unary,
          .free_resp = version_free },
        { .path = M_STATUS, .request = &runtime__v1__pod_sandbox_status_request__descriptor, .unary = status_unary },
        { .path = M_REMOVE, .request = &runtime__v1__remove_pod_sandbox_request__descriptor, .unary = remove_unary },
        { .path = M_STOP, .request = &runtime__v1__stop_pod_sandbox_request__descriptor, .unary = noreply_unary },
        { .path = M_EVENTS, .request = &runtime__v1__version_request__descriptor, .stream = events_stream },
        { .path = M_FLOOD, .request = &runtime__v1__version_request__descriptor, .stream = flood_stream },
        { .path = M_HOLD, .request = &runtime__v1__version_request__descriptor, .stream = hold_stream },
        { .path = M_FAIL, .request = &runtime__v1__version_request__descriptor, .stream = fail_stream },
        { .path = M_POST,
          .request = &runtime__v1__version_request__descriptor,
          .unary = post_unary,
          .free_resp = version_free },
        { .path = M_POST_STREAM, .request = &runtime__v1__version_request__descriptor, .stream = post_stream },
};

/* ---- fixtures -------------------------------------------------------------- */

static int group_setup(void **state) {
        (void) state;
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state) {
        DIR *d = opendir(tmpdir);
        struct dirent *de;

        (void) state;
        if (d) {
                while ((de = readdir(d)))
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                (void) unlinkat(dirfd(d), de->d_name, 0);
                closedir(d);
        }
        return rmdir(tmpdir);
}

static char *sock_path(const char *name) {
        char *p;

        assert_true(asprintf(&p, "%s/%s.sock", tmpdir, name) > 0);
        return p;
}

static GrpcxServer *start_server(const char *path, TestState *t) {
        _cleanup_free_ char *addr = NULL;
        GrpcxServer *s = NULL;
        CubError err = { 0 };
        int r;

        assert_true(asprintf(&addr, "unix:%s", path) > 0);
        r = grpcx_server_start(addr, methods, ELEMENTSOF(methods), t, &s, &err);
        if (r < 0)
                fail_msg("grpcx_server_start: %s", err.msg);
        assert_non_null(s);
        return s;
}

static GrpcxChannel *client(const char *path) {
        GrpcxChannel *c = NULL;
        CubError err = { 0 };

        assert_int_equal(grpcx_channel_new(path, &c, &err), 0);
        return c;
}

/* ---- a raw gRPC core client: garbage payloads and server streams ------------ */

static grpc_channel *raw_channel(const char *path) {
        _cleanup_free_ char *target = NULL;
        grpc_channel_credentials *creds;
        grpc_channel *ch;
        grpc_arg arg = { .type = GRPC_ARG_STRING,
                         .key = (char *) GRPC_ARG_DEFAULT_AUTHORITY,
                         .value.string = (char *) "localhost" };
        grpc_channel_args args = { .num_args = 1, .args = &arg };

        assert_true(asprintf(&target, "unix:%s", path) > 0);
        grpc_init();
        creds = grpc_insecure_credentials_create();
        ch = grpc_channel_create(target, creds, &args);
        grpc_channel_credentials_release(creds);
        assert_non_null(ch);
        return ch;
}

static void raw_channel_free(grpc_channel *ch) {
        grpc_channel_destroy(ch);
        grpc_shutdown();
}

static grpc_byte_buffer *raw_buffer(const void *data, size_t len) {
        grpc_slice s = grpc_slice_from_copied_buffer(data, len);
        grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);

        grpc_slice_unref(s);
        return bb;
}

static grpc_byte_buffer *packed(const ProtobufCMessage *m) {
        size_t n = protobuf_c_message_get_packed_size(m);
        _cleanup_free_ uint8_t *buf = malloc(n + 1);

        assert_non_null(buf);
        assert_int_equal(protobuf_c_message_pack(m, buf), n);
        return raw_buffer(buf, n);
}

static void pluck(grpc_completion_queue *cq, void *tag) {
        grpc_event ev = grpc_completion_queue_pluck(cq, tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

        assert_int_equal(ev.type, GRPC_OP_COMPLETE);
}

static void drain(grpc_completion_queue *cq) {
        grpc_completion_queue_shutdown(cq);
        while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(cq);
}

/* A unary call with an arbitrary payload (NULL: no message at all). */
static grpc_status_code raw_unary(grpc_channel *ch, const char *method, grpc_byte_buffer *req, char **ret_details) {
        grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
        grpc_metadata_array imd, tmd;
        grpc_status_code status = GRPC_STATUS_UNKNOWN;
        grpc_slice details = grpc_empty_slice();
        grpc_byte_buffer *resp = NULL;
        grpc_op ops[6], *op = ops;
        grpc_call *call;

        call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, grpc_slice_from_static_string(method),
                                        NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        grpc_metadata_array_init(&imd);
        grpc_metadata_array_init(&tmd);
        memset(ops, 0, sizeof(ops));
        op++->op = GRPC_OP_SEND_INITIAL_METADATA;
        if (req) {
                op->op = GRPC_OP_SEND_MESSAGE;
                op++->data.send_message.send_message = req;
        }
        op++->op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        op->op = GRPC_OP_RECV_INITIAL_METADATA;
        op++->data.recv_initial_metadata.recv_initial_metadata = &imd;
        op->op = GRPC_OP_RECV_MESSAGE;
        op++->data.recv_message.recv_message = &resp;
        op->op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        op->data.recv_status_on_client.trailing_metadata = &tmd;
        op->data.recv_status_on_client.status = &status;
        op->data.recv_status_on_client.status_details = &details;
        op++;
        assert_int_equal(grpc_call_start_batch(call, ops, (size_t) (op - ops), (void *) 1, NULL), GRPC_CALL_OK);
        pluck(cq, (void *) 1);

        *ret_details = grpc_slice_to_c_string(details);
        grpc_slice_unref(details);
        if (req)
                grpc_byte_buffer_destroy(req);
        if (resp)
                grpc_byte_buffer_destroy(resp);
        grpc_metadata_array_destroy(&imd);
        grpc_metadata_array_destroy(&tmd);
        grpc_call_unref(call);
        drain(cq);
        return status;
}

typedef struct TestStream {
        grpc_completion_queue *cq;
        grpc_call *call;
        grpc_metadata_array imd, tmd;
} TestStream;

static void ts_open(TestStream *t, grpc_channel *ch, const char *method, const ProtobufCMessage *req) {
        grpc_byte_buffer *bb = packed(req);
        grpc_op ops[4];

        t->cq = grpc_completion_queue_create_for_pluck(NULL);
        t->call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, t->cq,
                                           grpc_slice_from_static_string(method), NULL,
                                           gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        grpc_metadata_array_init(&t->imd);
        grpc_metadata_array_init(&t->tmd);
        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = bb;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &t->imd;
        assert_int_equal(grpc_call_start_batch(t->call, ops, 4, (void *) 1, NULL), GRPC_CALL_OK);
        pluck(t->cq, (void *) 1);
        grpc_byte_buffer_destroy(bb);
}

/* The next message, NULL at the end of the stream. */
static Runtime__V1__VersionResponse *ts_read(TestStream *t) {
        grpc_byte_buffer *bb = NULL;
        ProtobufCMessage *m;
        grpc_byte_buffer_reader r;
        grpc_slice all;
        grpc_op op;

        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &bb;
        assert_int_equal(grpc_call_start_batch(t->call, &op, 1, (void *) 2, NULL), GRPC_CALL_OK);
        pluck(t->cq, (void *) 2);
        if (!bb)
                return NULL;
        assert_true(grpc_byte_buffer_reader_init(&r, bb));
        all = grpc_byte_buffer_reader_readall(&r);
        grpc_byte_buffer_reader_destroy(&r);
        m = protobuf_c_message_unpack(&runtime__v1__version_response__descriptor, NULL, GRPC_SLICE_LENGTH(all),
                                      GRPC_SLICE_START_PTR(all));
        grpc_slice_unref(all);
        grpc_byte_buffer_destroy(bb);
        assert_non_null(m);
        return (Runtime__V1__VersionResponse *) m;
}

static grpc_status_code ts_finish(TestStream *t, char **ret_details) {
        grpc_status_code status = GRPC_STATUS_UNKNOWN;
        grpc_slice details = grpc_empty_slice();
        grpc_op op;

        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        op.data.recv_status_on_client.trailing_metadata = &t->tmd;
        op.data.recv_status_on_client.status = &status;
        op.data.recv_status_on_client.status_details = &details;
        assert_int_equal(grpc_call_start_batch(t->call, &op, 1, (void *) 3, NULL), GRPC_CALL_OK);
        pluck(t->cq, (void *) 3);
        *ret_details = grpc_slice_to_c_string(details);
        grpc_slice_unref(details);
        grpc_metadata_array_destroy(&t->imd);
        grpc_metadata_array_destroy(&t->tmd);
        grpc_call_unref(t->call);
        drain(t->cq);
        return status;
}

static void read_one_held(TestStream *ts) {
        Runtime__V1__VersionResponse *m = ts_read(ts);

        assert_non_null(m);
        assert_string_equal(m->version, "held");
        runtime__v1__version_response__free_unpacked(m, NULL);
}

/* ---- unary ----------------------------------------------------------------- */

static void test_unary_version(void **state) {
        _cleanup_free_ char *path = sock_path("unary");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        Runtime__V1__RemovePodSandboxRequest rm = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
        Runtime__V1__VersionResponse *v;
        ProtobufCMessage *resp = NULL;
        CubError err = { 0 };
        TestState t;
        int status = -1;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        c = client(path);

        req.version = (char *) "0.1.0";
        assert_int_equal(grpcx_unary(c, M_VERSION, &req.base, &runtime__v1__version_response__descriptor,
                                     5 * 1000 * 1000, false, &resp, &status, &err),
                         0);
        assert_int_equal(status, GRPCX_OK);
        v = (Runtime__V1__VersionResponse *) resp;
        assert_string_equal(v->version, "0.1.0");
        assert_string_equal(v->runtime_name, "cubelet-test");
        assert_string_equal(v->runtime_version, "0.0.1");
        assert_string_equal(v->runtime_api_version, "v1");
        assert_int_equal(v->base.n_unknown_fields, 0);
        protobuf_c_message_free_unpacked(resp, NULL);

        /* an empty request is a zero-length payload: every field at its default */
        req.version = NULL;
        resp = NULL;
        assert_int_equal(grpcx_unary(c, M_VERSION, &req.base, &runtime__v1__version_response__descriptor,
                                     5 * 1000 * 1000, false, &resp, &status, &err),
                         0);
        assert_string_equal(((Runtime__V1__VersionResponse *) resp)->version, "");
        protobuf_c_message_free_unpacked(resp, NULL);
        assert_int_equal(atomic_load(&t.freed), 2);

        /* a static, empty reply with no free_resp */
        rm.pod_sandbox_id = (char *) "p-1";
        resp = NULL;
        assert_int_equal(grpcx_unary(c, M_REMOVE, &rm.base, &runtime__v1__remove_pod_sandbox_response__descriptor,
                                     5 * 1000 * 1000, false, &resp, &status, &err),
                         0);
        assert_non_null(resp);
        protobuf_c_message_free_unpacked(resp, NULL);

        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

static void test_unary_not_found(void **state) {
        _cleanup_free_ char *path = sock_path("notfound");
        Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
        ProtobufCMessage *resp = NULL;
        CubError err = { 0 };
        TestState t;
        int status = -1;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        c = client(path);

        req.pod_sandbox_id = (char *) "p-1";
        assert_int_equal(grpcx_unary(c, M_STATUS, &req.base, &runtime__v1__pod_sandbox_status_response__descriptor,
                                     5 * 1000 * 1000, false, &resp, &status, &err),
                         -ENOENT);
        assert_null(resp);
        assert_int_equal(status, GRPCX_NOT_FOUND);
        assert_int_equal(err.code, ENOENT);
        assert_non_null(strstr(err.msg, M_STATUS));
        assert_non_null(strstr(err.msg, "NOT_FOUND (5)"));
        assert_non_null(strstr(err.msg, "pod sandbox 'p-1' not found"));

        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

static void test_unary_handler_without_reply(void **state) {
        _cleanup_free_ char *path = sock_path("noreply");
        Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
        ProtobufCMessage *resp = NULL;
        CubError err = { 0 };
        TestState t;
        int status = -1;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        c = client(path);

        assert_int_equal(grpcx_unary(c, M_STOP, &req.base, &runtime__v1__stop_pod_sandbox_response__descriptor,
                                     5 * 1000 * 1000, false, &resp, &status, &err),
                         -EIO);
        assert_int_equal(status, GRPCX_INTERNAL);
        assert_non_null(strstr(err.msg, "INTERNAL (13)"));
        assert_non_null(strstr(err.msg, "handler returned no reply"));

        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

static void test_unknown_method(void **state) {
        _cleanup_free_ char *path = sock_path("unknown");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
        ProtobufCMessage *resp = NULL;
        CubError err = { 0 };
        TestState t;
        int status = -1;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        c = client(path);

        /* gRPC core would leave it pending until the deadline (-ETIMEDOUT): we answer */
        for (int i = 0; i < 2; i++) {
                assert_int_equal(grpcx_unary(c, "/runtime.v1.RuntimeService/Nope", &req.base,
                                             &runtime__v1__version_response__descriptor, 5 * 1000 * 1000, false, &resp,
                                             &status, &err),
                                 -EOPNOTSUPP);
                assert_int_equal(status, GRPCX_UNIMPLEMENTED);
                assert_non_null(strstr(err.msg, "UNIMPLEMENTED (12)"));
                assert_non_null(strstr(err.msg, "unknown method /runtime.v1.RuntimeService/Nope"));
        }

        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

static void test_malformed_request(void **state) {
        _cleanup_free_ char *path = sock_path("garbage");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        /* field 1, length-delimited, 16 bytes announced, 3 present */
        static const uint8_t truncated[] = { 0x0a, 0x10, 'a', 'b', 'c' };
        /* field 1 with wire type 7, which does not exist */
        static const uint8_t bad_wire_type[] = { 0x0f, 0xff, 0xff };
        char *details = NULL;
        grpc_channel *ch;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        ch = raw_channel(path);

        assert_int_equal(raw_unary(ch, M_VERSION, raw_buffer(truncated, sizeof(truncated)), &details),
                         GRPC_STATUS_INVALID_ARGUMENT);
        assert_string_equal(details, M_VERSION ": cannot decode the request as runtime.v1.VersionRequest");
        gpr_free(details);

        assert_int_equal(raw_unary(ch, M_STATUS, raw_buffer(bad_wire_type, sizeof(bad_wire_type)), &details),
                         GRPC_STATUS_INVALID_ARGUMENT);
        assert_non_null(strstr(details, M_STATUS));
        assert_non_null(strstr(details, "runtime.v1.PodSandboxStatusRequest"));
        gpr_free(details);

        /* no message at all */
        assert_int_equal(raw_unary(ch, M_VERSION, NULL, &details), GRPC_STATUS_INVALID_ARGUMENT);
        assert_non_null(strstr(details, "missing request message"));
        gpr_free(details);

        /* a streaming method decodes on the stream's thread, same answer */
        assert_int_equal(raw_unary(ch, M_EVENTS, raw_buffer(truncated, sizeof(truncated)), &details),
                         GRPC_STATUS_INVALID_ARGUMENT);
        assert_non_null(strstr(details, M_EVENTS));
        gpr_free(details);

        /* the server is still fine */
        req.version = (char *) "after";
        assert_int_equal(raw_unary(ch, M_VERSION, packed(&req.base), &details), GRPC_STATUS_OK);
        gpr_free(details);
        assert_int_equal(atomic_load(&t.freed), 1);

        raw_channel_free(ch);
        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

/* ---- streams --------------------------------------------------------------- */

static void test_stream_three_messages(void **state) {
        _cleanup_free_ char *path = sock_path("stream");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        Runtime__V1__VersionResponse *m;
        char *details = NULL;
        grpc_channel *ch;
        TestStream ts;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        ch = raw_channel(path);

        req.version = (char *) "watcher-1";
        ts_open(&ts, ch, M_EVENTS, &req.base);
        for (int i = 0; i < 3; i++) {
                char want[DECIMAL_STR_MAX(int) + 8];

                (void) snprintf(want, sizeof(want), "event-%d", i);
                m = ts_read(&ts);
                assert_non_null(m);
                assert_string_equal(m->version, want);
                assert_string_equal(m->runtime_name, "watcher-1");
                assert_string_equal(m->runtime_version, "");
                runtime__v1__version_response__free_unpacked(m, NULL);
        }
        assert_null(ts_read(&ts));
        assert_int_equal(ts_finish(&ts, &details), GRPC_STATUS_OK);
        gpr_free(details);
        assert_int_equal(atomic_load(&t.stream_errors), 0);

        raw_channel_free(ch);
        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

static void test_stream_error_status(void **state) {
        _cleanup_free_ char *path = sock_path("streamfail");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        char *details = NULL;
        grpc_channel *ch;
        TestStream ts;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        ch = raw_channel(path);

        ts_open(&ts, ch, M_FAIL, &req.base);
        assert_null(ts_read(&ts));
        assert_int_equal(ts_finish(&ts, &details), GRPC_STATUS_FAILED_PRECONDITION);
        assert_string_equal(details, "no devices");
        gpr_free(details);

        raw_channel_free(ch);
        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

static void test_stream_client_cancel_ends_sender(void **state) {
        _cleanup_free_ char *path = sock_path("cancelsend");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        Runtime__V1__VersionResponse *m;
        char *details = NULL;
        grpc_channel *ch;
        TestStream ts;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        ch = raw_channel(path);

        ts_open(&ts, ch, M_FLOOD, &req.base);
        m = ts_read(&ts);
        assert_non_null(m);
        runtime__v1__version_response__free_unpacked(m, NULL);
        assert_int_equal(grpc_call_cancel(ts.call, NULL), GRPC_CALL_OK);
        assert_int_equal(ts_finish(&ts, &details), GRPC_STATUS_CANCELLED);
        gpr_free(details);

        state_wait(&t); /* the handler noticed: no hang */
        assert_int_equal(t.send_r, -ECANCELED);
        assert_true(t.sent >= 1);
        assert_true(t.cancelled_seen);

        raw_channel_free(ch);
        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

static void test_stream_client_cancel_wakes_waiter(void **state) {
        _cleanup_free_ char *path = sock_path("cancelwait");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        char *details = NULL;
        grpc_channel *ch;
        TestStream ts;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        ch = raw_channel(path);

        ts_open(&ts, ch, M_HOLD, &req.base);
        read_one_held(&ts);
        assert_int_equal(grpc_call_cancel(ts.call, NULL), GRPC_CALL_OK);
        assert_int_equal(ts_finish(&ts, &details), GRPC_STATUS_CANCELLED);
        gpr_free(details);

        state_wait(&t);
        assert_int_equal(t.sent, 1);
        assert_int_equal(t.wait_r, -ECANCELED);
        assert_int_equal(t.send_r, -ECANCELED);
        assert_true(t.cancelled_seen);
        assert_int_equal(atomic_load(&t.stream_errors), 0);

        raw_channel_free(ch);
        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

static void test_stop_with_open_stream(void **state) {
        _cleanup_free_ char *path = sock_path("stopidle");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        GrpcxServer *s;
        char *details = NULL;
        grpc_status_code status;
        grpc_channel *ch;
        TestStream ts;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        ch = raw_channel(path);

        ts_open(&ts, ch, M_HOLD, &req.base);
        read_one_held(&ts);

        /* the handler is idle in grpcx_stream_wait(): stop wakes it and joins it */
        s = grpcx_server_stop(s);
        assert_null(s);
        assert_true(t.handler_done);
        assert_int_equal(t.wait_r, -ECANCELED);
        assert_int_equal(t.send_r, -ECANCELED);

        assert_null(ts_read(&ts));
        status = ts_finish(&ts, &details);
        assert_true(status == GRPC_STATUS_UNAVAILABLE || status == GRPC_STATUS_CANCELLED);
        gpr_free(details);

        raw_channel_free(ch);
        state_done(&t);
        alarm(0);
}

static void test_stop_with_blocked_sender(void **state) {
        _cleanup_free_ char *path = sock_path("stopflood");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        GrpcxServer *s;
        Runtime__V1__VersionResponse *m;
        char *details = NULL;
        grpc_channel *ch;
        TestStream ts;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        ch = raw_channel(path);

        /* the client stops reading: the handler ends up blocked in a send */
        ts_open(&ts, ch, M_FLOOD, &req.base);
        m = ts_read(&ts);
        assert_non_null(m);
        runtime__v1__version_response__free_unpacked(m, NULL);

        s = grpcx_server_stop(s);
        assert_true(t.handler_done);
        assert_int_equal(t.send_r, -ECANCELED);

        while ((m = ts_read(&ts)))
                runtime__v1__version_response__free_unpacked(m, NULL);
        assert_int_not_equal(ts_finish(&ts, &details), GRPC_STATUS_OK);
        gpr_free(details);

        raw_channel_free(ch);
        state_done(&t);
        alarm(0);
}

/* ---- connection failures --------------------------------------------------- */

static void test_nobody_listening(void **state) {
        _cleanup_free_ char *missing = sock_path("missing");
        _cleanup_free_ char *stale = sock_path("stale");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        ProtobufCMessage *resp = NULL;
        CubError err = { 0 };
        int status = -1, fd;

        (void) state;
        alarm(HANG_GUARD_SEC);

        /* no socket file: fail fast, not at the 30 s deadline */
        {
                _cleanup_(grpcx_channel_freep) GrpcxChannel *c = client(missing);

                assert_int_equal(grpcx_unary(c, M_VERSION, &req.base, &runtime__v1__version_response__descriptor,
                                             30 * 1000 * 1000, false, &resp, &status, &err),
                                 -ECONNREFUSED);
                assert_int_equal(status, GRPCX_UNAVAILABLE);
                assert_non_null(strstr(err.msg, "UNAVAILABLE (14)"));
                assert_non_null(strstr(err.msg, missing));
        }

        /* a socket file nobody listens on: connect() says ECONNREFUSED */
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_true(strlen(stale) < sizeof(sa.sun_path));
        memcpy(sa.sun_path, stale, strlen(stale) + 1);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        close(fd);
        {
                _cleanup_(grpcx_channel_freep) GrpcxChannel *c = client(stale);

                assert_int_equal(grpcx_unary(c, M_VERSION, &req.base, &runtime__v1__version_response__descriptor,
                                             30 * 1000 * 1000, false, &resp, &status, &err),
                                 -ECONNREFUSED);
                assert_int_equal(status, GRPCX_UNAVAILABLE);
        }
        assert_null(resp);
        alarm(0);
}

static void test_wait_for_ready_times_out(void **state) {
        _cleanup_free_ char *missing = sock_path("later");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
        ProtobufCMessage *resp = NULL;
        CubError err = { 0 };
        int status = -1;

        (void) state;
        alarm(HANG_GUARD_SEC);
        c = client(missing);
        assert_int_equal(grpcx_unary(c, M_VERSION, &req.base, &runtime__v1__version_response__descriptor, 200 * 1000,
                                     /* wait_for_ready= */ true, &resp, &status, &err),
                         -ETIMEDOUT);
        assert_int_equal(status, GRPCX_DEADLINE_EXCEEDED);
        assert_non_null(strstr(err.msg, "DEADLINE_EXCEEDED (4)"));
        assert_null(resp);
        alarm(0);
}

/* ---- concurrency ----------------------------------------------------------- */

#define N_THREADS 20

typedef struct Caller {
        GrpcxChannel *channel;
        pthread_barrier_t *barrier;
        int index;
        int r;
        bool echoed;
        CubError err;
} Caller;

static void *caller_main(void *arg) {
        Caller *c = arg;
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        char version[DECIMAL_STR_MAX(int) + 8];
        ProtobufCMessage *resp = NULL;

        (void) snprintf(version, sizeof(version), "caller-%d", c->index);
        req.version = version;
        (void) pthread_barrier_wait(c->barrier);
        c->r = grpcx_unary(c->channel, M_VERSION, &req.base, &runtime__v1__version_response__descriptor,
                           30 * 1000 * 1000, false, &resp, NULL, &c->err);
        if (c->r == 0) {
                c->echoed = strcmp(((Runtime__V1__VersionResponse *) resp)->version, version) == 0;
                protobuf_c_message_free_unpacked(resp, NULL);
        }
        return NULL;
}

static void test_concurrent_unary(void **state) {
        _cleanup_free_ char *path = sock_path("concurrent");
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
        pthread_t threads[N_THREADS];
        Caller callers[N_THREADS];
        pthread_barrier_t barrier;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        c = client(path);

        assert_int_equal(pthread_barrier_init(&barrier, NULL, N_THREADS), 0);
        for (int i = 0; i < N_THREADS; i++) {
                callers[i] = (Caller){ .channel = c, .barrier = &barrier, .index = i, .r = 1 };
                assert_int_equal(pthread_create(&threads[i], NULL, caller_main, &callers[i]), 0);
        }
        for (int i = 0; i < N_THREADS; i++)
                assert_int_equal(pthread_join(threads[i], NULL), 0);
        pthread_barrier_destroy(&barrier);

        for (int i = 0; i < N_THREADS; i++) {
                if (callers[i].r != 0)
                        fail_msg("caller %d: %s", i, callers[i].err.msg);
                assert_true(callers[i].echoed);
        }
        assert_int_equal(atomic_load(&t.freed), N_THREADS);

        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

/* ---- start errors, restart ------------------------------------------------- */

static void test_start_errors(void **state) {
        _cleanup_free_ char *addr = NULL;
        GrpcxMethod bad[2] = { methods[0], methods[0] };
        GrpcxServer *s = NULL;
        CubError err = { 0 };
        int fd;

        (void) state;
        alarm(HANG_GUARD_SEC);

        assert_true(asprintf(&addr, "unix:%s/no-such-dir/x.sock", tmpdir) > 0);
        assert_int_equal(grpcx_server_start(addr, methods, ELEMENTSOF(methods), NULL, &s, &err), -ENOENT);
        assert_non_null(strstr(err.msg, addr));
        assert_null(s);

        /* a regular file where the socket should go is not replaced */
        free(addr);
        assert_true(asprintf(&addr, "unix:%s/regular", tmpdir) > 0);
        fd = open(addr + 5, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(grpcx_server_start(addr, methods, ELEMENTSOF(methods), NULL, &s, &err), -EEXIST);
        assert_non_null(strstr(err.msg, addr));

        assert_int_equal(grpcx_server_start("dns:localhost:50051", methods, 1, NULL, &s, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "dns:localhost:50051"));

        /* the same path twice */
        free(addr);
        assert_true(asprintf(&addr, "unix:%s/dup.sock", tmpdir) > 0);
        assert_int_equal(grpcx_server_start(addr, bad, 2, NULL, &s, &err), -EINVAL);
        assert_non_null(strstr(err.msg, M_VERSION));

        /* both handlers, then none */
        bad[0].stream = events_stream;
        assert_int_equal(grpcx_server_start(addr, bad, 1, NULL, &s, &err), -EINVAL);
        bad[0].unary = NULL;
        bad[0].stream = NULL;
        assert_int_equal(grpcx_server_start(addr, bad, 1, NULL, &s, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "exactly one"));

        assert_null(s);
        alarm(0);
}

static void test_restart_on_same_socket(void **state) {
        _cleanup_free_ char *path = sock_path("restart");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        CubError err = { 0 };
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        for (int i = 0; i < 3; i++) {
                _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
                GrpcxServer *s = NULL;
                ProtobufCMessage *resp = NULL;

                /* bare absolute path form */
                assert_int_equal(grpcx_server_start(path, methods, ELEMENTSOF(methods), &t, &s, &err), 0);
                c = client(path);
                assert_int_equal(grpcx_unary(c, M_VERSION, &req.base, &runtime__v1__version_response__descriptor,
                                             5 * 1000 * 1000, false, &resp, NULL, &err),
                                 0);
                protobuf_c_message_free_unpacked(resp, NULL);
                (void) grpcx_server_stop(s);
        }
        state_done(&t);
        alarm(0);
}

/* ---- bounded streams, reaping -------------------------------------------- */

/* Polls until the server's counts reach the wanted values (alarm() guards it). */
static void wait_streams(GrpcxServer *s, unsigned live, unsigned threads) {
        while (grpcx_server_n_streams(s) != live || grpcx_server_n_stream_threads(s) != threads)
                (void) usleep(1000);
}

static void test_stream_limit(void **state) {
        _cleanup_free_ char *path = sock_path("limit");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
        TestStream held[GRPCX_SERVER_MAX_STREAMS], extra;
        Runtime__V1__VersionResponse *m;
        ProtobufCMessage *resp = NULL;
        CubError err = { 0 };
        char *details = NULL;
        grpc_channel *ch;
        GrpcxServer *s;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        ch = raw_channel(path);
        c = client(path);

        /* each handler has sent its first message: all of them are running */
        for (size_t i = 0; i < ELEMENTSOF(held); i++) {
                ts_open(&held[i], ch, M_HOLD, &req.base);
                read_one_held(&held[i]);
        }
        assert_int_equal(grpcx_server_n_streams(s), GRPCX_SERVER_MAX_STREAMS);
        assert_int_equal(grpcx_server_n_stream_threads(s), GRPCX_SERVER_MAX_STREAMS);

        /* one more is refused, naming the method and the limit */
        ts_open(&extra, ch, M_EVENTS, &req.base);
        assert_null(ts_read(&extra));
        assert_int_equal(ts_finish(&extra, &details), GRPC_STATUS_RESOURCE_EXHAUSTED);
        assert_string_equal(details, M_EVENTS ": too many open streams (16, the limit is 16)");
        gpr_free(details);
        assert_int_equal(grpcx_server_n_streams(s), GRPCX_SERVER_MAX_STREAMS);

        /* unary calls are still served */
        req.version = (char *) "busy";
        assert_int_equal(grpcx_unary(c, M_VERSION, &req.base, &runtime__v1__version_response__descriptor,
                                     5 * 1000 * 1000, false, &resp, NULL, &err),
                         0);
        assert_string_equal(((Runtime__V1__VersionResponse *) resp)->version, "busy");
        protobuf_c_message_free_unpacked(resp, NULL);

        /* one ends: its thread is joined and the next stream is served */
        assert_int_equal(grpc_call_cancel(held[0].call, NULL), GRPC_CALL_OK);
        assert_int_equal(ts_finish(&held[0], &details), GRPC_STATUS_CANCELLED);
        gpr_free(details);
        wait_streams(s, GRPCX_SERVER_MAX_STREAMS - 1, GRPCX_SERVER_MAX_STREAMS - 1);

        req.version = (char *) "after";
        ts_open(&extra, ch, M_EVENTS, &req.base);
        for (int i = 0; i < 3; i++) {
                m = ts_read(&extra);
                assert_non_null(m);
                assert_string_equal(m->runtime_name, "after");
                runtime__v1__version_response__free_unpacked(m, NULL);
        }
        assert_null(ts_read(&extra));
        assert_int_equal(ts_finish(&extra, &details), GRPC_STATUS_OK);
        gpr_free(details);

        /* stop wakes and joins the 15 idle handlers */
        s = grpcx_server_stop(s);
        assert_int_equal(t.wait_r, -ECANCELED);
        assert_int_equal(t.send_r, -ECANCELED);
        for (size_t i = 1; i < ELEMENTSOF(held); i++) {
                grpc_status_code status = ts_finish(&held[i], &details);

                assert_true(status == GRPC_STATUS_UNAVAILABLE || status == GRPC_STATUS_CANCELLED);
                gpr_free(details);
        }

        raw_channel_free(ch);
        state_done(&t);
        alarm(0);
}

static void test_stream_threads_reaped(void **state) {
        _cleanup_free_ char *path = sock_path("reap");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        char *details = NULL;
        grpc_channel *ch;
        TestStream ts;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        ch = raw_channel(path);
        assert_int_equal(grpcx_server_n_stream_threads(s), 0);

        for (int i = 0; i < 3; i++) {
                ts_open(&ts, ch, M_HOLD, &req.base);
                read_one_held(&ts);
                assert_int_equal(grpcx_server_n_streams(s), 1);
                assert_int_equal(grpcx_server_n_stream_threads(s), 1);

                assert_int_equal(grpc_call_cancel(ts.call, NULL), GRPC_CALL_OK);
                assert_int_equal(ts_finish(&ts, &details), GRPC_STATUS_CANCELLED);
                gpr_free(details);
                /* joined while the server waits for calls: no other stream comes */
                wait_streams(s, 0, 0);
                assert_int_equal(t.wait_r, -ECANCELED);
        }

        raw_channel_free(ch);
        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

static void test_stream_calls_from_another_thread(void **state) {
        _cleanup_free_ char *path = sock_path("otherthread");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        Runtime__V1__VersionResponse m = RUNTIME__V1__VERSION_RESPONSE__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        CubError err = { 0 };
        char *details = NULL;
        grpc_channel *ch;
        TestStream ts;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        ch = raw_channel(path);

        ts_open(&ts, ch, M_HOLD, &req.base);
        read_one_held(&ts);
        pthread_mutex_lock(&t.lock);
        assert_non_null(t.stream);
        assert_int_equal(grpcx_stream_send(t.stream, &m.base, &err), -EPERM);
        assert_string_equal(err.msg, "stream " M_HOLD ": grpcx_stream_send() called off the stream's own thread");
        assert_int_equal(grpcx_stream_wait(t.stream, 0), -EPERM);
        assert_true(grpcx_stream_cancelled(t.stream));
        pthread_mutex_unlock(&t.lock);

        /* the stream itself is unharmed */
        assert_int_equal(grpc_call_cancel(ts.call, NULL), GRPC_CALL_OK);
        assert_int_equal(ts_finish(&ts, &details), GRPC_STATUS_CANCELLED);
        gpr_free(details);
        state_wait(&t);
        assert_int_equal(t.sent, 1);
        assert_int_equal(t.wait_r, -ECANCELED);

        raw_channel_free(ch);
        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

/* ---- posts to the owner's loop ------------------------------------------------ */

typedef struct Loop {
        GrpcxServer *server;
        int quit_fd;
        int r;
} Loop;

static int on_dispatch(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void) src;
        (void) fd;
        (void) revents;
        (void) grpcx_server_dispatch(userdata);
        return 0;
}

static int on_quit(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        (void) fd;
        (void) revents;
        (void) userdata;
        return sd_event_exit(sd_event_source_get_event(src), 0);
}

/* An sd-event loop that dispatches the server's posts until quit_fd is written. */
static void *loop_main(void *arg) {
        Loop *l = arg;
        sd_event_source *dispatch = NULL, *quit = NULL;
        sd_event *e = NULL;
        int r;

        r = sd_event_new(&e);
        if (r >= 0)
                r = sd_event_add_io(e, &dispatch, grpcx_server_dispatch_fd(l->server), EPOLLIN, on_dispatch, l->server);
        if (r >= 0)
                r = sd_event_add_io(e, &quit, l->quit_fd, EPOLLIN, on_quit, NULL);
        if (r >= 0)
                r = sd_event_loop(e);
        sd_event_source_unref(dispatch);
        sd_event_source_unref(quit);
        sd_event_unref(e);
        l->r = r;
        return NULL;
}

static void test_post_round_trip_sd_event(void **state) {
        _cleanup_free_ char *path = sock_path("post");
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
        Runtime__V1__VersionResponse *m;
        ProtobufCMessage *resp = NULL;
        CubError err = { 0 };
        char *details = NULL;
        uint64_t one = 1;
        grpc_channel *ch;
        TestStream ts;
        TestState t;
        Loop l;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        t.server = s;
        l = (Loop){ .server = s, .quit_fd = eventfd(0, EFD_CLOEXEC), .r = 1 };
        assert_true(l.quit_fd >= 0);
        assert_int_equal(pthread_create(&t.loop, NULL, loop_main, &l), 0);
        c = client(path);
        ch = raw_channel(path);

        /* unary: the handler (serving thread) waits for the loop's answer */
        req.version = (char *) "a";
        assert_int_equal(grpcx_unary(c, M_POST, &req.base, &runtime__v1__version_response__descriptor, 5 * 1000 * 1000,
                                     false, &resp, NULL, &err),
                         0);
        assert_string_equal(((Runtime__V1__VersionResponse *) resp)->runtime_name, "loop:a#1");
        protobuf_c_message_free_unpacked(resp, NULL);
        req.version = (char *) "b";
        assert_int_equal(grpcx_unary(c, M_POST, &req.base, &runtime__v1__version_response__descriptor, 5 * 1000 * 1000,
                                     false, &resp, NULL, &err),
                         0);
        assert_string_equal(((Runtime__V1__VersionResponse *) resp)->runtime_name, "loop:b#2");
        protobuf_c_message_free_unpacked(resp, NULL);

        /* a stream handler (its own thread) posts the same way */
        req.version = (char *) "c";
        ts_open(&ts, ch, M_POST_STREAM, &req.base);
        m = ts_read(&ts);
        assert_non_null(m);
        assert_string_equal(m->version, "posted");
        assert_string_equal(m->runtime_name, "loop:c#3");
        runtime__v1__version_response__free_unpacked(m, NULL);
        assert_null(ts_read(&ts));
        assert_int_equal(ts_finish(&ts, &details), GRPC_STATUS_OK);
        gpr_free(details);

        assert_int_equal(write(l.quit_fd, &one, sizeof(one)), sizeof(one));
        assert_int_equal(pthread_join(t.loop, NULL), 0);
        assert_int_equal(l.r, 0);
        assert_int_equal(atomic_load(&t.posts), 3);
        assert_int_equal(atomic_load(&t.off_loop), 0);
        assert_int_equal(t.nested_r, -EDEADLK); /* a post from the loop's own thread */
        assert_int_equal(t.post_r, 3);
        assert_int_equal(atomic_load(&t.freed), 2);

        raw_channel_free(ch);
        (void) close(l.quit_fd);
        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

typedef struct PostCaller {
        GrpcxChannel *channel;
        const char *version;
        int r;
        int status;
        char answer[64];
        CubError err;
} PostCaller;

static void *post_caller_main(void *arg) {
        PostCaller *pc = arg;
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        ProtobufCMessage *resp = NULL;

        req.version = (char *) pc->version;
        pc->r = grpcx_unary(pc->channel, M_POST, &req.base, &runtime__v1__version_response__descriptor,
                            30 * 1000 * 1000, false, &resp, &pc->status, &pc->err);
        if (pc->r == 0) {
                (void) snprintf(pc->answer, sizeof(pc->answer), "%s",
                                ((Runtime__V1__VersionResponse *) resp)->runtime_name);
                protobuf_c_message_free_unpacked(resp, NULL);
        }
        return NULL;
}

/* A plain poll loop; a post still queued at stop is answered -ECANCELED. */
static void test_post_poll_loop_and_stop(void **state) {
        _cleanup_free_ char *path = sock_path("poststop");
        _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
        PostCaller pc;
        pthread_t th;
        struct pollfd pfd;
        GrpcxServer *s;
        TestState t;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        t.server = s;
        t.loop = pthread_self();
        c = client(path);
        pfd = (struct pollfd){ .fd = grpcx_server_dispatch_fd(s), .events = POLLIN };

        /* nothing queued */
        assert_int_equal(poll(&pfd, 1, 0), 0);
        assert_int_equal(grpcx_server_dispatch(s), 0);

        pc = (PostCaller){ .channel = c, .version = "x", .r = 1 };
        assert_int_equal(pthread_create(&th, NULL, post_caller_main, &pc), 0);
        assert_int_equal(poll(&pfd, 1, -1), 1);
        assert_int_equal(grpcx_server_dispatch(s), 1);
        assert_int_equal(pthread_join(th, NULL), 0);
        if (pc.r != 0)
                fail_msg("post call: %s", pc.err.msg);
        assert_string_equal(pc.answer, "loop:x#1");
        assert_int_equal(poll(&pfd, 1, 0), 0);

        /* this thread dispatched: it is the loop, and may not post */
        assert_int_equal(grpcx_server_post(s, loop_answer, NULL), -EDEADLK);
        assert_int_equal(grpcx_server_post(s, NULL, NULL), -EINVAL);

        /* the next post is queued, the loop does not run it, stop answers it */
        pc = (PostCaller){ .channel = c, .version = "y", .r = 1 };
        assert_int_equal(pthread_create(&th, NULL, post_caller_main, &pc), 0);
        assert_int_equal(poll(&pfd, 1, -1), 1);
        s = grpcx_server_stop(s);
        assert_null(s);
        assert_int_equal(t.post_r, -ECANCELED);
        assert_int_equal(atomic_load(&t.posts), 1);
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_int_not_equal(pc.r, 0);
        assert_true(pc.status == GRPCX_UNAVAILABLE || pc.status == GRPCX_CANCELLED);

        state_done(&t);
        alarm(0);
}

/* ---- a request that cannot be armed again ------------------------------------- */

static void test_rearm_failure_reported_and_retried(void **state) {
        _cleanup_free_ char *path = sock_path("rearm");
        _cleanup_free_ char *want = NULL;
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        Runtime__V1__PodSandboxStatusRequest sreq = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
        _cleanup_(grpcx_server_stopp) GrpcxServer *s = NULL;
        _cleanup_(grpcx_channel_freep) GrpcxChannel *c = NULL;
        ProtobufCMessage *resp = NULL;
        struct pollfd pfd;
        CubError err = { 0 };
        TestState t;
        int status = -1;

        (void) state;
        alarm(HANG_GUARD_SEC);
        state_init(&t);
        s = start_server(path, &t);
        c = client(path);
        pfd = (struct pollfd){ .fd = grpcx_server_dispatch_fd(s), .events = POLLIN };
        assert_int_equal(grpcx_server_check(s, &err), 0);
        assert_int_equal(poll(&pfd, 1, 0), 0);

        /* this call is served, but its method cannot be armed again */
        grpcx_server_inject_arm_failures(s, 1000000);
        req.version = (char *) "1";
        assert_int_equal(grpcx_unary(c, M_VERSION, &req.base, &runtime__v1__version_response__descriptor,
                                     5 * 1000 * 1000, false, &resp, NULL, &err),
                         0);
        protobuf_c_message_free_unpacked(resp, NULL);

        assert_true(asprintf(&want,
                             "gRPC server 'unix:%s': " M_VERSION " is not served: cannot request its calls "
                             "(grpc_call_error 1), retrying",
                             path) > 0);
        assert_int_equal(grpcx_server_check(s, &err), -EIO);
        assert_int_equal(err.code, EIO);
        assert_string_equal(err.msg, want);
        /* the owner's loop is woken to look */
        assert_int_equal(poll(&pfd, 1, 0), 1);
        assert_int_equal(grpcx_server_dispatch(s), 0);

        /* the method waits in gRPC's queue: the call times out; the others are served */
        assert_int_equal(grpcx_unary(c, M_VERSION, &req.base, &runtime__v1__version_response__descriptor, 300 * 1000,
                                     false, &resp, &status, &err),
                         -ETIMEDOUT);
        assert_int_equal(status, GRPCX_DEADLINE_EXCEEDED);
        sreq.pod_sandbox_id = (char *) "p-2";
        assert_int_equal(grpcx_unary(c, M_STATUS, &sreq.base, &runtime__v1__pod_sandbox_status_response__descriptor,
                                     5 * 1000 * 1000, false, &resp, &status, &err),
                         -ENOENT);
        assert_non_null(strstr(err.msg, "pod sandbox 'p-2' not found"));
        assert_int_equal(grpcx_server_check(s, &err), -EIO);

        /* gRPC accepts requests again: the retry arms the method */
        grpcx_server_inject_arm_failures(s, 0);
        while (grpcx_server_check(s, &err) < 0)
                (void) usleep(1000);
        req.version = (char *) "2";
        assert_int_equal(grpcx_unary(c, M_VERSION, &req.base, &runtime__v1__version_response__descriptor,
                                     5 * 1000 * 1000, false, &resp, &status, &err),
                         0);
        assert_string_equal(((Runtime__V1__VersionResponse *) resp)->version, "2");
        protobuf_c_message_free_unpacked(resp, NULL);
        assert_int_equal(grpcx_server_check(s, &err), 0);

        s = grpcx_server_stop(s);
        state_done(&t);
        alarm(0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unary_version),
                cmocka_unit_test(test_unary_not_found),
                cmocka_unit_test(test_unary_handler_without_reply),
                cmocka_unit_test(test_unknown_method),
                cmocka_unit_test(test_malformed_request),
                cmocka_unit_test(test_stream_three_messages),
                cmocka_unit_test(test_stream_error_status),
                cmocka_unit_test(test_stream_client_cancel_ends_sender),
                cmocka_unit_test(test_stream_client_cancel_wakes_waiter),
                cmocka_unit_test(test_stop_with_open_stream),
                cmocka_unit_test(test_stop_with_blocked_sender),
                cmocka_unit_test(test_nobody_listening),
                cmocka_unit_test(test_wait_for_ready_times_out),
                cmocka_unit_test(test_concurrent_unary),
                cmocka_unit_test(test_start_errors),
                cmocka_unit_test(test_restart_on_same_socket),
                cmocka_unit_test(test_stream_limit),
                cmocka_unit_test(test_stream_threads_reaped),
                cmocka_unit_test(test_stream_calls_from_another_thread),
                cmocka_unit_test(test_post_round_trip_sd_event),
                cmocka_unit_test(test_post_poll_loop_and_stop),
                cmocka_unit_test(test_rearm_failure_reported_and_retried),
        };

        return cmocka_run_group_tests_name("grpcx", tests, group_setup, group_teardown);
}
