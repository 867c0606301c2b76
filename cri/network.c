/* SPDX-License-Identifier: Apache-2.0 */
/* The CRI client, the pod network: DNSConfig and PortMappings of a sandbox
 * config, the pod IP from PodSandboxStatus. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cri-internal.h"
#include "cri.h"

static char **strv_in_arena(CriArena *a, const char *const *l, size_t *ret_n) {
        size_t n = cri_strv_len(l);
        char **arr;

        *ret_n = 0;
        if (n == 0)
                return NULL;
        arr = cri_arena_alloc(a, n * sizeof(char *));
        if (!arr)
                return NULL;
        for (size_t i = 0; i < n; i++)
                arr[i] = (char *) l[i];
        *ret_n = n;
        return arr;
}

int cri_sandbox_network(CriArena *a, const CriSandboxConfig *cfg, Runtime__V1__PodSandboxConfig *sc) {
        if (cfg->dns_servers || cfg->dns_searches || cfg->dns_options) {
                Runtime__V1__DNSConfig *d = cri_arena_alloc(a, sizeof(*d));

                if (!d)
                        return -ENOMEM;
                *d = (Runtime__V1__DNSConfig) RUNTIME__V1__DNSCONFIG__INIT;
                d->servers = strv_in_arena(a, cfg->dns_servers, &d->n_servers);
                d->searches = strv_in_arena(a, cfg->dns_searches, &d->n_searches);
                d->options = strv_in_arena(a, cfg->dns_options, &d->n_options);
                sc->dns_config = d;
        }
        if (cfg->n_port_mappings > 0) {
                sc->port_mappings = cri_arena_alloc(a, cfg->n_port_mappings * sizeof(*sc->port_mappings));
                if (!sc->port_mappings)
                        return -ENOMEM;
                for (size_t i = 0; i < cfg->n_port_mappings; i++) {
                        const CriPortMapping *m = &cfg->port_mappings[i];
                        Runtime__V1__PortMapping *pm = cri_arena_alloc(a, sizeof(*pm));

                        if (!pm)
                                return -ENOMEM;
                        *pm = (Runtime__V1__PortMapping) RUNTIME__V1__PORT_MAPPING__INIT;
                        pm->protocol = m->protocol == CRI_PROTOCOL_UDP    ? RUNTIME__V1__PROTOCOL__UDP
                                       : m->protocol == CRI_PROTOCOL_SCTP ? RUNTIME__V1__PROTOCOL__SCTP
                                                                          : RUNTIME__V1__PROTOCOL__TCP;
                        pm->container_port = m->container_port;
                        pm->host_port = m->host_port;
                        pm->host_ip = cri_s_or_empty(m->host_ip);
                        sc->port_mappings[i] = pm;
                }
                sc->n_port_mappings = cfg->n_port_mappings;
        }
        return a->failed ? -ENOMEM : 0;
}

int cri_pod_sandbox_ip(CriClient *c, const char *sandbox_id, char **ret_ip, CubError *err) {
        Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
        Runtime__V1__PodSandboxStatusResponse *resp = NULL;
        const char *ip;
        int r;

        req.pod_sandbox_id = (char *) sandbox_id;
        r = cri_call(c, CRI_RT "PodSandboxStatus", &req, &runtime__v1__pod_sandbox_status_response__descriptor, 0,
                     &resp, err);
        if (r < 0)
                return r;
        if (!resp->status) {
                cri_free_msg(resp);
                return cub_err_set(err, EBADMSG, "'%s': PodSandboxStatus of '%s': reply has no status",
                                   cri_client_endpoint(c), sandbox_id);
        }
        ip = resp->status->network ? resp->status->network->ip : NULL;
        *ret_ip = NULL;
        if (ip && *ip && !(*ret_ip = strdup(ip)))
                r = cub_err_set(err, ENOMEM, "out of memory");
        cri_free_msg(resp);
        return r;
}
