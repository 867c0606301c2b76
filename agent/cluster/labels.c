/* SPDX-License-Identifier: Apache-2.0 */
/* --node-labels and --register-with-taints: parsed, and the labels checked
 * as kubelet checks them before it starts
 * (cmd/kubelet/app/options/options.go ValidateKubeletFlags,
 * k8s.io/kubelet/pkg/apis/well_known_labels.go): a label of the
 * kubernetes.io or k8s.io namespaces that a kubelet may not set
 * (NodeRestriction refuses the Node, so the node never registers) stops
 * the start, named. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "node.h"

/* sorted, as kubelet prints them */
static const char *const kubelet_labels[] = {
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "beta.kubernetes.io/os",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "kubernetes.io/arch",
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        NULL,
};
static const char *const kubelet_namespaces[] = { "kubelet.kubernetes.io", "node.kubernetes.io", NULL };

static bool ends_with(const char *s, size_t n, const char *suffix) {
        size_t m = strlen(suffix);

        return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* ns: the key's prefix before '/' (n bytes), or none */
static bool in_namespace(const char *ns, size_t n, const char *domain) {
        char dotted[64];

        (void) snprintf(dotted, sizeof(dotted), ".%s", domain);
        return (n == strlen(domain) && memcmp(ns, domain, n) == 0) || ends_with(ns, n, dotted);
}

bool kube_node_label_forbidden(const char *key) {
        const char *slash = strchr(key, '/');
        size_t n = slash ? (size_t) (slash - key) : 0;

        if (!slash || !(in_namespace(key, n, "kubernetes.io") || in_namespace(key, n, "k8s.io")))
                return false;
        for (size_t i = 0; kubelet_labels[i]; i++)
                if (strcmp(key, kubelet_labels[i]) == 0)
                        return false;
        for (size_t i = 0; kubelet_namespaces[i]; i++)
                if (in_namespace(key, n, kubelet_namespaces[i]))
                        return false;
        return true;
}

static int cmp_str(const void *x, const void *y) {
        return strcmp(*(const char *const *) x, *(const char *const *) y);
}

int kube_node_labels_check(const char *list, CubError *err) {
        _cleanup_free_ char *copy = list ? strdup(list) : NULL, *bad = NULL;
        _cleanup_free_ const char **forbidden = NULL;
        char *save = NULL, allowed[1024] = "", prefixes[256] = "";
        size_t n = 0, len = 0, off;

        if (!list)
                return 0;
        if (!copy || !(forbidden = calloc(strlen(list) / 2 + 2, sizeof(char *))))
                return cub_err_set(err, ENOMEM, "out of memory");
        for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(kv, '=');

                if (!eq)
                        return cub_err_set(err, EINVAL, "--node-labels: '%s': malformed pair, expect string=string",
                                           kv);
                *eq = 0;
                if (kube_node_label_forbidden(kv))
                        forbidden[n++] = kv;
        }
        if (n == 0)
                return 0;
        qsort(forbidden, n, sizeof(char *), cmp_str);
        for (size_t i = 0; i < n; i++)
                len += strlen(forbidden[i]) + 1;
        if (!(bad = calloc(len + 1, 1)))
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0, k = 0; i < n; i++) /* Go's %v of a []string: space-separated */
                k += (size_t) snprintf(bad + k, len + 1 - k, "%s%s", i ? " " : "", forbidden[i]);
        off = 0;
        for (size_t i = 0; kubelet_namespaces[i]; i++)
                off += (size_t) snprintf(prefixes + off, sizeof(prefixes) - off, "%s%s", i ? ", " : "",
                                         kubelet_namespaces[i]);
        off = 0;
        for (size_t i = 0; kubelet_labels[i]; i++)
                off += (size_t) snprintf(allowed + off, sizeof(allowed) - off, "%s%s", i ? ", " : "",
                                         kubelet_labels[i]);
        return cub_err_set(err, EINVAL,
                           "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [%s]\n"
                           "--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (%s) "
                           "or be in the specifically allowed set (%s)",
                           bad, prefixes, allowed);
}

/* key=value pairs, comma-separated (--node-labels) */
void kube_node_labels_add(json_t *labels, const char *list) {
        _cleanup_free_ char *copy = list ? strdup(list) : NULL;
        char *save = NULL;

        for (char *kv = copy ? strtok_r(copy, ",", &save) : NULL; kv; kv = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(kv, '=');

                if (eq) {
                        *eq = 0;
                        json_object_set_new(labels, kv, json_string(eq + 1));
                }
        }
}

/* key[=value]:Effect, comma-separated (--register-with-taints) */
json_t *kube_node_taints_parse(const char *list) {
        _cleanup_free_ char *copy = list ? strdup(list) : NULL;
        json_t *l = json_array();
        char *save = NULL;

        for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && l; t = strtok_r(NULL, ",", &save)) {
                char *colon = strrchr(t, ':'), *eq;

                if (!colon)
                        continue;
                *colon = 0;
                eq = strchr(t, '=');
                if (eq)
                        *eq = 0;
                json_array_append_new(
                        l, json_pack("{s:s,s:s,s:s}", "key", t, "value", eq ? eq + 1 : "", "effect", colon + 1));
        }
        return l;
}
