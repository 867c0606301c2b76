/* SPDX-License-Identifier: Apache-2.0 */
/* The loop's side of the HTTP API (agent/api/http.h): every second it stores
 * its heartbeat for the health checks and, when a client asked since the
 * last tick, renders a snapshot (PodList, metrics, the pods' cgroups) and
 * publishes it to the server thread. The loop's counters live in
 * a->api->metrics, written here alone: the other files call agent_metrics_*(). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "../api/selfsigned.h"
#include "../util/cleanup.h"
#include "../util/log.h"
#include "agent-internal.h"

#define TICK_USEC CUB_USEC_PER_SEC

/* The HTTP API: an object of this file's (Agent.api), made by agent_http_start. */
struct AgentApi {
        ApiMetrics metrics;
        ApiHttp *http;              /* the read-only port */
        ApiHttp *kubelet;           /* the kubelet server (port 10250), as a node of a cluster */
        ApiAuth *auth;              /* its authentication and authorization */
        KubeConfig review_cfg;      /* the node's credentials for its reviews */
        char *self_cert, *self_key; /* its self-signed pair, without tlsCertFile */
        ApiPodCache pod_cache;
        sd_event_source *timer;
        sd_event_source *wake;       /* owns the eventfd a waiting request writes (ApiHttpConfig.wake_fd) */
        uint64_t runtime_down_since; /* CLOCK_MONOTONIC µs of the first tick it was seen down, 0 = up */
};

static void publish(Agent *a, uint64_t now) {
        ApiPodsInfo info;
        ApiGauges g = { .runtime_ready = a->rt->state == AGENT_RUNTIME_READY,
                        .version = CUBELET_VERSION,
                        .node_name = a->core.opt.node_name,
                        .manifest_errors_now = a->errs->n_dir };
        ApiSnapshot *s = api_snapshot_new();
        size_t len = 0;
        FILE *f;

        if (!s)
                return;
        agent_api_pods_info(a, &info);
        api_pods_gauges(a->table.pods, a->table.n_pods, &g);
        s->made_usec = now;
        s->node_name = strdup(a->core.opt.node_name);
        s->pods_json = api_pod_list_json_cached(&a->api->pod_cache, a->table.pods, a->table.n_pods, &info);
        f = open_memstream(&s->metrics, &len);
        if (f) {
                (void) api_metrics_render(&a->api->metrics, &g, f);
                agent_managers_metrics(a, f);
                (void) fclose(f);
        }
        if (!s->node_name || !s->pods_json || !s->metrics ||
            api_snapshot_add_pods(s, a->table.pods, a->table.n_pods, &info) < 0) {
                cub_log(LOG_ERR, "HTTP API: out of memory rendering the snapshot");
                api_snapshot_unref(s);
                return;
        }
        if (a->api->kubelet)
                api_http_publish(a->api->kubelet, api_snapshot_ref(s));
        if (a->api->http)
                api_http_publish(a->api->http, s);
        else
                api_snapshot_unref(s);
}

/* a snapshot when a client of either server asked since the last one */
static void publish_if_wanted(Agent *a, uint64_t now) {
        bool wanted = false;

        for (ApiHttp *const *h = (ApiHttp *const[]){ a->api->http, a->api->kubelet, NULL }, *const *end = h + 2;
             h < end; h++)
                if (*h)
                        wanted |= api_http_take_wanted(*h);
        if (wanted)
                publish(a, now);
}

static int on_tick(sd_event_source *src, uint64_t usec, void *userdata) {
        Agent *a = userdata;
        uint64_t now = agent_now_usec();

        (void) sd_event_source_set_time(src, usec + TICK_USEC);
        if (a->rt->state != AGENT_RUNTIME_DOWN)
                a->api->runtime_down_since = 0;
        else if (!a->api->runtime_down_since)
                a->api->runtime_down_since = now;
        for (ApiHttp *const *h = (ApiHttp *const[]){ a->api->http, a->api->kubelet, NULL }, *const *end = h + 2;
             h < end; h++)
                if (*h)
                        api_http_heartbeat(*h, now, a->api->runtime_down_since, a->rt->notified_ready);
        publish_if_wanted(a, now);
        return 0;
}

/* A request found the snapshot stale: render it now rather than on the
 * next tick. At most once per API_HTTP_STALE_USEC however many clients
 * ask: the snapshot this publishes is fresh for that long. */
static int on_wake(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        eventfd_t v;

        (void) src;
        (void) revents;
        (void) eventfd_read(fd, &v);
        publish_if_wanted(userdata, agent_now_usec());
        return 0;
}

static int wake_start(Agent *a, int *ret_fd, CubError *err) {
        int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), r;

        if (fd < 0)
                return cub_err_set(err, errno, "HTTP API: eventfd: %s", strerror(errno));
        r = sd_event_add_io(a->core.event, &a->api->wake, fd, EPOLLIN, on_wake, a);
        if (r < 0) {
                close(fd);
                return cub_err_set(err, -r, "HTTP API: watching its eventfd: %s", strerror(-r));
        }
        (void) sd_event_source_set_io_fd_own(a->api->wake, true);
        (void) sd_event_source_set_description(a->api->wake, "http-api-wake");
        *ret_fd = fd;
        return 0;
}

static int review(void *userdata, const char *path, json_t *body, json_t **ret_status, CubError *err) {
        return kube_review_post(userdata, path, body, ret_status, err);
}

/* The kubelet server, on a node of a cluster: TLS, its clients
 * authenticated and authorized through the API server (agent/api/auth.h). */
static int kubelet_server_start(Agent *a, const ApiHttpConfig *base, CubError *err) {
        const PodKubeletConfig *kc = a->core.kc;
        ApiHttpConfig c = *base;
        int r;

        if (!a->core.opt.kubeconfig || kc->port == 0)
                return 0;
        if (a->core.opt.kubelet_address)
                c.address = a->core.opt.kubelet_address;
        /* kubelet's own pair when none is given: self-signed, in the state directory */
        if (!kc->tls_cert_file || !kc->tls_private_key_file) {
                _cleanup_free_ char *dir = NULL;

                if (asprintf(&dir, "%s/pki", a->core.opt.state_dir) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
                r = api_selfsigned_ensure(dir, a->core.opt.node_name, a->core.node.ip[0] ? a->core.node.ip : NULL,
                                          &a->api->self_cert, &a->api->self_key, err);
                if (r < 0)
                        return cub_err_wrap(err, "kubelet server");
                c.tls_cert_file = a->api->self_cert;
                c.tls_key_file = a->api->self_key;
                cub_log(LOG_INFO, "kubelet server: no tlsCertFile: the self-signed %s", a->api->self_cert);
        }
        if (a->core.opt.http_port == kc->port)
                return cub_err_set(err, EADDRINUSE,
                                   "readOnlyPort and port are both %lld: the read-only port and the kubelet server "
                                   "need a port each (or readOnlyPort: 0)",
                                   (long long) kc->port);
        r = kube_config_load(a->core.opt.kubeconfig, &a->api->review_cfg, err);
        if (r < 0)
                return r;
        r = api_auth_new(&(ApiAuthConfig){ .node_name = a->core.opt.node_name,
                                           .anonymous = kc->anonymous_auth,
                                           .webhook = kc->webhook_authn,
                                           .always_allow = kc->authorization_mode == POD_AUTHZ_ALWAYS_ALLOW,
                                           .review = review,
                                           .userdata = &a->api->review_cfg },
                         &a->api->auth, err);
        if (r < 0)
                return r;
        c.port = (unsigned) kc->port;
        c.auth = a->api->auth;
        c.runtime_endpoint = a->core.opt.runtime_endpoint;
        r = api_http_new(&c, &a->api->kubelet, err);
        if (r < 0)
                return cub_err_wrap(err, "kubelet server");
        cub_log(LOG_INFO, "kubelet server on %s%s:%u (TLS; %s%swebhook authorization%s)",
                strchr(c.address, ':') ? "[" : "", c.address, api_http_port(a->api->kubelet),
                c.client_ca_file ? "client certificates, " : "", kc->webhook_authn ? "bearer tokens, " : "",
                kc->anonymous_auth ? ", anonymous" : "");
        return 0;
}

unsigned agent_kubelet_port(Agent *a) {
        return a->api && a->api->kubelet ? api_http_port(a->api->kubelet) : 0;
}

int agent_http_start(Agent *a, CubError *err) {
        ApiHttpConfig c;
        uint64_t wd = 0;
        int r;

        a->api = calloc(1, sizeof(*a->api));
        if (!a->api)
                return cub_err_set(err, ENOMEM, "out of memory");
        api_metrics_init(&a->api->metrics);
        api_http_config_init(&c);
        c.address = a->core.opt.http_address;
        c.tls_cert_file = a->core.kc->tls_cert_file;
        c.tls_key_file = a->core.kc->tls_private_key_file;
        c.client_ca_file = a->core.kc->client_ca_file;
        c.cgroup_root = a->core.opt.cgroup_root;
        c.fs_path = a->core.opt.state_dir;
        if (sd_watchdog_enabled(false, &wd) > 0 && wd > 0)
                c.stall_usec = wd;
        if ((!a->core.opt.kubeconfig || a->core.kc->port == 0) && a->core.opt.http_port == 0)
                return 0; /* no server */
        r = wake_start(a, &c.wake_fd, err);
        if (r < 0)
                return r;
        r = kubelet_server_start(a, &c, err);
        if (r >= 0 && a->core.opt.http_port != 0) {
                c.port = a->core.opt.http_port;
                r = api_http_new(&c, &a->api->http, err);
                if (r >= 0)
                        cub_log(LOG_INFO, "HTTP API on %s%s:%u%s", strchr(c.address, ':') ? "[" : "", c.address,
                                api_http_port(a->api->http), c.tls_cert_file ? " (TLS, client certificates)" : "");
        }
        if (r < 0)
                return r;
        if (!a->api->http && !a->api->kubelet)
                return 0;
        r = sd_event_add_time_relative(a->core.event, &a->api->timer, CLOCK_MONOTONIC, TICK_USEC, TICK_USEC / 10,
                                       on_tick, a);
        if (r < 0)
                return cub_err_set(err, -r, "HTTP API timer: %s", strerror(-r));
        (void) sd_event_source_set_description(a->api->timer, "http-api");
        (void) sd_event_source_set_enabled(a->api->timer, SD_EVENT_ON);
        return 0;
}

void agent_http_stop(Agent *a) {
        if (!a->api)
                return;
        a->api->timer = sd_event_source_disable_unref(a->api->timer);
        /* the server thread first: it may read the snapshot */
        a->api->http = api_http_free(a->api->http);
        a->api->kubelet = api_http_free(a->api->kubelet);
        a->api->wake = sd_event_source_disable_unref(a->api->wake); /* closes the eventfd: no server writes it now */
        a->api->auth = api_auth_free(a->api->auth);
        kube_config_done(&a->api->review_cfg);
        free(a->api->self_cert);
        free(a->api->self_key);
        a->api->self_cert = a->api->self_key = NULL;
        api_pod_cache_done(&a->api->pod_cache);
        api_metrics_done(&a->api->metrics);
        free(a->api);
        a->api = NULL;
}

void agent_metrics_job(Agent *a, const LcPod *p, const WorkerJob *j) {
        ApiWorkerOp op = j->kind == WORKER_KILL     ? API_WORKER_OP_KILL
                         : j->kind == WORKER_UPDATE ? API_WORKER_OP_UPDATE
                         : p && !p->started         ? API_WORKER_OP_CREATE
                                                    : API_WORKER_OP_SYNC;

        if (!a->api)
                return; /* before agent_http_start */
        if (j->finished_usec >= j->started_usec && j->started_usec)
                api_histogram_observe(&a->api->metrics.pod_worker_duration[op],
                                      (double) (j->finished_usec - j->started_usec) / 1e6);
        /* the first time its containers were started: source event → started */
        if (p && j->kind == WORKER_SYNC && j->containers_started_usec && !p->latency.started && p->latency.event &&
            j->containers_started_usec >= p->latency.event)
                api_histogram_observe(&a->api->metrics.pod_start_duration,
                                      (double) (j->containers_started_usec - p->latency.event) / 1e6);
}

void agent_api_set_network(Agent *a, const char *error) {
        if (!a->api)
                return; /* before agent_http_start */
        if (a->api->http)
                api_http_set_network(a->api->http, error);
        if (a->api->kubelet)
                api_http_set_network(a->api->kubelet, error);
}

void agent_metrics_manifest_error(Agent *a) {
        if (!a->api)
                return; /* before agent_http_start */
        a->api->metrics.manifest_errors++;
}

void agent_metrics_url_fetch(Agent *a, const char *result) {
        if (!a->api)
                return; /* before agent_http_start */
        (void) api_counter_add(&a->api->metrics.http_source_fetches, result, 1);
}

void agent_metrics_rejected(Agent *a, const char *reason, bool cpu_pinning_error) {
        if (!a->api)
                return; /* before agent_http_start */
        (void) api_counter_add(&a->api->metrics.admission_rejections, reason, 1);
        if (cpu_pinning_error)
                a->api->metrics.cpu_pinning_requests++, a->api->metrics.cpu_pinning_errors++;
}

void agent_metrics_cpu_pinning(Agent *a, size_t containers) {
        if (!a->api)
                return; /* before agent_http_start */
        a->api->metrics.cpu_pinning_requests += containers;
}

void agent_metrics_stopped_by(Agent *a, bool evicted, const char *resource) {
        if (!a->api)
                return; /* before agent_http_start */
        (void) api_counter_add(evicted ? &a->api->metrics.evictions : &a->api->metrics.preemptions, resource, 1);
}

const ApiMetrics *agent_metrics(const Agent *a) {
        return a->api ? &a->api->metrics : NULL;
}
