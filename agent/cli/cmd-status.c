/* SPDX-License-Identifier: Apache-2.0 */
/* `cubelet status`: asks the running agent over its socket. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/api.h"
#include "../util/cleanup.h"
#include "../util/log.h"
#include "cli.h"

static const char *str(json_t *o, const char *k) {
        const char *s = json_string_value(json_object_get(o, k));
        return s ? s : "";
}

/* a device's health in a container's allocatedResourcesStatus ("Unknown" when not there) */
static const char *device_health(json_t *c, const char *resource, const char *id) {
        json_t *r, *d;
        size_t i, j;

        json_array_foreach(json_object_get(c, "allocatedResourcesStatus"), i, r) {
                if (strcmp(str(r, "name"), resource) != 0)
                        continue;
                json_array_foreach(json_object_get(r, "resources"), j, d) {
                        if (id && strcmp(str(d, "resourceID"), id) == 0)
                                return *str(d, "health") ? str(d, "health") : "Unknown";
                }
        }
        return "Unknown";
}

static void print_table(json_t *doc) {
        json_t *rt = json_object_get(doc, "runtime"), *pods = json_object_get(doc, "pods"),
               *errors = json_object_get(doc, "errors"), *p, *c, *e;
        size_t i, k;

        printf("node %s, manifests in %s\n", str(doc, "node"), str(doc, "manifestDir"));
        printf("runtime %s: %s%s%s\n", str(rt, "endpoint"),
               json_is_true(json_object_get(rt, "ready")) ? "ready" : "NOT READY", *str(rt, "version") ? ", " : "",
               str(rt, "version"));
        if (*str(rt, "error"))
                printf("  %s\n", str(rt, "error"));
        if ((e = json_object_get(doc, "cgroups")) && json_is_false(json_object_get(e, "perQOS")))
                printf("cgroups: none of cubelet's (cgroupsPerQOS: false); pods below %s%s%s (the runtime's)\n",
                       *str(e, "podsParent") ? "'" : "", *str(e, "podsParent") ? str(e, "podsParent") : "its default",
                       *str(e, "podsParent") ? "'" : "");
        if (*str(rt, "networkError"))
                printf("node NOT READY: %s; pods on the pod network wait, host-network pods start\n",
                       str(rt, "networkError"));
        if ((e = json_object_get(doc, "manifestURL"))) {
                json_t *f = json_object_get(e, "fetches");

                printf("manifest URL %s: %s (HTTP %lld) at %s, %lld pods; fetches %lld ok, %lld not modified, %lld "
                       "errors\n",
                       str(e, "url"), str(e, "lastResult"),
                       (long long) json_integer_value(json_object_get(e, "lastStatus")),
                       *str(e, "lastFetch") ? str(e, "lastFetch") : "-",
                       (long long) json_integer_value(json_object_get(e, "pods")),
                       (long long) json_integer_value(json_object_get(f, "ok")),
                       (long long) json_integer_value(json_object_get(f, "notModified")),
                       (long long) json_integer_value(json_object_get(f, "error")));
                if (*str(e, "lastError"))
                        printf("  error: %s\n", str(e, "lastError"));
        }
        {
                json_t *conds = json_object_get(doc, "conditions"), *cm = json_object_get(doc, "cpuManager"),
                       *ev = json_object_get(doc, "eviction"), *cd;
                size_t j;

                if (json_array_size(conds) > 0) {
                        printf("conditions:");
                        json_array_foreach(conds, j, cd) printf(" %s=%s", str(cd, "type"), str(cd, "status"));
                        putchar('\n');
                }
                if (cm && strcmp(str(cm, "policy"), "static") == 0)
                        printf("cpu manager static: reserved '%s', shared pool '%s', free for exclusive use '%s'\n",
                               str(cm, "reserved"), str(cm, "sharedPool"), str(cm, "freeExclusive"));
                else if (cm)
                        printf("cpu manager %s\n", str(cm, "policy"));
                json_array_foreach(json_object_get(json_object_get(doc, "devicePlugins"), "resources"), j, cd) {
                        json_t *u;
                        size_t x;

                        printf("device plugin %s (%s, %s): capacity %lld, allocatable %lld", str(cd, "name"),
                               str(cd, "endpoint"),
                               json_is_true(json_object_get(cd, "connected")) ? "connected" : "disconnected",
                               (long long) json_integer_value(json_object_get(cd, "capacity")),
                               (long long) json_integer_value(json_object_get(cd, "allocatable")));
                        if (json_array_size(json_object_get(cd, "unhealthy")) > 0) {
                                printf(", unhealthy");
                                json_array_foreach(json_object_get(cd, "unhealthy"), x, u)
                                        printf(" %s", json_string_value(u));
                        }
                        putchar('\n');
                }
                if (ev) {
                        json_t *sig = json_object_get(json_object_get(ev, "signals"), "memory.available");

                        printf("eviction (%s policy):", str(ev, "policy"));
                        json_array_foreach(json_object_get(ev, "thresholds"), j, cd)
                                printf(" %s", json_string_value(cd));
                        if (json_is_object(sig))
                                printf("; memory.available %lld of %lld bytes",
                                       (long long) json_integer_value(json_object_get(sig, "available")),
                                       (long long) json_integer_value(json_object_get(sig, "capacity")));
                        putchar('\n');
                        json_array_foreach(json_object_get(ev, "decisions"), j, cd) printf(
                                "  evicted %s (%s): %s\n", str(cd, "pod"), str(cd, "signal"), str(cd, "message"));
                }
        }
        printf("\n%-12s %-32s %-10s %-11s %-8s %s\n", "NAMESPACE", "NAME", "PHASE", "QOS", "RESTARTS", "CGROUP");
        json_array_foreach(pods, i, p) {
                printf("%-12s %-32s %-10s %-11s %-8lld %s\n", str(p, "namespace"), str(p, "name"), str(p, "phase"),
                       str(p, "qosClass"), (long long) json_integer_value(json_object_get(p, "restarts")),
                       str(p, "cgroup"));
                json_array_foreach(json_object_get(p, "containers"), k, c) {
                        json_t *last = json_object_get(c, "lastTermination");

                        printf("    %s%-20s %-10s restarts %lld",
                               json_is_true(json_object_get(c, "init")) ? "init " : "", str(c, "name"), str(c, "state"),
                               (long long) json_integer_value(json_object_get(c, "restarts")));
                        if (*str(c, "cpuset"))
                                printf(" cpus %s%s", str(c, "cpuset"),
                                       json_is_true(json_object_get(c, "exclusive")) ? " (exclusive)" : "");
                        if (json_is_object(json_object_get(c, "devices"))) {
                                const char *res;
                                json_t *ids, *id;
                                size_t x;

                                json_object_foreach(json_object_get(c, "devices"), res, ids) {
                                        printf(" %s", res);
                                        json_array_foreach(ids, x, id) {
                                                const char *h = device_health(c, res, json_string_value(id));

                                                printf("%s%s%s%s%s", x ? "," : " ", json_string_value(id),
                                                       strcmp(h, "Healthy") != 0 ? " (" : "",
                                                       strcmp(h, "Healthy") != 0 ? h : "",
                                                       strcmp(h, "Healthy") != 0 ? ")" : "");
                                        }
                                }
                        }
                        if (*str(c, "waitingReason"))
                                printf(" (%s)", str(c, "waitingReason"));
                        if (last)
                                printf(", last: %s exit %lld", *str(last, "reason") ? str(last, "reason") : "exited",
                                       (long long) json_integer_value(json_object_get(last, "exitCode")));
                        putchar('\n');
                }
                if (*str(p, "reason"))
                        printf("    reason %s: %s\n", str(p, "reason"), str(p, "message"));
                if (*str(p, "lastError"))
                        printf("    error: %s\n", str(p, "lastError"));
                json_array_foreach(json_object_get(p, "warnings"), k, c) {
                        if (json_is_string(c))
                                printf("    warning %s\n", json_string_value(c));
                }
        }
        if (json_array_size(json_object_get(doc, "stopping")) > 0) {
                printf("\nSTOPPING\n");
                json_array_foreach(json_object_get(doc, "stopping"), i, e) {
                        printf("  %s (uid %s): attempt %lld", str(e, "pod"), str(e, "uid"),
                               (long long) json_integer_value(json_object_get(e, "attempts")));
                        if (json_is_true(json_object_get(e, "inFlight")))
                                printf(", in progress");
                        else
                                printf(", next in %.0f s",
                                       json_number_value(json_object_get(e, "nextAttemptInSeconds")));
                        if (*str(e, "lastError"))
                                printf(", failing for %.0f s: %s",
                                       json_number_value(json_object_get(e, "failingForSeconds")), str(e, "lastError"));
                        putchar('\n');
                }
        }
        if (json_array_size(errors) > 0) {
                printf("\nMANIFEST ERRORS\n");
                json_array_foreach(errors, i, e) printf("  %s\n", str(e, "message"));
        }
}

int cli_status(int argc, char **argv) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "output", required_argument, NULL, 'o' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *socket_path = "/run/cubelet/cubelet.sock", *output = "table";
        _cleanup_free_ char *text = NULL;
        CubError err = {};
        json_t *doc;
        json_error_t jerr;
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "ho:", options, NULL)) >= 0) {
                switch (c) {
                case 's':
                        socket_path = optarg;
                        break;
                case 'o':
                        output = optarg;
                        break;
                case 'h':
                        puts("Usage: cubelet status [--socket PATH] [-o table|json]\n\n"
                             "Pods of the running agent with phase, QoS class, cgroup, restarts and last error;\n"
                             "the pods being stopped, with their attempts, last error and next attempt;\n"
                             "the runtime's state and the manifests that could not be read.");
                        return 0;
                default:
                        return CLI_EXIT_BAD_INPUT;
                }
        }
        if (strcmp(output, "table") != 0 && strcmp(output, "json") != 0) {
                cub_log(LOG_ERR, "status: -o '%s': expected 'table' or 'json'", output);
                return CLI_EXIT_BAD_INPUT;
        }
        if (api_fetch(socket_path, &text, &err) < 0) {
                cub_log(LOG_ERR, "%s", err.msg);
                return 1;
        }
        if (strcmp(output, "json") == 0) {
                fputs(text, stdout);
                putchar('\n');
                return 0;
        }
        doc = json_loads(text, 0, &jerr);
        if (!doc) {
                cub_log(LOG_ERR, "status socket '%s': malformed reply: %s", socket_path, jerr.text);
                return 1;
        }
        print_table(doc);
        json_decref(doc);
        return 0;
}
