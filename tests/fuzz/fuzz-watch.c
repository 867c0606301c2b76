/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: what an API server's watch stream sends, a line at a
 * time (agent/cluster/reflector.c kube_watch_event), its object taken as a
 * Pod (pod_decode_api) and as a Service (the Services' variables, every
 * namespace and links setting). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cluster/reflector.h"
#include "agent/cluster/services.h"
#include "agent/pod/pod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *ev = NULL, *obj, *set;
        const char *type;
        CubError err = {};
        char *text, **env = NULL;
        Pod *pod = NULL;

        if (kube_watch_event((const char *) data, size, &ev, &type, &obj, &err) < 0)
                return 0;
        (void) strcmp(type, "ADDED");
        text = json_dumps(obj, JSON_COMPACT);
        if (text && pod_decode_api(text, strlen(text), "fuzz-watch", &pod, &err) >= 0)
                pod_free(pod);
        free(text);
        set = json_pack("{s:O}", "uid-1", obj);
        for (int links = 0; set && links < 2; links++)
                if (kube_service_env(set, "default", links, &env, &err) >= 0)
                        pod_env_strv_free(env);
        json_decref(set);
        json_decref(ev);
        return 0;
}
