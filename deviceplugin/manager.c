/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manager: its life cycle, the queue from the plugin threads to the
 * owner's loop (an eventfd and a mutex-protected list), the resource table.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../agent/util/cleanup.h"
#include "../agent/util/fileio.h"
#include "../agent/util/log.h"
#include "../agent/util/time.h"
#include "dp-internal.h"

void dp_event_free(DpEvent *e) {
        if (!e)
                return;
        free(e->resource);
        free(e->endpoint);
        free(e->devices);
        free(e);
}

void dp_manager_post(DpManager *m, DpEvent *e) {
        uint64_t one = 1;

        e->next = NULL;
        pthread_mutex_lock(&m->lock);
        *m->events_tail = e;
        m->events_tail = &e->next;
        pthread_mutex_unlock(&m->lock);
        (void) !write(m->efd, &one, sizeof(one));
}

/* Removes the socket files of dir (stale plugin sockets, kubelet.sock); other files stay. */
static int remove_sockets(const char *dir, CubError *err) {
        DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                return cub_err_set(err, errno, "device plugin directory '%s': %m", dir);
        while ((de = readdir(d))) {
                struct stat st;

                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT) {
                        int r = cub_err_set(err, errno, "device plugin directory '%s': cannot remove socket '%s': %m",
                                            dir, de->d_name);
                        closedir(d);
                        return r;
                }
        }
        closedir(d);
        return 0;
}

int dp_manager_new(const DpManagerOptions *o, DpManager **ret, CubError *err) {
        _cleanup_(dp_manager_freep) DpManager *m = NULL;
        const char *dir = o && o->dir ? o->dir : DP_DEFAULT_DIR;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->efd = -EBADF;
        pthread_mutex_init(&m->lock, NULL);
        m->events_tail = &m->events;
        m->ops = &dp_grpc_ops;
        m->rpc_timeout_usec = o && o->rpc_timeout_usec ? o->rpc_timeout_usec : DP_RPC_TIMEOUT_USEC;
        m->on_change = o ? o->on_change : NULL;
        m->on_allocated = o ? o->on_allocated : NULL;
        m->userdata = o ? o->userdata : NULL;
        m->checkpoint_read_only = o ? o->checkpoint_read_only : false;
        if (!(m->dir = strdup(dir)) || asprintf(&m->checkpoint_path, "%s/%s", dir, DP_CHECKPOINT_FILE) < 0 ||
            asprintf(&m->kubelet_sock, "%s/%s", dir, DP_KUBELET_SOCKET) < 0) {
                m->checkpoint_path = m->kubelet_sock = NULL;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        r = cub_mkdir_p(dir, 0750);
        if (r < 0)
                return cub_err_set(err, -r, "device plugin directory '%s': cannot create it: %s", dir, strerror(-r));
        r = remove_sockets(dir, err);
        if (r < 0)
                return r;
        m->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (m->efd < 0)
                return cub_err_set(err, errno, "eventfd: %m");
        r = dp_manager_load_checkpoint(m, err);
        if (r < 0)
                return r;
        r = dp_registry_start(m, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

static void res_free(DpRes *res) {
        if (!res)
                return;
        free(res->pub.name);
        free(res->pub.endpoint);
        free(res->pub.devices);
        free(res);
}

DpManager *dp_manager_free(DpManager *m) {
        DpEvent *e;

        if (!m)
                return NULL;
        /* no new registrations, then no plugin thread */
        m->server = grpcx_server_stop(m->server);
        for (;;) {
                DpPlugin *p;

                pthread_mutex_lock(&m->lock);
                p = m->plugins;
                pthread_mutex_unlock(&m->lock);
                if (!p)
                        break;
                dp_plugin_stop(p);
        }
        /* the allocation threads: cancelled and joined, their events dropped below */
        dp_job_cancel(m, NULL);
        while ((e = m->events)) {
                m->events = e->next;
                dp_event_free(e);
        }
        for (size_t i = 0; i < m->n_res; i++)
                res_free(m->res[i]);
        free(m->res);
        for (size_t i = 0; i < m->n_allocs; i++)
                dp_alloc_free(m->allocs[i]);
        free(m->allocs);
        free(m->scratch);
        if (m->efd >= 0)
                close(m->efd);
        pthread_mutex_destroy(&m->lock);
        free(m->dir);
        free(m->checkpoint_path);
        free(m->kubelet_sock);
        free(m);
        return NULL;
}

const char *dp_manager_dir(const DpManager *m) {
        return m->dir;
}

const char *dp_manager_checkpoint_note(const DpManager *m) {
        return m->note;
}

int dp_manager_fd(DpManager *m) {
        return m->efd;
}

void dp_manager_set_ops(DpManager *m, const DpPluginOps *ops, void *ud) {
        m->ops = ops ? ops : &dp_grpc_ops;
        m->ops_ud = ud;
}

/* ---- resources --------------------------------------------------------------- */

size_t dp_manager_n_resources(const DpManager *m) {
        return m->n_res;
}

const DpResource *dp_manager_resource(const DpManager *m, size_t i) {
        return i < m->n_res ? &m->res[i]->pub : NULL;
}

DpRes *dp_manager_res(const DpManager *m, const char *name) {
        for (size_t i = 0; i < m->n_res; i++)
                if (strcmp(m->res[i]->pub.name, name) == 0)
                        return m->res[i];
        return NULL;
}

const DpResource *dp_manager_find(const DpManager *m, const char *name) {
        DpRes *res = dp_manager_res(m, name);

        return res ? &res->pub : NULL;
}

int dp_manager_resource_get(DpManager *m, const char *name, DpRes **ret) {
        DpRes *res = dp_manager_res(m, name), **v;
        size_t at = 0;

        if (res) {
                *ret = res;
                return 0;
        }
        res = calloc(1, sizeof(*res));
        if (!res || !(res->pub.name = strdup(name)) || !(res->pub.endpoint = strdup(""))) {
                res_free(res);
                return -ENOMEM;
        }
        v = realloc(m->res, (m->n_res + 1) * sizeof(DpRes *));
        if (!v) {
                res_free(res);
                return -ENOMEM;
        }
        m->res = v;
        while (at < m->n_res && strcmp(m->res[at]->pub.name, name) < 0)
                at++;
        memmove(m->res + at + 1, m->res + at, (m->n_res - at) * sizeof(DpRes *));
        m->res[at] = res;
        m->n_res++;
        *ret = res;
        return 0;
}

static bool healthy_set_equal(const DpDevice *a, size_t na, const DpDevice *b, size_t nb) {
        size_t ha = 0, hb = 0;

        for (size_t i = 0; i < na; i++) {
                if (!a[i].healthy)
                        continue;
                ha++;
                bool found = false;
                for (size_t j = 0; j < nb && !found; j++)
                        found = b[j].healthy && strcmp(a[i].id, b[j].id) == 0;
                if (!found)
                        return false;
        }
        for (size_t j = 0; j < nb; j++)
                hb += b[j].healthy;
        return ha == hb;
}

int dp_manager_set_devices(DpManager *m, const char *resource, const DpDevice *devs, size_t n, bool connected) {
        DpRes *res;
        DpDevice *c = NULL;
        bool same;
        int r;

        r = dp_manager_resource_get(m, resource, &res);
        if (r < 0)
                return r;
        if (n > 0) {
                c = calloc(n, sizeof(DpDevice));
                if (!c)
                        return -ENOMEM;
                memcpy(c, devs, n * sizeof(DpDevice));
        }
        same = healthy_set_equal(res->pub.devices, res->pub.n_devices, c, n);
        free(res->pub.devices);
        res->pub.devices = c;
        res->pub.n_devices = n;
        res->pub.connected = connected;
        if (connected)
                res->pub.disconnected_usec = 0;
        return same ? 0 : 1;
}

bool dp_manager_id_held(const DpManager *m, const char *resource, const char *id, const char *skip_pod) {
        for (size_t i = 0; i < m->n_allocs; i++) {
                const DpAllocation *a = &m->allocs[i]->pub;

                if (strcmp(a->resource, resource) != 0 || (skip_pod && strcmp(a->pod_uid, skip_pod) == 0))
                        continue;
                if (dp_strv_contains((const char *const *) a->ids, a->n_ids, id))
                        return true;
        }
        return false;
}

int dp_manager_free_devices(const DpManager *m, const char *resource, char ***ret, size_t *ret_n, CubError *err) {
        const DpRes *res = dp_manager_res(m, resource);
        _cleanup_free_ const char **ids = NULL;
        size_t n = 0;

        if (res && res->pub.connected && res->pub.n_devices > 0) {
                ids = calloc(res->pub.n_devices, sizeof(char *));
                if (!ids)
                        return cub_err_set(err, ENOMEM, "out of memory");
                for (size_t i = 0; i < res->pub.n_devices; i++) {
                        const DpDevice *d = &res->pub.devices[i];

                        if (d->healthy && !dp_manager_id_held(m, resource, d->id, NULL))
                                ids[n++] = d->id;
                }
        }
        if (dp_strv_copy_sorted(ids, n, ret) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret_n = n;
        return 0;
}

int dp_manager_expire(DpManager *m, uint64_t now) {
        int n = 0;

        for (size_t i = 0; i < m->n_res; i++) {
                DpResource *r = &m->res[i]->pub;

                if (r->connected || r->disconnected_usec == 0 || r->n_devices == 0 ||
                    now - r->disconnected_usec < DP_ENDPOINT_GRACE_USEC)
                        continue;
                free(r->devices);
                r->devices = NULL;
                r->n_devices = 0;
                if (m->on_change)
                        m->on_change(m->userdata, r->name);
                n++;
        }
        return n;
}

/* ---- dispatch ------------------------------------------------------------------ */

static void plugin_forget(DpManager *m, DpRes *res) {
        if (!res->plugin)
                return;
        dp_plugin_stop(res->plugin);
        res->plugin = NULL;
        (void) m;
}

static int apply_event(DpManager *m, DpEvent *e) {
        DpRes *res;
        int r;

        if (e->kind == DP_EVENT_JOB) {
                DpJob *j = dp_job_find(m, e->gen);

                if (j)
                        dp_job_apply(m, j);
                return 0;
        }
        if (dp_manager_resource_get(m, e->resource, &res) < 0)
                return 0;
        if (e->kind == DP_EVENT_REGISTERED) {
                char *ep = strdup(e->endpoint);

                if (!ep) {
                        dp_plugin_stop(e->plugin);
                        return 0;
                }
                plugin_forget(m, res);
                res->plugin = e->plugin;
                res->gen = e->gen;
                free(res->pub.endpoint);
                res->pub.endpoint = ep;
                res->pub.registered_usec = e->usec;
                res->pub.last_error[0] = 0;
                return 1;
        }
        if (e->gen != res->gen || !res->plugin)
                return 0; /* a replaced plugin's late word */
        switch (e->kind) {
        case DP_EVENT_OPTIONS:
                res->pub.pre_start_required = e->pre_start_required;
                res->pub.preferred_allocation_available = e->preferred_allocation_available;
                return 0;
        case DP_EVENT_SNAPSHOT:
                r = dp_manager_set_devices(m, e->resource, e->devices, e->n_devices, /* connected= */ true);
                if (r > 0 && !m->checkpoint_read_only) {
                        CubError err = {};

                        if (dp_manager_save_checkpoint(m, &err) < 0)
                                cub_log(LOG_DEBUG, "device manager: %s, ignoring", err.msg);
                }
                return 1;
        case DP_EVENT_ENDED:
                res->pub.connected = false;
                res->pub.disconnected_usec = e->usec ? e->usec : 1;
                (void) snprintf(res->pub.last_error, sizeof(res->pub.last_error), "%s", e->error);
                plugin_forget(m, res);
                return 1;
        default:
                return 0;
        }
}

int dp_manager_dispatch(DpManager *m) {
        DpEvent *list, *e;
        uint64_t v;
        int n = 0;

        (void) !read(m->efd, &v, sizeof(v));
        pthread_mutex_lock(&m->lock);
        list = m->events;
        m->events = NULL;
        m->events_tail = &m->events;
        pthread_mutex_unlock(&m->lock);
        while ((e = list)) {
                list = e->next;
                if (apply_event(m, e) > 0) {
                        n++;
                        if (m->on_change)
                                m->on_change(m->userdata, e->resource);
                }
                dp_event_free(e);
        }
        n += dp_manager_expire(m, cub_now_usec(CLOCK_MONOTONIC));
        return n;
}
