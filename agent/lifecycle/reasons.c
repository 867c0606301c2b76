/* SPDX-License-Identifier: Apache-2.0 */
/* kubelet's words for what is happening to a pod, in one place: the waiting
 * reason and message of each container (kuberuntime's container status,
 * images/types.go, the pod workers' back-off), and the events kubelet
 * records (pkg/kubelet/events/event.go) with their messages. cubelet status,
 * /pods and cubelet describe all read them from here, so they agree. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/duration.h"
#include "../util/time.h"
#include "lifecycle.h"

void lc_pod_events_free(LcPod *p) {
        for (size_t i = 0; i < p->n_events; i++)
                free(p->events[i].message);
        free(p->events);
        p->events = NULL;
        p->n_events = 0;
}

/* The last event moves back before the ones seen later: a job's events
 * (its pulls) may come after the relist's that followed them. */
static void sort_last(LcPod *p) {
        for (size_t i = p->n_events - 1; i > 0 && p->events[i - 1].last_usec > p->events[i].last_usec; i--) {
                LcEvent t = p->events[i];

                p->events[i] = p->events[i - 1];
                p->events[i - 1] = t;
        }
}

void lc_pod_event(LcPod *p, bool warning, const char *reason, uint64_t now, const char *fmt, ...) {
        char *message = NULL;
        va_list ap;
        LcEvent *e;

        va_start(ap, fmt);
        if (vasprintf(&message, fmt, ap) < 0)
                message = NULL;
        va_end(ap);
        if (!message)
                return;
        for (size_t i = 0; i < p->n_events; i++) {
                e = &p->events[i];
                if (e->warning == warning && strcmp(e->reason, reason) == 0 && strcmp(e->message, message) == 0) {
                        e->count++;
                        if (now > e->last_usec)
                                e->last_usec = now;
                        free(message);
                        /* the newest last, as kubectl sorts them */
                        if (i + 1 < p->n_events) {
                                LcEvent t = *e;

                                memmove(e, e + 1, (p->n_events - i - 1) * sizeof(*e));
                                p->events[p->n_events - 1] = t;
                        }
                        sort_last(p);
                        return;
                }
        }
        if (!p->events) {
                p->events = calloc(LC_EVENTS_MAX, sizeof(LcEvent));
                if (!p->events) {
                        free(message);
                        return;
                }
        }
        if (p->n_events == LC_EVENTS_MAX) {
                free(p->events[0].message);
                memmove(&p->events[0], &p->events[1], (LC_EVENTS_MAX - 1) * sizeof(LcEvent));
                p->n_events--;
        }
        e = &p->events[p->n_events++];
        *e = (LcEvent){ .warning = warning, .count = 1, .first_usec = now, .last_usec = now, .message = message };
        (void) snprintf(e->reason, sizeof(e->reason), "%s", reason);
        sort_last(p);
}

/* Go's time.Duration.String() of a duration truncated to milliseconds, as
 * kubelet's Pulled event prints it: "0s", "512ms", "1.5s", "1m2.345s" */
static void go_duration_ms(uint64_t usec, char *buf, size_t size) {
        cub_duration_format((int64_t) (usec / CUB_USEC_PER_MSEC * CUB_USEC_PER_MSEC), buf, size);
}

void lc_pod_pull_events(LcPod *p, const WorkerPull *pulls, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const WorkerPull *pl = &pulls[i];
                const PodContainer *c;
                char d[40];

                if (pl->container >= p->n)
                        continue;
                c = pod_container_at(p->spec->pod, pl->container, NULL);
                if (!pl->pulled) {
                        lc_pod_event(p, false, "Pulled", pl->finished_usec,
                                     "Container image \"%s\" already present on machine", c->image);
                        continue;
                }
                lc_pod_event(p, false, "Pulling", pl->started_usec, "Pulling image \"%s\"", c->image);
                if (!pl->ok)
                        continue; /* the sync's failure says Failed (lc_pod_sync_result) */
                go_duration_ms(pl->finished_usec - pl->started_usec, d, sizeof(d));
                lc_pod_event(p, false, "Pulled", pl->finished_usec,
                             "Successfully pulled image \"%s\" in %s (%s including waiting). Image size: %llu bytes.",
                             c->image, d, d, (unsigned long long) pl->size);
        }
}

const char *lc_container_waiting(const LcPod *p, size_t k, char *message, size_t size) {
        const Pod *pod = p->spec->pod;
        const LcContainerStatus *st = &p->statuses[k];
        const PodContainer *c = pod_container_at(pod, k, NULL);
        char d[32];

        message[0] = '\0';
        if (st->state != LC_CONTAINER_WAITING)
                return NULL;
        if (p->terminal)
                return "PodTerminated";
        if (st->waiting_backoff) {
                /* whole seconds: "10s", "1m20s", "5m0s" */
                go_duration_ms(lc_backoff_delay(p->backoff[k].crashes) / 1000000 * 1000000, d, sizeof(d));
                (void) snprintf(message, size, "back-off %s restarting failed container=%s pod=%s_%s(%s)", d, c->name,
                                pod->name, pod->namespace_, pod->uid);
                return "CrashLoopBackOff";
        }
        /* security context: the container could not be created as written */
        if (*st->config_error) {
                (void) snprintf(message, size, "%s", st->config_error);
                return "CreateContainerConfigError";
        }
        if (p->failure != WORKER_FAIL_NONE && p->failure_container == k) {
                (void) snprintf(message, size, "%s", p->sync_retry.error);
                switch (p->failure) {
                case WORKER_FAIL_IMAGE_PULL:
                        /* the first failure is ErrImagePull; while the retries back off, ImagePullBackOff */
                        if (p->sync_retry.failures > 1) {
                                (void) snprintf(message, size, "Back-off pulling image \"%s\"", c->image);
                                return "ImagePullBackOff";
                        }
                        return "ErrImagePull";
                case WORKER_FAIL_IMAGE_NEVER_PULL:
                        return "ErrImageNeverPull";
                case WORKER_FAIL_CONFIG:
                        return "CreateContainerConfigError";
                case WORKER_FAIL_CREATE:
                        return "CreateContainerError";
                case WORKER_FAIL_START:
                        return "RunContainerError";
                case WORKER_FAIL_POST_START:
                        return "PostStartHookError";
                default:
                        message[0] = '\0';
                        break;
                }
        }
        /* kubelet's default for a container the runtime has no status of:
         * PodInitializing in a pod with init containers */
        return pod->n_init_containers > 0 && !*st->id ? "PodInitializing" : "ContainerCreating";
}

void lc_pod_sync_result(LcPod *p, int r, WorkerFailKind fail, size_t container, const char *error, uint64_t now) {
        const Pod *pod = p->spec->pod;
        const PodContainer *c = container < p->n ? pod_container_at(pod, container, NULL) : NULL;

        if (r >= 0) {
                p->failure = WORKER_FAIL_NONE;
                p->failure_container = SIZE_MAX;
                return;
        }
        p->failure = fail == WORKER_FAIL_NONE ? WORKER_FAIL_SYNC : fail;
        p->failure_container = c ? container : SIZE_MAX;
        switch (p->failure) {
        case WORKER_FAIL_SANDBOX:
                lc_pod_event(p, true, "FailedCreatePodSandBox", now, "Failed to create pod sandbox: %s", error);
                break;
        case WORKER_FAIL_KILL:
                lc_pod_event(p, true, "FailedKillPod", now, "error killing pod: %s", error);
                break;
        case WORKER_FAIL_POD_CGROUP:
                lc_pod_event(p, true, "FailedCreatePodContainer", now, "unable to ensure pod container exists: %s",
                             error);
                break;
        case WORKER_FAIL_IMAGE_PULL:
                if (!c)
                        break;
                lc_pod_event(p, true, "Failed", now, "Failed to pull image \"%s\": %s", c->image, error);
                lc_pod_event(p, true, "Failed", now, "Error: ErrImagePull");
                if (p->sync_retry.failures > 1)
                        lc_pod_event(p, false, "BackOff", now, "Back-off pulling image \"%s\"", c->image);
                break;
        case WORKER_FAIL_IMAGE_NEVER_PULL:
                if (c)
                        lc_pod_event(p, true, "ErrImageNeverPull", now,
                                     "Container image \"%s\" is not present with pull policy of Never", c->image);
                break;
        case WORKER_FAIL_CONFIG:
        case WORKER_FAIL_CREATE:
        case WORKER_FAIL_START:
                lc_pod_event(p, true, "Failed", now, "Error: %s", error);
                break;
        case WORKER_FAIL_POST_START:
                lc_pod_event(p, true, "FailedPostStartHook", now, "%s", error);
                break;
        default:
                lc_pod_event(p, true, "FailedSync", now, "error syncing pod: %s", error);
                break;
        }
}
