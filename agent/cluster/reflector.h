/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A set of API objects kept as the API server has them (client-go's
 * reflector): list (limit 500, resourceVersion 0) with a field selector,
 * then watch from the list's resourceVersion with bookmarks; a watch that
 * ends is started again from the last version, a 410 Gone (the version is
 * too old) or an ERROR event lists again, a failure waits for the retry
 * policy (1 s doubling to 30 s). One request at a time, on the loop. After
 * the first list and each event, fn gets the whole set. The pods bound to
 * the node (pods.c) and the Services of the cluster (services.c) are two.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../util/err.h"
#include "client.h"

typedef struct KubeReflector KubeReflector;

/* set: metadata.uid → the object, as the API server last gave it
 * (borrowed for the call) */
typedef void (*KubeReflectorFn)(void *userdata, const json_t *set);
/* a list or watch failed (synced: a list has answered before) */
typedef void (*KubeReflectorFailedFn)(void *userdata, bool synced);

typedef struct KubeReflectorSpec {
        const char *what;           /* for the journal: "pods" */
        const char *path;           /* "/api/v1/pods" */
        const char *field_selector; /* "spec.nodeName=N", escaped here; NULL: none */
        KubeReflectorFn fn;
        KubeReflectorFailedFn failed_fn; /* NULL: none */
        void *userdata;
} KubeReflectorSpec;

/* One line of a watch stream: the event (a new reference) with its type
 * and object (borrowed from it); -EINVAL with why when it is none (not
 * JSON, no type, no object). */
int kube_watch_event(const char *line, size_t len, json_t **ret_event, const char **ret_type, json_t **ret_obj,
                     CubError *err);

int kube_reflector_new(sd_event *e, KubeClient *c, const KubeReflectorSpec *spec, KubeReflector **ret, CubError *err);
KubeReflector *kube_reflector_free(KubeReflector *r);
void kube_reflector_start(KubeReflector *r);
/* uid → object (borrowed) */
const json_t *kube_reflector_set(const KubeReflector *r);
/* the first list arrived */
bool kube_reflector_synced(const KubeReflector *r);
/* the last list or watch failed */
bool kube_reflector_failing(const KubeReflector *r);
/* why, while it fails; NULL otherwise (and for NULL) */
const char *kube_reflector_error(const KubeReflector *r);
/* synced, COUNT_KEY (the set's size), resourceVersion, lists, watches, events, error */
json_t *kube_reflector_status_json(const KubeReflector *r, const char *count_key);
