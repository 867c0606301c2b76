/* SPDX-License-Identifier: Apache-2.0 */
/* What an API pod's status holds that cubelet takes, and its readiness
 * gates: spec.readinessGates names conditions that others (controllers) set
 * in the pod's status; kubelet's Ready condition is True only when the
 * containers are ready and each of those conditions is True
 * (GeneratePodReadyCondition). A terminal phase is taken too: kubelet does
 * not run such a pod again. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api-status.h"
#include "pod-internal.h"

const PodField pod_readiness_gate_fields[] = {
        { .name = "conditionType", .decode = pod_dec_string, .offset = 0, .flags = POD_FIELD_REQUIRED },
        {},
};

/* apimachinery's IsQualifiedName: an optional DNS-1123 subdomain prefix and
 * "/", then a name of at most 63 characters, alphanumeric at both ends,
 * with '-', '_' and '.' between */
static bool qualified_name(const char *s) {
        const char *slash = strchr(s, '/'), *name = slash ? slash + 1 : s;
        size_t n = strlen(name);

        if (slash) {
                char prefix[254];

                if ((size_t) (slash - s) >= sizeof(prefix) || slash == s)
                        return false;
                memcpy(prefix, s, (size_t) (slash - s));
                prefix[slash - s] = '\0';
                if (!pod_dns1123_subdomain(prefix))
                        return false;
        }
        if (n == 0 || n > 63 || !isalnum((unsigned char) name[0]) || !isalnum((unsigned char) name[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) name[i]) && !strchr("-_.", name[i]))
                        return false;
        return true;
}

int pod_readiness_gate_post(PodDec *d, json_t *obj, void *base) {
        const char *t = *(char **) base;

        if (!qualified_name(t))
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "conditionType"), ".conditionType",
                                    "Invalid value: \"%s\": name part must consist of alphanumeric characters, '-', "
                                    "'_' or '.', and must start and end with an alphanumeric character",
                                    t);
        return 0;
}

int pod_take_api_status(Pod *pod, const json_t *status) {
        const char *phase = json_string_value(json_object_get(status, "phase"));
        const json_t *conds = json_object_get(status, "conditions");

        if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) {
                pod->api_phase = strdup(phase);
                pod->api_reason = strdup(json_string_value(json_object_get(status, "reason")) ?: "");
                pod->api_message = strdup(json_string_value(json_object_get(status, "message")) ?: "");
                if (!pod->api_phase || !pod->api_reason || !pod->api_message)
                        return -ENOMEM;
        }
        pod_strv_done(&pod->gate_status);
        if (pod->readiness_gates.n == 0)
                return 0;
        pod->gate_status.items = calloc(pod->readiness_gates.n + 1, sizeof(char *));
        if (!pod->gate_status.items)
                return -ENOMEM;
        for (size_t i = 0; i < pod->readiness_gates.n; i++) {
                const char *st = "";
                const json_t *c;
                size_t k;

                json_array_foreach(conds, k, c) {
                        const char *type = json_string_value(json_object_get(c, "type"));

                        if (type && strcmp(type, pod->readiness_gates.items[i]) == 0)
                                st = json_string_value(json_object_get(c, "status")) ?: "";
                }
                pod->gate_status.items[i] = strdup(st);
                if (!pod->gate_status.items[i])
                        return -ENOMEM;
                pod->gate_status.n = i + 1;
        }
        return 0;
}
