/* SPDX-License-Identifier: Apache-2.0 */
/* Admission on the agent's loop: every new pod goes through admit_decide()
 * (the same code as `cubelet admit`) before any runtime call; admitted pods
 * are assumed in the ledger with their exclusive CPUs, confirmed when they
 * start and forgotten when they go; the ledger and the CPU manager's state
 * are checkpointed after each change. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>

#include "agent-internal.h"
#include "derive.h"
#include "util/cleanup.h"
#include "util/log.h"

static void save(Agent *a) {
        CubError err = {};

        if (admit_ledger_save(a->snap, a->ledger_path, &err) < 0)
                cub_log(LOG_ERR, "admission ledger: %s", err.msg);
        cub_err_clear(&err);
        if (cpumgr_policy(a->cpu) == CPUMGR_POLICY_STATIC &&
            cpumgr_checkpoint_save(a->cpu, a->cpu_state_path, &err) < 0)
                cub_log(LOG_ERR, "CPU manager state: %s", err.msg);
}

static int add_resource(PodResourceList *l, const char *name, int64_t v, bool cpu) {
        PodResource *n = realloc(l->items, (l->n + 1) * sizeof(*n));

        if (!n)
                return -ENOMEM;
        l->items = n;
        if (v < 0)
                v = 0;
        n[l->n] = (PodResource){
                .name = strdup(name),
                .q = cpu ? (PodQuantity){ .units = v / 1000, .milli = (uint16_t) (v % 1000) }
                         : (PodQuantity){ .units = v },
        };
        if (!n[l->n].name)
                return -ENOMEM;
        l->n++;
        return 0;
}

/* node allocatable: what the kubepods group gets (capacity − kube/system
 * reserved) − the hard eviction thresholds (memory.available for memory,
 * nodefs.available for ephemeral-storage), kubelet's
 * GetNodeAllocatableReservation */
static int node_allocatable(Agent *a, PodResourceList *ret) {
        PodQuantity q;
        int64_t mem = a->cg.kubepods_memory, eph = 0;
        struct statvfs sv;
        int r;

        mem -= (int64_t) agent_pressure_hard_memory(a, a->node.memory_capacity);
        if (statvfs(a->opt.state_dir, &sv) == 0) {
                uint64_t cap = (uint64_t) sv.f_blocks * sv.f_frsize;

                eph = (int64_t) cap;
                for (size_t i = 0; i < a->evict_cfg.n_thresholds; i++) {
                        const EvictThreshold *t = &a->evict_cfg.thresholds[i];

                        if (!t->soft && t->signal == EVICT_SIGNAL_NODEFS_AVAILABLE)
                                eph -= (int64_t) evict_value_quantity(&t->value, cap);
                }
                (void) pod_resource_get(&a->kc->kube_reserved, "ephemeral-storage", &q);
                eph -= pod_quantity_value(q);
                (void) pod_resource_get(&a->kc->system_reserved, "ephemeral-storage", &q);
                eph -= pod_quantity_value(q);
        }
        r = add_resource(ret, "cpu", a->cg.kubepods_cpu_milli, true);
        if (r >= 0)
                r = add_resource(ret, "memory", mem, false);
        if (r >= 0)
                r = add_resource(ret, "ephemeral-storage", eph, false);
        if (r >= 0)
                r = add_resource(ret, "pods", a->kc->max_pods > 0 ? a->kc->max_pods : 110, false);
        return r;
}

/* The well-known labels kubelet puts on its node, for nodeSelector and
 * node affinity: kubernetes.io/arch, kubernetes.io/hostname, kubernetes.io/os. */
static const char *go_arch(void) {
        static const struct {
                const char *machine, *arch;
        } map[] = {
                { "x86_64", "amd64" },    { "aarch64", "arm64" }, { "armv7l", "arm" },
                { "ppc64le", "ppc64le" }, { "s390x", "s390x" },   { "riscv64", "riscv64" },
        };
        struct utsname u;

        if (uname(&u) < 0)
                return "unknown";
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (strcmp(u.machine, map[i].machine) == 0)
                        return map[i].arch;
        return "unknown";
}

int agent_admission_init(Agent *a, CubError *err) {
        PodResourceList alloc = {};
        char *label_keys[] = { (char *) "kubernetes.io/arch", (char *) "kubernetes.io/hostname",
                               (char *) "kubernetes.io/os" };
        char *label_values[] = { (char *) go_arch(), a->opt.node_name, (char *) "linux" };
        PodStringMap labels = { .keys = label_keys, .values = label_values, .n = ELEMENTSOF(label_keys) };
        AdmitNodeInfo ni;
        char note[1024] = "";
        int r;

        r = cpumgr_topology_from_sys("/sys", &a->topo, err);
        if (r < 0)
                return cub_err_wrap(err, "CPU topology");
        r = agent_cpumgr_new(a->kc, &a->topo, "CPU manager", &a->cpu, err);
        if (r < 0)
                return r;
        if (asprintf(&a->ledger_path, "%s/admission_ledger", a->opt.state_dir) < 0 ||
            asprintf(&a->cpu_state_path, "%s/cpu_manager_state", a->opt.state_dir) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (cpumgr_policy(a->cpu) == CPUMGR_POLICY_STATIC) {
                r = cpumgr_checkpoint_load(a->cpu, a->cpu_state_path, note, sizeof(note), err);
                if (r < 0)
                        return r;
                if (r > 0)
                        cub_log(LOG_WARNING, "CPU manager state '%s': %s", a->cpu_state_path, note);
        }
        r = node_allocatable(a, &alloc);
        if (r < 0) {
                pod_resource_list_done(&alloc);
                return cub_err_set(err, -r, "node allocatable: %s", strerror(-r));
        }
        ni = (AdmitNodeInfo){
                .name = a->opt.node_name,
                .labels = &labels,
                .allocatable = &alloc,
                .max_pods = a->kc->max_pods,
        };
        r = admit_snapshot_new(&ni, &a->snap, err);
        pod_resource_list_done(&alloc);
        if (r < 0)
                return r;
        admit_snapshot_set_cpumgr(a->snap, a->cpu);
        admit_options_init(&a->admit_opt);
        r = admit_ledger_load(a->ledger_path, &a->ledger, &a->n_ledger, err);
        if (r < 0) {
                /* a broken ledger costs nothing but a fresh admission of every pod */
                cub_log(LOG_WARNING, "%s, starting with an empty admission ledger", err->msg);
                cub_err_clear(err);
                a->ledger = NULL;
                a->n_ledger = 0;
        }
        a->pool_gen = 1;
        return 0;
}

void agent_admission_done(Agent *a) {
        a->snap = admit_snapshot_free(a->snap);
        a->cpu = cpumgr_free(a->cpu);
        cpumgr_topology_done(&a->topo);
        admit_ledger_entries_free(a->ledger, a->n_ledger);
        a->ledger = NULL;
        a->n_ledger = 0;
        free(a->ledger_path);
        free(a->cpu_state_path);
}

static bool in_ledger(Agent *a, const char *uid) {
        for (size_t i = 0; i < a->n_ledger; i++)
                if (strcmp(a->ledger[i].uid, uid) == 0)
                        return true;
        return false;
}

static void pool_changed(Agent *a, const CpumgrSet *before) {
        if (cpumgr_set_equal(before, cpumgr_shared_pool(a->cpu)))
                return;
        a->pool_gen++;
        agent_admission_reconcile(a);
}

static void add_victim(AgentPod *p, const char *uid) {
        char **n = realloc(p->victims, (p->n_victims + 1) * sizeof(char *));

        if (!n)
                return;
        p->victims = n;
        p->victims[p->n_victims] = strdup(uid);
        if (p->victims[p->n_victims])
                p->n_victims++;
}

void agent_admission_probe_host(Agent *a) {
        _cleanup_free_ AdmitHostPort *ports = NULL;
        size_t n_ports = 0;
        CubError err = {};

        if (admit_host_listening_ports(&ports, &n_ports, &err) < 0)
                cub_log(LOG_WARNING, "host ports: %s; admitting on pod ports only", err.msg);
        else if (admit_snapshot_set_host_ports(a->snap, ports, n_ports, &err) < 0)
                cub_log(LOG_WARNING, "host ports: %s", err.msg);
}

/* kubelet's rejectPod: phase Failed, the reason, "Pod was rejected: " + message */
static void reject(Agent *a, AgentPod *p, const char *reason, const char *message) {
        char msg[CUB_ERR_MSG_MAX + 32];

        (void) snprintf(msg, sizeof(msg), "Pod was rejected: %s", message);
        (void) agent_pod_fail(a, p, reason, msg, 0);
}

bool agent_admission_admit(Agent *a, AgentPod *p) {
        const Pod *pod = p->spec->pod;
        AdmitDecision d;
        AdmitConditions cond = {
                .memory_pressure = a->evict_conditions[EVICT_CONDITION_MEMORY_PRESSURE],
                .disk_pressure = a->evict_conditions[EVICT_CONDITION_DISK_PRESSURE],
                .pid_pressure = a->evict_conditions[EVICT_CONDITION_PID_PRESSURE],
        };
        CpumgrSet before = *cpumgr_shared_pool(a->cpu);
        CubError err = {};
        int r;

        if (p->admitted)
                return true;
        if (in_ledger(a, pod->uid)) {
                /* admitted by the previous run: it keeps its place and its CPUs */
                r = admit_snapshot_add(a->snap, pod, &err);
                if (r < 0 && r != -EEXIST) {
                        cub_log(LOG_ERR, "pod %s/%s: restoring its admission: %s", pod->namespace_, pod->name, err.msg);
                        return false;
                }
                cub_err_clear(&err);
                if (cpumgr_allocate_pod(a->cpu, pod, p->spec->qos, &err) < 0)
                        cub_log(LOG_WARNING, "pod %s/%s: exclusive CPUs after restart: %s", pod->namespace_, pod->name,
                                err.msg);
                p->admitted = true;
                p->pool_gen = a->pool_gen;
                pool_changed(a, &before);
                return true;
        }

        admit_snapshot_set_conditions(a->snap, &cond);
        r = admit_decide(a->snap, pod, &a->admit_opt, &d, &err);
        if (r < 0) {
                cub_log(LOG_ERR, "pod %s/%s: admission: %s", pod->namespace_, pod->name, err.msg);
                reject(a, p, "UnexpectedAdmissionError", err.msg);
                return false;
        }
        if (!d.admit) {
                cub_log(LOG_WARNING, "pod %s/%s rejected: %s: %s", pod->namespace_, pod->name, d.reason, d.message);
                reject(a, p, d.reason, d.message);
                admit_decision_done(&d);
                return false;
        }
        for (size_t i = 0; i < d.n_victims; i++) {
                AgentPod *v = agent_find_pod(a, d.victims[i].uid);
                char msg[ADMIT_PREEMPTED_MESSAGE_MAX];

                (void) admit_preempted_message(pod, msg);
                cub_log(LOG_WARNING, "pod %s/%s preempts %s (priority %" PRId32 ")", pod->namespace_, pod->name,
                        d.victims[i].key, d.victims[i].priority);
                if (v) {
                        /* the sync waits for the victims whose containers are stopping */
                        if (agent_pod_fail(a, v, ADMIT_PREEMPTED_REASON, msg,
                                           v->spec->pod->termination_grace_period_seconds))
                                add_victim(p, d.victims[i].uid);
                } else
                        (void) admit_snapshot_forget(a->snap, d.victims[i].uid);
        }
        r = admit_snapshot_assume(a->snap, pod, &d.placement, &err);
        if (r < 0) {
                cub_log(LOG_ERR, "pod %s/%s: reserving: %s", pod->namespace_, pod->name, err.msg);
                reject(a, p, "UnexpectedAdmissionError", err.msg);
                admit_decision_done(&d);
                return false;
        }
        if (*d.placement.cpuset)
                cub_log(LOG_INFO, "pod %s/%s admitted, exclusive CPUs %s", pod->namespace_, pod->name,
                        d.placement.cpuset);
        else
                cub_log(LOG_INFO, "pod %s/%s admitted", pod->namespace_, pod->name);
        admit_decision_done(&d);
        p->admitted = true;
        p->pool_gen = a->pool_gen;
        save(a);
        pool_changed(a, &before);
        return p->n_victims == 0;
}

void agent_admission_forget(Agent *a, AgentPod *p) {
        CpumgrSet before;

        if (!p->admitted || !a->snap)
                return;
        before = *cpumgr_shared_pool(a->cpu);
        (void) admit_snapshot_forget(a->snap, p->spec->pod->uid);
        cpumgr_release_pod(a->cpu, p->spec->pod->uid);
        p->admitted = false;
        save(a);
        pool_changed(a, &before);
}

void agent_admission_confirm(Agent *a, AgentPod *p) {
        AdmitLedgerState st;

        /* the ledger is written once, when the pod first starts */
        if (!p->admitted || admit_snapshot_state(a->snap, p->spec->pod->uid, &st) < 0 || st != ADMIT_LEDGER_ASSUMED)
                return;
        if (admit_snapshot_confirm(a->snap, p->spec->pod->uid) >= 0)
                save(a);
}

void agent_admission_settle(Agent *a) {
        _cleanup_free_ const char **live = calloc(a->n_pods + 1, sizeof(char *));
        CpumgrSet before = *cpumgr_shared_pool(a->cpu);
        size_t n = 0, dropped;

        if (!live)
                return;
        for (size_t i = 0; i < a->n_pods; i++)
                if (a->pods[i]->admitted)
                        live[n++] = a->pods[i]->spec->pod->uid;
        dropped = cpumgr_release_stale(a->cpu, live, n);
        if (dropped > 0)
                cub_log(LOG_INFO, "CPU manager: released the CPUs of %zu pods that are gone", dropped);
        admit_ledger_entries_free(a->ledger, a->n_ledger);
        a->ledger = NULL;
        a->n_ledger = 0;
        save(a);
        pool_changed(a, &before);
}

char **agent_admission_cpusets(Agent *a, const AgentPod *p) {
        const Pod *pod = p->spec->pod;
        char **l = calloc(p->n + 1, sizeof(char *));
        _cleanup_free_ char *buf = malloc(CPUMGR_SET_STR_MAX);

        if (!l || !buf) {
                free(l);
                return NULL;
        }
        for (size_t k = 0; k < p->n; k++) {
                const PodContainer *c = k < pod->n_init_containers ? &pod->init_containers[k]
                                                                   : &pod->containers[k - pod->n_init_containers];

                l[k] = strdup(cpumgr_container_cpuset(a->cpu, pod->uid, c->name, buf, CPUMGR_SET_STR_MAX));
                if (!l[k]) {
                        agent_admission_cpusets_free(l, k);
                        return NULL;
                }
        }
        return l;
}

void agent_admission_cpusets_free(char **l, size_t n) {
        if (!l)
                return;
        for (size_t i = 0; i < n; i++)
                free(l[i]);
        free(l);
}

void agent_admission_reconcile(Agent *a) {
        if (cpumgr_policy(a->cpu) != CPUMGR_POLICY_STATIC)
                return;
        for (size_t i = 0; i < a->n_pods; i++) {
                AgentPod *p = a->pods[i];
                char **sets;
                WorkerJob *j;

                if (!p->admitted || p->terminal || p->busy || !p->observed || p->pool_gen == a->pool_gen)
                        continue;
                sets = agent_admission_cpusets(a, p);
                j = worker_job_new(WORKER_UPDATE);
                if (!sets || !j) {
                        agent_admission_cpusets_free(sets, p->n);
                        worker_job_free(j);
                        continue;
                }
                j->spec = worker_spec_ref(p->spec);
                j->cpusets = sets;
                p->pool_gen = a->pool_gen;
                p->busy = true;
                worker_pool_submit(a->pool, j);
        }
}

void agent_admission_status(Agent *a, void *json_pod, const AgentPod *p) {
        json_t *o = json_pod, *cs = json_object_get(o, "containers");
        _cleanup_free_ char *buf = malloc(CPUMGR_SET_STR_MAX);
        const Pod *pod = p->spec->pod;
        json_t *c;
        size_t k;

        if (!buf)
                return;
        json_object_set_new(o, "reason", json_string(p->reason));
        json_object_set_new(o, "message", json_string(p->message));
        json_object_set_new(o, "admitted", json_boolean(p->admitted));
        json_object_set_new(o, "priority", json_integer(pod->priority));
        json_array_foreach(cs, k, c) {
                const char *name = json_string_value(json_object_get(c, "name"));
                const CpumgrSet *ex;

                if (!name)
                        continue;
                ex = p->admitted ? cpumgr_container_cpus(a->cpu, pod->uid, name) : NULL;
                json_object_set_new(
                        c, "cpuset",
                        json_string(!p->admitted ? ""
                                    : ex         ? cpumgr_set_format(ex, buf, CPUMGR_SET_STR_MAX)
                                         : cpumgr_container_cpuset(a->cpu, pod->uid, name, buf, CPUMGR_SET_STR_MAX)));
                json_object_set_new(c, "exclusive", json_boolean(ex != NULL));
        }
}

void agent_admission_node_status(Agent *a, void *json_doc) {
        json_t *doc = json_doc;
        _cleanup_free_ char *buf = malloc(3 * CPUMGR_SET_STR_MAX);
        CpumgrSet freex;

        if (!buf)
                return;
        cpumgr_free_exclusive(a->cpu, &freex);
        json_object_set_new(
                doc, "cpuManager",
                json_pack("{s:s,s:s,s:s,s:s}", "policy", cpumgr_policy_to_string(cpumgr_policy(a->cpu)), "reserved",
                          cpumgr_set_format(cpumgr_reserved_set(a->cpu), buf, CPUMGR_SET_STR_MAX), "sharedPool",
                          cpumgr_set_format(cpumgr_shared_pool(a->cpu), buf + CPUMGR_SET_STR_MAX, CPUMGR_SET_STR_MAX),
                          "freeExclusive",
                          cpumgr_set_format(&freex, buf + 2 * CPUMGR_SET_STR_MAX, CPUMGR_SET_STR_MAX)));
        json_object_set_new(doc, "allocated",
                            json_pack("{s:I,s:I,s:I}", "pods", (json_int_t) admit_snapshot_n_pods(a->snap), "cpu",
                                      (json_int_t) admit_snapshot_used(a->snap, "cpu"), "memory",
                                      (json_int_t) admit_snapshot_used(a->snap, "memory")));
}
