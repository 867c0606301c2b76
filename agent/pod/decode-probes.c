/* SPDX-License-Identifier: Apache-2.0 */
/* Probes (startupProbe, livenessProbe, readinessProbe) and lifecycle hooks
 * (postStart, preStop) of a container: their field tables, the API's
 * defaults (SetDefaults_Probe, SetDefaults_HTTPGetAction) and checks
 * (validateProbe, validateHandler, validateLifecycle). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"

static const char *const schemes[] = { "HTTP", "HTTPS", NULL };

/* IntOrString: a number or a port name */
static int dec_port_ref(PodDec *d, json_t *v, void *dst, const PodField *f) {
        PodPortRef *p = dst;

        (void) f;
        if (json_is_integer(v)) {
                json_int_t i = json_integer_value(v);

                if (i < 1 || i > 65535)
                        return pod_dec_fail(
                                d, 0, NULL,
                                "Invalid value: %" JSON_INTEGER_FORMAT ": must be between 1 and 65535, inclusive", i);
                p->number = (int32_t) i;
                return 0;
        }
        if (json_is_string(v)) {
                const char *s = json_string_value(v);
                size_t n = strlen(s);
                bool letter = false, ok = n > 0 && n <= 15 && s[0] != '-' && s[n - 1] != '-' && !strstr(s, "--");

                for (size_t i = 0; ok && i < n; i++) {
                        ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-';
                        letter = letter || (s[i] >= 'a' && s[i] <= 'z');
                }
                if (!ok || !letter)
                        return pod_dec_fail(d, 0, NULL,
                                            "Invalid value: \"%s\": must be a port number or an IANA_SVC_NAME (at "
                                            "most 15 characters, lowercase letters, digits and '-', at least one "
                                            "letter)",
                                            s);
                free(p->name);
                p->name = strdup(s);
                return p->name ? 0 : cub_err_set(d->err, ENOMEM, "out of memory");
        }
        return pod_dec_fail(d, 0, NULL, "Invalid type: expected integer or string, got %s", pod_json_type_name(v));
}

static void port_ref_done(void *dst) {
        PodPortRef *p = dst;

        free(p->name);
        p->name = NULL;
}

static const PodField header_fields[] = {
        POD_STR_REQ("name", PodHTTPHeader, name),
        { .name = "value", .decode = pod_dec_string, .offset = offsetof(PodHTTPHeader, value) },
        {},
};

static const PodField exec_fields[] = {
        { .name = "command", .decode = pod_dec_strv, .offset = offsetof(PodExecAction, command) },
        {},
};

static const PodField http_get_fields[] = {
        POD_STR("path", PodHTTPGetAction, path),
        { .name = "port",
          .decode = dec_port_ref,
          .offset = offsetof(PodHTTPGetAction, port),
          .flags = POD_FIELD_REQUIRED,
          .done = port_ref_done },
        POD_STR("host", PodHTTPGetAction, host),
        POD_ENUM("scheme", PodHTTPGetAction, scheme, schemes),
        { .name = "httpHeaders",
          .decode = pod_dec_object_array,
          .offset = offsetof(PodHTTPGetAction, headers),
          .count_offset = offsetof(PodHTTPGetAction, n_headers),
          .elem_size = sizeof(PodHTTPHeader),
          .sub = header_fields },
        {},
};

static const PodField tcp_socket_fields[] = {
        { .name = "port",
          .decode = dec_port_ref,
          .offset = offsetof(PodTCPSocketAction, port),
          .flags = POD_FIELD_REQUIRED,
          .done = port_ref_done },
        POD_STR("host", PodTCPSocketAction, host),
        {},
};

static const PodField grpc_fields[] = {
        { .name = "port",
          .decode = pod_dec_int32,
          .offset = offsetof(PodGRPCAction, port),
          .flags = POD_FIELD_REQUIRED },
        POD_STR("service", PodGRPCAction, service),
        {},
};

static const PodField sleep_fields[] = {
        { .name = "seconds",
          .decode = pod_dec_int64,
          .offset = offsetof(PodSleepAction, seconds),
          .flags = POD_FIELD_REQUIRED },
        {},
};

/* the handler's actions, at member h of struct T */
#define HANDLER_ACTION(n, T, h, m, s)                                                                    \
        {                                                                                                \
                .name = n, .decode = pod_dec_object, .offset = offsetof(T, h) + offsetof(PodHandler, m), \
                .set_offset = offsetof(T, h) + offsetof(PodHandler, m##_set), .sub = s                   \
        }

typedef struct HandlerWrap {
        PodHandler h;
} HandlerWrap;

static int probe_post(PodDec *d, json_t *obj, void *base, bool only_one_success);

int pod_liveness_post(PodDec *d, json_t *obj, void *base) {
        return probe_post(d, obj, base, true);
}

int pod_readiness_post(PodDec *d, json_t *obj, void *base) {
        return probe_post(d, obj, base, false);
}

static int hook_post(PodDec *d, json_t *obj, void *base);

#define PROBE_FIELDS                                                                                                  \
        HANDLER_ACTION("exec", PodProbe, handler, exec, exec_fields),                                                 \
                HANDLER_ACTION("httpGet", PodProbe, handler, http_get, http_get_fields),                              \
                HANDLER_ACTION("tcpSocket", PodProbe, handler, tcp_socket, tcp_socket_fields),                        \
                HANDLER_ACTION("grpc", PodProbe, handler, grpc, grpc_fields),                                         \
                { .name = "initialDelaySeconds",                                                                      \
                  .decode = pod_dec_int32,                                                                            \
                  .offset = offsetof(PodProbe, initial_delay_seconds) },                                              \
                { .name = "timeoutSeconds", .decode = pod_dec_int32, .offset = offsetof(PodProbe, timeout_seconds) }, \
                { .name = "periodSeconds", .decode = pod_dec_int32, .offset = offsetof(PodProbe, period_seconds) },   \
                { .name = "successThreshold",                                                                         \
                  .decode = pod_dec_int32,                                                                            \
                  .offset = offsetof(PodProbe, success_threshold) },                                                  \
                { .name = "failureThreshold",                                                                         \
                  .decode = pod_dec_int32,                                                                            \
                  .offset = offsetof(PodProbe, failure_threshold) },                                                  \
        {                                                                                                             \
                .name = "terminationGracePeriodSeconds", .decode = pod_dec_int64,                                     \
                .offset = offsetof(PodProbe, termination_grace_period_seconds),                                       \
                .set_offset = offsetof(PodProbe, termination_grace_period_seconds_set)                                \
        }

static const PodField hook_fields[] = {
        HANDLER_ACTION("exec", HandlerWrap, h, exec, exec_fields),
        HANDLER_ACTION("httpGet", HandlerWrap, h, http_get, http_get_fields),
        HANDLER_ACTION("tcpSocket", HandlerWrap, h, tcp_socket, tcp_socket_fields),
        HANDLER_ACTION("sleep", HandlerWrap, h, sleep, sleep_fields),
        {},
};

const PodField pod_probe_table[] = { PROBE_FIELDS, {} };
const PodField pod_lifecycle_table[] = {
        { .name = "postStart",
          .decode = pod_dec_object,
          .offset = offsetof(PodLifecycle, post_start),
          .set_offset = offsetof(PodLifecycle, post_start_set),
          .sub = hook_fields,
          .post = hook_post },
        { .name = "preStop",
          .decode = pod_dec_object,
          .offset = offsetof(PodLifecycle, pre_stop),
          .set_offset = offsetof(PodLifecycle, pre_stop_set),
          .sub = hook_fields,
          .post = hook_post },
        {},
};

int pod_probes_check(PodDec *d, json_t *obj, PodContainer *c, bool init) {
        static const char *const names[] = { "livenessProbe", "readinessProbe", "startupProbe", "lifecycle" };
        bool set[] = { c->liveness_probe_set, c->readiness_probe_set, c->startup_probe_set,
                       c->lifecycle.post_start_set || c->lifecycle.pre_stop_set };

        if (!init || pod_container_is_sidecar(c))
                return 0;
        for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
                if (set[i]) {
                        char suffix[32];

                        (void) snprintf(suffix, sizeof(suffix), ".%s", names[i]);
                        return pod_dec_fail(d, pod_dec_field_line(d, obj, names[i]), suffix,
                                            "Forbidden: may not be set for init containers without "
                                            "restartPolicy=Always");
                }
        return 0;
}

/* validateHandler: exactly one action; defaults of httpGet */
static int handler_check(PodDec *d, PodHandler *h) {
        int n = h->exec_set + h->http_get_set + h->tcp_socket_set + h->grpc_set + h->sleep_set;

        if (n == 0)
                return pod_dec_fail(d, 0, NULL, "Required value: must specify a handler type");
        if (n > 1)
                return pod_dec_fail(d, 0, NULL, "Forbidden: may not specify more than 1 handler type");
        if (h->exec_set) {
                h->kind = POD_HANDLER_EXEC;
                if (h->exec.command.n == 0)
                        return pod_dec_fail(d, 0, ".exec.command", "Required value");
        } else if (h->http_get_set) {
                h->kind = POD_HANDLER_HTTP_GET;
                if (!h->http_get.path)
                        h->http_get.path = strdup("/");
                if (!h->http_get.scheme)
                        h->http_get.scheme = strdup("HTTP");
                if (!h->http_get.path || !h->http_get.scheme)
                        return cub_err_set(d->err, ENOMEM, "out of memory");
                for (size_t i = 0; i < h->http_get.n_headers; i++) {
                        const char *s = h->http_get.headers[i].name;

                        for (const char *c = s; *c; c++)
                                if (*c <= ' ' || *c >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", *c)) {
                                        char suffix[64];

                                        (void) snprintf(suffix, sizeof(suffix), ".httpGet.httpHeaders[%zu].name", i);
                                        return pod_dec_fail(d, 0, suffix,
                                                            "Invalid value: \"%s\": a valid HTTP header must consist "
                                                            "of alphanumeric characters or '-'",
                                                            s);
                                }
                }
        } else if (h->tcp_socket_set)
                h->kind = POD_HANDLER_TCP_SOCKET;
        else if (h->grpc_set) {
                h->kind = POD_HANDLER_GRPC;
                if (h->grpc.port < 1 || h->grpc.port > 65535)
                        return pod_dec_fail(d, 0, ".grpc.port",
                                            "Invalid value: %d: must be between 1 and 65535, inclusive", h->grpc.port);
        } else {
                h->kind = POD_HANDLER_SLEEP;
                if (h->sleep.seconds < 0)
                        return pod_dec_fail(d, 0, ".sleep.seconds",
                                            "Invalid value: %lld: must be greater than or equal to 0",
                                            (long long) h->sleep.seconds);
        }
        return 0;
}

static int nonneg(PodDec *d, json_t *obj, const char *name, int32_t v) {
        char suffix[64];

        if (v >= 0)
                return 0;
        (void) snprintf(suffix, sizeof(suffix), ".%s", name);
        return pod_dec_fail(d, pod_dec_field_line(d, obj, name), suffix,
                            "Invalid value: %d: must be greater than or equal to 0", v);
}

static int probe_post(PodDec *d, json_t *obj, void *base, bool only_one_success) {
        PodProbe *p = base;
        int r;

        r = handler_check(d, &p->handler);
        if (r < 0)
                return r;
        if ((r = nonneg(d, obj, "initialDelaySeconds", p->initial_delay_seconds)) < 0 ||
            (r = nonneg(d, obj, "timeoutSeconds", p->timeout_seconds)) < 0 ||
            (r = nonneg(d, obj, "periodSeconds", p->period_seconds)) < 0 ||
            (r = nonneg(d, obj, "successThreshold", p->success_threshold)) < 0 ||
            (r = nonneg(d, obj, "failureThreshold", p->failure_threshold)) < 0)
                return r;
        if (p->termination_grace_period_seconds_set && p->termination_grace_period_seconds <= 0)
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "terminationGracePeriodSeconds"),
                                    ".terminationGracePeriodSeconds", "Invalid value: %lld: must be greater than 0",
                                    (long long) p->termination_grace_period_seconds);
        /* SetDefaults_Probe */
        if (p->timeout_seconds == 0)
                p->timeout_seconds = 1;
        if (p->period_seconds == 0)
                p->period_seconds = 10;
        if (p->success_threshold == 0)
                p->success_threshold = 1;
        if (p->failure_threshold == 0)
                p->failure_threshold = 3;
        if (only_one_success && p->success_threshold != 1)
                return pod_dec_fail(d, pod_dec_field_line(d, obj, "successThreshold"), ".successThreshold",
                                    "Invalid value: %d: must be 1", p->success_threshold);
        return 0;
}

static int hook_post(PodDec *d, json_t *obj, void *base) {
        HandlerWrap *w = base;

        (void) obj;
        return handler_check(d, &w->h);
}

int pod_port_resolve(const PodContainer *c, const PodPortRef *port, int32_t *ret) {
        if (!port->name) {
                *ret = port->number;
                return port->number > 0 ? 0 : -ENOENT;
        }
        for (size_t i = 0; i < c->n_ports; i++)
                if (c->ports[i].name && strcmp(c->ports[i].name, port->name) == 0) {
                        *ret = c->ports[i].container_port;
                        return 0;
                }
        return -ENOENT;
}
