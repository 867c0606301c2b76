/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest directory as a pod source. A file that is complete
 * (IN_CLOSE_WRITE, IN_MOVED_TO) is handled at once, alone: read, decode,
 * admit, pod cgroup, sync job. IN_CREATE/IN_MODIFY/IN_ATTRIB bursts from
 * editors are coalesced per file (100 ms after the last event); a removed
 * or renamed-away file removes its pod at once. The periodic rescan
 * (20 s) is the backstop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/types.h>
#include <unistd.h>

#include "../config/podsrc.h"
#include "../util/cleanup.h"
#include "../util/hashmap.h"
#include "../util/log.h"
#include "agent-internal.h"

#define DEBOUNCE_USEC (100 * 1000)

/* A manifest file whose IN_CREATE/IN_MODIFY burst is being coalesced. */
typedef struct AgentPendingFile {
        char *name;
        uint64_t event_usec; /* the first event of the burst */
} AgentPendingFile;

/* The manifest directory: an object of this file's (Agent.dir). */
struct AgentSourceDir {
        sd_event_source *inotify_src, *rescan_timer, *debounce_timer;
        AgentPendingFile *pending; /* files whose event burst is coalesced */
        size_t n_pending;
        /* the directory's watch is gone (the directory was deleted or
         * renamed away, or was not there at start): made again by the next
         * rescan that finds the directory */
        bool unwatched;
        char *error; /* the last rescan's error, journaled once (NULL: none) */
};

/* ---- the periodic rescan: unchanged files are not decoded again ------------ */

static const Pod *rescan_cached(const char *path, const PodsrcFileId *id, void *userdata) {
        const LcPod *p = cub_hashmap_get(userdata, path);

        if (!p || p->file_ino == 0 || p->file_dev != id->dev || p->file_ino != id->ino || p->file_size != id->size ||
            p->file_mtime_ns != id->mtime_ns || p->file_ctime_ns != id->ctime_ns)
                return NULL;
        return p->spec->pod;
}

/* The rescan's error (NULL: none), journaled once until it changes. */
static void dir_error(Agent *a, const char *error) {
        _cleanup_free_ char *msg = error ? strdup(error) : NULL;

        if (error && !msg)
                return;
        if ((!msg && !a->dir->error) || (msg && a->dir->error && strcmp(msg, a->dir->error) == 0))
                return;
        if (msg)
                cub_log(LOG_WARNING, "%s", msg);
        else if (a->dir->error)
                cub_log(LOG_INFO, "manifest directory '%s' is readable again", a->core.opt.manifest_dir);
        free(a->dir->error);
        a->dir->error = TAKE_PTR(msg);
}

void agent_rescan(Agent *a) {
        PodsrcSet set = {};
        CubError err = {};
        AgentUpdate *u;
        uint64_t now = agent_now_usec();
        CubHashmap *by_source = NULL;
        int r;

        if (!a->dir)
                return; /* not attached */
        /* the file pods by manifest path: a file whose identity is the one
         * its pod was read with is not decoded again */
        if (cub_hashmap_new(&by_source) >= 0)
                for (size_t i = 0; i < a->table.n_pods; i++)
                        if (a->table.pods[i]->wanted && agent_pod_from_dir(a, a->table.pods[i]) &&
                            cub_hashmap_put(by_source, a->table.pods[i]->spec->source, a->table.pods[i]) < 0) {
                                by_source = cub_hashmap_free(by_source);
                                break;
                        }
        r = podsrc_dir_scan(a->core.opt.manifest_dir, a->core.opt.node_name, by_source ? rescan_cached : NULL,
                            by_source, &set, &err);
        cub_hashmap_free(by_source);
        if (r < 0 && r != -ENOENT) {
                dir_error(a, err.msg);
                return;
        }
        if (r == -ENOENT) {
                /* kubelet's file source: a directory that is not there is
                 * an empty set (its pods go), and it is read again each
                 * period until it is back */
                podsrc_set_done(&set);
                set = (PodsrcSet){};
                (void) snprintf(err.msg, sizeof(err.msg),
                                "manifest directory '%s' does not exist: its pods are removed until it is made again",
                                a->core.opt.manifest_dir);
                dir_error(a, err.msg);
        } else
                dir_error(a, NULL);
        agent_source_dir_set_errors(a, &set);
        /* the loop's merge takes the set (agent/loop/merge.c) */
        u = agent_update_new(AGENT_UPDATE_DIR_SET, now);
        if (!u) {
                podsrc_set_done(&set);
                return;
        }
        u->set = set;
        agent_update_push(a, u);
}

/* One complete file: read and decoded here, its pod added, replaced or
 * removed by the loop's merge (agent/loop/merge.c). */
static void handle_file(Agent *a, const char *name, uint64_t event_usec) {
        AgentUpdate *u;
        int r;

        u = agent_update_new(AGENT_UPDATE_FILE, event_usec);
        if (!u || asprintf(&u->path, "%s/%s", a->core.opt.manifest_dir, name) < 0) {
                free(u);
                return;
        }
        r = podsrc_file_read(a->core.opt.manifest_dir, name, a->core.opt.node_name, &u->entry);
        if ((r == -ENOENT && access(u->path, F_OK) == 0) || (r < 0 && r != -ENOENT)) {
                /* empty: still being written, its close comes; or unreadable */
                podsrc_entry_done(&u->entry);
                free(u->path);
                free(u);
                return;
        }
        agent_update_push(a, u);
}

static ssize_t pending_find(Agent *a, const char *name) {
        for (size_t i = 0; i < a->dir->n_pending; i++)
                if (strcmp(a->dir->pending[i].name, name) == 0)
                        return (ssize_t) i;
        return -1;
}

static void pending_drop(Agent *a, size_t i) {
        free(a->dir->pending[i].name);
        a->dir->pending[i] = a->dir->pending[--a->dir->n_pending];
}

static int on_debounce(sd_event_source *s, uint64_t usec, void *userdata) {
        Agent *a = userdata;

        (void) s;
        (void) usec;
        while (a->dir->n_pending > 0) {
                _cleanup_free_ char *name = a->dir->pending[a->dir->n_pending - 1].name;
                uint64_t t = a->dir->pending[a->dir->n_pending - 1].event_usec;

                a->dir->n_pending--;
                handle_file(a, name, t);
        }
        return 0;
}

static void pending_add(Agent *a, const char *name, uint64_t now) {
        AgentPendingFile *n;

        if (pending_find(a, name) < 0) {
                n = realloc(a->dir->pending, (a->dir->n_pending + 1) * sizeof(*n));
                if (!n)
                        return;
                a->dir->pending = n;
                n[a->dir->n_pending].name = strdup(name);
                n[a->dir->n_pending].event_usec = now;
                if (!n[a->dir->n_pending].name)
                        return;
                a->dir->n_pending++;
        }
        (void) sd_event_source_set_time_relative(a->dir->debounce_timer, DEBOUNCE_USEC);
        (void) sd_event_source_set_enabled(a->dir->debounce_timer, SD_EVENT_ONESHOT);
}

static int on_inotify(sd_event_source *s, const struct inotify_event *ev, void *userdata) {
        Agent *a = userdata;
        uint64_t now = agent_now_usec();
        ssize_t i;

        if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
                /* the directory was deleted or renamed away: its watch
                 * (which would follow a rename) goes, the rescan timer
                 * watches the path again once a directory is there */
                if (!a->dir->unwatched)
                        cub_log(LOG_WARNING, "manifest directory '%s' was %s", a->core.opt.manifest_dir,
                                ev->mask & IN_MOVE_SELF ? "renamed away" : "deleted");
                a->dir->unwatched = true;
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                agent_rescan(a);
                return 0;
        }
        if (ev->mask & IN_Q_OVERFLOW) {
                /* events were lost: read it all */
                agent_rescan(a);
                return 0;
        }
        if (ev->len == 0 || podsrc_ignored_name(ev->name))
                return 0;
        if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM)) {
                uint64_t t = now;

                /* complete, or gone: at once, for this file alone */
                i = pending_find(a, ev->name);
                if (i >= 0) {
                        t = a->dir->pending[i].event_usec;
                        pending_drop(a, (size_t) i);
                }
                handle_file(a, ev->name, t);
                return 0;
        }
        pending_add(a, ev->name, now);
        return 0;
}

/* Watches the directory (again): 0, or -ENOENT while it is not there. */
static int watch_dir(Agent *a) {
        int r;

        a->dir->inotify_src = sd_event_source_disable_unref(a->dir->inotify_src);
        r = sd_event_add_inotify(a->core.event, &a->dir->inotify_src, a->core.opt.manifest_dir,
                                 IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_MODIFY |
                                         IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR,
                                 on_inotify, a);
        if (r == -ENOENT || r == -ENOTDIR) {
                a->dir->unwatched = true;
                return -ENOENT;
        }
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(a->dir->inotify_src, "manifest-dir");
        if (a->dir->unwatched)
                cub_log(LOG_INFO, "manifest directory '%s' is there: watching it", a->core.opt.manifest_dir);
        a->dir->unwatched = false;
        return 0;
}

static int on_rescan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Agent *a = userdata;

        (void) sd_event_source_set_time(s, usec + a->core.opt.rescan_usec);
        if (a->dir->unwatched)
                (void) watch_dir(a);
        agent_rescan(a);
        return 0;
}

int agent_source_dir_attach(Agent *a) {
        int r;

        a->dir = calloc(1, sizeof(*a->dir));
        if (!a->dir)
                return -ENOMEM;
        /* a directory that is not there yet is an empty set until it is made */
        r = watch_dir(a);
        if (r == -ENOENT)
                r = 0;
        if (r >= 0)
                r = sd_event_add_time_relative(a->core.event, &a->dir->rescan_timer, CLOCK_MONOTONIC,
                                               a->core.opt.rescan_usec, 0, on_rescan_timer, a);
        if (r >= 0)
                r = sd_event_add_time_relative(a->core.event, &a->dir->debounce_timer, CLOCK_MONOTONIC, DEBOUNCE_USEC,
                                               0, on_debounce, a);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(a->dir->rescan_timer, "rescan");
        (void) sd_event_source_set_description(a->dir->debounce_timer, "manifest-debounce");
        (void) sd_event_source_set_enabled(a->dir->rescan_timer, SD_EVENT_ON);
        (void) sd_event_source_set_enabled(a->dir->debounce_timer, SD_EVENT_OFF);
        return 0;
}

void agent_source_dir_done(Agent *a) {
        if (a->errs)
                agent_source_dir_errors_clear(a);
        if (!a->dir)
                return;
        sd_event_source_disable_unref(a->dir->inotify_src);
        sd_event_source_disable_unref(a->dir->rescan_timer);
        sd_event_source_disable_unref(a->dir->debounce_timer);
        for (size_t i = 0; i < a->dir->n_pending; i++)
                free(a->dir->pending[i].name);
        free(a->dir->pending);
        free(a->dir->error);
        free(a->dir);
        a->dir = NULL;
}
