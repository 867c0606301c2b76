/* SPDX-License-Identifier: Apache-2.0 */
/* The pod network fields of a PodSpec (hostname, subdomain,
 * setHostnameAsFQDN, dnsPolicy, dnsConfig, hostAliases): their decoding
 * tables, the API server's validation of them, and their destructor. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

const char *const pod_dns_policies[] = { "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None", NULL };

static const PodField dns_option_fields[] = {
        POD_STR("name", PodDnsOption, name),
        POD_STR("value", PodDnsOption, value),
        {},
};

const PodField pod_dns_config_fields[] = {
        { .name = "nameservers", .decode = pod_dec_strv, .offset = offsetof(PodDnsConfig, nameservers) },
        { .name = "searches", .decode = pod_dec_strv, .offset = offsetof(PodDnsConfig, searches) },
        { .name = "options",
          .decode = pod_dec_object_array,
          .offset = offsetof(PodDnsConfig, options),
          .count_offset = offsetof(PodDnsConfig, n_options),
          .elem_size = sizeof(PodDnsOption),
          .sub = dns_option_fields },
        {},
};

const PodField pod_host_alias_fields[] = {
        POD_STR("ip", PodHostAlias, ip),
        { .name = "hostnames", .decode = pod_dec_strv, .offset = offsetof(PodHostAlias, hostnames) },
        {},
};

bool pod_ip_valid(const char *s) {
        unsigned char buf[sizeof(struct in6_addr)];

        return s && (inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1);
}

static int line_at(PodDec *d, json_t *root, const char *a, const char *b) {
        json_t *spec = json_object_get(root, "spec");
        json_t *v = spec ? json_object_get(spec, a) : NULL;
        int line = pod_tree_line(d->tree, v);

        if (v && b && json_is_object(v) && pod_tree_line(d->tree, json_object_get(v, b)) > 0)
                line = pod_tree_line(d->tree, json_object_get(v, b));
        return line > 0 ? line : pod_tree_key_line(d->tree, spec, a);
}

#define LABEL_MSG                                                                                         \
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must " \
        "start and end with an alphanumeric character"

/* The API server's ValidatePodSpec for the network fields (kubelet 1.28's
 * limits: 3 nameservers, 32 search paths of 2048 characters), and the
 * dnsPolicy default. */
int pod_network_validate(PodDec *d, json_t *root, Pod *pod) {
        const PodDnsConfig *dc = &pod->dns_config;
        size_t chars = 0;

        if (!pod->dns_policy) {
                pod->dns_policy = strdup("ClusterFirst");
                if (!pod->dns_policy)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
        }
        if (pod->hostname && *pod->hostname && !pod_dns1123_label(pod->hostname))
                return pod_dec_fail(d, line_at(d, root, "hostname", NULL), "spec.hostname",
                                    "Invalid value: \"%s\": " LABEL_MSG, pod->hostname);
        if (pod->subdomain && *pod->subdomain && !pod_dns1123_label(pod->subdomain))
                return pod_dec_fail(d, line_at(d, root, "subdomain", NULL), "spec.subdomain",
                                    "Invalid value: \"%s\": " LABEL_MSG, pod->subdomain);
        if (strcmp(pod->dns_policy, "None") == 0) {
                if (!pod->dns_config_set)
                        return pod_dec_fail(d, line_at(d, root, "dnsPolicy", NULL), "spec.dnsConfig",
                                            "Required value: must provide `dnsConfig` when `dnsPolicy` is None");
                if (dc->nameservers.n == 0)
                        return pod_dec_fail(d, line_at(d, root, "dnsConfig", "nameservers"),
                                            "spec.dnsConfig.nameservers",
                                            "Required value: must provide at least one DNS nameserver when "
                                            "`dnsPolicy` is None");
        }
        if (dc->nameservers.n > POD_DNS_MAX_NAMESERVERS)
                return pod_dec_fail(d, line_at(d, root, "dnsConfig", "nameservers"), "spec.dnsConfig.nameservers",
                                    "Invalid value: %zu nameservers: must not have more than %d nameservers",
                                    dc->nameservers.n, POD_DNS_MAX_NAMESERVERS);
        for (size_t i = 0; i < dc->nameservers.n; i++)
                if (!pod_ip_valid(dc->nameservers.items[i])) {
                        char where[96];

                        (void) snprintf(where, sizeof(where), "spec.dnsConfig.nameservers[%zu]", i);
                        return pod_dec_fail(d, line_at(d, root, "dnsConfig", "nameservers"), where,
                                            "Invalid value: \"%s\": must be a valid IP address",
                                            dc->nameservers.items[i]);
                }
        if (dc->searches.n > POD_DNS_MAX_SEARCHES)
                return pod_dec_fail(d, line_at(d, root, "dnsConfig", "searches"), "spec.dnsConfig.searches",
                                    "Invalid value: %zu search paths: must not have more than %d search paths",
                                    dc->searches.n, POD_DNS_MAX_SEARCHES);
        for (size_t i = 0; i < dc->searches.n; i++) {
                const char *s = dc->searches.items[i];
                size_t n = strlen(s);
                char where[96];

                chars += n + (i > 0);
                (void) snprintf(where, sizeof(where), "spec.dnsConfig.searches[%zu]", i);
                /* a search path may end with "." (a FQDN) */
                _cleanup_free_ char *t = strndup(s, n > 1 && s[n - 1] == '.' ? n - 1 : n);

                if (!t)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
                if (!pod_dns1123_subdomain(t))
                        return pod_dec_fail(d, line_at(d, root, "dnsConfig", "searches"), where,
                                            "Invalid value: \"%s\": a lowercase RFC 1123 subdomain must consist of "
                                            "lower case alphanumeric characters, '-' or '.', and must start and end "
                                            "with an alphanumeric character",
                                            s);
        }
        if (chars > POD_DNS_MAX_SEARCH_CHARS)
                return pod_dec_fail(d, line_at(d, root, "dnsConfig", "searches"), "spec.dnsConfig.searches",
                                    "Invalid value: %zu characters: must not have more than %d characters "
                                    "(including spaces) in the search list",
                                    chars, POD_DNS_MAX_SEARCH_CHARS);
        for (size_t i = 0; i < dc->n_options; i++)
                if (!dc->options[i].name || !*dc->options[i].name) {
                        char where[96];

                        (void) snprintf(where, sizeof(where), "spec.dnsConfig.options[%zu].name", i);
                        return pod_dec_fail(d, line_at(d, root, "dnsConfig", "options"), where, "Required value");
                }
        for (size_t i = 0; i < pod->n_host_aliases; i++) {
                const PodHostAlias *h = &pod->host_aliases[i];
                char where[96];

                (void) snprintf(where, sizeof(where), "spec.hostAliases[%zu].ip", i);
                if (!pod_ip_valid(h->ip))
                        return pod_dec_fail(d, line_at(d, root, "hostAliases", NULL), where,
                                            "Invalid value: \"%s\": must be a valid IP address", h->ip ? h->ip : "");
                for (size_t k = 0; k < h->hostnames.n; k++)
                        if (!pod_dns1123_subdomain(h->hostnames.items[k])) {
                                (void) snprintf(where, sizeof(where), "spec.hostAliases[%zu].hostnames[%zu]", i, k);
                                return pod_dec_fail(d, line_at(d, root, "hostAliases", NULL), where,
                                                    "Invalid value: \"%s\": a lowercase RFC 1123 subdomain must "
                                                    "consist of lower case alphanumeric characters, '-' or '.', and "
                                                    "must start and end with an alphanumeric character",
                                                    h->hostnames.items[k]);
                        }
        }
        return 0;
}
