/* SPDX-License-Identifier: Apache-2.0 */
/* The pod network's pure parts, as kubelet 1.28-1.31: the pod's DNS config
 * (pkg/kubelet/network/dns/dns.go), hostname and domain, /etc/hosts
 * (kubelet_pods.go) and the CNI conflist cubelet writes. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

static int strv_push(PodStrv *v, const char *s, size_t len) {
        char **n = realloc(v->items, (v->n + 2) * sizeof(char *));

        if (!n)
                return -ENOMEM;
        v->items = n;
        n[v->n] = strndup(s, len);
        if (!n[v->n])
                return -ENOMEM;
        n[++v->n] = NULL;
        return 0;
}

static int strv_push_s(PodStrv *v, const char *s) {
        return strv_push(v, s, strlen(s));
}

static bool strv_has(const PodStrv *v, const char *s) {
        for (size_t i = 0; i < v->n; i++)
                if (strcmp(v->items[i], s) == 0)
                        return true;
        return false;
}

/* appends s unless present (kubelet's omitDuplicates keeps the first) */
static int strv_push_uniq(PodStrv *v, const char *s) {
        return strv_has(v, s) ? 0 : strv_push_s(v, s);
}

static size_t opt_name_len(const char *o) {
        const char *c = strchr(o, ':');

        return c ? (size_t) (c - o) : strlen(o);
}

/* an option "name[:value]": replaces the one of the same name, in place */
static int opt_set(PodStrv *v, const char *o, size_t len) {
        size_t nl = 0;

        while (nl < len && o[nl] != ':')
                nl++;
        for (size_t i = 0; i < v->n; i++)
                if (opt_name_len(v->items[i]) == nl && strncmp(v->items[i], o, nl) == 0) {
                        char *s = strndup(o, len);

                        if (!s)
                                return -ENOMEM;
                        free(v->items[i]);
                        v->items[i] = s;
                        return 0;
                }
        return strv_push(v, o, len);
}

void pod_resolv_conf_done(PodResolvConf *c) {
        pod_strv_done(&c->nameservers);
        pod_strv_done(&c->searches);
        pod_strv_done(&c->options);
}

int pod_resolv_conf_parse(const char *text, PodResolvConf *ret, CubError *err) {
        PodResolvConf c = {};
        const char *line = text;
        int r = 0;

        while (r >= 0 && line && *line) {
                const char *end = strchr(line, '\n');
                size_t len = end ? (size_t) (end - line) : strlen(line);
                const char *f[64];
                size_t fl[64], nf = 0;

                /* comments: '#' or ';' to the end of the line */
                for (size_t i = 0; i < len; i++)
                        if (line[i] == '#' || line[i] == ';') {
                                len = i;
                                break;
                        }
                for (size_t i = 0; i < len && nf < 64;) {
                        while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
                                i++;
                        if (i >= len)
                                break;
                        f[nf] = line + i;
                        while (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
                                i++;
                        fl[nf] = (size_t) (line + i - f[nf]);
                        nf++;
                }
                if (nf >= 2 && fl[0] == 10 && strncmp(f[0], "nameserver", 10) == 0)
                        r = strv_push(&c.nameservers, f[1], fl[1]);
                else if (nf >= 1 && fl[0] == 6 && strncmp(f[0], "search", 6) == 0) {
                        /* a later search line replaces the earlier one */
                        pod_strv_done(&c.searches);
                        for (size_t i = 1; r >= 0 && i < nf; i++) {
                                size_t l = fl[i];

                                if (l == 1 && f[i][0] == '.')
                                        continue;
                                if (l > 1 && f[i][l - 1] == '.')
                                        l--;
                                r = strv_push(&c.searches, f[i], l);
                        }
                } else if (nf >= 1 && fl[0] == 7 && strncmp(f[0], "options", 7) == 0)
                        for (size_t i = 1; r >= 0 && i < nf; i++)
                                r = opt_set(&c.options, f[i], fl[i]);
                line = end ? end + 1 : NULL;
        }
        if (r < 0) {
                pod_resolv_conf_done(&c);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret = c;
        return 0;
}

void pod_dns_done(PodDns *d) {
        pod_strv_done(&d->servers);
        pod_strv_done(&d->searches);
        pod_strv_done(&d->options);
        d->warning[0] = '\0';
}

static int strv_copy(PodStrv *dst, const PodStrv *src) {
        for (size_t i = 0; src && i < src->n; i++)
                if (strv_push_s(dst, src->items[i]) < 0)
                        return -ENOMEM;
        return 0;
}

/* kubelet's formDNSSearchFitsLimits */
static void search_fits_limits(PodStrv *s, bool *exceeded) {
        size_t l = 0, line = 0;

        while (s->n > POD_DNS_MAX_SEARCHES) {
                free(s->items[--s->n]);
                s->items[s->n] = NULL;
                *exceeded = true;
        }
        /* glibc aborts on a search path over 255: longer than a DNS-1123 subdomain are dropped */
        for (size_t i = 0; i < s->n; i++) {
                if (strlen(s->items[i]) > 253) {
                        free(s->items[i]);
                        *exceeded = true;
                        continue;
                }
                s->items[l++] = s->items[i];
        }
        s->n = l;
        if (s->items)
                s->items[l] = NULL;
        for (size_t i = 0; i < s->n; i++)
                line += strlen(s->items[i]) + (i > 0);
        if (line > POD_DNS_MAX_SEARCH_CHARS) {
                size_t cut = 0;

                for (size_t i = s->n; i > 0; i--) {
                        cut += strlen(s->items[i - 1]) + 1;
                        free(s->items[i - 1]);
                        s->items[i - 1] = NULL;
                        s->n = i - 1;
                        if (line - cut <= POD_DNS_MAX_SEARCH_CHARS)
                                break;
                }
                *exceeded = true;
        }
}

static void join(char *buf, size_t size, const PodStrv *v) {
        size_t o = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < v->n && o < size; i++)
                o += (size_t) snprintf(buf + o, size - o, "%s%s", i ? " " : "", v->items[i]);
}

int pod_dns_config(const Pod *pod, const PodDnsNode *node, PodDns *ret, CubError *err) {
        PodDns d = {};
        const char *policy = pod->dns_policy ? pod->dns_policy : "ClusterFirst";
        bool cluster = false, none = false, exceeded = false;
        int r = 0;

        /* getPodDNSType: ClusterFirst falls back to Default on the host network */
        if (strcmp(policy, "None") == 0)
                none = true;
        else if (strcmp(policy, "ClusterFirstWithHostNet") == 0 ||
                 (strcmp(policy, "ClusterFirst") == 0 && !pod->host_network))
                cluster = true;
        if (!none && node->host) {
                r = strv_copy(&d.servers, &node->host->nameservers);
                if (r >= 0)
                        r = strv_copy(&d.searches, &node->host->searches);
                if (r >= 0)
                        r = strv_copy(&d.options, &node->host->options);
        }
        if (r >= 0 && cluster && node->cluster_dns && node->cluster_dns[0]) {
                PodStrv s = {};

                pod_dns_done(&d);
                for (size_t i = 0; r >= 0 && node->cluster_dns[i]; i++)
                        r = strv_push_s(&d.servers, node->cluster_dns[i]);
                /* generateSearchesForDNSClusterFirst */
                if (r >= 0 && node->cluster_domain && *node->cluster_domain) {
                        _cleanup_free_ char *ns_svc = NULL, *svc = NULL;

                        if (asprintf(&ns_svc, "%s.svc.%s", pod->namespace_, node->cluster_domain) < 0)
                                ns_svc = NULL;
                        if (asprintf(&svc, "svc.%s", node->cluster_domain) < 0)
                                svc = NULL;
                        r = ns_svc && svc ? 0 : -ENOMEM;
                        if (r >= 0)
                                r = strv_push_uniq(&s, ns_svc);
                        if (r >= 0)
                                r = strv_push_uniq(&s, svc);
                        if (r >= 0)
                                r = strv_push_uniq(&s, node->cluster_domain);
                }
                for (size_t i = 0; r >= 0 && node->host && i < node->host->searches.n; i++)
                        r = strv_push_uniq(&s, node->host->searches.items[i]);
                d.searches = s;
                if (r >= 0)
                        r = strv_push_s(&d.options, "ndots:5");
        } else if (r >= 0 && !none && !node->host) {
                /* resolvConf "": the local machine's resolver, no search */
                bool v4 = false, v6 = false;

                for (size_t i = 0; node->node_ips && node->node_ips[i]; i++)
                        if (strchr(node->node_ips[i], ':'))
                                v6 = true;
                        else
                                v4 = true;
                if (v4 || !v6)
                        r = strv_push_s(&d.servers, "127.0.0.1");
                if (r >= 0 && v6)
                        r = strv_push_s(&d.servers, "::1");
                if (r >= 0)
                        r = strv_push_s(&d.searches, ".");
        }
        /* appendDNSConfig: the pod's dnsConfig after, duplicates dropped, options merged by name */
        if (pod->dns_config_set) {
                const PodDnsConfig *c = &pod->dns_config;
                PodStrv servers = {}, searches = {};

                for (size_t i = 0; r >= 0 && i < d.servers.n + c->nameservers.n; i++)
                        r = strv_push_uniq(&servers, i < d.servers.n ? d.servers.items[i]
                                                                     : c->nameservers.items[i - d.servers.n]);
                for (size_t i = 0; r >= 0 && i < d.searches.n + c->searches.n; i++)
                        r = strv_push_uniq(&searches, i < d.searches.n ? d.searches.items[i]
                                                                       : c->searches.items[i - d.searches.n]);
                pod_strv_done(&d.servers);
                pod_strv_done(&d.searches);
                d.servers = servers;
                d.searches = searches;
                for (size_t i = 0; r >= 0 && i < c->n_options; i++) {
                        _cleanup_free_ char *o = NULL;

                        if (asprintf(&o, "%s%s%s", c->options[i].name,
                                     c->options[i].value && *c->options[i].value ? ":" : "",
                                     c->options[i].value ? c->options[i].value : "") < 0)
                                o = NULL;
                        r = o ? opt_set(&d.options, o, strlen(o)) : -ENOMEM;
                }
        }
        if (r < 0) {
                pod_dns_done(&d);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        /* formDNSConfigFitsLimits */
        if (d.servers.n > POD_DNS_MAX_NAMESERVERS) {
                char line[512];

                while (d.servers.n > POD_DNS_MAX_NAMESERVERS) {
                        free(d.servers.items[--d.servers.n]);
                        d.servers.items[d.servers.n] = NULL;
                }
                join(line, sizeof(line), &d.servers);
                (void) snprintf(d.warning, sizeof(d.warning),
                                "Nameserver limits were exceeded, some nameservers have been omitted, the applied "
                                "nameserver line is: %.120s",
                                line);
        }
        search_fits_limits(&d.searches, &exceeded);
        if (exceeded && !d.warning[0]) {
                char line[2200];

                join(line, sizeof(line), &d.searches);
                (void) snprintf(d.warning, sizeof(d.warning),
                                "Search Line limits were exceeded, some search paths have been omitted, the applied "
                                "search line is: %.100s",
                                line);
        }
        *ret = d;
        return 0;
}

int pod_hostname_and_domain(const Pod *pod, const char *cluster_domain, char **ret_hostname, char **ret_domain,
                            CubError *err) {
        const char *h = pod->hostname && *pod->hostname ? pod->hostname : pod->name;
        size_t n = strlen(h);
        _cleanup_free_ char *host = NULL, *dom = NULL;

        /* truncatePodHostnameIfNeeded */
        if (n > POD_HOSTNAME_MAX) {
                n = POD_HOSTNAME_MAX;
                while (n > 0 && (h[n - 1] == '-' || h[n - 1] == '.'))
                        n--;
                if (n == 0)
                        return cub_err_set(err, EINVAL, "hostname for pod \"%s\" was invalid: \"%s\"", pod->name, h);
        }
        host = strndup(h, n);
        if (pod->subdomain && *pod->subdomain) {
                if (asprintf(&dom, "%s.%s.svc.%s", pod->subdomain, pod->namespace_,
                             cluster_domain ? cluster_domain : "") < 0)
                        dom = NULL;
        } else
                dom = strdup("");
        if (!host || !dom)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret_hostname = TAKE_PTR(host);
        *ret_domain = TAKE_PTR(dom);
        return 0;
}

int pod_kernel_hostname(const Pod *pod, const char *hostname, const char *domain, char **ret, CubError *err) {
        char *s = NULL;

        if (domain && *domain && pod->set_hostname_as_fqdn) {
                if (asprintf(&s, "%s.%s", hostname, domain) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
                if (strlen(s) > POD_FQDN_MAX) {
                        int r = cub_err_set(err, EINVAL,
                                            "failed to construct FQDN from pod hostname and cluster domain, FQDN %s "
                                            "is too long (%d characters is the max, %zu characters requested)",
                                            s, POD_FQDN_MAX, strlen(s));
                        free(s);
                        return r;
                }
        } else if (!(s = strdup(hostname)))
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret = s;
        return 0;
}

static void host_aliases(FILE *f, const Pod *pod) {
        if (pod->n_host_aliases == 0)
                return;
        fputs("\n# Entries added by HostAliases.\n", f);
        for (size_t i = 0; i < pod->n_host_aliases; i++) {
                fputs(pod->host_aliases[i].ip, f);
                for (size_t k = 0; k < pod->host_aliases[i].hostnames.n; k++)
                        fprintf(f, "\t%s", pod->host_aliases[i].hostnames.items[k]);
                fputc('\n', f);
        }
}

char *pod_hosts_file(const Pod *pod, const char *const *pod_ips, const char *hostname, const char *domain,
                     const char *node_hosts) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return NULL;
        if (pod->host_network) {
                fputs("# Kubernetes-managed hosts file (host network).\n", f);
                fputs(node_hosts ? node_hosts : "", f);
        } else {
                fputs("# Kubernetes-managed hosts file.\n"
                      "127.0.0.1\tlocalhost\n"
                      "::1\tlocalhost ip6-localhost ip6-loopback\n"
                      "fe00::0\tip6-localnet\n"
                      "fe00::0\tip6-mcastprefix\n"
                      "fe00::1\tip6-allnodes\n"
                      "fe00::2\tip6-allrouters\n",
                      f);
                for (size_t i = 0; pod_ips && pod_ips[i]; i++)
                        if (domain && *domain)
                                fprintf(f, "%s\t%s.%s\t%s\n", pod_ips[i], hostname, domain, hostname);
                        else
                                fprintf(f, "%s\t%s\n", pod_ips[i], hostname);
        }
        host_aliases(f, pod);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* cidr: an address and a prefix length that fits it */
static bool cidr_valid(const char *cidr) {
        const char *slash = strchr(cidr, '/');
        unsigned char a[sizeof(struct in6_addr)];
        char ip[INET6_ADDRSTRLEN];
        char *end;
        long bits;
        bool v6;

        if (!slash || (size_t) (slash - cidr) >= sizeof(ip))
                return false;
        memcpy(ip, cidr, (size_t) (slash - cidr));
        ip[slash - cidr] = '\0';
        v6 = strchr(ip, ':') != NULL;
        if (inet_pton(v6 ? AF_INET6 : AF_INET, ip, a) != 1)
                return false;
        errno = 0;
        bits = strtol(slash + 1, &end, 10);
        return errno == 0 && end != slash + 1 && !*end && bits >= 1 && bits <= (v6 ? 126 : 30);
}

int pod_cni_conflist(const char *cidr, char **ret, CubError *err) {
        json_t *doc;
        char *text;

        if (!cidr || !cidr_valid(cidr))
                return cub_err_set(err, EINVAL, "podCIDR: invalid value \"%s\": not an IP network (ADDRESS/BITS)",
                                   cidr ? cidr : "");
        doc = json_pack("{s:s,s:s,s:[{s:s,s:s,s:b,s:b,s:b,s:{s:s,s:[[{s:s}]],s:[{s:s}]}},{s:s,s:{s:b},s:b}]}",
                        "cniVersion", "0.4.0", "name", "cubelet", "plugins", "type", "bridge", "bridge", "cubelet0",
                        "isGateway", 1, "ipMasq", 1, "hairpinMode", 1, "ipam", "type", "host-local", "ranges", "subnet",
                        cidr, "routes", "dst", strchr(cidr, ':') ? "::/0" : "0.0.0.0/0", "type", "portmap",
                        "capabilities", "portMappings", 1, "snat", 1);
        if (!doc)
                return cub_err_set(err, ENOMEM, "out of memory");
        text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(doc);
        if (!text)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret = text;
        return 0;
}
