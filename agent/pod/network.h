/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* agent/pod: the pod network: kubelet's dns.go and hosts file (network.c). Included by pod.h; includes pod-model.h
 * alone. */

#include "pod-model.h"

/* ---- The pod network (network.c): kubelet's dns.go and hosts file ------- */

/* kubelet 1.28's limits (apis/core/validation, dns.go) */
#define POD_DNS_MAX_NAMESERVERS 3
#define POD_DNS_MAX_SEARCHES 32
#define POD_DNS_MAX_SEARCH_CHARS 2048
#define POD_HOSTNAME_MAX 63
#define POD_FQDN_MAX 64
#define POD_DEFAULT_CIDR "10.88.0.0/16"

/* A resolv.conf (kubelet's parseResolvConf): nameservers, search paths
 * (without a trailing "."; "." dropped), options (a later one of the same
 * name replaces an earlier one). */
typedef struct PodResolvConf {
        PodStrv nameservers;
        PodStrv searches;
        PodStrv options;
} PodResolvConf;

int pod_resolv_conf_parse(const char *text, PodResolvConf *ret, CubError *err);
void pod_resolv_conf_done(PodResolvConf *c);

/* The node's DNS settings: kubelet's clusterDNS, clusterDomain, resolvConf
 * (host NULL: resolvConf is "", kubelet's "no DNS"). */
typedef struct PodDnsNode {
        const char *const *cluster_dns; /* NULL-terminated; NULL = none */
        const char *cluster_domain;     /* NULL or "" = none */
        const PodResolvConf *host;
        const char *const *node_ips; /* for resolvConf "": 127.0.0.1 or ::1 per node IP */
} PodDnsNode;

/* The CRI DNSConfig of a pod (kubelet's GetPodDNS, limits applied);
 * warning: kubelet's event text when a limit dropped entries, else "". */
typedef struct PodDns {
        PodStrv servers;
        PodStrv searches;
        PodStrv options;
        char warning[256];
} PodDns;

int pod_dns_config(const Pod *pod, const PodDnsNode *node, PodDns *ret, CubError *err);
void pod_dns_done(PodDns *d);

/* kubelet's GeneratePodHostNameAndDomain: the hostname (spec.hostname or the
 * pod's name, cut to 63 without a trailing '-'/'.') and the domain
 * ("<subdomain>.<ns>.svc.<clusterDomain>", "" without subdomain). */
int pod_hostname_and_domain(const Pod *pod, const char *cluster_domain, char **ret_hostname, char **ret_domain,
                            CubError *err);
/* The sandbox's kernel hostname (GetNodenameForKernel): the FQDN with
 * setHostnameAsFQDN and a domain (at most 64), else the hostname. */
int pod_kernel_hostname(const Pod *pod, const char *hostname, const char *domain, char **ret, CubError *err);
/* The pod's /etc/hosts (kubelet's managedHostsFileContent; with hostNetwork
 * nodeHostsFileContent of node_hosts, the node's /etc/hosts text). */
char *pod_hosts_file(const Pod *pod, const char *const *pod_ips, const char *hostname, const char *domain,
                     const char *node_hosts);
/* The bridge + host-local + portmap conflist for cidr (JSON text, malloc'd);
 * -EINVAL when cidr is not an IPv4 or IPv6 CIDR. */
int pod_cni_conflist(const char *cidr, char **ret, CubError *err);
bool pod_ip_valid(const char *s);
