/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the CRI client's sources (cri.c, sandbox.c, container.c)
 * and their unit tests only. */

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/grpcx.h"
#include "cri.h"
#include "proto/cri/api.pb-c.h"

#define CRI_RT "/runtime.v1.RuntimeService/"
#define CRI_IMG "/runtime.v1.ImageService/"

struct CriClient {
        GrpcxChannel *channel;
        uint64_t timeout_usec;
};

/* ---- a bump list of allocations freed together after a call ------------ */

typedef struct CriArena {
        void **ptrs;
        size_t n;
        bool failed;
} CriArena;

/* Zeroed memory owned by a; NULL (and a->failed set) when out of memory. */
void *cri_arena_alloc(CriArena *a, size_t size);
void cri_arena_done(CriArena *a);

static inline size_t cri_strv_len(const char *const *l) {
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

static inline char *cri_s_or_empty(const char *s) {
        return (char *) (s ? s : "");
}

static inline char *cri_dup_or_empty(const char *s) {
        return strdup(s ? s : "");
}

/* A flat key/value list (kv) as a protobuf map of one generated entry type,
 * in arena a; one function per entry type. */
#define CRI_DEFINE_MAP_BUILDER(fn, Entry, INIT)                                \
        static Entry **fn(CriArena *a, const char *const *kv, size_t *ret_n) { \
                size_t n = cri_strv_len(kv) / 2;                               \
                Entry **arr;                                                   \
                                                                               \
                *ret_n = 0;                                                    \
                if (n == 0)                                                    \
                        return NULL;                                           \
                arr = cri_arena_alloc(a, n * sizeof(Entry *));                 \
                for (size_t i = 0; arr && i < n; i++) {                        \
                        Entry *e = cri_arena_alloc(a, sizeof(Entry));          \
                        if (!e)                                                \
                                return NULL;                                   \
                        *e = (Entry) INIT;                                     \
                        e->key = (char *) kv[2 * i];                           \
                        e->value = (char *) kv[2 * i + 1];                     \
                        arr[i] = e;                                            \
                }                                                              \
                *ret_n = arr ? n : 0;                                          \
                return arr;                                                    \
        }

/* Sets entry i of a flat key/value list; -ENOMEM leaves the list freeable
 * with cri_strv_free() (it ends at the first NULL). */
int cri_kv_set(char **l, size_t i, const char *key, const char *value);

/* A protobuf map of a reply (entries of one generated type) copied into a
 * flat list; one function per entry type, so the compiler checks that each
 * has string key and value fields. */
#define CRI_DEFINE_MAP_COPIER(fn, Entry)                                                \
        static char **fn(Entry *const *entries, size_t n) {                             \
                char **l = calloc(2 * n + 1, sizeof(char *));                           \
                                                                                        \
                for (size_t i = 0; l && i < n; i++)                                     \
                        if (cri_kv_set(l, i, entries[i]->key, entries[i]->value) < 0) { \
                                cri_strv_free(l);                                       \
                                return NULL;                                            \
                        }                                                               \
                return l;                                                               \
        }

/* ---- calls (cri.c) ------------------------------------------------------ */

/* A unary call of method with c's timeout (or timeout, when not 0); the
 * reply is stored in *ret (free it with cri_free_msg()). */
int cri_call(CriClient *c, const char *method, const void *req, const ProtobufCMessageDescriptor *d, uint64_t timeout,
             void *ret, CubError *err);

static inline void cri_free_msg(void *m) {
        if (m)
                protobuf_c_message_free_unpacked(m, NULL);
}

/* The reply of a call whose request carries only an id: NOT_FOUND counts as
 * success for the idempotent ones, and err stays untouched on success. */
int cri_by_id(CriClient *c, const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *resp_d,
              bool not_found_ok, CubError *err);

/* ---- message builders (sandbox.c), in an arena -------------------------- */

Runtime__V1__SecurityProfile *cri_seccomp_profile(CriArena *a, CriSeccompType t, const char *localhost);
Runtime__V1__SELinuxOption *cri_selinux_option(CriArena *a, const CriSELinux *sel);
Runtime__V1__PodSandboxConfig *cri_sandbox_config(CriArena *a, const CriSandboxConfig *cfg);
/* security context (sandbox.c): the pid/ipc/user namespaces of the pod (cfg
 * may be NULL: the defaults; -ENOMEM when a is out of memory) and an Int64Value */
int cri_namespaces_set(CriArena *a, Runtime__V1__NamespaceOption *ns, const CriSandboxConfig *cfg);
Runtime__V1__Int64Value *cri_int64_value(CriArena *a, int64_t v);

/* network.c: DNSConfig and port mappings of a sandbox config */
int cri_sandbox_network(CriArena *a, const CriSandboxConfig *cfg, Runtime__V1__PodSandboxConfig *sc);
