/* SPDX-License-Identifier: Apache-2.0 */
/* The Node and its Lease in the API server: a small state machine per
 * object, each step one request, each answer handled on the loop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "../util/cleanup.h"
#include "../util/log.h"
#include "../util/retry.h"
#include "../util/time.h"
#include "answers.h"
#include "node.h"

#define LEASE_NAMESPACE "kube-node-lease"
#define LEASE_JITTER_PCT 4

/* kubelet's registration and the lease controller: 200 ms doubling to 7 s */
static const CubRetryPolicy api_retry = {
        .base_usec = 200 * CUB_USEC_PER_MSEC,
        .max_usec = 7 * CUB_USEC_PER_SEC,
        .factor = 2,
        .jitter_pct = 0,
};

struct KubeNode {
        sd_event *event;
        KubeClient *client;
        KubeNodeOptions o;
        char *name;
        KubeNodeFn fn;
        void *userdata;
        sd_event_source *node_timer, *lease_timer;
        /* the Node */
        bool registered;
        char uid[64];
        CubRetry node_retry;
        uint64_t node_req;      /* in flight, 0: none */
        json_t *sent;           /* the status last PATCHed, without times */
        json_t *since;          /* condition type → {status, time}: lastTransitionTime */
        json_t *api_conditions; /* the existing Node's when it was found (NULL: made here) */
        uint64_t sent_usec;
        char sent_time[32];
        uint64_t status_updates;
        /* the Lease */
        json_t *lease; /* as last read or written; NULL: GET it first */
        /* the Node's UID from a GET of this round, for a Lease without an
         * owner ("": not read yet); node_missing: it was not found (logged once) */
        char owner[64];
        bool node_missing;
        CubRetry lease_retry;
        uint64_t lease_req;
        char renew_time[40];
        uint64_t renewals;
};

static uint64_t now_mono(void) {
        return cub_now_usec(CLOCK_MONOTONIC);
}

/* RFC 3339 in UTC, seconds (metav1.Time) or microseconds (metav1.MicroTime) */
static void time_rfc3339(char *buf, size_t size, bool micro) {
        struct timespec ts;
        struct tm tm;
        char s[24];

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        (void) gmtime_r(&ts.tv_sec, &tm);
        (void) strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
        if (micro)
                (void) snprintf(buf, size, "%.19s.%06dZ", s, (int) (ts.tv_nsec / 1000) % 1000000);
        else
                (void) snprintf(buf, size, "%.19sZ", s);
}

static void arm(sd_event_source *s, uint64_t at) {
        (void) sd_event_source_set_time(s, at);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static void failed(KubeNode *n, CubRetry *r, sd_event_source *timer, const char *what, const char *error) {
        uint64_t now = now_mono();

        if (cub_retry_failed(r, &api_retry, now, error, cub_retry_draw()))
                cub_log(LOG_WARNING, "API server: %s: %s; retrying", what, error);
        arm(timer, r->next_usec);
        (void) n;
}

static void succeeded(CubRetry *r, const char *what) {
        if (cub_retry_succeeded(r))
                cub_log(LOG_INFO, "API server: %s: working again", what);
}

/* ---- the Node ---------------------------------------------------------------- */

static void node_step(KubeNode *n);

static int request(KubeNode *n, uint64_t *id, const char *method, const char *path, const char *ct, json_t *body,
                   KubeAnswerFn fn) {
        CubError err = {};
        int r = kube_client_request(n->client, method, path, ct, body, fn, n, id, &err);

        if (r < 0)
                cub_log(LOG_ERR, "API server: %s", err.msg);
        return r;
}

/* the agent's node with kubelet's times: lastHeartbeatTime now,
 * lastTransitionTime when the condition's status last changed */
static json_t *with_times(KubeNode *n, json_t *status) {
        json_t *out = json_deep_copy(status), *conds = json_object_get(out, "conditions"), *c;
        char now[32];
        size_t i;

        if (!out)
                return NULL;
        time_rfc3339(now, sizeof(now), false);
        json_array_foreach(conds, i, c) {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *st = json_string_value(json_object_get(c, "status"));
                json_t *seen;

                if (!type || !st)
                        continue;
                seen = json_object_get(n->since, type);
                if (!seen || strcmp(json_string_value(json_object_get(seen, "status")), st) != 0) {
                        json_object_set_new(n->since, type, json_pack("{s:s,s:s}", "status", st, "time", now));
                        seen = json_object_get(n->since, type);
                }
                json_object_set_new(c, "lastHeartbeatTime", json_string(now));
                json_object_set(c, "lastTransitionTime", json_object_get(seen, "time"));
        }
        return out;
}

static void on_status(void *userdata, long status, json_t *body, const char *error) {
        KubeNode *n = userdata;

        (void) body;
        n->node_req = 0;
        if (*error) {
                if (status == 404) {
                        cub_log(LOG_WARNING, "API server: node '%s' is gone (%s); registering it again", n->name,
                                error);
                        n->registered = false;
                        n->uid[0] = 0;
                }
                json_decref(n->sent);
                n->sent = NULL;
                failed(n, &n->node_retry, n->node_timer, "node status", error);
                return;
        }
        succeeded(&n->node_retry, "node status");
        n->sent_usec = now_mono();
        time_rfc3339(n->sent_time, sizeof(n->sent_time), false);
        n->status_updates++;
        arm(n->node_timer, n->sent_usec + n->o.update_usec);
}

static void send_status(KubeNode *n) {
        json_t *node = n->fn(n->userdata), *status = json_object_get(node, "status"), *patch;
        char path[512];
        uint64_t now = now_mono();

        if (!status) {
                json_decref(node);
                arm(n->node_timer, now + n->o.update_usec);
                return;
        }
        /* kubelet: only when something but the heartbeat changed, or every
         * report period */
        if (n->sent && json_equal(n->sent, status) && now < n->sent_usec + n->o.report_usec) {
                json_decref(node);
                arm(n->node_timer, now + n->o.update_usec);
                return;
        }
        json_decref(n->sent);
        n->sent = json_incref(status);
        patch = json_pack("{s:o*}", "status", with_times(n, status));
        (void) snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", n->name);
        if (!patch || request(n, &n->node_req, "PATCH", path, KUBE_CT_STRATEGIC, patch, on_status) < 0) {
                json_decref(n->sent);
                n->sent = NULL;
                failed(n, &n->node_retry, n->node_timer, "node status", "cannot start the request");
        }
        json_decref(patch);
        json_decref(node);
}

static void take_uid(KubeNode *n, json_t *body) {
        const char *uid = kube_answer_uid(body);

        (void) snprintf(n->uid, sizeof(n->uid), "%s", uid ? uid : "");
        n->registered = true;
        json_decref(n->sent); /* the first status goes out in full */
        n->sent = NULL;
        if (n->lease_timer)
                arm(n->lease_timer, now_mono());
}

static void on_reconciled(void *userdata, long status, json_t *body, const char *error) {
        KubeNode *n = userdata;

        (void) status;
        (void) body;
        n->node_req = 0;
        if (*error)
                cub_log(LOG_WARNING, "API server: node '%s': its labels and annotations stay as they were: %s", n->name,
                        error);
        node_step(n);
}

/* kubelet's reconcile of an existing Node (updateDefaultLabels,
 * reconcileCMADAnnotationWithExistingNode): its labels and annotations set
 * to this node's where they differ (nothing is sent when none does), the
 * rest left to the status updates */
static void reconcile(KubeNode *n, const json_t *existing) {
        json_t *node = n->fn(n->userdata), *patch = NULL;
        size_t n_labels = 0, n_ann = 0;
        char path[512];

        if (node)
                patch = kube_answer_node_patch(node, existing, &n_labels, &n_ann);
        if (patch)
                cub_log(LOG_INFO, "API server: node '%s': %zu labels and %zu annotations differ: set to this node's",
                        n->name, n_labels, n_ann);
        (void) snprintf(path, sizeof(path), "/api/v1/nodes/%s", n->name);
        if (!patch || request(n, &n->node_req, "PATCH", path, KUBE_CT_STRATEGIC, patch, on_reconciled) < 0)
                node_step(n);
        json_decref(patch);
        json_decref(node);
}

/* kubelet computes the status of an existing Node on the Node the API
 * server has: a condition whose status is the same keeps its
 * lastTransitionTime, and sends no event (across a restart) */
static void take_conditions(KubeNode *n, const json_t *node) {
        json_t *since = NULL, *conds = NULL, *v;
        const char *type;

        if (kube_answer_node_conditions(node, &since, &conds) < 0)
                return;
        json_decref(n->api_conditions);
        n->api_conditions = conds;
        json_object_foreach(since, type, v) json_object_set(n->since, type, v);
        json_decref(since);
}

static void on_get_node(void *userdata, long status, json_t *body, const char *error) {
        KubeNode *n = userdata;

        (void) status;
        n->node_req = 0;
        if (*error) {
                failed(n, &n->node_retry, n->node_timer, "node", error);
                return;
        }
        succeeded(&n->node_retry, "node");
        take_conditions(n, body);
        take_uid(n, body);
        cub_log(LOG_INFO, "API server %s: node '%s' exists (uid %s); keeping it", kube_client_server(n->client),
                n->name, n->uid);
        if (n->o.register_node)
                reconcile(n, body);
        else
                node_step(n);
}

static void on_register(void *userdata, long status, json_t *body, const char *error) {
        KubeNode *n = userdata;
        char path[512];

        n->node_req = 0;
        if (status == 409) {
                /* kubelet's tryRegisterWithAPIServer: the existing Node is ours */
                (void) snprintf(path, sizeof(path), "/api/v1/nodes/%s", n->name);
                if (request(n, &n->node_req, "GET", path, NULL, NULL, on_get_node) < 0)
                        failed(n, &n->node_retry, n->node_timer, "node registration", "cannot start the request");
                return;
        }
        if (*error) {
                failed(n, &n->node_retry, n->node_timer, "node registration", error);
                return;
        }
        succeeded(&n->node_retry, "node registration");
        take_uid(n, body);
        cub_log(LOG_INFO, "API server %s: node '%s' registered (uid %s)", kube_client_server(n->client), n->name,
                n->uid);
        node_step(n);
}

static void node_register(KubeNode *n) {
        json_t *node = n->fn(n->userdata), *status;
        char path[512];

        if (!node) {
                failed(n, &n->node_retry, n->node_timer, "node registration", "out of memory");
                return;
        }
        if (!n->o.register_node) {
                (void) snprintf(path, sizeof(path), "/api/v1/nodes/%s", n->name);
                if (request(n, &n->node_req, "GET", path, NULL, NULL, on_get_node) < 0)
                        failed(n, &n->node_retry, n->node_timer, "node", "cannot start the request");
                json_decref(node);
                return;
        }
        status = with_times(n, json_object_get(node, "status"));
        json_object_set_new(node, "status", status ? status : json_object());
        json_object_set_new(node, "apiVersion", json_string("v1"));
        json_object_set_new(node, "kind", json_string("Node"));
        json_object_set_new(json_object_get(node, "metadata"), "name", json_string(n->name));
        if (request(n, &n->node_req, "POST", "/api/v1/nodes", KUBE_CT_JSON, node, on_register) < 0)
                failed(n, &n->node_retry, n->node_timer, "node registration", "cannot start the request");
        json_decref(node);
}

static void node_step(KubeNode *n) {
        if (n->node_req)
                return;
        if (!n->registered)
                node_register(n);
        else
                send_status(n);
}

static int on_node_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        node_step(userdata);
        return 0;
}

/* ---- the Lease ----------------------------------------------------------------- */

static void lease_step(KubeNode *n);

static uint64_t renew_interval(const KubeNode *n) {
        uint64_t base = (uint64_t) n->o.lease_seconds * CUB_USEC_PER_SEC / 4;
        CubRetryPolicy p = { .base_usec = base, .max_usec = base, .factor = 1, .jitter_pct = LEASE_JITTER_PCT };

        return cub_retry_delay(&p, 1, cub_retry_draw());
}

/* the GET: the Lease to renew (404: none yet, created by the renewal) */
static void on_lease_get(void *userdata, long status, json_t *body, const char *error) {
        KubeNode *n = userdata;

        n->lease_req = 0;
        if (*error && status != 404) {
                failed(n, &n->lease_retry, n->lease_timer, "node lease", error);
                return;
        }
        json_decref(n->lease);
        n->lease = status == 404 ? json_null() : json_incref(body);
        lease_step(n);
}

/* the renewal (PUT) or the creation (POST) */
static void on_lease_renewed(void *userdata, long status, json_t *body, const char *error) {
        KubeNode *n = userdata;
        const char *t = kube_answer_renew_time(body);

        (void) status;
        n->lease_req = 0;
        json_decref(n->lease);
        n->lease = NULL;
        if (*error) {
                /* 409 (written meanwhile) or anything else: read it again */
                failed(n, &n->lease_retry, n->lease_timer, "node lease", error);
                return;
        }
        n->lease = json_incref(body);
        succeeded(&n->lease_retry, "node lease");
        (void) snprintf(n->renew_time, sizeof(n->renew_time), "%s", t);
        n->renewals++;
        arm(n->lease_timer, now_mono() + renew_interval(n));
}

/* kubelet's SetNodeOwnerFunc: a Lease without an owner gets the Node's UID
 * from a GET of the Node; a Node that is not there (deleted) gets no Lease
 * this round (the garbage collector would delete one owned by a UID that
 * is gone), and the next renewal looks again */
static void on_lease_node(void *userdata, long status, json_t *body, const char *error) {
        KubeNode *n = userdata;
        const char *uid = kube_answer_uid(body);

        n->lease_req = 0;
        if (*error || !uid) {
                if (status == 404 && !n->node_missing)
                        cub_log(LOG_WARNING, "API server: node '%s' not found: no node lease until it is back",
                                n->name);
                n->node_missing = status == 404;
                if (status != 404)
                        failed(n, &n->lease_retry, n->lease_timer, "node lease: the node's UID",
                               *error ? error : "no metadata.uid");
                else {
                        json_decref(n->lease); /* read again next round */
                        n->lease = NULL;
                        arm(n->lease_timer, now_mono() + renew_interval(n));
                }
                return;
        }
        if (n->node_missing)
                cub_log(LOG_INFO, "API server: node '%s' is back (uid %s): its lease too", n->name, uid);
        n->node_missing = false;
        (void) snprintf(n->owner, sizeof(n->owner), "%s", uid);
        lease_step(n);
}

static json_t *lease_object(KubeNode *n) {
        char now[40];

        time_rfc3339(now, sizeof(now), true);
        return kube_answer_lease_renewal(n->lease, n->name, LEASE_NAMESPACE, n->owner, n->o.lease_seconds, now);
}

static void lease_step(KubeNode *n) {
        char path[512];
        json_t *l;
        int r;

        if (n->lease_req || !n->registered)
                return; /* take_uid() starts it */
        if (!n->lease) {
                (void) snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
                                LEASE_NAMESPACE, n->name);
                r = request(n, &n->lease_req, "GET", path, NULL, NULL, on_lease_get);
        } else if (!kube_answer_lease_owned(n->lease) && !n->owner[0]) {
                (void) snprintf(path, sizeof(path), "/api/v1/nodes/%s", n->name);
                r = request(n, &n->lease_req, "GET", path, NULL, NULL, on_lease_node);
        } else {
                l = lease_object(n);
                if (json_is_object(n->lease))
                        (void) snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
                                        LEASE_NAMESPACE, n->name);
                else
                        (void) snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
                                        LEASE_NAMESPACE);
                r = l ? request(n, &n->lease_req, json_is_object(n->lease) ? "PUT" : "POST", path, KUBE_CT_JSON, l,
                                on_lease_renewed)
                      : -ENOMEM;
                json_decref(l);
                n->owner[0] = 0; /* a GET of the Node for each Lease without an owner */
        }
        if (r < 0)
                failed(n, &n->lease_retry, n->lease_timer, "node lease", "cannot start the request");
}

static int on_lease_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        lease_step(userdata);
        return 0;
}

/* ---- the interface --------------------------------------------------------------- */

int kube_node_new(sd_event *e, KubeClient *c, const KubeNodeOptions *o, KubeNodeFn fn, void *userdata, KubeNode **ret,
                  CubError *err) {
        KubeNode *n = calloc(1, sizeof(*n));
        int r;

        if (!n || !(n->name = strdup(o->name)) || !(n->since = json_object())) {
                kube_node_free(n);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        n->event = sd_event_ref(e);
        n->client = c;
        n->o = *o;
        n->o.name = n->name;
        n->fn = fn;
        n->userdata = userdata;
        r = sd_event_add_time(e, &n->node_timer, CLOCK_MONOTONIC, 0, CUB_USEC_PER_MSEC, on_node_timer, n);
        if (r >= 0)
                r = sd_event_add_time(e, &n->lease_timer, CLOCK_MONOTONIC, 0, CUB_USEC_PER_MSEC, on_lease_timer, n);
        if (r < 0) {
                kube_node_free(n);
                return cub_err_set(err, -r, "node status timers: %s", strerror(-r));
        }
        (void) sd_event_source_set_enabled(n->node_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(n->lease_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(n->node_timer, "kube-node");
        (void) sd_event_source_set_description(n->lease_timer, "kube-lease");
        *ret = n;
        return 0;
}

KubeNode *kube_node_free(KubeNode *n) {
        if (!n)
                return NULL;
        if (n->client) {
                kube_client_cancel(n->client, n->node_req);
                kube_client_cancel(n->client, n->lease_req);
        }
        n->node_timer = sd_event_source_disable_unref(n->node_timer);
        n->lease_timer = sd_event_source_disable_unref(n->lease_timer);
        json_decref(n->sent);
        json_decref(n->since);
        json_decref(n->api_conditions);
        json_decref(n->lease);
        sd_event_unref(n->event);
        free(n->name);
        free(n);
        return NULL;
}

int kube_node_start(KubeNode *n, CubError *err) {
        (void) err;
        arm(n->node_timer, now_mono());
        return 0;
}

void kube_node_changed(KubeNode *n) {
        if (n && n->registered && !n->node_req && cub_retry_due(&n->node_retry, now_mono()))
                arm(n->node_timer, now_mono());
}

const char *kube_node_uid(const KubeNode *n) {
        return n->uid;
}

const json_t *kube_node_api_conditions(const KubeNode *n) {
        return n ? n->api_conditions : NULL;
}

bool kube_node_registered(const KubeNode *n) {
        return n && n->registered;
}

json_t *kube_node_status_json(const KubeNode *n) {
        const char *error = n->node_retry.failures ? n->node_retry.error : n->lease_retry.error;

        return json_pack("{s:s,s:s,s:b,s:s,s:s,s:I,s:s,s:I,s:s}", "server", kube_client_server(n->client), "node",
                         n->name, "registered", n->registered, "uid", n->uid, "statusSent", n->sent_time,
                         "statusUpdates", (json_int_t) n->status_updates, "leaseRenewed", n->renew_time,
                         "leaseRenewals", (json_int_t) n->renewals, "error", error);
}
