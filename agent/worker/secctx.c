/* SPDX-License-Identifier: Apache-2.0 */
/* The security context's CRI fields that a sync computes from the pod:
 * the seccomp profile (a Localhost one by its absolute path) and the
 * supplemental groups (fsGroup first), as kubelet's kuberuntime. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker-internal.h"

/* A Localhost profile goes to the runtime as its absolute path under the
 * seccomp root, kubelet's <root-dir>/seccomp (kuberuntime's fieldProfile:
 * filepath.Join(profileRootPath, localhostProfile)); the admission checked
 * that the file is there (admit/filters.c, the same root). */
CriSeccompType worker_seccomp_of(const PodSeccomp *c, const PodSeccomp *pod, char *buf, size_t size,
                                 const char **ret_local) {
        const PodSeccomp *s = c && c->type ? c : pod;

        *ret_local = NULL;
        if (!s || !s->type)
                /* kubelet with seccompDefault false (its default): Unconfined, said */
                return CRI_SECCOMP_UNCONFINED;
        if (strcmp(s->type, "RuntimeDefault") == 0)
                return CRI_SECCOMP_RUNTIME_DEFAULT;
        if (strcmp(s->type, "Unconfined") == 0)
                return CRI_SECCOMP_UNCONFINED;
        if (s->localhost_profile && s->localhost_profile[0] != '/')
                (void) snprintf(buf, size, "%s/%s", POD_SECCOMP_ROOT, s->localhost_profile);
        else
                (void) snprintf(buf, size, "%s", s->localhost_profile ? s->localhost_profile : "");
        *ret_local = buf;
        return CRI_SECCOMP_LOCALHOST;
}

/* The supplemental groups kubelet gives a pod's sandbox and containers:
 * fsGroup first, then supplementalGroups (kuberuntime's
 * generateContainerSecurityContext and generatePodSandboxLinuxConfig).
 * *ret NULL when there are none; -ENOMEM. */
int worker_pod_groups(const Pod *pod, int64_t **ret, size_t *ret_n) {
        const PodSecurity *p = &pod->security;
        size_t n = 0;
        int64_t *g;

        *ret = NULL;
        *ret_n = 0;
        if (!pod->fs_group_set && p->n_supplemental_groups == 0)
                return 0;
        g = calloc(p->n_supplemental_groups + 1, sizeof(int64_t));
        if (!g)
                return -ENOMEM;
        if (pod->fs_group_set)
                g[n++] = pod->fs_group;
        for (size_t i = 0; i < p->n_supplemental_groups; i++)
                g[n++] = p->supplemental_groups[i];
        *ret = g;
        *ret_n = n;
        return 0;
}

/* a PodSELinux as the CRI's SELinuxOption (NULL when not set) */
const CriSELinux *worker_selinux_of(const PodSELinux *s, CriSELinux *buf) {
        if (!s->set)
                return NULL;
        *buf = (CriSELinux){ .user = s->user, .role = s->role, .type = s->type, .level = s->level };
        return buf;
}
