/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/api selfsigned: the kubelet server's serving certificate when
 * tlsCertFile is not set, as kubelet makes one: <dir>/kubelet.crt and
 * <dir>/kubelet.key, self-signed, for the node's name and address, valid
 * a year, made once and reused while it has more than a day left. An API
 * server that verifies nodes' certificates (--kubelet-certificate-authority)
 * refuses it, as it refuses kubelet's: give tlsCertFile then.
 */

#include "../util/err.h"

/* *ret_cert and *ret_key: the two paths (malloc'd). ip may be NULL. */
int api_selfsigned_ensure(const char *dir, const char *node_name, const char *ip, char **ret_cert, char **ret_key,
                          CubError *err);
