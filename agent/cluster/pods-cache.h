/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The file of the node's last API pods (pods.h, kube_pods_set_cache). */

#include <jansson.h>
#include <stddef.h>

#include "../util/err.h"

/* "uid/generation ..." of the pods the file keeps, sorted: the file is
 * written again only when it changes, not for each status change */
char *kube_pods_cache_fingerprint(const json_t *pods);
/* pods: uid → Pod; ret_n: how many it kept */
int kube_pods_cache_write(const char *path, const char *node, const json_t *pods, size_t *ret_n, CubError *err);
/* uid → Pod (a new reference), or NULL and err (ENOENT: no file yet) */
json_t *kube_pods_cache_read(const char *path, const char *node, CubError *err);
