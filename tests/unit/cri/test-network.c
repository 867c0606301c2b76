/* SPDX-License-Identifier: Apache-2.0 */
/* cri/network.c and sandbox.c: a sandbox config's network part as the
 * runtime.v1 message (NamespaceOption, hostname, DNSConfig, PortMappings),
 * encoded and decoded again with the real field numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cri/cri-internal.h"

static Runtime__V1__PodSandboxConfig *roundtrip(const CriSandboxConfig *cfg) {
        CriArena a = {};
        Runtime__V1__PodSandboxConfig *sc = cri_sandbox_config(&a, cfg), *back;
        size_t len;
        uint8_t *buf;

        assert_non_null(sc);
        len = protobuf_c_message_get_packed_size(&sc->base);
        buf = malloc(len);
        assert_non_null(buf);
        protobuf_c_message_pack(&sc->base, buf);
        cri_arena_done(&a);
        back = runtime__v1__pod_sandbox_config__unpack(NULL, len, buf);
        free(buf);
        assert_non_null(back);
        return back;
}

static void test_pod_network(void **state) {
        static const char *const servers[] = { "10.96.0.10", NULL }, *const searches[] = { "a.b", "c", NULL },
                                 *const options[] = { "ndots:5", NULL };
        static const CriPortMapping ports[] = {
                { .protocol = CRI_PROTOCOL_TCP, .container_port = 80, .host_port = 8080, .host_ip = "127.0.0.1" },
                { .protocol = CRI_PROTOCOL_UDP, .container_port = 53 },
        };
        CriSandboxConfig cfg = { .name = "p",
                                 .uid = "u",
                                 .namespace_ = "default",
                                 .hostname = "web-0",
                                 .dns_servers = servers,
                                 .dns_searches = searches,
                                 .dns_options = options,
                                 .port_mappings = ports,
                                 .n_port_mappings = 2 };
        Runtime__V1__PodSandboxConfig *sc;

        (void) state;
        sc = roundtrip(&cfg);
        assert_int_equal(sc->linux->security_context->namespace_options->network, RUNTIME__V1__NAMESPACE_MODE__POD);
        assert_string_equal(sc->hostname, "web-0");
        assert_non_null(sc->dns_config);
        assert_int_equal(sc->dns_config->n_servers, 1);
        assert_string_equal(sc->dns_config->servers[0], "10.96.0.10");
        assert_int_equal(sc->dns_config->n_searches, 2);
        assert_string_equal(sc->dns_config->searches[1], "c");
        assert_int_equal(sc->dns_config->n_options, 1);
        assert_string_equal(sc->dns_config->options[0], "ndots:5");
        assert_int_equal(sc->n_port_mappings, 2);
        assert_int_equal(sc->port_mappings[0]->protocol, RUNTIME__V1__PROTOCOL__TCP);
        assert_int_equal(sc->port_mappings[0]->container_port, 80);
        assert_int_equal(sc->port_mappings[0]->host_port, 8080);
        assert_string_equal(sc->port_mappings[0]->host_ip, "127.0.0.1");
        assert_int_equal(sc->port_mappings[1]->protocol, RUNTIME__V1__PROTOCOL__UDP);
        assert_int_equal(sc->port_mappings[1]->host_port, 0);
        runtime__v1__pod_sandbox_config__free_unpacked(sc, NULL);

        /* host network: NODE, no hostname (runc refuses one), no DNSConfig when none is given */
        cfg = (CriSandboxConfig){
                .name = "p", .uid = "u", .namespace_ = "default", .hostname = "x", .host_network = true
        };
        sc = roundtrip(&cfg);
        assert_int_equal(sc->linux->security_context->namespace_options->network, RUNTIME__V1__NAMESPACE_MODE__NODE);
        assert_string_equal(sc->hostname, "");
        assert_null(sc->dns_config);
        assert_int_equal(sc->n_port_mappings, 0);
        runtime__v1__pod_sandbox_config__free_unpacked(sc, NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pod_network),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
