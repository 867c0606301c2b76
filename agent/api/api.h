/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/api: the status API on a root-only unix socket (mode 0600). A
 * client connects and reads one JSON document; the server closes the
 * connection after writing it. The document is rendered at once and written
 * without blocking the loop, as the client reads it (at most 16 replies at
 * a time, each dropped after 5 s).
 */

#include <systemd/sd-event.h>

#include "../util/err.h"

typedef char *(*ApiRenderFn)(void *userdata);

typedef struct ApiServer ApiServer;

int api_server_new(sd_event *e, const char *path, ApiRenderFn render, void *userdata, ApiServer **ret, CubError *err);
ApiServer *api_server_free(ApiServer *s);

/* Client side: reads the whole document from the socket at path. */
int api_fetch(const char *path, char **ret, CubError *err);
