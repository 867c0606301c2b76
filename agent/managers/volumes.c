/* SPDX-License-Identifier: Apache-2.0 */
/* The volume manager: a pod's volumes (agent/volumes/) behind the manager
 * table.
 *
 *  - admit: every volume is set up before any runtime call (hostPath type
 *    checks, emptyDir directories and Memory tmpfs, downwardAPI files,
 *    fsGroup) and every container's mounts are resolved once (subPath);
 *    a failure rejects the pod with reason FailedMount and kubelet's event
 *    text (`MountVolume.SetUp failed for volume "data" : ...`);
 *  - prepare_container: the container's volumeMounts become CRI mounts
 *    (readOnly, propagation, subPath / subPathExpr);
 *  - the volumes go when the pod's containers have stopped (pod_stopped),
 *    or at once when nothing of it runs (pod_removed);
 *  - restore: the volumes of pods that went while cubelet was down are
 *    removed (tmpfs unmounted); a tmpfs already mounted is kept, not
 *    mounted twice;
 *  - local storage: every sample period the emptyDirs with a sizeLimit are
 *    measured; one over its limit evicts the pod at once (grace 0) with
 *    kubelet's message.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/time.h"
#include "../volumes/volumes.h"
#include "managers.h"

typedef struct Volumes {
        const LcEnv *env;
        char *pods_dir;
        VolRoots roots;
        VolNode node;
        uint64_t period_usec;
        sd_event_source *timer;
} Volumes;

static void volumes_free(void *userdata) {
        Volumes *m = userdata;

        if (!m)
                return;
        sd_event_source_disable_unref(m->timer);
        free(m->pods_dir);
        free(m);
}

static int volumes_new(const LcEnv *env, void **ret, CubError *err) {
        Volumes *m = calloc(1, sizeof(*m));
        EvictConfig ec;
        struct statvfs sv;

        if (!m)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->env = env;
        if (asprintf(&m->pods_dir, "%s/pods", env->state_dir) < 0) {
                free(m);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        m->roots = (VolRoots){ .pods_dir = m->pods_dir, .mount_tmpfs = geteuid() == 0 };
        m->node.cpu_milli = env->cg->kubepods_cpu_milli > 0 ? env->cg->kubepods_cpu_milli : env->cg->cpu_capacity_milli;
        m->node.memory = env->cg->kubepods_memory > 0 ? env->cg->kubepods_memory : (int64_t) env->cg->memory_capacity;
        if (statvfs(env->state_dir, &sv) == 0)
                m->node.ephemeral_storage = (int64_t) (sv.f_blocks * sv.f_frsize);
        m->period_usec = 1000000;
        if (mgr_eviction_config(env->kc, &ec, &m->period_usec, err) < 0) {
                cub_err_clear(err);
                m->period_usec = 1000000;
        } else
                evict_config_done(&ec);
        *ret = m;
        return 0;
}

/* the pod cgroup's memory.max (ResourceConfigForPod's memory), 0 = none */
static int64_t pod_memory_limit(const LcPod *p) {
        const char *v = cg_group_get(&p->spec->cgroup, "memory.max");
        char *end;
        long long x;

        if (!v || !*v || strcmp(v, "max") == 0)
                return 0;
        errno = 0;
        x = strtoll(v, &end, 10);
        return errno == 0 && *end == '\0' && x > 0 ? (int64_t) x : 0;
}

/* the container's env with literal values, flat key/value (subPathExpr) */
static char **literal_env(const PodContainer *c) {
        char **l = calloc(2 * c->n_env + 1, sizeof(char *));
        size_t n = 0;

        if (!l)
                return NULL;
        for (size_t i = 0; i < c->n_env; i++) {
                if (!c->env[i].value)
                        continue;
                l[n++] = c->env[i].name;
                l[n++] = c->env[i].value;
        }
        return l;
}

static int container_mounts(Volumes *m, const Pod *pod, const PodContainer *c, VolMount **ret, size_t *ret_n,
                            CubError *err) {
        _cleanup_free_ char **envs = literal_env(c);

        if (!envs)
                return cub_err_set(err, ENOMEM, "out of memory");
        return vol_container_mounts(&m->roots, pod, c, envs, ret, ret_n, err);
}

static void teardown(Volumes *m, const char *uid) {
        CubError err = {};

        if (vol_pod_teardown(&m->roots, uid, &err) < 0)
                cub_log(LOG_ERR, "volumes of pod uid %s: %s", uid, err.msg);
}

static int volumes_admit(void *userdata, const LcPod *p, LcAdmitResult *ret, CubError *err) {
        Volumes *m = userdata;
        const Pod *pod = p->spec->pod;
        CubError e = {};
        int r;

        (void) err;
        if (pod->n_volumes == 0)
                return 0;
        r = vol_pod_setup(&m->roots, pod, pod_memory_limit(p), &m->node, &e);
        for (size_t k = 0; r == 0 && k < pod->n_init_containers + pod->n_containers; k++) {
                VolMount *l = NULL;
                size_t n = 0;

                r = container_mounts(m, pod, pod_container_at(pod, k, NULL), &l, &n, &e);
                vol_mounts_free(l, n);
        }
        if (r < 0) {
                cub_log(LOG_WARNING, "pod %s/%s: %s", pod->namespace_, pod->name, e.msg);
                ret->admit = false;
                (void) snprintf(ret->reason, sizeof(ret->reason), "FailedMount");
                (void) snprintf(ret->message, sizeof(ret->message), "%s", e.msg);
                if (!p->observed)
                        teardown(m, pod->uid);
        }
        return 0;
}

static int volumes_prepare(void *userdata, const LcPod *p, size_t k, LcContainerConfig *cfg, CubError *err) {
        Volumes *m = userdata;
        const Pod *pod = p->spec->pod;
        const PodContainer *c = pod_container_at(pod, k, NULL);
        VolMount *l = NULL;
        WorkerMount *all;
        size_t n = 0;
        int r;

        if (c->n_volume_mounts == 0)
                return 0;
        r = container_mounts(m, pod, c, &l, &n, err);
        if (r < 0)
                return r;
        all = realloc(cfg->mounts, (cfg->n_mounts + n + 1) * sizeof(*all));
        if (!all) {
                vol_mounts_free(l, n);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        cfg->mounts = all;
        for (size_t i = 0; i < n; i++) {
                all[cfg->n_mounts++] = (WorkerMount){ .container_path = TAKE_PTR(l[i].container_path),
                                                      .host_path = TAKE_PTR(l[i].host_path),
                                                      .readonly = l[i].readonly,
                                                      .propagation = (CriMountPropagation) l[i].propagation };
        }
        vol_mounts_free(l, n);
        return 0;
}

/* a pod of this UID still holds its volumes (admitted, not terminal) */
static bool in_use(Volumes *m, const char *uid) {
        size_t n = 0;
        LcPod *const *pods = m->env->pods(m->env->loop, &n);

        for (size_t i = 0; i < n; i++)
                if (strcmp(pods[i]->spec->pod->uid, uid) == 0 && pods[i]->admitted && !pods[i]->terminal)
                        return true;
        return false;
}

static void volumes_removed(void *userdata, const LcPod *p) {
        Volumes *m = userdata;

        /* nothing of it runs: its volumes go now; else once it has stopped */
        if (p->spec->pod->n_volumes > 0 && !p->observed && !in_use(m, p->spec->pod->uid))
                teardown(m, p->spec->pod->uid);
}

static void volumes_stopped(void *userdata, const char *uid) {
        Volumes *m = userdata;

        if (!in_use(m, uid))
                teardown(m, uid);
}

static void volumes_restore(void *userdata) {
        Volumes *m = userdata;
        char **uids = NULL;
        size_t n = 0, np = 0;
        LcPod *const *pods = m->env->pods(m->env->loop, &np);
        CubError err = {};

        if (vol_list_pods(&m->roots, &uids, &n, &err) < 0) {
                cub_log(LOG_ERR, "volumes: %s", err.msg);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                bool known = false;

                for (size_t k = 0; k < np && !known; k++)
                        known = strcmp(pods[k]->spec->pod->uid, uids[i]) == 0;
                if (!known) {
                        cub_log(LOG_INFO, "volumes: pod uid %s is gone, removing its volumes", uids[i]);
                        teardown(m, uids[i]);
                }
                free(uids[i]);
        }
        free(uids);
}

/* ---- local storage: emptyDir sizeLimit --------------------------------------------- */

static bool exempt(const Pod *pod) {
        for (size_t i = 0; i < pod->annotations.n; i++)
                if (strcmp(pod->annotations.keys[i], EVICT_ANNOTATION_PROTECTED) == 0 &&
                    strcmp(pod->annotations.values[i], "true") == 0)
                        return true;
        return pod->priority >= EVICT_CRITICAL_PRIORITY;
}

static void check_pod(Volumes *m, const LcPod *p) {
        const Pod *pod = p->spec->pod;

        for (size_t i = 0; i < pod->n_volumes; i++) {
                const PodVolume *v = &pod->volumes[i];
                char path[PATH_MAX], q[POD_QUANTITY_STR_MAX];
                uint64_t used = 0;
                CubError err = {};
                LcAction a = { .kind = LC_ACTION_FAIL, .grace = 0, .evicted = true };

                if (v->kind != POD_VOLUME_EMPTY_DIR || !v->size_limit_set || pod_quantity_is_zero(v->size_limit))
                        continue;
                if (vol_path(&m->roots, pod->uid, v, path, sizeof(path), &err) < 0 || vol_usage(path, &used, &err) < 0)
                        continue;
                if (used <= (uint64_t) pod_quantity_value(v->size_limit))
                        continue;
                (void) snprintf(a.uid, sizeof(a.uid), "%s", pod->uid);
                (void) snprintf(a.reason, sizeof(a.reason), "Evicted");
                (void) snprintf(a.message, sizeof(a.message),
                                "Usage of EmptyDir volume \"%s\" exceeds the limit \"%s\". ", v->name,
                                pod_quantity_format(v->size_limit, false, q));
                /* kubelet's evictions{eviction_signal} label for it */
                (void) snprintf(a.resource, sizeof(a.resource), "emptydirfs.limit");
                cub_log(LOG_WARNING,
                        "pod %s/%s: emptyDir \"%s\" uses %" PRIu64 " bytes over its sizeLimit %s: evicting it",
                        pod->namespace_, pod->name, v->name, used, q);
                m->env->act(m->env->loop, &a);
                return;
        }
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Volumes *m = userdata;
        size_t n = 0;
        LcPod *const *pods = m->env->pods(m->env->loop, &n);

        for (size_t i = 0; i < n; i++) {
                const LcPod *p = pods[i];

                if (p->admitted && !p->terminal && p->wanted && p->spec->pod->n_volumes > 0 && !exempt(p->spec->pod))
                        check_pod(m, p);
        }
        (void) sd_event_source_set_time(s, usec + m->period_usec);
        return 0;
}

static void volumes_attach(void *userdata) {
        Volumes *m = userdata;
        uint64_t now = 0;

        (void) sd_event_now(m->env->event, CLOCK_MONOTONIC, &now);
        if (sd_event_add_time(m->env->event, &m->timer, CLOCK_MONOTONIC, now + m->period_usec, 0, on_timer, m) < 0)
                cub_log(LOG_ERR, "volume manager: cannot start the emptyDir usage timer");
        else
                (void) sd_event_source_set_enabled(m->timer, SD_EVENT_ON);
}

const LcManagerVtable mgr_volumes = {
        .name = "volumes",
        .new = volumes_new,
        .free = volumes_free,
        .attach = volumes_attach,
        .admit = volumes_admit,
        .prepare_container = volumes_prepare,
        .pod_removed = volumes_removed,
        .pod_stopped = volumes_stopped,
        .restore = volumes_restore,
};
