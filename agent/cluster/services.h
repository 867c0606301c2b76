/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The cluster's Services, for the environment variables kubelet gives every
 * container (pkg/kubelet/kubelet_pods.go getServiceEnvVarMap,
 * pkg/kubelet/envvars): a reflector over /api/v1/services of every
 * namespace, headless ones left out (fieldSelector spec.clusterIP!=None, as
 * kubelet's informer), and the variables of a pod's namespace from it.
 */

#include <jansson.h>
#include <stdbool.h>
#include <systemd/sd-event.h>

#include "../util/err.h"
#include "client.h"

typedef struct KubeServices KubeServices;

/* fn: the set changed (the first list included), or a list failed before the first answered */
typedef void (*KubeServicesFn)(void *userdata);

int kube_services_new(sd_event *e, KubeClient *c, KubeServicesFn fn, void *userdata, KubeServices **ret, CubError *err);
KubeServices *kube_services_free(KubeServices *s);
/* Keeps the set (what the variables need of it) in dir's
 * KUBE_SERVICES_FILE whenever it changes; kube_services_start reads it: a
 * node that starts without the API server makes its pods' env from it
 * (kube_services_cached) once the first list has failed, as offlinePods:
 * start runs the pods of the last list. Before kube_services_start. */
#define KUBE_SERVICES_FILE "api_services"
int kube_services_set_cache(KubeServices *s, const char *dir, CubError *err);
void kube_services_start(KubeServices *s);
/* the file had a set at the start */
bool kube_services_cached(const KubeServices *s);
/* the first list arrived (kubelet's serviceHasSynced) */
bool kube_services_synced(const KubeServices *s);
/* the last list or watch failed */
bool kube_services_failing(const KubeServices *s);
/* uid → Service (borrowed): as listed and watched; before the first list,
 * the file's set when there is one */
const json_t *kube_services_set(const KubeServices *s);
/* For `cubelet status`: synced, services, resourceVersion, lists, watches, events, error. */
json_t *kube_services_status_json(const KubeServices *s);

/* The variables of the Services in set (uid → v1 Service) that a container
 * of a pod in namespace ns gets: default/kubernetes's always, those of ns's
 * other Services when links (spec.enableServiceLinks); a Service of ns
 * named like a master service takes its place. Per Service, as kubelet's
 * envvars.FromServices: NAME_SERVICE_HOST, NAME_SERVICE_PORT,
 * NAME_SERVICE_PORT_<PORT NAME> for each named port, NAME_PORT (the first
 * port), and NAME_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR} for each port,
 * NAME upper-cased with '-' as '_'. A Service without a cluster IP (""
 * or "None") or without ports has none. *ret: a flat, NULL-terminated
 * name/value list (owned; pod_env_strv_free), sorted by name. */
int kube_service_env(const json_t *set, const char *ns, bool links, char ***ret, CubError *err);
