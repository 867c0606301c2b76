/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: a kubeconfig (agent/cluster/kubeconfig.c), its files
 * named relative to a directory that does not exist. */
#include <stddef.h>
#include <stdint.h>

#include "agent/cluster/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        KubeConfig c = {};
        CubError err = {};

        if (kube_config_decode((const char *) data, size, "/nonexistent/cubelet-fuzz/kubeconfig", &c, &err) >= 0)
                kube_config_done(&c);
        return 0;
}
