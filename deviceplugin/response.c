/* SPDX-License-Identifier: Apache-2.0 */
/* A plugin's ContainerAllocateResponse in plain C. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dp-internal.h"
#include "proto/deviceplugin/api.pb-c.h"

void dp_container_response_done(DpContainerResponse *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_envs; i++) {
                free(r->envs[i].key);
                free(r->envs[i].value);
        }
        free(r->envs);
        for (size_t i = 0; i < r->n_mounts; i++) {
                free(r->mounts[i].container_path);
                free(r->mounts[i].host_path);
        }
        free(r->mounts);
        for (size_t i = 0; i < r->n_devices; i++) {
                free(r->devices[i].container_path);
                free(r->devices[i].host_path);
                free(r->devices[i].permissions);
        }
        free(r->devices);
        for (size_t i = 0; i < r->n_annotations; i++) {
                free(r->annotations[i].key);
                free(r->annotations[i].value);
        }
        free(r->annotations);
        free(r->raw);
        *r = (DpContainerResponse){};
}

static int kv_cmp(const void *a, const void *b) {
        return strcmp(((const DpKeyValue *) a)->key, ((const DpKeyValue *) b)->key);
}

static char *dup_str(const char *s, bool *oom) {
        char *c = strdup(s ? s : "");

        if (!c)
                *oom = true;
        return c;
}

/* Map entries (EnvsEntry and AnnotationsEntry share the layout) → sorted key/values. */
static DpKeyValue *copy_map(V1beta1__ContainerAllocateResponse__EnvsEntry **e, size_t n, bool *oom) {
        DpKeyValue *kv = calloc(n + 1, sizeof(DpKeyValue));

        if (!kv) {
                *oom = true;
                return NULL;
        }
        for (size_t i = 0; i < n; i++) {
                kv[i].key = dup_str(e[i]->key, oom);
                kv[i].value = dup_str(e[i]->value, oom);
        }
        if (!*oom)
                qsort(kv, n, sizeof(DpKeyValue), kv_cmp);
        return kv;
}

int dp_container_response_from_pb(const void *pb_response, DpContainerResponse *ret, CubError *err) {
        const V1beta1__ContainerAllocateResponse *pb = pb_response;
        DpContainerResponse r = {};
        bool oom = false;
        size_t n;

        r.envs = copy_map(pb->envs, pb->n_envs, &oom);
        r.n_envs = pb->n_envs;
        r.annotations =
                copy_map((V1beta1__ContainerAllocateResponse__EnvsEntry **) pb->annotations, pb->n_annotations, &oom);
        r.n_annotations = pb->n_annotations;
        r.mounts = calloc(pb->n_mounts + 1, sizeof(DpMount));
        if (r.mounts) {
                r.n_mounts = pb->n_mounts;
                for (size_t i = 0; i < pb->n_mounts; i++) {
                        r.mounts[i].container_path = dup_str(pb->mounts[i]->container_path, &oom);
                        r.mounts[i].host_path = dup_str(pb->mounts[i]->host_path, &oom);
                        r.mounts[i].read_only = pb->mounts[i]->read_only;
                }
        } else
                oom = true;
        r.devices = calloc(pb->n_devices + 1, sizeof(DpDeviceSpec));
        if (r.devices) {
                r.n_devices = pb->n_devices;
                for (size_t i = 0; i < pb->n_devices; i++) {
                        r.devices[i].container_path = dup_str(pb->devices[i]->container_path, &oom);
                        r.devices[i].host_path = dup_str(pb->devices[i]->host_path, &oom);
                        r.devices[i].permissions = dup_str(pb->devices[i]->permissions, &oom);
                }
        } else
                oom = true;
        n = protobuf_c_message_get_packed_size(&pb->base);
        r.raw = malloc(n + 1);
        if (r.raw)
                r.raw_len = protobuf_c_message_pack(&pb->base, r.raw);
        else
                oom = true;
        if (oom) {
                dp_container_response_done(&r);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret = r;
        return 0;
}

int dp_container_response_from_raw(const uint8_t *raw, size_t len, DpContainerResponse *ret, CubError *err) {
        V1beta1__ContainerAllocateResponse *pb;
        int r;

        pb = v1beta1__container_allocate_response__unpack(NULL, len, raw);
        if (!pb)
                return cub_err_set(err, EBADMSG, "malformed ContainerAllocateResponse (%zu bytes)", len);
        r = dp_container_response_from_pb(pb, ret, err);
        v1beta1__container_allocate_response__free_unpacked(pb, NULL);
        if (r < 0)
                return r;
        /* keep the bytes as they came (a repack may order fields differently) */
        free(ret->raw);
        ret->raw = malloc(len + 1);
        if (!ret->raw) {
                dp_container_response_done(ret);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        memcpy(ret->raw, raw, len);
        ret->raw_len = len;
        return 0;
}
