/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/network.c and decode-network.c: the pod network fields, the
 * DNS config (kubelet's dns_test.go vectors), the hostname and FQDN rules,
 * the /etc/hosts content (kubelet_pods_test.go) and the CNI conflist. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"

static Pod *decode(const char *text) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(text, strlen(text), "t.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decoding failed: %s", err.msg);
        return pod;
}

static void decode_err(const char *text, const char *want) {
        Pod *pod = NULL;
        CubError err = {};

        assert_true(pod_decode(text, strlen(text), "t.yaml", POD_FORMAT_YAML, &pod, &err) < 0);
        assert_null(pod);
        assert_string_equal(err.msg, want);
}

/* a flat "a b c" view of a list */
static const char *joined(const PodStrv *v) {
        static char buf[4096];
        size_t o = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < v->n; i++)
                o += (size_t) snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? " " : "", v->items[i]);
        return buf;
}

#define HEAD "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns1}\nspec:\n"
#define CTR "  containers: [{name: a, image: x}]\n"

/* ---- decoding ----------------------------------------------------------- */

static void test_decode_fields(void **state) {
        Pod *pod = decode(HEAD CTR "  hostname: web-0\n  subdomain: web\n  setHostnameAsFQDN: true\n"
                                   "  dnsPolicy: None\n"
                                   "  dnsConfig:\n    nameservers: [203.0.113.1]\n    searches: [my.domain]\n"
                                   "    options: [{name: ndots, value: \"3\"}, {name: debug}]\n"
                                   "  hostAliases: [{ip: 10.1.2.3, hostnames: [foo.local, bar.local]}]\n");

        (void) state;
        assert_string_equal(pod->hostname, "web-0");
        assert_string_equal(pod->subdomain, "web");
        assert_true(pod->set_hostname_as_fqdn);
        assert_string_equal(pod->dns_policy, "None");
        assert_true(pod->dns_config_set);
        assert_string_equal(joined(&pod->dns_config.nameservers), "203.0.113.1");
        assert_string_equal(joined(&pod->dns_config.searches), "my.domain");
        assert_int_equal(pod->dns_config.n_options, 2);
        assert_string_equal(pod->dns_config.options[0].value, "3");
        assert_null(pod->dns_config.options[1].value);
        assert_int_equal(pod->n_host_aliases, 1);
        assert_string_equal(pod->host_aliases[0].ip, "10.1.2.3");
        assert_string_equal(joined(&pod->host_aliases[0].hostnames), "foo.local bar.local");
        /* no refused field */
        assert_int_equal(pod->refused.n, 0);
        pod_free(pod);

        pod = decode(HEAD CTR);
        assert_string_equal(pod->dns_policy, "ClusterFirst");
        assert_false(pod->dns_config_set);
        pod_free(pod);
}

static void test_decode_errors(void **state) {
        (void) state;
        decode_err(HEAD CTR "  hostname: Web_0\n",
                   "t.yaml:6: spec.hostname: Invalid value: \"Web_0\": a lowercase RFC 1123 label must consist of "
                   "lower case alphanumeric characters or '-', and must start and end with an alphanumeric character");
        decode_err(HEAD CTR "  dnsPolicy: None\n",
                   "t.yaml:6: spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None");
        decode_err(HEAD CTR "  dnsPolicy: None\n  dnsConfig: {searches: [a.b]}\n",
                   "t.yaml:7: spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver "
                   "when `dnsPolicy` is None");
        decode_err(HEAD CTR "  dnsConfig: {nameservers: [1.1.1.1, 1.1.1.2, 1.1.1.3, 1.1.1.4]}\n",
                   "t.yaml:6: spec.dnsConfig.nameservers: Invalid value: 4 nameservers: must not have more than 3 "
                   "nameservers");
        decode_err(HEAD CTR "  dnsConfig: {nameservers: [dns.local]}\n",
                   "t.yaml:6: spec.dnsConfig.nameservers[0]: Invalid value: \"dns.local\": must be a valid IP "
                   "address");
        decode_err(HEAD CTR "  dnsPolicy: Cluster\n",
                   "t.yaml:6: spec.dnsPolicy: Unsupported value: \"Cluster\": supported values: \"ClusterFirst\", "
                   "\"ClusterFirstWithHostNet\", \"Default\", \"None\"");
        decode_err(HEAD CTR "  hostAliases: [{ip: 10.1.2, hostnames: [foo]}]\n",
                   "t.yaml:6: spec.hostAliases[0].ip: Invalid value: \"10.1.2\": must be a valid IP address");
}

/* ---- resolv.conf (kubelet's TestParseResolvConf) -------------------------- */

static void check_resolv(const char *text, const char *ns, const char *search, const char *opts) {
        PodResolvConf c = {};
        CubError err = {};

        assert_int_equal(pod_resolv_conf_parse(text, &c, &err), 0);
        assert_string_equal(joined(&c.nameservers), ns);
        assert_string_equal(joined(&c.searches), search);
        assert_string_equal(joined(&c.options), opts);
        pod_resolv_conf_done(&c);
}

static void test_resolv_conf(void **state) {
        (void) state;
        check_resolv("", "", "", "");
        check_resolv(" ", "", "", "");
        check_resolv("\n", "", "", "");
        check_resolv("\t\n\t", "", "", "");
        check_resolv("#comment\n", "", "", "");
        check_resolv(" #comment\n", "", "", "");
        check_resolv("#comment\n#comment", "", "", "");
        check_resolv("nameserver", "", "", "");
        check_resolv("nameserver 1.2.3.4", "1.2.3.4", "", "");
        check_resolv(" nameserver 1.2.3.4", "1.2.3.4", "", "");
        check_resolv("\tnameserver 1.2.3.4", "1.2.3.4", "", "");
        check_resolv("nameserver\t1.2.3.4", "1.2.3.4", "", "");
        check_resolv("nameserver 1.2.3.4 #comment", "1.2.3.4", "", "");
        check_resolv("nameserver 1.2.3.4\nnameserver 5.6.7.8", "1.2.3.4 5.6.7.8", "", "");
        check_resolv("search foo", "", "foo", "");
        check_resolv("search foo bar", "", "foo bar", "");
        check_resolv("search foo. bar", "", "foo bar", "");
        check_resolv("search 1 2 3 4 5 6 7 8", "", "1 2 3 4 5 6 7 8", "");
        check_resolv("search .", "", "", "");
        check_resolv("nameserver 1.2.3.4\nsearch foo\nsearch bar", "1.2.3.4", "bar", "");
        check_resolv("#comment\nnameserver 1.2.3.4\n#comment\nsearch foo\ncomment", "1.2.3.4", "foo", "");
        check_resolv("options ndots:5 attempts:2", "", "", "ndots:5 attempts:2");
        check_resolv("options ndots:1\noptions ndots:5 attempts:3", "", "", "ndots:5 attempts:3");
        check_resolv("nameserver 1.2.3.4\nsearch foo\noptions ndots:5 attempts:4", "1.2.3.4", "foo",
                     "ndots:5 attempts:4");
}

/* ---- GetPodDNS (kubelet's TestGetPodDNSCustom) ---------------------------- */

typedef struct DnsCase {
        const char *spec; /* after HEAD CTR */
        bool no_cluster_dns;
        const char *servers, *searches, *options;
} DnsCase;

static void check_dns(const DnsCase *c) {
        static const char *const cluster_dns[] = { "10.0.0.10", NULL };
        PodResolvConf host = {};
        PodDns d = {};
        CubError err = {};
        char text[1024];
        Pod *pod;

        (void) snprintf(text, sizeof(text), HEAD CTR "%s", c->spec);
        pod = decode(text);
        assert_int_equal(pod_resolv_conf_parse("nameserver 8.8.8.8\nsearch host.domain\n", &host, &err), 0);
        assert_int_equal(pod_dns_config(pod,
                                        &(PodDnsNode){ .cluster_dns = c->no_cluster_dns ? NULL : cluster_dns,
                                                       .cluster_domain = "kubernetes.io",
                                                       .host = &host },
                                        &d, &err),
                         0);
        assert_string_equal(joined(&d.servers), c->servers);
        assert_string_equal(joined(&d.searches), c->searches);
        assert_string_equal(joined(&d.options), c->options);
        pod_dns_done(&d);
        pod_resolv_conf_done(&host);
        pod_free(pod);
}

#define POD_DNS_CONFIG                                                                                 \
        "  dnsConfig:\n    nameservers: [10.0.0.11]\n    searches: [my.domain]\n    options: [{name: " \
        "ndots, value: \"3\"}, {name: debug}]\n"

static void test_pod_dns(void **state) {
        static const DnsCase cases[] = {
                /* ClusterFirst: the cluster's server, its search paths, then the host's; ndots:5 */
                { "", false, "10.0.0.10", "ns1.svc.kubernetes.io svc.kubernetes.io kubernetes.io host.domain",
                  "ndots:5" },
                /* ... without clusterDNS: falls back to Default */
                { "", true, "8.8.8.8", "host.domain", "" },
                /* ClusterFirst on the host network is Default */
                { "  hostNetwork: true\n", false, "8.8.8.8", "host.domain", "" },
                { "  dnsPolicy: Default\n", false, "8.8.8.8", "host.domain", "" },
                { "  dnsPolicy: None\n  dnsConfig:\n    nameservers: [203.0.113.1]\n    searches: [my.domain, "
                  "second.domain]\n    options: [{name: ndots, value: \"3\"}, {name: debug}]\n",
                  false, "203.0.113.1", "my.domain second.domain", "ndots:3 debug" },
                { "  dnsPolicy: ClusterFirst\n" POD_DNS_CONFIG, false, "10.0.0.10 10.0.0.11",
                  "ns1.svc.kubernetes.io svc.kubernetes.io kubernetes.io host.domain my.domain", "ndots:3 debug" },
                { "  hostNetwork: true\n  dnsPolicy: ClusterFirstWithHostNet\n" POD_DNS_CONFIG, false,
                  "10.0.0.10 10.0.0.11", "ns1.svc.kubernetes.io svc.kubernetes.io kubernetes.io host.domain my.domain",
                  "ndots:3 debug" },
                { "  dnsPolicy: Default\n" POD_DNS_CONFIG, false, "8.8.8.8 10.0.0.11", "host.domain my.domain",
                  "ndots:3 debug" },
                /* duplicates dropped (omitDuplicates) */
                { "  dnsPolicy: Default\n  dnsConfig: {nameservers: [8.8.8.8], searches: [host.domain]}\n", false,
                  "8.8.8.8", "host.domain", "" },
        };

        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                check_dns(&cases[i]);
}

static void test_dns_limits(void **state) {
        static const char *const cluster_dns[] = { "10.0.0.10", NULL };
        PodResolvConf host = {};
        PodDns d = {};
        CubError err = {};
        char text[8192];
        size_t o;
        Pod *pod = decode(HEAD CTR "  dnsConfig: {nameservers: [10.0.0.11, 10.0.0.12, 10.0.0.13]}\n");

        (void) state;
        /* 4 servers: the first 3 stay, with kubelet's event text */
        assert_int_equal(pod_resolv_conf_parse("nameserver 8.8.8.8\n", &host, &err), 0);
        assert_int_equal(pod_dns_config(pod, &(PodDnsNode){ .cluster_dns = cluster_dns, .host = &host }, &d, &err), 0);
        assert_string_equal(joined(&d.servers), "10.0.0.10 10.0.0.11 10.0.0.12");
        assert_string_equal(d.warning, "Nameserver limits were exceeded, some nameservers have been omitted, the "
                                       "applied nameserver line is: 10.0.0.10 10.0.0.11 10.0.0.12");
        pod_dns_done(&d);
        pod_resolv_conf_done(&host);
        pod_free(pod);

        /* 40 host search paths: 32 stay (formDNSSearchFitsLimits) */
        pod = decode(HEAD CTR "  dnsPolicy: Default\n");
        o = (size_t) snprintf(text, sizeof(text), "search");
        for (int i = 0; i < 40; i++)
                o += (size_t) snprintf(text + o, sizeof(text) - o, " d%d.example", i);
        assert_int_equal(pod_resolv_conf_parse(text, &host, &err), 0);
        assert_int_equal(pod_dns_config(pod, &(PodDnsNode){ .host = &host }, &d, &err), 0);
        assert_int_equal(d.searches.n, 32);
        assert_string_equal(d.searches.items[31], "d31.example");
        assert_true(strncmp(d.warning, "Search Line limits were exceeded", 32) == 0);
        pod_dns_done(&d);
        pod_resolv_conf_done(&host);

        /* 2048 characters: the last paths go until the line fits */
        o = (size_t) snprintf(text, sizeof(text), "search");
        for (int i = 0; i < 10; i++) {
                char label[300];

                memset(label, 'a' + i, 250);
                label[250] = '\0';
                o += (size_t) snprintf(text + o, sizeof(text) - o, " %s", label);
        }
        assert_int_equal(pod_resolv_conf_parse(text, &host, &err), 0);
        assert_int_equal(pod_dns_config(pod, &(PodDnsNode){ .host = &host }, &d, &err), 0);
        assert_int_equal(d.searches.n, 8); /* 8 * 251 - 1 = 2007 */
        pod_dns_done(&d);
        pod_resolv_conf_done(&host);

        /* resolvConf "": the local resolver, no search */
        assert_int_equal(pod_dns_config(pod, &(PodDnsNode){ .host = NULL }, &d, &err), 0);
        assert_string_equal(joined(&d.servers), "127.0.0.1");
        assert_string_equal(joined(&d.searches), ".");
        pod_dns_done(&d);
        pod_free(pod);
}

/* ---- hostname, FQDN, /etc/hosts ------------------------------------------ */

static void test_hostname(void **state) {
        char *h = NULL, *dom = NULL, *k = NULL;
        CubError err = {};
        Pod *pod = decode(HEAD CTR);

        (void) state;
        assert_int_equal(pod_hostname_and_domain(pod, "cluster.local", &h, &dom, &err), 0);
        assert_string_equal(h, "p");
        assert_string_equal(dom, "");
        assert_int_equal(pod_kernel_hostname(pod, h, dom, &k, &err), 0);
        assert_string_equal(k, "p");
        free(h), free(dom), free(k);
        pod_free(pod);

        pod = decode(HEAD CTR "  hostname: web-0\n  subdomain: web\n  setHostnameAsFQDN: true\n");
        assert_int_equal(pod_hostname_and_domain(pod, "cluster.local", &h, &dom, &err), 0);
        assert_string_equal(h, "web-0");
        assert_string_equal(dom, "web.ns1.svc.cluster.local");
        assert_int_equal(pod_kernel_hostname(pod, h, dom, &k, &err), 0);
        assert_string_equal(k, "web-0.web.ns1.svc.cluster.local");
        free(h), free(dom), free(k);
        pod_free(pod);

        /* a long pod name: cut to 63, no trailing '-' or '.' (truncatePodHostnameIfNeeded) */
        pod = decode("apiVersion: v1\nkind: Pod\nmetadata: {name: "
                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbb}\n"
                     "spec:\n" CTR);
        assert_int_equal(pod_hostname_and_domain(pod, "", &h, &dom, &err), 0);
        assert_int_equal(strlen(h), 62);
        assert_true(h[61] == 'a');
        free(h), free(dom);
        pod_free(pod);

        /* an FQDN over 64 characters */
        pod = decode(HEAD CTR "  hostname: hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh\n  subdomain: web\n"
                              "  setHostnameAsFQDN: true\n");
        assert_int_equal(pod_hostname_and_domain(pod, "cluster.local", &h, &dom, &err), 0);
        assert_int_equal(pod_kernel_hostname(pod, h, dom, &k, &err), -EINVAL);
        assert_string_equal(err.msg, "failed to construct FQDN from pod hostname and cluster domain, FQDN "
                                     "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh.web.ns1.svc.cluster.local is too long "
                                     "(64 characters is the max, 66 characters requested)");
        free(h), free(dom);
        pod_free(pod);
}

#define MANAGED                                       \
        "# Kubernetes-managed hosts file.\n"          \
        "127.0.0.1\tlocalhost\n"                      \
        "::1\tlocalhost ip6-localhost ip6-loopback\n" \
        "fe00::0\tip6-localnet\n"                     \
        "fe00::0\tip6-mcastprefix\n"                  \
        "fe00::1\tip6-allnodes\n"                     \
        "fe00::2\tip6-allrouters\n"

static void test_hosts_file(void **state) {
        const char *ips[] = { "123.45.67.89", NULL }, *ips2[] = { "203.0.113.1", NULL };
        Pod *pod = decode(HEAD CTR);
        char *t;

        (void) state;
        t = pod_hosts_file(pod, ips, "podFoo", "", NULL);
        assert_string_equal(t, MANAGED "123.45.67.89\tpodFoo\n");
        free(t);
        pod_free(pod);

        pod = decode(HEAD CTR "  hostAliases: [{ip: 123.45.67.89, hostnames: [foo, bar, baz]}]\n");
        t = pod_hosts_file(pod, ips2, "podFoo", "domainFoo", NULL);
        assert_string_equal(t, MANAGED "203.0.113.1\tpodFoo.domainFoo\tpodFoo\n"
                                       "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n");
        free(t);
        pod_free(pod);

        /* host network: the node's file with the aliases after it */
        pod = decode(HEAD CTR "  hostNetwork: true\n  hostAliases: [{ip: 10.0.0.1, hostnames: [db]}, "
                              "{ip: \"::1\", hostnames: [v6, six]}]\n");
        t = pod_hosts_file(pod, ips, "p", "", "127.0.0.1 localhost\n");
        assert_string_equal(t, "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n"
                               "\n# Entries added by HostAliases.\n10.0.0.1\tdb\n::1\tv6\tsix\n");
        free(t);
        pod_free(pod);
}

static void test_conflist(void **state) {
        CubError err = {};
        char *t = NULL;

        (void) state;
        assert_int_equal(pod_cni_conflist("10.88.0.0/16", &t, &err), 0);
        assert_string_equal(t, "{\n  \"cniVersion\": \"0.4.0\",\n  \"name\": \"cubelet\",\n  \"plugins\": [\n"
                               "    {\n      \"type\": \"bridge\",\n      \"bridge\": \"cubelet0\",\n"
                               "      \"isGateway\": true,\n      \"ipMasq\": true,\n      \"hairpinMode\": true,\n"
                               "      \"ipam\": {\n        \"type\": \"host-local\",\n        \"ranges\": [\n"
                               "          [\n            {\n              \"subnet\": \"10.88.0.0/16\"\n"
                               "            }\n          ]\n        ],\n        \"routes\": [\n          {\n"
                               "            \"dst\": \"0.0.0.0/0\"\n          }\n        ]\n      }\n    },\n"
                               "    {\n      \"type\": \"portmap\",\n      \"capabilities\": {\n"
                               "        \"portMappings\": true\n      },\n      \"snat\": true\n    }\n  ]\n}");
        free(t);
        assert_int_equal(pod_cni_conflist("fd00:10::/64", &t, &err), 0);
        assert_non_null(strstr(t, "\"dst\": \"::/0\""));
        free(t);
        assert_int_equal(pod_cni_conflist("10.88.0.0", &t, &err), -EINVAL);
        assert_string_equal(err.msg, "podCIDR: invalid value \"10.88.0.0\": not an IP network (ADDRESS/BITS)");
        assert_int_equal(pod_cni_conflist("10.88.0.0/33", &t, &err), -EINVAL);
        assert_int_equal(pod_cni_conflist("10.288.0.0/16", &t, &err), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode_fields), cmocka_unit_test(test_decode_errors),
                cmocka_unit_test(test_resolv_conf),   cmocka_unit_test(test_pod_dns),
                cmocka_unit_test(test_dns_limits),    cmocka_unit_test(test_hostname),
                cmocka_unit_test(test_hosts_file),    cmocka_unit_test(test_conflist),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
