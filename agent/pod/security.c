/* SPDX-License-Identifier: Apache-2.0 */
/* The security context's semantics, pure: kubelet's effective security
 * context, no_new_privs, runAsNonRoot against the image user, and the sysctl
 * classification and allow list of kubelet's sysctl admit handler
 * (kubelet 1.28-1.31). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

void pod_security_effective(const Pod *pod, const PodContainer *c, PodSecurity *ret) {
        const PodSecurity *p = &pod->security, *k = &c->security;

        /* the container's own fields, then the pod's where the container has none */
        *ret = *k;
        if (!k->run_as_user_set) {
                ret->run_as_user = p->run_as_user;
                ret->run_as_user_set = p->run_as_user_set;
        }
        if (!k->run_as_group_set) {
                ret->run_as_group = p->run_as_group;
                ret->run_as_group_set = p->run_as_group_set;
        }
        if (!k->run_as_non_root_set) {
                ret->run_as_non_root = p->run_as_non_root;
                ret->run_as_non_root_set = p->run_as_non_root_set;
        }
        /* DetermineEffectiveSecurityContext: the container's seLinuxOptions whole, else the pod's */
        if (!k->selinux.set)
                ret->selinux = p->selinux;
        ret->supplemental_groups = p->supplemental_groups;
        ret->n_supplemental_groups = p->n_supplemental_groups;
        ret->sysctls = p->sysctls;
        ret->n_sysctls = p->n_sysctls;
}

bool pod_security_no_new_privs(const PodSecurity *eff) {
        return eff->allow_privilege_escalation_set && !eff->allow_privilege_escalation;
}

bool pod_security_any_privileged(const Pod *pod) {
        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++) {
                const PodSecurity *s = &pod_container_at(pod, i, NULL)->security;

                if (s->privileged_set && s->privileged)
                        return true;
        }
        return false;
}

void pod_image_user_parse(const char *user, bool *ret_uid_set, int64_t *ret_uid, char *name, size_t name_size) {
        char buf[256];
        const char *colon;
        char *end;
        long long v;

        *ret_uid_set = false;
        *ret_uid = 0;
        if (name_size > 0)
                name[0] = 0;
        if (!user || !*user)
                return;
        colon = strchr(user, ':');
        (void) snprintf(buf, sizeof(buf), "%.*s", colon ? (int) (colon - user) : (int) strlen(user), user);
        errno = 0;
        v = strtoll(buf, &end, 10);
        if (*buf && !*end && errno == 0) {
                *ret_uid_set = true;
                *ret_uid = v;
                return;
        }
        (void) snprintf(name, name_size, "%s", buf);
}

int pod_security_check_non_root(const Pod *pod, const PodContainer *c, bool image_uid_set, int64_t image_uid,
                                const char *image_username, char *msg, size_t msg_size) {
        PodSecurity eff;

        pod_security_effective(pod, c, &eff);
        if (!eff.run_as_non_root_set || !eff.run_as_non_root)
                return 0;
        if (eff.run_as_user_set) {
                if (eff.run_as_user != 0)
                        return 0;
                (void) snprintf(msg, msg_size,
                                "container's runAsUser breaks non-root policy (pod: \"%s_%s(%s)\", container: %s)",
                                pod->name, pod->namespace_, pod->uid ? pod->uid : "", c->name);
                return -EPERM;
        }
        if (image_uid_set && image_uid == 0) {
                (void) snprintf(msg, msg_size,
                                "container has runAsNonRoot and image will run as root (pod: \"%s_%s(%s)\", container: "
                                "%s)",
                                pod->name, pod->namespace_, pod->uid ? pod->uid : "", c->name);
                return -EPERM;
        }
        if (!image_uid_set && image_username && *image_username) {
                (void) snprintf(msg, msg_size,
                                "container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is "
                                "non-root (pod: \"%s_%s(%s)\", container: %s)",
                                image_username, pod->name, pod->namespace_, pod->uid ? pod->uid : "", c->name);
                return -EPERM;
        }
        /* no user at all: kubelet's getImageUser says uid 0 */
        if (!image_uid_set) {
                (void) snprintf(msg, msg_size,
                                "container has runAsNonRoot and image will run as root (pod: \"%s_%s(%s)\", container: "
                                "%s)",
                                pod->name, pod->namespace_, pod->uid ? pod->uid : "", c->name);
                return -EPERM;
        }
        return 0;
}

/* ---- sysctls ------------------------------------------------------------------- */

/* kubelet 1.28-1.31's SafeSysctlAllowlist (the kernel-version gates of the
 * last five are left out: cubelet needs a newer kernel anyway) */
static const char *const safe_sysctls[] = {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        NULL,
};

void pod_sysctl_normalize(const char *name, char *buf, size_t size) {
        size_t sep = strcspn(name, "./");

        (void) snprintf(buf, size, "%s", name);
        if (!name[sep] || name[sep] == '.')
                return;
        for (char *p = buf; *p; p++)
                *p = *p == '.' ? '/' : *p == '/' ? '.' : *p;
}

PodSysctlNs pod_sysctl_namespace(const char *name) {
        static const struct {
                const char *name;
                bool prefix;
                PodSysctlNs ns;
        } table[] = {
                { "kernel.sem", false, POD_SYSCTL_NS_IPC },
                { "kernel.domainname", false, POD_SYSCTL_NS_UTS },
                { "kernel.hostname", false, POD_SYSCTL_NS_UTS },
                { "kernel.shm", true, POD_SYSCTL_NS_IPC },
                { "kernel.msg", true, POD_SYSCTL_NS_IPC },
                { "fs.mqueue.", true, POD_SYSCTL_NS_IPC },
                { "net.", true, POD_SYSCTL_NS_NET },
        };
        char buf[256];
        size_t len;

        pod_sysctl_normalize(name, buf, sizeof(buf));
        len = strlen(buf);
        /* a pattern: the namespace of its prefix */
        if (len > 0 && buf[len - 1] == '*')
                buf[--len] = 0;
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
                if (table[i].prefix ? strncmp(buf, table[i].name, strlen(table[i].name)) == 0
                                    : strcmp(buf, table[i].name) == 0)
                        return table[i].ns;
        return POD_SYSCTL_NS_UNKNOWN;
}

bool pod_sysctl_is_safe(const char *name) {
        char buf[256];

        pod_sysctl_normalize(name, buf, sizeof(buf));
        for (const char *const *s = safe_sysctls; *s; s++)
                if (strcmp(*s, buf) == 0)
                        return true;
        return false;
}

bool pod_sysctl_name_valid(const char *n) {
        size_t len = strlen(n), seg = 0;

        if (len == 0 || len > 253)
                return false;
        for (size_t i = 0; i <= len; i++) {
                char ch = n[i];

                if (ch == '.' || ch == '/' || ch == 0) {
                        if (seg == 0 || n[i - 1] == '_' || n[i - 1] == '-')
                                return false;
                        seg = 0;
                        continue;
                }
                if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
                        return false;
                if (seg == 0 && (ch == '_' || ch == '-'))
                        return false;
                seg++;
        }
        return true;
}

int pod_sysctl_pattern_check(const char *pattern, CubError *err) {
        char buf[256];
        size_t len = strlen(pattern);
        bool prefixed = len > 0 && pattern[len - 1] == '*';

        (void) snprintf(buf, sizeof(buf), "%.*s", (int) (prefixed ? len - 1 : len), pattern);
        /* "net.*": the name before the star ends with a separator */
        if (prefixed && len > 1 && (buf[len - 2] == '.' || buf[len - 2] == '/'))
                buf[len - 2] = 0;
        if (len > 253 || !pod_sysctl_name_valid(buf))
                return cub_err_set(err, EINVAL,
                                   "sysctl \"%s\" must have at most 253 characters and match regex "
                                   "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\*)?$",
                                   pattern);
        if (pod_sysctl_namespace(pattern) == POD_SYSCTL_NS_UNKNOWN) {
                pod_sysctl_normalize(pattern, buf, sizeof(buf));
                len = strlen(buf);
                if (len > 0 && buf[len - 1] == '*')
                        buf[len - 1] = 0;
                return cub_err_set(err, EINVAL, "the sysctl \"%s\" are not known to be namespaced", buf);
        }
        return 0;
}

/* Whether name is allowed by the safe set or one allowedUnsafeSysctls entry. */
static bool allowed(const char *name, const PodStrv *unsafe) {
        if (pod_sysctl_is_safe(name))
                return true;
        for (size_t i = 0; unsafe && i < unsafe->n; i++) {
                char p[256];
                size_t len;

                pod_sysctl_normalize(unsafe->items[i], p, sizeof(p));
                len = strlen(p);
                if (len > 0 && p[len - 1] == '*' ? strncmp(name, p, len - 1) == 0 : strcmp(name, p) == 0) {
                        /* only namespaced entries make it into kubelet's list */
                        if (pod_sysctl_namespace(p) != POD_SYSCTL_NS_UNKNOWN)
                                return true;
                }
        }
        return false;
}

int pod_sysctl_admit(const Pod *pod, const PodStrv *allowed_unsafe, char *msg, size_t msg_size) {
        for (size_t i = 0; i < pod->security.n_sysctls; i++) {
                char name[256];
                PodSysctlNs ns;

                pod_sysctl_normalize(pod->security.sysctls[i].name, name, sizeof(name));
                if (!allowed(name, allowed_unsafe)) {
                        (void) snprintf(msg, msg_size, "forbidden sysctl: \"%s\" not allowlisted", name);
                        return -EPERM;
                }
                ns = pod_sysctl_namespace(name);
                if ((ns == POD_SYSCTL_NS_IPC && pod->host_ipc) || (ns == POD_SYSCTL_NS_NET && pod->host_network)) {
                        (void) snprintf(msg, msg_size, "forbidden sysctl: \"%s\" not allowed with host %s enabled",
                                        name, ns == POD_SYSCTL_NS_IPC ? "ipc" : "net");
                        return -EPERM;
                }
        }
        return 0;
}
