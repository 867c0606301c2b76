/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP server's connection slots: header deadlines and who makes room
 * (conns.h). */
#include "conns.h"

#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../util/time.h"

typedef enum ConnState {
        CONN_FREE,
        CONN_WAITING,
        CONN_IN_FLIGHT,
        CONN_DROPPED,
        CONN_UPGRADED, /* a streaming session: never dropped, not a request in flight */
} ConnState;

struct ApiConn {
        ApiConn *prev, *next; /* the waiting list (oldest first), or the free list */
        uint64_t since;       /* waiting since */
        int fd;
        ConnState state;
        sa_family_t family; /* the peer's address: AF_INET, AF_INET6 or 0 (other) */
        uint8_t addr[16];
};

struct ApiConns {
        pthread_mutex_t lock;
        pthread_cond_t wake; /* a new earliest deadline, or stop */
        pthread_t reaper;
        bool has_reaper, stopping;
        unsigned limit, per_peer, capacity;
        unsigned live; /* waiting or in flight */
        uint64_t header_usec;
        void (*drop)(int fd, void *userdata);
        uint64_t (*received)(int fd, void *userdata);
        void *userdata;
        ApiConn *head, *tail; /* waiting, by `since`: the earliest deadline first */
        ApiConn *free;
        ApiConnsStats stats;
        ApiConn slots[];
};

static void drop_shutdown(int fd, void *userdata) {
        (void) userdata;
        (void) shutdown(fd, SHUT_RDWR);
}

/* TCP_INFO's count (Linux 4.1), which includes what the server has yet to
 * read; 0 when the kernel does not say. */
static uint64_t received_tcp(int fd, void *userdata) {
        struct tcp_info ti = {};
        socklen_t len = sizeof(ti);

        (void) userdata;
        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
            len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
                return 0;
        return ti.tcpi_bytes_received;
}

static void wait_from(ApiConns *t, ApiConn *c, uint64_t now) {
        c->state = CONN_WAITING;
        c->since = now;
        c->next = NULL;
        c->prev = t->tail;
        if (t->tail)
                t->tail->next = c;
        else {
                t->head = c;
                pthread_cond_signal(&t->wake); /* the reaper slept without a deadline */
        }
        t->tail = c;
}

static void unwait(ApiConns *t, ApiConn *c) {
        if (c->prev)
                c->prev->next = c->next;
        else
                t->head = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                t->tail = c->prev;
        c->prev = c->next = NULL;
}

static void drop(ApiConns *t, ApiConn *c) {
        if (c->state == CONN_WAITING)
                unwait(t, c);
        if (c->state == CONN_WAITING || c->state == CONN_IN_FLIGHT)
                t->live--;
        c->state = CONN_DROPPED;
        t->drop(c->fd, t->userdata);
}

static uint64_t expire(ApiConns *t, uint64_t now) {
        while (t->head && t->head->since + t->header_usec <= now) {
                drop(t, t->head);
                t->stats.deadline_total++;
        }
        return t->head ? t->head->since + t->header_usec : UINT64_MAX;
}

static void *reaper(void *userdata) {
        ApiConns *t = userdata;

        pthread_mutex_lock(&t->lock);
        while (!t->stopping) {
                uint64_t next = expire(t, cub_now_usec(CLOCK_MONOTONIC));

                if (next == UINT64_MAX)
                        (void) pthread_cond_wait(&t->wake, &t->lock);
                else {
                        struct timespec ts = { .tv_sec = (time_t) (next / CUB_USEC_PER_SEC),
                                               .tv_nsec = (long) (next % CUB_USEC_PER_SEC * CUB_NSEC_PER_USEC) };

                        (void) pthread_cond_timedwait(&t->wake, &t->lock, &ts);
                }
        }
        pthread_mutex_unlock(&t->lock);
        return NULL;
}

int api_conns_new(const ApiConnsConfig *c, ApiConns **ret, CubError *err) {
        unsigned capacity = c->limit + API_CONNS_HEADROOM;
        pthread_condattr_t ca;
        ApiConns *t;
        int r;

        if (c->limit == 0 || c->limit > 65536 || c->per_peer == 0 || c->header_usec == 0)
                return cub_err_set(err, EINVAL,
                                   "HTTP API connection limits: limit %u, per address %u, header "
                                   "timeout %llu us",
                                   c->limit, c->per_peer, (unsigned long long) c->header_usec);
        t = calloc(1, sizeof(*t) + capacity * sizeof(t->slots[0]));
        if (!t)
                return cub_err_set(err, ENOMEM, "out of memory");
        pthread_mutex_init(&t->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&t->wake, &ca);
        pthread_condattr_destroy(&ca);
        t->limit = c->limit;
        t->per_peer = c->per_peer;
        t->capacity = capacity;
        t->header_usec = c->header_usec;
        t->drop = c->drop ? c->drop : drop_shutdown;
        t->received = c->received ? c->received : received_tcp;
        t->userdata = c->userdata;
        for (unsigned i = capacity; i > 0; i--) {
                t->slots[i - 1].next = t->free;
                t->free = &t->slots[i - 1];
        }
        if (c->reaper) {
                r = pthread_create(&t->reaper, NULL, reaper, t);
                if (r != 0) {
                        api_conns_free(t);
                        return cub_err_set(err, r, "HTTP API: cannot start the header deadline thread");
                }
                t->has_reaper = true;
        }
        *ret = t;
        return 0;
}

ApiConns *api_conns_free(ApiConns *t) {
        if (!t)
                return NULL;
        if (t->has_reaper) {
                pthread_mutex_lock(&t->lock);
                t->stopping = true;
                pthread_cond_signal(&t->wake);
                pthread_mutex_unlock(&t->lock);
                pthread_join(t->reaper, NULL);
        }
        pthread_cond_destroy(&t->wake);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return NULL;
}

unsigned api_conns_capacity(const ApiConns *t) {
        return t->capacity;
}

static void set_peer(ApiConn *c, const struct sockaddr *peer) {
        c->family = 0;
        memset(c->addr, 0, sizeof(c->addr));
        if (peer && peer->sa_family == AF_INET) {
                c->family = AF_INET;
                memcpy(c->addr, &((const struct sockaddr_in *) peer)->sin_addr, sizeof(struct in_addr));
        } else if (peer && peer->sa_family == AF_INET6) {
                c->family = AF_INET6;
                memcpy(c->addr, &((const struct sockaddr_in6 *) peer)->sin6_addr, sizeof(struct in6_addr));
        }
}

/* Who makes room for c (conns.h): of the other waiting connections, one
 * that has received the fewest bytes, the oldest of those; NULL when none. */
static ApiConn *victim(ApiConns *t, const ApiConn *c) {
        ApiConn *v = NULL;
        uint64_t least = UINT64_MAX;

        for (ApiConn *o = t->head; o && least > 0; o = o->next) {
                uint64_t n;

                if (o == c)
                        continue;
                n = t->received(o->fd, t->userdata);
                if (n < least) {
                        least = n;
                        v = o;
                }
        }
        return v;
}

int api_conns_open(ApiConns *t, int fd, const struct sockaddr *peer, uint64_t now, ApiConn **ret) {
        ApiConn *c;

        pthread_mutex_lock(&t->lock);
        c = t->free;
        if (!c) {
                t->stats.full_total++;
                t->drop(fd, t->userdata);
                pthread_mutex_unlock(&t->lock);
                return -ENOBUFS;
        }
        t->free = c->next;
        c->fd = fd;
        set_peer(c, peer);
        wait_from(t, c, now);
        if (++t->live > t->limit) {
                ApiConn *v = victim(t, c);

                drop(t, v ? v : c);
                t->stats.full_total++;
        }
        pthread_mutex_unlock(&t->lock);
        *ret = c;
        return 0;
}

static unsigned in_flight_from(const ApiConns *t, const ApiConn *c) {
        unsigned n = 0;

        for (unsigned i = 0; i < t->capacity; i++) {
                const ApiConn *o = &t->slots[i];

                n += o->state == CONN_IN_FLIGHT && o->family == c->family && memcmp(o->addr, c->addr, 16) == 0;
        }
        return n;
}

int api_conns_request(ApiConns *t, ApiConn *c) {
        int r = 0;

        pthread_mutex_lock(&t->lock);
        if (c->state == CONN_DROPPED)
                r = -ECONNABORTED;
        else if (c->state == CONN_WAITING) {
                if (in_flight_from(t, c) >= t->per_peer) {
                        t->stats.busy_total++;
                        r = -EBUSY;
                } else {
                        unwait(t, c);
                        c->state = CONN_IN_FLIGHT;
                }
        }
        pthread_mutex_unlock(&t->lock);
        return r;
}

void api_conns_response_done(ApiConns *t, ApiConn *c, uint64_t now) {
        pthread_mutex_lock(&t->lock);
        if (c->state == CONN_IN_FLIGHT)
                wait_from(t, c, now);
        pthread_mutex_unlock(&t->lock);
}

void api_conns_upgraded(ApiConns *t, ApiConn *c) {
        pthread_mutex_lock(&t->lock);
        if (c->state == CONN_IN_FLIGHT)
                c->state = CONN_UPGRADED;
        pthread_mutex_unlock(&t->lock);
}

void api_conns_close(ApiConns *t, ApiConn *c) {
        pthread_mutex_lock(&t->lock);
        if (c->state == CONN_WAITING)
                unwait(t, c);
        if (c->state == CONN_WAITING || c->state == CONN_IN_FLIGHT || c->state == CONN_UPGRADED)
                t->live--;
        *c = (ApiConn){ .state = CONN_FREE, .fd = -1, .next = t->free };
        t->free = c;
        pthread_mutex_unlock(&t->lock);
}

uint64_t api_conns_expire(ApiConns *t, uint64_t now) {
        uint64_t next;

        pthread_mutex_lock(&t->lock);
        next = expire(t, now);
        pthread_mutex_unlock(&t->lock);
        return next;
}

void api_conns_stats(ApiConns *t, ApiConnsStats *ret) {
        pthread_mutex_lock(&t->lock);
        *ret = t->stats;
        ret->waiting = ret->in_flight = ret->dropped = 0;
        for (unsigned i = 0; i < t->capacity; i++) {
                ret->waiting += t->slots[i].state == CONN_WAITING;
                ret->in_flight += t->slots[i].state == CONN_IN_FLIGHT;
                ret->dropped += t->slots[i].state == CONN_DROPPED;
        }
        pthread_mutex_unlock(&t->lock);
}
