/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/cluster answers: the API server's answers about the Node, its
 * Lease, ConfigMaps, Secrets and TokenRequests, read by pure functions
 * that trust nothing in them (any JSON of any shape gives a value or an
 * error, never a crash). node.c and projected.c call them on each answer;
 * tests/fuzz/fuzz-answers.c feeds them anything.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* metadata.uid, NULL when there is none (or it is not a string) */
const char *kube_answer_uid(const json_t *obj);

/* A Node's status.conditions: *ret_since {type: {status, time}} for each
 * condition with a type, a status and a lastTransitionTime (kubelet keeps
 * those across a restart), *ret_conditions a copy of the list ([] when
 * none). New references; -ENOMEM. */
int kube_answer_node_conditions(const json_t *node, json_t **ret_since, json_t **ret_conditions);

/* The keys of want whose values existing lacks or has otherwise: a new
 * object, empty when none. */
json_t *kube_answer_changed_keys(const json_t *want, const json_t *existing);

/* kubelet's reconcile of an existing Node: a strategic-merge patch of the
 * labels and annotations of want that the existing Node lacks or has
 * otherwise, NULL when none differs (the counts in *n_labels, *n_ann). */
json_t *kube_answer_node_patch(const json_t *want, const json_t *existing, size_t *n_labels, size_t *n_ann);

/* whether a Lease has an owner reference */
bool kube_answer_lease_owned(const json_t *lease);
/* spec.renewTime, "" when none */
const char *kube_answer_renew_time(const json_t *lease);
/* The Lease to PUT (lease an object: as read, its spec replaced) or POST
 * (anything else: a new one), held by name for duration_s from now; an
 * owner reference to the Node owner_uid when it has none. NULL on ENOMEM. */
json_t *kube_answer_lease_renewal(const json_t *lease, const char *name, const char *ns, const char *owner_uid,
                                  int64_t duration_s, const char *now);

/* A ConfigMap's data and binaryData (base64), a Secret's data (base64), as
 * one object of each key's bytes (strings that may hold NULs); NULL with
 * *error when a value is not base64. Non-string values are skipped. */
json_t *kube_answer_keys(const json_t *body, bool secret, const char **error);

/* A TokenRequest's answer: its token, expirationTimestamp (unix s) and
 * spec.expirationSeconds; -EINVAL when one is missing or malformed. */
int kube_answer_token(const json_t *body, const char **ret_token, int64_t *ret_exp, int64_t *ret_seconds);
