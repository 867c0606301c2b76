/* SPDX-License-Identifier: Apache-2.0 */
/* The systemd driver: kubelet's slices (kubepods.slice,
 * kubepods-burstable.slice, kubepods-burstable-pod<uid>.slice) as transient
 * units of PID 1 over sd-bus, libcontainer's way: StartTransientUnit with
 * mode "replace", Wants= of the parent slice, DefaultDependencies=no, the
 * accounting on, and the group's values as unit properties; updates with
 * SetUnitProperties (runtime), removal with StopUnit. Every job is waited
 * for (JobRemoved, bounded). The files are read back, and waited on, from
 * the cgroup tree as the cgroupfs driver does: systemd's own mount is the
 * writer's root.
 *
 * libcontainer sends Delegate=yes only for scopes, never for slices (older
 * systemd refuses it on a slice); containerd's runc asks for the container
 * scopes itself, with Delegate, inside the pod slice. The driver does the
 * same.
 *
 * Transient slices outlive the bus client: a cubelet restart finds them
 * active and adopts them (the group exists, so it is updated, not started). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "../util/cleanup.h"
#include "../util/time.h"
#include "cgroup-internal.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_JOB_TIMEOUT_USEC (30 * CUB_USEC_PER_SEC)
#define SD_UNIT_MAX 256

/* The bus connection is shared by the loop and the workers: one call (and
 * its job wait) at a time. */
typedef struct SdData {
        pthread_mutex_t lock;
        sd_bus *bus;
} SdData;

typedef struct JobWait {
        const char *job;
        char result[32];
        bool done;
} JobWait;

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *e) {
        JobWait *jw = userdata;
        const char *path, *unit, *result;
        uint32_t id;

        (void) e;
        if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        if (jw->job && strcmp(path, jw->job) == 0) {
                (void) snprintf(jw->result, sizeof(jw->result), "%s", result);
                jw->done = true;
        }
        return 0;
}

static int bus_get(SdData *d, sd_bus **ret, CubError *err) {
        int r;

        if (d->bus && sd_bus_is_open(d->bus) > 0) {
                *ret = d->bus;
                return 0;
        }
        d->bus = sd_bus_flush_close_unref(d->bus);
        r = sd_bus_open_system(&d->bus);
        if (r < 0)
                return cub_err_set(err, -r, "cgroup driver 'systemd': cannot connect to the system bus: %s",
                                   strerror(-r));
        (void) sd_bus_set_description(d->bus, "cubelet-cgroup");
        *ret = d->bus;
        return 0;
}

static const char *bus_error_text(const sd_bus_error *e, int r) {
        return e && e->message ? e->message : strerror(-r);
}

/* Sends m (a method that returns a job path), then waits for the job's
 * JobRemoved: 0 for "done". what names the call in messages. */
static int call_job(sd_bus *bus, sd_bus_message *m, const char *path, const char *unit, const char *what,
                    CubError *err) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        _cleanup_free_ char *job = NULL;
        JobWait jw = {};
        uint64_t deadline = cub_now_usec(CLOCK_MONOTONIC) + SD_JOB_TIMEOUT_USEC;
        const char *j;
        int r;

        /* the match first: a job can end before its reply is read */
        r = sd_bus_match_signal(bus, &slot, SD_DEST, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed, &jw);
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': JobRemoved match: %s", path, unit,
                                   strerror(-r));
        r = sd_bus_call(bus, m, 0, &e, &reply);
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': %s: %s", path, unit, what,
                                   bus_error_text(&e, r));
        r = sd_bus_message_read(reply, "o", &j);
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': %s: bad reply: %s", path, unit, what,
                                   strerror(-r));
        job = strdup(j);
        if (!job)
                return cub_err_set(err, ENOMEM, "out of memory");
        jw.job = job;
        while (!jw.done) {
                uint64_t now = cub_now_usec(CLOCK_MONOTONIC);

                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': %s: waiting for job %s: %s", path,
                                           unit, what, job, strerror(-r));
                if (r > 0)
                        continue;
                if (now >= deadline)
                        return cub_err_set(err, ETIMEDOUT,
                                           "cgroup '%s': systemd unit '%s': %s: job %s not finished after %" PRIu64
                                           " s",
                                           path, unit, what, job, SD_JOB_TIMEOUT_USEC / CUB_USEC_PER_SEC);
                r = sd_bus_wait(bus, deadline - now);
                if (r < 0)
                        return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': %s: waiting for job %s: %s", path,
                                           unit, what, job, strerror(-r));
        }
        if (strcmp(jw.result, "done") != 0)
                return cub_err_set(err, EIO,
                                   "cgroup '%s': systemd unit '%s': %s: job ended '%s' (see 'journalctl -u %s')", path,
                                   unit, what, jw.result, unit);
        return 0;
}

static int append_values(sd_bus_message *m, const CgUnitProps *p) {
        int r = 0;

        if (p->has_cpu_weight)
                r = sd_bus_message_append(m, "(sv)", "CPUWeight", "t", p->cpu_weight);
        if (r >= 0 && p->has_cpu_quota)
                r = sd_bus_message_append(m, "(sv)(sv)", "CPUQuotaPerSecUSec", "t", p->cpu_quota_per_sec_usec,
                                          "CPUQuotaPeriodUSec", "t", p->cpu_quota_period_usec);
        if (r >= 0 && p->has_memory_max)
                r = sd_bus_message_append(m, "(sv)", "MemoryMax", "t", p->memory_max);
        if (r >= 0 && p->has_memory_min)
                r = sd_bus_message_append(m, "(sv)", "MemoryMin", "t", p->memory_min);
        if (r >= 0 && p->has_tasks_max)
                r = sd_bus_message_append(m, "(sv)", "TasksMax", "t", p->tasks_max);
        if (r >= 0 && p->has_allowed_cpus) {
                r = sd_bus_message_open_container(m, 'r', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "AllowedCPUs");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', "ay");
                if (r >= 0)
                        r = sd_bus_message_append_array(m, 'y', p->allowed_cpus, p->n_allowed_cpus);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        return r;
}

static int systemd_init(CgWriter *w, CubError *err) {
        SdData *d;
        sd_bus *bus;
        int r;

        if (sd_booted() <= 0)
                return cub_err_set(err, EOPNOTSUPP,
                                   "cgroup driver 'systemd': PID 1 is not systemd (use cgroupDriver: cgroupfs)");
        if (!w->unified)
                return cub_err_set(err, EOPNOTSUPP, "cgroup driver 'systemd': '%s' is not a cgroup v2 mount", w->root);
        d = calloc(1, sizeof(*d));
        if (!d)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = pthread_mutex_init(&d->lock, NULL);
        if (r != 0) {
                free(d);
                return cub_err_set(err, r, "cgroup driver 'systemd': mutex: %s", strerror(r));
        }
        w->data = d;
        return bus_get(d, &bus, err);
}

static void systemd_done(CgWriter *w) {
        SdData *d = w->data;

        d->bus = sd_bus_flush_close_unref(d->bus);
        (void) pthread_mutex_destroy(&d->lock);
        free(d);
        w->data = NULL;
}

static int create_locked(SdData *d, const CgGroupValues *g, const char *unit, const CgUnitProps *p, CubError *err) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        char parent[SD_UNIT_MAX], desc[SD_UNIT_MAX + 32];
        sd_bus *bus;
        int r;

        r = cg_systemd_parent_slice(unit, parent, sizeof(parent), err);
        if (r < 0)
                return r;
        r = bus_get(d, &bus, err);
        if (r < 0)
                return r;
        (void) snprintf(desc, sizeof(desc), "cubelet %s", unit);
        r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "StartTransientUnit");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", unit, "replace");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)(sv)(sv)", "Description", "s", desc, "Wants", "as", 1, parent,
                                          "DefaultDependencies", "b", 0);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)", "MemoryAccounting", "b", 1, "CPUAccounting", "b", 1,
                                          "IOAccounting", "b", 1, "TasksAccounting", "b", 1);
        if (r >= 0)
                r = append_values(m, p);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': StartTransientUnit: %s", g->path, unit,
                                   strerror(-r));
        r = call_job(bus, m, g->path, unit, "StartTransientUnit", err);
        if (r != -EEXIST)
                return r;
        /* org.freedesktop.systemd1.UnitExists: loaded but not running (a
         * stopped slice not yet collected, or one made as a parent): start
         * it; the writer sets the values next */
        m = sd_bus_message_unref(m);
        r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "StartUnit");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", unit, "replace");
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': StartUnit: %s", g->path, unit,
                                   strerror(-r));
        return call_job(bus, m, g->path, unit, "StartUnit", err);
}

typedef int (*UnitOp)(SdData *d, const CgGroupValues *g, const char *unit, const CgUnitProps *p, CubError *err);

/* the unit and properties of g, then op under the bus lock */
static int with_unit(CgWriter *w, const CgGroupValues *g, UnitOp op, CubError *err) {
        SdData *d = w->data;
        char unit[SD_UNIT_MAX];
        CgUnitProps p;
        int r;

        r = cg_systemd_unit_of(g->path, unit, sizeof(unit), err);
        if (r >= 0)
                r = cg_unit_props(g, &p, err);
        if (r < 0)
                return r;
        (void) pthread_mutex_lock(&d->lock);
        r = op(d, g, unit, &p, err);
        (void) pthread_mutex_unlock(&d->lock);
        return r;
}

static int systemd_create(CgWriter *w, const CgGroupValues *g, CubError *err) {
        return with_unit(w, g, create_locked, err);
}

static int update_locked(SdData *d, const CgGroupValues *g, const char *unit, const CgUnitProps *p, CubError *err) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        sd_bus *bus;
        int r;

        r = bus_get(d, &bus, err);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(m, "sb", unit, 1);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = append_values(m, p);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': SetUnitProperties: %s", g->path, unit,
                                   strerror(-r));
        r = sd_bus_call(bus, m, 0, &e, NULL);
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': SetUnitProperties: %s", g->path, unit,
                                   bus_error_text(&e, r));
        /* systemd writes the cgroup files from its realize queue, which its
         * loop runs before it reads the next message: one more round trip
         * and the files read back what was set */
        r = sd_bus_call_method(bus, SD_DEST, SD_PATH, "org.freedesktop.DBus.Peer", "Ping", &e, NULL, NULL);
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': Ping: %s", g->path, unit,
                                   bus_error_text(&e, r));
        return 0;
}

static int systemd_update(CgWriter *w, const CgGroupValues *g, CubError *err) {
        return with_unit(w, g, update_locked, err);
}

static int stop_locked(SdData *d, const char *path, const char *unit, CubError *err) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        CubError e = {};
        sd_bus *bus;
        int r;

        r = bus_get(d, &bus, err);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", unit, "replace");
        if (r < 0)
                return cub_err_set(err, -r, "cgroup '%s': systemd unit '%s': StopUnit: %s", path, unit, strerror(-r));
        r = call_job(bus, m, path, unit, "StopUnit", &e);
        if (r == -ENOENT || (r < 0 && strstr(e.msg, "not loaded")))
                return 0; /* org.freedesktop.systemd1.NoSuchUnit: gone already */
        if (r < 0 && err)
                *err = e;
        return r;
}

static int systemd_destroy(CgWriter *w, const char *path, CubError *err) {
        SdData *d = w->data;
        char unit[SD_UNIT_MAX];
        int r;

        r = cg_systemd_unit_of(path, unit, sizeof(unit), err);
        if (r < 0)
                return r;
        /* stopping a slice kills what is in it: a populated one stays, as
         * rmdir refuses a populated group under cgroupfs */
        r = cg_fs_populated(w, path, err);
        if (r < 0)
                return r;
        if (r > 0)
                return cub_err_set(err, EBUSY, "cgroup '%s': systemd unit '%s' still has processes, not stopped", path,
                                   unit);
        (void) pthread_mutex_lock(&d->lock);
        r = stop_locked(d, path, unit, err);
        (void) pthread_mutex_unlock(&d->lock);
        return r;
}

const CgDriver cg_driver_systemd = {
        .name = "systemd",
        .kind = CG_DRIVER_SYSTEMD,
        .init = systemd_init,
        .exists = cg_fs_exists,
        .create = systemd_create,
        .update = systemd_update,
        .read = cg_fs_read,
        .wait_unpopulated = cg_fs_wait_unpopulated,
        .destroy = systemd_destroy,
        .done = systemd_done,
};
