/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A kubeconfig (kubelet's --kubeconfig): the current context's cluster and
 * user. Files it names are read at load (relative paths from the
 * kubeconfig's directory, as client-go), so every credential is held as
 * bytes: PEM for libcurl's *_BLOB options, the token as text.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

typedef struct KubeBlob {
        uint8_t *data;
        size_t len;
} KubeBlob;

typedef struct KubeConfig {
        char *path;                          /* the file it came from */
        char *context, *cluster_name, *user; /* names, for messages */
        char *server;                        /* https://host:port, no trailing slash */
        KubeBlob ca;                         /* certificate-authority(-data); empty: the system's */
        KubeBlob cert, key;                  /* client-certificate(-data), client-key(-data) */
        char *token;                         /* token or tokenFile's first line; NULL: none */
        bool insecure;                       /* insecure-skip-tls-verify */
} KubeConfig;

int kube_config_load(const char *path, KubeConfig *ret, CubError *err);
int kube_config_decode(const char *buf, size_t len, const char *path, KubeConfig *ret, CubError *err);
void kube_config_done(KubeConfig *c);
