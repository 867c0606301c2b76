/* SPDX-License-Identifier: Apache-2.0 */
/* systemd-logind over sd-bus, as kubelet's nodeshutdown/systemd does: the
 * InhibitDelayMaxUSec property, a drop-in that raises it and a SIGHUP to
 * logind through systemd's KillUnit, a delay inhibitor lock on shutdown,
 * and the PrepareForShutdown signal on the agent's loop. The calls block
 * (a local bus, at start and at a shutdown); the signal comes on the loop. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "shutdown.h"

#define LOGIN1_DEST "org.freedesktop.login1"
#define LOGIN1_PATH "/org/freedesktop/login1"
#define LOGIN1_MANAGER "org.freedesktop.login1.Manager"

struct Logind {
        sd_bus *bus;
        sd_bus_slot *match;
        LogindPrepareFn fn;
        void *userdata;
};

static const char *bus_text(const sd_bus_error *e, int r) {
        return e && e->message ? e->message : strerror(-r);
}

static int on_prepare(sd_bus_message *m, void *userdata, sd_bus_error *e) {
        Logind *l = userdata;
        int start = 0;

        (void) e;
        if (sd_bus_message_read(m, "b", &start) < 0)
                return 0; /* not the signal logind sends: ignored */
        l->fn(start != 0, l->userdata);
        return 0;
}

int logind_open(sd_event *event, LogindPrepareFn fn, void *userdata, Logind **ret, CubError *err) {
        Logind *l;
        int r;

        l = calloc(1, sizeof(*l));
        if (!l)
                return cub_err_set(err, ENOMEM, "out of memory");
        l->fn = fn;
        l->userdata = userdata;
        r = sd_bus_open_system(&l->bus);
        if (r < 0) {
                free(l);
                return cub_err_set(err, -r, "graceful node shutdown: cannot connect to the system bus: %s",
                                   strerror(-r));
        }
        (void) sd_bus_set_description(l->bus, "cubelet-shutdown");
        r = sd_bus_attach_event(l->bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r >= 0)
                r = sd_bus_match_signal(l->bus, &l->match, NULL, LOGIN1_PATH, LOGIN1_MANAGER, "PrepareForShutdown",
                                        on_prepare, l);
        if (r < 0) {
                (void) logind_free(l);
                return cub_err_set(err, -r, "graceful node shutdown: cannot watch logind's PrepareForShutdown: %s",
                                   strerror(-r));
        }
        *ret = l;
        return 0;
}

Logind *logind_free(Logind *l) {
        if (!l)
                return NULL;
        l->match = sd_bus_slot_unref(l->match);
        if (l->bus) {
                (void) sd_bus_detach_event(l->bus);
                l->bus = sd_bus_flush_close_unref(l->bus);
        }
        free(l);
        return NULL;
}

int logind_inhibit_delay(Logind *l, uint64_t *ret_usec, CubError *err) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_get_property_trivial(l->bus, LOGIN1_DEST, LOGIN1_PATH, LOGIN1_MANAGER, "InhibitDelayMaxUSec", &e,
                                        't', ret_usec);
        if (r < 0)
                return cub_err_set(err, -r, "failed reading InhibitDelayMaxUSec property from logind: %s",
                                   bus_text(&e, r));
        return 0;
}

int logind_override_delay(Logind *l, const char *dir, const char *name, int64_t seconds, CubError *err) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        char path[PATH_MAX], text[160];
        int n, r;

        r = cub_mkdir_p(dir, 0755);
        if (r < 0)
                return cub_err_set(err, -r, "failed creating %s directory: %s", dir, strerror(-r));
        n = snprintf(path, sizeof(path), "%s/%s", dir, name);
        if (n < 0 || (size_t) n >= sizeof(path))
                return cub_err_set(err, ENAMETOOLONG, "logind drop-in %s/%s: path too long", dir, name);
        n = snprintf(text, sizeof(text),
                     "# cubelet: graceful node shutdown (shutdownGracePeriod)\n[Login]\nInhibitDelayMaxSec=%lld\n",
                     (long long) seconds);
        r = cub_write_file_atomic(path, text, (size_t) n, 0644, err);
        if (r < 0)
                return r;
        /* kubelet's ReloadLogindConf: SIGHUP to systemd-logind.service */
        r = sd_bus_call_method(l->bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "KillUnit", &e, NULL, "ssi",
                               "systemd-logind.service", "all", 1);
        if (r < 0)
                return cub_err_set(err, -r, "unable to reload logind conf: %s", bus_text(&e, r));
        return 0;
}

int logind_inhibit(Logind *l, int *ret_fd, CubError *err) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int fd, r;

        r = sd_bus_call_method(l->bus, LOGIN1_DEST, LOGIN1_PATH, LOGIN1_MANAGER, "Inhibit", &e, &reply, "ssss",
                               "shutdown", "cubelet", "cubelet needs time to handle node shutdown", "delay");
        if (r < 0)
                return cub_err_set(err, -r, "failed creating systemd inhibitor: %s", bus_text(&e, r));
        r = sd_bus_message_read(reply, "h", &fd);
        if (r < 0)
                return cub_err_set(err, -r, "failed storing inhibit lock file descriptor: %s", strerror(-r));
        /* the message owns fd: a copy of ours */
        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return cub_err_set(err, errno, "inhibit lock file descriptor: %s", strerror(errno));
        *ret_fd = fd;
        return 0;
}

int logind_system_stopping(Logind *l, bool *ret, CubError *err) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *own = NULL;
        _cleanup_free_ char *state = NULL;
        sd_bus *bus = l ? l->bus : NULL;
        int r;

        if (!bus) {
                r = sd_bus_open_system(&own);
                if (r < 0)
                        return cub_err_set(err, -r, "cannot connect to the system bus: %s", strerror(-r));
                bus = own;
        }
        r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "SystemState", &e, &state);
        if (r < 0)
                return cub_err_set(err, -r, "failed reading systemd's SystemState: %s", bus_text(&e, r));
        *ret = strcmp(state, "stopping") == 0;
        return 0;
}
