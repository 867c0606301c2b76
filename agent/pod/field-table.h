/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* agent/pod: what the field table says of each field (fields-table.c), for
 * the README and the tests. Included by pod.h; includes pod-model.h alone. */

#include "pod-model.h"

/* What the field table says, for the README and the tests. */
typedef enum PodFieldClass {
        POD_FIELD_IMPLEMENTED, /* consumed by cubelet */
        POD_FIELD_WARN,        /* accepted, ignored with a warning: changes nothing on one node */
        POD_FIELD_REFUSE,      /* the pod is refused, the field path named */
        _POD_FIELD_CLASS_MAX,
        _POD_FIELD_CLASS_INVALID = -22,
} PodFieldClass;

const char *pod_field_class_to_string(PodFieldClass c);
/* Calls fn for every field of the table, depth first, with its path
 * ("spec.containers[].ports[].hostPort"), its note text ("" for implemented
 * fields) and the values that mean what an absent field means (NULL or
 * NULL-terminated: hostPID "false"); a table shared by two fields
 * (containers, initContainers) is visited under the first only. */
typedef void (*PodFieldVisitFn)(const char *path, PodFieldClass cls, const char *what, const char *const *inert,
                                void *userdata);
void pod_field_table_visit(PodFieldVisitFn fn, void *userdata);
