/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the docker config of an image pull secret
 * (agent/cluster/pullcreds.c), as .dockerconfigjson and as the older
 * .dockercfg, matched against images of several shapes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent/cluster/pullcreds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const images[] = { "registry.example:5000/team/app:1", "busybox", "localhost/x@sha256:00",
                                              "" };
        static const char *const keys[] = { ".dockerconfigjson", ".dockercfg" };
        const char *names[] = { "default/regcred" };

        for (size_t k = 0; k < 2; k++) {
                json_t *secret = json_object();
                const json_t *secrets[1] = { secret };

                json_object_set_new(secret, keys[k], json_stringn_nocheck((const char *) data, size));
                for (size_t i = 0; i < sizeof(images) / sizeof(*images); i++) {
                        KubePullCred *creds = NULL;
                        size_t n = 0;
                        char *skipped = NULL;

                        if (kube_pull_creds(secrets, names, 1, images[i], &creds, &n, &skipped) >= 0)
                                kube_pull_creds_free(creds, n);
                        free(skipped);
                }
                json_decref(secret);
        }
        return 0;
}
