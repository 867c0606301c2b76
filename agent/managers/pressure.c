/* SPDX-License-Identifier: Apache-2.0 */
/* Node pressure on the agent's loop: the signals are sampled every
 * evictionSamplePeriod (1 s; a tenth of it while a signal falls towards
 * its threshold fast enough to cross it within two periods) and at once
 * when a PSI trigger fires
 * (/proc/pressure/memory, kubepods/memory.pressure) or kubepods'
 * memory.events changes; eviction/ decides, the agent stops the victim
 * through its pod worker. One pod per round; the next round waits for the
 * victim's containers to be stopped. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../node/derive.h"
#include "../util/cleanup.h"
#include "../util/duration.h"
#include "../util/log.h"
#include "../util/time.h"
#include "managers.h"

#define AGENT_EVICTIONS_KEPT 16

typedef struct Eviction {
        char key[320];
        char uid[128];
        char signal[40];
        char message[EVICT_MESSAGE_MAX];
        int64_t grace;
        uint64_t onset_boot_ms;   /* CLOCK_BOOTTIME: the first sample that met the threshold */
        uint64_t decided_boot_ms; /* the decision */
        uint64_t stopped_boot_ms; /* the victim's containers were stopped (0 while stopping) */
} Eviction;

typedef struct Pressure {
        const LcEnv *env;
        const EvictConfig *cfg; /* the configuration's (agent/pod decoded and finished it) */
        EvictState state;
        EvictObservations obs;
        EvictObservations prev; /* the round before obs: the signals' rate (evict_sample_delay_usec) */
        bool conditions[_EVICT_CONDITION_MAX];
        uint64_t sample_usec;
        const char *imagefs_path; /* /var/lib/containerd, else the state dir */
        char *psi_trigger;
        sd_event_source *timer, *psi_node_src, *psi_pods_src, *memevents_src;
        char evicting[128]; /* UID of the victim being stopped ("" when none) */
        Eviction evictions[AGENT_EVICTIONS_KEPT];
        size_t n_evictions; /* total decisions; the last AGENT_EVICTIONS_KEPT are kept */
        uint64_t rounds;
} Pressure;

/* Whether snprintf's result fits; a longer path is skipped (the cgroup
 * root comes from the configuration). */
static bool path_ok(int n, size_t size) {
        return n >= 0 && (size_t) n < size;
}

static uint64_t now_usec(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

#define DEFAULT_PSI_TRIGGER "some 150000 1000000"
#define IMAGEFS_PATH "/var/lib/containerd"

static const char *const psi_names[_EVICT_PSI_MAX] = { "memory", "cpu", "io" };

static uint64_t boottime_msec(void) {
        return cub_now_usec(CLOCK_BOOTTIME) / CUB_USEC_PER_MSEC;
}

static void observe(Pressure *m) {
        EvictObservations *o = &m->obs;
        const char *cg = m->env->cgroup_root;
        EvictFsStats fs;
        CubError err = {};

        *o = (EvictObservations){ .time_usec = now_usec() };
        if (evict_read_node_memory("/proc", cg, &o->signals[EVICT_SIGNAL_MEMORY_AVAILABLE], &err) < 0)
                cub_err_clear(&err);
        /* cgroupsPerQOS: false: no kubepods, no allocatable signal (kubelet's has none either) */
        if (m->env->cg->per_qos &&
            evict_read_group_memory(cg, cg_kubepods_path(m->env->cg->driver),
                                    (uint64_t) (m->env->cg->kubepods_memory > 0 ? m->env->cg->kubepods_memory : 0),
                                    &o->signals[EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE], &err) < 0)
                cub_err_clear(&err);
        if (evict_read_fs(m->env->state_dir, &fs, &err) >= 0)
                evict_fs_observe(&fs, &o->signals[EVICT_SIGNAL_NODEFS_AVAILABLE],
                                 &o->signals[EVICT_SIGNAL_NODEFS_INODES_FREE]);
        cub_err_clear(&err);
        if (evict_read_fs(m->imagefs_path, &fs, &err) >= 0)
                evict_fs_observe(&fs, &o->signals[EVICT_SIGNAL_IMAGEFS_AVAILABLE],
                                 &o->signals[EVICT_SIGNAL_IMAGEFS_INODES_FREE]);
        cub_err_clear(&err);
        if (evict_read_pids("/proc", &o->signals[EVICT_SIGNAL_PID_AVAILABLE], &err) < 0)
                cub_err_clear(&err);
}

/* Disk use of a pod's logs (bytes allocated and inodes), for the disk
 * signals; the writable layers are containerd's and not counted yet. */
static void du_at(int dirfd, unsigned depth, uint64_t *bytes, uint64_t *inodes) {
        DIR *d;
        struct dirent *de;

        if (depth > 8) {
                close(dirfd);
                return;
        }
        d = fdopendir(dirfd);
        if (!d) {
                close(dirfd);
                return;
        }
        while ((de = readdir(d))) {
                struct stat st;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                *bytes += (uint64_t) st.st_blocks * 512;
                (*inodes)++;
                if (S_ISDIR(st.st_mode)) {
                        int fd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

                        if (fd >= 0)
                                du_at(fd, depth + 1, bytes, inodes);
                }
        }
        closedir(d);
}

static void log_usage(const char *dir, uint64_t *ret_bytes, uint64_t *ret_inodes) {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        *ret_bytes = *ret_inodes = 0;
        if (fd >= 0)
                du_at(fd, 0, ret_bytes, ret_inodes);
}

static bool disk_signal_active(Pressure *m) {
        EvictMet met[EVICT_THRESHOLDS_MAX];
        size_t n = evict_state_met(&m->state, m->cfg, &m->obs, met);

        for (size_t i = 0; i < n; i++)
                if (met[i].active && evict_signal_condition(met[i].threshold->signal) == EVICT_CONDITION_DISK_PRESSURE)
                        return true;
        return false;
}

/* The loop stores the conditions (admission reads them) and admits the
 * evicted pods again once none is left. */
static void conditions_changed(Pressure *m) {
        LcAction act = { .kind = LC_ACTION_CONDITIONS };
        bool changed = false;

        for (int c = 0; c < _EVICT_CONDITION_MAX; c++) {
                EvictConditionInfo ci;

                evict_state_condition(&m->state, (EvictCondition) c, &ci);
                if (ci.status != m->conditions[c]) {
                        cub_log(ci.status ? LOG_WARNING : LOG_INFO, "node condition %s is now %s: %s", ci.name,
                                ci.status ? "True" : "False", ci.message);
                        m->conditions[c] = ci.status;
                        changed = true;
                }
        }
        if (!changed)
                return;
        act.conditions[LC_CONDITION_MEMORY_PRESSURE] = m->conditions[EVICT_CONDITION_MEMORY_PRESSURE];
        act.conditions[LC_CONDITION_DISK_PRESSURE] = m->conditions[EVICT_CONDITION_DISK_PRESSURE];
        act.conditions[LC_CONDITION_PID_PRESSURE] = m->conditions[EVICT_CONDITION_PID_PRESSURE];
        m->env->act(m->env->loop, &act);
}

static void evict(Pressure *m) {
        size_t n_pods;
        const LcPod *const *all = m->env->pods(m->env->loop, &n_pods);
        _cleanup_free_ EvictPod *pods = calloc(n_pods + 1, sizeof(EvictPod));
        LcAction act = { .kind = LC_ACTION_FAIL, .evicted = true };
        _cleanup_free_ EvictContainer *cts = NULL;
        _cleanup_free_ char *keys = NULL;
        size_t n = 0, n_ct = 0, total_ct = 0;
        bool disk = disk_signal_active(m);
        EvictDecision d;
        CubError err = {};
        Eviction *rec;
        EvictMet met[EVICT_THRESHOLDS_MAX];
        size_t n_met;
        char path[1200];
        int r;

        if (!pods)
                return;
        for (size_t i = 0; i < n_pods; i++)
                total_ct += all[i]->spec->pod->n_containers;
        cts = calloc(total_ct + 1, sizeof(EvictContainer));
        keys = calloc(n_pods + 1, 320);
        if (!cts || !keys)
                return;
        for (size_t i = 0; i < n_pods; i++) {
                const LcPod *p = all[i];
                const Pod *pod = p->spec->pod;
                EvictPod *e = &pods[n];

                if (!p->admitted || p->terminal || !p->wanted)
                        continue;
                (void) snprintf(keys + n * 320, 320, "%s/%s", pod->namespace_, pod->name);
                if (agent_evict_pod(pod, keys + n * 320, cts + n_ct, e, NULL) < 0)
                        continue;
                /* cgroupsPerQOS: false: no pod cgroup of cubelet's to read (usage 0:
                 * ranked by QoS and priority; the log files' disk usage still counts) */
                r = m->env->cg->per_qos ? evict_read_cgroup_working_set(m->env->cgroup_root, p->spec->cgroup.path,
                                                                        &e->memory_usage, &err)
                                        : 0;
                /* a pod whose cgroup is not made yet uses nothing (rather than
                 * "no stats", which would rank it first) */
                e->stats = r >= 0 || r == -ENOENT;
                cub_err_clear(&err);
                if (m->env->cg->per_qos &&
                    evict_read_cgroup_pids(m->env->cgroup_root, p->spec->cgroup.path, &e->processes, &err) < 0)
                        cub_err_clear(&err);
                if (disk)
                        log_usage(p->spec->log_dir, &e->ephemeral_usage, &e->inodes_usage);
                for (size_t k = 0; k < pod->n_containers; k++) {
                        const LcContainerStatus *st = &p->statuses[pod->n_init_containers + k];

                        if (!st->id[0] || st->state != LC_CONTAINER_RUNNING || !m->env->cg->per_qos)
                                continue;
                        if (cg_container_path(m->env->cg->driver, p->spec->cgroup.path, st->id, path, sizeof(path),
                                              &err) < 0) {
                                cub_err_clear(&err);
                                continue;
                        }
                        if (evict_read_cgroup_working_set(m->env->cgroup_root, path, &cts[n_ct + k].memory_usage,
                                                          &err) < 0)
                                cub_err_clear(&err);
                }
                n_ct += pod->n_containers;
                n++;
        }
        if (evict_decide(m->cfg, &m->state, &m->obs, pods, n, &d, &err) < 0) {
                cub_log(LOG_ERR, "eviction: %s", err.msg);
                return;
        }
        if (!d.pressure || !d.evict) {
                if (d.pressure && m->rounds % 30 == 0)
                        cub_log(LOG_WARNING, "eviction: the node is under pressure and no pod can be evicted");
                return;
        }
        rec = &m->evictions[m->n_evictions % AGENT_EVICTIONS_KEPT];
        *rec = (Eviction){ .grace = d.grace_period_seconds, .decided_boot_ms = boottime_msec() };
        (void) snprintf(rec->key, sizeof(rec->key), "%s", pods[d.pod].key);
        (void) snprintf(rec->uid, sizeof(rec->uid), "%s", pods[d.pod].uid);
        (void) snprintf(rec->signal, sizeof(rec->signal), "%s", evict_signal_to_string(d.signal));
        (void) snprintf(rec->message, sizeof(rec->message), "%s", d.message);
        n_met = evict_state_met(&m->state, m->cfg, &m->obs, met);
        for (size_t i = 0; i < n_met; i++)
                if (met[i].threshold == &m->cfg->thresholds[d.threshold]) {
                        uint64_t age_ms = (now_usec() - met[i].first_observed_usec) / 1000;

                        rec->onset_boot_ms = rec->decided_boot_ms > age_ms ? rec->decided_boot_ms - age_ms : 0;
                }
        m->n_evictions++;
        cub_log(LOG_WARNING, "evicting pod %s (signal %s, grace %" PRId64 "s): %s", pods[d.pod].key, rec->signal,
                d.grace_period_seconds, d.message);
        /* the loop stops it; pod_stopped() comes back when its containers
         * are stopped (at once when nothing of it ran) */
        (void) snprintf(m->evicting, sizeof(m->evicting), "%s", pods[d.pod].uid);
        (void) snprintf(act.uid, sizeof(act.uid), "%s", pods[d.pod].uid);
        (void) snprintf(act.reason, sizeof(act.reason), "%s", d.reason);
        (void) snprintf(act.resource, sizeof(act.resource), "%s", rec->signal); /* for the metrics */
        (void) snprintf(act.message, sizeof(act.message), "%s", d.message);
        act.grace = d.grace_period_seconds;
        m->env->act(m->env->loop, &act);
}

/* One round: sample, update the conditions, evict at most one pod. */
static void pressure_sync(Pressure *m) {
        m->rounds++;
        m->prev = m->obs;
        observe(m);
        evict_state_update(&m->state, m->cfg, &m->obs, m->obs.time_usec);
        conditions_changed(m);
        if (m->evicting[0])
                return; /* one pod at a time: the next round after the victim stopped */
        if (!evict_state_any_active(&m->state, m->cfg))
                return;
        evict(m);
}

static void pressure_stopped(void *userdata, const char *uid) {
        Pressure *m = userdata;

        for (size_t i = 0; i < AGENT_EVICTIONS_KEPT && i < m->n_evictions; i++)
                if (strcmp(m->evictions[i].uid, uid) == 0 && m->evictions[i].stopped_boot_ms == 0)
                        m->evictions[i].stopped_boot_ms = boottime_msec();
        if (strcmp(m->evicting, uid) == 0) {
                m->evicting[0] = '\0';
                /* re-evaluate at once: the reclaim may not have been enough */
                pressure_sync(m);
        }
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Pressure *m = userdata;

        (void) usec;
        pressure_sync(m);
        /* the period, or a tenth of it while a signal heads for its threshold */
        (void) sd_event_source_set_time(s, now_usec() +
                                                   evict_sample_delay_usec(m->cfg, &m->prev, &m->obs, m->sample_usec));
        return 0;
}

static int on_psi(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void) s;
        (void) fd;
        if (revents & EPOLLERR) {
                /* the group went away (kubepods removed): stop listening */
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                return 0;
        }
        pressure_sync(userdata);
        return 0;
}

static int on_memory_events(sd_event_source *s, const struct inotify_event *ev, void *userdata) {
        (void) s;
        (void) ev;
        pressure_sync(userdata);
        return 0;
}

static void add_psi(Pressure *m, const char *path, sd_event_source **ret) {
        CubError err = {};
        int fd, r;

        fd = evict_psi_trigger_open(path, m->psi_trigger, &err);
        if (fd < 0) {
                cub_log(LOG_WARNING, "PSI trigger: %s; sampling only", err.msg);
                return;
        }
        r = sd_event_add_io(m->env->event, ret, fd, EPOLLPRI, on_psi, m);
        if (r < 0) {
                close(fd);
                cub_log(LOG_WARNING, "PSI trigger '%s': %s", path, strerror(-r));
                return;
        }
        (void) sd_event_source_set_io_fd_own(*ret, true);
        (void) sd_event_source_set_description(*ret, path);
}

static void pressure_free(void *userdata) {
        Pressure *m = userdata;

        if (!m)
                return;
        sd_event_source_disable_unref(m->timer);
        sd_event_source_disable_unref(m->psi_node_src);
        sd_event_source_disable_unref(m->psi_pods_src);
        sd_event_source_disable_unref(m->memevents_src);
        free(m->psi_trigger);
        free(m);
}

static int pressure_new(const LcEnv *env, void **ret, CubError *err) {
        Pressure *m = calloc(1, sizeof(*m));
        const char *trigger = env->kc->psi_memory_trigger ? env->kc->psi_memory_trigger : DEFAULT_PSI_TRIGGER;

        if (!m)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->env = env;
        /* decoded and checked with the configuration (agent/pod) */
        m->cfg = &env->kc->eviction;
        /* cubelet.evictionSamplePeriod: bounded by the configuration's decoder */
        m->sample_usec = (uint64_t) env->kc->eviction_sample_period.usec;
        evict_state_init(&m->state);
        m->psi_trigger = strdup(trigger);
        if (!m->psi_trigger) {
                pressure_free(m);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        /* cubelet.psiMemoryTrigger: checked by the configuration's decoder */
        m->imagefs_path = access(IMAGEFS_PATH, F_OK) == 0 ? IMAGEFS_PATH : env->state_dir;
        *ret = m;
        return 0;
}

static void pressure_attach(void *userdata) {
        Pressure *m = userdata;
        char path[4096];
        int r;

        r = sd_event_add_time_relative(m->env->event, &m->timer, CLOCK_MONOTONIC, m->sample_usec, 0, on_timer, m);
        if (r >= 0) {
                (void) sd_event_source_set_description(m->timer, "eviction-sample");
                (void) sd_event_source_set_enabled(m->timer, SD_EVENT_ON);
        } else
                cub_log(LOG_ERR, "eviction timer: %s", strerror(-r));
        add_psi(m, "/proc/pressure/memory", &m->psi_node_src);
        if (!m->env->cg->per_qos) { /* no kubepods: the node's signals alone */
                pressure_sync(m);
                return;
        }
        if (path_ok(snprintf(path, sizeof(path), "%s/%s/memory.pressure", m->env->cgroup_root,
                             cg_kubepods_path(m->env->cg->driver)),
                    sizeof(path)))
                add_psi(m, path, &m->psi_pods_src);
        r = -ENAMETOOLONG;
        if (path_ok(snprintf(path, sizeof(path), "%s/%s/memory.events", m->env->cgroup_root,
                             cg_kubepods_path(m->env->cg->driver)),
                    sizeof(path)))
                r = sd_event_add_inotify(m->env->event, &m->memevents_src, path, IN_MODIFY, on_memory_events, m);
        if (r < 0)
                cub_log(LOG_WARNING, "inotify on '%s': %s; sampling only", path, strerror(-r));
        else
                (void) sd_event_source_set_description(m->memevents_src, "kubepods-memory.events");
        pressure_sync(m);
}

static json_t *signal_json(const EvictSignalObservation *o) {
        return o->present ? json_pack("{s:I,s:I}", "available", (json_int_t) o->available, "capacity",
                                      (json_int_t) o->capacity)
                          : json_null();
}

static void pressure_node_status(void *userdata, void *json_doc) {
        Pressure *m = userdata;
        json_t *doc = json_doc, *conds = json_array(), *sig = json_object(), *psi = json_object(), *th = json_array(),
               *ev = json_array();
        EvictMet met[EVICT_THRESHOLDS_MAX];
        size_t n_met, first;
        uint64_t now = now_usec();

        for (int c = 0; c < _EVICT_CONDITION_MAX; c++) {
                EvictConditionInfo ci;

                evict_state_condition(&m->state, (EvictCondition) c, &ci);
                json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s}", "type", ci.name, "status",
                                                       ci.status ? "True" : "False", "reason", ci.reason, "message",
                                                       ci.message));
        }
        for (int s = 0; s < _EVICT_SIGNAL_MAX; s++)
                json_object_set_new(sig, evict_signal_to_string((EvictSignal) s), signal_json(&m->obs.signals[s]));
        /* PSI averages are for display only: read here, not on every round */
        for (int i = 0; i < _EVICT_PSI_MAX; i++) {
                EvictPsi node_psi = {}, pods_psi = {};
                const EvictPsi *n = &node_psi, *k = &pods_psi;
                char path[4096];
                CubError err = {};

                if (path_ok(snprintf(path, sizeof(path), "/proc/pressure/%s", psi_names[i]), sizeof(path)))
                        (void) evict_read_psi(path, &node_psi, &err);
                if (path_ok(snprintf(path, sizeof(path), "%s/%s/%s.pressure", m->env->cgroup_root,
                                     cg_kubepods_path(m->env->cg->driver), psi_names[i]),
                            sizeof(path)))
                        (void) evict_read_psi(path, &pods_psi, &err);

                json_object_set_new(psi, psi_names[i],
                                    json_pack("{s:f,s:f,s:f,s:f}", "nodeSomeAvg10", n->some.avg10, "nodeFullAvg10",
                                              n->full.avg10, "kubepodsSomeAvg10", k->some.avg10, "kubepodsFullAvg10",
                                              k->full.avg10));
        }
        for (size_t i = 0; i < m->cfg->n_thresholds; i++) {
                char buf[EVICT_THRESHOLD_STR_MAX];

                json_array_append_new(th, json_string(evict_threshold_format(&m->cfg->thresholds[i], buf)));
        }
        n_met = evict_state_met(&m->state, m->cfg, &m->obs, met);
        first = m->n_evictions > AGENT_EVICTIONS_KEPT ? m->n_evictions - AGENT_EVICTIONS_KEPT : 0;
        for (size_t i = first; i < m->n_evictions; i++) {
                const Eviction *e = &m->evictions[i % AGENT_EVICTIONS_KEPT];

                json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I}", "pod", e->key, "uid", e->uid,
                                                    "signal", e->signal, "message", e->message, "gracePeriod",
                                                    (json_int_t) e->grace, "onsetBootMs", (json_int_t) e->onset_boot_ms,
                                                    "decidedBootMs", (json_int_t) e->decided_boot_ms, "stoppedBootMs",
                                                    (json_int_t) e->stopped_boot_ms));
        }
        json_object_set_new(doc, "conditions", conds);
        json_object_set_new(doc, "eviction",
                            json_pack("{s:s,s:o,s:I,s:o,s:o,s:o,s:I,s:I}", "policy",
                                      evict_policy_to_string(m->cfg->policy), "thresholds", th, "thresholdsMet",
                                      (json_int_t) n_met, "signals", sig, "psi", psi, "decisions", ev, "rounds",
                                      (json_int_t) m->rounds, "sampleAgeMs",
                                      (json_int_t) ((now - m->obs.time_usec) / 1000)));
}

const LcManagerVtable mgr_pressure = {
        .name = "pressure",
        .new = pressure_new,
        .free = pressure_free,
        .attach = pressure_attach,
        .pod_stopped = pressure_stopped,
        .node_status = pressure_node_status,
};
