/* SPDX-License-Identifier: Apache-2.0 */
/* The pod network's side of the jobs: the node's settings, the pod IP
 * cache (a relist asks PodSandboxStatus once per sandbox, not per pass),
 * and the pod's /etc/hosts file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "worker-internal.h"

static char *dup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

void worker_network_done(WorkerPool *p) {
        free(p->pods_dir);
        cri_strv_free(p->cluster_dns);
        free(p->cluster_domain);
        free(p->resolv_conf);
        free(p->host_ip);
        cri_strv_free(p->sandbox_ips);
        p->pods_dir = p->cluster_domain = p->resolv_conf = p->host_ip = NULL;
        p->cluster_dns = p->sandbox_ips = NULL;
}

int worker_pool_set_network(WorkerPool *p, const WorkerNetwork *n, CubError *err) {
        size_t k = 0;

        worker_network_done(p);
        while (n->cluster_dns && n->cluster_dns[k])
                k++;
        p->cluster_dns = calloc(k + 1, sizeof(char *));
        for (size_t i = 0; p->cluster_dns && i < k; i++)
                if (!(p->cluster_dns[i] = strdup(n->cluster_dns[i]))) {
                        cri_strv_free(p->cluster_dns);
                        p->cluster_dns = NULL;
                }
        p->pods_dir = dup_or_null(n->pods_dir);
        p->cluster_domain = dup_or_null(n->cluster_domain);
        p->resolv_conf = dup_or_null(n->resolv_conf);
        p->host_ip = dup_or_null(n->host_ip);
        if (!p->cluster_dns || (n->pods_dir && !p->pods_dir) || (n->cluster_domain && !p->cluster_domain) ||
            (n->resolv_conf && !p->resolv_conf) || (n->host_ip && !p->host_ip)) {
                worker_network_done(p);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        return 0;
}

void worker_sandbox_ip_remember(WorkerPool *p, const char *sandbox_id, const char *ip) {
        size_t n = 0;
        char **l;

        pthread_mutex_lock(&p->lock);
        while (p->sandbox_ips && p->sandbox_ips[n])
                n++;
        for (size_t i = 0; i + 1 < n; i += 2)
                if (strcmp(p->sandbox_ips[i], sandbox_id) == 0) {
                        pthread_mutex_unlock(&p->lock);
                        return;
                }
        l = realloc(p->sandbox_ips, (n + 3) * sizeof(char *));
        if (l) {
                p->sandbox_ips = l;
                l[n] = strdup(sandbox_id);
                l[n + 1] = strdup(ip ? ip : "");
                l[n + 2] = NULL;
                if (!l[n] || !l[n + 1]) {
                        free(l[n]);
                        free(l[n + 1]);
                        l[n] = NULL;
                }
        }
        pthread_mutex_unlock(&p->lock);
}

int worker_sandbox_ip(WorkerPool *p, const char *sandbox_id, char **ret_ip, CubError *err) {
        const char *cached;
        int r;

        pthread_mutex_lock(&p->lock);
        cached = cri_kv_get(p->sandbox_ips, sandbox_id);
        if (cached) {
                *ret_ip = *cached ? strdup(cached) : NULL;
                r = *cached && !*ret_ip ? -ENOMEM : 0;
                pthread_mutex_unlock(&p->lock);
                return r < 0 ? cub_err_set(err, ENOMEM, "out of memory") : 0;
        }
        pthread_mutex_unlock(&p->lock);
        r = cri_pod_sandbox_ip(p->cri, sandbox_id, ret_ip, err);
        if (r < 0)
                return r;
        worker_sandbox_ip_remember(p, sandbox_id, *ret_ip);
        return 0;
}

void worker_sandbox_ips_prune(WorkerPool *p, const CriSandbox *sb, size_t n) {
        size_t o = 0;

        pthread_mutex_lock(&p->lock);
        for (size_t i = 0; p->sandbox_ips && p->sandbox_ips[i] && p->sandbox_ips[i + 1]; i += 2) {
                bool seen = false;

                for (size_t k = 0; k < n && !seen; k++)
                        seen = strcmp(sb[k].id, p->sandbox_ips[i]) == 0;
                if (seen) {
                        p->sandbox_ips[o++] = p->sandbox_ips[i];
                        p->sandbox_ips[o++] = p->sandbox_ips[i + 1];
                } else {
                        free(p->sandbox_ips[i]);
                        free(p->sandbox_ips[i + 1]);
                }
        }
        if (p->sandbox_ips)
                p->sandbox_ips[o] = NULL;
        pthread_mutex_unlock(&p->lock);
}

char *worker_hosts_path(const char *pods_dir, const char *uid) {
        char *s;

        if (asprintf(&s, "%s/%s/etc-hosts", pods_dir, uid) < 0)
                return NULL;
        return s;
}

void worker_hosts_remove(const char *pods_dir, const char *uid) {
        _cleanup_free_ char *path = NULL;
        char *slash;

        if (!pods_dir || !uid || !*uid || !(path = worker_hosts_path(pods_dir, uid)))
                return;
        (void) unlink(path);
        slash = strrchr(path, '/');
        *slash = '\0';
        /* the pod's folder goes once nothing else (volumes, logs) is in it */
        (void) rmdir(path);
}

void worker_pod_net_done(WorkerPodNet *n) {
        free(n->hostname);
        free(n->domain);
        free(n->kernel_hostname);
        pod_dns_done(&n->dns);
        free(n->ports);
        free(n->hosts_path);
        free(n->pod_ip);
        *n = (WorkerPodNet){};
}

static CriProtocol protocol_of(const char *s) {
        if (s && strcmp(s, "UDP") == 0)
                return CRI_PROTOCOL_UDP;
        if (s && strcmp(s, "SCTP") == 0)
                return CRI_PROTOCOL_SCTP;
        return CRI_PROTOCOL_TCP;
}

int worker_pod_net_prepare(WorkerPool *p, const Pod *pod, WorkerPodNet *n, CriSandboxConfig *sbc, CubError *err) {
        const char *rc = p->resolv_conf ? p->resolv_conf : "/etc/resolv.conf";
        const char *node_ips[] = { p->host_ip, NULL };
        PodResolvConf host = {};
        PodDnsNode node = { .cluster_dns = (const char *const *) p->cluster_dns,
                            .cluster_domain = p->cluster_domain,
                            .node_ips = p->host_ip ? node_ips : NULL };
        size_t k = 0;
        int r;

        *n = (WorkerPodNet){};
        r = pod_hostname_and_domain(pod, p->cluster_domain, &n->hostname, &n->domain, err);
        if (r >= 0)
                r = pod_kernel_hostname(pod, n->hostname, n->domain, &n->kernel_hostname, err);
        if (r < 0)
                return r;
        /* kubelet's getHostDNSConfig: the node's resolv.conf, read at each sandbox */
        if (*rc) {
                _cleanup_free_ char *text = NULL;
                size_t len;

                r = cub_read_file(rc, 1 << 20, &text, &len, err);
                if (r < 0)
                        return cub_err_wrap(err, "resolvConf");
                r = pod_resolv_conf_parse(text, &host, err);
                if (r < 0)
                        return r;
                node.host = &host;
        }
        r = pod_dns_config(pod, &node, &n->dns, err);
        pod_resolv_conf_done(&host);
        if (r < 0)
                return r;
        /* every app container's ports, as kubelet's generatePodSandboxConfig (portmap skips hostPort 0) */
        for (size_t i = 0; i < pod->n_containers; i++)
                k += pod->containers[i].n_ports;
        if (k > 0) {
                n->ports = calloc(k, sizeof(CriPortMapping));
                if (!n->ports)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (size_t i = 0; i < pod->n_containers; i++)
                        for (size_t j = 0; j < pod->containers[i].n_ports; j++) {
                                const PodPort *pp = &pod->containers[i].ports[j];

                                n->ports[n->n_ports++] = (CriPortMapping){ .protocol = protocol_of(pp->protocol),
                                                                           .container_port = pp->container_port,
                                                                           .host_port = pp->host_port,
                                                                           .host_ip = pp->host_ip };
                        }
        }
        sbc->host_network = pod->host_network;
        sbc->hostname = n->kernel_hostname;
        sbc->dns_servers = (const char *const *) n->dns.servers.items;
        sbc->dns_searches = (const char *const *) n->dns.searches.items;
        sbc->dns_options = (const char *const *) n->dns.options.items;
        sbc->port_mappings = n->ports;
        sbc->n_port_mappings = n->n_ports;
        return 0;
}

int worker_pod_net_started(WorkerPool *p, const Pod *pod, const char *sandbox_id, WorkerPodNet *n, CubError *err) {
        _cleanup_free_ char *content = NULL, *node_hosts = NULL, *old = NULL;
        const char *ips[] = { NULL, NULL };
        size_t len = 0, old_len = 0;
        int r;

        if (pod->host_network) {
                n->pod_ip = p->host_ip ? strdup(p->host_ip) : NULL;
                r = cub_read_file("/etc/hosts", 1 << 20, &node_hosts, &len, NULL);
                if (r < 0)
                        node_hosts = NULL;
        } else {
                r = worker_sandbox_ip(p, sandbox_id, &n->pod_ip, err);
                if (r < 0)
                        return cub_err_wrap(err, "sandbox '%s': pod IP", sandbox_id);
        }
        ips[0] = n->pod_ip;
        /* kubelet mounts /etc/hosts only once the pod has an IP */
        if (!p->pods_dir || !n->pod_ip)
                return 0;
        content = pod_hosts_file(pod, ips, n->hostname, n->domain, node_hosts);
        n->hosts_path = worker_hosts_path(p->pods_dir, pod->uid);
        if (!content || !n->hosts_path)
                return cub_err_set(err, ENOMEM, "out of memory");
        /* rewritten only when it changes: running containers keep theirs */
        if (cub_read_file(n->hosts_path, 1 << 20, &old, &old_len, NULL) >= 0 && old_len == strlen(content) &&
            memcmp(old, content, old_len) == 0)
                return 0;
        {
                _cleanup_free_ char *dir = strdup(n->hosts_path);

                if (!dir)
                        return cub_err_set(err, ENOMEM, "out of memory");
                *strrchr(dir, '/') = '\0';
                r = cub_mkdir_p(dir, 0755);
                if (r < 0)
                        return cub_err_set(err, -r, "'%s': %s", dir, strerror(-r));
        }
        return cub_write_file_atomic(n->hosts_path, content, strlen(content), 0644, err);
}
