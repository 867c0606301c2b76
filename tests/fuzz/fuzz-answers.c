/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: what the API server answers about the Node, its Lease,
 * ConfigMaps, Secrets and TokenRequests (agent/cluster/answers.h), each
 * input read as JSON and given to every reader, the Node's patch computed
 * against a fixed Node both ways, and a token's renewal time from its
 * answer. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "agent/cluster/answers.h"
#include "agent/cluster/projected.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *body = json_loadb((const char *) data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        json_t *mine, *since = NULL, *conds = NULL, *patch, *lease, *keys;
        const char *error = NULL, *token;
        size_t nl, na;
        int64_t exp, es;

        if (!body)
                return 0;
        mine = json_pack("{s:{s:{s:s,s:s},s:{s:s}}}", "metadata", "labels", "kubernetes.io/os", "linux",
                         "kubernetes.io/hostname", "n", "annotations",
                         "volumes.kubernetes.io/controller-managed-attach-detach", "true");
        (void) kube_answer_uid(body);
        if (kube_answer_node_conditions(body, &since, &conds) == 0) {
                json_decref(since);
                json_decref(conds);
        }
        json_decref(kube_answer_node_patch(mine, body, &nl, &na));
        patch = kube_answer_node_patch(body, mine, &nl, &na);
        json_decref(patch);
        json_decref(kube_answer_changed_keys(body, mine));
        (void) kube_answer_lease_owned(body);
        (void) strlen(kube_answer_renew_time(body));
        lease = kube_answer_lease_renewal(body, "n", "kube-node-lease", "uid-1", 40, "2026-12-03T00:00:00.000000Z");
        if (lease) {
                char *text = json_dumps(lease, JSON_COMPACT);

                free(text);
                json_decref(lease);
        }
        for (int secret = 0; secret < 2; secret++) {
                keys = kube_answer_keys(body, secret, &error);
                json_decref(keys);
        }
        if (kube_answer_token(body, &token, &exp, &es) == 0)
                (void) kube_token_renew_in(exp, es, 1796256000, 10);
        json_decref(mine);
        json_decref(body);
        return 0;
}
