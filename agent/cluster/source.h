/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The API server as a pod source (kubelet's config/apiserver.go), beside
 * agent/config's directory and URL: the pods bound to this node, each
 * decoded as a manifest (pod_decode_api: refused fields fail the pod with
 * their paths), with the API's UID and a hash of its spec, handed to the
 * loop as a whole set of entries (PodsrcSet) after the first list and each
 * change, as the other sources hand theirs. What the source decides itself:
 *   - mirror pods (the node's own static pods) are never run;
 *   - a pod being deleted leaves the set (so it is stopped), with a
 *     deletionGracePeriodSeconds shorter than its own asked as a stop;
 *   - a new pod whose volumes or env need the API server's data (tokens,
 *     ConfigMaps, Secrets, the Services) is held out of the set until it is
 *     here, with kubelet's FailedMount message when it cannot be had.
 * It owns the pods' reflector, the projected data and the Services; the
 * node, the pods' status and events are the status publisher's (the loop's
 * cluster.c). All on the caller's sd-event loop.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../config/podsrc.h"
#include "../pod/pod.h"
#include "../util/err.h"
#include "../volumes/volumes.h"
#include "client.h"
#include "projected.h"
#include "services.h"

/* the source of its pods (WorkerSpec.source, PodsrcEntry.path) */
#define KUBE_SOURCE_PATH "api"

typedef struct KubeSource KubeSource;

/* What the node holds of a pod (KubeSourceHooks.pod), borrowed for the call. */
typedef struct KubeSourcePod {
        bool wanted; /* a source still defines it */
        int64_t grace;
        const char *ns, *name, *cgroup;
} KubeSourcePod;

/* a pod deleted with a grace period shorter than its own: stopped with it
 * (kubelet's killPod takes the smaller) */
typedef struct KubeSourceStop {
        char *uid, *ns, *name, *cgroup;
        int64_t grace;
} KubeSourceStop;

typedef struct KubeSourceHooks {
        /* the set to merge (takes its entries), then the stops to start */
        void (*update)(void *userdata, PodsrcSet *set, const KubeSourceStop *stops, size_t n_stops);
        /* the node's pod of uid: false when it has none */
        bool (*pod)(void *userdata, const char *uid, KubeSourcePod *ret);
        void *userdata;
} KubeSourceHooks;

typedef struct KubeSourceOptions {
        const char *node_name;
        const char *state_dir; /* the last set and the Services, kept for a node that starts offline */
        bool offline_start;    /* cubelet.offlinePods: start */
} KubeSourceOptions;

int kube_source_new(sd_event *e, KubeClient *c, const KubeSourceOptions *o, const KubeSourceHooks *h, KubeSource **ret,
                    CubError *err);
void kube_source_start(KubeSource *s);
KubeSource *kube_source_free(KubeSource *s);

/* uid → Pod, as the API server last gave it (borrowed); its first list came */
const json_t *kube_source_pods(const KubeSource *s);
bool kube_source_synced(const KubeSource *s);
/* pods held for their volumes' data: whether uid is, whether any is; and
 * those with a failure: uid → {ns, name, message, first} (FailedMount) */
bool kube_source_holds(const KubeSource *s, const char *uid);
size_t kube_source_n_held(const KubeSource *s);
const json_t *kube_source_waiting(const KubeSource *s);
/* once a second: the projected data's renewals */
void kube_source_tick(KubeSource *s);
/* the data of the pods' env (the loop's cluster-env.c) */
KubeProjected *kube_source_projected(const KubeSource *s);
const KubeServices *kube_source_services(const KubeSource *s);
/* `cubelet status`'s apiServer parts: pods, volumes, services, waitingForVolumes */
void kube_source_status(const KubeSource *s, json_t *o);

/* ---- the API server's data in the pods' volumes and env (source-volumes.c) ---- */

/* every ConfigMap and Secret the pod's env names has been answered for,
 * and the Services listed (or failing) for an API pod (asked for when new) */
bool kube_source_env_ready(KubeSource *s, const Pod *pod);
/* kubelet waits for the Services' first list before it makes an API pod's
 * env (a static pod's is made from what is there); a list that fails with
 * the last set in the state directory (a node started offline) uses that */
bool kube_source_services_wanted(const KubeSource *s, const Pod *pod);
/* whether the pod's projected files of the API server can all be had, and
 * its env's data; why: kubelet's FailedMount message of the first that
 * failed ("" while on their way) */
bool kube_source_volumes_ready(KubeSource *s, const Pod *pod, char *why, size_t size);
/* the files of item f of a configMap, secret or projected volume (the
 * volume manager's VolApiFn): -EAGAIN while on their way */
int kube_source_api_files(KubeSource *s, const Pod *pod, const PodDownwardFile *f, VolApiFile **ret, size_t *ret_n,
                          CubError *err);
/* changes with each token or ConfigMap or Secret the volumes hold */
uint64_t kube_source_generation(const KubeSource *s);
