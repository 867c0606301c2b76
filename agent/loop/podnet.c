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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/log.h"
#include "agent-internal.h"

#define CNI_CONF_DIR "/etc/cni/net.d"
#define CNI_CONF_NAME "10-cubelet.conflist"

void agent_host_ip(char buf[static 64]) {
        struct ifaddrs *ifs = NULL;

        buf[0] = '\0';
        if (getifaddrs(&ifs) >= 0) {
                for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
                        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
                            !(i->ifa_flags & IFF_LOOPBACK) &&
                            inet_ntop(AF_INET, &((struct sockaddr_in *) i->ifa_addr)->sin_addr, buf, 64))
                                break;
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
                                                         .host_ip = a->core.host_ip },
                                       err);
}
