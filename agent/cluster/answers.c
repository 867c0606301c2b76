/* SPDX-License-Identifier: Apache-2.0 */
/* The API server's answers, read (answers.h). */
#include "answers.h"

#include <errno.h>

#include "../util/base64.h"
#include "../util/cleanup.h"
#include "projected.h"

const char *kube_answer_uid(const json_t *obj) {
        return json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
}

int kube_answer_node_conditions(const json_t *node, json_t **ret_since, json_t **ret_conditions) {
        const json_t *conds = json_object_get(json_object_get(node, "status"), "conditions"), *c;
        json_t *since = json_object(), *copy = json_is_array(conds) ? json_deep_copy(conds) : json_array();
        size_t i;

        if (!since || !copy) {
                json_decref(since);
                json_decref(copy);
                return -ENOMEM;
        }
        json_array_foreach(conds, i, c) {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *st = json_string_value(json_object_get(c, "status"));
                const char *t = json_string_value(json_object_get(c, "lastTransitionTime"));

                if (type && st && t)
                        (void) json_object_set_new(since, type, json_pack("{s:s,s:s}", "status", st, "time", t));
        }
        *ret_since = since;
        *ret_conditions = copy;
        return 0;
}

json_t *kube_answer_changed_keys(const json_t *want, const json_t *existing) {
        json_t *out = json_object(), *v;
        const char *k;

        if (out)
                json_object_foreach((json_t *) want, k, v) if (!json_equal(v, json_object_get(existing, k)))(void)
                        json_object_set(out, k, v);
        return out;
}

json_t *kube_answer_node_patch(const json_t *want, const json_t *existing, size_t *n_labels, size_t *n_ann) {
        const json_t *meta = json_object_get(want, "metadata"), *emeta = json_object_get(existing, "metadata");
        json_t *labels = kube_answer_changed_keys(json_object_get(meta, "labels"), json_object_get(emeta, "labels"));
        json_t *ann =
                kube_answer_changed_keys(json_object_get(meta, "annotations"), json_object_get(emeta, "annotations"));
        json_t *patch = NULL;

        *n_labels = json_object_size(labels);
        *n_ann = json_object_size(ann);
        if (labels && ann && *n_labels + *n_ann > 0)
                patch = json_pack("{s:{s:O,s:O}}", "metadata", "labels", labels, "annotations", ann);
        json_decref(labels);
        json_decref(ann);
        return patch;
}

bool kube_answer_lease_owned(const json_t *lease) {
        return json_array_size(json_object_get(json_object_get(lease, "metadata"), "ownerReferences")) > 0;
}

const char *kube_answer_renew_time(const json_t *lease) {
        const char *t = json_string_value(json_object_get(json_object_get(lease, "spec"), "renewTime"));

        return t ? t : "";
}

json_t *kube_answer_lease_renewal(const json_t *lease, const char *name, const char *ns, const char *owner_uid,
                                  int64_t duration_s, const char *now) {
        json_t *l = json_is_object(lease) ? json_deep_copy(lease)
                                          : json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "coordination.k8s.io/v1",
                                                      "kind", "Lease", "metadata", "name", name, "namespace", ns);
        json_t *meta = json_object_get(l, "metadata");

        if (!l)
                return NULL;
        /* a Lease read with no metadata object gets one (the PUT then says what is wrong) */
        if (!json_is_object(meta)) {
                meta = json_object();
                if (json_object_set_new(l, "metadata", meta) < 0) {
                        json_decref(l);
                        return NULL;
                }
        }
        if (!kube_answer_lease_owned(l))
                (void) json_object_set_new(meta, "ownerReferences",
                                           json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", "v1", "kind", "Node", "name",
                                                     name, "uid", owner_uid));
        if (json_object_set_new(l, "spec",
                                json_pack("{s:s,s:I,s:s}", "holderIdentity", name, "leaseDurationSeconds",
                                          (json_int_t) duration_s, "renewTime", now)) < 0) {
                json_decref(l);
                return NULL;
        }
        return l;
}

/* key k's base64 value v, decoded, into out; false when it is not base64 */
static bool put_decoded(json_t *out, const char *k, const json_t *v) {
        _cleanup_free_ uint8_t *bytes = NULL;
        size_t n = 0;

        if (!json_is_string(v) || cub_base64_decode(json_string_value(v), json_string_length(v), &bytes, &n) < 0)
                return false;
        (void) json_object_set_new(out, k, json_stringn_nocheck((const char *) bytes, n));
        return true;
}

json_t *kube_answer_keys(const json_t *body, bool secret, const char **error) {
        json_t *out = json_object();
        const json_t *data = json_object_get(body, "data"), *bin = json_object_get(body, "binaryData"), *v;
        const char *k;

        if (!out)
                return NULL;
        json_object_foreach((json_t *) data, k, v) {
                if (!json_is_string(v))
                        continue;
                if (!secret)
                        (void) json_object_set_new(out, k, json_stringn(json_string_value(v), json_string_length(v)));
                else if (!put_decoded(out, k, v)) {
                        *error = "the Secret's data is not base64";
                        json_decref(out);
                        return NULL;
                }
        }
        json_object_foreach((json_t *) (secret ? NULL : bin), k, v) {
                if (!put_decoded(out, k, v)) {
                        *error = "the ConfigMap's binaryData is not base64";
                        json_decref(out);
                        return NULL;
                }
        }
        return out;
}

int kube_answer_token(const json_t *body, const char **ret_token, int64_t *ret_exp, int64_t *ret_seconds) {
        const json_t *st = json_object_get(body, "status");
        const char *tok = json_string_value(json_object_get(st, "token"));
        int64_t exp = kube_parse_time(json_string_value(json_object_get(st, "expirationTimestamp")));
        json_int_t es = json_integer_value(json_object_get(json_object_get(body, "spec"), "expirationSeconds"));

        /* the API server allows 10 min to 2^32 s (the renewal's arithmetic stays in range) */
        if (!tok || !*tok || exp < 0 || es <= 0 || es > (json_int_t) 1 << 32)
                return -EINVAL;
        *ret_token = tok;
        *ret_exp = exp;
        *ret_seconds = es;
        return 0;
}
