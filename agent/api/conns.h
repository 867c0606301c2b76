/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/api conns: who may hold one of the HTTP server's connection slots,
 * and how long a client may take to send its request headers (issue 25 §4:
 * hostile clients). agent/api/http.c feeds it libmicrohttpd's connection
 * events; the policy is here, and testable on a fake clock.
 *
 * A connection WAITS from its accept, and again from the end of each
 * response (keep-alive), until its request headers are complete; it is then
 * IN FLIGHT until its response has been handed to the kernel; DROPPED once
 * the table has shut its socket down (shutdown(2): the server reads end of
 * file and closes it on its next pass); freed when the server closes it.
 *
 *  - Header deadline: a connection is dropped header_usec after it began to
 *    wait, however many bytes it sends meanwhile. libmicrohttpd's own
 *    timeout counts from the last byte, so a byte every few seconds held a
 *    connection forever; a TLS handshake that never ends is covered too
 *    (it comes before the headers). The idle timeout still applies after.
 *  - Full table: when a connection opens and more than `limit` are waiting or
 *    in flight, one waiting connection is dropped: of those that have sent
 *    the fewest bytes (the kernel's count, TCP_INFO), the oldest; never the
 *    new one, unless no other waits. A request whose headers are in is never
 *    dropped for room, and one address may have at most `per_peer` requests
 *    in flight (only those: every loopback client shares 127.0.0.1, so a
 *    limit on an address's connections let slow clients refuse a good one,
 *    as libmicrohttpd's per-address limit did).
 *
 * Why a good client is served: a plain HTTP client sends its headers as
 * soon as it has connected, and the server reads them on its next pass; a
 * TLS client has sent its whole ClientHello (hundreds of bytes) while it
 * waits for the rest of its handshake. Slow and stalled clients have sent
 * less (a trickle, half a ClientHello, nothing), so they make room first,
 * even while they open connections a thousand at a time; and they hold at
 * most `limit` slots, each for at most header_usec. The new connection is
 * spared because it has had no time to send anything yet, and the oldest of
 * equals goes for the same reason: a good client accepted in the middle of
 * a flood, its request still on the way, outlives `limit` more accepts (the
 * newest of equals went at the next one: a probe of http-hostile.py, 3 ms
 * after its connect, in a clean-clone CI).
 * What this cannot tell apart is a flood of connections that each send as
 * much as a real client before they stall: a flood, not slow clients, and
 * each of them still ends at the header deadline.
 *
 * Bounded: the server's own table (its connection limit) is
 * api_conns_capacity() = limit + API_CONNS_HEADROOM, the headroom holding
 * the dropped connections until the server's next pass closes them. Should
 * it fill, libmicrohttpd stops accepting until then: new clients wait in
 * the listen backlog, they are not refused.
 *
 * Thread-safe: one mutex, held briefly by the server's thread and by the
 * reaper thread that enforces the deadlines (it sleeps until the earliest).
 * A dropped socket is shut down under that lock, and the server closes a
 * socket only after api_conns_close(), so a file descriptor number is never
 * shut down after it was reused.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../util/err.h"

/* Dropped connections the server has yet to close, beyond `limit`. */
#define API_CONNS_HEADROOM 32u

typedef struct ApiConns ApiConns;
typedef struct ApiConn ApiConn;

typedef struct ApiConnsConfig {
        unsigned limit;       /* connections waiting or in flight at once (>= 1) */
        unsigned per_peer;    /* requests in flight from one address (>= 1) */
        uint64_t header_usec; /* the header deadline (> 0) */
        /* How a connection is dropped, under the table's lock. NULL:
         * shutdown(fd, SHUT_RDWR). */
        void (*drop)(int fd, void *userdata);
        /* The bytes a connection has received. NULL: TCP_INFO's tcpi_bytes_received. */
        uint64_t (*received)(int fd, void *userdata);
        void *userdata;
        /* A thread enforces the deadlines; false: the caller calls api_conns_expire(). */
        bool reaper;
} ApiConnsConfig;

typedef struct ApiConnsStats {
        unsigned waiting, in_flight, dropped; /* now */
        uint64_t deadline_total;              /* dropped at the header deadline */
        uint64_t full_total;                  /* dropped for room (or refused: no room left) */
        uint64_t busy_total;                  /* requests over per_peer */
} ApiConnsStats;

int api_conns_new(const ApiConnsConfig *c, ApiConns **ret, CubError *err);
/* After the server stopped: no connection is open any more. */
ApiConns *api_conns_free(ApiConns *t);
/* The server's connection limit: limit + API_CONNS_HEADROOM. */
unsigned api_conns_capacity(const ApiConns *t);

/* The server accepted fd from peer (NULL or not IP: an address of its own):
 * it waits from now. -ENOBUFS when all capacity slots are taken (fd has been
 * dropped; cannot happen while the server's limit is api_conns_capacity()). */
int api_conns_open(ApiConns *t, int fd, const struct sockaddr *peer, uint64_t now, ApiConn **ret);
/* Its request headers are complete: in flight. -EBUSY: its address has
 * per_peer requests in flight (it stays waiting: answer 503 and close);
 * -ECONNABORTED: it was dropped meanwhile (close it). */
int api_conns_request(ApiConns *t, ApiConn *c);
/* Its response is done (or the request ended): it waits again, from now. */
void api_conns_response_done(ApiConns *t, ApiConn *c, uint64_t now);
/* Its request became a streaming session (101): it holds its slot until
 * closed, is never dropped, and no longer counts as a request in flight. */
void api_conns_upgraded(ApiConns *t, ApiConn *c);
/* The server closes it: its slot is free. */
void api_conns_close(ApiConns *t, ApiConn *c);
/* Drops the connections whose deadline is <= now; returns the next
 * deadline, UINT64_MAX when none waits (the reaper's step). */
uint64_t api_conns_expire(ApiConns *t, uint64_t now);
void api_conns_stats(ApiConns *t, ApiConnsStats *ret);
