/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the JSON manifest decoder (static pod path included). */
#include <stddef.h>
#include <stdint.h>

#include "agent/pod/pod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode_static((const char *) data, size, "fuzz.json", POD_FORMAT_JSON, "Node-1", POD_SOURCE_FILE,
                              "/etc/kubernetes/manifests/fuzz.json", &pod, &err) >= 0) {
                PodEffective eff;

                (void) pod_qos_class(pod);
                if (pod_effective(pod, &eff, &err) >= 0)
                        pod_effective_done(&eff);
                pod_free(pod);
        }
        return 0;
}
