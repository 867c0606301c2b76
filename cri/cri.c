/* SPDX-License-Identifier: Apache-2.0 */
/* The CRI client: typed configs → runtime.v1 messages → grpcx unary calls,
 * and replies back into cubelet's own structs. This file holds the client,
 * the shared call helpers and the image calls; sandbox.c and container.c the
 * calls on pod sandboxes and containers. */
#include "cri.h"
#include "cri-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PULL_TIMEOUT_USEC (600ULL * 1000000ULL)

/* ---- a bump list of allocations freed together after a call ------------ */

void *cri_arena_alloc(CriArena *a, size_t size) {
        void **np;
        void *p;

        if (a->failed)
                return NULL;
        p = calloc(1, size ? size : 1);
        np = p ? realloc(a->ptrs, (a->n + 1) * sizeof(void *)) : NULL;
        if (!np) {
                free(p);
                a->failed = true;
                return NULL;
        }
        a->ptrs = np;
        a->ptrs[a->n++] = p;
        return p;
}

void cri_arena_done(CriArena *a) {
        for (size_t i = 0; i < a->n; i++)
                free(a->ptrs[i]);
        free(a->ptrs);
        *a = (CriArena){};
}

/* ---- flat string lists -------------------------------------------------- */

void cri_strv_free(char **l) {
        for (size_t i = 0; l && l[i]; i++)
                free(l[i]);
        free(l);
}

const char *cri_kv_get(char *const *kv, const char *key) {
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2)
                if (strcmp(kv[i], key) == 0)
                        return kv[i + 1];
        return NULL;
}

/* Sets entry i of a flat key/value list; -ENOMEM leaves the list freeable
 * with cri_strv_free() (it ends at the first NULL). */
int cri_kv_set(char **l, size_t i, const char *key, const char *value) {
        l[2 * i] = strdup(cri_s_or_empty(key));
        if (!l[2 * i])
                return -ENOMEM;
        l[2 * i + 1] = strdup(cri_s_or_empty(value));
        return l[2 * i + 1] ? 0 : -ENOMEM;
}

/* ---- client ------------------------------------------------------------- */

int cri_client_new(const char *endpoint, uint64_t timeout_usec, CriClient **ret, CubError *err) {
        CriClient *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = grpcx_channel_new(endpoint ? endpoint : CRI_DEFAULT_ENDPOINT, &c->channel, err);
        if (r < 0) {
                free(c);
                return r;
        }
        c->timeout_usec = timeout_usec ? timeout_usec : CRI_DEFAULT_TIMEOUT_USEC;
        *ret = c;
        return 0;
}

CriClient *cri_client_free(CriClient *c) {
        if (!c)
                return NULL;
        grpcx_channel_free(c->channel);
        free(c);
        return NULL;
}

const char *cri_client_endpoint(const CriClient *c) {
        return grpcx_channel_target(c->channel);
}

int cri_call(CriClient *c, const char *method, const void *req, const ProtobufCMessageDescriptor *d, uint64_t timeout,
             void *ret, CubError *err) {
        return grpcx_unary(c->channel, method, req, d, timeout ? timeout : c->timeout_usec, false,
                           (ProtobufCMessage **) ret, NULL, err);
}

int cri_version(CriClient *c, CriVersion *ret, CubError *err) {
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        Runtime__V1__VersionResponse *resp = NULL;
        int r;

        req.version = (char *) "v1";
        r = cri_call(c, CRI_RT "Version", &req, &runtime__v1__version_response__descriptor, 0, &resp, err);
        if (r < 0)
                return r;
        (void) snprintf(ret->runtime_name, sizeof(ret->runtime_name), "%s", cri_s_or_empty(resp->runtime_name));
        (void) snprintf(ret->runtime_version, sizeof(ret->runtime_version), "%s",
                        cri_s_or_empty(resp->runtime_version));
        (void) snprintf(ret->runtime_api_version, sizeof(ret->runtime_api_version), "%s",
                        cri_s_or_empty(resp->runtime_api_version));
        cri_free_msg(resp);
        return 0;
}

int cri_runtime_status(CriClient *c, CriRuntimeStatus *ret, CubError *err) {
        Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
        Runtime__V1__StatusResponse *resp = NULL;
        bool any_false = false;
        int r;

        *ret = (CriRuntimeStatus){ .runtime_ready = true, .network_ready = true };
        r = cri_call(c, CRI_RT "Status", &req, &runtime__v1__status_response__descriptor, 0, &resp, err);
        if (r < 0)
                return r;
        for (size_t i = 0; resp->status && i < resp->status->n_conditions; i++) {
                const Runtime__V1__RuntimeCondition *rc = resp->status->conditions[i];
                const char *type = cri_s_or_empty(rc->type);

                if (strcmp(type, "RuntimeReady") == 0)
                        ret->runtime_ready = rc->status;
                else if (strcmp(type, "NetworkReady") == 0)
                        ret->network_ready = rc->status;
                else
                        continue;
                if (!rc->status && !any_false) {
                        any_false = true;
                        (void) snprintf(ret->reason, sizeof(ret->reason), "%s", cri_s_or_empty(rc->reason));
                        (void) snprintf(ret->message, sizeof(ret->message), "%s", cri_s_or_empty(rc->message));
                }
        }
        cri_free_msg(resp);
        return 0;
}

int cri_status_info(CriClient *c, const char *key, char **ret, CubError *err) {
        Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
        Runtime__V1__StatusResponse *resp = NULL;
        char *v = NULL;
        int r;

        req.verbose = true;
        r = cri_call(c, CRI_RT "Status", &req, &runtime__v1__status_response__descriptor, 0, &resp, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < resp->n_info; i++)
                if (resp->info[i]->key && strcmp(resp->info[i]->key, key) == 0) {
                        v = strdup(cri_s_or_empty(resp->info[i]->value));
                        if (!v) {
                                cri_free_msg(resp);
                                return cub_err_set(err, ENOMEM, "out of memory");
                        }
                        break;
                }
        cri_free_msg(resp);
        *ret = v;
        return 0;
}

/* The reply of a call whose request carries only an id: NOT_FOUND counts as
 * success for the idempotent ones, and err stays untouched on success. */
int cri_by_id(CriClient *c, const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *resp_d,
              bool not_found_ok, CubError *err) {
        ProtobufCMessage *resp = NULL;
        CubError e = {};
        int r;

        r = cri_call(c, method, req, resp_d, 0, &resp, &e);
        if (r == -ENOENT && not_found_ok)
                return 0;
        if (r < 0) {
                if (err)
                        *err = e;
                return r;
        }
        cri_free_msg(resp);
        return 0;
}

/* ---- images ------------------------------------------------------------- */

int cri_image_status(CriClient *c, const char *image, bool *ret_present, char **ret_id, uint64_t *ret_size,
                     CubError *err) {
        Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__ImageStatusResponse *resp = NULL;
        int r;

        spec.image = (char *) image;
        req.image = &spec;
        r = cri_call(c, CRI_IMG "ImageStatus", &req, &runtime__v1__image_status_response__descriptor, 0, &resp, err);
        if (r < 0)
                return r;
        *ret_present = resp->image != NULL;
        if (ret_size)
                *ret_size = resp->image ? resp->image->size : 0;
        if (ret_id) {
                *ret_id = resp->image ? cri_dup_or_empty(resp->image->id) : NULL;
                if (resp->image && !*ret_id) {
                        cri_free_msg(resp);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        cri_free_msg(resp);
        return 0;
}

int cri_pull_image(CriClient *c, const char *image, const CriAuth *auth, char **ret_ref, CubError *err) {
        Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__AuthConfig ac = RUNTIME__V1__AUTH_CONFIG__INIT;
        Runtime__V1__PullImageResponse *resp = NULL;
        int r;

        spec.image = (char *) image;
        req.image = &spec;
        if (auth) {
                ac.username = (char *) (auth->username ? auth->username : "");
                ac.password = (char *) (auth->password ? auth->password : "");
                ac.server_address = (char *) (auth->server_address ? auth->server_address : "");
                req.auth = &ac;
        }
        r = cri_call(c, CRI_IMG "PullImage", &req, &runtime__v1__pull_image_response__descriptor, PULL_TIMEOUT_USEC,
                     &resp, err);
        if (r < 0)
                return r;
        if (ret_ref) {
                *ret_ref = cri_dup_or_empty(resp->image_ref);
                if (!*ret_ref) {
                        cri_free_msg(resp);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        cri_free_msg(resp);
        return 0;
}
