/* SPDX-License-Identifier: Apache-2.0 */
/* The one table of every field of the v1 Pod (kubelet 1.28-1.31's API),
 * each IMPLEMENTED (consumed by cubelet), WARN (accepted and ignored, with a
 * warning: it changes nothing on one node) or REFUSE (the pod does not run;
 * the message names the field path). Children of a refused field (a
 * Probe's handler, a VolumeMount's subPath, ...) are refused with it. Any
 * field not in the table is refused as "unknown field" (the API server's
 * strict field validation). fields.c walks a manifest against it. */
#include <stddef.h>

#include "pod-internal.h"

#define NOT_SUPPORTED "not supported by cubelet"
#define NOT_SCHEDULED "ignored: a static pod is not scheduled"
#define NO_API_SERVER "ignored: set by the API server, there is none"
#define NO_SA_TOKEN "ignored: static pods get no service account token"
#define NOT_LINUX "ignored on Linux"

/* field macros: implemented, implemented object/list, warned, refused */
#define A(n) \
        { .name = n, .cls = POD_FIELD_IMPLEMENTED }
#define AO(n, s) \
        { .name = n, .cls = POD_FIELD_IMPLEMENTED, .shape = POD_SHAPE_OBJECT, .sub = s }
#define AL(n, s) \
        { .name = n, .cls = POD_FIELD_IMPLEMENTED, .shape = POD_SHAPE_LIST, .sub = s }
#define W(n, w) \
        { .name = n, .cls = POD_FIELD_WARN, .what = w }
#define WI(n, w, i) \
        { .name = n, .cls = POD_FIELD_WARN, .what = w, .inert = i }
#define R(n) \
        { .name = n, .cls = POD_FIELD_REFUSE }
#define RW(n, w) \
        { .name = n, .cls = POD_FIELD_REFUSE, .what = w }
#define RI(n, i) \
        { .name = n, .cls = POD_FIELD_REFUSE, .inert = i }
/* refused with w in a static pod; in a pod of the API server an object with the fields of s */
#define RA(n, w, s) \
        { .name = n, .cls = POD_FIELD_REFUSE, .what = w, .api_sub = s }
#define END \
        {}

/* the values that mean what an absent field means */
static const char *const is_true[] = { "true", NULL };
static const char *const apparmor_default[] = { "RuntimeDefault", NULL };
static const char *const groups_policy_default[] = { "Merge", NULL };
static const char *const os_linux[] = { "linux", NULL };
static const char *const scheduler_default[] = { "default-scheduler", NULL };

/* ---- the pod network ------------------------------------------------------ */

static const PodFieldRule readiness_gate[] = {
        A("conditionType"),
        END,
};

static const PodFieldRule host_alias[] = {
        A("ip"),
        A("hostnames"),
        END,
};

static const PodFieldRule dns_option[] = {
        A("name"),
        A("value"),
        END,
};

static const PodFieldRule dns_config[] = {
        A("nameservers"),
        A("searches"),
        AL("options", dns_option),
        END,
};

/* ---- ObjectMeta ---------------------------------------------------------- */

static const PodFieldRule object_meta[] = {
        A("name"),
        A("namespace"),
        A("uid"),
        A("labels"),
        A("annotations"),
        W("generateName", "ignored: a static pod is named by metadata.name"),
        W("selfLink", NO_API_SERVER),
        W("resourceVersion", NO_API_SERVER),
        W("generation", NO_API_SERVER),
        W("creationTimestamp", NO_API_SERVER),
        W("managedFields", NO_API_SERVER),
        W("ownerReferences", "ignored: there is no garbage collector"),
        W("finalizers", "ignored: there is no API server to finalize the pod"),
        R("deletionTimestamp"),
        R("deletionGracePeriodSeconds"),
        END,
};

/* ---- security contexts --------------------------------------------------- */

static const PodFieldRule seccomp_profile[] = {
        A("type"),
        A("localhostProfile"),
        END,
};

/* RuntimeDefault is what containerd applies when the CRI names no profile */
static const PodFieldRule apparmor_profile[] = {
        RI("type", apparmor_default),
        R("localhostProfile"),
        END,
};

static const PodFieldRule selinux_options[] = {
        A("user"), A("role"), A("type"), A("level"), END,
};

static const PodFieldRule capabilities[] = {
        A("add"),
        A("drop"),
        END,
};

static const PodFieldRule pod_security_context[] = {
        AO("seccompProfile", seccomp_profile),
        AO("appArmorProfile", apparmor_profile),
        /* passed to the runtime as kubelet does (containerd labels the
         * sandbox and containers on a host with SELinux, ignores them on
         * one without); no volume is relabelled, as kubelet on such a host */
        AO("seLinuxOptions", selinux_options),
        W("windowsOptions", NOT_LINUX),
        A("runAsUser"),
        A("runAsGroup"),
        A("runAsNonRoot"),
        A("supplementalGroups"),
        RI("supplementalGroupsPolicy", groups_policy_default),
        A("fsGroup"),
        A("fsGroupChangePolicy"),
        A("sysctls"),
        END,
};

static const PodFieldRule security_context[] = {
        AO("seccompProfile", seccomp_profile),
        AO("appArmorProfile", apparmor_profile),
        AO("capabilities", capabilities),
        A("privileged"),
        AO("seLinuxOptions", selinux_options),
        W("windowsOptions", NOT_LINUX),
        A("runAsUser"),
        A("runAsGroup"),
        A("runAsNonRoot"),
        A("readOnlyRootFilesystem"),
        A("allowPrivilegeEscalation"),
        A("procMount"),
        END,
};

/* ---- Container ----------------------------------------------------------- */

static const PodFieldRule container_port[] = {
        A("name"), A("containerPort"), A("hostPort"), A("hostIP"), A("protocol"), END,
};

static const PodFieldRule env_field_selector[] = {
        A("apiVersion"),
        A("fieldPath"),
        END,
};

static const PodFieldRule env_resource_selector[] = {
        A("containerName"),
        A("resource"),
        A("divisor"),
        END,
};

static const PodFieldRule env_key_selector[] = {
        A("name"),
        A("key"),
        A("optional"),
        END,
};

static const PodFieldRule env_var_source[] = {
        AO("fieldRef", env_field_selector),
        AO("resourceFieldRef", env_resource_selector),
        RA("configMapKeyRef", "static pods may not reference configmaps", env_key_selector),
        RA("secretKeyRef", "static pods may not reference secrets", env_key_selector),
        END,
};

static const PodFieldRule env_var[] = {
        A("name"),
        A("value"),
        AO("valueFrom", env_var_source),
        END,
};

static const PodFieldRule env_from_ref[] = {
        A("name"),
        A("optional"),
        END,
};

static const PodFieldRule env_from_source[] = {
        A("prefix"), /* a static pod: no effect, every source is refused */
        RA("configMapRef", "static pods may not reference configmaps", env_from_ref),
        RA("secretRef", "static pods may not reference secrets", env_from_ref),
        END,
};

static const PodFieldRule resource_requirements[] = {
        A("limits"),
        A("requests"),
        R("claims"),
        END,
};

/* spec.resources: pod-level resources (KEP-2837, on by default in 1.34) */
static const PodFieldRule pod_resource_requirements[] = {
        A("limits"),
        A("requests"),
        RW("claims", "Forbidden: claims may not be set for Resources at pod-level"),
        END,
};

/* volumes */
static const PodFieldRule volume_mount[] = {
        A("name"),        A("mountPath"),        A("readOnly"),          A("subPath"),
        A("subPathExpr"), A("mountPropagation"), R("recursiveReadOnly"), END,
};

/* ---- probes and hooks ----------------------------------------------------- */

static const PodFieldRule exec_action[] = {
        A("command"),
        END,
};

static const PodFieldRule http_header[] = {
        A("name"),
        A("value"),
        END,
};

static const PodFieldRule http_get_action[] = {
        A("path"), A("port"), A("host"), A("scheme"), AL("httpHeaders", http_header), END,
};

static const PodFieldRule tcp_socket_action[] = {
        A("port"),
        A("host"),
        END,
};

static const PodFieldRule grpc_action[] = {
        A("port"),
        A("service"),
        END,
};

static const PodFieldRule sleep_action[] = {
        A("seconds"),
        END,
};

static const PodFieldRule probe[] = {
        AO("exec", exec_action),
        AO("httpGet", http_get_action),
        AO("tcpSocket", tcp_socket_action),
        AO("grpc", grpc_action),
        A("initialDelaySeconds"),
        A("timeoutSeconds"),
        A("periodSeconds"),
        A("successThreshold"),
        A("failureThreshold"),
        A("terminationGracePeriodSeconds"),
        END,
};

static const PodFieldRule lifecycle_handler[] = {
        AO("exec", exec_action),
        AO("httpGet", http_get_action),
        RW("tcpSocket", "not supported for lifecycle hooks (kubelet does not run it either)"),
        AO("sleep", sleep_action),
        END,
};

static const PodFieldRule lifecycle[] = {
        AO("postStart", lifecycle_handler),
        AO("preStop", lifecycle_handler),
        END,
};

static const PodFieldRule resize_policy[] = {
        A("resourceName"),
        A("restartPolicy"),
        END,
};

/* a Container's fields; an EphemeralContainer's are the same and targetContainerName */
#define CONTAINER_RULES                                                                                              \
        A("name"), A("image"), A("imagePullPolicy"), A("command"), A("args"), A("workingDir"),                       \
                AL("ports", container_port), AL("env", env_var), AL("envFrom", env_from_source),                     \
                AO("resources", resource_requirements), A("restartPolicy"), AO("securityContext", security_context), \
                AL("resizePolicy", resize_policy), A("terminationMessagePath"), A("terminationMessagePolicy"),       \
                AL("volumeMounts", volume_mount), R("volumeDevices"), AO("livenessProbe", probe),                    \
                AO("readinessProbe", probe), AO("startupProbe", probe), AO("lifecycle", lifecycle), A("stdin"),      \
                A("stdinOnce"), A("tty")

static const PodFieldRule container[] = {
        CONTAINER_RULES,
        END,
};

static const PodFieldRule ephemeral_container[] = {
        CONTAINER_RULES,
        A("targetContainerName"),
        END,
};

/* ---- Volume -------------------------------------------------------------- */

static const PodFieldRule object_field_selector[] = {
        A("apiVersion"),
        A("fieldPath"),
        END,
};

static const PodFieldRule resource_field_selector[] = {
        A("containerName"),
        A("resource"),
        A("divisor"),
        END,
};

static const PodFieldRule downward_api_file[] = {
        A("path"), AO("fieldRef", object_field_selector), AO("resourceFieldRef", resource_field_selector), A("mode"),
        END,
};

static const PodFieldRule downward_api_projection[] = {
        AL("items", downward_api_file),
        END,
};

static const PodFieldRule downward_api_volume[] = {
        AL("items", downward_api_file),
        A("defaultMode"),
        END,
};

static const PodFieldRule host_path_volume[] = {
        A("path"),
        A("type"),
        END,
};

static const PodFieldRule empty_dir_volume[] = {
        A("medium"),
        A("sizeLimit"),
        END,
};

static const PodFieldRule key_to_path[] = {
        A("key"),
        A("path"),
        A("mode"),
        END,
};

static const PodFieldRule key_projection[] = {
        A("name"),
        AL("items", key_to_path),
        A("optional"),
        END,
};

static const PodFieldRule config_map_volume[] = {
        A("name"), AL("items", key_to_path), A("defaultMode"), A("optional"), END,
};

static const PodFieldRule secret_volume[] = {
        A("secretName"), AL("items", key_to_path), A("defaultMode"), A("optional"), END,
};

static const PodFieldRule service_account_token_projection[] = {
        A("audience"),
        A("expirationSeconds"),
        A("path"),
        END,
};

static const PodFieldRule projection[] = {
        AO("downwardAPI", downward_api_projection),
        RA("configMap", "static pods may not reference configmaps (via projected volumes)", key_projection),
        RA("secret", "static pods may not reference secrets (via projected volumes)", key_projection),
        RA("serviceAccountToken", "static pods may not reference serviceaccounts (via projected volumes)",
           service_account_token_projection),
        RW("clusterTrustBundle", "static pods may not use ClusterTrustBundle projected volume sources"),
        END,
};

static const PodFieldRule projected_volume[] = {
        AL("sources", projection),
        A("defaultMode"),
        END,
};

static const PodFieldRule volume[] = {
        A("name"),
        AO("hostPath", host_path_volume),
        AO("emptyDir", empty_dir_volume),
        AO("downwardAPI", downward_api_volume),
        AO("projected", projected_volume),
        RA("configMap", "static pods may not reference configmaps (via configmap volumes)", config_map_volume),
        RA("secret", "static pods may not reference secrets (via secret volumes)", secret_volume),
        RW("persistentVolumeClaim", "static pods may not reference persistentvolumeclaims"),
        RW("ephemeral", "static pods may not reference persistentvolumeclaims (via ephemeral volumes)"),
        RW("csi", "static pods may not reference csidrivers (via CSI volumes)"),
        RW("glusterfs", "static pods may not reference endpoints (via glusterFS volumes)"),
        RW("azureFile", "static pods may not reference secrets (via azureFile volumes)"),
        R("gcePersistentDisk"),
        R("awsElasticBlockStore"),
        R("gitRepo"),
        R("nfs"),
        R("iscsi"),
        R("rbd"),
        R("flexVolume"),
        R("cinder"),
        R("cephfs"),
        R("flocker"),
        R("fc"),
        R("vsphereVolume"),
        R("quobyte"),
        R("azureDisk"),
        R("photonPersistentDisk"),
        R("portworxVolume"),
        R("scaleIO"),
        R("storageos"),
        R("image"),
        END,
};

/* ---- scheduling ------------------------------------------------------------ */

static const PodFieldRule node_selector_requirement[] = {
        A("key"),
        A("operator"),
        A("values"),
        END,
};

static const PodFieldRule node_selector_term[] = {
        AL("matchExpressions", node_selector_requirement),
        AL("matchFields", node_selector_requirement),
        END,
};

static const PodFieldRule node_selector[] = {
        AL("nodeSelectorTerms", node_selector_term),
        END,
};

/* kubelet's admission checks only the required node affinity */
static const PodFieldRule node_affinity[] = {
        AO("requiredDuringSchedulingIgnoredDuringExecution", node_selector),
        W("preferredDuringSchedulingIgnoredDuringExecution", NOT_SCHEDULED),
        END,
};

static const PodFieldRule affinity[] = {
        AO("nodeAffinity", node_affinity),
        W("podAffinity", NOT_SCHEDULED),
        W("podAntiAffinity", NOT_SCHEDULED),
        END,
};

static const PodFieldRule toleration[] = {
        A("key"), A("operator"), A("value"), A("effect"), A("tolerationSeconds"), END,
};

/* kubelet rejects a pod for another OS; cubelet runs Linux pods */
static const PodFieldRule pod_os[] = {
        RI("name", os_linux),
        END,
};

/* ---- PodSpec and Pod ------------------------------------------------------- */

static const PodFieldRule local_object_reference[] = {
        A("name"),
        END,
};

static const PodFieldRule pod_spec[] = {
        AL("containers", container),
        AL("initContainers", container),
        RA("ephemeralContainers", "Forbidden: cannot be set on create", ephemeral_container),
        AL("volumes", volume),
        A("restartPolicy"),
        A("terminationGracePeriodSeconds"),
        A("nodeName"),
        A("nodeSelector"),
        AO("affinity", affinity),
        AL("tolerations", toleration),
        A("priority"),
        A("priorityClassName"),
        A("preemptionPolicy"),
        A("overhead"),
        AO("resources", pod_resource_requirements),
        A("hostNetwork"),
        AO("securityContext", pod_security_context),
        AO("os", pod_os),
        A("dnsPolicy"),
        WI("schedulerName", NOT_SCHEDULED, scheduler_default),
        W("topologySpreadConstraints", NOT_SCHEDULED),
        W("schedulingGates", NOT_SCHEDULED),
        W("serviceAccountName", NO_SA_TOKEN),
        W("serviceAccount", NO_SA_TOKEN),
        W("automountServiceAccountToken", NO_SA_TOKEN),
        A("enableServiceLinks"),
        RA("imagePullSecrets", "static pods may not reference secrets", local_object_reference),
        RW("resourceClaims", "static pods may not use ResourceClaims"),
        A("activeDeadlineSeconds"),
        A("hostPID"),
        A("hostIPC"),
        A("shareProcessNamespace"),
        RI("hostUsers", is_true),
        A("hostname"),
        A("subdomain"),
        A("setHostnameAsFQDN"),
        AL("hostAliases", host_alias),
        AO("dnsConfig", dns_config),
        AL("readinessGates", readiness_gate),
        R("runtimeClassName"),
        END,
};

const PodFieldRule pod_field_table[] = {
        A("apiVersion"),
        A("kind"),
        AO("metadata", object_meta),
        AO("spec", pod_spec),
        W("status", "ignored: cubelet computes the status"),
        END,
};
