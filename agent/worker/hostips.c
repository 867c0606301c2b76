/* SPDX-License-Identifier: Apache-2.0 */
/* The node's addresses as a sync's env sources see them (status.hostIP,
 * status.hostIPs). */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>

#include "worker-internal.h"

/* env sources: the node's first IPv4 address that is up and not loopback
 * (status.hostIP, as the status shows it), and with the first global IPv6
 * one (status.hostIPs: one per family, as kubelet's node addresses). */
void worker_host_ips(char host_ip[static 46], char host_ips[static WORKER_HOST_IPS_MAX]) {
        struct ifaddrs *ifs = NULL;
        char v6[INET6_ADDRSTRLEN] = "";

        host_ip[0] = host_ips[0] = '\0';
        if (getifaddrs(&ifs) < 0)
                return;
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
                if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
                        continue;
                if (i->ifa_addr->sa_family == AF_INET && !host_ip[0])
                        (void) inet_ntop(AF_INET, &((struct sockaddr_in *) i->ifa_addr)->sin_addr, host_ip,
                                         INET6_ADDRSTRLEN);
                if (i->ifa_addr->sa_family == AF_INET6 && !v6[0] &&
                    !IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr))
                        (void) inet_ntop(AF_INET6, &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr, v6, sizeof(v6));
        }
        freeifaddrs(ifs);
        (void) snprintf(host_ips, WORKER_HOST_IPS_MAX, "%s%s%s", host_ip, host_ip[0] && v6[0] ? "," : "", v6);
}
