/* SPDX-License-Identifier: Apache-2.0 */
/* The node's pod network at start: the node's IP, the workers' DNS and
 * hosts settings, and the CNI conflist containerd's CRI plugin loads from
 * cniConfDir (/etc/cni/net.d): 10-cubelet.conflist is cubelet's file, (re)
 * written for podCIDR when that is set, or with the default range when the
 * directory holds no network config at all. Other files are never touched. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "agent-internal.h"

#define CNI_CONF_DIR "/etc/cni/net.d"
#define CNI_CONF_NAME "10-cubelet.conflist"

/* Whether the IPv4 address a lies in cidr ("10.88.0.0/16"); false for an
 * IPv6 or unparsable range. */
static bool in_cidr4(struct in_addr a, const char *cidr) {
        char net[INET_ADDRSTRLEN];
        const char *slash = strchr(cidr, '/');
        struct in_addr n;
        unsigned bits;

        if (!slash || (size_t) (slash - cidr) >= sizeof(net) || sscanf(slash + 1, "%u", &bits) != 1 || bits > 32)
                return false;
        memcpy(net, cidr, (size_t) (slash - cidr));
        net[slash - cidr] = '\0';
        if (inet_pton(AF_INET, net, &n) != 1)
                return false;
        uint32_t mask = bits ? htonl(~0u << (32 - bits)) : 0;
        return (a.s_addr & mask) == (n.s_addr & mask);
}

/* The interface of the IPv4 default route (/proc/net/route), "" when none. */
static void default_route_iface(char name[static IF_NAMESIZE]) {
        _cleanup_fclose_ FILE *f = fopen("/proc/net/route", "re");
        char line[256], ifn[IF_NAMESIZE];
        unsigned dst, flags;

        name[0] = '\0';
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "%15s %x %*x %x", ifn, &dst, &flags) == 3 && dst == 0 && (flags & 1u /* RTF_UP */)) {
                        memcpy(name, ifn, IF_NAMESIZE);
                        return;
                }
}

/* The node's IP without kubelet's --node-ip: the first IPv4 address of the
 * default route's interface, else the first of an interface that is up,
 * not loopback and not in the pod network (the CNI bridge comes with the
 * first pod: the node's address must not change with it), else 127.0.0.1. */
void agent_host_ip(const char *pod_cidr, char buf[static 64]) {
        struct ifaddrs *ifs = NULL;
        char route_if[IF_NAMESIZE];

        buf[0] = '\0';
        default_route_iface(route_if);
        if (getifaddrs(&ifs) >= 0) {
                for (int pass = route_if[0] ? 0 : 1; pass < 2 && !buf[0]; pass++)
                        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
                                struct in_addr a;

                                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
                                    (i->ifa_flags & IFF_LOOPBACK))
                                        continue;
                                a = ((struct sockaddr_in *) i->ifa_addr)->sin_addr;
                                if (pass == 0 ? strcmp(i->ifa_name, route_if) != 0 : in_cidr4(a, pod_cidr))
                                        continue;
                                if (inet_ntop(AF_INET, &a, buf, 64))
                                        break;
                        }
                freeifaddrs(ifs);
        }
        if (!buf[0])
                (void) snprintf(buf, 64, "127.0.0.1");
}

static bool is_net_config(const char *name) {
        const char *dot = strrchr(name, '.');

        return dot && (strcmp(dot, ".conf") == 0 || strcmp(dot, ".conflist") == 0 || strcmp(dot, ".json") == 0);
}

/* Whether dir holds a network config besides ours (containerd loads the
 * first in lexical order). */
static bool has_net_config(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *e;
        bool found = false;

        if (!d)
                return false;
        while (!found && (e = readdir(d)))
                found = is_net_config(e->d_name);
        closedir(d);
        return found;
}

static int cni_setup(const PodKubeletConfig *kc, CubError *err) {
        const char *dir = kc->cni_conf_dir ? kc->cni_conf_dir : CNI_CONF_DIR;
        const char *cidr = kc->pod_cidr && *kc->pod_cidr ? kc->pod_cidr : POD_DEFAULT_CIDR;
        _cleanup_free_ char *text = NULL, *path = NULL, *old = NULL;
        size_t old_len = 0;
        CubError e = {};
        int r;

        /* a bad podCIDR is a config error even where nothing is written */
        r = pod_cni_conflist(cidr, &text, err);
        if (r < 0)
                return r;
        if (!*dir)
                return 0;
        if (asprintf(&path, "%s/%s", dir, CNI_CONF_NAME) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (!(kc->pod_cidr && *kc->pod_cidr) && has_net_config(dir))
                return 0;
        if (cub_read_file(path, 1 << 20, &old, &old_len, NULL) >= 0 && old_len == strlen(text) &&
            memcmp(old, text, old_len) == 0)
                return 0;
        r = cub_mkdir_p(dir, 0755);
        if (r >= 0)
                r = cub_write_file_atomic(path, text, strlen(text), 0644, &e);
        else
                (void) cub_err_set(&e, -r, "'%s': %s", dir, strerror(-r));
        /* not fatal: containerd then refuses pod-network sandboxes with its own message */
        if (r < 0)
                cub_log(LOG_WARNING, "pod network: cannot write '%s' (podCIDR %s): %s", path, cidr, e.msg);
        else
                cub_log(LOG_INFO, "pod network: wrote '%s' (bridge cubelet0, podCIDR %s)", path, cidr);
        return 0;
}

int agent_network_setup(const Agent *a, CubError *err) {
        const PodKubeletConfig *kc = a->core.kc;
        _cleanup_free_ char *pods_dir = NULL;
        int r;

        for (size_t i = 0; i < kc->cluster_dns.n; i++)
                if (!pod_ip_valid(kc->cluster_dns.items[i]))
                        return cub_err_set(err, EINVAL, "clusterDNS[%zu]: \"%s\" is not an IP address", i,
                                           kc->cluster_dns.items[i]);
        r = cni_setup(kc, err);
        if (r < 0)
                return r;
        if (asprintf(&pods_dir, "%s/pods", a->core.opt.state_dir) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        return worker_pool_set_network(a->core.pool,
                                       &(WorkerNetwork){ .pods_dir = pods_dir,
                                                         .cluster_dns = (const char *const *) kc->cluster_dns.items,
                                                         .cluster_domain = kc->cluster_domain,
                                                         .resolv_conf = kc->resolv_conf,
                                                         .host_ip = a->core.node.ip },
                                       err);
}
