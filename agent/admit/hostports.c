/* SPDX-License-Identifier: Apache-2.0 */
/* Host probe: ports held by sockets of the host, through sock_diag — TCP
 * listening sockets with libnl-idiag, UDP bound (unconnected) sockets with a
 * SOCK_DIAG_BY_FAMILY dump (libnl-idiag speaks the TCP-only inet_diag_req). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netlink/cache.h>
#include <netlink/idiag/idiagnl.h>
#include <netlink/idiag/msg.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "admit-internal.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_sock *, nl_socket_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_cache *, nl_cache_free);

typedef struct PortList {
        AdmitHostPort *items;
        size_t n, cap;
        int error;
} PortList;

static void list_add(PortList *l, const char *proto, int family, const void *addr, uint16_t port) {
        AdmitHostPort *p;
        char ip[ADMIT_IP_MAX];

        if (l->error || port == 0 || !inet_ntop(family, addr, ip, sizeof(ip)))
                return;
        for (size_t i = 0; i < l->n; i++) {
                if (l->items[i].port == port && strcmp(l->items[i].protocol, proto) == 0 &&
                    strcmp(l->items[i].ip, ip) == 0)
                        return;
        }
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 32;

                p = realloc(l->items, cap * sizeof(AdmitHostPort));
                if (!p) {
                        l->error = -ENOMEM;
                        return;
                }
                l->items = p;
                l->cap = cap;
        }
        p = &l->items[l->n];
        *p = (AdmitHostPort){ .port = port };
        (void) snprintf(p->protocol, sizeof(p->protocol), "%s", proto);
        memcpy(p->ip, ip, sizeof(p->ip));
        l->n++;
}

static void tcp_one(struct nl_object *obj, void *arg) {
        struct idiagnl_msg *m = (struct idiagnl_msg *) obj;
        struct nl_addr *a = idiagnl_msg_get_src(m);

        if (!a || idiagnl_msg_get_state(m) != TCP_LISTEN)
                return;
        /* libnl hands the port over in network order */
        list_add(arg, "TCP", idiagnl_msg_get_family(m), nl_addr_get_binary_addr(a), ntohs(idiagnl_msg_get_sport(m)));
}

static int tcp_ports(int family, PortList *l, CubError *err) {
        _cleanup_(nl_socket_freep) struct nl_sock *sk = nl_socket_alloc();
        _cleanup_(nl_cache_freep) struct nl_cache *cache = NULL;
        int r;

        if (!sk)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = idiagnl_connect(sk);
        if (r < 0)
                return cub_err_set(err, EPROTO, "sock_diag: connect: %s", nl_geterror(r));
        r = idiagnl_msg_alloc_cache(sk, family, 1 << TCP_LISTEN, &cache);
        if (r < 0)
                return cub_err_set(err, EPROTO, "sock_diag: TCP dump (%s): %s", family == AF_INET ? "IPv4" : "IPv6",
                                   nl_geterror(r));
        nl_cache_foreach(cache, tcp_one, l);
        return 0;
}

static int udp_valid(struct nl_msg *msg, void *arg) {
        struct nlmsghdr *h = nlmsg_hdr(msg);
        const struct inet_diag_msg *d = nlmsg_data(h);

        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || (size_t) nlmsg_datalen(h) < sizeof(*d))
                return NL_SKIP;
        /* an unconnected UDP socket sits in TCP_CLOSE */
        if (d->idiag_state == TCP_CLOSE)
                list_add(arg, "UDP", d->idiag_family, d->id.idiag_src, ntohs(d->id.idiag_sport));
        return NL_OK;
}

static int udp_ports(int family, PortList *l, CubError *err) {
        _cleanup_(nl_socket_freep) struct nl_sock *sk = nl_socket_alloc();
        struct inet_diag_req_v2 req = {
                .sdiag_family = (uint8_t) family,
                .sdiag_protocol = IPPROTO_UDP,
                .idiag_states = 1u << TCP_CLOSE,
        };
        int r;

        if (!sk)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = nl_connect(sk, NETLINK_SOCK_DIAG);
        if (r < 0)
                return cub_err_set(err, EPROTO, "sock_diag: connect: %s", nl_geterror(r));
        r = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, udp_valid, l);
        if (r >= 0)
                r = nl_send_simple(sk, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, &req, sizeof(req));
        if (r >= 0)
                r = nl_recvmsgs_default(sk);
        if (r < 0)
                return cub_err_set(err, EPROTO, "sock_diag: UDP dump (%s): %s", family == AF_INET ? "IPv4" : "IPv6",
                                   nl_geterror(r));
        return 0;
}

int admit_host_listening_ports(AdmitHostPort **ret, size_t *ret_n, CubError *err) {
        PortList l = {};
        int r = 0;

        r = tcp_ports(AF_INET, &l, err);
        if (r >= 0)
                r = tcp_ports(AF_INET6, &l, err);
        if (r >= 0)
                r = udp_ports(AF_INET, &l, err);
        if (r >= 0)
                r = udp_ports(AF_INET6, &l, err);
        if (r >= 0 && l.error < 0)
                r = cub_err_set(err, -l.error, "out of memory");
        if (r < 0) {
                free(l.items);
                return r;
        }
        *ret = l.items;
        *ret_n = l.n;
        return 0;
}
