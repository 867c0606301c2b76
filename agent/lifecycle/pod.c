/* SPDX-License-Identifier: Apache-2.0 */
/* The pod table entry and its pure status computation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"

static const char *const phase_names[_LC_PHASE_MAX] = {
        [LC_PHASE_PENDING] = "Pending",
        [LC_PHASE_RUNNING] = "Running",
        [LC_PHASE_SUCCEEDED] = "Succeeded",
        [LC_PHASE_FAILED] = "Failed",
};

static const char *const state_names[_LC_CONTAINER_STATE_MAX] = {
        [LC_CONTAINER_WAITING] = "Waiting",         [LC_CONTAINER_CREATED] = "Created",
        [LC_CONTAINER_RUNNING] = "Running",         [LC_CONTAINER_TERMINATED] = "Terminated",
        [LC_CONTAINER_TERMINATING] = "Terminating",
};

const char *lc_phase_to_string(LcPhase p) {
        return p >= 0 && p < _LC_PHASE_MAX ? phase_names[p] : NULL;
}

const char *lc_container_state_to_string(LcContainerState s) {
        return s >= 0 && s < _LC_CONTAINER_STATE_MAX ? state_names[s] : NULL;
}

void lc_pod_set_spec(LcPod *p, WorkerSpec *spec) {
        PodEffective eff;
        CubQuantity cpu, mem;
        WorkerSpec *old = p->spec;

        p->spec = worker_spec_ref(spec);
        worker_spec_unref(old);
        p->active_deadline_s = spec->pod->active_deadline_seconds;
        (void) lc_pod_set_gates(p, spec->pod);
        p->cpu_request_milli = p->memory_request = 0;
        if (pod_effective(spec->pod, &eff, NULL) >= 0) {
                (void) pod_resource_get(&eff.requests, "cpu", &cpu);
                p->cpu_request_milli = cub_quantity_milli(cpu);
                if (pod_resource_get(&eff.requests, "memory", &mem))
                        p->memory_request = cub_quantity_value(mem);
                pod_effective_done(&eff);
        }
}

int lc_pod_new(WorkerSpec *spec, LcPod **ret) {
        LcPod *p = calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        p->n = spec->pod->n_init_containers + spec->pod->n_containers;
        p->failure_container = SIZE_MAX;
        p->backoff = calloc(p->n + 1, sizeof(LcBackoff));
        p->statuses = calloc(p->n + 1, sizeof(LcContainerStatus));
        if (!p->backoff || !p->statuses) {
                lc_pod_free(p);
                return -ENOMEM;
        }
        p->phase = LC_PHASE_PENDING;
        lc_pod_set_spec(p, spec);
        *ret = p;
        return 0;
}

LcPod *lc_pod_free(LcPod *p) {
        if (!p)
                return NULL;
        worker_spec_unref(p->spec);
        worker_spec_unref(p->resize.want);
        worker_spec_unref(p->resize.actual);
        worker_spec_unref(p->spec_want);
        free(p->resize.restart);
        free(p->numa);
        for (size_t i = 0; i < p->n_victims; i++)
                free(p->victims[i]);
        free(p->victims);
        free(p->backoff);
        free(p->gates);
        for (size_t k = 0; p->statuses && k < p->n; k++)
                free(p->statuses[k].term_message);
        free(p->statuses);
        for (size_t k = 0; k < p->n_eph; k++)
                free(p->eph[k].term_message);
        free(p->eph);
        free(p->eph_backoff);
        lc_pod_events_free(p);
        free(p);
        return NULL;
}

void lc_pod_reset(LcPod *p) {
        p->terminal = p->evicted = p->rejected = false;
        p->attempt++;
        /* a new attempt: pod_started again on its first sync (the probes
         * manager dropped the pod's probes when it became terminal) */
        p->started = false;
        p->reason[0] = p->message[0] = '\0';
        free(p->numa);
        p->numa = NULL;
        p->phase = LC_PHASE_PENDING;
        memset(p->backoff, 0, p->n * sizeof(LcBackoff));
        for (size_t k = 0; k < p->n; k++)
                free(p->statuses[k].term_message);
        memset(p->statuses, 0, p->n * sizeof(LcContainerStatus));
        for (size_t k = 0; k < p->n_eph; k++) {
                free(p->eph[k].term_message);
                p->eph[k] = (LcContainerStatus){};
                p->eph_backoff[k] = (LcBackoff){};
        }
}

static bool same_text(const char *a, const char *b) {
        return a == b || (a && b && strcmp(a, b) == 0);
}

void lc_pod_observe_final(LcPod *p, const WorkerObserved *o) {
        for (size_t k = 0; o && k < p->n; k++) {
                const WorkerContainer *wc = worker_observed_container(o, pod_container_at(p->spec->pod, k, NULL)->name);
                LcContainerStatus *st = &p->statuses[k];

                if (!wc)
                        continue;
                (void) snprintf(st->id, sizeof(st->id), "%s", wc->id);
                st->state = LC_CONTAINER_TERMINATED;
                st->exit_code = wc->exit_code;
                (void) snprintf(st->reason, sizeof(st->reason), "%s", wc->reason ? wc->reason : "");
                st->started_at = wc->started_at;
                st->finished_at = wc->finished_at;
                if (!same_text(st->term_message, wc->message)) {
                        free(st->term_message);
                        st->term_message = wc->message ? strdup(wc->message) : NULL;
                }
                st->terminated_before = true;
        }
}

bool lc_pod_set_gates(LcPod *p, const Pod *pod) {
        size_t n = p->spec->pod->readiness_gates.n;
        unsigned char *g;
        bool changed = false;

        if (n == 0)
                return false;
        if (!p->gates && !(p->gates = calloc(n, 1)))
                return false; /* out of memory: the gates stay unmet */
        g = p->gates;
        for (size_t i = 0; i < n; i++) {
                const char *s = i < pod->gate_status.n ? pod->gate_status.items[i] : "";
                unsigned char v = strcmp(s, "True") == 0    ? LC_GATE_TRUE
                                  : strcmp(s, "False") == 0 ? LC_GATE_FALSE
                                  : *s                      ? LC_GATE_UNKNOWN
                                                            : LC_GATE_NONE;

                changed = changed || g[i] != v;
                g[i] = v;
        }
        return changed;
}

uint64_t lc_pod_deadline_usec(const LcPod *p) {
        if (p->active_deadline_s <= 0 || !p->latency.event)
                return 0;
        return p->latency.event + (uint64_t) p->active_deadline_s * 1000000ULL;
}

void lc_pod_set_failed(LcPod *p, const char *reason, const char *message, int64_t grace) {
        p->terminal = true;
        p->kill_grace = grace;
        p->phase = LC_PHASE_FAILED;
        (void) snprintf(p->reason, sizeof(p->reason), "%s", reason);
        (void) snprintf(p->message, sizeof(p->message), "%s", message);
        for (size_t k = 0; k < p->n; k++)
                if (p->statuses[k].state == LC_CONTAINER_RUNNING || p->statuses[k].state == LC_CONTAINER_CREATED)
                        p->statuses[k].state = LC_CONTAINER_TERMINATING;
}

int lc_pod_add_victim(LcPod *p, const char *uid) {
        char **n = realloc(p->victims, (p->n_victims + 1) * sizeof(char *));

        if (!n)
                return -ENOMEM;
        p->victims = n;
        p->victims[p->n_victims] = strdup(uid);
        if (!p->victims[p->n_victims])
                return -ENOMEM;
        p->n_victims++;
        return 0;
}

bool lc_pod_drop_victim(LcPod *p, const char *uid) {
        for (size_t k = 0; k < p->n_victims; k++)
                if (strcmp(p->victims[k], uid) == 0) {
                        free(p->victims[k]);
                        p->victims[k] = p->victims[--p->n_victims];
                        return true;
                }
        return false;
}

size_t lc_pod_restarts(const LcPod *p) {
        size_t r = 0;

        for (size_t k = 0; k < p->n; k++)
                r += p->statuses[k].restarts;
        return r;
}

/* kubelet's back-off: 0 s for the first termination, then 10 s, 20 s, ...
 * up to 300 s; a container that ran for 10 min starts over. */
uint64_t lc_backoff_delay(unsigned crashes) {
        uint64_t d = crashes <= 1 ? LC_BACKOFF_BASE_USEC : LC_BACKOFF_BASE_USEC << (crashes - 2 > 5 ? 5 : crashes - 2);

        return d > LC_BACKOFF_MAX_USEC ? LC_BACKOFF_MAX_USEC : d;
}

static void count_termination(LcBackoff *bo, const WorkerContainer *wc, uint64_t now) {
        bool long_run = wc->finished_at - wc->started_at > LC_BACKOFF_RESET_NSEC;

        bo->seen_finished = wc->finished_at;
        bo->crashes = long_run ? 1 : bo->crashes + 1;
        /* the first restart is at once */
        bo->next_usec = now + (bo->crashes <= 1 ? 0 : lc_backoff_delay(bo->crashes));
}

/* The ephemeral containers: as the runtime holds them (never restarted);
 * true when one it lacks is due another try (their back-off: kubelet
 * tries each sync, cubelet at 10 s doubling to 300 s). */
static bool observe_ephemeral(LcPod *p, const WorkerObserved *o, uint64_t now) {
        const Pod *pod = p->spec->pod;
        size_t n = pod->n_ephemeral_containers;
        bool need = false;

        if (n > p->n_eph) {
                LcContainerStatus *st = realloc(p->eph, n * sizeof(*st));
                LcBackoff *bo = st ? realloc(p->eph_backoff, n * sizeof(*bo)) : NULL;

                if (st)
                        p->eph = st;
                if (!bo)
                        return false; /* out of memory: not observed this time */
                p->eph_backoff = bo;
                memset(&p->eph[p->n_eph], 0, (n - p->n_eph) * sizeof(*st));
                memset(&p->eph_backoff[p->n_eph], 0, (n - p->n_eph) * sizeof(*bo));
                p->n_eph = n;
        }
        for (size_t e = 0; e < n; e++) {
                const PodContainer *c = &pod->ephemeral_containers[e];
                const WorkerContainer *wc = o && o->ready ? worker_observed_container(o, c->name) : NULL;
                LcContainerStatus *st = &p->eph[e];
                LcBackoff *bo = &p->eph_backoff[e];

                if (!wc) {
                        st->state = LC_CONTAINER_WAITING;
                        if (o && o->ready && !p->terminal && now >= bo->next_usec) {
                                need = true;
                                bo->next_usec = now + lc_backoff_delay(++bo->crashes);
                        }
                        continue;
                }
                if (strcmp(st->id, wc->id) != 0 && wc->started_at)
                        lc_pod_event(p, false, "Started", now, "Started container %s", c->name);
                (void) snprintf(st->id, sizeof(st->id), "%s", wc->id);
                st->started_at = wc->started_at;
                st->finished_at = wc->finished_at;
                st->state = wc->state == CRI_CONTAINER_RUNNING   ? LC_CONTAINER_RUNNING
                            : wc->state == CRI_CONTAINER_CREATED ? LC_CONTAINER_CREATED
                                                                 : LC_CONTAINER_TERMINATED;
                st->exit_code = wc->exit_code;
                (void) snprintf(st->reason, sizeof(st->reason), "%s", wc->reason ? wc->reason : "");
        }
        return need;
}

bool lc_pod_observe(LcPod *p, const WorkerObserved *o, uint64_t now) {
        const Pod *pod = p->spec->pod;
        bool need = false, init_pending = false, init_failed = false;
        size_t running = 0, succeeded = 0, failed = 0, app = 0;

        p->observed = o != NULL;
        /* network: a sandbox whose status the runtime did not give this time keeps its IP (kubelet
         * keeps the last pod status it read), rather than a status without podIP */
        if (!o || !o->pod_ip_unknown)
                (void) snprintf(p->pod_ip, sizeof(p->pod_ip), "%s", o && o->ready && o->pod_ip ? o->pod_ip : "");
        for (size_t k = 0; k < p->n; k++)
                p->statuses[k].oom_killed_now = false;
        need = observe_ephemeral(p, o, now);
        if (!o || !o->ready || strcmp(o->config_hash, pod->config_hash) != 0) {
                p->phase = LC_PHASE_PENDING;
                for (size_t k = 0; k < p->n; k++)
                        p->statuses[k].state = LC_CONTAINER_WAITING;
                return true;
        }
        for (size_t k = 0; k < p->n; k++) {
                bool init;
                const PodContainer *c = pod_container_at(pod, k, &init);
                const WorkerContainer *wc = worker_observed_container(o, c->name);
                LcContainerStatus *st = &p->statuses[k];
                LcBackoff *bo = &p->backoff[k];
                bool sidecar = init && pod_container_is_sidecar(c);
                bool restartable, was_backoff;

                if (!init)
                        app++;
                if (init_pending && !init) {
                        st->state = LC_CONTAINER_WAITING;
                        continue;
                }
                if (!wc) {
                        st->state = LC_CONTAINER_WAITING;
                        need = true;
                        if (init && !sidecar)
                                init_pending = true;
                        continue;
                }
                st->restarts = wc->attempt;
                was_backoff = st->waiting_backoff;
                st->waiting_backoff = false;
                if (strcmp(st->id, wc->id) != 0) {
                        st->probe_known = st->probe_started = st->probe_ready = false; /* a new container */
                        /* kubelet's events of a container it created and started */
                        lc_pod_event(p, false, "Created", now, "Created container: %s", c->name);
                        if (wc->started_at)
                                lc_pod_event(p, false, "Started", now, "Started container %s", c->name);
                }
                (void) snprintf(st->id, sizeof(st->id), "%s", wc->id);
                st->started_at = wc->started_at;
                st->finished_at = wc->finished_at;
                if (wc->state == CRI_CONTAINER_RUNNING || wc->state == CRI_CONTAINER_CREATED) {
                        st->state = wc->state == CRI_CONTAINER_RUNNING ? LC_CONTAINER_RUNNING : LC_CONTAINER_CREATED;
                        if (init && !sidecar)
                                init_pending = true;
                        if (!init)
                                running++;
                        continue;
                }
                /* ended */
                st->state = LC_CONTAINER_TERMINATED;
                st->exit_code = wc->exit_code;
                (void) snprintf(st->reason, sizeof(st->reason), "%s", wc->reason ? wc->reason : "");
                if (!same_text(st->term_message, wc->message)) {
                        free(st->term_message);
                        st->term_message = wc->message ? strdup(wc->message) : NULL;
                }
                st->terminated_before = true;
                if (wc->finished_at != bo->seen_finished) {
                        count_termination(bo, wc, now);
                        st->oom_killed_now = wc->reason && strcmp(wc->reason, "OOMKilled") == 0;
                }
                if (init && !sidecar && wc->exit_code == 0)
                        continue;
                restartable = sidecar || worker_should_restart(pod->restart_policy, wc->exit_code);
                if (init && !sidecar) {
                        init_pending = true;
                        if (!restartable)
                                init_failed = true;
                }
                if (!init) {
                        if (wc->exit_code == 0)
                                succeeded++;
                        else
                                failed++;
                }
                if (restartable) {
                        if (now >= bo->next_usec)
                                need = true;
                        else {
                                st->waiting_backoff = true;
                                st->state = LC_CONTAINER_WAITING;
                                if (!was_backoff)
                                        lc_pod_event(p, true, "BackOff", now,
                                                     "Back-off restarting failed container %s in pod %s_%s(%s)",
                                                     c->name, pod->name, pod->namespace_, pod->uid);
                        }
                        if (!init)
                                running++; /* restarting counts as running, as kubelet's phase does */
                }
        }
        if (init_failed)
                p->phase = LC_PHASE_FAILED;
        else if (init_pending)
                p->phase = LC_PHASE_PENDING;
        else if (running > 0)
                p->phase = LC_PHASE_RUNNING;
        else if (app > 0 && succeeded == app)
                p->phase = LC_PHASE_SUCCEEDED;
        else if (failed > 0)
                p->phase = LC_PHASE_FAILED;
        else
                p->phase = LC_PHASE_PENDING;
        return need;
}

bool lc_pod_steady(const LcPod *p) {
        if (!p->wanted || p->busy || p->n_victims > 0 || p->sync_retry.failures != 0)
                return false;
        if (p->terminal)
                return !p->observed;
        if (!p->admitted || !p->observed || p->phase == LC_PHASE_PENDING)
                return false;
        for (size_t k = 0; k < p->n; k++) {
                const LcContainerStatus *st = &p->statuses[k];

                if (st->waiting_backoff || st->config_error[0] ||
                    (st->state != LC_CONTAINER_RUNNING && st->state != LC_CONTAINER_TERMINATED))
                        return false;
        }
        return true;
}

/* ---- probes and hooks: started, ready, conditions -------------------------- */

static bool running_at(const LcPod *p, size_t k) {
        return !p->terminal && p->statuses[k].state == LC_CONTAINER_RUNNING;
}

bool lc_container_started(const LcPod *p, size_t k) {
        const PodContainer *c = pod_container_at(p->spec->pod, k, NULL);

        if (!running_at(p, k))
                return false;
        if (!c->startup_probe_set)
                return true;
        return p->statuses[k].probe_known && p->statuses[k].probe_started;
}

bool lc_container_ready(const LcPod *p, size_t k) {
        const PodContainer *c = pod_container_at(p->spec->pod, k, NULL);

        if (!lc_container_started(p, k))
                return false;
        if (!c->readiness_probe_set)
                return true;
        return p->statuses[k].probe_known && p->statuses[k].probe_ready;
}

/* appends " name" or "[name" to a "[a b]" list */
static void list_add(char *buf, size_t size, const char *name) {
        size_t n = strlen(buf);

        (void) snprintf(buf + n, size - n, "%s%s", n ? " " : "[", name);
}

static void list_end(char *buf, size_t size, const char *prefix) {
        char tmp[LC_MESSAGE_MAX];

        if (!*buf)
                return;
        (void) snprintf(tmp, sizeof(tmp), "%s%s]", prefix, buf);
        (void) snprintf(buf, size, "%s", tmp);
}

void lc_pod_conditions(const LcPod *p, LcPodConditions *ret) {
        const Pod *pod = p->spec->pod;
        char unready[LC_MESSAGE_MAX] = "", incomplete[LC_MESSAGE_MAX] = "";

        *ret = (LcPodConditions){};
        for (size_t k = 0; k < p->n; k++) {
                bool init;
                const PodContainer *c = pod_container_at(pod, k, &init);
                const LcContainerStatus *st = &p->statuses[k];
                bool sidecar = init && pod_container_is_sidecar(c);

                if (init && !sidecar) {
                        if (!(st->state == LC_CONTAINER_TERMINATED && st->exit_code == 0))
                                list_add(incomplete, sizeof(incomplete), c->name);
                        continue;
                }
                if (!lc_container_ready(p, k))
                        list_add(unready, sizeof(unready), c->name);
        }
        /* GeneratePodInitializedCondition: a Succeeded pod is PodCompleted,
         * with or without init containers */
        ret->initialized = !*incomplete || p->phase == LC_PHASE_SUCCEEDED;
        if (p->phase == LC_PHASE_SUCCEEDED)
                ret->initialized_reason = "PodCompleted";
        else if (*incomplete) {
                ret->initialized_reason = "ContainersNotInitialized";
                list_end(incomplete, sizeof(incomplete), "containers with incomplete status: ");
                (void) snprintf(ret->init_message, sizeof(ret->init_message), "%s", incomplete);
        }
        /* GenerateContainersReadyCondition and GeneratePodReadyCondition: a
         * terminal phase is the reason, without a message
         * (generate*ConditionForTerminalPhase) */
        if (p->phase == LC_PHASE_SUCCEEDED || p->phase == LC_PHASE_FAILED) {
                ret->ready_reason = p->phase == LC_PHASE_SUCCEEDED ? "PodCompleted" : "PodFailed";
                return;
        }
        if (*unready || pod->n_containers == 0) {
                ret->ready_reason = "ContainersNotReady";
                list_end(unready, sizeof(unready), "containers with unready status: ");
                (void) snprintf(ret->message, sizeof(ret->message), "%s", unready);
                return;
        }
        ret->containers_ready = ret->ready = true;
        /* readiness gates: GeneratePodReadyCondition, each unmet gate's words */
        for (size_t i = 0; i < pod->readiness_gates.n; i++) {
                unsigned g = p->gates ? p->gates[i] : LC_GATE_NONE;
                size_t len = strlen(ret->gates_message);

                if (g == LC_GATE_TRUE)
                        continue;
                ret->ready = false;
                ret->gates_reason = "ReadinessGatesNotReady";
                if (g == LC_GATE_NONE)
                        (void) snprintf(ret->gates_message + len, sizeof(ret->gates_message) - len,
                                        "%scorresponding condition of pod readiness gate \"%s\" does not exist.",
                                        len ? ", " : "", pod->readiness_gates.items[i]);
                else
                        (void) snprintf(ret->gates_message + len, sizeof(ret->gates_message) - len,
                                        "%sthe status of pod readiness gate \"%s\" is not \"True\", but %s",
                                        len ? ", " : "", pod->readiness_gates.items[i],
                                        g == LC_GATE_FALSE ? "False" : "Unknown");
        }
}

bool lc_pod_track_conditions(LcPod *p, int64_t now) {
        LcPodConditions c;
        bool v[_LC_POD_COND_MAX], changed = false;

        lc_pod_conditions(p, &c);
        v[LC_POD_COND_SANDBOX] = p->observed && !p->terminal;
        v[LC_POD_COND_INITIALIZED] = c.initialized;
        v[LC_POD_COND_CONTAINERS_READY] = c.containers_ready;
        v[LC_POD_COND_READY] = c.ready;
        for (int i = 0; i < _LC_POD_COND_MAX; i++)
                if (p->cond_since[i] == 0 || p->cond_value[i] != v[i]) {
                        p->cond_value[i] = v[i];
                        p->cond_since[i] = now;
                        changed = true;
                }
        return changed;
}

int lc_actions_push(LcActions *l, const LcAction *a) {
        LcAction *n = realloc(l->items, (l->n + 1) * sizeof(*n));

        if (!n)
                return -ENOMEM;
        l->items = n;
        l->items[l->n++] = *a;
        return 0;
}

void lc_actions_done(LcActions *l) {
        free(l->items);
        *l = (LcActions){};
}

void lc_container_config_done(LcContainerConfig *c) {
        worker_container_config_done(c);
}
