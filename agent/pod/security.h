/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* agent/pod: the security context (security.c). Included by pod.h; includes pod-model.h alone. */

#include "pod-model.h"

/* ---- Security context (security.c) ----------------------------------------- */

/* Where Localhost seccomp profiles are (kubelet's <root-dir>/seccomp): the
 * admission checks the file, the runtime gets its absolute path. */
#define POD_SECCOMP_ROOT "/var/lib/kubelet/seccomp"

/*
 * kubelet's DetermineEffectiveSecurityContext: the pod's runAsUser,
 * runAsGroup and runAsNonRoot, each overridden by the container's when set,
 * and the container's other fields. The pod's supplementalGroups and sysctls
 * come along. *ret borrows from pod and c: never free what it points to.
 */
void pod_security_effective(const Pod *pod, const PodContainer *c, PodSecurity *ret);
/* kubelet's AddNoNewPrivileges: allowPrivilegeEscalation set to false. */
bool pod_security_no_new_privs(const PodSecurity *eff);
/* Whether any container, init containers included, is privileged (the
 * sandbox is then privileged too). */
bool pod_security_any_privileged(const Pod *pod);

/*
 * kubelet's verifyRunAsNonRoot against the image's user (ImageStatus: uid
 * when numeric, else username; neither = root). 0 when allowed; -EPERM
 * with kubelet's message in msg otherwise.
 */
/* The image config's User as containerd's ImageStatus reports it: a
 * numeric user (before any ":group") as uid, else its name; "" = neither. */
void pod_image_user_parse(const char *user, bool *ret_uid_set, int64_t *ret_uid, char *name, size_t name_size);
#define POD_CONFIG_ERROR_REASON "CreateContainerConfigError"
int pod_security_check_non_root(const Pod *pod, const PodContainer *c, bool image_uid_set, int64_t image_uid,
                                const char *image_username, char *msg, size_t msg_size);

/* sysctl namespaces as kubelet classifies them (GetNamespace) */
typedef enum PodSysctlNs {
        POD_SYSCTL_NS_UNKNOWN, /* node-level: never allowed in a pod */
        POD_SYSCTL_NS_IPC,
        POD_SYSCTL_NS_NET,
        POD_SYSCTL_NS_UTS,
        _POD_SYSCTL_NS_MAX,
        _POD_SYSCTL_NS_INVALID = -22,
} PodSysctlNs;

#define POD_SYSCTL_FORBIDDEN_REASON "SysctlForbidden"
/* "net/ipv4/tcp_syncookies" → "net.ipv4.tcp_syncookies" (NormalizeName). */
void pod_sysctl_normalize(const char *name, char *buf, size_t size);
/* The namespace of a sysctl, or of a "prefix*" pattern. */
PodSysctlNs pod_sysctl_namespace(const char *name_or_pattern);
/* Whether name is in kubelet's safe set (SafeSysctlAllowlist). */
bool pod_sysctl_is_safe(const char *name);
/* An allowedUnsafeSysctls entry: a sysctl or "prefix*", with a namespace;
 * -EINVAL with kubelet's message otherwise. */
int pod_sysctl_pattern_check(const char *pattern, CubError *err);
/* kubelet's sysctl admit handler for one pod: 0 when every sysctl is
 * allowed, -EPERM with msg "forbidden sysctl: ..." otherwise. */
int pod_sysctl_admit(const Pod *pod, const PodStrv *allowed_unsafe, char *msg, size_t msg_size);
