/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/api stream: /exec, /attach and /portForward of the kubelet server
 * proxied to the container runtime's streaming server, as kubelet does
 * with containerd (its UpgradeAwareHandler): the runtime's Exec, Attach or
 * PortForward answers a one-time URL on loopback; the client's upgrade
 * request (SPDY/3.1, as the API server sends it, or WebSocket with the
 * v4/v5 channel protocols) goes to that URL with the client's own upgrade
 * headers, the runtime's 101 and headers go back through libmicrohttpd,
 * and a thread then copies bytes both ways until either side closes.
 * Proxying, not serving the protocols here: containerd's server already
 * speaks every version kubectl and the API server negotiate, and the
 * bytes are never interpreted twice.
 */

#include <microhttpd.h>

#include "../util/err.h"
#include "conns.h"

typedef struct ApiStreams ApiStreams;

int api_streams_new(ApiStreams **ret, CubError *err);
/* Ends every session (both sides closed) and waits for their threads. */
ApiStreams *api_streams_free(ApiStreams *s);
unsigned api_streams_active(ApiStreams *s);

/* Sends the request on c to url (http://host:port/path, the runtime's)
 * and queues the answer: the runtime's 101 with the session then copied
 * by a thread, or its refusal (status and text). conn (may be NULL) is
 * marked upgraded in conns once the 101 is queued. */
enum MHD_Result api_stream_proxy(ApiStreams *s, struct MHD_Connection *c, const char *method, const char *url,
                                 ApiConns *conns, ApiConn *conn);
