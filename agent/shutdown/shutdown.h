/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/shutdown: graceful node shutdown (kubelet's nodeshutdown manager,
 * KEP-2000). plan.c is pure: the priority groups of the configuration and
 * the grace each pod gets; logind.c speaks to systemd-logind over sd-bus (a
 * delay inhibitor lock, InhibitDelayMaxSec, PrepareForShutdown). The
 * manager that runs them on the loop is agent/managers/shutdown.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "../pod/node.h"
#include "../util/err.h"

/* kubelet's words (pkg/kubelet/nodeshutdown/nodeshutdown_manager.go) */
#define SHUTDOWN_REASON "Terminated"
#define SHUTDOWN_MESSAGE "Pod was terminated in response to imminent node shutdown."
#define SHUTDOWN_NOT_ADMITTED_REASON "NodeShutdown"
#define SHUTDOWN_NOT_ADMITTED_MESSAGE "Pod was rejected as the node is shutting down."

/* scheduling.DefaultPriorityWhenNoDefaultClassExists, SystemCriticalPriority */
#define SHUTDOWN_DEFAULT_PRIORITY 0
#define SHUTDOWN_CRITICAL_PRIORITY 2000000000

typedef struct ShutdownGroup {
        int32_t priority; /* pods of this priority and up (to the next group's) */
        int64_t grace_s;  /* shutdownGracePeriodSeconds of the group */
} ShutdownGroup;

/* The groups, ascending by priority (kubelet sorts them so); n = 0 when
 * graceful shutdown is off (nothing configured). */
typedef struct ShutdownPlan {
        ShutdownGroup *groups;
        size_t n;
} ShutdownPlan;

/* shutdownGracePeriod and shutdownGracePeriodCriticalPods (Go durations)
 * become two groups, priority 0 and 2000000000, as kubelet's migrateConfig
 * does; shutdownGracePeriodByPodPriority is taken as it is. Errors are
 * kubelet's validation messages. */
int shutdown_plan(const PodKubeletConfig *kc, ShutdownPlan *ret, CubError *err);
void shutdown_plan_done(ShutdownPlan *p);

/* The delay the whole shutdown may take: the sum of the groups' periods
 * (kubelet's periodRequested), seconds. */
int64_t shutdown_period_requested(const ShutdownPlan *p);

/* The group of a pod of this priority (kubelet's groupByPriority): the
 * highest group whose priority is at most the pod's; below the lowest group,
 * the lowest. */
size_t shutdown_group_of(const ShutdownPlan *p, int32_t priority);

/* The grace a pod gets: its terminationGracePeriodSeconds when that is at
 * most the group's, else the group's. */
static inline int64_t shutdown_pod_grace(int64_t group_grace_s, int64_t pod_grace_s) {
        return pod_grace_s <= group_grace_s ? pod_grace_s : group_grace_s;
}

/* ---- logind.c ---- */

typedef struct Logind Logind;

/* PrepareForShutdown's argument: true, the node goes down; false, a
 * shutdown was cancelled */
typedef void (*LogindPrepareFn)(bool start, void *userdata);

/* Connects to the system bus on the loop and watches PrepareForShutdown
 * (object /org/freedesktop/login1, interface org.freedesktop.login1.Manager). */
int logind_open(sd_event *event, LogindPrepareFn fn, void *userdata, Logind **ret, CubError *err);
Logind *logind_free(Logind *l);

/* logind's InhibitDelayMaxUSec */
int logind_inhibit_delay(Logind *l, uint64_t *ret_usec, CubError *err);
/* Writes DIR/NAME with "[Login]\nInhibitDelayMaxSec=SECONDS" (DIR made when
 * missing) and has logind read its configuration again (SIGHUP through
 * systemd's KillUnit, as kubelet does). */
int logind_override_delay(Logind *l, const char *dir, const char *name, int64_t seconds, CubError *err);
/* A delay inhibitor lock on shutdown ("cubelet"): the fd to close when done */
int logind_inhibit(Logind *l, int *ret_fd, CubError *err);

/* Whether systemd is taking the system down (its SystemState is
 * "stopping": a job for shutdown.target is queued or runs). Over l's bus,
 * or a connection of its own when l is NULL. */
int logind_system_stopping(Logind *l, bool *ret, CubError *err);

/* cubelet's drop-in: after every "zz-…" and "99-…" of other programs, so
 * that a smaller InhibitDelayMaxSec of theirs does not cut the grace short */
#define SHUTDOWN_LOGIND_DIR "/etc/systemd/logind.conf.d"
#define SHUTDOWN_LOGIND_DROPIN "zzz-cubelet.conf"
