/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resource names (kubelet's IsExtendedResourceName, as the Register handler
 * applies it), capacity and allocatable of a resource, strv helpers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dp-internal.h"

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c) {
        return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* DNS-1123 subdomain: labels of [a-z0-9-], alphanumeric at both ends, at most 253 characters. */
static bool dns_subdomain(const char *s, size_t n) {
        size_t label = 0;

        if (n == 0 || n > 253)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (c == '.') {
                        if (label == 0 || !is_lower_alnum(s[i - 1]))
                                return false;
                        label = 0;
                        continue;
                }
                if (!is_lower_alnum(c) && c != '-')
                        return false;
                if (label == 0 && !is_lower_alnum(c))
                        return false;
                label++;
        }
        return label > 0 && is_lower_alnum(s[n - 1]);
}

/* The name part of a qualified name: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63. */
static bool qualified_name_part(const char *s, size_t n) {
        if (n == 0 || n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
                        return false;
        return true;
}

int dp_validate_resource_name(const char *name, CubError *err) {
        const char *slash;
        const char *why = NULL;
        size_t prefix_len;

        if (!name || !*name)
                return cub_err_set(err, EINVAL, "the ResourceName \"\" is invalid: empty");
        slash = strchr(name, '/');
        if (!slash)
                why = "it needs a domain prefix (vendor.com/name)";
        else if (strstr(name, "kubernetes.io/"))
                why = "the kubernetes.io domain is reserved for native resources";
        else if (strncmp(name, "requests.", 9) == 0)
                why = "it must not start with 'requests.'";
        else if (strchr(slash + 1, '/'))
                why = "a qualified name has at most one '/'";
        else {
                /* IsQualifiedName("requests." + name): the prefix becomes requests.<domain> */
                prefix_len = (size_t) (slash - name);
                if (prefix_len + 9 > 253 || !dns_subdomain(name, prefix_len))
                        why = "the prefix must be a DNS-1123 subdomain (lower case alphanumerics, '-' and '.')";
                else if (!qualified_name_part(slash + 1, strlen(slash + 1)))
                        why = "the name must be at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends";
        }
        if (why)
                return cub_err_set(err, EINVAL, "the ResourceName \"%s\" is invalid: %s", name, why);
        return 0;
}

size_t dp_resource_capacity(const DpResource *r) {
        return r ? r->n_devices : 0;
}

size_t dp_resource_allocatable(const DpResource *r) {
        size_t n = 0;

        if (!r || !r->connected)
                return 0;
        for (size_t i = 0; i < r->n_devices; i++)
                if (r->devices[i].healthy)
                        n++;
        return n;
}

/* ---- strv ------------------------------------------------------------------ */

void dp_strv_free(char **v, size_t n) {
        if (!v)
                return;
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

int dp_strv_cmp(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

int dp_strv_copy_sorted(const char *const *v, size_t n, char ***ret) {
        char **c = calloc(n + 1, sizeof(char *));

        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(v[i]);
                if (!c[i]) {
                        dp_strv_free(c, i);
                        return -ENOMEM;
                }
        }
        qsort(c, n, sizeof(char *), dp_strv_cmp);
        *ret = c;
        return 0;
}

bool dp_strv_contains(const char *const *v, size_t n, const char *s) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i], s) == 0)
                        return true;
        return false;
}
