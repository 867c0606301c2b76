/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/pod: in-place resize (KEP-1287) as far as the manifest goes.
 *
 * Only cpu and memory of the resizable containers (app containers and
 * sidecars, IsResizableContainer) change in place; anything else is a new
 * pod. The pod's identity (a static pod's UID, an API pod's config hash) is
 * therefore computed with those values taken out (pod_resize_mask_spec),
 * and a pod whose identity stayed but whose resources changed is a resize
 * (pod_resize_compare). A pod with pod-level resources is never resized
 * (ValidatePodResize: "pods with pod-level resources cannot be resized").
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "pod.h"

/* Takes requests/limits cpu and memory out of the resizable containers of
 * a v1 PodSpec object, in place; nothing when the spec sets pod-level
 * resources. */
void pod_resize_mask_spec(json_t *spec);

/* The API pod's config-hash text: the spec as compact sorted JSON, masked,
 * without activeDeadlineSeconds and ephemeralContainers (which may change
 * while the pod runs);
 * NULL when out of memory. */
char *pod_resize_spec_text(const json_t *spec);

/* What changed in one container (init containers first). */
typedef struct PodResizeChange {
        bool cpu, memory;       /* a request or limit of it changed */
        bool restart;           /* its resizePolicy restarts it for what changed */
        bool memory_limit_down; /* its memory limit decreases (or appears) */
} PodResizeChange;

/* Compares the resources of two pods of the same identity. ret has
 * n_init_containers + n_containers entries; *ret_any tells whether
 * anything changed. -EINVAL (err says what) when the two pods differ in
 * their containers, or the change is not a resize (pod-level resources, a
 * non-resizable container's resources). */
int pod_resize_compare(const Pod *cur, const Pod *want, PodResizeChange *ret, bool *ret_any, CubError *err);

/* One container's requests and limits of cpu and memory as kubelet's
 * podResourceSummary shows them: {"name":..,"resources":{"limits":{..},
 * "requests":{..}}}; NULL when out of memory. */
json_t *pod_resize_container_json(const PodContainer *c);

/* Sets the cpu and memory requests/limits of pod's containers to what
 * list (pod_resize_container_json()'s objects, by name) says; a container
 * the list does not name keeps its own. -EINVAL (err names it) on a bad
 * quantity. */
int pod_resize_apply(Pod *pod, const json_t *list, CubError *err);
