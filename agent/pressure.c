/* SPDX-License-Identifier: Apache-2.0 */
/* Node pressure on the agent's loop: the signals are sampled every
 * evictionSamplePeriod (1 s) and at once when a PSI trigger fires
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

#include "agent-internal.h"
#include "derive.h"
#include "util/cleanup.h"
#include "util/log.h"

#define DEFAULT_PSI_TRIGGER "some 150000 1000000"
#define IMAGEFS_PATH "/var/lib/containerd"

static const char *const psi_names[_EVICT_PSI_MAX] = { "memory", "cpu", "io" };

uint64_t agent_boottime_msec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000ULL + (uint64_t) ts.tv_nsec / 1000000ULL;
}

uint64_t agent_pressure_hard_memory(Agent *a, uint64_t capacity) {
        for (size_t i = 0; i < a->evict_cfg.n_thresholds; i++) {
                const EvictThreshold *t = &a->evict_cfg.thresholds[i];

                if (!t->soft && t->signal == EVICT_SIGNAL_MEMORY_AVAILABLE)
                        return evict_value_quantity(&t->value, capacity);
        }
        return 0;
}

static int build_config(Agent *a, CubError *err) {
        const PodKubeletConfig *kc = a->kc;
        int r = 0;

        evict_config_init(&a->evict_cfg);
        for (size_t i = 0; r >= 0 && i < kc->eviction_hard.n; i++)
                r = evict_config_add_hard(&a->evict_cfg, kc->eviction_hard.keys[i], kc->eviction_hard.values[i], err);
        if (r >= 0 && kc->eviction_hard_set)
                evict_config_set_hard_given(&a->evict_cfg);
        for (size_t i = 0; r >= 0 && i < kc->eviction_soft.n; i++)
                r = evict_config_add_soft(&a->evict_cfg, kc->eviction_soft.keys[i], kc->eviction_soft.values[i], err);
        for (size_t i = 0; r >= 0 && i < kc->eviction_soft_grace_period.n; i++)
                r = evict_config_set_soft_grace_period(&a->evict_cfg, kc->eviction_soft_grace_period.keys[i],
                                                       kc->eviction_soft_grace_period.values[i], err);
        for (size_t i = 0; r >= 0 && i < kc->eviction_minimum_reclaim.n; i++)
                r = evict_config_set_min_reclaim(&a->evict_cfg, kc->eviction_minimum_reclaim.keys[i],
                                                 kc->eviction_minimum_reclaim.values[i], err);
        if (r >= 0)
                r = evict_config_set_max_pod_grace_period(&a->evict_cfg, kc->eviction_max_pod_grace_period, err);
        if (r >= 0 && kc->eviction_pressure_transition_period)
                r = evict_config_set_transition_period(&a->evict_cfg, kc->eviction_pressure_transition_period, err);
        if (r >= 0 && kc->eviction_policy)
                r = evict_config_set_policy(&a->evict_cfg, kc->eviction_policy, err);
        if (r >= 0)
                r = evict_config_finish(&a->evict_cfg, /* enforce_pods_allocatable= */ true, err);
        if (r >= 0 && kc->eviction_sample_period) {
                r = evict_duration_parse(kc->eviction_sample_period, &a->evict_sample_usec, err);
                if (r >= 0 && a->evict_sample_usec < 10000)
                        r = cub_err_set(err, EINVAL, "cubelet.evictionSamplePeriod '%s': at least 10ms",
                                        kc->eviction_sample_period);
                if (r < 0)
                        r = cub_err_wrap(err, "cubelet.evictionSamplePeriod");
        }
        return r;
}

static void observe(Agent *a) {
        EvictObservations *o = &a->evict_obs;
        const char *cg = a->opt.cgroup_root;
        EvictFsStats fs;
        CubError err = {};

        *o = (EvictObservations){ .time_usec = agent_now_usec() };
        if (evict_read_node_memory("/proc", cg, &o->signals[EVICT_SIGNAL_MEMORY_AVAILABLE], &err) < 0)
                cub_err_clear(&err);
        if (evict_read_group_memory(cg, "kubepods", (uint64_t) (a->cg.kubepods_memory > 0 ? a->cg.kubepods_memory : 0),
                                    &o->signals[EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE], &err) < 0)
                cub_err_clear(&err);
        if (evict_read_fs(a->opt.state_dir, &fs, &err) >= 0)
                evict_fs_observe(&fs, &o->signals[EVICT_SIGNAL_NODEFS_AVAILABLE],
                                 &o->signals[EVICT_SIGNAL_NODEFS_INODES_FREE]);
        cub_err_clear(&err);
        if (evict_read_fs(a->imagefs_path, &fs, &err) >= 0)
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

static bool disk_signal_active(Agent *a) {
        EvictMet met[EVICT_THRESHOLDS_MAX];
        size_t n = evict_state_met(&a->evict_state, &a->evict_cfg, &a->evict_obs, met);

        for (size_t i = 0; i < n; i++)
                if (met[i].active && evict_signal_condition(met[i].threshold->signal) == EVICT_CONDITION_DISK_PRESSURE)
                        return true;
        return false;
}

static void readmit_evicted(Agent *a) {
        uint64_t now = agent_now_usec();
        bool probed = false;

        for (size_t i = 0; i < a->n_pods; i++) {
                AgentPod *p = a->pods[i];

                if (!p->evicted || !p->wanted || p->busy || strcmp(a->evicting, p->spec->pod->uid) == 0)
                        continue;
                cub_log(LOG_INFO, "pod %s/%s: the pressure is gone, admitting it again", p->spec->pod->namespace_,
                        p->spec->pod->name);
                agent_pod_reset(p);
                if (!probed) {
                        agent_admission_probe_host(a);
                        probed = true;
                }
                if (agent_admission_admit(a, p))
                        agent_submit_sync(a, p, now);
        }
}

static void conditions_changed(Agent *a) {
        bool any = false, changed = false;

        for (int c = 0; c < _EVICT_CONDITION_MAX; c++) {
                EvictConditionInfo ci;

                evict_state_condition(&a->evict_state, (EvictCondition) c, &ci);
                if (ci.status != a->evict_conditions[c]) {
                        cub_log(ci.status ? LOG_WARNING : LOG_INFO, "node condition %s is now %s: %s", ci.name,
                                ci.status ? "True" : "False", ci.message);
                        a->evict_conditions[c] = ci.status;
                        changed = true;
                }
                any = any || ci.status;
        }
        if (changed && !any)
                readmit_evicted(a);
}

static void evict(Agent *a) {
        _cleanup_free_ EvictPod *pods = calloc(a->n_pods + 1, sizeof(EvictPod));
        _cleanup_free_ AgentPod **owners = calloc(a->n_pods + 1, sizeof(AgentPod *));
        _cleanup_free_ EvictContainer *cts = NULL;
        _cleanup_free_ char *keys = NULL;
        size_t n = 0, n_ct = 0, total_ct = 0;
        bool disk = disk_signal_active(a);
        EvictDecision d;
        CubError err = {};
        AgentEviction *rec;
        EvictMet met[EVICT_THRESHOLDS_MAX];
        size_t n_met;
        char path[1200];
        int r;

        if (!pods || !owners)
                return;
        for (size_t i = 0; i < a->n_pods; i++)
                total_ct += a->pods[i]->spec->pod->n_containers;
        cts = calloc(total_ct + 1, sizeof(EvictContainer));
        keys = calloc(a->n_pods + 1, 320);
        if (!cts || !keys)
                return;
        for (size_t i = 0; i < a->n_pods; i++) {
                AgentPod *p = a->pods[i];
                const Pod *pod = p->spec->pod;
                EvictPod *e = &pods[n];

                if (!p->admitted || p->terminal || !p->wanted)
                        continue;
                (void) snprintf(keys + n * 320, 320, "%s/%s", pod->namespace_, pod->name);
                if (agent_evict_pod(pod, keys + n * 320, cts + n_ct, e, NULL) < 0)
                        continue;
                r = evict_read_cgroup_working_set(a->opt.cgroup_root, p->spec->cgroup.path, &e->memory_usage, &err);
                /* a pod whose cgroup is not made yet uses nothing (rather than
                 * "no stats", which would rank it first) */
                e->stats = r >= 0 || r == -ENOENT;
                cub_err_clear(&err);
                if (evict_read_cgroup_pids(a->opt.cgroup_root, p->spec->cgroup.path, &e->processes, &err) < 0)
                        cub_err_clear(&err);
                if (disk)
                        log_usage(p->spec->log_dir, &e->ephemeral_usage, &e->inodes_usage);
                for (size_t k = 0; k < pod->n_containers; k++) {
                        const AgentContainerStatus *st = &p->statuses[pod->n_init_containers + k];

                        if (!st->id[0] || strcmp(st->state, "Running") != 0)
                                continue;
                        (void) snprintf(path, sizeof(path), "%s/%s", p->spec->cgroup.path, st->id);
                        if (evict_read_cgroup_working_set(a->opt.cgroup_root, path, &cts[n_ct + k].memory_usage, &err) <
                            0)
                                cub_err_clear(&err);
                }
                n_ct += pod->n_containers;
                owners[n++] = p;
        }
        if (evict_decide(&a->evict_cfg, &a->evict_state, &a->evict_obs, pods, n, &d, &err) < 0) {
                cub_log(LOG_ERR, "eviction: %s", err.msg);
                return;
        }
        if (!d.pressure || !d.evict) {
                if (d.pressure && a->evict_rounds % 30 == 0)
                        cub_log(LOG_WARNING, "eviction: the node is under pressure and no pod can be evicted");
                return;
        }
        rec = &a->evictions[a->n_evictions % AGENT_EVICTIONS_KEPT];
        *rec = (AgentEviction){ .grace = d.grace_period_seconds, .decided_boot_ms = agent_boottime_msec() };
        (void) snprintf(rec->key, sizeof(rec->key), "%s", pods[d.pod].key);
        (void) snprintf(rec->uid, sizeof(rec->uid), "%s", pods[d.pod].uid);
        (void) snprintf(rec->signal, sizeof(rec->signal), "%s", evict_signal_to_string(d.signal));
        (void) snprintf(rec->message, sizeof(rec->message), "%s", d.message);
        n_met = evict_state_met(&a->evict_state, &a->evict_cfg, &a->evict_obs, met);
        for (size_t i = 0; i < n_met; i++)
                if (met[i].threshold == &a->evict_cfg.thresholds[d.threshold]) {
                        uint64_t age_ms = (agent_now_usec() - met[i].first_observed_usec) / 1000;

                        rec->onset_boot_ms = rec->decided_boot_ms > age_ms ? rec->decided_boot_ms - age_ms : 0;
                }
        a->n_evictions++;
        cub_log(LOG_WARNING, "evicting pod %s (signal %s, grace %" PRId64 "s): %s", pods[d.pod].key, rec->signal,
                d.grace_period_seconds, d.message);
        owners[d.pod]->evicted = true;
        if (agent_pod_fail(a, owners[d.pod], d.reason, d.message, d.grace_period_seconds))
                (void) snprintf(a->evicting, sizeof(a->evicting), "%s", pods[d.pod].uid);
        else
                rec->stopped_boot_ms = agent_boottime_msec(); /* nothing of it ran */
}

/* One round: sample, update the conditions, evict at most one pod. */
static void pressure_sync(Agent *a) {
        a->evict_rounds++;
        observe(a);
        evict_state_update(&a->evict_state, &a->evict_cfg, &a->evict_obs, a->evict_obs.time_usec);
        conditions_changed(a);
        if (a->evicting[0])
                return; /* one pod at a time: the next round after the victim stopped */
        if (!evict_state_any_active(&a->evict_state, &a->evict_cfg))
                return;
        evict(a);
}

void agent_pressure_stopped(Agent *a, const char *uid) {
        for (size_t i = 0; i < AGENT_EVICTIONS_KEPT && i < a->n_evictions; i++)
                if (strcmp(a->evictions[i].uid, uid) == 0 && a->evictions[i].stopped_boot_ms == 0)
                        a->evictions[i].stopped_boot_ms = agent_boottime_msec();
        if (strcmp(a->evicting, uid) == 0) {
                a->evicting[0] = '\0';
                /* re-evaluate at once: the reclaim may not have been enough */
                pressure_sync(a);
        }
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Agent *a = userdata;

        (void) sd_event_source_set_time(s, usec + a->evict_sample_usec);
        pressure_sync(a);
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

static void add_psi(Agent *a, const char *path, sd_event_source **ret) {
        CubError err = {};
        int fd, r;

        fd = evict_psi_trigger_open(path, a->psi_trigger, &err);
        if (fd < 0) {
                cub_log(LOG_WARNING, "PSI trigger: %s; sampling only", err.msg);
                return;
        }
        r = sd_event_add_io(a->event, ret, fd, EPOLLPRI, on_psi, a);
        if (r < 0) {
                close(fd);
                cub_log(LOG_WARNING, "PSI trigger '%s': %s", path, strerror(-r));
                return;
        }
        (void) sd_event_source_set_io_fd_own(*ret, true);
        (void) sd_event_source_set_description(*ret, path);
}

int agent_pressure_init(Agent *a, CubError *err) {
        int r;

        a->evict_sample_usec = USEC_PER_SEC;
        r = build_config(a, err);
        if (r < 0)
                return r;
        evict_state_init(&a->evict_state);
        a->psi_trigger = strdup(a->kc->psi_memory_trigger ? a->kc->psi_memory_trigger : DEFAULT_PSI_TRIGGER);
        if (!a->psi_trigger)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = evict_psi_trigger_validate(a->psi_trigger, err);
        if (r < 0)
                return cub_err_wrap(err, "cubelet.psiMemoryTrigger");
        a->imagefs_path = access(IMAGEFS_PATH, F_OK) == 0 ? IMAGEFS_PATH : a->opt.state_dir;
        return 0;
}

void agent_pressure_attach(Agent *a) {
        char path[4096];
        int r;

        r = sd_event_add_time_relative(a->event, &a->evict_timer, CLOCK_MONOTONIC, a->evict_sample_usec, 0, on_timer,
                                       a);
        if (r >= 0) {
                (void) sd_event_source_set_description(a->evict_timer, "eviction-sample");
                (void) sd_event_source_set_enabled(a->evict_timer, SD_EVENT_ON);
        } else
                cub_log(LOG_ERR, "eviction timer: %s", strerror(-r));
        add_psi(a, "/proc/pressure/memory", &a->psi_node_src);
        (void) snprintf(path, sizeof(path), "%s/kubepods/memory.pressure", a->opt.cgroup_root);
        add_psi(a, path, &a->psi_pods_src);
        (void) snprintf(path, sizeof(path), "%s/kubepods/memory.events", a->opt.cgroup_root);
        r = sd_event_add_inotify(a->event, &a->memevents_src, path, IN_MODIFY, on_memory_events, a);
        if (r < 0)
                cub_log(LOG_WARNING, "inotify on '%s': %s; sampling only", path, strerror(-r));
        else
                (void) sd_event_source_set_description(a->memevents_src, "kubepods-memory.events");
        pressure_sync(a);
}

void agent_pressure_done(Agent *a) {
        a->evict_timer = sd_event_source_disable_unref(a->evict_timer);
        a->psi_node_src = sd_event_source_disable_unref(a->psi_node_src);
        a->psi_pods_src = sd_event_source_disable_unref(a->psi_pods_src);
        a->memevents_src = sd_event_source_disable_unref(a->memevents_src);
        evict_config_done(&a->evict_cfg);
        free(a->psi_trigger);
        a->psi_trigger = NULL;
}

static json_t *signal_json(const EvictSignalObservation *o) {
        return o->present ? json_pack("{s:I,s:I}", "available", (json_int_t) o->available, "capacity",
                                      (json_int_t) o->capacity)
                          : json_null();
}

void agent_pressure_status(Agent *a, void *json_doc) {
        json_t *doc = json_doc, *conds = json_array(), *sig = json_object(), *psi = json_object(), *th = json_array(),
               *ev = json_array();
        EvictMet met[EVICT_THRESHOLDS_MAX];
        size_t n_met, first;
        uint64_t now = agent_now_usec();

        for (int c = 0; c < _EVICT_CONDITION_MAX; c++) {
                EvictConditionInfo ci;

                evict_state_condition(&a->evict_state, (EvictCondition) c, &ci);
                json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s}", "type", ci.name, "status",
                                                       ci.status ? "True" : "False", "reason", ci.reason, "message",
                                                       ci.message));
        }
        for (int s = 0; s < _EVICT_SIGNAL_MAX; s++)
                json_object_set_new(sig, evict_signal_to_string((EvictSignal) s),
                                    signal_json(&a->evict_obs.signals[s]));
        /* PSI averages are for display only: read here, not on every round */
        for (int i = 0; i < _EVICT_PSI_MAX; i++) {
                EvictPsi node_psi = {}, pods_psi = {};
                const EvictPsi *n = &node_psi, *k = &pods_psi;
                char path[4096];
                CubError err = {};

                (void) snprintf(path, sizeof(path), "/proc/pressure/%s", psi_names[i]);
                (void) evict_read_psi(path, &node_psi, &err);
                (void) snprintf(path, sizeof(path), "%s/kubepods/%s.pressure", a->opt.cgroup_root, psi_names[i]);
                (void) evict_read_psi(path, &pods_psi, &err);

                json_object_set_new(psi, psi_names[i],
                                    json_pack("{s:f,s:f,s:f,s:f}", "nodeSomeAvg10", n->some.avg10, "nodeFullAvg10",
                                              n->full.avg10, "kubepodsSomeAvg10", k->some.avg10, "kubepodsFullAvg10",
                                              k->full.avg10));
        }
        for (size_t i = 0; i < a->evict_cfg.n_thresholds; i++) {
                char buf[EVICT_THRESHOLD_STR_MAX];

                json_array_append_new(th, json_string(evict_threshold_format(&a->evict_cfg.thresholds[i], buf)));
        }
        n_met = evict_state_met(&a->evict_state, &a->evict_cfg, &a->evict_obs, met);
        first = a->n_evictions > AGENT_EVICTIONS_KEPT ? a->n_evictions - AGENT_EVICTIONS_KEPT : 0;
        for (size_t i = first; i < a->n_evictions; i++) {
                const AgentEviction *e = &a->evictions[i % AGENT_EVICTIONS_KEPT];

                json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I}", "pod", e->key, "uid", e->uid,
                                                    "signal", e->signal, "message", e->message, "gracePeriod",
                                                    (json_int_t) e->grace, "onsetBootMs", (json_int_t) e->onset_boot_ms,
                                                    "decidedBootMs", (json_int_t) e->decided_boot_ms, "stoppedBootMs",
                                                    (json_int_t) e->stopped_boot_ms));
        }
        json_object_set_new(doc, "conditions", conds);
        json_object_set_new(doc, "eviction",
                            json_pack("{s:s,s:o,s:I,s:o,s:o,s:o,s:I,s:I}", "policy",
                                      evict_policy_to_string(a->evict_cfg.policy), "thresholds", th, "thresholdsMet",
                                      (json_int_t) n_met, "signals", sig, "psi", psi, "decisions", ev, "rounds",
                                      (json_int_t) a->evict_rounds, "sampleAgeMs",
                                      (json_int_t) ((now - a->evict_obs.time_usec) / 1000)));
}
