/* SPDX-License-Identifier: Apache-2.0 */
/* mgr_logs: container log rotation (agent/logs), kubelet's container log
 * manager. A timer on the loop every 10 s (containerLogMonitorInterval)
 * starts one rotation pass on a thread of its own (stat, rename, gzip,
 * ReopenContainerLog are blocking); a pass still running skips the tick. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "../logs/logs.h"
#include "../util/log.h"
#include "managers.h"

/* a pod's log directory outlives its sandbox by at least this */
#define LOGS_GC_MIN_AGE_S 60

typedef struct Logs {
        const LcEnv *env;
        LogsPolicy policy;
        sd_event_source *timer;
        pthread_t thread;
        bool running; /* __atomic: a pass is in flight */
        bool joinable;
        size_t rotated; /* __atomic: logs rotated so far */
        /* the passes' last errors (the runtime away): each journaled once;
         * the pass thread's alone (one pass at a time) */
        char rotate_error[CUB_ERR_MSG_MAX], gc_error[CUB_ERR_MSG_MAX];
} Logs;

static void *pass_thread(void *userdata) {
        Logs *m = userdata;
        CubError err = {};
        size_t n = 0, gone = 0;

        (void) cub_log_changed(LOG_WARNING, logs_rotate_pass(m->env->cri, &m->policy, &n, &err), &err, m->rotate_error,
                               "container log rotation");
        err = (CubError){};
        if (!cub_log_changed(LOG_WARNING, logs_gc_pass(m->env->cri, m->policy.root, LOGS_GC_MIN_AGE_S, &gone, &err),
                             &err, m->gc_error, "pod log directories") &&
            gone > 0)
                cub_log(LOG_INFO, "removed the log directories of %zu pods that are gone", gone);
        __atomic_add_fetch(&m->rotated, n, __ATOMIC_SEQ_CST);
        __atomic_store_n(&m->running, false, __ATOMIC_SEQ_CST);
        return NULL;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Logs *m = userdata;

        (void) sd_event_source_set_time(s, usec + LOGS_MONITOR_USEC);
        if (__atomic_load_n(&m->running, __ATOMIC_SEQ_CST))
                return 0;
        if (m->joinable)
                (void) pthread_join(m->thread, NULL);
        m->joinable = false;
        __atomic_store_n(&m->running, true, __ATOMIC_SEQ_CST);
        if (pthread_create(&m->thread, NULL, pass_thread, m) != 0) {
                __atomic_store_n(&m->running, false, __ATOMIC_SEQ_CST);
                return 0;
        }
        (void) pthread_setname_np(m->thread, "cub-logs");
        m->joinable = true;
        return 0;
}

static int logs_new(const LcEnv *env, void **ret, CubError *err) {
        const PodKubeletConfig *kc = env->kc;
        Logs *m;

        /* containerLogMaxSize and containerLogMaxFiles: parsed and checked by
         * the configuration's decoder */
        m = calloc(1, sizeof(*m));
        if (!m)
                return cub_err_set(err, ENOMEM, "out of memory");
        m->env = env;
        m->policy.root = strdup(kc->pod_logs_dir && *kc->pod_logs_dir ? kc->pod_logs_dir : LOGS_DEFAULT_ROOT);
        m->policy.max_size = cub_quantity_value(kc->container_log_max_size);
        m->policy.max_files = (int) (kc->container_log_max_files > 1000 ? 1000 : kc->container_log_max_files);
        if (!m->policy.root) {
                free(m);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret = m;
        return 0;
}

static void logs_attach(void *userdata) {
        Logs *m = userdata;
        int r;

        r = sd_event_add_time_relative(m->env->event, &m->timer, CLOCK_MONOTONIC, LOGS_MONITOR_USEC, 0, on_timer, m);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->timer, SD_EVENT_ON);
        if (r < 0)
                cub_log(LOG_ERR, "container log rotation: timer: %s", strerror(-r));
}

static void logs_free(void *userdata) {
        Logs *m = userdata;

        m->timer = sd_event_source_disable_unref(m->timer);
        if (m->joinable)
                (void) pthread_join(m->thread, NULL);
        free(m->policy.root);
        free(m);
}

const LcManagerVtable mgr_logs = {
        .name = "logs",
        .new = logs_new,
        .free = logs_free,
        .attach = logs_attach,
};
