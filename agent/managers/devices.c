/* SPDX-License-Identifier: Apache-2.0 */
/* The device manager: kubelet's device-plugin Registration server and
 * podDevices (deviceplugin/, a library) behind the manager table.
 *
 *  - each plugin's healthy devices become the node's allocatable of its
 *    resource (LC_ACTION_NODE_RESOURCE: NodeResourcesFit counts them);
 *  - admit: after the admission manager (fit, preemption), the pod's
 *    containers get device IDs, all or nothing, chosen and reserved on the
 *    loop; the plugin calls (GetPreferredAllocation, Allocate) run on the
 *    device manager's thread of the pass, never on the loop. Until the answer
 *    the pod is held (LC_ACTION_HOLD "devices:<uid>": no sync, so no
 *    container without its devices, env, mounts) while other pods, the relist
 *    and the HTTP API go on; the answer releases it (LC_ACTION_RELEASE) or
 *    rejects it (LC_ACTION_REJECT: UnexpectedAdmissionError, "Allocate failed
 *    due to <error>, which is unexpected"; devices freed, not checkpointed);
 *  - prepare_container: the answer becomes the container's devices, mounts,
 *    envs and annotations, and the label cubelet.io/devices names the IDs;
 *    PreStartContainer is captured for the pod worker, which calls it right
 *    before CreateContainer (30 s); a failure fails that sync, retried;
 *  - devices are released when the pod's containers are stopped (never
 *    handed to two running pods), or at once when nothing of it runs; a
 *    preemptor takes its victims' devices at admission, and a pod short of
 *    devices those of pods that are stopping: its sync waits for them to
 *    stop (LC_ACTION_WAIT);
 *  - after a restart the checkpoint gives every pod its devices back; when
 *    the checkpoint is corrupt the running containers' labels rebuild it.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "../../deviceplugin/deviceplugin.h"
#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/time.h"
#include "devices-metrics.h"
#include "devices-status.h"
#include "managers.h"

#define GPU_RESOURCE "nvidia.com/gpu"
#define GPU_ENV "NVIDIA_VISIBLE_DEVICES"

typedef struct Devices {
        const LcEnv *env;
        DpManager *dp;
        sd_event_source *io;
        char **stopping; /* pods whose devices go when their containers stop */
        size_t n_stopping;
        DevicesMetrics metrics; /* kubelet_device_plugin_*, cubelet_device_* */
        uint64_t generation;    /* bumped when a health or an allocation changed */
} Devices;

static void devices_free(void *userdata) {
        Devices *m = userdata;

        if (!m)
                return;
        sd_event_source_disable_unref(m->io);
        dp_manager_free(m->dp);
        for (size_t i = 0; i < m->n_stopping; i++)
                free(m->stopping[i]);
        free(m->stopping);
        devices_metrics_done(&m->metrics);
        free(m);
}

static void announce(Devices *m, const char *resource) {
        const DpResource *r = dp_manager_find(m->dp, resource);
        LcAction a = { .kind = LC_ACTION_NODE_RESOURCE };

        (void) snprintf(a.resource, sizeof(a.resource), "%s", resource);
        a.quantity = r ? (int64_t) dp_resource_allocatable(r) : 0;
        m->env->act(m->env->loop, &a);
}

static void on_change(void *userdata, const char *resource) {
        Devices *m = userdata;
        const DpResource *r = dp_manager_find(m->dp, resource);

        if (r)
                cub_log(LOG_INFO, "device plugin %s (%s): %s, %zu devices, %zu allocatable%s%s", resource,
                        *r->endpoint ? r->endpoint : "-", r->connected ? "connected" : "disconnected",
                        dp_resource_capacity(r), dp_resource_allocatable(r), *r->last_error ? ": " : "", r->last_error);
        else
                cub_log(LOG_INFO, "device plugin %s: gone", resource);
        devices_metrics_health(&m->metrics, m->dp);
        m->generation++;
        announce(m, resource);
}

/* "devices:<uid>": the hold of a pod waiting for its plugins' answer */
static void hold_name(const char *uid, char *buf, size_t size) {
        (void) snprintf(buf, size, "devices:%s", uid);
}

/* the end of a pass: the pod's hold goes; it is rejected on a failure */
static void on_allocated(void *userdata, const char *uid, int r, const char *message, uint64_t took_usec) {
        Devices *m = userdata;
        LcAction a = { .kind = LC_ACTION_REJECT, .reason = "UnexpectedAdmissionError" };

        (void) snprintf(a.uid, sizeof(a.uid), "%s", uid);
        (void) snprintf(a.message, sizeof(a.message), "%s", message);
        if (r < 0) {
                cub_log(LOG_WARNING, "pod uid %s: devices: %s", uid, message);
                m->env->act(m->env->loop, &a);
        }
        m->generation++;
        for (size_t i = 0; r >= 0 && i < dp_manager_n_allocations(m->dp); i++)
                if (strcmp(dp_manager_allocation(m->dp, i)->pod_uid, uid) == 0)
                        devices_metrics_observe(&m->metrics, dp_manager_allocation(m->dp, i)->resource, took_usec);
        a.kind = LC_ACTION_RELEASE;
        hold_name(uid, a.uid, sizeof(a.uid));
        m->env->act(m->env->loop, &a);
}

static int on_dp(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Devices *m = userdata;

        (void) s;
        (void) fd;
        (void) revents;
        (void) dp_manager_dispatch(m->dp);
        devices_metrics_registrations(&m->metrics, m->dp);
        return 0;
}

/* "res=id,id;res2=id" → dp_manager_adopt() for each resource */
static void adopt_label(Devices *m, const char *uid, const char *container, const char *label) {
        _cleanup_free_ char *copy = strdup(label);
        char *save = NULL;

        if (!copy)
                return;
        for (char *part = strtok_r(copy, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
                char *eq = strchr(part, '='), *save2 = NULL;
                const char *ids[64];
                size_t n = 0;
                CubError err = {};

                if (!eq)
                        continue;
                *eq = '\0';
                for (char *id = strtok_r(eq + 1, ",", &save2); id && n < ELEMENTSOF(ids);
                     id = strtok_r(NULL, ",", &save2))
                        ids[n++] = id;
                if (dp_manager_adopt(m->dp, uid, container, part, ids, n, &err) < 0)
                        cub_log(LOG_WARNING, "device checkpoint: pod uid %s container '%s': %s", uid, container,
                                err.msg);
                else
                        cub_log(LOG_INFO, "device checkpoint: pod uid %s container '%s' keeps %s=%s", uid, container,
                                part, eq + 1);
        }
}

/* The checkpoint was corrupt: what runs says which devices are held. */
static void rebuild_from_runtime(Devices *m) {
        const char *selector[] = { WORKER_LABEL_MANAGED, "true", NULL };
        CriContainer *ct = NULL;
        size_t n = 0;
        CubError err = {};

        if (!m->env->cri)
                return;
        if (cri_list_containers(m->env->cri, NULL, selector, &ct, &n, &err) < 0) {
                cub_log(LOG_ERR, "device checkpoint: cannot list the running containers: %s", err.msg);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                const char *uid = cri_kv_get(ct[i].labels, WORKER_LABEL_UID);
                const char *devs = cri_kv_get(ct[i].labels, WORKER_LABEL_DEVICES);

                if (!uid || !devs || !*devs)
                        continue;
                if (ct[i].state != CRI_CONTAINER_RUNNING && ct[i].state != CRI_CONTAINER_CREATED)
                        continue;
                adopt_label(m, uid, ct[i].name, devs);
        }
        cri_containers_free(ct, n);
}

static int devices_new(const LcEnv *env, void **ret, CubError *err) {
        Devices *m = calloc(1, sizeof(*m));
        const char *dir = env->kc->device_plugin_dir ? env->kc->device_plugin_dir : DP_DEFAULT_DIR;
        DpManagerOptions o;
        int r;

        if (!m)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->env = env;
        *ret = m;
        if (!*dir) {
                cub_log(LOG_INFO, "device manager: off (devicePluginDir is empty)");
                return 0;
        }
        o = (DpManagerOptions){ .dir = dir, .on_change = on_change, .on_allocated = on_allocated, .userdata = m };
        r = dp_manager_new(&o, &m->dp, err);
        if (r < 0) {
                /* no devices is not a reason to run no pods */
                cub_log(LOG_ERR, "device manager: %s; running without device plugins", err->msg);
                cub_err_clear(err);
                m->dp = NULL;
                return 0;
        }
        if (*dp_manager_checkpoint_note(m->dp)) {
                cub_log(LOG_WARNING, "device manager: %s; rebuilding the allocations from the running containers",
                        dp_manager_checkpoint_note(m->dp));
                rebuild_from_runtime(m);
        }
        r = sd_event_add_io(env->event, &m->io, dp_manager_fd(m->dp), EPOLLIN, on_dp, m);
        if (r < 0) {
                devices_free(m);
                *ret = NULL;
                return cub_err_set(err, -r, "device manager: event source: %s", strerror(-r));
        }
        cub_log(LOG_INFO, "device manager: serving %s/%s", dir, DP_KUBELET_SOCKET);
        return 0;
}

static void devices_attach(void *userdata) {
        Devices *m = userdata;

        /* resources known from the checkpoint are advertised (0 until their
         * plugin registers): their requests are checked, not dropped */
        for (size_t i = 0; m->dp && i < dp_manager_n_resources(m->dp); i++)
                announce(m, dp_manager_resource(m->dp, i)->name);
}

/* The device-plugin resources a container asks for (its limits). */
typedef struct Want {
        const char **names;
        int64_t *counts;
        size_t n;
} Want;

static int container_wants(Devices *m, const PodContainer *c, Want *w) {
        w->names = calloc(c->limits.n + 1, sizeof(char *));
        w->counts = calloc(c->limits.n + 1, sizeof(int64_t));
        w->n = 0;
        if (!w->names || !w->counts)
                return -ENOMEM;
        for (size_t i = 0; i < c->limits.n; i++) {
                const PodResource *r = &c->limits.items[i];
                int64_t v = cub_quantity_value(r->q);

                if (v <= 0 || !dp_manager_find(m->dp, r->name))
                        continue;
                w->names[w->n] = r->name;
                w->counts[w->n++] = v;
        }
        return 0;
}

static bool stopping_drop(Devices *m, const char *uid) {
        for (size_t i = 0; i < m->n_stopping; i++)
                if (strcmp(m->stopping[i], uid) == 0) {
                        free(m->stopping[i]);
                        m->stopping[i] = m->stopping[--m->n_stopping];
                        return true;
                }
        return false;
}

static void release(Devices *m, const char *uid) {
        CubError err = {};

        (void) stopping_drop(m, uid);
        m->generation++;
        if (dp_manager_release_pod(m->dp, uid, &err) < 0)
                cub_log(LOG_ERR, "device manager: releasing pod uid %s: %s", uid, err.msg);
}

static int devices_admit(void *userdata, const LcPod *p, LcAdmitResult *ret, CubError *err) {
        Devices *m = userdata;
        const Pod *pod = p->spec->pod;
        size_t n = pod->n_init_containers + pod->n_containers;
        _cleanup_free_ DpContainerRequest *req = NULL;
        _cleanup_free_ Want *wants = NULL;
        bool any = false;
        CubError e = {};
        uint64_t t0 = 0;
        int r = 0;

        *ret = (LcAdmitResult){ .admit = true };
        if (!m->dp)
                return 0;
        req = calloc(n + 1, sizeof(*req));
        wants = calloc(n + 1, sizeof(*wants));
        if (!req || !wants)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t k = 0; k < n && r >= 0; k++) {
                bool init;
                const PodContainer *c = pod_container_at(pod, k, &init);

                r = container_wants(m, c, &wants[k]);
                req[k] = (DpContainerRequest){
                        .name = c->name,
                        .init = init,
                        .restartable = init && pod_container_is_sidecar(c),
                        .resources = wants[k].names,
                        .counts = wants[k].counts,
                        .n_resources = wants[k].n,
                        .numa_mask = p->numa ? p->numa[k] : 0,
                };
                any = any || wants[k].n > 0;
        }
        if (r >= 0 && any) {
                /* a preemptor takes over its victims' devices now: its
                 * containers start only once the victims have stopped */
                for (size_t i = 0; i < p->n_victims; i++)
                        release(m, p->victims[i]);
                t0 = cub_now_usec(CLOCK_MONOTONIC);
                r = dp_manager_allocate_pod(m->dp, pod->uid, req, n, &e);
                if (r < 0 && m->n_stopping > 0) {
                        /* devices held by pods that are stopping: the pod
                         * takes them over and starts once they have stopped */
                        while (m->n_stopping > 0) {
                                LcAction a = { .kind = LC_ACTION_WAIT };

                                (void) snprintf(a.uid, sizeof(a.uid), "%s", m->stopping[0]);
                                (void) snprintf(a.waiter, sizeof(a.waiter), "%s", pod->uid);
                                cub_log(LOG_INFO, "pod %s/%s waits for the devices of pod uid %s, which is stopping",
                                        pod->namespace_, pod->name, a.uid);
                                m->env->act(m->env->loop, &a);
                                release(m, a.uid);
                        }
                        cub_err_clear(&e);
                        r = dp_manager_allocate_pod(m->dp, pod->uid, req, n, &e);
                }
                for (size_t k = 0; r == 0 && k < n; k++)
                        for (size_t j = 0; j < wants[k].n; j++)
                                devices_metrics_observe(&m->metrics, wants[k].names[j],
                                                        cub_now_usec(CLOCK_MONOTONIC) - t0);
                if (r > 0) {
                        /* reserved; the plugins answer later: no sync until then */
                        LcAction a = { .kind = LC_ACTION_HOLD };

                        hold_name(pod->uid, a.uid, sizeof(a.uid));
                        (void) snprintf(a.waiter, sizeof(a.waiter), "%s", pod->uid);
                        m->env->act(m->env->loop, &a);
                        r = 0;
                }
                if (r < 0) {
                        *ret = (LcAdmitResult){ .admit = false };
                        (void) snprintf(ret->reason, sizeof(ret->reason), "UnexpectedAdmissionError");
                        (void) snprintf(ret->message, sizeof(ret->message), "%s", e.msg);
                        cub_log(LOG_WARNING, "pod %s/%s: devices: %s", pod->namespace_, pod->name, e.msg);
                        r = 0;
                }
        }
        for (size_t k = 0; k < n; k++) {
                free(wants[k].names);
                free(wants[k].counts);
        }
        return r < 0 ? cub_err_set(err, -r, "out of memory") : 0;
}

static int kv_push_checked(char ***l, const char *k, const char *v, CubError *err) {
        return worker_kv_push(l, k, v) < 0 ? cub_err_set(err, ENOMEM, "out of memory") : 0;
}

/* kubelet's merge of a container's allocations: the first writer wins on
 * env and annotation keys, devices and mounts are de-duplicated by their
 * container path. */
static int add_response(LcContainerConfig *cfg, const DpContainerResponse *resp, CubError *err) {
        int r;

        for (size_t i = 0; i < resp->n_envs; i++)
                if (!cri_kv_get(cfg->envs, resp->envs[i].key) &&
                    (r = kv_push_checked(&cfg->envs, resp->envs[i].key, resp->envs[i].value, err)) < 0)
                        return r;
        for (size_t i = 0; i < resp->n_annotations; i++)
                if (!cri_kv_get(cfg->annotations, resp->annotations[i].key) &&
                    (r = kv_push_checked(&cfg->annotations, resp->annotations[i].key, resp->annotations[i].value,
                                         err)) < 0)
                        return r;
        for (size_t i = 0; i < resp->n_devices; i++) {
                const DpDeviceSpec *d = &resp->devices[i];
                WorkerDevice *nd;
                bool dup = false;

                for (size_t j = 0; j < cfg->n_devices; j++)
                        dup = dup || strcmp(cfg->devices[j].container_path, d->container_path) == 0;
                if (dup)
                        continue;
                nd = realloc(cfg->devices, (cfg->n_devices + 1) * sizeof(*nd));
                if (!nd)
                        return cub_err_set(err, ENOMEM, "out of memory");
                cfg->devices = nd;
                nd[cfg->n_devices] = (WorkerDevice){ .container_path = strdup(d->container_path),
                                                     .host_path = strdup(d->host_path),
                                                     .permissions = strdup(d->permissions ? d->permissions : "") };
                cfg->n_devices++;
                if (!nd[cfg->n_devices - 1].container_path || !nd[cfg->n_devices - 1].host_path ||
                    !nd[cfg->n_devices - 1].permissions)
                        return cub_err_set(err, ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < resp->n_mounts; i++) {
                const DpMount *mt = &resp->mounts[i];
                WorkerMount *nm;
                bool dup = false;

                for (size_t j = 0; j < cfg->n_mounts; j++)
                        dup = dup || strcmp(cfg->mounts[j].container_path, mt->container_path) == 0;
                if (dup)
                        continue;
                nm = realloc(cfg->mounts, (cfg->n_mounts + 1) * sizeof(*nm));
                if (!nm)
                        return cub_err_set(err, ENOMEM, "out of memory");
                cfg->mounts = nm;
                nm[cfg->n_mounts] = (WorkerMount){ .container_path = strdup(mt->container_path),
                                                   .host_path = strdup(mt->host_path),
                                                   .readonly = mt->read_only };
                cfg->n_mounts++;
                if (!nm[cfg->n_mounts - 1].container_path || !nm[cfg->n_mounts - 1].host_path)
                        return cub_err_set(err, ENOMEM, "out of memory");
        }
        return 0;
}

/* on the pod worker, right before CreateContainer */
static int pre_start_run(void *ud, CubError *err) {
        return dp_pre_start_run(ud, err);
}

static void pre_start_free(void *ud) {
        dp_pre_start_free(ud);
}

static int devices_prepare(void *userdata, const LcPod *p, size_t k, LcContainerConfig *cfg, CubError *err) {
        Devices *m = userdata;
        const Pod *pod = p->spec->pod;
        const PodContainer *c = pod_container_at(pod, k, NULL);
        const DpAllocation *const *al = NULL;
        size_t n = 0, len = 0;
        _cleanup_free_ char *label = NULL;
        _cleanup_(cub_fclosep) FILE *f = NULL;
        DpPreStart *ps = NULL;
        int r;

        if (!m->dp)
                return 0;
        r = dp_manager_container_allocations(m->dp, pod->uid, c->name, &al, &n, err);
        if (r < 0)
                return cub_err_wrap(err, "container '%s': devices", c->name);
        /* no GPU asked for, on a node that has them: none seen, even where
         * the image sets NVIDIA_VISIBLE_DEVICES=all for a container toolkit */
        if (n == 0)
                return dp_manager_find(m->dp, GPU_RESOURCE) ? kv_push_checked(&cfg->envs, GPU_ENV, "void", err) : 0;
        r = dp_manager_pre_start_prepare(m->dp, pod->uid, c->name, &ps, err);
        if (r < 0)
                return cub_err_wrap(err, "container '%s'", c->name);
        if (ps) {
                cfg->pre_create = pre_start_run;
                cfg->pre_create_free = pre_start_free;
                cfg->pre_create_ud = TAKE_PTR(ps);
        }
        f = open_memstream(&label, &len);
        if (!f)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
                r = add_response(cfg, &al[i]->resp, err);
                if (r < 0)
                        return r;
                fprintf(f, "%s%s=", i > 0 ? ";" : "", al[i]->resource);
                for (size_t j = 0; j < al[i]->n_ids; j++)
                        fprintf(f, "%s%s", j > 0 ? "," : "", al[i]->ids[j]);
        }
        if (fclose(TAKE_PTR(f)) != 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        return kv_push_checked(&cfg->labels, WORKER_LABEL_DEVICES, label, err);
}

/* Whether something of the pod may still run in the runtime. */
static bool may_run(const LcPod *p) {
        if (!p->observed)
                return false;
        for (size_t k = 0; k < p->n; k++)
                if (p->statuses[k].state == LC_CONTAINER_RUNNING || p->statuses[k].state == LC_CONTAINER_CREATED ||
                    p->statuses[k].state == LC_CONTAINER_TERMINATING)
                        return true;
        return false;
}

static void devices_removed(void *userdata, const LcPod *p) {
        Devices *m = userdata;
        const char *uid = p->spec->pod->uid;
        char **ns;

        if (!m->dp)
                return;
        if (!may_run(p)) {
                release(m, uid);
                return;
        }
        /* kept until its containers have stopped */
        for (size_t i = 0; i < m->n_stopping; i++)
                if (strcmp(m->stopping[i], uid) == 0)
                        return;
        ns = realloc(m->stopping, (m->n_stopping + 1) * sizeof(char *));
        if (!ns || !(ns[m->n_stopping] = strdup(uid))) {
                if (ns)
                        m->stopping = ns;
                release(m, uid);
                return;
        }
        m->stopping = ns;
        m->n_stopping++;
}

static void devices_stopped(void *userdata, const char *uid) {
        Devices *m = userdata;

        if (m->dp && stopping_drop(m, uid))
                release(m, uid);
}

static void devices_restore(void *userdata) {
        Devices *m = userdata;
        size_t n_pods, n = 0;
        const LcPod *const *pods = m->env->pods(m->env->loop, &n_pods);
        _cleanup_free_ const char **live = calloc(n_pods + 1, sizeof(char *));
        CubError err = {};

        if (!m->dp || !live)
                return;
        for (size_t i = 0; i < n_pods; i++)
                if (pods[i]->admitted)
                        live[n++] = pods[i]->spec->pod->uid;
        if (dp_manager_retain_pods(m->dp, live, n, &err) < 0)
                cub_log(LOG_ERR, "device manager: %s", err.msg);
}

static void devices_pod_status(void *userdata, const LcPod *p, void *json_pod) {
        Devices *m = userdata;

        if (m->dp)
                devices_status_pod(m->dp, p, json_pod);
}

static void devices_container_api_status(void *userdata, const LcPod *p, const char *container, void *json_status) {
        Devices *m = userdata;
        json_t *l = m->dp ? devices_resources_status(m->dp, p->spec->pod->uid, container) : NULL;

        if (l)
                json_object_set_new(json_status, "allocatedResourcesStatus", l);
}

static uint64_t devices_api_generation(void *userdata) {
        return ((Devices *) userdata)->generation;
}

static void devices_node_status(void *userdata, void *json_doc) {
        Devices *m = userdata;

        if (m->dp)
                devices_status_node(m->dp, json_doc);
}

static void devices_metrics(void *userdata, FILE *f) {
        Devices *m = userdata;

        devices_metrics_render(&m->metrics, f);
}

const LcManagerVtable mgr_devices = {
        .metrics = devices_metrics,
        .name = "devices",
        .new = devices_new,
        .free = devices_free,
        .attach = devices_attach,
        .admit = devices_admit,
        .prepare_container = devices_prepare,
        .pod_removed = devices_removed,
        .pod_stopped = devices_stopped,
        .restore = devices_restore,
        .pod_status = devices_pod_status,
        .node_status = devices_node_status,
        .container_api_status = devices_container_api_status,
        .api_generation = devices_api_generation,
};
