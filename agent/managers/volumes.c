/* SPDX-License-Identifier: Apache-2.0 */
/* The volume manager: a pod's volumes (agent/volumes/) behind the manager
 * table.
 *
 *  - admit: every volume is set up before any runtime call (hostPath type
 *    checks, emptyDir directories and Memory tmpfs, downwardAPI files,
 *    fsGroup); a failure rejects the pod with reason FailedMount and
 *    kubelet's event text (`MountVolume.SetUp failed for volume "data" : ...`);
 *  - prepare_container: the container's volumeMounts become CRI mounts
 *    (readOnly, propagation, subPath / subPathExpr); a subPath that cannot
 *    be had fails that container's sync (CreateContainerConfigError);
 *  - the volumes go when the pod's containers have stopped (pod_stopped),
 *    or at once when nothing of it runs (pod_removed);
 *  - restore: the volumes of pods that went while cubelet was down are
 *    removed (tmpfs unmounted); a tmpfs already mounted is kept, not
 *    mounted twice;
 *  - local storage: every sample period the emptyDirs with a sizeLimit are
 *    measured; one over its limit evicts the pod at once (grace 0) with
 *    kubelet's message;
 *  - ephemeral-storage limits: every sample period a pass on a thread of its
 *    own (CRI ListContainers / ListContainerStats and du are blocking)
 *    measures the pods with a limit: each container's writable layer and
 *    log directory, the emptyDirs on disk. The next tick, on the loop,
 *    joins it and decides (vol_storage_check); a pod over its limit is
 *    evicted at once (grace 0) with kubelet's message. A pass still running
 *    skips the tick.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../logs/logs.h"
#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/time.h"
#include "../volumes/volumes.h"
#include "../worker/worker.h"
#include "managers.h"

/* one pod of an ephemeral-storage pass: what to measure (copied on the
 * loop) and what was measured (on the thread) */
typedef struct EphPod {
        char *uid;
        char *log_dir;  /* <podLogsDir>/<ns>_<name>_<uid> */
        char **volumes; /* emptyDirs on disk, NULL-terminated */
        char **names;   /* every container, init ones first, NULL-terminated */
        size_t n_names;
        VolContainerUsage *usage; /* n_names, names borrowed */
        uint64_t volumes_used;
        bool measured;
} EphPod;

typedef struct EphPass {
        CriClient *cri;
        EphPod *pods;
        size_t n;
} EphPass;

typedef struct Volumes {
        const LcEnv *env;
        char *pods_dir;
        VolRoots roots;
        VolNode node;
        uint64_t period_usec;
        sd_event_source *timer;
        char *logs_root;
        EphPass *pass;
        pthread_t thread;
        bool running; /* __atomic: a pass is in flight */
        bool joinable;
        uint64_t api_generation; /* of the API server's files last written */
} Volumes;

static void eph_pass_free(EphPass *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n; i++) {
                EphPod *e = &p->pods[i];

                free(e->uid);
                free(e->log_dir);
                for (size_t k = 0; e->volumes && e->volumes[k]; k++)
                        free(e->volumes[k]);
                free(e->volumes);
                for (size_t k = 0; k < e->n_names; k++)
                        free(e->names[k]);
                free(e->names);
                free(e->usage);
        }
        free(p->pods);
        free(p);
}

static void volumes_free(void *userdata) {
        Volumes *m = userdata;

        if (!m)
                return;
        sd_event_source_disable_unref(m->timer);
        if (m->joinable)
                (void) pthread_join(m->thread, NULL);
        eph_pass_free(m->pass);
        free(m->logs_root);
        free(m->pods_dir);
        free(m);
}

static int volumes_new(const LcEnv *env, void **ret, CubError *err) {
        Volumes *m = calloc(1, sizeof(*m));
        struct statvfs sv;

        if (!m)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->env = env;
        if (asprintf(&m->pods_dir, "%s/pods", env->state_dir) < 0) {
                free(m);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        m->logs_root =
                strdup(env->kc->pod_logs_dir && *env->kc->pod_logs_dir ? env->kc->pod_logs_dir : LOGS_DEFAULT_ROOT);
        if (!m->logs_root) {
                free(m->pods_dir);
                free(m);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        m->roots = (VolRoots){ .pods_dir = m->pods_dir, .mount_tmpfs = geteuid() == 0 };
        m->node.api_files = env->api_files;
        m->node.api_userdata = env->loop;
        m->node.cpu_milli = env->cg->kubepods_cpu_milli > 0 ? env->cg->kubepods_cpu_milli : env->cg->cpu_capacity_milli;
        m->node.memory = env->cg->kubepods_memory > 0 ? env->cg->kubepods_memory : (int64_t) env->cg->memory_capacity;
        if (statvfs(env->state_dir, &sv) == 0)
                m->node.ephemeral_storage = (int64_t) (sv.f_blocks * sv.f_frsize);
        m->period_usec = (uint64_t) env->kc->eviction_sample_period.usec;
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

static void pod_env_strvp(char ***l) {
        pod_env_strv_free(*l);
}

static int container_mounts(Volumes *m, const Pod *pod, const PodContainer *c, VolMount **ret, size_t *ret_n,
                            CubError *err) {
        _cleanup_(pod_env_strvp) char **envs = pod_env_subpath(pod, c);

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
        /* the containers' mounts (subPath, subPathExpr) are resolved when each is
         * created (volumes_prepare): a failure is that container's
         * CreateContainerConfigError, as kubelet's makeMounts */
        r = vol_pod_setup(&m->roots, pod, pod_memory_limit(p), &m->node, &e);
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
        const LcPod *const *pods = m->env->pods(m->env->loop, &n);

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
        const LcPod *const *pods = m->env->pods(m->env->loop, &np);
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

/* true when it evicted the pod */
static bool check_pod(Volumes *m, const LcPod *p) {
        const Pod *pod = p->spec->pod;

        for (size_t i = 0; i < pod->n_volumes; i++) {
                const PodVolume *v = &pod->volumes[i];
                char path[PATH_MAX], q[CUB_QUANTITY_STR_MAX];
                uint64_t used = 0;
                CubError err = {};
                LcAction a = { .kind = LC_ACTION_FAIL, .grace = 0, .evicted = true };

                if (v->kind != POD_VOLUME_EMPTY_DIR || !v->size_limit_set || cub_quantity_is_zero(v->size_limit))
                        continue;
                if (vol_path(&m->roots, pod->uid, v, path, sizeof(path), &err) < 0 || vol_usage(path, &used, &err) < 0)
                        continue;
                if (used <= (uint64_t) cub_quantity_value(v->size_limit))
                        continue;
                (void) snprintf(a.uid, sizeof(a.uid), "%s", pod->uid);
                (void) snprintf(a.reason, sizeof(a.reason), "Evicted");
                (void) snprintf(a.message, sizeof(a.message),
                                "Usage of EmptyDir volume \"%s\" exceeds the limit \"%s\". ", v->name,
                                cub_quantity_format(v->size_limit, false, q));
                /* kubelet's evictions{eviction_signal} label for it */
                (void) snprintf(a.resource, sizeof(a.resource), "emptydirfs.limit");
                cub_log(LOG_WARNING,
                        "pod %s/%s: emptyDir \"%s\" uses %" PRIu64 " bytes over its sizeLimit %s: evicting it",
                        pod->namespace_, pod->name, v->name, used, q);
                m->env->act(m->env->loop, &a);
                return true;
        }
        return false;
}

/* ---- local storage: ephemeral-storage limits ---------------------------------------- */

static bool measure_pod(const Pod *pod) {
        return !exempt(pod) && vol_storage_limited(pod);
}

static char **strv_new(size_t n) {
        return calloc(n + 1, sizeof(char *));
}

/* on the loop: what the pass measures for p */
static int eph_pod_init(Volumes *m, const Pod *pod, EphPod *e) {
        size_t nv = 0, nc = pod->n_init_containers + pod->n_containers;

        e->uid = strdup(pod->uid);
        e->log_dir = logs_pod_dir(m->logs_root, pod->namespace_, pod->name, pod->uid);
        e->volumes = strv_new(pod->n_volumes);
        e->names = strv_new(nc);
        e->usage = calloc(nc + 1, sizeof(VolContainerUsage));
        if (!e->uid || !e->log_dir || !e->volumes || !e->names || !e->usage)
                return -ENOMEM;
        for (size_t i = 0; i < pod->n_volumes; i++) {
                const PodVolume *v = &pod->volumes[i];
                char path[PATH_MAX];
                CubError err = {};

                /* kubelet's local ephemeral volumes: an emptyDir not in memory */
                if (v->kind != POD_VOLUME_EMPTY_DIR || (v->medium && strcmp(v->medium, "Memory") == 0) ||
                    vol_path(&m->roots, pod->uid, v, path, sizeof(path), &err) < 0)
                        continue;
                if (!(e->volumes[nv++] = strdup(path)))
                        return -ENOMEM;
        }
        for (size_t k = 0; k < nc; k++) {
                if (!(e->names[k] = strdup(pod_container_at(pod, k, NULL)->name)))
                        return -ENOMEM;
                e->n_names++;
                e->usage[k].name = e->names[k];
        }
        return 0;
}

/* kubelet's removeTerminatedContainers: of the containers of one name, the
 * running one, else the latest */
static const CriContainer *pick(const CriContainer *ct, size_t n, const char *uid, const char *name) {
        const CriContainer *best = NULL;

        for (size_t i = 0; i < n; i++) {
                const char *u = cri_kv_get(ct[i].labels, WORKER_LABEL_UID);
                bool run = ct[i].state == CRI_CONTAINER_RUNNING;

                if (!u || strcmp(u, uid) != 0 || strcmp(ct[i].name, name) != 0)
                        continue;
                if (!best || run > (best->state == CRI_CONTAINER_RUNNING) ||
                    (run == (best->state == CRI_CONTAINER_RUNNING) && ct[i].created_at > best->created_at))
                        best = &ct[i];
        }
        return best;
}

static uint64_t du(const char *dir) {
        uint64_t used = 0;
        CubError err = {};

        return vol_usage(dir, &used, &err) < 0 ? 0 : used;
}

static void *eph_thread(void *userdata) {
        static const char *const selector[] = { WORKER_LABEL_MANAGED, "true", NULL };
        Volumes *m = userdata;
        EphPass *pass = m->pass;
        CriContainer *ct = NULL;
        CriContainerStats *st = NULL;
        size_t nct = 0, nst = 0;
        CubError err = {};

        if (cri_list_containers(pass->cri, NULL, selector, &ct, &nct, &err) < 0 ||
            cri_list_container_stats(pass->cri, &st, &nst, &err) < 0) {
                cub_log(LOG_WARNING, "ephemeral-storage limits: %s", err.msg);
                goto out;
        }
        for (size_t i = 0; i < pass->n; i++) {
                EphPod *e = &pass->pods[i];

                for (size_t k = 0; e->volumes[k]; k++)
                        e->volumes_used += du(e->volumes[k]);
                for (size_t k = 0; k < e->n_names; k++) {
                        const CriContainer *c = pick(ct, nct, e->uid, e->names[k]);
                        _cleanup_free_ char *dir = NULL;

                        for (size_t j = 0; c && j < nst; j++)
                                if (strcmp(st[j].id, c->id) == 0 && st[j].writable_layer_set)
                                        e->usage[k].rootfs = st[j].writable_layer_used_bytes;
                        if (asprintf(&dir, "%s/%s", e->log_dir, e->names[k]) >= 0)
                                e->usage[k].logs = du(dir);
                }
                e->measured = true;
        }
out:
        cri_containers_free(ct, nct);
        cri_container_stats_free(st, nst);
        __atomic_store_n(&m->running, false, __ATOMIC_SEQ_CST);
        return NULL;
}

/* on the loop: the last pass's decisions (pods evicted this tick already,
 * acted[], are left alone) */
static void eph_apply(Volumes *m, const LcPod *const *pods, size_t n, const bool *acted) {
        for (size_t i = 0; i < m->pass->n; i++) {
                const EphPod *e = &m->pass->pods[i];
                VolPodUsage u = { .containers = e->usage, .n_containers = e->n_names, .volumes = e->volumes_used };
                VolStorageVerdict v;
                CubError err = {};

                if (!e->measured)
                        continue;
                for (size_t k = 0; k < n; k++) {
                        const LcPod *p = pods[k];
                        const Pod *pod = p->spec->pod;
                        LcAction a = { .kind = LC_ACTION_FAIL, .grace = 0, .evicted = true };

                        if (strcmp(pod->uid, e->uid) != 0 || acted[k] || !p->admitted || p->terminal || !p->wanted ||
                            !measure_pod(pod))
                                continue;
                        if (vol_storage_check(pod, &u, &v, &err) <= 0)
                                break;
                        (void) snprintf(a.uid, sizeof(a.uid), "%s", pod->uid);
                        (void) snprintf(a.reason, sizeof(a.reason), "Evicted");
                        (void) snprintf(a.message, sizeof(a.message), "%s", v.message);
                        (void) snprintf(a.resource, sizeof(a.resource), "%s", v.signal);
                        cub_log(LOG_WARNING, "pod %s/%s: uses %" PRIu64 " bytes of ephemeral storage: %s: evicting it",
                                pod->namespace_, pod->name, v.used, v.message);
                        m->env->act(m->env->loop, &a);
                        break;
                }
        }
}

/* on the loop: a new pass over the pods with an ephemeral-storage limit */
static void eph_start(Volumes *m, const LcPod *const *pods, size_t n) {
        EphPass *pass;

        if (!m->env->cri)
                return;
        pass = calloc(1, sizeof(*pass));
        if (!pass || !(pass->pods = calloc(n + 1, sizeof(EphPod)))) {
                eph_pass_free(pass);
                return;
        }
        pass->cri = m->env->cri;
        for (size_t i = 0; i < n; i++) {
                const LcPod *p = pods[i];

                if (!p->admitted || p->terminal || !p->wanted || !measure_pod(p->spec->pod))
                        continue;
                if (eph_pod_init(m, p->spec->pod, &pass->pods[pass->n++]) < 0) {
                        eph_pass_free(pass);
                        return;
                }
        }
        if (pass->n == 0) {
                eph_pass_free(pass);
                return;
        }
        m->pass = pass;
        __atomic_store_n(&m->running, true, __ATOMIC_SEQ_CST);
        if (pthread_create(&m->thread, NULL, eph_thread, m) != 0) {
                __atomic_store_n(&m->running, false, __ATOMIC_SEQ_CST);
                m->pass = NULL;
                eph_pass_free(pass);
                return;
        }
        (void) pthread_setname_np(m->thread, "cub-ephemeral");
        m->joinable = true;
}

/* the files of the API server (tokens, ConfigMaps) or pods' labels or
 * annotations changed: the running pods' downwardAPI and projected volumes
 * written again (kubelet's periodic remount of them; an unchanged payload
 * is kept) */
static void refresh_api(Volumes *m, const LcPod *const *pods, size_t n) {
        uint64_t gen = m->env->api_generation ? m->env->api_generation(m->env->loop) : 0;

        if (gen == m->api_generation)
                return;
        m->api_generation = gen;
        for (size_t i = 0; i < n; i++) {
                const LcPod *p = pods[i];
                CubError e = {};

                if (p->admitted && !p->terminal && p->wanted && pod_has_items(p->spec->pod) &&
                    vol_pod_refresh_api(&m->roots, p->spec->pod, &m->node, &e) < 0)
                        cub_log(LOG_WARNING, "pod %s/%s: %s", p->spec->pod->namespace_, p->spec->pod->name, e.msg);
        }
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Volumes *m = userdata;
        size_t n = 0;
        const LcPod *const *pods = m->env->pods(m->env->loop, &n);
        _cleanup_free_ bool *acted = calloc(n + 1, sizeof(bool));

        (void) sd_event_source_set_time(s, usec + m->period_usec);
        if (!acted)
                return 0;
        for (size_t i = 0; i < n; i++) {
                const LcPod *p = pods[i];

                if (p->admitted && !p->terminal && p->wanted && p->spec->pod->n_volumes > 0 && !exempt(p->spec->pod))
                        acted[i] = check_pod(m, p);
        }
        refresh_api(m, pods, n);
        if (__atomic_load_n(&m->running, __ATOMIC_SEQ_CST))
                return 0;
        if (m->joinable) {
                (void) pthread_join(m->thread, NULL);
                m->joinable = false;
                eph_apply(m, pods, n, acted);
                eph_pass_free(m->pass);
                m->pass = NULL;
        }
        eph_start(m, pods, n);
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
