/* SPDX-License-Identifier: Apache-2.0 */
/* The admission manager: every new pod goes through admit_decide() (the
 * same code as `cubelet admit`) before any runtime call; admitted pods are
 * assumed in the ledger with their exclusive CPUs, confirmed when they
 * start and forgotten when they go; the ledger and the CPU manager's state
 * are checkpointed after each change. Preemption victims and changes of the
 * shared CPU pool go back to the loop as actions. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../admit/admit.h"
#include "../cpumanager/cpumanager.h"
#include "../node/derive.h"
#include "../node/machine.h"
#include "../util/cleanup.h"
#include "../util/log.h"
#include "managers.h"

typedef struct Admission {
        const LcEnv *env;
        CpumgrTopology topo;
        CpumgrState *cpu;
        AdmitSnapshot *snap;
        AdmitOptions opt;
        char *ledger_path;
        char *cpu_state_path;
        AdmitLedgerEntry *ledger; /* what the previous run had admitted, until restore */
        size_t n_ledger;
        bool dirty; /* the ledger and the CPU manager state wait for flush */
        /* the last failed write of each (a full disk): journaled once, the
         * write tried again at each flush until it succeeds */
        char ledger_error[CUB_ERR_MSG_MAX], cpu_state_error[CUB_ERR_MSG_MAX];
} Admission;

/* the checkpoints are written by admission_flush(), before the pod's first
 * runtime call */
static void save(Admission *m) {
        m->dirty = true;
}

static void admission_flush(void *userdata) {
        Admission *m = userdata;
        CubError err = {};
        bool failed;

        if (!m->dirty)
                return;
        /* journaled once per distinct error (a full disk), tried again at the next flush */
        failed = cub_log_changed(LOG_ERR, admit_ledger_save(m->snap, m->ledger_path, &err), &err, m->ledger_error,
                                 "admission ledger");
        cub_err_clear(&err);
        if (cpumgr_policy(m->cpu) == CPUMGR_POLICY_STATIC)
                failed = cub_log_changed(LOG_ERR, cpumgr_checkpoint_save(m->cpu, m->cpu_state_path, &err), &err,
                                         m->cpu_state_error, "CPU manager state") ||
                         failed;
        /* a checkpoint that could not be written (a full disk) is written at
         * the next flush: the files are replaced whole (rename), never torn */
        m->dirty = failed;
}

static void admission_free(void *userdata) {
        Admission *m = userdata;

        if (!m)
                return;
        admit_snapshot_free(m->snap);
        cpumgr_free(m->cpu);
        cpumgr_topology_done(&m->topo);
        admit_ledger_entries_free(m->ledger, m->n_ledger);
        free(m->ledger_path);
        free(m->cpu_state_path);
        free(m);
}

static int admission_new(const LcEnv *env, void **ret, CubError *err) {
        Admission *m = calloc(1, sizeof(*m));
        PodResourceList alloc = {};
        char *label_keys[] = { (char *) "kubernetes.io/arch", (char *) "kubernetes.io/hostname",
                               (char *) "kubernetes.io/os" };
        char *label_values[] = { (char *) agent_go_arch(), (char *) env->node_name, (char *) "linux" };
        PodStringMap labels = { .keys = label_keys, .values = label_values, .n = ELEMENTSOF(label_keys) };
        AdmitNodeInfo ni;
        char note[1024] = "";
        int r;

        if (!m)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->env = env;
        r = cpumgr_topology_from_sys(env->sys_root ? env->sys_root : "/sys", &m->topo, err);
        if (r < 0) {
                r = cub_err_wrap(err, "CPU topology");
                goto fail;
        }
        r = agent_cpumgr_new(env->kc, &m->topo, "CPU manager", &m->cpu, err);
        if (r < 0)
                goto fail;
        if (asprintf(&m->ledger_path, "%s/admission_ledger", env->state_dir) < 0 ||
            asprintf(&m->cpu_state_path, "%s/cpu_manager_state", env->state_dir) < 0) {
                r = cub_err_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        if (cpumgr_policy(m->cpu) == CPUMGR_POLICY_STATIC) {
                r = cpumgr_checkpoint_load(m->cpu, m->cpu_state_path, note, sizeof(note), err);
                if (r < 0)
                        goto fail;
                if (r > 0)
                        cub_log(LOG_WARNING, "CPU manager state '%s': %s", m->cpu_state_path, note);
        }
        r = agent_node_resources(env->kc, env->cg, env->state_dir, NULL, &alloc, err);
        if (r < 0) {
                pod_resource_list_done(&alloc);
                goto fail;
        }
        ni = (AdmitNodeInfo){
                .name = env->node_name,
                .labels = &labels,
                .allocatable = &alloc,
                .max_pods = env->kc->max_pods,
        };
        r = admit_snapshot_new(&ni, &m->snap, err);
        pod_resource_list_done(&alloc);
        if (r < 0)
                goto fail;
        admit_snapshot_set_cpumgr(m->snap, m->cpu);
        admit_options_init(&m->opt);
        m->opt.allowed_unsafe_sysctls = &env->kc->allowed_unsafe_sysctls; /* security context */
        r = admit_ledger_load(m->ledger_path, &m->ledger, &m->n_ledger, err);
        if (r < 0) {
                /* a broken ledger costs nothing but a fresh admission of every pod */
                cub_log(LOG_WARNING, "%s, starting with an empty admission ledger", err->msg);
                cub_err_clear(err);
                m->ledger = NULL;
                m->n_ledger = 0;
        }
        *ret = m;
        return 0;
fail:
        admission_free(m);
        return r;
}

static bool in_ledger(Admission *m, const char *uid) {
        for (size_t i = 0; i < m->n_ledger; i++)
                if (strcmp(m->ledger[i].uid, uid) == 0)
                        return true;
        return false;
}

static void pool_changed(Admission *m, const CpumgrSet *before) {
        if (cpumgr_set_equal(before, cpumgr_shared_pool(m->cpu)))
                return;
        if (cpumgr_policy(m->cpu) == CPUMGR_POLICY_STATIC)
                m->env->act(m->env->loop, &(LcAction){ .kind = LC_ACTION_RESOURCES_CHANGED });
}

static void admission_batch(void *userdata) {
        Admission *m = userdata;
        _cleanup_free_ AdmitHostPort *ports = NULL;
        size_t n_ports = 0;
        CubError err = {};

        if (admit_host_listening_ports(&ports, &n_ports, &err) < 0)
                cub_log(LOG_WARNING, "host ports: %s; admitting on pod ports only", err.msg);
        else if (admit_snapshot_set_host_ports(m->snap, ports, n_ports, &err) < 0)
                cub_log(LOG_WARNING, "host ports: %s", err.msg);
}

static bool pod_known(Admission *m, const char *uid) {
        size_t n;
        const LcPod *const *pods = m->env->pods(m->env->loop, &n);

        for (size_t i = 0; i < n; i++)
                if (strcmp(pods[i]->spec->pod->uid, uid) == 0)
                        return true;
        return false;
}

/* Per container (init first), the NUMA nodes of its exclusive CPUs: the
 * device manager places its devices there first (the topology manager's
 * hint, best-effort). NULL when no container has exclusive CPUs. */
static uint64_t *numa_hints(Admission *m, const Pod *pod) {
        size_t n = pod->n_init_containers + pod->n_containers;
        uint64_t *l = NULL;

        for (size_t k = 0; k < n; k++) {
                const CpumgrSet *cpus = cpumgr_container_cpus(m->cpu, pod->uid, pod_container_at(pod, k, NULL)->name);

                if (!cpus)
                        continue;
                if (!l && !(l = calloc(n + 1, sizeof(uint64_t))))
                        return NULL;
                for (size_t i = 0; i < m->topo.n; i++)
                        if (cpumgr_set_has(cpus, m->topo.cpus[i].cpu) && m->topo.cpus[i].numa < 64)
                                l[k] |= UINT64_C(1) << m->topo.cpus[i].numa;
        }
        return l;
}

static int admission_admit(void *userdata, const LcPod *p, LcAdmitResult *ret, CubError *err) {
        Admission *m = userdata;
        const Pod *pod = p->spec->pod;
        AdmitDecision d;
        AdmitConditions cond = {
                .memory_pressure = m->env->conditions[LC_CONDITION_MEMORY_PRESSURE],
                .disk_pressure = m->env->conditions[LC_CONDITION_DISK_PRESSURE],
                .pid_pressure = m->env->conditions[LC_CONDITION_PID_PRESSURE],
        };
        CpumgrSet before = *cpumgr_shared_pool(m->cpu);
        CubError e2 = {};
        int r;

        *ret = (LcAdmitResult){ .admit = true };
        if (in_ledger(m, pod->uid)) {
                /* admitted by the previous run: it keeps its place and its CPUs */
                r = admit_snapshot_add(m->snap, pod, err);
                if (r < 0 && r != -EEXIST)
                        return cub_err_wrap(err, "restoring its admission");
                cub_err_clear(err);
                if (cpumgr_allocate_pod(m->cpu, pod, p->spec->qos, &e2) < 0)
                        cub_log(LOG_WARNING, "pod %s/%s: exclusive CPUs after restart: %s", pod->namespace_, pod->name,
                                e2.msg);
                pool_changed(m, &before);
                return 0;
        }

        admit_snapshot_set_conditions(m->snap, &cond);
        r = admit_decide(m->snap, pod, &m->opt, &d, err);
        if (r < 0)
                return r;
        if (!d.admit) {
                *ret = (LcAdmitResult){ .admit = false, .pinning_error = d.first_failed == ADMIT_FILTER_CPU_MANAGER };
                (void) snprintf(ret->reason, sizeof(ret->reason), "%s", d.reason);
                (void) snprintf(ret->message, sizeof(ret->message), "%s", d.message);
                admit_decision_done(&d);
                return 0;
        }
        for (size_t i = 0; i < d.n_victims; i++) {
                LcAction a = { .kind = LC_ACTION_FAIL };
                char msg[ADMIT_PREEMPTED_MESSAGE_MAX];

                (void) admit_preempted_message(pod, msg);
                cub_log(LOG_WARNING, "pod %s/%s preempts %s (priority %" PRId32 ")", pod->namespace_, pod->name,
                        d.victims[i].key, d.victims[i].priority);
                /* the victims leave the snapshot before the preemptor is
                 * assumed in their place; the loop stops them */
                (void) admit_snapshot_forget(m->snap, d.victims[i].uid);
                cpumgr_release_pod(m->cpu, d.victims[i].uid);
                if (!pod_known(m, d.victims[i].uid))
                        continue;
                (void) snprintf(a.uid, sizeof(a.uid), "%s", d.victims[i].uid);
                (void) snprintf(a.reason, sizeof(a.reason), "%s", ADMIT_PREEMPTED_REASON);
                (void) snprintf(a.message, sizeof(a.message), "%s", msg);
                (void) snprintf(a.waiter, sizeof(a.waiter), "%s", pod->uid);
                /* the resource it lacked (reason OutOf<resource>), for the metrics */
                (void) snprintf(a.resource, sizeof(a.resource), "%.100s",
                                strncmp(d.reason, "OutOf", 5) == 0 ? d.reason + 5 : d.reason);
                a.grace = -1; /* the victim's own grace period */
                m->env->act(m->env->loop, &a);
        }
        r = admit_snapshot_assume(m->snap, pod, &d.placement, err);
        if (r < 0) {
                admit_decision_done(&d);
                return cub_err_wrap(err, "reserving");
        }
        if (*d.placement.cpuset)
                cub_log(LOG_INFO, "pod %s/%s admitted, exclusive CPUs %s", pod->namespace_, pod->name,
                        d.placement.cpuset);
        else
                cub_log(LOG_INFO, "pod %s/%s admitted", pod->namespace_, pod->name);
        admit_decision_done(&d);
        save(m);
        pool_changed(m, &before);
        ret->numa = numa_hints(m, pod);
        return 0;
}

static void admission_removed(void *userdata, const LcPod *p) {
        Admission *m = userdata;
        CpumgrSet before = *cpumgr_shared_pool(m->cpu);

        (void) admit_snapshot_forget(m->snap, p->spec->pod->uid);
        cpumgr_release_pod(m->cpu, p->spec->pod->uid);
        save(m);
        pool_changed(m, &before);
}

static void admission_started(void *userdata, const LcPod *p) {
        Admission *m = userdata;
        AdmitLedgerState st;

        /* the ledger is written once, when the pod first starts */
        if (admit_snapshot_state(m->snap, p->spec->pod->uid, &st) < 0 || st != ADMIT_LEDGER_ASSUMED)
                return;
        if (admit_snapshot_confirm(m->snap, p->spec->pod->uid) >= 0)
                save(m);
}

static void admission_restore(void *userdata) {
        Admission *m = userdata;
        size_t n_pods, n = 0, dropped;
        const LcPod *const *pods = m->env->pods(m->env->loop, &n_pods);
        _cleanup_free_ const char **live = calloc(n_pods + 1, sizeof(char *));
        CpumgrSet before = *cpumgr_shared_pool(m->cpu);

        if (!live)
                return;
        for (size_t i = 0; i < n_pods; i++)
                if (pods[i]->admitted)
                        live[n++] = pods[i]->spec->pod->uid;
        dropped = cpumgr_release_stale(m->cpu, live, n);
        if (dropped > 0)
                cub_log(LOG_INFO, "CPU manager: released the CPUs of %zu pods that are gone", dropped);
        admit_ledger_entries_free(m->ledger, m->n_ledger);
        m->ledger = NULL;
        m->n_ledger = 0;
        save(m);
        if (cpumgr_policy(m->cpu) == CPUMGR_POLICY_STATIC)
                /* the containers of the previous run get the pool as it is
                 * now, changed or not (one of them may have been made before
                 * another pod took CPUs out of it): kubelet's reconcileState
                 * after a restart */
                m->env->act(m->env->loop, &(LcAction){ .kind = LC_ACTION_RESOURCES_CHANGED });
        else
                pool_changed(m, &before);
}

static int admission_prepare(void *userdata, const LcPod *p, size_t k, LcContainerConfig *cfg, CubError *err) {
        Admission *m = userdata;
        const Pod *pod = p->spec->pod;
        const PodContainer *c = pod_container_at(pod, k, NULL);
        char buf[CPUMGR_SET_STR_MAX];

        free(cfg->cpuset);
        cfg->cpuset = strdup(cpumgr_container_cpuset(m->cpu, pod->uid, c->name, buf, sizeof(buf)));
        if (!cfg->cpuset)
                return cub_err_set(err, ENOMEM, "out of memory");
        return 0;
}

static void admission_pod_status(void *userdata, const LcPod *p, void *json_pod) {
        Admission *m = userdata;
        json_t *o = json_pod, *cs = json_object_get(o, "containers");
        char buf[CPUMGR_SET_STR_MAX];
        const Pod *pod = p->spec->pod;
        json_t *c;
        size_t k;

        json_object_set_new(o, "priority", json_integer(pod->priority));
        json_array_foreach(cs, k, c) {
                const char *name = json_string_value(json_object_get(c, "name"));
                const CpumgrSet *ex;

                if (!name)
                        continue;
                ex = p->admitted ? cpumgr_container_cpus(m->cpu, pod->uid, name) : NULL;
                json_object_set_new(
                        c, "cpuset",
                        json_string(!p->admitted ? ""
                                    : ex         ? cpumgr_set_format(ex, buf, sizeof(buf))
                                                 : cpumgr_container_cpuset(m->cpu, pod->uid, name, buf, sizeof(buf))));
                json_object_set_new(c, "exclusive", json_boolean(ex != NULL));
        }
}

static void admission_node_status(void *userdata, void *json_doc) {
        Admission *m = userdata;
        json_t *doc = json_doc;
        char reserved[CPUMGR_SET_STR_MAX], pool[CPUMGR_SET_STR_MAX], fx[CPUMGR_SET_STR_MAX];
        CpumgrSet freex;

        cpumgr_free_exclusive(m->cpu, &freex);
        json_object_set_new(doc, "cpuManager",
                            json_pack("{s:s,s:s,s:s,s:s}", "policy", cpumgr_policy_to_string(cpumgr_policy(m->cpu)),
                                      "reserved",
                                      cpumgr_set_format(cpumgr_reserved_set(m->cpu), reserved, sizeof(reserved)),
                                      "sharedPool", cpumgr_set_format(cpumgr_shared_pool(m->cpu), pool, sizeof(pool)),
                                      "freeExclusive", cpumgr_set_format(&freex, fx, sizeof(fx))));
        json_object_set_new(doc, "allocated",
                            json_pack("{s:I,s:I,s:I}", "pods", (json_int_t) admit_snapshot_n_pods(m->snap), "cpu",
                                      (json_int_t) admit_snapshot_used(m->snap, "cpu"), "memory",
                                      (json_int_t) admit_snapshot_used(m->snap, "memory")));
}

static void admission_node_resource(void *userdata, const char *resource, int64_t allocatable) {
        Admission *m = userdata;
        CubError err = {};

        if (admit_snapshot_set_allocatable(m->snap, resource, allocatable, &err) < 0)
                cub_log(LOG_ERR, "allocatable %s: %s", resource, err.msg);
}

/* kubelet's canResizePod (allocation_manager.go, 1.34): Infeasible for a
 * pod above the node's allocatable (capacity − reserved); Deferred when
 * the other admitted pods leave no room (the admit handlers, without
 * preemption), or, under the static CPU manager, too few CPUs are free for
 * a Guaranteed container's new whole CPUs (kubelet 1.34 says Infeasible
 * there unless its alpha InPlacePodVerticalScalingExclusiveCPUs is on;
 * cubelet resizes them: cpumgr_resize_pod). */
static int admission_resize(void *userdata, const LcPod *p, const Pod *want, LcAdmitResult *ret, CubError *err) {
        Admission *m = userdata;
        int64_t cpu = cub_quantity_milli(pod_request_quantity(want, "cpu"));
        int64_t mem = cub_quantity_value(pod_request_quantity(want, "memory"));
        AdmitOptions o = m->opt;
        AdmitDecision d;
        CubError e2 = {};
        CpumgrSet before = *cpumgr_shared_pool(m->cpu);
        int r;

        *ret = (LcAdmitResult){ .admit = true };
        if (mem > m->env->cg->kubepods_memory || cpu > m->env->cg->kubepods_cpu_milli) {
                *ret = (LcAdmitResult){ .reason = "Infeasible" };
                if (mem > m->env->cg->kubepods_memory)
                        (void) snprintf(ret->message, sizeof(ret->message),
                                        "Node didn't have enough capacity: memory, requested: %" PRId64
                                        ", capacity: %" PRId64,
                                        mem, m->env->cg->kubepods_memory);
                else
                        (void) snprintf(ret->message, sizeof(ret->message),
                                        "Node didn't have enough capacity: cpu, requested: %" PRId64
                                        ", capacity: %" PRId64,
                                        cpu, m->env->cg->kubepods_cpu_milli);
                return 0;
        }
        /* the others as they are, the CPU manager aside (the pod's own
         * exclusive CPUs are still its: cpumgr_resize_pod below) */
        if (admit_snapshot_remove(m->snap, want->uid) < 0)
                return cub_err_set(err, ENOENT, "not admitted");
        admit_snapshot_set_cpumgr(m->snap, NULL);
        o.preemption = false;
        r = admit_decide(m->snap, want, &o, &d, err);
        admit_snapshot_set_cpumgr(m->snap, m->cpu);
        if (r < 0 || !d.admit) {
                if (r >= 0) {
                        *ret = (LcAdmitResult){ .reason = "Deferred" };
                        (void) snprintf(ret->message, sizeof(ret->message), "%s", d.message);
                        admit_decision_done(&d);
                }
                /* a started pod's entry is confirmed (admission_started) */
                if (admit_snapshot_add(m->snap, p->spec->pod, &e2) < 0)
                        cub_log(LOG_ERR, "pod %s/%s: %s", want->namespace_, want->name, e2.msg);
                return r < 0 ? r : 0;
        }
        admit_decision_done(&d);
        /* whole CPUs taken or returned (the others' pool changes with them) */
        if (cpumgr_resize_pod(m->cpu, want, pod_qos_class(want), &e2) < 0) {
                *ret = (LcAdmitResult){ .reason = "Deferred" };
                (void) snprintf(ret->message, sizeof(ret->message), "%s", e2.msg);
                return admit_snapshot_add(m->snap, p->spec->pod, err);
        }
        r = admit_snapshot_add(m->snap, want, err);
        if (r < 0)
                return r;
        save(m);
        pool_changed(m, &before);
        return 0;
}

const LcManagerVtable mgr_admission = {
        .flush = admission_flush,
        .name = "admission",
        .new = admission_new,
        .free = admission_free,
        .admit_batch = admission_batch,
        .admit = admission_admit,
        .prepare_container = admission_prepare,
        .pod_started = admission_started,
        .pod_removed = admission_removed,
        .restore = admission_restore,
        .pod_status = admission_pod_status,
        .node_status = admission_node_status,
        .node_resource = admission_node_resource,
        .resize = admission_resize,
};
