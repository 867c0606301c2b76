/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: a Pod object of the API server into a pod
 * (pod_decode_api: the API's defaulting and checks), its QoS and effective
 * resources, and its containers' env with the Services' variables. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "agent/pod/pod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const svc[] = { "KUBERNETES_SERVICE_HOST", "10.96.0.1", "KUBERNETES_SERVICE_PORT", "443",
                                           NULL };
        PodEnvContext ctx = { .node_name = "node-1", .pod_ip = "10.88.0.2", .host_ip = "192.0.2.1",
                              .alloc_cpu_milli = 4000, .alloc_memory = 1 << 30, .service_env = svc };
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode_api((const char *) data, size, "fuzz-api", &pod, &err) >= 0) {
                PodEffective eff;

                (void) pod_qos_class(pod);
                if (pod_effective(pod, &eff, &err) >= 0)
                        pod_effective_done(&eff);
                for (size_t i = 0; i < pod->n_containers; i++) {
                        char **env = NULL;

                        if (pod_env_resolve(pod, &pod->containers[i], &ctx, &env, &err) >= 0)
                                pod_env_strv_free(env);
                }
                pod_free(pod);
        }
        return 0;
}
